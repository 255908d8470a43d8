//===- compiler/fusion/Fusion.cpp - group the graph into kernels -----------------===//
// A fixpoint: start from the values that must be stored (graph outputs; with
// fusion off, every compute op), form kernels around them, and lower each
// kernel on trial. Whenever a kernel cannot work with a value inlined (a
// reduction read at another row, one needed by two kernels...), that value is
// stored too, with the reason recorded, and the kernels are formed again.
// Each round stores one more value, so the loop ends; the kernels lowered in
// the last round are the result.
//===----------------------------------------------------------------------===//
#include "compiler/fusion/Fusion.h"

#include "compiler/fusion/Attention.h"
#include "compiler/fusion/AttentionBackward.h"
#include "compiler/fusion/CodeWeight.h"

#include "ir/Error.h"
#include "ir/Printer.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace minijit {

namespace {

/// A value computed by more than this many inlined ops is stored rather than
/// recomputed when two kernels need it.
constexpr int kMaxRecomputeOps = 16;

struct Signature {
  KernelKind kind = KernelKind::Pointwise;
  Shape domain;
  DimVector axes;
  ValueId matmul = -1;
  bool reverse = false; ///< Scan: its scans walk the rows from the end
  bool operator==(const Signature &o) const {
    return kind == o.kind && domain == o.domain && axes == o.axes && matmul == o.matmul &&
           reverse == o.reverse;
  }
};

/// A value to store (or a root to keep apart) and why.
StoreRequest request(ValueId node, FusionReasonKind kind, llvm::ArrayRef<ValueId> values,
                     llvm::ArrayRef<int64_t> numbers = {}) {
  return StoreRequest{node, FusionReason{kind, llvm::SmallVector<ValueId, 3>(values.begin(), values.end()),
                                         llvm::SmallVector<int64_t, 3>(numbers.begin(), numbers.end())}};
}

class Fuser {
public:
  Fuser(const Graph &g, bool enabled)
      : G(g), Enabled(enabled), Stored(g.size(), false), Reason(g.size()),
        IsOutput(g.size(), false), Readers(g.size()),
        Parts(enabled ? attentionParts(g) : std::vector<AttentionPart>()) {
    for (size_t i = 0; i < g.size(); ++i)
      for (ValueId o : g.nodes()[i].operands)
        Readers[o].push_back(static_cast<ValueId>(i));
  }

  FusionPlan run(PlanCheck lower) {
    for (ValueId o : G.outputs()) {
      IsOutput[o] = true;
      store(o, {FusionReasonKind::GraphOutput, {}, {}});
    }
    for (size_t i = 0; i < Parts.size(); ++i) // what an attention's fused backward reads and writes
      if (!Parts[i].stored.empty())
        store(static_cast<ValueId>(i), Parts[i].stored);
    for (size_t i = 0; i < G.size(); ++i)
      if (!Enabled && isCompute(G.nodes()[i]))
        store(static_cast<ValueId>(i), {FusionReasonKind::FusionOff, {}, {}});
    for (;;) {
      FusionPlan plan;
      std::optional<StoreRequest> problem = form(plan);
      if (!problem)
        problem = check(plan);
      if (!problem)
        problem = lower(plan);
      if (!problem) {
        plan.notAttention.assign(G.size(), {});
        if (Enabled)
          noteRefusedAttention(G, plan, FirstRefusal, [&](ValueId x) { return bool(Stored[x]); });
        return plan;
      }
      if (!Stored[problem->node]) {
        store(problem->node, problem->reason);
        continue;
      }
      // The value is stored already but its kernel also holds a root that
      // needs it at another row: that root gets a kernel of its own.
      assert(problem->root >= 0 && "lowering names the root it was lowering");
      if (!Apart.insert({problem->root, problem->node}).second)
        throw CompileError("internal error: fusion does not converge on %" +
                           G.node(problem->node).name + ": " + describeReason(G, problem->reason));
      ApartReason[problem->root] = problem->reason;
    }
  }

private:
  static bool isCompute(const Node &n) {
    // Views (slice and pad among them) stay free; a concat and an iota are
    // kernels of their own with fusion off, as in an eager framework.
    return isElementwise(n.op) || n.cls() == OpClass::Reduce || n.cls() == OpClass::Matmul ||
           n.cls() == OpClass::Concat || n.cls() == OpClass::Iota || n.cls() == OpClass::Gather ||
           n.cls() == OpClass::Random ||
           n.cls() == OpClass::Scan;
  }

