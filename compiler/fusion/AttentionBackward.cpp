//===- compiler/fusion/AttentionBackward.cpp - attention's backward -------===//
// Matches autodiff's rules (ir/Autodiff.cpp) for the ops of an attention, from
// the forward's values outwards: the probabilities' readers (dV's transpose and
// the softmax backward's product with dP), the softmax's backward as a
// division's and a sum's rules write it, the max's share, each score op's
// rule, then the products with Q and K. Nothing else may read a value of
// either pass, so the matched values are all the scores' work.
//===----------------------------------------------------------------------===//
#include "compiler/fusion/AttentionBackward.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace minijit {

namespace {

class BackwardMatcher {
public:
  BackwardMatcher(const Graph &g, const AttentionMatch &f) : G(g), F(f), Readers(g.size()) {
    for (size_t i = 0; i < g.size(); ++i)
      for (ValueId o : g.nodes()[i].operands)
        if (Readers[o].empty() || Readers[o].back() != static_cast<ValueId>(i))
          Readers[o].push_back(static_cast<ValueId>(i));
    IsOutput.assign(g.size(), false);
    for (ValueId o : g.outputs())
      IsOutput[o] = true;
    Forward = {F.scores, F.max, F.shifted, F.exps, F.sum, F.probs};
    for (ValueId w : F.scoreWork)
      if (llvm::any_of(G.node(w).operands, [&](ValueId o) { return Forward.count(o) != 0; }))
        Forward.insert(w);
  }

  /// Whether a backward reads the forward at all (and no forward value is
  /// a graph output, which stores the scores for its own sake).
  bool hasBackward() const {
    for (ValueId v : Forward) {
      if (IsOutput[v])
        return false;
    }
    for (ValueId v : Forward)
      for (ValueId r : Readers[v])
        if (!Forward.count(r) && r != F.out)
          return true;
    return false;
  }

  /// The match, or the refusal in Refused.
  std::optional<AttentionBackwardMatch> match() {
    if (!softmaxBackward() || !maxShare() || !scoreWork())
      return std::nullopt;
    products();
    if (!closed())
      return std::nullopt;
    B.values.assign(Matched.begin(), Matched.end());
    return B;
  }

  FusionReason Refused;

private:
  FusionReason reason(FusionReasonKind k, llvm::ArrayRef<ValueId> vs) const {
    return FusionReason{k, llvm::SmallVector<ValueId, 3>(vs.begin(), vs.end()), {}};
  }

  bool refuse(FusionReasonKind k, llvm::ArrayRef<ValueId> vs) {
    Refused = reason(k, vs);
    return false;
  }

  /// The first reader of `v` that is `op` with operands {a, b} (in either
  /// order when `commutes`), or -1.
  ValueId readerOf(ValueId v, OpKind op, ValueId a, ValueId b, bool commutes) const {
    for (ValueId r : Readers[v]) {
      const Node &n = G.node(r);
      if (n.op != op || n.operands.size() != 2)
        continue;
      if ((n.operands[0] == a && n.operands[1] == b) ||
          (commutes && n.operands[0] == b && n.operands[1] == a))
        return r;
    }
    return -1;
  }

  /// `v` is a literal `c` (through the views that broadcast it).
  bool isLiteral(ValueId v, double c) const {
    while (G.node(v).op == OpKind::Broadcast || G.node(v).op == OpKind::Reshape)
      v = G.node(v).operands[0];
    return G.node(v).op == OpKind::Constant && G.node(v).value == c;
  }

  /// The literal `v` is (through the views that broadcast it).
  std::optional<double> literal(ValueId v) const {
    while (v >= 0 && (G.node(v).op == OpKind::Broadcast || G.node(v).op == OpKind::Reshape))
      v = G.node(v).operands[0];
    if (v < 0 || G.node(v).op != OpKind::Constant)
      return std::nullopt;
    return G.node(v).value;
  }

