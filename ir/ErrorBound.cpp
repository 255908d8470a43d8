//===- ir/ErrorBound.cpp - how far a correct kernel may be from the reference ===//
// The per-op rules, then a pass that applies them tensor by tensor as the
// reference computes each value (EvalOptions::observe). The ulp figures are
// the CUDA Programming Guide's (appendix "Mathematical Functions", single
// precision, full range) for the functions compiler/emit/ExprEmitter.cpp
// calls; kernels are compiled without -use_fast_math, so f32 division and
// square root are IEEE (half an ulp).
//===----------------------------------------------------------------------===//
#include "ir/ErrorBound.h"
#include "ir/Philox.h"

#include "ir/Autodiff.h"
#include "ir/EvaluatorInternal.h"

#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <limits>

namespace minijit {

namespace {

using detail::broadcastStrides;
using detail::forRange;
using detail::parallelChunks;
using detail::Strides;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU32 = 0x1p-24;

/// `ulps` ulps of an f32 result of size `y` (an ulp is at most 2^-23 |y|,
/// and 2^-149 among subnormals).
double ulpsOf(double ulps, double y) { return ulps * (0x1p-23 * std::fabs(y) + 0x1p-149); }

/// How far f moves when its argument moves by up to `e` from `x`, for f
/// monotone on [x - e, x + e]; infinite when an end leaves f's domain.
template <typename F> double monotoneSpread(F f, double x, double e) {
  if (e == 0)
    return 0;
  double fx = f(x), hi = f(x + e), lo = f(x - e);
  if (std::isnan(hi) || std::isnan(lo) || std::isinf(hi) || std::isinf(lo))
    return std::isinf(fx) ? 0 : kInf;
  return std::max(std::fabs(hi - fx), std::fabs(lo - fx));
}

/// For f with |f'| <= 1 and |f''| <= 1 (sin, cos): the first-order term and
/// the curvature, never more than the Lipschitz bound e.
double lipschitzSpread(double slope, double e) {
  return std::min(e, std::fabs(slope) * e + 0.5 * e * e);
}

/// A function whose value may flip between two discrete results (floor,
/// truncation, a comparison) moves by this much at most.
double stepSpread(double (*f)(double), double x, double e) {
  return e == 0 ? 0 : f(x + e) - f(x - e);
}

/// The error of the CUDA call the emitter makes for a unary op on an
/// argument `x`, at a result of size `y`.
double unaryCallError(OpKind op, bool fast, double x, double y) {
  switch (op) {
  case OpKind::Exp: // __expf: 2 + floor(|1.173 x|) ulp
    return ulpsOf(fast ? 2 + std::floor(std::fabs(1.173 * x)) : 2, y);
  case OpKind::Exp2: return ulpsOf(2, y);
  case OpKind::Expm1: return ulpsOf(1, y); // expm1f, log1pf: 1 ulp (CUDA's table of maximum errors)
  case OpKind::Log1p: return ulpsOf(1, y);
  case OpKind::Log: // __logf: 2^-21.41 absolute in [0.5, 2], 3 ulp elsewhere
    if (!fast)
      return ulpsOf(1, y);
    return x >= 0.5 && x <= 2 ? 0x1p-21 : ulpsOf(3, y);
  case OpKind::Log2: // __log2f: 2^-22 absolute in [0.5, 2], 2 ulp elsewhere
    if (!fast)
      return ulpsOf(1, y);
    return x >= 0.5 && x <= 2 ? 0x1p-22 : ulpsOf(2, y);
  case OpKind::Sqrt: return ulpsOf(0.5, y);
  case OpKind::Rsqrt: return ulpsOf(2, y);
  case OpKind::Sin:
  case OpKind::Cos:
    // __sinf/__cosf: 2^-21.41 absolute in [-pi, pi]; beyond, the guide says
    // only "larger": its range reduction rounds x in f32, taken as 2u|x|.
    if (!fast)
      return ulpsOf(2, y);
    return 0x1p-21 + 2 * kU32 * std::fabs(x);
  case OpKind::Tanh: // tanh.approx.f32: relative error 2^-10.987
    return fast ? std::exp2(-10.9) * std::fabs(y) + 0x1p-149 : ulpsOf(2, y);
  case OpKind::Erf: return ulpsOf(2, y);
  case OpKind::Recip: return ulpsOf(fast ? 2 : 0.5, y); // __fdividef: 2 ulp
  case OpKind::Input: case OpKind::Constant: case OpKind::Neg: case OpKind::Abs:
  case OpKind::Sigmoid: case OpKind::Relu: case OpKind::Floor: case OpKind::Ceil: case OpKind::RoundTf32: case OpKind::Not:
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Pow:
  case OpKind::Maximum: case OpKind::Minimum: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt:
  case OpKind::Le: case OpKind::Gt: case OpKind::Ge: case OpKind::And: case OpKind::Or:
  case OpKind::Where: case OpKind::Cast: case OpKind::Sum: case OpKind::Mean: case OpKind::Max:
  case OpKind::Min: case OpKind::Prod: case OpKind::Reshape: case OpKind::Permute:
  case OpKind::Broadcast: case OpKind::Matmul: case OpKind::Grad: case OpKind::Vjp:
  case OpKind::Iota: case OpKind::Argmax: case OpKind::Argmin: case OpKind::Concat: case OpKind::Take:
  case OpKind::TakeAlongAxis: case OpKind::Cumsum: case OpKind::Cumprod: case OpKind::Slice: case OpKind::Pad:
  case OpKind::Flip: case OpKind::Full: case OpKind::Rand: case OpKind::Randn:
  case OpKind::Dropout:
    return 0; // exact (neg, abs, relu, floor, ceil), or not a unary call
  }
  llvm_unreachable("bad op kind");
}

double unaryBound(const Node &n, bool isInt, double x, double e, double y) {
  bool fast = n.dtype == DType::F16 || n.dtype == DType::BF16;
  double spread = 0;
  switch (n.op) {
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Relu: spread = e; break;
  // Smooth functions: the slope, read from the result where it can be (no
  // second call of the function), plus a bound on the curvature over the
  // interval; the others by their values at its ends.
  case OpKind::Exp: // exp(x + d) - exp(x) = exp(x) expm1(d)
    spread = e == 0 ? 0 : std::fabs(y) * (e < 0.5 ? e * (1 + e) : std::expm1(e));
    break;
  case OpKind::Exp2:
    spread = e == 0 ? 0 : std::fabs(y) * std::expm1(e * M_LN2);
    break;
  case OpKind::Expm1: // expm1' = e^x = y + 1, as exp's
    spread = e == 0 ? 0 : std::fabs(y + 1) * (e < 0.5 ? e * (1 + e) : std::expm1(e));
    break;
  case OpKind::Log1p: // log's, at 1 + x
    spread = e == 0 ? 0 : (1 + x > 2 * e ? e / (1 + x) * (1 + e / (1 + x)) : kInf);
    break;
  case OpKind::Log: // -log(1 - t) <= t + t^2 for t = e / x <= 1/2
    spread = e == 0 ? 0 : (x > 2 * e ? e / x * (1 + e / x) : kInf);
    break;
  case OpKind::Log2: spread = e == 0 ? 0 : (x > 2 * e ? e / x * (1 + e / x) / M_LN2 : kInf); break;
  case OpKind::Sqrt: // sqrt(x) - sqrt(x - e) = e / (sqrt(x) + sqrt(x - e)) is the larger side
    spread = e == 0 ? 0 : (x >= e ? e / (std::fabs(y) + std::sqrt(x - e)) : std::sqrt(x + e));
    break;
  case OpKind::Rsqrt:
    spread = monotoneSpread([](double v) { return 1 / std::sqrt(v); }, x, e);
    break;
  case OpKind::Recip:
    spread = e == 0 ? 0 : (std::fabs(x) > e ? e / (std::fabs(x) * (std::fabs(x) - e)) : kInf);
    break;
  case OpKind::Sin: // |cos x| = sqrt(1 - sin^2 x)
    spread = lipschitzSpread(std::sqrt(std::max(0.0, 1 - y * y)), e);
    break;
  case OpKind::Cos: spread = lipschitzSpread(std::sqrt(std::max(0.0, 1 - y * y)), e); break;
  case OpKind::Tanh: // tanh' = 1 - tanh^2 <= 1, |tanh''| <= 0.77
    spread = std::min(e, (1 - y * y) * e + 0.385 * e * e);
    break;
  case OpKind::Erf: // erf' = 2/sqrt(pi) exp(-x^2) <= 1.13, |erf''| <= 0.97
    spread = e == 0 ? 0 : std::min(1.13 * e, 1.1284 * std::exp(-x * x) * e + 0.49 * e * e);
    break;
  case OpKind::Sigmoid: {
    // sigmoid' = s (1 - s) <= 1/4, |sigmoid''| <= 0.097
    spread = std::min(0.25 * e, y * (1 - y) * e + 0.049 * e * e);
    // 1 / (1 + exp(-x)): the exponential's ulps, the addition's rounding,
    // then the division's, each relative to the result.
    double ex = std::exp(-x), d = 1 + ex;
    double dErr = unaryCallError(OpKind::Exp, fast, -x, ex) + kU32 * d;
    return spread + std::fabs(y) * dErr / d + ulpsOf(fast ? 2 : 0.5, y);
  }
  case OpKind::Floor: return stepSpread(std::floor, x, e);
  case OpKind::Ceil: return stepSpread(std::ceil, x, e);
  case OpKind::RoundTf32: // a step of 2^-10 of the value at most, at either end
    return e == 0 ? 0 : 2 * e + 0x1p-10 * (std::fabs(x) + e);
  case OpKind::Not: return e > 0 ? 1 : 0;
  case OpKind::Input: case OpKind::Constant: case OpKind::Add: case OpKind::Sub: case OpKind::Mul:
  case OpKind::Div: case OpKind::Pow: case OpKind::Maximum: case OpKind::Minimum: case OpKind::Eq:
  case OpKind::Ne: case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge:
  case OpKind::And: case OpKind::Or: case OpKind::Where: case OpKind::Cast: case OpKind::Sum:
  case OpKind::Mean: case OpKind::Max: case OpKind::Min: case OpKind::Prod: case OpKind::Reshape:
  case OpKind::Permute: case OpKind::Broadcast: case OpKind::Matmul: case OpKind::Grad:
  case OpKind::Vjp:
  case OpKind::Iota: case OpKind::Argmax: case OpKind::Argmin: case OpKind::Concat: case OpKind::Take:
  case OpKind::TakeAlongAxis: case OpKind::Cumsum: case OpKind::Cumprod: case OpKind::Slice: case OpKind::Pad:
  case OpKind::Flip: case OpKind::Full: case OpKind::Rand: case OpKind::Randn:
  case OpKind::Dropout:
    llvm_unreachable("not a unary op");
  }
  if (isInt)
    return spread;
  return spread + unaryCallError(n.op, fast, x, std::fabs(y) + spread);
}

/// A comparison may flip when the operands' intervals meet.
double comparisonBound(double a, double b, double ea, double eb) {
  return ea + eb > 0 && std::fabs(a - b) <= ea + eb ? 1 : 0;
}

double binaryBound(const Node &n, bool isInt, double a, double b, double ea, double eb,
                   double y) {
  bool fast = n.dtype == DType::F16 || n.dtype == DType::BF16;
  double spread = 0, callUlps = 0.5;
  switch (n.op) {
  case OpKind::Add:
  case OpKind::Sub: spread = ea + eb; break;
  case OpKind::Mul: spread = std::fabs(a) * eb + std::fabs(b) * ea + ea * eb; break;
  case OpKind::Div:
    if (isInt)
      return ea + eb > 0 ? kInf : 0;
    if (eb >= std::fabs(b))
      return kInf;
    spread = (std::fabs(b) * ea + std::fabs(a) * eb) / (std::fabs(b) * (std::fabs(b) - eb));
    callUlps = fast ? 2 : 0.5;
    break;
  case OpKind::Pow: {
    callUlps = 4;
    if (ea == 0 && eb == 0)
      break;
    if (a <= 0 || ea >= a / 2)
      return kInf;
    // a^b = exp(b ln a): ln a moves by at most -ln(1 - ea/a), b ln a by that
    // times |b| + eb, plus eb |ln a|.
    double dl = -std::log1p(-ea / a);
    double t = (std::fabs(b) + eb) * dl + eb * std::fabs(std::log(a));
    spread = std::fabs(y) * std::expm1(t);
    break;
  }
  case OpKind::Maximum:
  case OpKind::Minimum: return std::max(ea, eb);
  case OpKind::Eq:
  case OpKind::Ne:
  case OpKind::Lt:
  case OpKind::Le:
  case OpKind::Gt:
  case OpKind::Ge: return comparisonBound(a, b, ea, eb);
  case OpKind::And: // flips only where the other operand may be true
    return (ea > 0 && (b != 0 || eb > 0)) || (eb > 0 && (a != 0 || ea > 0)) ? 1 : 0;
  case OpKind::Or: // ... or may be false
    return (ea > 0 && (b == 0 || eb > 0)) || (eb > 0 && (a == 0 || ea > 0)) ? 1 : 0;
  case OpKind::Input: case OpKind::Constant: case OpKind::Neg: case OpKind::Abs: case OpKind::Exp:
  case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt:
  case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh: case OpKind::Sigmoid: case OpKind::Erf:
  case OpKind::Relu: case OpKind::Recip: case OpKind::Floor: case OpKind::Ceil: case OpKind::RoundTf32: case OpKind::Not:
  case OpKind::Where: case OpKind::Cast: case OpKind::Sum: case OpKind::Mean: case OpKind::Max:
  case OpKind::Min: case OpKind::Prod: case OpKind::Reshape: case OpKind::Permute:
  case OpKind::Broadcast: case OpKind::Matmul: case OpKind::Grad: case OpKind::Vjp:
  case OpKind::Iota: case OpKind::Argmax: case OpKind::Argmin: case OpKind::Concat: case OpKind::Take:
  case OpKind::TakeAlongAxis: case OpKind::Cumsum: case OpKind::Cumprod: case OpKind::Slice: case OpKind::Pad:
  case OpKind::Expm1: case OpKind::Log1p: case OpKind::Flip: case OpKind::Full: case OpKind::Rand: case OpKind::Randn:
  case OpKind::Dropout:
    llvm_unreachable("not a binary op");
  }
  if (isInt || !std::isfinite(spread))
    return spread;
  return spread + ulpsOf(callUlps, std::fabs(y) + spread);
}

double castBound(DType from, DType to, double x, double e) {
  switch (to) {
  case DType::Bool: return e > 0 && std::fabs(x) <= e ? 1 : 0;
  case DType::I32:
  case DType::I64: return isFloat(from) ? stepSpread(std::trunc, x, e) : e;
  case DType::F32:
  case DType::F16:
  case DType::BF16: {
    // Narrowing rounds; an i32 beyond 2^24 rounds even into f32.
    bool narrows = (to != DType::F32 && to != from) || isInteger(from);
    return e + (narrows ? roundingError(to, std::fabs(x) + e) : 0);
  }
  }
  llvm_unreachable("bad dtype");
}

} // namespace

bool certainRounding(DType t, double rounded, double pre, double bound) {
  if (!std::isfinite(pre) || !std::isfinite(rounded) || !std::isfinite(bound))
    return false;
  // Half the spacing around `rounded` (a quarter at a power of two, where
  // the spacing below is half the one above).
  int mant = t == DType::F16 ? 10 : 7, minExp = t == DType::F16 ? -14 : -126;
  double a = std::fabs(rounded);
  int e = a > 0 ? std::max(std::ilogb(a), minExp) : minExp;
  double ulp = std::ldexp(1.0, e - mant);
  double half = (a > 0 && std::ldexp(1.0, std::ilogb(a)) == a) ? ulp / 4 : ulp / 2;
  const double safety = Tolerance{}.safety;
  // A margin of an eighth of the spacing (a quarter of `half`) besides the
  // bound: on the H200 the random run flagged 12 of 3480 graphs (and the GPU
  // tests some 16-bit narrow products) whose stored value a correct kernel
  // rounded the other way, one unit off, where the bound alone had called
  // the rounding certain; errors the bound does not model (an intrinsic's,
  // an order of sums) stay well inside the margin.
  return std::fabs(pre - rounded) + safety * bound + half / 4 < half;
}

double unitRoundoff(DType t) {
  switch (t) {
  case DType::F32: return 0x1p-24;
  case DType::F16: return 0x1p-11;
  case DType::BF16: return 0x1p-8;
  case DType::I32:
  case DType::I64:
  case DType::Bool: return 0;
  }
  llvm_unreachable("bad dtype");
}

double roundingError(DType t, double magnitude) {
  switch (t) {
  case DType::F32: return kU32 * magnitude + 0x1p-150;
  case DType::F16: return 0x1p-11 * magnitude + 0x1p-25;
  case DType::BF16: return 0x1p-8 * magnitude + 0x1p-134;
  case DType::I32:
  case DType::I64:
  case DType::Bool: return 0;
  }
  llvm_unreachable("bad dtype");
}

double sumRoundingError(int64_t terms, double sumAbs) {
  if (terms <= 1)
    return kU32 * sumAbs;
  double n = static_cast<double>(terms);
  return kU32 * (std::log2(n) + 2 * std::sqrt(n) + 2) * sumAbs;
}

double elementwiseErrorBound(const Node &n, DType operandType, llvm::ArrayRef<double> args,
                             llvm::ArrayRef<double> errors, double value) {
  bool isInt = isInteger(operandType) || operandType == DType::Bool;
  switch (n.cls()) {
  case OpClass::Unary: return unaryBound(n, isInt, args[0], errors[0], value);
  case OpClass::Binary:
    return binaryBound(n, isInt, args[0], args[1], errors[0], errors[1], value);
  case OpClass::Select:
    if (errors[0] == 0)
      return args[0] != 0 ? errors[1] : errors[2];
    return std::max(errors[1], errors[2]) + std::fabs(args[1] - args[2]);
  case OpClass::Cast: return castBound(operandType, n.dtype, args[0], errors[0]);
  case OpClass::Input:
  case OpClass::Constant:
  case OpClass::Iota:
  case OpClass::Concat:
  case OpClass::Gather:
  case OpClass::Reduce:
  case OpClass::Scan:
  case OpClass::View:
  case OpClass::Matmul:
  case OpClass::Random:
  case OpClass::Derivative: break;
  }
  llvm_unreachable("not an elementwise op");
}

namespace {

/// Bounds tensor by tensor, as the reference computes the values. An empty
/// tensor stands for a value known exactly (arguments, literals, and what is
/// computed from them exactly).
class BoundPass {
public:
  BoundPass(const Graph &g, bool certain, const std::vector<bool> *stored,
            const std::vector<bool> *readInRegisters, bool tf32, bool tf32x3)
      : G(g), Certain(certain), Tf32(tf32), Tf32x3(tf32x3), Stored(stored), Registers(readInRegisters),
        Bounds(g.size()),
        Own(g.size()),
        LastUse(g.size(), 0) {
    for (size_t i = 0; i < g.size(); ++i)
      for (ValueId o : g.nodes()[i].operands)
        LastUse[o] = i;
    for (ValueId o : g.outputs())
      LastUse[o] = g.size();
  }