  void store(ValueId v, const FusionReason &why) {
    if (Stored[v])
      return;
    Stored[v] = true;
    Reason[v] = why;
  }

  /// A stored value a kernel writes. A value of no elements has none to
  /// write: simplify made it a `full` no kernel reads (EmptyValues.h), and
  /// an empty output is a buffer of 0 bytes that no kernel touches.
  bool isRoot(ValueId v) const {
    const Node &n = G.node(v);
    if (!Stored[v] || n.op == OpKind::Constant || n.shape.isEmpty())
      return false;
    return n.op != OpKind::Input || IsOutput[v];
  }

  /// The values a root computes inline (itself included) and those it loads.
  void closure(ValueId root, std::vector<ValueId> &held, std::vector<ValueId> &reads) const {
    std::vector<bool> seen(G.size(), false);
    std::vector<ValueId> stack{root};
    seen[root] = true;
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      const Node &n = G.node(v);
      if (n.op == OpKind::Constant)
        continue;
      assert(!n.shape.isEmpty() && "simplify leaves no kernel an empty value to read");
      bool loaded = n.op == OpKind::Input || (Stored[v] && v != root);
      if (loaded) {
        reads.push_back(v);
        continue;
      }
      held.push_back(v);
      for (ValueId o : n.operands)
        if (!seen[o]) {
          seen[o] = true;
          stack.push_back(o);
        }
    }
    std::sort(held.begin(), held.end());
    std::sort(reads.begin(), reads.end());
  }

  /// Matmul kernels: operands are read from memory (through views only),
  /// one matmul per kernel, no reduction after it, the epilogue over its shape.
  std::optional<StoreRequest> matmulSignature(ValueId root, const std::vector<ValueId> &held,
                                            Signature &sig) const {
    const Node &r = G.node(root);
    llvm::SmallVector<ValueId, 2> matmuls;
    for (ValueId v : held)
      if (G.node(v).cls() == OpClass::Matmul)
        matmuls.push_back(v);
    ValueId mm = matmuls.back(); // nearest the root
    for (ValueId m : matmuls)
      for (ValueId o : G.node(m).operands) {
        ValueId v = o, above = o;
        while (G.node(v).cls() == OpClass::View && !Stored[v]) {
          above = v;
          v = G.node(v).operands[0];
        }
        const Node &src = G.node(v);
        // A literal is written inline where it is read, never stored (isRoot):
        // the view that makes it a tensor is (the ones of autodiff's grad of a sum).
        if (src.op == OpKind::Constant)
          return request(above, FusionReasonKind::MatmulOperand, {above, m});
        if (src.op != OpKind::Input && !Stored[v])
          return request(v, FusionReasonKind::MatmulOperand, {v, m});
      }
    if (matmuls.size() > 1)
      return request(matmuls[0], FusionReasonKind::MatmulFeedsMatmul, {matmuls[0], mm});
    for (ValueId v : held)
      if (G.node(v).cls() == OpClass::Reduce)
        return request(mm, FusionReasonKind::MatmulMeetsReduction, {mm, v, root});
    sig = {KernelKind::Matmul, G.node(mm).shape, {}, mm};
    // An epilogue over a reshape of the product (nn.Linear on [B, S, H] as
    // [B*S, H]) stores each element where the product's flat position puts it.
    bool reshaped = !r.shape.hasNames() && !sig.domain.hasNames() &&
                    r.shape.numel() == sig.domain.numel();
    if (r.shape != sig.domain && !reshaped)
      return request(mm, FusionReasonKind::MatmulShape, {root, mm});
    return std::nullopt;
  }

