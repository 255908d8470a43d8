//===- compiler/lower/OnlineSum.cpp - sums of exp(x - max) in the max's pass ===//
// A softmax or logsumexp reduces a row twice: its max m, then the sum of
// exp(x - m), which needs m and so a second pass over the row. The sum can
// be kept relative to the running max instead and rescaled when it grows
// (Milakov and Gimelshein, "Online normalizer calculation for softmax",
// 2018): both finish in one pass. The emitter writes the update
// (mj_online_exp_sum) and the combine of the threads' pairs.
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

} // namespace

std::optional<LoweredKernel> sumExpsOnline(const LoweredKernel &k) {
  if (k.kind != KernelKind::Reduction)
    return std::nullopt;
  std::optional<LoweredKernel> online;
  // One at a time: a move can make the next pattern's passes adjacent.
  for (bool found = true; found;) {
    found = false;
    const LoweredKernel &now = online ? *online : k;
    for (size_t r = 0; r < now.reductions.size(); ++r) {
      int max = onlineMaxOf(now, now.reductions[r]);
      if (max < 0)
        continue;
      if (!online)
        online = k; // copied only once a sum qualifies
      KReduction &sum = online->reductions[r];
      sum.input = online->reductions[max].input;
      sum.onlineMax = max;
      restage(*online);
      found = true;
      break;
    }
  }
  return online;
}

} // namespace minijit