  void observe(ValueId id, llvm::ArrayRef<HostTensor> values) {
    const Node &n = G.node(id);
    switch (n.cls()) {
    case OpClass::Input:
    case OpClass::Constant: break;
    case OpClass::Unary:
    case OpClass::Binary:
    case OpClass::Select:
    case OpClass::Cast: Bounds[id] = elementwise(id, values); break;
    case OpClass::Iota: break; // exact
    case OpClass::Concat: Bounds[id] = uniform(id, maxOver(n.operands)); break;
    case OpClass::Gather: Bounds[id] = gather(id); break;
    case OpClass::Scan: Bounds[id] = scan(id, values); break;
    case OpClass::Reduce:
      Bounds[id] = isArgReduction(n.op) ? argReduce(id, values) : reduce(id, values);
      break;
    case OpClass::View: Bounds[id] = view(id); break;
    case OpClass::Random: Bounds[id] = random(id, values); break;
    case OpClass::Matmul: Bounds[id] = matmul(id, values); break;
    case OpClass::Derivative: llvm_unreachable("grad and vjp are expanded first");
    }
    if (n.cls() == OpClass::Concat || n.cls() == OpClass::Gather)
      roundWhereStored(id, values);
    if (n.cls() == OpClass::View && Stored && (*Stored)[id])
      roundStoredView(id, values[id]);
    if (Registers && (*Registers)[id])
      widenForRegisterReaders(id, values[id]);
    if (LastUse[id] == G.size())
      roundAsReturned(id, values[id]);
    for (ValueId o : n.operands)
      if (LastUse[o] == static_cast<size_t>(id))
        Bounds[o] = HostTensor();
  }