  /// `product`, or the scale by a literal the matmul rewrites moved after
  /// it (Moved), which is then its one reader; -1 when that is missing.
  ValueId scaled(ValueId product) {
    if (Moved.forward < 0)
      return product;
    const Node &f = G.node(Moved.forward);
    std::optional<double> c = literal(f.operands[1]);
    if (f.op == OpKind::Mul && !literal(f.operands[1]))
      c = literal(f.operands[0]);
    if (Readers[product].size() != 1 || !c)
      return -1;
    const Node &r = G.node(Readers[product][0]);
    if (r.op != f.op || r.operands[0] != product || literal(r.operands[1]) != c)
      return -1;
    Matched.insert(product);
    return Readers[product][0];
  }

  /// The value `v` permutes through a chain of permutes, and the composed
  /// permutation (axis i of `v` is axis perm[i] of that value).
  std::pair<ValueId, DimVector> permuted(ValueId v) const {
    DimVector perm;
    for (unsigned i = 0; i < G.node(v).shape.rank(); ++i)
      perm.push_back(i);
    while (G.node(v).op == OpKind::Permute) {
      const Node &n = G.node(v);
      for (int64_t &p : perm)
        p = n.perm[p];
      v = n.operands[0];
    }
    return {v, perm};
  }

  /// `a` is `b` with its last two axes swapped (through permutes of one
  /// value: autodiff's transposes of a permuted operand fold into one).
  bool transposeOf(ValueId a, ValueId b) const {
    auto [sa, pa] = permuted(a);
    auto [sb, pb] = permuted(b);
    size_t r = pa.size();
    if (sa != sb || r < 2 || pb.size() != r)
      return false;
    std::swap(pb[r - 1], pb[r - 2]);
    return pa == pb;
  }

  /// x when `v` sums x over its last axis into [..., 1] (a keepdim sum, or
  /// a sum reshaped, as autodiff's give() writes it); -1 otherwise.
  ValueId rowSumOf(ValueId v, std::vector<ValueId> &seen) const {
    const Node *n = &G.node(v);
    if (n->op == OpKind::Reshape) {
      seen.push_back(v);
      v = n->operands[0];
      n = &G.node(v);
    }
    if (n->op != OpKind::Sum || n->axes.size() != 1)
      return -1;
    const Node &x = G.node(n->operands[0]);
    if (n->axes[0] != static_cast<int64_t>(x.shape.rank()) - 1)
      return -1;
    seen.push_back(v);
    return n->operands[0];
  }

  /// x when `v` broadcasts x (one per row) over the logits; -1 otherwise.
  ValueId spreadOf(ValueId v, std::vector<ValueId> &seen) const {
    const Node &n = G.node(v);
    if (n.op != OpKind::Broadcast || n.shape != G.node(F.logits).shape)
      return -1;
    seen.push_back(v);
    return n.operands[0];
  }

