//===- compiler/emit/ExprEmitter.cpp - one element's arithmetic as C++ ----===//
#include "compiler/emit/ExprEmitter.h"

#include "ir/Philox.h"
#include "ir/Printer.h"

#include "llvm/Support/ErrorHandling.h"

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

std::string elementwiseExpr(OpKind op, DType result, llvm::ArrayRef<std::string> args,
                            llvm::ArrayRef<DType> argTypes) {
    DType operandType = argTypes.back();
    bool isInt = isInteger(operandType);
    bool fast = result == DType::F16 || result == DType::BF16;
    const std::string &a = args[0];
    std::string b = args.size() > 1 ? args[1] : "";
    auto call = [&](const char *precise, const char *approx) {
      return std::string(fast && approx ? approx : precise) + "(" + a + ")";
    };
    switch (op) {
    case OpKind::Neg: return isInt ? "mj_ineg(" + a + ")" : "-" + a;
    case OpKind::Abs: return isInt ? "(" + a + " < 0 ? mj_ineg(" + a + ") : " + a + ")" : call("fabsf", nullptr);
    case OpKind::Exp: return call("expf", "__expf");
    case OpKind::Exp2: return call("exp2f", nullptr);
    // expm1f and log1pf even for 16-bit results: precise near 0 is their point.
    case OpKind::Expm1: return call("expm1f", nullptr);
    case OpKind::Log: return call("logf", "__logf");
    case OpKind::Log2: return call("log2f", "__log2f");
    case OpKind::Log1p: return call("log1pf", nullptr);
    case OpKind::Sqrt: return call("sqrtf", nullptr);
    case OpKind::Rsqrt: return call("rsqrtf", nullptr);
    case OpKind::Sin: return call("sinf", "__sinf");
    case OpKind::Cos: return call("cosf", "__cosf");
    case OpKind::Tanh: return call("tanhf", "mj_tanh_fast");
    case OpKind::Sigmoid:
      return fast ? "__fdividef(1.0f, 1.0f + __expf(-" + a + "))"
                  : "1.0f / (1.0f + expf(-" + a + "))";
    case OpKind::Erf: return call("erff", nullptr);
    case OpKind::Relu: return isInt ? "(" + a + " > 0 ? " + a + " : 0)" : "mj_relu(" + a + ")";
    case OpKind::Recip: return fast ? "__fdividef(1.0f, " + a + ")" : "1.0f / " + a;
    case OpKind::Floor: return call("floorf", nullptr);
    case OpKind::Ceil: return call("ceilf", nullptr);
    case OpKind::RoundTf32: return call("mj_round_tf32", nullptr);
    case OpKind::Not: return "!" + a;
    case OpKind::Add: return isInt ? "mj_iadd(" + a + ", " + b + ")" : a + " + " + b;
    case OpKind::Sub: return isInt ? "mj_isub(" + a + ", " + b + ")" : a + " - " + b;
    case OpKind::Mul: return isInt ? "mj_imul(" + a + ", " + b + ")" : a + " * " + b;
    case OpKind::Div:
      if (isInt)
        return "mj_idiv(" + a + ", " + b + ")";
      return fast ? "__fdividef(" + a + ", " + b + ")" : a + " / " + b;
    // powf even for 16-bit results: __powf is exp2(b * log2(a)), NaN for a < 0.
    case OpKind::Pow: return "powf(" + a + ", " + b + ")";
    case OpKind::Maximum: return std::string(isInt ? "max(" : "mj_max(") + a + ", " + b + ")";
    case OpKind::Minimum: return std::string(isInt ? "min(" : "mj_min(") + a + ", " + b + ")";
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

ReduceText reduceText(OpKind op, bool isInt, bool isLong) {
  if (isLong) { // the i64 preamble's functors (i64Preamble)
    switch (op) {
    case OpKind::Sum: return {"MjSumL", "0LL"};
    case OpKind::Prod: return {"MjProdL", "1LL"};
    case OpKind::Max: return {"MjMaxL", "(-9223372036854775807LL - 1)"};
    case OpKind::Min: return {"MjMinL", "9223372036854775807LL"};
    default: break;
    }
  }
  switch (op) {
  case OpKind::Sum:
  case OpKind::Mean: return {"MjSum", isInt ? "0" : "0.0f"};
  case OpKind::Prod: return {"MjProd", isInt ? "1" : "1.0f"};
  case OpKind::Max: return {"MjMax", isInt ? "(-2147483647 - 1)" : "(-MJ_INF)"};
  case OpKind::Min: return {"MjMin", isInt ? "2147483647" : "MJ_INF"};
  // not reductions
  case OpKind::Input: case OpKind::Constant: case OpKind::Neg: case OpKind::Abs: case OpKind::Exp:
  case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt:
  case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh: case OpKind::Sigmoid: case OpKind::Erf:
  case OpKind::Relu: case OpKind::Recip: case OpKind::Floor: case OpKind::Ceil: case OpKind::RoundTf32: case OpKind::Not:
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Pow:
  case OpKind::Maximum: case OpKind::Minimum: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt:
  case OpKind::Le: case OpKind::Gt: case OpKind::Ge: case OpKind::And: case OpKind::Or:
  case OpKind::Where: case OpKind::Cast: case OpKind::Reshape: case OpKind::Permute:
  case OpKind::Broadcast: case OpKind::Slice: case OpKind::Pad: case OpKind::Concat:
  case OpKind::Iota: case OpKind::Take: case OpKind::TakeAlongAxis: case OpKind::Matmul:
  case OpKind::Grad: case OpKind::Vjp: case OpKind::Expm1: case OpKind::Log1p: case OpKind::Flip:
  case OpKind::Full: case OpKind::Rand: case OpKind::Randn: case OpKind::Dropout:
  // (value, index) pairs: KernelEmitter writes them (mj_arg_update)
  case OpKind::Argmax: case OpKind::Argmin: break;
  case OpKind::Cumsum: case OpKind::Cumprod: break; // emit/Scan.cpp
  }
  llvm_unreachable("not a reduction");
}

std::string accumulateText(OpKind op, bool isInt, const std::string &acc, const std::string &v) {
  switch (op) {
  case OpKind::Sum:
  case OpKind::Mean: return isInt ? acc + " = mj_iadd(" + acc + ", " + v + ");" : acc + " += " + v + ";";
  case OpKind::Prod: return isInt ? acc + " = mj_imul(" + acc + ", " + v + ");" : acc + " *= " + v + ";";
  case OpKind::Max: return acc + " = " + (isInt ? "max(" : "mj_max(") + acc + ", " + v + ");";
  case OpKind::Min: return acc + " = " + (isInt ? "min(" : "mj_min(") + acc + ", " + v + ");";
  // not reductions
  case OpKind::Input: case OpKind::Constant: case OpKind::Neg: case OpKind::Abs: case OpKind::Exp:
  case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt:
  case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh: case OpKind::Sigmoid: case OpKind::Erf:
  case OpKind::Relu: case OpKind::Recip: case OpKind::Floor: case OpKind::Ceil: case OpKind::RoundTf32: case OpKind::Not:
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Pow:
  case OpKind::Maximum: case OpKind::Minimum: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt:
  case OpKind::Le: case OpKind::Gt: case OpKind::Ge: case OpKind::And: case OpKind::Or:
  case OpKind::Where: case OpKind::Cast: case OpKind::Reshape: case OpKind::Permute:
  case OpKind::Broadcast: case OpKind::Slice: case OpKind::Pad: case OpKind::Concat:
  case OpKind::Iota: case OpKind::Take: case OpKind::TakeAlongAxis: case OpKind::Matmul:
  case OpKind::Grad: case OpKind::Vjp: case OpKind::Expm1: case OpKind::Log1p: case OpKind::Flip:
  case OpKind::Full: case OpKind::Rand: case OpKind::Randn: case OpKind::Dropout:
  // (value, index) pairs: KernelEmitter writes them (mj_arg_update)
  case OpKind::Argmax: case OpKind::Argmin: break;
  case OpKind::Cumsum: case OpKind::Cumprod: break; // emit/Scan.cpp
  }
  llvm_unreachable("not a reduction");
}

} // namespace minijit