  std::vector<HostTensor> outputs() const {
    std::vector<HostTensor> out;
    for (ValueId o : G.outputs())
      out.push_back(Own[o].bytes()  ? Own[o]
                    : exact(o)      ? HostTensor(DType::F32, G.node(o).shape)
                                    : Bounds[o]);
    return out;
  }

private:
  /// The bound of `id` with a rounding to `type` of each element of `value`
  /// added: certain (0) where `mayBeCertain` and the value lies well inside
  /// its rounding interval, as a stored value's (Settle).
  HostTensor plusRounding(ValueId id, DType type, const HostTensor &value, bool mayBeCertain) const {
    HostTensor out(DType::F32, G.node(id).shape);
    for (int64_t i = 0; i < out.numel(); ++i) {
      double b = bound(id, i), pre = value.get(i);
      bool certain = mayBeCertain && Certain &&
                     certainRounding(type, roundToDType(pre, type), pre, b);
      out.set(i, std::isnan(b) ? kInf
                 : certain     ? 0
                               : b + roundingError(type, std::fabs(pre) + b));
    }
    return out;
  }

  static bool half(DType t) { return t == DType::F16 || t == DType::BF16; }

  /// A concat or a gather stored in f16/bf16 whose value operand is held
  /// in f32 (in registers) rounds its elements as it stores them; their
  /// bounds, the operands' moved, do not have that rounding yet. Not taken
  /// as certain: the operands' bounds are spread over the elements.
  void roundWhereStored(ValueId id, llvm::ArrayRef<HostTensor> values) {
    const Node &n = G.node(id);
    DType held = values[id].dtype();
    if (!half(held))
      return;
    bool fromRegisters = n.cls() == OpClass::Gather
                             ? values[n.operands[0]].dtype() != held
                             : llvm::any_of(n.operands, [&](ValueId o) {
                                 return values[o].dtype() != held;
                               });
    if (fromRegisters)
      Bounds[id] = plusRounding(id, held, values[id], false);
  }

