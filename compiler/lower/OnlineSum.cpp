//===- compiler/lower/OnlineSum.cpp - reductions moved into the pass before ===//
// A softmax or logsumexp reduces a row twice: its max m, then the sum of
// exp(x - m), which needs m and so a second pass over the row. The sum can
// be kept relative to the running max instead and rescaled when it grows
// (Milakov and Gimelshein, "Online normalizer calculation for softmax",
// 2018): both finish in one pass. The emitter writes the update
// (mj_online_exp_sum) and the combine of the threads' pairs.
//
// A variance (and every norm) does the same with its mean: the sum of
// (x - mean)^2 needs the mean first. Welford's update keeps each thread's
// count, mean and sum of squared deviations from that mean as it reads, and
// Chan's formula combines the threads' triples (Chan, Golub and LeVeque,
// "Updating formulae and a pairwise algorithm for computing sample
// variances", 1979): the same sum about the row's mean, in the mean's pass,
// without the cancellation of sum(x^2) - n mean^2 (mj_welford_add).
//===----------------------------------------------------------------------===//
#include "compiler/lower/Lowering.h"

#include <algorithm>

namespace minijit {

namespace {

/// The max reduction whose sum of exp(x - max) reduction `r` is, where x is
/// that max's input and the max finishes in the pass before; -1 otherwise.
int onlineMaxOf(const LoweredKernel &k, const KReduction &r) {
  if (r.op != OpKind::Sum || r.dtype != DType::F32 || r.onlineMax >= 0)
    return -1;
  const KValue &e = k.values[r.input];
  if (e.kind != KValue::Kind::Compute || e.op != OpKind::Exp || e.dtype != DType::F32)
    return -1;
  const KValue &d = k.values[e.args[0]];
  if (d.kind != KValue::Kind::Compute || d.op != OpKind::Sub || d.dtype != DType::F32)
    return -1;
  const KValue &m = k.values[d.args[1]];
  if (m.kind != KValue::Kind::ReduceResult)
    return -1;
  const KReduction &max = k.reductions[m.reduction];
  if (max.op != OpKind::Max || max.dtype != DType::F32 || max.input != d.args[0] ||
      max.pass + 1 != r.pass || k.values[max.input].perRow)
    return -1;
  return m.reduction;
}

/// The Mean reduction of x whose squared deviations (x - mean)^2 reduction
/// `r` sums (a Sum or a Mean of them), where the mean finishes in the pass
/// before; -1 otherwise.
int welfordMeanOf(const LoweredKernel &k, const KReduction &r) {
  if ((r.op != OpKind::Sum && r.op != OpKind::Mean) || r.dtype != DType::F32 ||
      r.onlineMax >= 0 || r.welfordMean >= 0)
    return -1;
  const KValue &sq = k.values[r.input];
  if (sq.kind != KValue::Kind::Compute || sq.op != OpKind::Mul || sq.dtype != DType::F32 ||
      sq.args.size() != 2 || sq.args[0] != sq.args[1])
    return -1;
  const KValue &d = k.values[sq.args[0]];
  if (d.kind != KValue::Kind::Compute || d.op != OpKind::Sub || d.dtype != DType::F32)
    return -1;
  const KValue &m = k.values[d.args[1]];
  if (m.kind != KValue::Kind::ReduceResult)
    return -1;
  const KReduction &mean = k.reductions[m.reduction];
  if (mean.op != OpKind::Mean || mean.dtype != DType::F32 || mean.input != d.args[0] ||
      mean.pass + 1 != r.pass || mean.onlineMax >= 0 || k.values[mean.input].perRow ||
      k.values[mean.input].dtype != DType::F32)
    return -1;
  return m.reduction;
}

/// Stages and passes again after a reduction moved to an earlier pass: each
/// reduction accumulates in its input's stage, its result is known after.
void restage(LoweredKernel &k) {
  for (KValue &v : k.values) {
    if (v.kind == KValue::Kind::ReduceResult) {
      KReduction &r = k.reductions[v.reduction];
      r.pass = k.values[r.input].stage;
      v.stage = r.pass + 1;
      continue;
    }
    v.stage = 0;
    for (int a : v.args)
      v.stage = std::max(v.stage, k.values[a].stage);
  }
  k.passes = passesOf(k);
}

/// Moves each reduction `earlier` finds (the reduction it pairs with, or -1)
/// into its partner's pass, as `pair` records the partner; nullopt where
/// none moves.
std::optional<LoweredKernel> moveEarlier(const LoweredKernel &k,
                                         int (*earlier)(const LoweredKernel &, const KReduction &),
                                         int KReduction::*pair) {
  if (k.kind != KernelKind::Reduction)
    return std::nullopt;
  std::optional<LoweredKernel> online;
  // One at a time: a move can make the next pattern's passes adjacent.
  for (bool found = true; found;) {
    found = false;
    const LoweredKernel &now = online ? *online : k;
    for (size_t r = 0; r < now.reductions.size(); ++r) {
      int partner = earlier(now, now.reductions[r]);
      if (partner < 0)
        continue;
      if (!online)
        online = k; // copied only once a reduction qualifies
      KReduction &moved = online->reductions[r];
      moved.input = online->reductions[partner].input;
      moved.*pair = partner;
      restage(*online);
      found = true;
      break;
    }
  }
  return online;
}

} // namespace

std::optional<LoweredKernel> sumExpsOnline(const LoweredKernel &k) {
  return moveEarlier(k, onlineMaxOf, &KReduction::onlineMax);
}

std::optional<LoweredKernel> sumSquaresOnline(const LoweredKernel &k) {
  return moveEarlier(k, welfordMeanOf, &KReduction::welfordMean);
}

std::optional<LoweredKernel> reduceOnline(const LoweredKernel &k) {
  std::optional<LoweredKernel> exps = sumExpsOnline(k);
  std::optional<LoweredKernel> squares = sumSquaresOnline(exps ? *exps : k);
  return squares ? squares : exps;
}

bool hasOnlineReduction(const LoweredKernel &k) {
  for (const KReduction &r : k.reductions)
    if (r.onlineMax >= 0 || r.welfordMean >= 0)
      return true;
  return false;
}

} // namespace minijit