  /// dS = e * (dP / z + spread(rowsum(-(dP * p / z)))), a division's and a
  /// sum's rules; dP = dO @ V^T, dV = P^T @ dO.
  bool softmaxBackward() {
    for (ValueId r : Readers[F.exps]) {
      const Node &n = G.node(r);
      if (n.op != OpKind::Mul || r == F.probs)
        continue;
      ValueId eg = n.operands[0] == F.exps ? n.operands[1] : n.operands[0];
      if (G.node(eg).op != OpKind::Add)
        continue;
      for (unsigned i = 0; i < 2 && B.dShifted < 0; ++i) {
        ValueId quotient = G.node(eg).operands[i], spread = G.node(eg).operands[1 - i];
        const Node &q = G.node(quotient);
        if (q.op != OpKind::Div || q.operands[1] != F.sum)
          continue;
        ValueId dp = q.operands[0];
        std::vector<ValueId> seen;
        ValueId zg = spreadOf(spread, seen);
        ValueId negated = zg < 0 ? -1 : rowSumOf(zg, seen);
        if (negated < 0 || G.node(negated).op != OpKind::Neg)
          continue;
        ValueId t10 = G.node(negated).operands[0];
        if (G.node(t10).op != OpKind::Div || G.node(t10).operands[1] != F.sum)
          continue;
        ValueId t9 = G.node(t10).operands[0];
        if (readerOf(F.probs, OpKind::Mul, dp, F.probs, true) != t9)
          continue;
        B.dShifted = r;
        B.dProbs = dp;
        Matched.insert({r, eg, quotient, negated, t10, t9, dp});
        Matched.insert(seen.begin(), seen.end());
      }
      if (B.dShifted >= 0)
        break;
    }
    if (B.dShifted < 0)
      return refuse(FusionReasonKind::AttentionBackwardRead, {firstStray(), F.out});
    // dP = dO @ V^T
    const Node &dp = G.node(B.dProbs);
    ValueId v = G.node(F.out).operands[1];
    if (dp.op != OpKind::Matmul || !transposeOf(dp.operands[1], v))
      return refuse(FusionReasonKind::AttentionBackwardRead, {B.dProbs, F.out});
    B.dOut = dp.operands[0];
    Matched.insert(dp.operands[1]);
    for (ValueId r : Readers[F.probs])
      if (transposeOf(r, F.probs))
        if (ValueId dv = readerOf(r, OpKind::Matmul, r, B.dOut, false); dv >= 0) {
          Matched.insert({r, dv});
          B.dv = dv;
        }
    return true;
  }

  /// The max's share, where(eq(t, m), spread(rowsum(-dS) / count), 0)
  /// added to dS: zero but for rounding (the rows of P sum to one), which
  /// the fused backward leaves out as FlashAttention does.
  bool maxShare() {
    for (ValueId r : Readers[B.dShifted]) {
      const Node &n = G.node(r);
      if (n.op != OpKind::Add)
        continue;
      ValueId share = n.operands[0] == B.dShifted ? n.operands[1] : n.operands[0];
      const Node &w = G.node(share);
      if (w.op != OpKind::Where || !isLiteral(w.operands[2], 0))
        continue;
      ValueId hit = w.operands[0];
      const Node &h = G.node(hit);
      if (h.op != OpKind::Eq || !((h.operands[0] == F.logits && h.operands[1] == F.max) ||
                                  (h.operands[1] == F.logits && h.operands[0] == F.max)))
        continue;
      std::vector<ValueId> seen;
      ValueId perRow = spreadOf(w.operands[1], seen);
      if (perRow < 0 || G.node(perRow).op != OpKind::Div)
        continue;
      ValueId negated = rowSumOf(G.node(perRow).operands[0], seen);
      ValueId count = rowSumOf(G.node(perRow).operands[1], seen);
      if (negated < 0 || count < 0 || G.node(negated).op != OpKind::Neg ||
          G.node(negated).operands[0] != B.dShifted || G.node(count).op != OpKind::Cast ||
          G.node(count).operands[0] != hit)
        continue;
      Matched.insert({r, share, hit, perRow, negated, count});
      Matched.insert(seen.begin(), seen.end());
      B.dLogits = r;
      return true;
    }
    return refuse(FusionReasonKind::AttentionBackwardRead, {firstStray(), F.out});
  }