  /// A view the program stores in f16/bf16 of a value held in f32: the
  /// reference keeps the f32 value (a view does not round), readers in
  /// another kernel load it rounded. Its bound gains the rounding.
  void roundStoredView(ValueId id, const HostTensor &value) {
    DType type = G.node(id).dtype;
    if (half(type) && value.dtype() == DType::F32)
      Bounds[id] = plusRounding(id, type, value, false);
  }

  /// An f16/bf16 output the reference holds in f32 (a view, or a value
  /// renamed by simplify, of one a kernel keeps in registers) is rounded
  /// only as it is returned, by evaluate(): its bound gains that rounding,
  /// certain where the value lies well inside its rounding interval, as a
  /// stored value's (Settle). Its readers keep the f32 bound.
  void roundAsReturned(ValueId id, const HostTensor &value) {
    DType type = G.node(id).dtype;
    if (half(type) && value.dtype() == DType::F32)
      Own[id] = plusRounding(id, type, value, true);
  }

  /// A value stored in f16/bf16 that its kernel also reads from registers:
  /// the reference hands its readers the rounded value, a reader in that
  /// kernel has the unrounded one. Where the rounding was certain (bound 0)
  /// they differ by up to the rounding plus the small error certainty
  /// allows: two roundings' worth covers it; elsewhere the bound includes a
  /// rounding already. The value's own comparison keeps its bound (Own).
  void widenForRegisterReaders(ValueId id, const HostTensor &value) {
    DType held = value.dtype();
    if (!half(held) || G.node(id).cls() == OpClass::Cast)
      return;
    if (LastUse[id] == G.size())
      Own[id] = exact(id) ? HostTensor(DType::F32, G.node(id).shape) : Bounds[id];
    HostTensor wide(DType::F32, G.node(id).shape);
    for (int64_t i = 0; i < wide.numel(); ++i) {
      double b = bound(id, i);
      wide.set(i, b == 0 ? 2 * roundingError(held, std::fabs(value.get(i))) : b);
    }
    Bounds[id] = std::move(wide);
  }

