//===- compiler/fusion/Attention.cpp - attention written as plain ops ------===//
// Reads a product P @ V back to the softmax that makes P and the product
// S = A @ B under it, then checks what the attention template needs: the
// scores never stored, head dims it has registers for, rows long enough,
// operands in memory.
//===----------------------------------------------------------------------===//
#include "compiler/fusion/Attention.h"
#include "compiler/fusion/AttentionBackward.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace minijit {

namespace {

/// A keepdim reduction of `op` over the last axis of its operand.
bool overLastAxis(const Node &n, OpKind op) {
  if (n.op != op || !n.keepdim || n.axes.size() != 1)
    return false;
  return n.axes[0] == static_cast<int64_t>(n.shape.rank()) - 1;
}

/// The value a matmul operand is read from: through views other than pad,
/// down to a stored value or an input.
ValueId throughViews(const Graph &g, ValueId v, llvm::function_ref<bool(ValueId)> stored) {
  while (g.node(v).cls() == OpClass::View && g.node(v).op != OpKind::Pad && !stored(v))
    v = g.node(v).operands[0];
  return v;
}

int64_t batchesOf(const Shape &s) {
  int64_t n = 1;
  for (unsigned d = 0; d + 2 < s.rank(); ++d)
    n *= s[d];
  return n;
}

StoreRequest operandRequest(ValueId operand, ValueId pv) {
  return StoreRequest{operand, FusionReason{FusionReasonKind::AttentionOperand, {operand, pv}, {}}};
}

class Matcher {
public:
  Matcher(const Graph &g, llvm::function_ref<bool(ValueId)> stored) : G(g), Stored(stored) {}

  /// The softmax and the product under it, or false.
  bool shape(ValueId pv) {
    M.out = pv;
    const Node &o = G.node(pv);
    if (o.cls() != OpClass::Matmul)
      return false;
    M.probs = o.operands[0];
    // P rounded to V's 16-bit type for the product (a softmax in f32 of
    // 16-bit scores, as PyTorch computes one): what the kernel does with P
    if (const Node &c = G.node(M.probs); c.op == OpKind::Cast &&
                                         c.dtype == G.node(o.operands[1]).dtype &&
                                         G.node(c.operands[0]).dtype == DType::F32) {
      M.probsCast = M.probs;
      M.probs = c.operands[0];
    }
    const Node &p = G.node(M.probs);
    if (p.op != OpKind::Div)
      return false;
    M.exps = p.operands[0];
    M.sum = p.operands[1];
    const Node &s = G.node(M.sum), &e = G.node(M.exps);
    if (!overLastAxis(s, OpKind::Sum) || s.operands[0] != M.exps || e.op != OpKind::Exp)
      return false;
    M.shifted = e.operands[0];
    const Node &d = G.node(M.shifted);
    if (d.op != OpKind::Sub)
      return false;
    M.logits = d.operands[0];
    M.max = d.operands[1];
    const Node &m = G.node(M.max);
    if (!overLastAxis(m, OpKind::Max) || m.operands[0] != M.logits)
      return false;
    const Shape &t = G.node(M.logits).shape;
    if (t.rank() < 2 || p.shape != t || e.shape != t)
      return false;
    if (!findScores())
      return false;
    // O's batches are the scores' (V may broadcast into them, not widen them).
    const Shape &sh = G.node(M.scores).shape;
    if (o.shape.rank() != sh.rank())
      return false;
    for (unsigned i = 0; i + 1 < sh.rank(); ++i)
      if (o.shape[i] != sh[i])
        return false;
    return true;
  }