  /// Each score op's rule, from the logits down to the scores: a scale by a
  /// literal (mul, div), a mask (where, the scores its second operand), a
  /// bias (add, sub: the gradient passes unchanged).
  bool scoreWork() {
    ValueId x = F.logits, g = B.dLogits;
    while (x != F.scores) {
      const Node &n = G.node(x);
      int path = -1;
      for (unsigned i = 0; i < n.operands.size(); ++i)
        if (Forward.count(n.operands[i])) {
          if (path >= 0)
            return refuse(FusionReasonKind::AttentionBackwardScoreWork, {x, F.out});
          path = static_cast<int>(i);
        }
      if (path < 0)
        return refuse(FusionReasonKind::AttentionBackwardScoreWork, {x, F.out});
      ValueId other = n.operands.size() == 2 ? n.operands[1 - path] : -1, r = -1;
      bool scale = n.op == OpKind::Mul || (n.op == OpKind::Div && path == 0);
      if (scale) {
        r = n.op == OpKind::Mul ? readerOf(g, OpKind::Mul, g, other, true)
                                : readerOf(g, OpKind::Div, g, other, false);
        B.scale = true;
        // The matmul rewrites move a scale by a literal after the products
        // (ScalarFactor): the gradient passes to them unscaled.
        if (r < 0 && Moved.forward < 0 && literal(other)) {
          Moved = {x, g, true};
          r = g;
        }
      }
      switch (n.op) {
      case OpKind::Mul:
      case OpKind::Div:
        if (!scale)
          return refuse(FusionReasonKind::AttentionBackwardScoreWork, {x, F.out});
        break;
      case OpKind::Where:
        for (ValueId c : Readers[g]) {
          const Node &w = G.node(c);
          if (path == 1 && w.op == OpKind::Where && w.operands[0] == n.operands[0] &&
              w.operands[1] == g && isLiteral(w.operands[2], 0))
            r = c;
        }
        B.mask = true;
        break;
      case OpKind::Add:
        r = g;
        break;
      case OpKind::Sub:
        r = path == 0 ? g : -1;
        break;
      case OpKind::Tanh:
        r = tanhRule(x, g);
        if (r < 0)
          return refuse(FusionReasonKind::AttentionBackwardSoftCap, {x, F.out});
        B.softcap = true;
        break;
      default:
        return refuse(FusionReasonKind::AttentionBackwardScoreWork, {x, F.out});
      }
      if (r < 0)
        return refuse(FusionReasonKind::AttentionBackwardScoreWork, {x, F.out});
      Matched.insert(r);
      B.steps.push_back({x, r, Moved.forward == x});
      g = r;
      x = n.operands[path];
    }
    B.dScores = g;
    return true;
  }

  /// The gradient tanh's rule gives y = tanh(x) from g: g * (1 - y * y);
  /// -1 when autodiff wrote something else.
  ValueId tanhRule(ValueId y, ValueId g) {
    ValueId square = readerOf(y, OpKind::Mul, y, y, false);
    ValueId factor = -1;
    for (ValueId r : square < 0 ? std::vector<ValueId>() : Readers[square])
      if (G.node(r).op == OpKind::Sub && G.node(r).operands[1] == square &&
          isLiteral(G.node(r).operands[0], 1))
        factor = r;
    ValueId r = factor < 0 ? -1 : readerOf(g, OpKind::Mul, g, factor, true);
    if (r >= 0)
      Matched.insert({square, factor});
    return r;
  }

  /// dQ = dScores @ B^T and dK = dScores^T @ A, for S = A @ B with B = K^T
  /// (matmulRule in ir/Autodiff.cpp): dK's rows are the keys, however B
  /// permutes K.
  void products() {
    const Node &s = G.node(F.scores);
    for (ValueId r : Readers[B.dScores]) {
      const Node &n = G.node(r);
      if (n.op == OpKind::Matmul && n.operands[0] == B.dScores &&
          transposeOf(n.operands[1], s.operands[1]) && scaled(r) >= 0) {
        B.dq = scaled(r);
        Matched.insert(B.dq);
      }
      if (!transposeOf(r, B.dScores))
        continue;
      ValueId dk = readerOf(r, OpKind::Matmul, r, s.operands[0], false);
      if (dk >= 0 && scaled(dk) >= 0) {
        B.dk = scaled(dk);
        Matched.insert({r, B.dk});
      }
    }
  }

