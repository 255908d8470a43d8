//===- compiler/lower/LoweredKernel.cpp - facts about a lowered kernel -----===//
// What the schedules and the emitter ask of a lowered kernel: its outer
// extent and named-size bucket, its passes over the rows, the values it needs.
//===----------------------------------------------------------------------===//
#include "compiler/lower/Lowering.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace minijit {

int64_t bucketExtent(const DimExpr &extent, int64_t value) {
  if (extent.isNumber())
    return value;
  int64_t named = value / extent.coef;
  return extent.coef *
         static_cast<int64_t>(llvm::PowerOf2Ceil(static_cast<uint64_t>(std::max<int64_t>(2, named))));
}

int64_t outerExtent(const LoweredKernel &k) {
  switch (k.kind) {
  case KernelKind::Pointwise: return k.numel;
  case KernelKind::Reduction:
  case KernelKind::Scan: return k.rows;
  case KernelKind::Matmul:
  case KernelKind::Attention:
  case KernelKind::AttentionBackwardKV:
  case KernelKind::AttentionBackwardQ: return k.matmul->M;
  }
  llvm_unreachable("bad kernel kind");
}

std::string bucketText(const DimExpr &extent, int64_t value) {
  DimExpr names = extent;
  names.coef = 1;
  int64_t hi = bucketExtent(extent, value) / extent.coef;
  int64_t lo = hi == 2 ? 1 : hi / 2 + 1;
  return names.str() + " in " + std::to_string(lo) + ".." + std::to_string(hi);
}

int passesOf(const LoweredKernel &k) {
  int last = -1;
  for (const KReduction &r : k.reductions)
    last = std::max(last, r.pass);
  for (const KStore &s : k.stores)
    if (!s.perRow)
      last = std::max(last, k.values[s.value].stage);
  return std::max(1, last + 1);
}

std::vector<bool> neededValues(const LoweredKernel &k) {
  std::vector<bool> need(k.values.size(), false);
  for (const KStore &s : k.stores)
    need[s.value] = true;
  for (const KReduction &r : k.reductions)
    need[r.input] = true;
  if (k.attention)
    need[k.attention->score] = true;
  for (size_t i = k.values.size(); i-- > 0;) {
    if (!need[i])
      continue;
    const KValue &v = k.values[i];
    for (int a : v.args)
      need[a] = true;
    if (v.kind == KValue::Kind::ReduceResult)
      need[k.reductions[v.reduction].input] = true;
  }
  return need;
}

std::vector<uint32_t> passesUsing(const LoweredKernel &k) { return passesUsing(k, {}); }

std::vector<uint32_t> passesUsing(const LoweredKernel &k, const std::vector<KStash> &stashes) {
  std::vector<uint32_t> use(k.values.size(), 0);
  auto mark = [&](int v, int pass) {
    if (!k.values[v].perRow || k.kind == KernelKind::Pointwise)
      use[v] |= 1u << pass;
  };
  for (const KReduction &r : k.reductions)
    mark(r.input, r.pass);
  if (k.attention)
    mark(k.attention->score, 0);
  for (const KStore &s : k.stores)
    if (!s.perRow)
      mark(s.value, k.kind == KernelKind::Pointwise ? 0 : k.values[s.value].stage);
  // Passes up to `pass` compute a stashed value; the later ones read it.
  std::vector<uint32_t> computedIn(k.values.size(), ~0u);
  for (const KStash &st : stashes)
    computedIn[st.value] = (2u << st.pass) - 1;
  // Operands of an element value are needed in the same passes.
  for (size_t i = k.values.size(); i-- > 0;) {
    uint32_t passes = use[i] & computedIn[i];
    if (!passes)
      continue;
    for (int a : k.values[i].args)
      if (!k.values[a].perRow || k.kind == KernelKind::Pointwise)
        use[a] |= passes;
  }
  return use;
}

namespace {

/// Whether element value `v` is computed from `load`: one walk over the
/// values between them, in order.
bool dependsOn(const LoweredKernel &k, int v, int load) {
  std::vector<bool> from(static_cast<size_t>(v - load + 1), false);
  from[0] = true;
  for (int i = load + 1; i <= v; ++i)
    for (int a : k.values[i].args)
      if (a >= load && !k.values[a].perRow && from[a - load])
        from[i - load] = true;
  return from[v - load];
}

/// The passes of `mask` after `pass`.
uint32_t passesAfter(uint32_t mask, int pass) { return pass >= 31 ? 0u : mask >> (pass + 1); }

/// The stash of value `v` in load `l`'s registers, the stashes in `out`
/// made, where it can be kept: an f32 element value computed from the load,
/// needed after its first pass, after which (with it kept) the load is read
/// in no pass and before which in two; and so for every stash made before
/// it, whose loads it may read in fewer passes.
std::optional<KStash> possibleStash(const LoweredKernel &k, const std::vector<uint32_t> &use,
                                    const std::vector<KStash> &out, int l, int v) {
  const KValue &value = k.values[v];
  if (value.kind != KValue::Kind::Compute || value.perRow || value.dtype != DType::F32 || !use[v])
    return std::nullopt;
  if (std::any_of(out.begin(), out.end(), [&](const KStash &st) { return st.value == v; }))
    return std::nullopt;
  int pass = static_cast<int>(llvm::countTrailingZeros(use[v]));
  if (!passesAfter(use[v], pass) || !(use[l] >> pass & 1u) || !dependsOn(k, v, l))
    return std::nullopt;
  std::vector<KStash> trial = out;
  trial.push_back({v, l, pass});
  std::vector<uint32_t> after = passesUsing(k, trial);
  bool held = std::all_of(trial.begin(), trial.end(), [&](const KStash &st) {
    return !passesAfter(after[st.load], st.pass) && llvm::countPopulation(after[st.load]) >= 2;
  });
  return held ? std::optional<KStash>(trial.back()) : std::nullopt;
}

} // namespace

std::vector<KStash> cachedStashes(const LoweredKernel &k) {
  std::vector<KStash> out;
  if (k.kind == KernelKind::Pointwise || k.elementIndexed)
    return out;
  const std::vector<uint32_t> use = passesUsing(k);
  for (int l = 0; l < static_cast<int>(k.values.size()); ++l) {
    const KValue &load = k.values[l];
    if (load.kind != KValue::Kind::Load || load.perRow || llvm::countPopulation(use[l]) < 2 ||
        k.params[load.param].dtype != DType::F32)
      continue;
    // The latest value first: it saves the most work in the later passes.
    for (int v = static_cast<int>(k.values.size()) - 1; v > l; --v)
      if (std::optional<KStash> st = possibleStash(k, use, out, l, v)) {
        out.push_back(*st);
        break;
      }
  }
  return out;
}

} // namespace minijit
