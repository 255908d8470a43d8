//===- ir/EvaluatorReductions.cpp - the CPU reference's accumulating ops ===//
// Reductions (argmax and argmin too), scans and matmul for the evaluator
// (Evaluator.cpp): straightforward loops, parallel over rows or chunks,
// accumulated in double (i32 wrapping) or exactly in int64_t for i64.
//===----------------------------------------------------------------------===//
#include "ir/EvaluatorInternal.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <tuple>

namespace minijit::detail {

namespace {

/// argmax, argmin: the first position of the extreme along the one axis; a
/// NaN is the extreme (the first NaN).
HostTensor argReduce(const Node &n, const HostTensor &in, const Shape &xs, DType held) {
  int64_t a = n.axes[0], size = xs[a], stride = xs.strides()[a];
  int64_t outer, inner;
  std::tie(outer, inner) = aroundAxis(xs, a);
  assert(size > 0 && "an arg-reduction over an empty axis is a graph error");
  bool isMax = n.op == OpKind::Argmax;
  HostTensor out(held, n.shape);
  parallelChunks(outer * inner, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t base = (r / inner) * size * inner + r % inner;
      int64_t at = 0;
      if (in.dtype() == DType::I64) { // exact comparisons
        int64_t best = in.getI64(base);
        for (int64_t k = 1; k < size; ++k) {
          int64_t v = in.getI64(base + k * stride);
          if (isMax ? v > best : v < best) {
            best = v;
            at = k;
          }
        }
        out.set(r, static_cast<double>(at));
        continue;
      }
      double best = in.get(base);
      for (int64_t k = 1; k < size && !std::isnan(best); ++k) {
        double v = in.get(base + k * stride);
        if (std::isnan(v) || (isMax ? v > best : v < best)) {
          best = v;
          at = k;
        }
      }
      out.set(r, static_cast<double>(at));
    }
  });
  return out;
}

/// One row of an i64 sum, prod, max or min (mean takes floats only):
/// exact, sums and products wrapping.
int64_t reduceI64(OpKind op, const HostTensor &in, const Shape &red, const Strides &redStr,
                  int64_t base, int64_t k) {
  uint64_t acc = op == OpKind::Prod ? 1 : 0;
  int64_t ext = op == OpKind::Max ? std::numeric_limits<int64_t>::min()
                                  : std::numeric_limits<int64_t>::max();
  forRange(red, {redStr}, 0, k, [&](int64_t, llvm::ArrayRef<int64_t> off) {
    int64_t v = in.getI64(base + off[0]);
    switch (op) {
    case OpKind::Sum: acc += static_cast<uint64_t>(v); break;
    case OpKind::Prod: acc *= static_cast<uint64_t>(v); break;
    case OpKind::Max: ext = std::max(ext, v); break;
    case OpKind::Min: ext = std::min(ext, v); break;
    default: llvm_unreachable("not a reduction");
    }
  });
  if (op == OpKind::Max || op == OpKind::Min)
    return ext;
  return static_cast<int64_t>(acc);
}

} // namespace

HostTensor reduceValues(const Node &n, const HostTensor &in, const Shape &xs, DType held,
                        bool magnitudes) {
  if (isArgReduction(n.op))
    return argReduce(n, in, xs, held);
  auto xstr = xs.strides();
  DimVector keptDims, redDims;
  Strides keptStr, redStr;
  for (unsigned d = 0; d < xs.rank(); ++d) {
    if (llvm::is_contained(n.axes, d)) {
      redDims.push_back(xs[d]);
      redStr.push_back(xstr[d]);
    } else {
      keptDims.push_back(xs[d]);
      keptStr.push_back(xstr[d]);
    }
  }
  Shape kept = Shape(llvm::ArrayRef<int64_t>(keptDims));
  Shape red = Shape(llvm::ArrayRef<int64_t>(redDims));
  int64_t rows = kept.numel(), k = red.numel();
  bool isInt = n.dtype == DType::I32;
  HostTensor out(held, n.shape);
  if (n.dtype == DType::I64) {
    parallelChunks(rows, [&](int64_t b, int64_t e) {
      forRange(kept, {keptStr}, b, e, [&](int64_t r, llvm::ArrayRef<int64_t> off) {
        out.setI64(r, reduceI64(n.op, in, red, redStr, off[0], k));
      });
    });
    return out;
  }

  // Ops.def's combiner and its identity (for i32, -inf and inf are the
  // lowest and highest i32).
  OpKind combiner = *opInfo(n.op).combiner;
  double start = *opInfo(combiner).identity;
  if (isInt && std::isinf(start))
    start = start < 0 ? -2147483648.0 : 2147483647.0;
  auto identity = [&] { return start; };
  auto combine = [&](double acc, double v) -> double {
    switch (combiner) {
    case OpKind::Add:
      return isInt ? static_cast<double>(wrap32(static_cast<int64_t>(acc) + static_cast<int64_t>(v)))
                   : acc + (magnitudes ? std::fabs(v) : v);
    case OpKind::Mul:
      return isInt ? static_cast<double>(wrap32(static_cast<int64_t>(acc) * static_cast<int64_t>(v)))
                   : acc * v;
    case OpKind::Maximum:
      return (std::isnan(acc) || std::isnan(v)) ? std::numeric_limits<double>::quiet_NaN()
                                                : std::max(acc, v);
    case OpKind::Minimum:
      return (std::isnan(acc) || std::isnan(v)) ? std::numeric_limits<double>::quiet_NaN()
                                                : std::min(acc, v);
    default: llvm_unreachable("a reduction combines by add, mul, maximum or minimum");
    }
  };
  // A mean over an empty axis is 0/0: NaN, as PyTorch's (the quiet NaN a
  // literal `nan` is, which the compiler puts in its place).
  auto finish = [&](double acc) {
    if (n.op != OpKind::Mean)
      return acc;
    return k == 0 ? std::numeric_limits<double>::quiet_NaN() : acc / static_cast<double>(k);
  };
  // Reduces elements [kb, ke) of the reduced index space of row base `base`.
  auto partial = [&](int64_t base, int64_t kb, int64_t ke) {
    double acc = identity();
    forRange(red, {redStr}, kb, ke, [&](int64_t, llvm::ArrayRef<int64_t> off) {
      acc = combine(acc, in.get(base + off[0]));
    });
    return acc;
  };
  if (rows >= 64 || k < 4 * kChunk) {
    int64_t rowsPerTask = std::max<int64_t>(1, kChunk / std::max<int64_t>(k, 1));
    int64_t tasks = (rows + rowsPerTask - 1) / rowsPerTask;
    llvm::parallelForEachN(0, static_cast<size_t>(tasks), [&](size_t t) {
      int64_t r0 = static_cast<int64_t>(t) * rowsPerTask;
      int64_t r1 = std::min(rows, r0 + rowsPerTask);
      forRange(kept, {keptStr}, r0, r1, [&](int64_t r, llvm::ArrayRef<int64_t> off) {
        out.set(r, finish(partial(off[0], 0, k)));
      });
    });
    return out;
  }
  // Few long rows: split each row into chunks, combine the partials in order.
  int64_t chunks = (k + kChunk - 1) / kChunk;
  std::vector<double> partials(chunks);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    forRange(kept, {keptStr}, r, r + 1, [&](int64_t, llvm::ArrayRef<int64_t> off) { base = off[0]; });
    llvm::parallelForEachN(0, static_cast<size_t>(chunks), [&](size_t c) {
      int64_t kb = static_cast<int64_t>(c) * kChunk;
      partials[c] = partial(base, kb, std::min(k, kb + kChunk));
    });
    double acc = identity();
    for (double p : partials)
      acc = combine(acc, p);
    out.set(r, finish(acc));
  }
  return out;
}

