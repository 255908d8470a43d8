//===- ir/Op.h - op kinds and their static properties ----------*- C++ -*-===//
// The enum of ops generated from Ops.def, and what every stage asks of an op:
// its spelling, class, which dtypes it accepts, and the facts passes read
// instead of switching over the ops (OpInfo; Ops.def documents each column).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace minijit {

enum class OpKind : uint8_t {
#define MJ_OP(Enum, ...) Enum,
#include "ir/Ops.def"
};

/// The number of ops in Ops.def.
constexpr unsigned kNumOps = 0
#define MJ_OP(Enum, ...) +1
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

/// Algebraic facts of an op, as bits (the Props column of Ops.def, which
/// says what each means).
enum class OpProp : uint16_t {
  NoProps = 0,
  Rising = 1 << 0,      ///< strictly increasing over every value
  Falling = 1 << 1,     ///< strictly decreasing over every value
  Monotone = 1 << 2,    ///< monotone, not strictly or only where defined
  Additive = 1 << 3,    ///< neg, add, sub: a sum of the result is the op of the sums
  Scaling = 1 << 4,     ///< mul, div: linear in operand 0 given a constant operand 1
  Commutative = 1 << 5, ///< a op b == b op a
  Idempotent = 1 << 6,  ///< f(f(x)) == f(x); x op x == x
  ShapeAttr = 1 << 7    ///< the result's shape is the shape= attribute
};
constexpr OpProp operator|(OpProp a, OpProp b) {
  return static_cast<OpProp>(static_cast<uint16_t>(a) | static_cast<uint16_t>(b));
}

/// One line of Ops.def.
struct OpInfo {
  std::string_view spelling;
  OpClass cls;
  OperandTypes operands;
  bool boolResult;
  GradientKind gradient;
  OpProp props;
  /// Its share of NVRTC's compile time (compiler/fusion/CodeWeight.h).
  int64_t weight;
  /// A binary op's identity: x op identity == x (+-infinity: the dtype's
  /// highest and lowest value).
  std::optional<double> identity;
  /// A reduction's or scan's combining binary op.
  std::optional<OpKind> combiner;
  /// The CUDA function the emitter calls for float operands, and the
  /// intrinsic it calls instead for an f16/bf16 result (empty: none).
  std::string_view cuda, cudaFast;
  /// The f32 error of the emitted code in ulps, precise and fast (NaN: no
  /// plain ulp figure, ir/ErrorBoundRules.cpp gives it).
  double ulps, ulpsFast;

  bool has(OpProp p) const {
    return (static_cast<uint16_t>(props) & static_cast<uint16_t>(p)) != 0;
  }
  bool isRising() const { return has(OpProp::Rising); }
  bool isFalling() const { return has(OpProp::Falling); }
  /// Monotone at all: strictly (Rising, Falling) or not (Monotone).
  bool isMonotone() const { return has(OpProp::Rising) || has(OpProp::Falling) || has(OpProp::Monotone); }
  bool isAdditive() const { return has(OpProp::Additive); }
  bool isScaling() const { return has(OpProp::Scaling); }
  bool isLinear() const { return isAdditive() || isScaling(); }
  bool isCommutative() const { return has(OpProp::Commutative); }
  bool isIdempotent() const { return has(OpProp::Idempotent); }
  bool hasShapeAttr() const { return has(OpProp::ShapeAttr); }
  /// Whether an f16/bf16 result calls a faster, less precise intrinsic.
  bool hasFastCall() const { return !cudaFast.empty(); }
  /// The error in ulps of the code emitted for a result that is `fast`
  /// (f16 or bf16) or not.
  double callUlps(bool fast) const { return fast && hasFastCall() ? ulpsFast : ulps; }
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