  /// An attention kernel (compiler/fusion/Attention.h): `root` is the
  /// product with V of an attention the template takes, whose kernel holds
  /// the rest (`found`); or what must be stored first.
  std::optional<StoreRequest> attentionSignature(ValueId root, const std::vector<ValueId> &held,
                                                 Signature &sig, bool &found) const {
    found = false;
    if (!Enabled)
      return std::nullopt;
    for (ValueId v : held) {
      if (G.node(v).cls() != OpClass::Matmul)
        continue;
      std::optional<AttentionCandidate> c =
          findAttention(G, v, [&](ValueId x) { return bool(Stored[x]); });
      if (c && !c->match)
        FirstRefusal.emplace(v, c->refused);
      if (!c || !c->match)
        continue;
      if (c->store)
        return c->store;
      if (v != root && !storedThroughViews(v, root))
        return request(lastHeadsView(v), FusionReasonKind::AttentionOwnKernel, {v});
      found = true;
      sig = {KernelKind::Attention, G.node(v).shape, {}, v};
      return std::nullopt;
    }
    return std::nullopt;
  }

  /// The view after `v` in a transformer's heads put back together ([B, H,
  /// S, D] to [B, S, H * D], for the output projection): `v`'s one reader,
  /// where that is a permute or reshape and `v` is not a graph output.
  std::optional<ValueId> nextHeadsView(ValueId v) const {
    if (Readers[v].size() != 1 || IsOutput[v])
      return std::nullopt;
    const Node &n = G.node(Readers[v][0]);
    if ((n.op != OpKind::Permute && n.op != OpKind::Reshape) || n.shape.hasNames())
      return std::nullopt;
    return Readers[v][0];
  }

  /// True when `root` is attention output `out` put back together by such
  /// views, which nothing else reads: the attention kernel stores O where the
  /// views put each element, and no copy kernel follows it.
  bool storedThroughViews(ValueId out, ValueId root) const {
    std::optional<ValueId> v = out;
    while (v && *v != root)
      v = nextHeadsView(*v);
    return v.has_value();
  }

  /// The value to store for attention output `out`: the last of those views,
  /// or `out` itself.
  ValueId lastHeadsView(ValueId out) const {
    ValueId v = out;
    while (std::optional<ValueId> next = nextHeadsView(v))
      v = *next;
    return v;
  }