  /// What the template refuses of the matched shape; None when it takes it.
  FusionReason refusal(bool statsForBackward) const {
    auto reason = [&](FusionReasonKind k, llvm::ArrayRef<ValueId> vs,
                      llvm::ArrayRef<int64_t> ns = {}) {
      return FusionReason{k, llvm::SmallVector<ValueId, 3>(vs.begin(), vs.end()),
                          llvm::SmallVector<int64_t, 3>(ns.begin(), ns.end())};
    };
    const Node &s = G.node(M.scores), &o = G.node(M.out);
    if (s.shape.hasNames() || o.shape.hasNames())
      return reason(FusionReasonKind::AttentionNamedSizes, {M.out});
    for (int64_t d : {M.headDim, M.valueDim})
      if (d < kAttentionMinHeadDim || d > kAttentionMaxHeadDim || d % kAttentionHeadDimMultiple)
        return reason(FusionReasonKind::AttentionHeadDim, {M.out},
                      {d, kAttentionMinHeadDim, kAttentionMaxHeadDim, kAttentionHeadDimMultiple});
    if (M.keys < kAttentionMinKeys)
      return reason(FusionReasonKind::AttentionShortRows, {M.out}, {M.keys, kAttentionMinKeys});
    // Nearest the product with V first: the value whose store made the
    // others stored (a graph output, what a backward reads).
    std::vector<ValueId> inner{M.probs, M.sum, M.exps, M.shifted, M.max};
    if (M.probsCast >= 0)
      inner.insert(inner.begin(), M.probsCast);
    for (auto it = M.scoreWork.rbegin(); it != M.scoreWork.rend(); ++it)
      if (DependsOnScores.count(*it))
        inner.push_back(*it);
    inner.push_back(M.scores);
    for (ValueId v : inner)
      if (Stored(v) && !(statsForBackward && (v == M.max || v == M.sum)))
        return reason(FusionReasonKind::AttentionStored, {v, M.out});
    return {};
  }

  /// The first value the kernel needs in memory that is not: an operand of
  /// a product, or what the score work reads that no elementwise op makes.
  std::optional<StoreRequest> operandToStore() const {
    for (ValueId v : {M.q, M.k, M.v})
      if (G.node(v).op != OpKind::Input && !Stored(v))
        return operandRequest(v, M.out);
    for (ValueId v : Leaves)
      if (!Stored(v))
        return operandRequest(v, M.out);
    return std::nullopt;
  }

  void describeOperands() {
    const Node &s = G.node(M.scores), &o = G.node(M.out);
    const Node &a = G.node(s.operands[0]), &v = G.node(o.operands[1]);
    M.q = throughViews(G, s.operands[0], Stored);
    M.k = throughViews(G, s.operands[1], Stored);
    M.v = throughViews(G, o.operands[1], Stored);
    unsigned r = s.shape.rank();
    M.queries = s.shape[r - 2];
    M.keys = s.shape[r - 1];
    M.headDim = a.shape[a.shape.rank() - 1];
    M.valueDim = o.shape[r - 1];
    M.batches = batchesOf(s.shape);
    M.kBatches = batchesOf(G.node(s.operands[1]).shape);
    M.vBatches = batchesOf(v.shape);
    // A broadcast view (repeat_kv) widens K or V without more memory.
    if (G.node(M.k).shape.numel() < M.batches * M.keys * M.headDim)
      M.kBatches = std::min(M.kBatches, G.node(M.k).shape.numel() / (M.keys * M.headDim));
    if (G.node(M.v).shape.numel() < M.batches * M.keys * M.valueDim)
      M.vBatches = std::min(M.vBatches, G.node(M.v).shape.numel() / (M.keys * M.valueDim));
    for (ValueId w : M.scoreWork) {
      const Node &n = G.node(w);
      if (!DependsOnScores.count(w))
        continue;
      bool other = llvm::any_of(n.operands, [&](ValueId x) { return !DependsOnScores.count(x) && x != M.scores; });
      M.mask = M.mask || n.op == OpKind::Where;
      M.softcap = M.softcap || n.op == OpKind::Tanh;
      if ((n.op == OpKind::Mul || n.op == OpKind::Div) && other)
        M.scale = true;
      if ((n.op == OpKind::Add || n.op == OpKind::Sub) && other)
        M.bias = true;
    }
  }

  /// Sets M.causal and M.window from the conditions that mask the logits:
  /// those of where(c, x, -inf) from the logits down through x (nested
  /// masks, and casts to f32 between them), each split at `and`.
  void findCausalMask() {
    ValueId at = M.logits;
    while (G.node(at).op == OpKind::Where ||
           (G.node(at).op == OpKind::Cast && G.node(at).dtype == DType::F32)) {
      if (G.node(at).op == OpKind::Cast) { // a 16-bit score widened for the softmax
        at = G.node(at).operands[0];
        continue;
      }
      const Node &w = G.node(at), &other = G.node(w.operands[2]);
      if (other.op != OpKind::Constant || !(std::isinf(other.value) && other.value < 0))
        return;
      readCondition(w.operands[0]);
      at = w.operands[1];
    }
  }

