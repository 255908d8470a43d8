//===- ir/ErrorBoundRules.cpp - each op's error bound ---------------------===//
// The per-op rules of the forward error analysis (ir/ErrorBound.h): how far
// an elementwise op's result moves when its operands move within their
// bounds (its condition), plus the op's own error in f32. The ulp figures
// are Ops.def's Ulps columns, the CUDA Programming Guide's (appendix
// "Mathematical Functions", single precision, full range) for the code
// compiler/emit/ExprEmitter.cpp writes; kernels are compiled without
// -use_fast_math, so f32 division and square root are IEEE (half an ulp).
//===----------------------------------------------------------------------===//
#include "ir/ErrorBound.h"
#include "ir/ErrorBoundInternal.h"

#include "llvm/Support/ErrorHandling.h"

#include <cmath>

namespace minijit {

using detail::kInf;
using detail::kU32;
using detail::ulpsOf;

namespace {

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

/// The error of the CUDA code the emitter writes for op `op` on an argument
/// `x`, at a result of size `y`; `fast`: the result is f16 or bf16, where
/// the emitter calls the op's fast intrinsic if Ops.def names one.
double callError(OpKind op, bool fast, double x, double y) {
  double ulps = opInfo(op).callUlps(fast);
  if (!std::isnan(ulps))
    return ulps == 0 ? 0 : ulpsOf(ulps, y);
  // The fast intrinsics whose error is no plain ulp figure (UlpsFast Special).
  switch (op) {
  case OpKind::Exp: // __expf: 2 + floor(|1.173 x|) ulp
    return ulpsOf(2 + std::floor(std::fabs(1.173 * x)), y);
  case OpKind::Log: // __logf: 2^-21.41 absolute in [0.5, 2], 3 ulp elsewhere
    return x >= 0.5 && x <= 2 ? 0x1p-21 : ulpsOf(3, y);
  case OpKind::Log2: // __log2f: 2^-22 absolute in [0.5, 2], 2 ulp elsewhere
    return x >= 0.5 && x <= 2 ? 0x1p-22 : ulpsOf(2, y);
  case OpKind::Sin:
  case OpKind::Cos:
    // __sinf/__cosf: 2^-21.41 absolute in [-pi, pi]; beyond, the guide says
    // only "larger": its range reduction rounds x in f32, taken as 2u|x|.
    return 0x1p-21 + 2 * kU32 * std::fabs(x);
  case OpKind::Tanh: // tanh.approx.f32: relative error 2^-10.987
    return std::exp2(-10.9) * std::fabs(y) + 0x1p-149;
  default: llvm_unreachable("Ops.def's UlpsFast is Special: the intrinsic's error belongs here");
  }
}

/// How far a unary op's result moves when x moves by up to `e`, plus its
/// own error. The smooth functions take the slope, read from the result
/// where it can be (no second call of the function), plus a bound on the
/// curvature over the interval; an op without a rule of its own takes its
/// values at the interval's ends when Ops.def calls it monotone (the CPU
/// reference's), and has no bound where x may move otherwise.
double unaryBound(const Node &n, DType operandType, bool isInt, double x, double e, double y) {
  bool fast = n.dtype == DType::F16 || n.dtype == DType::BF16;
  double spread = 0;
  switch (n.op) {
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Relu: spread = e; break;
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
  case OpKind::Recip:
    spread = e == 0 ? 0 : (std::fabs(x) > e ? e / (std::fabs(x) * (std::fabs(x) - e)) : kInf);
    break;
  case OpKind::Sin: // |cos x| = sqrt(1 - sin^2 x)
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
    // 1 / (1 + exp(-x)): the exponential's error, the addition's rounding,
    // then the division's (sigmoid's own Ulps), each relative to the result.
    double ex = std::exp(-x), d = 1 + ex;
    double dErr = callError(OpKind::Exp, fast, -x, ex) + kU32 * d;
    return spread + std::fabs(y) * dErr / d + ulpsOf(opInfo(n.op).callUlps(fast), y);
  }
  case OpKind::Floor: return stepSpread(std::floor, x, e);
  case OpKind::Ceil: return stepSpread(std::ceil, x, e);
  case OpKind::RoundTf32: // a step of 2^-10 of the value at most, at either end
    return e == 0 ? 0 : 2 * e + 0x1p-10 * (std::fabs(x) + e);
  case OpKind::Not: return e > 0 ? 1 : 0;
  default: // rsqrt, and an op with no rule of its own
    if (opInfo(n.op).isMonotone())
      spread = monotoneSpread(
          [&](double v) { return applyElementwise(n, operandType, std::span<const double>(&v, 1)); },
          x, e);
    else
      spread = e == 0 ? 0 : kInf;
    break;
  }
  if (isInt)
    return spread;
  return spread + callError(n.op, fast, x, std::fabs(y) + spread);
}

/// A comparison may flip when the operands' intervals meet.
double comparisonBound(double a, double b, double ea, double eb) {
  return ea + eb > 0 && std::fabs(a - b) <= ea + eb ? 1 : 0;
}

double binaryBound(const Node &n, bool isInt, double a, double b, double ea, double eb,
                   double y) {
  bool fast = n.dtype == DType::F16 || n.dtype == DType::BF16;
  const OpInfo &info = opInfo(n.op);
  if (info.boolResult)
    return comparisonBound(a, b, ea, eb);
  double spread = 0;
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
    break;
  case OpKind::Pow: {
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
  case OpKind::And: // flips only where the other operand may be true
    return (ea > 0 && (b != 0 || eb > 0)) || (eb > 0 && (a != 0 || ea > 0)) ? 1 : 0;
  case OpKind::Or: // ... or may be false
    return (ea > 0 && (b == 0 || eb > 0)) || (eb > 0 && (a == 0 || ea > 0)) ? 1 : 0;
  default: // an op with no rule of its own: no bound where an operand may move
    spread = ea + eb > 0 ? kInf : 0;
    break;
  }
  if (isInt || !std::isfinite(spread))
    return spread;
  return spread + ulpsOf(info.callUlps(fast), std::fabs(y) + spread);
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
  case OpClass::Unary: return unaryBound(n, operandType, isInt, args[0], errors[0], value);
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

} // namespace minijit