  /// The kernel signature a root needs, or the value to store instead.
  std::optional<StoreRequest> signatureOf(ValueId root, const std::vector<ValueId> &held,
                                        Signature &sig) const {
    const Node &r = G.node(root);
    // A scan kernel: the scans of one shape and axis, their elementwise
    // prologue, and an elementwise epilogue over the same shape; any other
    // reader loads the scan.
    ValueId scan = -1;
    for (ValueId v : held)
      if (G.node(v).cls() == OpClass::Scan)
        scan = v; // held is sorted: the last is nearest the root
    if (scan >= 0) {
      const Node &sn = G.node(scan);
      for (ValueId v : held) {
        const Node &q = G.node(v);
        if (q.cls() == OpClass::Scan &&
            (q.shape != sn.shape || q.axis != sn.axis || q.reverse != sn.reverse))
          return request(v, FusionReasonKind::ScanOwnKernel, {v});
        // A matmul before the scan is stored for it; a scan that feeds a
        // matmul (held sorts it first) is stored for the matmul to read.
        if (q.cls() == OpClass::Matmul)
          return v < scan ? request(v, FusionReasonKind::MatmulOwnKernel, {v})
                          : request(scan, FusionReasonKind::ScanOwnKernel, {scan});
        // Likewise a reduction: one before the scan is stored for it (it
        // reduces another domain than the scan's), a scan it reduces is
        // stored for the reduction's kernel.
        if (q.cls() == OpClass::Reduce)
          return v < scan ? request(v, FusionReasonKind::ReductionOtherDomain, {v})
                          : request(scan, FusionReasonKind::ScanOwnKernel, {scan});
      }
      if (r.shape != sn.shape)
        return request(scan, FusionReasonKind::ScanOwnKernel, {scan});
      sig = {KernelKind::Scan, sn.shape, {sn.axis}};
      sig.reverse = sn.reverse;
      return std::nullopt;
    }
    if (!Parts.empty() && Parts[root].kind != KernelKind::Pointwise) { // an attention's, with its backward
      const AttentionPart &part = Parts[root];
      if (auto c = findAttention(G, part.out, [&](ValueId x) { return bool(Stored[x]); }); c && c->store)
        return c->store; // an operand the kernels read
      sig = {part.kind, G.node(part.out).shape, {}, part.out};
      return std::nullopt;
    }
    bool attention = false;
    if (std::optional<StoreRequest> p = attentionSignature(root, held, sig, attention))
      return p;
    if (attention)
      return std::nullopt;
    if (llvm::any_of(held, [&](ValueId v) { return G.node(v).cls() == OpClass::Matmul; }))
      return matmulSignature(root, held, sig);
    ValueId primary = -1;
    for (ValueId v : held)
      if (G.node(v).cls() == OpClass::Reduce)
        primary = v; // held is sorted: the last is nearest the root
    if (primary < 0) {
      sig = {KernelKind::Pointwise, r.shape, {}};
      return std::nullopt;
    }
    const Node &p = G.node(primary);
    sig = {KernelKind::Reduction, G.node(p.operands[0]).shape, p.axes};
    for (ValueId v : held) {
      const Node &q = G.node(v);
      if (q.cls() != OpClass::Reduce || v == primary)
        continue;
      if (G.node(q.operands[0]).shape != sig.domain || q.axes != sig.axes)
        return request(v, FusionReasonKind::ReductionFeedsOtherDomain, {v, primary});
    }
    bool full = r.shape == sig.domain;
    bool rowShaped = rowShapeMatches(r.shape, sig);
    if (!full && !rowShaped)
      return request(primary, FusionReasonKind::RootShape, {root, primary});
    return std::nullopt;
  }

  /// True when `s` is the domain's kept axes in order, with axes of size 1
  /// added or dropped anywhere: the reduced axes dropped or set to 1
  /// (keepdim), or such a result reshaped by adding or removing unit axes
  /// (a squeeze), which lays out its elements as the rows do.
  static bool rowShapeMatches(const Shape &s, const Signature &sig) {
    std::vector<Dim> kept;
    for (unsigned d = 0; d < sig.domain.rank(); ++d)
      if (!llvm::is_contained(sig.axes, d))
        kept.push_back(sig.domain.dim(d));
    return sameNonUnitDims(s.allDims(), kept);
  }

  struct Building {
    Signature sig;
    KernelGroup group;
    std::vector<int> deps; // kernels whose stored values it reads
  };

  bool reaches(const std::vector<Building> &ks, int from, int target) const {
    std::vector<bool> seen(ks.size(), false);
    std::vector<int> stack{from};
    while (!stack.empty()) {
      int k = stack.back();
      stack.pop_back();
      if (k == target)
        return true;
      if (seen[k])
        continue;
      seen[k] = true;
      for (int d : ks[k].deps)
        stack.push_back(d);
    }
    return false;
  }

