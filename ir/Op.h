//===- ir/Op.h - op kinds and their static properties ----------*- C++ -*-===//
// The enum of ops generated from Ops.def, and what every stage asks of an op:
// its spelling, class, and which dtypes it accepts.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace minijit {

enum class OpKind : uint8_t {
#define MJ_OP(Enum, Spelling, Class, Operands, Result, Gradient) Enum,
#include "ir/Ops.def"
};

/// The number of ops in Ops.def.
constexpr unsigned kNumOps = 0
#define MJ_OP(Enum, Spelling, Class, Operands, Result, Gradient) +1
#include "ir/Ops.def"
    ;

enum class OpClass : uint8_t {
  Input, Constant,
  Iota,   ///< the index along an axis, or a literal (full): no operands, no memory traffic
  Unary, Binary, Select, Cast,
  Concat, ///< operands side by side along an axis, element by element
  Gather, ///< take, take_along_axis: an operand read at indices from a tensor
  Reduce,
  Scan,   ///< cumsum, cumprod: running sums or products along one axis
  View, Matmul,
  Random, ///< rand, randn, dropout: element i a function of (seed, offset, i) (ir/Philox.h)
  Derivative ///< grad and vjp: expanded by ir/Autodiff.h before any other stage
};

/// Which dtypes an op's value operands may have.
enum class OperandTypes : uint8_t { Any, Numeric, Float, Bool };

/// How reverse-mode autodiff treats an op (the Gradient column of Ops.def).
enum class GradientKind : uint8_t {
  Rule,  ///< a gradient rule in ir/Autodiff.cpp
  None,  ///< not differentiable: no gradient flows through it
  Leaf,  ///< an argument or a literal
  Expand ///< grad or vjp, replaced by the reverse sweep
};

struct OpInfo {
  std::string_view spelling;
  OpClass cls;
  OperandTypes operands;
  bool boolResult;
  GradientKind gradient;
};

const OpInfo &opInfo(OpKind op);
inline std::string_view opName(OpKind op) { return opInfo(op).spelling; }
inline OpClass opClass(OpKind op) { return opInfo(op).cls; }
/// Unary, binary, where and cast: ops computed element by element.
bool isElementwise(OpKind op);
/// argmax and argmin: reductions to an i32 position along one axis.
inline bool isArgReduction(OpKind op) { return op == OpKind::Argmax || op == OpKind::Argmin; }
/// cumsum and cumprod.
inline bool isScan(OpKind op) { return op == OpKind::Cumsum || op == OpKind::Cumprod; }
/// The op spelled `s` in the text format, or nullopt. "input" and "constant"
/// are not spellable in the text format and return nullopt.
std::optional<OpKind> parseOpName(std::string_view s);
/// The spellable op nearest to `s` by edit distance, for "did you mean" hints;
/// empty when none is close.
std::string_view suggestOpName(std::string_view s);

} // namespace minijit
