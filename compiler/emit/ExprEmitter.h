//===- compiler/emit/ExprEmitter.h - one element's arithmetic as C++ -*- C++ -*-===//
// The C++ expression of each elementwise op, literals, register types, and
// the conversions between storage types (f16, bf16, bool) and registers.
// Every template uses these; none of them writes lines.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/Op.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace minijit {

/// A float literal CUDA parses exactly: "0.5f", "(-2.0f)", MJ_INF, MJ_NAN.
std::string floatLiteral(double v);
/// An i64 literal: "5LL", "(-3LL)".
std::string longLiteral(int64_t v);
/// A literal of dtype `t` in registers.
std::string literalOf(double v, DType t);
/// The register type of a dtype: float (f16 and bf16 too), int, long long or bool.
std::string regType(DType t);
/// A stored element `raw` as a register value, and back.
std::string loadConv(DType t, const std::string &raw);
std::string storeConv(DType t, const std::string &v);

/// The expression of elementwise op `op` with result type `result` over
/// `args` (C++ expressions) of types `argTypes`.
std::string elementwiseExpr(OpKind op, DType result, llvm::ArrayRef<std::string> args,
                            llvm::ArrayRef<DType> argTypes);

/// A reduction's combining functor (MjSum, ...) and identity.
struct ReduceText {
  std::string functor, identity;
};
/// `isLong`: of i64 values (sum, prod, max, min), in long long.
ReduceText reduceText(OpKind op, bool isInt, bool isLong = false);
/// `acc = acc OP v;` for reduction op `op`.
std::string accumulateText(OpKind op, bool isInt, const std::string &acc, const std::string &v);

} // namespace minijit