  std::optional<StoreRequest> form(FusionPlan &plan) {
    std::vector<Building> ks;
    std::vector<int> storedBy(G.size(), -1);
    for (size_t i = 0; i < G.size(); ++i) {
      auto root = static_cast<ValueId>(i);
      if (!isRoot(root))
        continue;
      std::vector<ValueId> held, reads;
      closure(root, held, reads);
      if (!Parts.empty() && isAttentionBackward(Parts[root].kind)) // D = rowsum(dO O) reads O
        reads.push_back(Parts[root].out);
      Signature sig;
      if (std::optional<StoreRequest> p = signatureOf(root, held, sig))
        return p;
      std::vector<int> deps;
      for (ValueId r : reads)
        if (storedBy[r] >= 0 && !llvm::is_contained(deps, storedBy[r]))
          deps.push_back(storedBy[r]);

      int target = -1;
      for (int k = 0; Enabled && k < static_cast<int>(ks.size()) && target < 0; ++k) {
        const Signature &ksig = ks[k].sig;
        bool same = ksig == sig;
        // A pointwise root over the same shape joins a reduction or matmul
        // kernel (as more epilogue), and a pointwise kernel becomes one.
        // An attention kernel ends at its product with V.
        bool epilogue = sig.kind == KernelKind::Pointwise && ksig.kind != KernelKind::Pointwise &&
                        !isAttentionKind(ksig.kind) && ksig.domain == sig.domain;
        bool upgrade = sig.kind != KernelKind::Pointwise && !isAttentionKind(sig.kind) &&
                       ksig.kind == KernelKind::Pointwise && ksig.domain == sig.domain;
        if (!same && !epilogue && !upgrade)
          continue;
        if (keptApart(root, ks[k].group))
          continue;
        bool cycle = false;
        for (int d : deps)
          if (d != k && reaches(ks, d, k))
            cycle = true;
        if (!cycle)
          target = k;
      }
      if (target < 0) {
        ks.push_back(Building{sig, KernelGroup{}, {}});
        target = static_cast<int>(ks.size() - 1);
        ks[target].group.kind = sig.kind;
        ks[target].group.domain = sig.domain;
        ks[target].group.reducedAxes = sig.axes;
        ks[target].group.matmul = sig.matmul;
      } else if (sig.kind != KernelKind::Pointwise) {
        ks[target].sig = sig; // a pointwise kernel over the same shape becomes this kind
        ks[target].group.kind = sig.kind;
        ks[target].group.reducedAxes = sig.axes;
        ks[target].group.matmul = sig.matmul;
      }
      Building &b = ks[target];
      b.group.roots.push_back(root);
      for (ValueId h : held)
        if (!llvm::is_contained(b.group.held, h))
          b.group.held.push_back(h);
      for (ValueId r : reads)
        if (!llvm::is_contained(b.group.reads, r))
          b.group.reads.push_back(r);
      for (int d : deps)
        if (d != target && !llvm::is_contained(b.deps, d))
          b.deps.push_back(d);
      storedBy[root] = target;
    }
    settle(ks, storedBy, plan);
    return std::nullopt;
  }

  /// The plan from the kernels formed: reads and held values sorted, the
  /// kernels in launch order (dependencies first, otherwise as formed), and
  /// the reasons.
  void settle(std::vector<Building> &ks, const std::vector<int> &storedBy, FusionPlan &plan) {
    // Values one kernel stores and also computes are not read by it.
    for (Building &b : ks) {
      llvm::erase_if(b.group.reads, [&](ValueId r) { return llvm::is_contained(b.group.held, r); });
      std::sort(b.group.held.begin(), b.group.held.end());
      std::sort(b.group.reads.begin(), b.group.reads.end());
      llvm::erase_if(b.deps, [&](int d) { return &ks[d] == &b; });
    }
    // Launch order: dependencies first, otherwise in the order formed.
    std::vector<int> order, state(ks.size(), 0);
    std::function<void(int)> visit = [&](int k) {
      if (state[k] == 2)
        return;
      if (state[k] == 1)
        throw CompileError("internal error: the kernels of graph '" + G.name() +
                           "' depend on each other in a cycle");
      state[k] = 1;
      for (int d : ks[k].deps)
        visit(d);
      state[k] = 2;
      order.push_back(k);
    };
    for (int k = 0; k < static_cast<int>(ks.size()); ++k)
      visit(k);
    std::vector<int> newIndex(ks.size());
    for (size_t i = 0; i < order.size(); ++i)
      newIndex[order[i]] = static_cast<int>(i);
    plan.fusion = Enabled;
    plan.kernels.clear();
    for (int k : order)
      plan.kernels.push_back(ks[k].group);
    plan.storedBy.assign(G.size(), -1);
    for (size_t v = 0; v < G.size(); ++v)
      if (storedBy[v] >= 0)
        plan.storedBy[v] = newIndex[storedBy[v]];
    plan.storeReason = Reason;
    plan.apartReason.assign(G.size(), FusionReason{});
    for (auto &[v, why] : ApartReason)
      plan.apartReason[v] = why;
    for (size_t v = 0; v < G.size(); ++v)
      if (plan.storedBy[v] < 0)
        plan.storeReason[v] = FusionReason{};
  }

