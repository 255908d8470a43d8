//===- compiler/lower/ViewIndex.h - views as index arithmetic ---------*- C++ -*-===//
// A view (broadcast, permute, slice, pad, flip, reshape) moves no data: the
// element of the view at an index is the element of its operand at another
// index. These functions compute that index, and a buffer's element offset.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/IndexExpr.h"
#include "ir/Graph.h"

#include <initializer_list>
#include <optional>
#include <vector>

namespace minijit {

using Index = std::vector<IndexExpr>;

/// The row-major element offset of index `idx` into a tensor of shape `s`.
IndexExpr elementOffset(IndexContext &ctx, const Shape &s, const Index &idx);

/// Dimension `from` of an operand stretches to dimension `to` of a result: it
/// is 1 and not the same named size as `to`. A named size bound to 1 read where
/// the result has that same name takes the result's index (the kernel text
/// stays that of the name's bucket); read where a pass stretched it to another
/// size (a bound graph broadcasts by value), it stretches.
bool stretchesTo(const Dim &from, const Dim &to);

/// The index into an operand of shape `from` that numpy broadcasting reads for
/// element `idx` of a result of shape `to`.
Index broadcastOperandIndex(const Shape &from, const Shape &to, const Index &idx);

/// The index into view `n`'s operand (of shape `in`) of the view's element
/// `idx`. `n` is a permute, slice, pad, flip or reshape (a broadcast's is
/// broadcastOperandIndex). A pad's index is clamped into the operand: where
/// the pad's predicate fails any index in bounds will do.
Index viewIndex(IndexContext &ctx, const Node &n, const Shape &in, const Index &idx);

/// The index into `to` of the element at index `idx` of `from`, counted in
/// row-major order (the same number of elements).
Index reshapedIndex(IndexContext &ctx, const Shape &from, const Index &idx, const Shape &to);

/// The index of a row-shaped root of a reduction kernel over `domain`
/// (Fusion's rowShapeMatches), from the domain's index `domainIdx`: the kept
/// axes, with the reduced ones at 0 where the root keeps them (keepdim) or,
/// for any other shape, its unit axes at 0 and the kept axes of more than
/// one element in order (a squeeze of the result).
Index rowRootIndex(const Shape &domain, const DimVector &reducedAxes,
                   const Index &domainIdx, const Shape &shape);

/// The coefficient c with e = c*v + (terms without v), where `v` is a
/// variable; nullopt when `e` is not linear in `v` (v inside a division).
std::optional<int64_t> linearCoefficient(IndexContext &ctx, const IndexExpr &e, const IndexExpr &v);

/// `e` with the variables `vars` set to 0 (a matmul operand's base offset).
IndexExpr zeroAt(IndexContext &ctx, const IndexExpr &e, std::initializer_list<IndexExpr> vars);

/// A known miscompile for testing the tests (compiler/Mutation.h's
/// BroadcastStride): the last dimension a broadcast operand keeps is read one
/// along, wrapping so the read stays inside the operand. True when it changed
/// `index`.
bool misreadBroadcast(IndexContext &ctx, Index &index, const Shape &from, const Shape &to);

} // namespace minijit
