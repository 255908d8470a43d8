//===- compiler/simplify/ArgmaxRewrites.h - argmax of an increasing map -*- C++ -*-===//
// A rewrite after simplification and before fusion, with the reassociating
// matmul rewrites (CompileOptions::reassociate, --no-reassociate, and only
// with fusion): an argmax (argmin) over axis A of a value that is strictly
// increasing in some x along A is the argmax (argmin) of x. A greedy decoding
// step's argmax(softmax(x)) then reads x once, in one pass, instead of three
// passes over the row (max, sum of exp, argmax of the quotient).
//
// The steps accepted, each strictly increasing in its operand v along A:
//   - add or sub of an operand constant along A (its size along A is 1
//     before broadcasting: a literal, a keepdim reduction over A), v + c,
//     c + v, v - c; and c - v, which is decreasing;
//   - mul by a finite nonzero literal, div by one (a negative one is
//     decreasing);
//   - div by an operand constant along A that is provably positive: a
//     positive finite literal, or a sum of exp or exp2 (any axes; views of
//     one taken through), which is > 0 in exact arithmetic;
//   - a unary op Ops.def calls Rising (exp, exp2, expm1, tanh, sigmoid, erf)
//     or Falling (neg, which is decreasing).
// A decreasing step swaps argmax and argmin. The chain is followed only
// through floating-point values (i32 arithmetic wraps), never through a cast
// (its rounding makes ties), log, sqrt or a division by anything else, and
// each step's operand has the step's own shape (so the argmax keeps its
// shape). Only the argmax's operand changes: the values of the chain stay
// for any other reader, and dead code removes them when none is left.
//
// Numerics. In exact arithmetic the result is the same: ties stay ties under
// a strictly increasing map, so the lowest position of the extreme is the
// same position. In floating point the rewritten argmax is the argmax of the
// exact map, where the chain as written may round two different x to one
// value (exp of logits close together, a sum of exp that underflows to 0 or
// overflows) and so pick the lower position of a tie x does not have. A
// NaN differs: softmax as written spreads a NaN of its row over the whole row
// (its max and sum are NaN, so the argmax is 0); the rewritten argmax gives
// the first NaN's position (numpy's rule). Likewise where the chain makes an
// infinity or a NaN from finite values (an overflow, inf - inf). The CPU
// reference evaluates the graph as written; its error bounds accept either
// position of values within rounding of each other.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/simplify/MatmulRewrites.h"
#include "ir/Graph.h"

namespace minijit {

/// Applies the rewrite to every argmax and argmin of `g` it holds for (each
/// is reported as a MatmulRewriteKind::MonotoneArg record); the values keep
/// their names and ids. The chains' values are left in place: simplify
/// removes those no output needs.
MatmulRewriteResult rewriteMonotoneArgs(const Graph &g);

} // namespace minijit