  /// Number of ops a value costs to recompute inline.
  int inlineCost(ValueId v) const {
    std::vector<bool> seen(G.size(), false);
    std::vector<ValueId> stack{v};
    int cost = 0;
    while (!stack.empty()) {
      ValueId x = stack.back();
      stack.pop_back();
      if (seen[x])
        continue;
      seen[x] = true;
      const Node &n = G.node(x);
      if (n.op == OpKind::Input || n.op == OpKind::Constant || (Stored[x] && x != v))
        continue;
      if (isCompute(n))
        ++cost;
      for (ValueId o : n.operands)
        stack.push_back(o);
    }
    return cost;
  }

  /// For a kernel whose code weighs more than kMaxKernelWeight, the value to
  /// store to split it: of the elementwise values it inlines, the one with
  /// the most weight below the limit, each value's weight counted as a tree
  /// (a value two operands share counted twice, so never less than its
  /// code's). A chain is then cut every kMaxKernelWeight; a kernel heavy for
  /// its many roots alone is left whole. A value stored for this rule that
  /// still shares a kernel with the root after it (roots of one shape join
  /// one kernel) is kept apart from that root.
  std::optional<StoreRequest> oversized(const KernelGroup &k) const {
    int64_t total = 0;
    for (ValueId v : k.held)
      total += codeWeight(G.node(v).op);
    if (total <= kMaxKernelWeight)
      return std::nullopt;
    ValueId last = k.roots.back();
    for (ValueId v : k.held)
      if (Stored[v] && v != last && Reason[v].kind == FusionReasonKind::KernelTooLarge &&
          !Apart.count({last, v})) {
        StoreRequest apart = request(v, FusionReasonKind::KernelTooLarge, {v, last},
                                     {total, kMaxKernelWeight});
        apart.root = last;
        return apart;
      }
    std::map<ValueId, int64_t> tree; // held is sorted: operands come first
    ValueId best = -1;
    for (ValueId v : k.held) {
      const Node &n = G.node(v);
      int64_t w = codeWeight(n.op);
      for (ValueId o : n.operands)
        if (auto it = tree.find(o); it != tree.end() && !Stored[o])
          w = std::min(w + it->second, kMaxKernelWeight + 1);
      tree[v] = w;
      if (isElementwise(n.op) && !Stored[v] && w <= kMaxKernelWeight &&
          (best < 0 || w >= tree[best]))
        best = v;
    }
    if (best < 0)
      return std::nullopt;
    return request(best, FusionReasonKind::KernelTooLarge, {best, k.roots.back()},
                   {total, kMaxKernelWeight});
  }

  /// Values the plan's kernels share that are better stored.
  std::optional<StoreRequest> check(const FusionPlan &plan) {
    // An attention's backward kernels compute the forward's work again, as
    // FlashAttention-2 does, however much of it they hold.
    for (const KernelGroup &k : plan.kernels)
      if (!isAttentionBackward(k.kind))
        if (std::optional<StoreRequest> split = oversized(k))
          return split;
    // Values inlined into several kernels: reductions are never recomputed,
    // expensive elementwise values are stored.
    std::vector<std::vector<int>> users(G.size());
    for (size_t k = 0; k < plan.kernels.size(); ++k)
      for (ValueId h : plan.kernels[k].held)
        if (!isAttentionBackward(plan.kernels[k].kind))
          users[h].push_back(static_cast<int>(k));
    for (size_t v = 0; v < G.size(); ++v) {
      if (users[v].size() < 2 || Stored[v])
        continue;
      const Node &n = G.nodes()[v];
      auto id = static_cast<ValueId>(v);
      if (n.cls() == OpClass::Reduce || n.cls() == OpClass::Scan) // never recomputed
        return request(id, FusionReasonKind::SharedReduction, {id}, {users[v][0], users[v][1]});
      int cost = inlineCost(id);
      if (cost > kMaxRecomputeOps)
        return request(id, FusionReasonKind::CostlyRecompute, {id},
                       {cost, users[v][0], users[v][1]});
    }
    return std::nullopt;
  }

