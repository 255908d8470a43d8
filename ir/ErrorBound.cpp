//===- ir/ErrorBound.cpp - how far a correct kernel may be from the reference ===//
// A pass that applies the per-op rules (ErrorBoundRules.cpp) tensor by
// tensor as the reference computes each value (EvalOptions::observe), and
// bounds what is not elementwise: reductions, scans, matmuls, views, gathers
// and random numbers, and the roundings of stored f16/bf16 values.
//===----------------------------------------------------------------------===//
#include "ir/ErrorBound.h"
#include "ir/ErrorBoundInternal.h"
#include "ir/Philox.h"

#include "ir/Autodiff.h"
#include "ir/EvaluatorInternal.h"

#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <limits>
#include <tuple>

namespace minijit {

using detail::aroundAxis;
using detail::broadcastStrides;
using detail::matmulLayout;
using detail::MatmulLayout;
using detail::viewReadStrides;
using detail::forRange;
using detail::kInf;
using detail::kU32;
using detail::parallelChunks;
using detail::Strides;
using detail::ulpsOf;

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
    bool isInt = !isFloat(n.dtype), exactIn = exact(src);
    bool isSum = *opInfo(n.op).combiner == OpKind::Add;
    if (isInt && exactIn)
      return HostTensor();
    const HostTensor &in = values[src];
    int64_t size = n.shape[n.axis];
    int64_t outer, inner;
    std::tie(outer, inner) = aroundAxis(n.shape, n.axis);
    HostTensor out(DType::F32, n.shape);
    Settle settle = settleFor(id, values[id]);
    parallelChunks(outer * inner, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t base = (r / inner) * size * inner + r % inner;
        double sumAbs = 0, sumErr = 0, prodAbs = 1, prodWide = 1;
        for (int64_t k = 0; k < size; ++k) { // the k-th step, from the end when reversed
          int64_t at = base + (n.reverse ? size - 1 - k : k) * inner;
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
    int64_t outer, inner;
    std::tie(outer, inner) = aroundAxis(xs, a);
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
    Strides s = viewReadStrides(n, inShape); // slice, pad and flip are bounded above
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
    OpKind combiner = *opInfo(n.op).combiner;
    bool extreme = combiner == OpKind::Maximum || combiner == OpKind::Minimum;
    if (exactIn && (isInt || extreme))
      return HostTensor();
    HostTensor out(DType::F32, n.shape);
    const HostTensor &result = values[id];
    Settle settle = settleFor(id, result);
    auto rowBound = [&](int64_t r, int64_t base) {
      if (k == 0) // the identity, or a mean's NaN: exact
        return 0.0;
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
      if (extreme)
        return maxErr;
      if (combiner == OpKind::Mul)
        return isInt ? (sumErr > 0 ? kInf : 0)
                     : (prodWide - prodAbs) + static_cast<double>(k) * kU32 * prodWide;
      if (n.op != OpKind::Mean)
        return isInt ? sumErr : sumErr + sumRoundingError(k, sumAbs);
      // the sum, times 1/n rounded to f32, rounded again
      return isInt ? sumErr / k
                   : (sumErr + sumRoundingError(k, sumAbs)) / static_cast<double>(k) +
                         2 * kU32 * std::fabs(result.get(r));
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
    MatmulLayout l = matmulLayout(n, an, bn);
    const int64_t m = l.m, kk = l.kk, nn = l.nn;
    const Shape &batch = l.batch;
    const Strides &sa = l.sa, &sb = l.sb;
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
