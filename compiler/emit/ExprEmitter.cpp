//===- compiler/emit/ExprEmitter.cpp - one element's arithmetic as C++ ----===//
#include "compiler/emit/ExprEmitter.h"

#include "ir/Philox.h"
#include "ir/Printer.h"

#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <cmath>
#include <cstdint>

namespace minijit {

std::string floatLiteral(double v) {
  if (std::isnan(v))
    return "MJ_NAN";
  if (std::isinf(v))
    return v > 0 ? "MJ_INF" : "(-MJ_INF)";
  std::string s = literalText(v, DType::F32);
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

std::string intLiteral(int64_t v) {
  if (v == -2147483648LL)
    return "(-2147483647 - 1)";
  return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
}

std::string longLiteral(int64_t v) {
  if (v == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  return v < 0 ? "(" + std::to_string(v) + "LL)" : std::to_string(v) + "LL";
}

std::string literalOf(double v, DType t) {
  switch (t) {
  case DType::F32:
  case DType::F16:
  case DType::BF16: return floatLiteral(v);
  case DType::I32: return intLiteral(static_cast<int64_t>(v));
  case DType::Bool: return v != 0 ? "true" : "false";
  case DType::I64: return longLiteral(toInt64(v));
  }
  llvm_unreachable("bad dtype");
}

std::string regType(DType t) {
  switch (t) {
  case DType::F32:
  case DType::F16:
  case DType::BF16: return "float";
  case DType::I32: return "int";
  case DType::Bool: return "bool";
  case DType::I64: return "long long";
  }
  llvm_unreachable("bad dtype");
}

std::string loadConv(DType t, const std::string &raw) {
  switch (t) {
  case DType::F32:
  case DType::I32:
  case DType::I64: return raw;
  case DType::F16: return "mj_h2f(" + raw + ")";
  case DType::BF16: return "mj_bf2f(" + raw + ")";
  case DType::Bool: return "(" + raw + " != 0)";
  }
  llvm_unreachable("bad dtype");
}

std::string storeConv(DType t, const std::string &v) {
  switch (t) {
  case DType::F32:
  case DType::I32:
  case DType::I64: return v;
  case DType::F16: return "mj_f2h(" + v + ")";
  case DType::BF16: return "mj_f2bf(" + v + ")";
  case DType::Bool: return "(unsigned char)(" + v + ")";
  }
  llvm_unreachable("bad dtype");
}

namespace {

std::string castText(DType from, DType to, const std::string &a) {
    if (to == DType::Bool)
      return from == DType::Bool ? a : "(" + a + " != 0)";
    if (to == DType::I32) {
      if (from == DType::Bool)
        return "(" + a + " ? 1 : 0)";
      // from i64: the low 32 bits (wraps)
      return from == DType::I32 ? a : "(int)(" + a + ")";
    }
    if (to == DType::I64) {
      if (from == DType::Bool)
        return "(" + a + " ? 1LL : 0LL)";
      // from a float: cvt.rzi.s64, saturating, NaN to 0
      return from == DType::I64 ? a : "(long long)(" + a + ")";
    }
    std::string f = from == DType::Bool                           ? "(" + a + " ? 1.0f : 0.0f)"
                    : from == DType::I32 || from == DType::I64 ? "(float)(" + a + ")"
                                                                  : a;
    // Narrowing to a 16-bit type rounds the value, even in registers.
    bool narrows = (to == DType::F16 && from != DType::F16) || (to == DType::BF16 && from != DType::BF16);
    if (to == DType::F16 && narrows && from != DType::Bool)
      return "mj_round_f16(" + f + ")";
    if (to == DType::BF16 && narrows && from != DType::Bool)
      return "mj_round_bf16(" + f + ")";
    return f;
  
}

} // namespace

namespace {

/// The CUDA call of a unary op spelled in Ops.def's Cuda column, its fast
/// intrinsic (CudaFast) for an f16/bf16 result where it has one.
std::string callOf(OpKind op, bool fast, const std::string &arg) {
  const OpInfo &info = opInfo(op);
  return std::string(fast && info.hasFastCall() ? info.cudaFast : info.cuda) + "(" + arg + ")";
}

} // namespace

std::string elementwiseExpr(OpKind op, DType result, llvm::ArrayRef<std::string> args,
                            llvm::ArrayRef<DType> argTypes) {
  DType operandType = argTypes.back();
  bool isInt = isInteger(operandType);
  bool fast = result == DType::F16 || result == DType::BF16;
  const OpInfo &info = opInfo(op);
  const std::string &a = args[0];
  std::string b = args.size() > 1 ? args[1] : "";
  // x / y, or the fast division intrinsic (__fdividef) for an f16/bf16 result.
  auto divide = [&](const std::string &x, const std::string &y) {
    return fast && info.hasFastCall() ? std::string(info.cudaFast) + "(" + x + ", " + y + ")"
                                      : x + " / " + y;
  };
  switch (op) {
  // A call of the function Ops.def spells (its fast intrinsic where it has
  // one); expm1f and log1pf even for 16-bit results: precise near 0 is their
  // point.
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Expm1:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Log1p:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tanh:
  case OpKind::Erf:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::RoundTf32: return callOf(op, fast, a);
#ifdef MINIJIT_TEST_FAKE_OP
  case OpKind::FakeCbrt: return callOf(op, fast, a);
#endif
  case OpKind::Neg: return isInt ? "mj_ineg(" + a + ")" : "-" + a;
  case OpKind::Abs: return isInt ? "(" + a + " < 0 ? mj_ineg(" + a + ") : " + a + ")" : callOf(op, fast, a);
  case OpKind::Sigmoid: {
    std::string denominator = "1.0f + " + callOf(OpKind::Exp, fast, "-" + a);
    return fast && info.hasFastCall() ? divide("1.0f", denominator) : "1.0f / (" + denominator + ")";
  }
  case OpKind::Relu: return isInt ? "(" + a + " > 0 ? " + a + " : 0)" : callOf(op, fast, a);
  case OpKind::Recip: return divide("1.0f", a);
  case OpKind::Not: return "!" + a;
  case OpKind::Add: return isInt ? "mj_iadd(" + a + ", " + b + ")" : a + " + " + b;
  case OpKind::Sub: return isInt ? "mj_isub(" + a + ", " + b + ")" : a + " - " + b;
  case OpKind::Mul: return isInt ? "mj_imul(" + a + ", " + b + ")" : a + " * " + b;
  case OpKind::Div: return isInt ? "mj_idiv(" + a + ", " + b + ")" : divide(a, b);
  // powf even for 16-bit results: __powf is exp2(b * log2(a)), NaN for a < 0.
  case OpKind::Pow:
  case OpKind::Maximum:
  case OpKind::Minimum:
    return std::string(!isInt ? info.cuda : op == OpKind::Maximum ? "max" : "min") + "(" + a +
           ", " + b + ")";
  case OpKind::Eq: return a + " == " + b;
  case OpKind::Ne: return a + " != " + b;
  case OpKind::Lt: return a + " < " + b;
  case OpKind::Le: return a + " <= " + b;
  case OpKind::Gt: return a + " > " + b;
  case OpKind::Ge: return a + " >= " + b;
  case OpKind::And: return a + " && " + b;
  case OpKind::Or: return a + " || " + b;
  case OpKind::Where: return a + " ? " + b + " : " + args[2];
  // A pad or concat element: its predicate, the operand's value, the other.
  case OpKind::Pad:
  case OpKind::Concat: return a + " ? " + b + " : " + args[2];
  case OpKind::Cast: return castText(argTypes[0], result, a);
  // The index (an int) as the iota's dtype, rounded as a cast would.
  case OpKind::Iota: return castText(DType::I32, result, a);
  // The seed, the offset, the element's index (and dropout's p): the
  // preamble's Philox (randomPreamble), as ir/Philox.h computes it.
  case OpKind::Rand:
    return "mj_rand(" + a + ", " + b + ", " + args[2] + ", " + std::to_string(randomBits(result)) +
           ")";
  case OpKind::Randn: return "mj_randn(" + a + ", " + b + ", " + args[2] + ")";
  case OpKind::Dropout:
    return "mj_dropout(" + a + ", " + b + ", " + args[2] + ", " + args[3] + ", " + args[4] + ")";
  case OpKind::Input:
  case OpKind::Constant:
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Prod:
  case OpKind::Argmax:
  case OpKind::Argmin:
  case OpKind::Cumsum:
  case OpKind::Cumprod:
  case OpKind::Reshape:
  case OpKind::Permute:
  case OpKind::Broadcast:
  case OpKind::Slice:
  case OpKind::Flip:
  case OpKind::Full: // a literal where it is read (lower/Lowering.cpp)
  case OpKind::Take:
  case OpKind::TakeAlongAxis:
  case OpKind::Matmul:
  case OpKind::Grad:
  case OpKind::Vjp: break;
  }
  llvm_unreachable("not an elementwise op");
}

namespace {

/// A reduction's combining binary op (Ops.def's Combiner column).
OpKind combinerOf(OpKind op) {
  std::optional<OpKind> c = opInfo(op).combiner;
  assert(c && !isArgReduction(op) &&
         "a reduction of values (argmax and argmin: KernelEmitter writes mj_arg_update)");
  return *c;
}

/// The identity of combiner `c` as a literal of i32 (`isInt`), i64
/// (`isLong`) or f32: the dtype's lowest or highest value for -inf and inf.
std::string identityText(OpKind c, bool isInt, bool isLong) {
  double v = *opInfo(c).identity;
  if (isLong)
    return longLiteral(std::isinf(v) ? (v < 0 ? INT64_MIN : INT64_MAX) : static_cast<int64_t>(v));
  if (isInt)
    return literalOf(std::isinf(v) ? (v < 0 ? -2147483648.0 : 2147483647.0) : v, DType::I32);
  return literalOf(v, DType::F32);
}

} // namespace

ReduceText reduceText(OpKind op, bool isInt, bool isLong) {
  OpKind c = combinerOf(op);
  // The preamble's functors; the i64 preamble's (i64Preamble) end in L.
  std::string functor;
  switch (c) {
  case OpKind::Add: functor = "MjSum"; break;
  case OpKind::Mul: functor = "MjProd"; break;
  case OpKind::Maximum: functor = "MjMax"; break;
  case OpKind::Minimum: functor = "MjMin"; break;
  default: llvm_unreachable("a reduction combines by add, mul, maximum or minimum");
  }
  return {isLong ? functor + "L" : functor, identityText(c, isInt, isLong)};
}

std::string accumulateText(OpKind op, bool isInt, const std::string &acc, const std::string &v) {
  OpKind c = combinerOf(op);
  switch (c) {
  case OpKind::Add: return isInt ? acc + " = mj_iadd(" + acc + ", " + v + ");" : acc + " += " + v + ";";
  case OpKind::Mul: return isInt ? acc + " = mj_imul(" + acc + ", " + v + ");" : acc + " *= " + v + ";";
  case OpKind::Maximum:
  case OpKind::Minimum: {
    DType t = isInt ? DType::I32 : DType::F32;
    return acc + " = " + elementwiseExpr(c, t, {acc, v}, {t, t}) + ";";
  }
  default: llvm_unreachable("a reduction combines by add, mul, maximum or minimum");
  }
}

} // namespace minijit
