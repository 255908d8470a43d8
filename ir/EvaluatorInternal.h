//===- ir/EvaluatorInternal.h - the loops of the CPU reference -*- C++ -*-===//
// Index loops the CPU reference (Evaluator.cpp) and its error bounds
// (ErrorBound.cpp) share: strides that read an operand through a broadcast,
// a walk over a range of elements with each operand's offset, and parallel
// chunks; and the reference's accumulating ops (EvaluatorReductions.cpp).
// Used only inside ir/.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/HostTensor.h"
#include "ir/Shape.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Parallel.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace minijit::detail {

using Strides = std::vector<int64_t>;

/// Element strides that read `from` (row-major) at the multi-index of an
/// element of shape `to` it broadcasts to: 0 along stretched dims.
inline Strides broadcastStrides(const Shape &from, const Shape &to) {
  Strides s(to.rank(), 0);
  auto fs = from.strides();
  unsigned off = to.rank() - from.rank();
  for (unsigned i = 0; i < from.rank(); ++i)
    s[off + i] = from[i] == 1 ? 0 : fs[i];
  return s;
}

/// Element strides that read the operand (of shape `in`) of reshape, permute
/// or broadcast `n` at the multi-index of an element of `n` (a reshape keeps
/// the order: element i reads element i).
inline Strides viewReadStrides(const Node &n, const Shape &in) {
  switch (n.op) {
  case OpKind::Reshape: return n.shape.strides();
  case OpKind::Permute: {
    Strides s;
    auto is = in.strides();
    for (int64_t p : n.perm)
      s.push_back(is[p]);
    return s;
  }
  case OpKind::Broadcast: return broadcastStrides(in, n.shape);
  default: llvm_unreachable("slice, pad and flip read at an index of their own");
  }
}

/// A batched product's sizes: `a` [..., m, kk] times `b` [..., kk, nn] over
/// the batch of the result, with the element strides that read each
/// operand's matrix of a batch index (0 where its batch broadcasts).
struct MatmulLayout {
  int64_t m, kk, nn;
  Shape batch;
  Strides sa, sb;
};

inline MatmulLayout matmulLayout(const Node &n, const Node &a, const Node &b) {
  unsigned ra = a.shape.rank(), rb = b.shape.rank();
  MatmulLayout l{a.shape[ra - 2], a.shape[ra - 1], b.shape[rb - 1],
                 Shape(llvm::makeArrayRef(n.shape.dims()).drop_back(2)), {}, {}};
  l.sa = broadcastStrides(Shape(llvm::makeArrayRef(a.shape.dims()).drop_back(2)), l.batch);
  l.sb = broadcastStrides(Shape(llvm::makeArrayRef(b.shape.dims()).drop_back(2)), l.batch);
  for (auto &s : l.sa)
    s *= l.m * l.kk;
  for (auto &s : l.sb)
    s *= l.kk * l.nn;
  return l;
}

/// Calls fn(i, offsets...) for output elements [begin, end) of `shape`, with
/// the matching offset into each operand given its strides.
template <typename Fn>
inline void forRange(const Shape &shape, llvm::ArrayRef<Strides> strides, int64_t begin, int64_t end,
              Fn &&fn) {
  if (begin >= end) // nothing to walk (an empty shape has no index to start from)
    return;
  unsigned rank = shape.rank();
  llvm::SmallVector<int64_t, kMaxRank> idx(rank, 0);
  int64_t rem = begin;
  for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
  }
  llvm::SmallVector<int64_t, 4> off(strides.size(), 0);
  for (size_t k = 0; k < strides.size(); ++k)
    for (unsigned d = 0; d < rank; ++d)
      off[k] += idx[d] * strides[k][d];
  for (int64_t i = begin; i < end; ++i) {
    fn(i, llvm::ArrayRef<int64_t>(off));
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < strides.size(); ++k)
        off[k] += strides[k][d];
      if (idx[d] < shape[d])
        break;
      for (size_t k = 0; k < strides.size(); ++k)
        off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

/// The elements of `s` before axis `a` (outer) and after it (inner): a scan
/// or an arg-reduction along `a` walks outer * inner rows of s[a] elements,
/// element k of row r at (r / inner) * s[a] * inner + r % inner + k * inner.
/// Products of the dimensions, so an empty shape gives no row to divide by.
inline std::pair<int64_t, int64_t> aroundAxis(const Shape &s, int64_t a) {
  int64_t outer = 1, inner = 1;
  for (unsigned d = 0; d < s.rank(); ++d) {
    if (static_cast<int64_t>(d) < a)
      outer *= s[d];
    else if (static_cast<int64_t>(d) > a)
      inner *= s[d];
  }
  return {outer, inner};
}

constexpr int64_t kChunk = 1 << 15;

/// Runs fn(begin, end) over [0, n) in parallel chunks.
template <typename Fn> inline void parallelChunks(int64_t n, Fn &&fn) {
  int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) {
    fn(int64_t(0), n);
    return;
  }
  llvm::parallelForEachN(0, static_cast<size_t>(chunks), [&](size_t c) {
    int64_t b = static_cast<int64_t>(c) * kChunk;
    fn(b, std::min(n, b + kChunk));
  });
}

/// An integer held as a double, wrapped to i32 (mod 2^32).
inline int32_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

/// Node `n`, a reduction (argmax and argmin too) of `in` (of shape `inShape`),
/// as a tensor of dtype `held`; `magnitudes`: sums of |x| (EvalOptions).
HostTensor reduceValues(const Node &n, const HostTensor &in, const Shape &inShape, DType held,
                        bool magnitudes);
/// Node `n`, a cumsum or cumprod of `in`, as a tensor of dtype `held`.
HostTensor scanValues(const Node &n, const HostTensor &in, DType held);
/// Node `n`, the matmul of `a` (node `an`) and `b` (node `bn`), as a tensor
/// of dtype `held`; `magnitudes`: sums of |a b| (EvalOptions).
HostTensor matmulValues(const Node &n, const Node &an, const Node &bn, const HostTensor &a,
                        const HostTensor &b, DType held, bool magnitudes);

} // namespace minijit::detail
