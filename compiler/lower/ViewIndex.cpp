//===- compiler/lower/ViewIndex.cpp - views as index arithmetic -----------===//
#include "compiler/lower/ViewIndex.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <string>

namespace minijit {

IndexExpr elementOffset(IndexContext &ctx, const Shape &s, const Index &idx) {
  auto strides = s.strides();
  IndexExpr off = IndexExpr::constant(0);
  for (unsigned d = 0; d < s.rank(); ++d)
    off = ctx.add(off, ctx.mul(idx[d], strides[d]));
  return off;
}

bool stretchesTo(const Dim &from, const Dim &to) {
  return from.size() == 1 && !(from.isNamed() && to.isNamed() && from.expr() == to.expr());
}

Index broadcastOperandIndex(const Shape &from, const Shape &to, const Index &idx) {
  Index out;
  unsigned off = to.rank() - from.rank();
  for (unsigned i = 0; i < from.rank(); ++i)
    out.push_back(stretchesTo(from.dim(i), to.dim(off + i)) ? IndexExpr::constant(0) : idx[off + i]);
  return out;
}

Index viewIndex(IndexContext &ctx, const Node &n, const Shape &in, const Index &idx) {
  switch (n.op) {
  case OpKind::Permute: {
    Index out(in.rank());
    for (unsigned i = 0; i < n.perm.size(); ++i)
      out[n.perm[i]] = idx[i];
    return out;
  }
  case OpKind::Slice: {
    Index out = idx;
    out[n.axis] = ctx.add(ctx.mul(idx[n.axis], n.step), IndexExpr::constant(n.start));
    return out;
  }
  case OpKind::Pad: {
    Index out;
    for (unsigned d = 0; d < in.rank(); ++d)
      out.push_back(ctx.clamp(ctx.add(idx[d], IndexExpr::constant(-n.before[d])), in[d] - 1));
    return out;
  }
  case OpKind::Flip: {
    Index out = idx;
    for (int64_t a : n.axes)
      out[a] = ctx.add(ctx.mul(idx[a], -1), IndexExpr::constant(in[a] - 1));
    return out;
  }
  case OpKind::Reshape: return reshapedIndex(ctx, n.shape, idx, in);
  default: llvm_unreachable("not a view with an index of its own");
  }
}

Index reshapedIndex(IndexContext &ctx, const Shape &from, const Index &idx, const Shape &to) {
  IndexExpr lin = elementOffset(ctx, from, idx);
  auto strides = to.strides();
  Index out;
  for (unsigned d = 0; d < to.rank(); ++d)
    out.push_back(ctx.mod(ctx.div(lin, strides[d]), to[d]));
  return out;
}

Index rowRootIndex(const Shape &domain, const DimVector &reducedAxes,
                   const Index &domainIdx, const Shape &shape) {
  std::vector<Dim> dropDims, keepDims;
  Index drop, keep, nonUnit;
  for (unsigned d = 0; d < domain.rank(); ++d) {
    if (llvm::is_contained(reducedAxes, int64_t(d))) {
      keepDims.push_back(Dim(1));
      keep.push_back(IndexExpr::constant(0));
      continue;
    }
    dropDims.push_back(domain.dim(d));
    keepDims.push_back(domain.dim(d));
    drop.push_back(domainIdx[d]);
    keep.push_back(domainIdx[d]);
    if (!isUnitDim(domain.dim(d)))
      nonUnit.push_back(domainIdx[d]);
  }
  if (shape == Shape(std::span<const Dim>(dropDims)))
    return drop;
  if (shape == Shape(std::span<const Dim>(keepDims)))
    return keep;
  Index idx;
  size_t next = 0;
  for (unsigned d = 0; d < shape.rank(); ++d)
    idx.push_back(isUnitDim(shape.dim(d)) ? IndexExpr::constant(0) : nonUnit[next++]);
  assert(next == nonUnit.size() && "a root the fusion took for row-shaped");
  return idx;
}

std::optional<int64_t> linearCoefficient(IndexContext &ctx, const IndexExpr &e, const IndexExpr &v) {
  IndexExpr diff = ctx.add(e, ctx.mul(zeroAt(ctx, e, {v}), -1));
  if (diff.terms().empty() && diff.constantTerm() == 0)
    return 0;
  if (diff.terms().size() != 1 || diff.constantTerm() != 0)
    return std::nullopt;
  int64_t coef = diff.terms()[0].second;
  if (diff.key() != ctx.mul(v, coef).key())
    return std::nullopt;
  return coef;
}

IndexExpr zeroAt(IndexContext &ctx, const IndexExpr &e, std::initializer_list<IndexExpr> vars) {
  std::vector<std::string> names;
  for (const IndexExpr &v : vars)
    names.push_back(ctx.str(v));
  return ctx.substitute(e, [&](const std::string &n) -> std::optional<IndexExpr> {
    if (llvm::is_contained(names, n))
      return IndexExpr::constant(0);
    return std::nullopt;
  });
}

bool misreadBroadcast(IndexContext &ctx, Index &index, const Shape &from, const Shape &to) {
  if (from == to)
    return false;
  for (unsigned i = from.rank(); i-- > 0;)
    if (from[i] > 1) {
      index[i] = ctx.mod(ctx.add(index[i], IndexExpr::constant(1)), from[i]);
      return true;
    }
  return false;
}

} // namespace minijit