  void readCondition(ValueId c) {
    const Node &n = G.node(c);
    if (n.op == OpKind::And) {
      readCondition(n.operands[0]);
      readCondition(n.operands[1]);
      return;
    }
    bool flipped = n.op == OpKind::Ge || n.op == OpKind::Gt; // b <= a written a >= b
    if (n.operands.size() != 2 ||
        !(n.op == OpKind::Le || n.op == OpKind::Lt || n.op == OpKind::Ge || n.op == OpKind::Gt))
      return;
    ValueId lo = n.operands[flipped ? 1 : 0], hi = n.operands[flipped ? 0 : 1];
    bool strict = n.op == OpKind::Lt || n.op == OpKind::Gt;
    // key <= query: causal
    if (!strict && isPosition(lo, 1) && isPosition(hi, 2))
      M.causal = true;
    // query - key < W (or <= W - 1): a window of W keys
    const Node &d = G.node(lo), &w = G.node(hi);
    if (d.op == OpKind::Sub && isPosition(d.operands[0], 2) && isPosition(d.operands[1], 1) &&
        w.op == OpKind::Constant && w.value >= 1) {
      int64_t window = static_cast<int64_t>(std::floor(w.value)) + (strict && w.value == std::floor(w.value) ? 0 : 1);
      if (window >= 1 && (M.window == 0 || window < M.window))
        M.window = window;
    }
  }

  AttentionMatch M;

private:
  /// An i32 iota over the scores' trailing [queries, keys] whose positions
  /// run along the `fromEnd`-th axis from the end (1: keys, 2: queries).
  /// Also a 1-D one (its axis 0) reshaped to size 1 on every axis but that
  /// one (torch.arange(L).view(L, 1), broadcast by the comparison).
  bool isPosition(ValueId v, unsigned fromEnd) const {
    const Node &n = G.node(v);
    unsigned r = n.shape.rank();
    if (n.op == OpKind::Reshape && r >= 2) {
      const Node &x = G.node(n.operands[0]);
      int64_t along = r - fromEnd, size = fromEnd == 1 ? M.keys : M.queries;
      bool ones = true;
      for (unsigned d = 0; d < r; ++d)
        ones = ones && (static_cast<int64_t>(d) == along ? n.shape[d] == size : n.shape[d] == 1);
      return ones && x.op == OpKind::Iota && x.dtype == DType::I32 && x.shape.rank() == 1 &&
             x.axis == 0;
    }
    if (n.op != OpKind::Iota || n.dtype != DType::I32 || r < 2)
      return false;
    return n.shape[r - 2] == M.queries && n.shape[r - 1] == M.keys &&
           n.axis == static_cast<int64_t>(r - fromEnd);
  }

  /// S: the product the logits are computed from by elementwise ops, and
  /// the score work around it. False when there is none.
  bool findScores() {
    std::vector<ValueId> stack{M.logits};
    std::set<ValueId> seen{M.logits};
    const Shape &t = G.node(M.logits).shape;
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      const Node &n = G.node(v);
      bool viaElementwise = v == M.logits || ReachedElementwise.count(v);
      if (n.cls() == OpClass::Matmul && n.shape == t && viaElementwise && M.scores < 0) {
        M.scores = v;
        continue;
      }
      if (n.op == OpKind::Input || n.op == OpKind::Constant)
        continue;
      bool walk = isElementwise(n.op) || n.cls() == OpClass::View || n.cls() == OpClass::Iota;
      if (!walk) {
        Leaves.push_back(v);
        continue;
      }
      M.scoreWork.push_back(v);
      for (ValueId o : n.operands) {
        if (isElementwise(n.op))
          ReachedElementwise.insert(o);
        if (seen.insert(o).second)
          stack.push_back(o);
      }
    }
    if (M.scores < 0)
      return false;
    std::sort(M.scoreWork.begin(), M.scoreWork.end());
    std::sort(Leaves.begin(), Leaves.end());
    for (ValueId v : M.scoreWork)
      if (llvm::any_of(G.node(v).operands,
                       [&](ValueId o) { return o == M.scores || DependsOnScores.count(o); }))
        DependsOnScores.insert(v);
    return true;
  }

