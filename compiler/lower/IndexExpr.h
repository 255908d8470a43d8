//===- compiler/lower/IndexExpr.h - symbolic index arithmetic --------*- C++ -*-===//
// Element offsets as expressions over a kernel's loop variables, simplified
// with their ranges so views fold away: reshape [A,B]->[A*B]->[A,B] gives back
// (i0, i1), and the emitted CUDA shows the index a person would write.
// An expression is  c + sum(coef * atom),  an atom is a loop variable, the
// floor division / remainder of an expression by a positive constant, or an
// expression clamped into [0, hi], or a value the kernel reads (a gather's
// index, only ever inside a clamp). All values are non-negative (a clamp's
// argument may not be), so floor division is C division.
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minijit {

class IndexContext;

class IndexExpr {
public:
  IndexExpr() = default;
  static IndexExpr constant(int64_t c);

  bool isConstant() const { return Terms.empty(); }
  int64_t constantTerm() const { return C; }
  /// (atom id, coefficient) pairs, sorted by atom id, no zero coefficients.
  llvm::ArrayRef<std::pair<int, int64_t>> terms() const { return Terms; }
  /// A canonical text, equal for equal expressions.
  std::string key() const;

private:
  friend class IndexContext;
  int64_t C = 0;
  llvm::SmallVector<std::pair<int, int64_t>, 4> Terms;
};

/// Owns the atoms (variables, divisions, remainders) of one kernel's index
/// expressions and simplifies as it builds.
class IndexContext {
public:
  /// A loop variable ranging over [0, size-1], printed as `name`.
  IndexExpr var(const std::string &name, int64_t size);

  IndexExpr add(const IndexExpr &a, const IndexExpr &b);
  IndexExpr mul(const IndexExpr &a, int64_t k);
  IndexExpr div(const IndexExpr &a, int64_t d);
  IndexExpr mod(const IndexExpr &a, int64_t d);
  /// `a` clamped into [0, hi]: the index a pad or concat reads where its
  /// predicate holds, kept in bounds where it does not (`a` may be negative
  /// there). Printed as `mj_clamp(a, hi)`.
  IndexExpr clamp(const IndexExpr &a, int64_t hi);
  /// A clamp that is a term of an expression: coef * clamp(arg, hi).
  struct ClampTerm {
    IndexExpr arg;
    int64_t hi;
    int64_t coef;
  };
  /// The clamps among the terms of `e` (not those inside a division or a
  /// remainder), in term order.
  std::vector<ClampTerm> clampTerms(const IndexExpr &e) const;
  /// The i32 value `value` of the kernel (a gather's index, read from memory),
  /// any 32-bit integer. Printed by the namer (setValueNamer), else `vN`.
  IndexExpr value(int value);
  /// The kernel values (value()) that `e` reads, in order of first use.
  std::vector<int> valuesIn(const IndexExpr &e) const;
  /// How value() atoms are printed: the emitter names its locals.
  void setValueNamer(std::function<std::string(int)> namer) { ValueNamer = std::move(namer); }

  /// Inclusive range of the expression's values.
  std::pair<int64_t, int64_t> range(const IndexExpr &e) const;

  /// True when the expression is c + sum(coef * variable) only.
  bool isAffine(const IndexExpr &e) const;
  /// The coefficient of loop variable `v` (the IndexExpr returned by var())
  /// in an affine expression; 0 when absent.
  int64_t coefficient(const IndexExpr &e, const IndexExpr &v) const;
  /// True when variable `v` appears anywhere in `e`, also inside divisions.
  bool mentions(const IndexExpr &e, const IndexExpr &v) const;
  /// The largest m such that every value of `e` is a multiple of m (0 when
  /// `e` is always 0).
  int64_t divisibility(const IndexExpr &e) const;
  /// The largest factor of every coefficient and the constant of `e` (0 for
  /// the expression 0), and `e` with each divided by `g`, one of them.
  static int64_t commonFactor(const IndexExpr &e);
  static IndexExpr dividedBy(IndexExpr e, int64_t g);

  /// Replaces each variable by an expression (vars not in the map stay).
  IndexExpr substitute(const IndexExpr &e,
                       const std::function<std::optional<IndexExpr>(const std::string &)> &f);

  /// C++ text: `row * 1024 + k`, `(i / 3) % 5`.
  std::string str(const IndexExpr &e) const;

private:
  enum class AtomKind { Var, Div, Mod, Clamp, Value };
  struct Atom {
    AtomKind kind;
    std::string name; // Var
    IndexExpr arg;    // Div, Mod
    int64_t d = 1;    // divisor (Div, Mod), size (Var), upper bound (Clamp) or value (Value)
    int64_t lo = 0, hi = 0;
    int64_t mult = 1; // every value of the atom is a multiple of this
  };
  /// Splits off a small term J (range within [0, g-1], the rest a multiple of
  /// g, g dividing d): then (A + J) / d = A / d and (A + J) % d = A % d + J.
  bool splitSmallTerm(const IndexExpr &e, int64_t d, IndexExpr &a, IndexExpr &j);
  int intern(Atom a);
  IndexExpr atomExpr(int id);
  IndexExpr normalize(IndexExpr e);
  std::string atomKey(const Atom &a) const;
  std::string atomStr(int id) const;

  std::vector<Atom> Atoms;
  llvm::StringMap<int> AtomIds;
  std::function<std::string(int)> ValueNamer;
};

} // namespace minijit