/// Running sums or products along the axis, in order; i32 wraps.
HostTensor scanValues(const Node &n, const HostTensor &in, DType held) {
  int64_t size = n.shape[n.axis];
  int64_t outer, inner;
  std::tie(outer, inner) = aroundAxis(n.shape, n.axis);
  bool isInt = n.dtype == DType::I32, isSum = *opInfo(n.op).combiner == OpKind::Add;
  HostTensor out(held, n.shape);
  parallelChunks(outer * inner, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t base = (r / inner) * size * inner + r % inner;
      // Step j visits element k: 0..size-1, or size-1..0 for a reversed scan.
      auto at = [&](int64_t j) { return n.reverse ? size - 1 - j : j; };
      if (n.dtype == DType::I64) { // exact, wrapping
        uint64_t acc = isSum ? 0 : 1;
        for (int64_t j = 0; j < size; ++j) {
          int64_t k = at(j);
          auto v = static_cast<uint64_t>(in.getI64(base + k * inner));
          acc = isSum ? acc + v : acc * v;
          out.setI64(base + k * inner, static_cast<int64_t>(acc));
        }
        continue;
      }
      double acc = isSum ? 0 : 1;
      for (int64_t j = 0; j < size; ++j) {
        int64_t k = at(j);
        double v = in.get(base + k * inner);
        if (isInt)
          acc = wrap32(isSum ? static_cast<int64_t>(acc) + static_cast<int64_t>(v)
                             : static_cast<int64_t>(acc) * static_cast<int64_t>(v));
        else
          acc = isSum ? acc + v : acc * v;
        out.set(base + k * inner, acc);
      }
    }
  });
  return out;
}

HostTensor matmulValues(const Node &n, const Node &an, const Node &bn, const HostTensor &a,
                        const HostTensor &b, DType held, bool magnitudes) {
  MatmulLayout l = matmulLayout(n, an, bn);
  const int64_t m = l.m, kk = l.kk, nn = l.nn;
  const Shape &batch = l.batch;
  const Strides &sa = l.sa, &sb = l.sb;
  HostTensor out(held, n.shape);
  int64_t batches = batch.numel();
  llvm::parallelForEachN(0, static_cast<size_t>(batches * m), [&](size_t task) {
    int64_t bi = static_cast<int64_t>(task) / m, i = static_cast<int64_t>(task) % m;
    int64_t aoff = 0, boff = 0;
    forRange(batch, {sa, sb}, bi, bi + 1, [&](int64_t, llvm::ArrayRef<int64_t> off) {
      aoff = off[0];
      boff = off[1];
    });
    std::vector<double> acc(nn, 0.0);
    for (int64_t p = 0; p < kk; ++p) {
      double av = a.get(aoff + i * kk + p);
      int64_t brow = boff + p * nn;
      if (magnitudes)
        for (int64_t j = 0; j < nn; ++j)
          acc[j] += std::fabs(av * b.get(brow + j));
      else
        for (int64_t j = 0; j < nn; ++j)
          acc[j] += av * b.get(brow + j);
    }
    int64_t obase = (bi * m + i) * nn;
    for (int64_t j = 0; j < nn; ++j)
      out.set(obase + j, acc[j]);
  });
  return out;
}

} // namespace minijit::detail