  bool exact(ValueId v) const { return Bounds[v].bytes() == 0; }
  double bound(ValueId v, int64_t i) const { return exact(v) ? 0 : Bounds[v].get(i); }

  /// What holding the value in its type adds to an op's bound `b` at a
  /// value `v`: the rounding of one stored in f16/bf16 by its kernel, and no
  /// bound at all where v and b reach past the type's largest finite number
  /// (a correct kernel may give an infinity there). Where the reference's
  /// value before that rounding, `pre` (NaN: not known), lies so far inside
  /// its rounding interval that a correct kernel's value (within
  /// Tolerance::safety bounds) must round the same way, the stored value is
  /// certain: bound 0, and the comparison then wants it exactly.
  struct Settle {
    DType held;
    bool rounds;
    double top;
    double operator()(double b, double v, double pre = NAN) const {
      if (std::isnan(b)) // an infinite bound times an exact 0, say
        return kInf;
      if (rounds)
        b = certainRounding(held, v, pre, b) ? 0 : b + roundingError(held, std::fabs(v) + b);
      return std::fabs(v) + b > top ? kInf : b;
    }
  };
  Settle settleFor(ValueId id, const HostTensor &value) const {
    DType held = value.dtype();
    bool half = held == DType::F16 || held == DType::BF16;
    // A cast rounds in registers already (castBound).
    bool rounds = half && G.node(id).cls() != OpClass::Cast;
    double top = held == DType::F16    ? 65504.0
                 : held == DType::BF16 ? 3.3895313892515355e38
                 : held == DType::F32  ? 3.4028234663852886e38
                                       : kInf;
    return {held, rounds, top};
  }

  HostTensor elementwise(ValueId id, llvm::ArrayRef<HostTensor> values) {
    const Node &n = G.node(id);
    HostTensor out(DType::F32, n.shape);
    llvm::SmallVector<Strides, 3> strides;
    for (ValueId o : n.operands)
      strides.push_back(broadcastStrides(G.node(o).shape, n.shape));
    DType operandType = G.node(n.operands.back()).dtype;
    const HostTensor &result = values[id];
    Settle settle = settleFor(id, result);
    size_t arity = n.operands.size();
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      double args[3], errs[3];
      forRange(n.shape, strides, b, e, [&](int64_t i, llvm::ArrayRef<int64_t> off) {
        for (size_t k = 0; k < arity; ++k) {
          args[k] = values[n.operands[k]].get(off[k]);
          errs[k] = bound(n.operands[k], off[k]);
        }
        double v = result.get(i);
        llvm::ArrayRef<double> a(args, arity);
        double pre = settle.rounds && Certain ? applyElementwise(n, operandType, a) : NAN;
        out.set(i, settle(elementwiseErrorBound(n, operandType, a,
                                                llvm::ArrayRef<double>(errs, arity), v),
                          v, pre));
      });
    });
    return out;
  }

