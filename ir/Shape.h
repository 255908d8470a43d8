//===- ir/Shape.h - tensor shapes, named dimensions, broadcasting -*- C++ -*-===//
// A shape is rank 0 (a scalar) to kMaxRank dimensions, each a number (0 or
// more: a dimension of 0 makes an empty tensor, as in numpy and PyTorch) or a
// named size (`B`, or a product such as `B*S`) whose value is bound when the
// graph runs: one graph, and one compile per bucket of sizes, serves every
// batch size. At most kMaxElements elements once bound (ir/Limits.h).
// Broadcasting follows numpy: align on the right, a 1 stretches (to 0 too);
// a name matches only itself.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Limits.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace minijit {

/// The size of a named dimension that has no value yet (0 is a size: an
/// empty dimension).
constexpr int64_t kUnboundSize = -1;

/// The symbolic form of a dimension: a product of named sizes times a
/// number (`B`, `B*S`, `4*B`), or a number alone (no names). Names are
/// sorted and may repeat (`B*B`).
struct DimExpr {
  int64_t coef = 1;
  std::vector<std::string> names;

  bool isNumber() const { return names.empty(); }
  /// "4*B*S"; "1024" for a number.
  std::string str() const;
  /// The value once each name has a size in `sizes`; kUnboundSize when one
  /// has none.
  int64_t evaluate(const std::map<std::string, int64_t> &sizes) const;
  bool operator==(const DimExpr &o) const = default;
};

DimExpr operator*(const DimExpr &a, const DimExpr &b);

/// One dimension as a user writes it: a number (`1024`), a named size
/// (`Dim("B")`), or a product of them (`Dim("B") * Dim("S")`, `4 * Dim("B")`).
/// A named size has no value until the graph is bound (bindDims, or the
/// inputs of a run); then size() is its value.
class Dim {
public:
  Dim(int64_t size) : Size(size), Expr{size, {}} {}
  /// A named size. Throws GraphError for a name that is not an identifier
  /// (a letter or '_', then letters, digits and '_').
  explicit Dim(std::string_view name);
  /// `expr` with the value `size` (kUnboundSize: not bound).
  Dim(DimExpr expr, int64_t size) : Size(size), Expr(std::move(expr)) {}

  /// The number, or a named size's bound value; kUnboundSize while it is not
  /// bound.
  int64_t size() const { return Size; }
  bool isNamed() const { return !Expr.isNumber(); }
  bool isBound() const { return Size >= 0 || !isNamed(); }
  const DimExpr &expr() const { return Expr; }
  /// "B*S" for a named size (bound or not), "1024" for a number.
  std::string str() const;

  friend Dim operator*(const Dim &a, const Dim &b);

private:
  int64_t Size = kUnboundSize;
  DimExpr Expr;
};

/// Sizes of named dimensions: "B" -> 4096.
using DimBindings = std::map<std::string, int64_t>;

class Shape {
public:
  Shape() = default;
  /// `{4096, 1024}`, `{Dim("B"), 1024}`.
  Shape(std::initializer_list<Dim> dims);
  explicit Shape(std::span<const int64_t> dims) : Dims(dims.begin(), dims.end()) {}
  explicit Shape(std::span<const Dim> dims);

  unsigned rank() const { return Dims.size(); }
  /// The size of dimension i: a number, or a named size's bound value
  /// (kUnboundSize while it is not bound).
  int64_t operator[](unsigned i) const { return Dims[i]; }
  /// Dimension i with its name, if it has one.
  Dim dim(unsigned i) const;
  /// Replaces dimension i.
  void setDim(unsigned i, const Dim &d);
  /// The sizes (kUnboundSize for a named dimension not bound yet).
  const std::vector<int64_t> &dims() const { return Dims; }
  /// Every dimension, named ones with their names.
  std::vector<Dim> allDims() const;

  /// Some dimension is a named size.
  bool hasNames() const { return !Exprs.empty(); }
  /// Every named dimension has its value.
  bool isBound() const;
  /// The distinct names the dimensions use, sorted.
  std::vector<std::string> names() const;
  /// The product of the dimensions as a DimExpr (`1024*B`), and its value.
  Dim numelDim() const;

  /// Product of the sizes (1 for a scalar; 0 for an empty shape, and 0 while
  /// a named one is not bound: ask isBound() first).
  int64_t numel() const;
  /// No element: the sizes are bound and one of them is 0 (a tensor of
  /// such a shape has nothing to compute or store; a scalar is not empty).
  bool isEmpty() const { return isBound() && numel() == 0; }
  /// Row-major element strides: the last dimension has stride 1.
  std::vector<int64_t> strides() const;
  /// "[4096, 1024]", "[B, 1024]" (names even when bound), "[]" for a scalar.
  std::string str() const;
  /// "[B=4096, 1024]": named dimensions with their values.
  std::string boundStr() const;

  /// The same dimensions: equal sizes, and equal names where a size is not
  /// bound. A bound named dimension equals a number of its value (passes
  /// that build shapes from numbers keep their graphs valid).
  bool operator==(const Shape &o) const;
  bool operator!=(const Shape &o) const { return !(*this == o); }

private:
  std::vector<int64_t> Dims;
  /// Empty when every dimension is a number; else one per dimension.
  std::vector<DimExpr> Exprs;
};

/// Checks rank, dimensions of at least 0 and the element limit (of the
/// bound sizes); throws GraphError naming `what` otherwise. Named dimensions
/// need not be bound.
void checkShape(const Shape &s, std::string_view what);

/// Whether two dimensions are the same size: equal values where both are
/// known, else the same name (a number is never a name not bound yet).
bool sameDim(const Dim &a, const Dim &b);

/// A dimension of the number 1 (not a named size, even one bound to 1).
inline bool isUnitDim(const Dim &d) { return !d.isNamed() && d.size() == 1; }
/// Whether `a` and `b` are the same dimensions (sameDim) in the same order
/// once their unit dimensions (isUnitDim) are left out: shapes that lay out
/// their elements alike, a reshape between them only adding or removing
/// axes of size 1.
bool sameNonUnitDims(std::span<const Dim> a, std::span<const Dim> b);

/// The numpy broadcast of two shapes; a name broadcasts with itself and with
/// 1. Throws GraphError "OP: shapes [a] and [b] do not broadcast (dim D: X vs Y)".
Shape broadcastShapes(const Shape &a, const Shape &b, std::string_view op);

/// True when `from` broadcasts to exactly `to` (numpy rules).
bool broadcastsTo(const Shape &from, const Shape &to);

/// `s` with each named dimension's value from `sizes`; throws GraphError
/// for a name `sizes` lacks (naming `what`) or a shape past the limits.
Shape bindShape(const Shape &s, const DimBindings &sizes, std::string_view what);

/// Adds to `sizes` what `actual` (a tensor's shape, numbers only) says of the
/// names in `declared` (an argument's shape), for the argument named `what`.
/// Throws GraphError when the ranks or a number differ, or a name already
/// has another size ("%y: dimension 0 is B, which is 4096 (from %x), but
/// %y has 4095"). `from` records which argument gave each size.
void matchShape(const Shape &declared, const Shape &actual, std::string_view what,
                DimBindings &sizes, std::map<std::string, std::string> &from);

/// "B=4096, S=128".
std::string bindingsText(const DimBindings &sizes);

/// Whether `name` may name a dimension: a letter or '_', then letters,
/// digits and '_'.
bool isDimName(std::string_view name);

} // namespace minijit