  /// True when `root` may not share a kernel with the values `k` holds.
  bool keptApart(ValueId root, const KernelGroup &k) const {
    for (auto [r, v] : Apart)
      if (r == root && llvm::is_contained(k.held, v))
        return true;
    return false;
  }

  const Graph &G;
  bool Enabled;
  std::vector<bool> Stored;
  std::vector<FusionReason> Reason;
  std::vector<bool> IsOutput;
  std::vector<std::vector<ValueId>> Readers; ///< per value, the nodes reading it (once an operand)
  std::set<std::pair<ValueId, ValueId>> Apart; ///< (root, value): never in one kernel
  std::map<ValueId, FusionReason> ApartReason;
  std::vector<AttentionPart> Parts; ///< attentionParts(G), empty without fusion
  /// Per attention-shaped product, the first reason the template refused it
  /// (a record signatureOf keeps for the printout).
  mutable std::map<ValueId, FusionReason> FirstRefusal;
};

std::string valueList(const Graph &g, llvm::ArrayRef<ValueId> vs) {
  std::string s;
  for (ValueId v : vs) {
    if (!s.empty())
      s += ", ";
    s += "%" + g.node(v).name;
  }
  return s;
}

} // namespace

FusionPlan formPlan(const Graph &g, bool fusion, PlanCheck check) {
  Fuser f(g, fusion);
  return f.run(check);
}

/// The values kernel k computes again after an earlier kernel computed them:
/// cheap elementwise values are recomputed rather than saved (stored by the
/// first kernel and read back by this one, which would move their bytes twice).
void printRecomputed(llvm::raw_ostream &os, const Graph &g, const FusionPlan &plan, size_t k,
                     const std::vector<std::vector<size_t>> &computedIn) {
  std::vector<ValueId> again;
  std::set<size_t> first;
  int64_t bytes = 0;
  for (ValueId h : plan.kernels[k].held) {
    if (computedIn[h].size() < 2 || computedIn[h][0] >= k || plan.storedBy[h] >= 0)
      continue;
    again.push_back(h);
    bytes += 2 * g.node(h).shape.numel() * dtypeSize(g.node(h).dtype);
    first.insert(computedIn[h][0]);
  }
  if (again.empty())
    return;
  os << "  recomputes: " << valueList(g, again) << " (first computed in";
  for (size_t f : first)
    os << " k" << f;
  os << "): computed again from what this kernel reads rather than saved there and read back "
        "here, which would move up to "
     << bytes << " more bytes\n";
}

/// The graph outputs of no elements, which no kernel writes.
void printEmptyOutputs(llvm::raw_ostream &os, const Graph &g) {
  std::set<ValueId> seen;
  for (ValueId o : g.outputs()) {
    const Node &n = g.node(o);
    if (!n.shape.isEmpty() || !seen.insert(o).second)
      continue;
    os << "\nno kernel: %" << n.name << " " << typeText(n.dtype, n.shape) << " (graph output"
       << (n.op == OpKind::Input ? ", an argument" : "") << ")\n  empty: " << n.shape.boundStr()
       << " has no elements; its buffer has 0 bytes\n";
  }
}