  /// rand is exact (24 bits, as the kernels draw them; a 16-bit type rounds
  /// them alike). randn: the kernels' logf, sqrtf and cospif, a few ulps of
  /// sqrt(-2 ln u1) <= 5.8 (u1 >= 2^-24). dropout: x's bound times the scale
  /// and the product's rounding.
  HostTensor random(ValueId id, llvm::ArrayRef<HostTensor> values) {
    const Node &n = G.node(id);
    if (n.op == OpKind::Rand)
      return HostTensor();
    ValueId x = n.operands[0];
    if (n.op == OpKind::Dropout && exact(x) && values[id].dtype() == DType::F32)
      return HostTensor(); // x * scale rounded once to f32, as the kernel does
    const HostTensor &result = values[id];
    Settle settle = settleFor(id, result);
    double scale = dropoutScale(static_cast<float>(n.value));
    HostTensor out(DType::F32, n.shape);
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double v = result.get(i), eb = 8 * 0x1p-23 * 5.8;
        if (n.op == OpKind::Dropout) {
          double bx = bound(x, i) * scale;
          eb = bx + (bx > 0 ? ulpsOf(0.5, v) : 0);
        }
        out.set(i, settle(eb, v));
      }
    });
    return out;
  }

  /// The largest bound of the values `ids` (0 when all are exact).
  double maxOver(llvm::ArrayRef<ValueId> ids) const {
    double m = 0;
    for (ValueId v : ids)
      for (int64_t i = 0; !exact(v) && i < Bounds[v].numel(); ++i)
        m = std::max(m, Bounds[v].get(i));
    return m;
  }

  /// One bound `b` for every element of `id` (exact when 0).
  HostTensor uniform(ValueId id, double b) const {
    if (b == 0)
      return HostTensor();
    HostTensor out(DType::F32, G.node(id).shape);
    for (int64_t i = 0; i < out.numel(); ++i)
      out.set(i, b);
    return out;
  }

  /// take, take_along_axis: an element of the table, at indices that must
  /// be exact (an index that may be off could read any element).
  HostTensor gather(ValueId id) const {
    const Node &n = G.node(id);
    if (maxOver({n.operands[1]}) > 0)
      return uniform(id, kInf);
    return uniform(id, maxOver({n.operands[0]}));
  }

  /// cumsum, cumprod: each prefix as a sum or product of its own.
  HostTensor scan(ValueId id, llvm::ArrayRef<HostTensor> values) {
    const Node &n = G.node(id);
    ValueId src = n.operands[0];
    bool isInt = !isFloat(n.dtype), isSum = n.op == OpKind::Cumsum, exactIn = exact(src);
    if (isInt && exactIn)
      return HostTensor();
    const HostTensor &in = values[src];
    int64_t size = n.shape[n.axis], inner = n.shape.strides()[n.axis];
    int64_t outer = n.shape.numel() / (size * inner);
    HostTensor out(DType::F32, n.shape);
    Settle settle = settleFor(id, values[id]);
    parallelChunks(outer * inner, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t base = (r / inner) * size * inner + r % inner;
        double sumAbs = 0, sumErr = 0, prodAbs = 1, prodWide = 1;
        for (int64_t k = 0; k < size; ++k) {
          int64_t at = base + k * inner;
          double x = std::fabs(in.get(at)), err = exactIn ? 0 : Bounds[src].get(at);
          sumAbs += x;
          sumErr += err;
          prodAbs *= x;
          prodWide *= x + err;
          double bound = isSum ? (isInt ? sumErr : sumErr + sumRoundingError(k + 1, sumAbs))
                               : (isInt ? (sumErr > 0 ? kInf : 0)
                                        : (prodWide - prodAbs) +
                                              static_cast<double>(k + 1) * kU32 * prodWide);
          out.set(at, settle(bound, values[id].get(at)));
        }
      }
    });
    return out;
  }

  /// argmax, argmin: exact where no other element may overtake the extreme
  /// within the bounds; otherwise the position may be any (no bound).
  HostTensor argReduce(ValueId id, llvm::ArrayRef<HostTensor> values) {
    const Node &n = G.node(id);
    ValueId src = n.operands[0];
    if (exact(src))
      return HostTensor();
    const HostTensor &in = values[src];
    const Shape &xs = G.node(src).shape;
    int64_t a = n.axes[0], size = xs[a], stride = xs.strides()[a];
    int64_t inner = stride, outer = xs.numel() / (size * inner);
    bool isMax = n.op == OpKind::Argmax;
    HostTensor out(DType::F32, n.shape);
    parallelChunks(outer * inner, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t base = (r / inner) * size * inner + r % inner;
        int64_t at = static_cast<int64_t>(values[id].get(r));
        double best = in.get(base + at * stride), bestErr = Bounds[src].get(base + at * stride);
        bool sure = std::isfinite(best);
        for (int64_t k = 0; k < size && sure; ++k) {
          if (k == at)
            continue;
          double v = in.get(base + k * stride), err = Bounds[src].get(base + k * stride);
          sure = isMax ? v + err < best - bestErr : v - err > best + bestErr;
        }
        out.set(r, sure ? 0 : kInf);
      }
    });
    return out;
  }

  HostTensor view(ValueId id) {
    const Node &n = G.node(id);
    ValueId src = n.operands[0];
    if (exact(src))
      return HostTensor();
    // A slice picks elements, a pad adds exact ones, a flip moves them: the
    // largest bound covers every element.
    if (n.op == OpKind::Slice || n.op == OpKind::Pad || n.op == OpKind::Flip)
      return uniform(id, maxOver({src}));
    const HostTensor &in = Bounds[src];
    const Shape &inShape = G.node(src).shape;
    Strides s;
    switch (n.op) {
    case OpKind::Reshape: s = n.shape.strides(); break;
    case OpKind::Permute: {
      auto is = inShape.strides();
      for (int64_t p : n.perm)
        s.push_back(is[p]);
      break;
    }
    case OpKind::Broadcast: s = broadcastStrides(inShape, n.shape); break;
    case OpKind::Input: case OpKind::Constant: case OpKind::Neg: case OpKind::Abs:
    case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt:
    case OpKind::Rsqrt: case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh:
    case OpKind::Sigmoid: case OpKind::Erf: case OpKind::Relu: case OpKind::Recip:
    case OpKind::Floor: case OpKind::Ceil: case OpKind::RoundTf32: case OpKind::Not: case OpKind::Add: case OpKind::Sub:
    case OpKind::Mul: case OpKind::Div: case OpKind::Pow: case OpKind::Maximum:
    case OpKind::Minimum: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le:
    case OpKind::Gt: case OpKind::Ge: case OpKind::And: case OpKind::Or: case OpKind::Where:
    case OpKind::Cast: case OpKind::Sum: case OpKind::Mean: case OpKind::Max: case OpKind::Min:
    case OpKind::Prod: case OpKind::Matmul: case OpKind::Grad: case OpKind::Vjp:
    case OpKind::Iota: case OpKind::Argmax: case OpKind::Argmin: case OpKind::Concat: case OpKind::Take:
    case OpKind::TakeAlongAxis: case OpKind::Cumsum: case OpKind::Cumprod: case OpKind::Slice: case OpKind::Pad:
    case OpKind::Expm1: case OpKind::Log1p: case OpKind::Flip: case OpKind::Full: case OpKind::Rand: case OpKind::Randn:
  case OpKind::Dropout:
      llvm_unreachable("not a view");
    }
    HostTensor out(DType::F32, n.shape);
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      forRange(n.shape, {s}, b, e,
               [&](int64_t i, llvm::ArrayRef<int64_t> off) { out.set(i, in.get(off[0])); });
    });
    return out;
  }

  HostTensor reduce(ValueId id, llvm::ArrayRef<HostTensor> values) {
    const Node &n = G.node(id);
    ValueId src = n.operands[0];
    const HostTensor &in = values[src];
    const Shape &xs = G.node(src).shape;
    auto xstr = xs.strides();
    DimVector keptDims, redDims;
    Strides keptStr, redStr;
    for (unsigned d = 0; d < xs.rank(); ++d) {
      bool reduced = llvm::is_contained(n.axes, d);
      (reduced ? redDims : keptDims).push_back(xs[d]);
      (reduced ? redStr : keptStr).push_back(xstr[d]);
    }
    Shape kept = Shape(llvm::ArrayRef<int64_t>(keptDims));
    Shape red = Shape(llvm::ArrayRef<int64_t>(redDims));
    int64_t rows = kept.numel(), k = red.numel();
    bool isInt = !isFloat(n.dtype);
    bool exactIn = exact(src);
    if (exactIn && (isInt || n.op == OpKind::Max || n.op == OpKind::Min))
      return HostTensor();
    HostTensor out(DType::F32, n.shape);
    const HostTensor &result = values[id];
    Settle settle = settleFor(id, result);
    auto rowBound = [&](int64_t r, int64_t base) {
      double sumAbs = 0, sumErr = 0, maxErr = 0, prodAbs = 1, prodWide = 1;
      forRange(red, {redStr}, 0, k, [&](int64_t, llvm::ArrayRef<int64_t> off) {
        double x = std::fabs(in.get(base + off[0]));
        double e = exactIn ? 0 : Bounds[src].get(base + off[0]);
        sumAbs += x;
        sumErr += e;
        maxErr = std::max(maxErr, e);
        prodAbs *= x;
        prodWide *= x + e;
      });
      switch (n.op) {
      case OpKind::Max:
      case OpKind::Min: return maxErr;
      case OpKind::Sum: return isInt ? sumErr : sumErr + sumRoundingError(k, sumAbs);
      case OpKind::Mean: // the sum, times 1/n rounded to f32, rounded again
        return isInt ? sumErr / k
                     : (sumErr + sumRoundingError(k, sumAbs)) / static_cast<double>(k) +
                           2 * kU32 * std::fabs(result.get(r));
      case OpKind::Prod:
        return isInt ? (sumErr > 0 ? kInf : 0)
                     : (prodWide - prodAbs) + static_cast<double>(k) * kU32 * prodWide;
      case OpKind::Input: case OpKind::Constant: case OpKind::Neg: case OpKind::Abs:
      case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt:
      case OpKind::Rsqrt: case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh:
      case OpKind::Sigmoid: case OpKind::Erf: case OpKind::Relu: case OpKind::Recip:
      case OpKind::Floor: case OpKind::Ceil: case OpKind::RoundTf32: case OpKind::Not: case OpKind::Add: case OpKind::Sub:
      case OpKind::Mul: case OpKind::Div: case OpKind::Pow: case OpKind::Maximum:
      case OpKind::Minimum: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le:
      case OpKind::Gt: case OpKind::Ge: case OpKind::And: case OpKind::Or: case OpKind::Where:
      case OpKind::Cast: case OpKind::Reshape: case OpKind::Permute: case OpKind::Broadcast:
      case OpKind::Matmul: case OpKind::Grad: case OpKind::Vjp:
      case OpKind::Iota: case OpKind::Argmax: case OpKind::Argmin: case OpKind::Concat: case OpKind::Take:
      case OpKind::TakeAlongAxis: case OpKind::Cumsum: case OpKind::Cumprod: case OpKind::Slice: case OpKind::Pad:
      case OpKind::Expm1: case OpKind::Log1p: case OpKind::Flip: case OpKind::Full: case OpKind::Rand: case OpKind::Randn:
  case OpKind::Dropout:
        llvm_unreachable("not a reduction");
      }
      llvm_unreachable("bad op kind");
    };
    llvm::parallelForEachN(0, static_cast<size_t>(rows), [&](size_t r) {
      forRange(kept, {keptStr}, static_cast<int64_t>(r), static_cast<int64_t>(r) + 1,
               [&](int64_t i, llvm::ArrayRef<int64_t> off) {
                 out.set(i, settle(rowBound(i, off[0]), result.get(i)));
               });
    });
    return out;
  }

  HostTensor matmul(ValueId id, llvm::ArrayRef<HostTensor> values) {
    const Node &n = G.node(id);
    ValueId ia = n.operands[0], ib = n.operands[1];
    const Node &an = G.node(ia), &bn = G.node(ib);
    const HostTensor &a = values[ia], &b = values[ib];
    unsigned ra = an.shape.rank(), rb = bn.shape.rank();
    int64_t m = an.shape[ra - 2], kk = an.shape[ra - 1], nn = bn.shape[rb - 1];
    Shape batch(llvm::makeArrayRef(n.shape.dims()).drop_back(2));
    Shape ab(llvm::makeArrayRef(an.shape.dims()).drop_back(2));
    Shape bb(llvm::makeArrayRef(bn.shape.dims()).drop_back(2));
    Strides sa = broadcastStrides(ab, batch), sb = broadcastStrides(bb, batch);
    for (auto &s : sa)
      s *= m * kk;
    for (auto &s : sb)
      s *= kk * nn;
    bool exactA = exact(ia), exactB = exact(ib);
    HostTensor out(DType::F32, n.shape);
    Settle settle = settleFor(id, values[id]);
    int64_t batches = batch.numel();
    llvm::parallelForEachN(0, static_cast<size_t>(batches * m), [&](size_t task) {
      int64_t bi = static_cast<int64_t>(task) / m, i = static_cast<int64_t>(task) % m;
      int64_t aoff = 0, boff = 0;
      forRange(batch, {sa, sb}, bi, bi + 1, [&](int64_t, llvm::ArrayRef<int64_t> off) {
        aoff = off[0];
        boff = off[1];
      });
      std::vector<double> sumAbs(nn, 0.0), sumErr(nn, 0.0);
      for (int64_t p = 0; p < kk; ++p) {
        double av = std::fabs(a.get(aoff + i * kk + p));
        double ae = exactA ? 0 : Bounds[ia].get(aoff + i * kk + p);
        int64_t brow = boff + p * nn;
        for (int64_t j = 0; j < nn; ++j) {
          double bv = std::fabs(b.get(brow + j));
          double be = exactB ? 0 : Bounds[ib].get(brow + j);
          sumAbs[j] += av * bv;
          sumErr[j] += av * be + bv * ae + ae * be;
        }
      }
      int64_t obase = (bi * m + i) * nn;
      // Each product's rounding (none with fma or tensor cores), then the
      // sum's. TF32 cuts each f32 operand to 10 bits of fraction first: a
      // product a' * b' is within (2 * 2^-10 + 2^-20) |a b| of a * b.
      // Three TF32 products: hi + lo is within 2^-22 of each operand, and
      // lo * lo is left out, 3 * 2^-22 in all (below 2^-20); the sums run
      // over the three products' terms.
      bool f32 = an.dtype == DType::F32;
      double product = Tf32 && f32 ? 0x1p-9 + 0x1p-20 : Tf32x3 && f32 ? 0x1p-20 : kU32;
      int64_t terms = Tf32x3 && f32 ? 3 * kk : kk;
      for (int64_t j = 0; j < nn; ++j)
        out.set(obase + j, settle(sumErr[j] + product * sumAbs[j] + sumRoundingError(terms, sumAbs[j]),
                                  values[id].get(obase + j)));
    });
    return out;
  }

  const Graph &G;
  bool Certain; ///< stored roundings may be certain
  bool Tf32;    ///< EvalOptions::tf32Matmuls
  bool Tf32x3;  ///< EvalOptions::tf32x3Matmuls
  const std::vector<bool> *Stored;    ///< EvalOptions::stored
  const std::vector<bool> *Registers; ///< EvalOptions::readInRegisters
  std::vector<HostTensor> Bounds; ///< what each value's readers may be off by
  /// The bound of an output whose readers' bound was widened
  /// (widenForRegisterReaders); empty for the others.
  std::vector<HostTensor> Own;
  std::vector<size_t> LastUse;
};

} // namespace

BoundedOutputs evaluateWithBounds(const Graph &g, llvm::ArrayRef<HostTensor> inputs,
                                  const EvalOptions &options, bool certainRoundings) {
  if (hasDerivatives(g)) {
    assert(!options.stored && "`stored` flags the nodes of a graph without derivatives");
    return evaluateWithBounds(expandAutodiff(g), inputs, options, certainRoundings);
  }
  BoundPass pass(g, certainRoundings, options.stored, options.readInRegisters,
                 options.tf32Matmuls, options.tf32x3Matmuls);
  EvalOptions eo = options;
  eo.observe = [&](ValueId id, std::span<const HostTensor> values) {
    if (options.observe)
      options.observe(id, values);
    pass.observe(id, llvm::ArrayRef<HostTensor>(values.data(), values.size()));
  };
  BoundedOutputs r;
  r.values = evaluate(g, inputs, eo);
  r.bounds = pass.outputs();
  return r;
}

} // namespace minijit