  const Graph &G;
  llvm::function_ref<bool(ValueId)> Stored;
  std::set<ValueId> ReachedElementwise, DependsOnScores;
  std::vector<ValueId> Leaves; ///< values the score work reads that it does not compute
};

} // namespace

std::optional<AttentionCandidate> findAttention(const Graph &g, ValueId pv,
                                                llvm::function_ref<bool(ValueId)> stored) {
  Matcher m(g, stored);
  if (!m.shape(pv))
    return std::nullopt;
  m.describeOperands();
  m.findCausalMask();
  AttentionCandidate c;
  // The max and sum are stored for a fused backward (attentionParts).
  bool stats = (stored(m.M.max) || stored(m.M.sum)) && attentionBackwardFuses(g, m.M);
  c.refused = m.refusal(stats);
  if (c.refused.kind == FusionReasonKind::AttentionStored)
    c.refused = attentionBackwardReason(g, m.M, c.refused);
  if (!c.refused.empty())
    return c;
  c.store = m.operandToStore();
  c.match = m.M;
  return c;
}

std::vector<bool> attentionProducts(const Graph &g) {
  std::vector<bool> kept(g.size(), false);
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.nodes()[i].cls() != OpClass::Matmul)
      continue;
    std::optional<AttentionCandidate> c =
        findAttention(g, static_cast<ValueId>(i), [](ValueId) { return false; });
    if (!c || !c->match)
      continue;
    kept[c->match->scores] = kept[c->match->out] = true;
    // (and its backward's, where the fused kernels take it: split into
    // three TF32 products, they would not be the products it reads)
    std::optional<AttentionBackwardCandidate> b = findAttentionBackward(g, *c->match);
    if (!b || !b->match || !attentionBackwardKernelsRefusal(g, *c->match, *b->match).empty())
      continue;
    for (ValueId v : {b->match->dq, b->match->dk, b->match->dv, b->match->dProbs})
      if (v >= 0)
        kept[v] = true;
  }
  return kept;
}

void noteRefusedAttention(const Graph &g, FusionPlan &plan,
                          const std::map<ValueId, FusionReason> &firstRefusal,
                          llvm::function_ref<bool(ValueId)> stored) {
  for (const KernelGroup &k : plan.kernels) {
    if (k.kind != KernelKind::Matmul)
      continue;
    if (auto first = firstRefusal.find(k.matmul); first != firstRefusal.end()) {
      plan.notAttention[k.matmul] = first->second;
      continue;
    }
    std::optional<AttentionCandidate> c = findAttention(g, k.matmul, stored);
    if (c && !c->match)
      plan.notAttention[k.matmul] = c->refused;
  }
}

std::string describeAttention(const Graph &g, const AttentionMatch &m) {
  const Node &s = g.node(m.scores), &o = g.node(m.out);
  std::string text = llvm::formatv("S = %{0} @ %{1} {2}", g.node(s.operands[0]).name,
                                   g.node(s.operands[1]).name, s.shape.str())
                         .str();
  if (m.scale)
    text += ", scale";
  if (m.mask)
    text += m.causal ? ", causal mask" : ", mask";
  if (m.window > 0)
    text += llvm::formatv(" (a window of {0} keys)", m.window).str();
  if (m.bias)
    text += ", bias";
  if (m.softcap)
    text += ", soft-cap";
  if (m.kBatches < m.batches || m.vBatches < m.batches)
    text += llvm::formatv(", K/V heads broadcast ({0} and {1} of {2} batches)", m.kBatches,
                          m.vBatches, m.batches)
                .str();
  text += llvm::formatv(", softmax over {0} keys, @ %{1} {2}", m.keys, g.node(o.operands[1]).name,
                        g.node(o.operands[1]).shape.str())
              .str();
  return text;
}

} // namespace minijit