void printFusionPlan(llvm::raw_ostream &os, const Graph &g, const FusionPlan &plan,
                     llvm::ArrayRef<KernelNotes> notes) {
  size_t n = plan.kernels.size();
  os << "graph " << g.name() << ": " << n << (n == 1 ? " kernel" : " kernels") << " (fusion "
     << (plan.fusion ? "on" : "off") << ")\n";
  // The kernels that compute each value: an unstored value computed by more
  // than one is recomputed rather than saved.
  std::vector<std::vector<size_t>> computedIn(g.size());
  for (size_t k = 0; k < n; ++k)
    for (ValueId h : plan.kernels[k].held)
      if (isElementwise(g.node(h).op))
        computedIn[h].push_back(k);
  for (size_t k = 0; k < n; ++k) {
    const KernelGroup &kg = plan.kernels[k];
    os << "\nkernel k" << k;
    if (k < notes.size() && !notes[k].name.empty())
      os << " " << notes[k].name;
    os << ": ";
    if (kg.kind == KernelKind::Pointwise)
      os << "pointwise over " << typeText(g.node(kg.roots[0]).dtype, kg.domain) << "\n";
    else if (kg.kind == KernelKind::Matmul)
      os << "matmul %" << g.node(kg.matmul).name << " "
         << g.node(g.node(kg.matmul).operands[0]).shape.str() << " @ "
         << g.node(g.node(kg.matmul).operands[1]).shape.str()
         << (llvm::any_of(kg.held, [&](ValueId v) { return isElementwise(g.node(v).op); })
                 ? " with its elementwise epilogue"
                 : "")
         << "\n";
    else if (isAttentionKind(kg.kind))
      os << describeAttentionKernel(g, kg) << "\n";
    else if (kg.kind == KernelKind::Scan)
      os << "scan of " << kg.domain.str() << " along axis " << kg.reducedAxes[0]
         << (llvm::any_of(kg.held, [&](ValueId v) { return g.node(v).reverse; })
                 ? ", from the last element"
                 : "")
         << " (" << kg.rows() << (kg.rows() == 1 ? " row of " : " rows of ") << kg.reducedSize()
         << ")\n";
    else
      os << "reduction of " << kg.domain.str() << " over axes " << Shape(kg.reducedAxes).str()
         << " (" << kg.rows() << (kg.rows() == 1 ? " row of " : " rows of ") << kg.reducedSize()
         << ")\n";
    if (k < notes.size() && !notes[k].schedule.empty())
      os << "  schedule: " << notes[k].schedule << "\n";
    if (kg.kind == KernelKind::Matmul && kg.matmul < static_cast<ValueId>(plan.notAttention.size()) &&
        !plan.notAttention[kg.matmul].empty())
      os << "  not attention: " << describeReason(g, plan.notAttention[kg.matmul]) << "\n";
    os << "  holds:\n";
    for (ValueId h : kg.held) {
      const Node &hn = g.node(h);
      if (hn.op == OpKind::Input)
        continue;
      os << "    " << nodeText(g, h) << "\n";
    }
    if (kg.held.empty() || llvm::all_of(kg.held, [&](ValueId h) {
          return g.node(h).op == OpKind::Input;
        }))
      os << "    (a copy)\n";
    os << "  reads:";
    if (kg.reads.empty())
      os << " nothing";
    os << "\n";
    for (ValueId r : kg.reads) {
      os << "    %" << g.node(r).name;
      if (g.node(r).op == OpKind::Input)
        os << " (graph input)\n";
      else
        os << " from k" << plan.storedBy[r] << ": " << describeReason(g, plan.storeReason[r])
           << "\n";
    }
    printRecomputed(os, g, plan, k, computedIn);
    os << "  writes: " << valueList(g, kg.roots) << "\n";
    for (ValueId r : kg.roots) {
      os << "    %" << g.node(r).name << ": " << describeReason(g, plan.storeReason[r]) << "\n";
      if (r < static_cast<ValueId>(plan.apartReason.size()) && !plan.apartReason[r].empty())
        os << "    %" << g.node(r).name
           << " has a kernel of its own: " << describeReason(g, plan.apartReason[r]) << "\n";
    }
  }
  printEmptyOutputs(os, g);
}

} // namespace minijit