  /// A reader of a forward value that is neither the forward nor matched.
  ValueId firstStray() const {
    for (ValueId v : Forward)
      for (ValueId r : Readers[v])
        if (!Forward.count(r) && !Matched.count(r) && r != F.out)
          return r;
    return F.out;
  }

  /// Nothing outside the two passes reads what they compute, but the
  /// products; a bias's gradient (a sum of the logits' gradient) is named.
  bool closed() {
    std::set<ValueId> inside = Forward;
    inside.insert(Matched.begin(), Matched.end());
    inside.insert(F.out);
    for (ValueId v : inside) {
      if (v == F.out || v == B.dq || v == B.dk || v == B.dv || v == B.dProbs)
        continue;
      if (IsOutput[v])
        return refuse(FusionReasonKind::AttentionBackwardRead, {v, F.out});
      for (ValueId r : Readers[v]) {
        if (inside.count(r))
          continue;
        bool bias = llvm::any_of(B.steps, [&](const ScoreWorkStep &s) {
          OpKind op = G.node(s.forward).op;
          return (op == OpKind::Add || op == OpKind::Sub) && s.gradient == v;
        });
        return refuse(bias ? FusionReasonKind::AttentionBackwardBias
                           : FusionReasonKind::AttentionBackwardRead,
                      {r, F.out});
      }
    }
    for (ValueId r : Readers[B.dProbs])
      if (!inside.count(r))
        return refuse(FusionReasonKind::AttentionBackwardRead, {r, F.out});
    return true;
  }

  const Graph &G;
  const AttentionMatch &F;
  std::vector<std::vector<ValueId>> Readers;
  std::vector<bool> IsOutput;
  std::set<ValueId> Forward, Matched;
  ScoreWorkStep Moved; ///< a scale the matmul rewrites moved after dQ's and dK's products
  AttentionBackwardMatch B;
};

} // namespace

std::optional<AttentionBackwardCandidate> findAttentionBackward(const Graph &g,
                                                                const AttentionMatch &fwd) {
  BackwardMatcher m(g, fwd);
  if (!m.hasBackward())
    return std::nullopt;
  AttentionBackwardCandidate c;
  c.match = m.match();
  if (!c.match)
    c.refused = m.Refused;
  return c;
}

FusionReason attentionBackwardReason(const Graph &g, const AttentionMatch &fwd,
                                     const FusionReason &stored) {
  std::optional<AttentionBackwardCandidate> c = findAttentionBackward(g, fwd);
  if (!c)
    return stored;
  if (!c->match)
    return c->refused;
  FusionReason k = attentionBackwardKernelsRefusal(g, fwd, *c->match);
  return k.empty() ? stored : k;
}

bool attentionBackwardFuses(const Graph &g, const AttentionMatch &fwd) {
  std::optional<AttentionBackwardCandidate> c = findAttentionBackward(g, fwd);
  return c && c->match && attentionBackwardKernelsRefusal(g, fwd, *c->match).empty();
}

FusionReason attentionBackwardKernelsRefusal(const Graph &g, const AttentionMatch &fwd,
                                             const AttentionBackwardMatch &b) {
  for (ValueId v : {fwd.q, fwd.k, fwd.v, b.dOut, fwd.out})
    if (g.node(v).dtype != DType::F32) {
      FusionReason r{FusionReasonKind::AttentionBackward, {fwd.out, fwd.probs}, {}};
      for (ValueId p : {b.dq, b.dk, b.dv})
        if (p >= 0)
          r.values.push_back(p);
      return r;
    }
  // A mask fills with -inf: its probabilities are exactly 0, so the
  // kernels need not apply its derivative (where(pred, g, 0)) to dS.
  for (const ScoreWorkStep &s : b.steps) {
    const Node &n = g.node(s.forward);
    if (n.op != OpKind::Where)
      continue;
    ValueId fill = n.operands[2];
    while (g.node(fill).op == OpKind::Broadcast || g.node(fill).op == OpKind::Reshape)
      fill = g.node(fill).operands[0];
    const Node &f = g.node(fill);
    if (f.op != OpKind::Constant || !(std::isinf(f.value) && f.value < 0))
      return FusionReason{FusionReasonKind::AttentionBackwardScoreWork, {s.forward, fwd.out}, {}};
  }
  return {};
}

std::vector<AttentionPart> attentionParts(const Graph &g) {
  std::vector<AttentionPart> parts(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.nodes()[i].cls() != OpClass::Matmul)
      continue;
    std::optional<AttentionCandidate> c =
        findAttention(g, static_cast<ValueId>(i), [](ValueId) { return false; });
    if (!c || !c->match)
      continue;
    const AttentionMatch &f = *c->match;
    std::optional<AttentionBackwardCandidate> b = findAttentionBackward(g, f);
    if (!b || !b->match || !attentionBackwardKernelsRefusal(g, f, *b->match).empty())
      continue;
    auto part = [&](ValueId v, KernelKind kind, FusionReasonKind why) {
      if (v >= 0)
        parts[v] = AttentionPart{kind, f.out, FusionReason{why, {v, f.out}, {}}};
    };
    part(f.max, KernelKind::Attention, FusionReasonKind::AttentionBackwardStats);
    part(f.sum, KernelKind::Attention, FusionReasonKind::AttentionBackwardStats);
    part(f.out, KernelKind::Attention, FusionReasonKind::AttentionBackwardValue);
    part(b->match->dOut, KernelKind::Pointwise, FusionReasonKind::AttentionBackwardValue);
    part(b->match->dq, KernelKind::AttentionBackwardQ, FusionReasonKind::AttentionBackwardValue);
    part(b->match->dk, KernelKind::AttentionBackwardKV, FusionReasonKind::AttentionBackwardValue);
    part(b->match->dv, KernelKind::AttentionBackwardKV, FusionReasonKind::AttentionBackwardValue);
  }
  return parts;
}

std::string describeAttentionBackward(const Graph &g, const AttentionMatch &fwd,
                                      const AttentionBackwardMatch &b) {
  std::string text;
  auto product = [&](const char *what, ValueId v) {
    if (v < 0)
      return;
    text += (text.empty() ? "" : ", ") + std::string(what) + " %" + g.node(v).name;
  };
  product("dQ", b.dq);
  product("dK", b.dk);
  product("dV", b.dv);
  if (b.scale)
    text += ", scale";
  if (b.mask)
    text += fwd.causal ? ", causal mask" : ", mask";
  if (b.softcap)
    text += ", soft-cap";
  return text + llvm::formatv(", from dO %{0}", g.node(b.dOut).name).str();
}

} // namespace minijit

namespace minijit {

std::string describeAttentionKernel(const Graph &g, const KernelGroup &kg) {
  std::optional<AttentionCandidate> c = findAttention(g, kg.matmul, [](ValueId) { return false; });
  const AttentionMatch &f = c.value().match.value();
  std::string head = "attention %" + g.node(kg.matmul).name;
  if (kg.kind == KernelKind::Attention) {
    bool stats = llvm::is_contained(kg.roots, f.max) || llvm::is_contained(kg.roots, f.sum);
    return head + ": " + describeAttention(g, f) +
           (stats ? ", storing the rows' max and sum for its backward" : "");
  }
  // A copy of the match: findAttentionBackward's result is a temporary.
  AttentionBackwardMatch part = findAttentionBackward(g, f).value().match.value();
  bool keys = kg.kind == KernelKind::AttentionBackwardKV;
  (keys ? part.dq : part.dk) = -1;
  if (!keys)
    part.dv = -1;
  return head +
         llvm::formatv(" backward, a block per tile of {0}: ", keys ? "keys" : "queries").str() +
         describeAttentionBackward(g, f, part);
}

} // namespace minijit
