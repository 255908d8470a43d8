//===- compiler/lower/AttentionLowering.cpp - an attention kernel, lowered ------===//
// An attention kernel lowers in two parts: its scores and the work on them,
// lowered as a matmul kernel whose epilogue is that work (the same loads,
// iota positions and arithmetic a matmul's epilogue has), and V and O,
// described by their strides beside it. The softmax between them is the
// template's, so it is not lowered.
//===----------------------------------------------------------------------===//
#include "compiler/lower/Lowering.h"

#include "compiler/fusion/Attention.h"
#include "compiler/fusion/AttentionBackward.h"
#include "compiler/lower/CudaNames.h"
#include "compiler/lower/ViewIndex.h"

#include "ir/Printer.h"

#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <optional>

namespace minijit {

namespace {

/// The values of `kg` that compute `from` (itself included), in graph order.
std::vector<ValueId> heldClosure(const Graph &g, const KernelGroup &kg, ValueId from) {
  std::vector<bool> in(g.size(), false), seen(g.size(), false);
  for (ValueId v : kg.held)
    in[v] = true;
  std::vector<ValueId> out, stack{from};
  seen[from] = true;
  while (!stack.empty()) {
    ValueId v = stack.back();
    stack.pop_back();
    if (!in[v])
      continue;
    out.push_back(v);
    for (ValueId o : g.node(v).operands)
      if (!seen[o]) {
        seen[o] = true;
        stack.push_back(o);
      }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// `v` read at `idx` through its views that are not stored, down to the
/// value in memory: that value, `idx` rewritten to index it.
ValueId throughViews(const Graph &g, const FusionPlan &plan, IndexContext &ctx, ValueId v,
                     Index &idx) {
  while (g.node(v).cls() == OpClass::View && plan.storedBy[v] < 0 &&
         g.node(v).op != OpKind::Input) {
    const Node &view = g.node(v);
    const Shape &in = g.node(view.operands[0]).shape;
    idx = view.op == OpKind::Broadcast ? broadcastOperandIndex(in, view.shape, idx)
                                       : viewIndex(ctx, view, in, idx);
    v = view.operands[0];
  }
  return v;
}

StoreRequest layoutProblem(ValueId operand, ValueId out) {
  return StoreRequest{operand, FusionReason{FusionReasonKind::MatmulLayout, {operand, out}, {}},
                      out};
}

/// A new parameter of `k` for graph value `node`, named as lowering names them.
int addParam(const Graph &g, LoweredKernel &k, ValueId node, bool written) {
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].node == node && k.params[i].written == written)
      return static_cast<int>(i);
  const Node &n = g.node(node);
  std::string base = cudaIdentifier(n.name);
  if (isReservedName(base))
    base += "_";
  base += written ? "_out" : "";
  std::string name = base;
  for (int i = 1; llvm::any_of(k.params, [&](const KParam &p) { return p.name == name; }); ++i)
    name = base + "_" + std::to_string(i);
  k.params.push_back(KParam{node, written, name, n.name, n.dtype, n.shape.numel()});
  return static_cast<int>(k.params.size() - 1);
}

/// Where `value` (through views, unless it is `written`) holds element
/// (row, col) of each batch of `o`'s shape (`outIdx` its batch indices): a
/// base over `b` and two strides. `col` unset: a value of one column.
std::variant<KRows, StoreRequest> describeRows(const Graph &g, const FusionPlan &plan,
                                               LoweredKernel &k, ValueId value, const Shape &o,
                                               const Index &outIdx, IndexExpr row,
                                               std::optional<IndexExpr> col, bool written) {
  const Node &vn = g.node(value);
  unsigned rank = o.rank(), batch = vn.shape.rank() - 2, off = (rank - 2) - batch;
  Index idx;
  for (unsigned d = 0; d < batch; ++d)
    idx.push_back(stretchesTo(vn.shape.dim(d), o.dim(off + d)) ? IndexExpr::constant(0)
                                                               : outIdx[off + d]);
  idx.push_back(row);
  idx.push_back(col ? *col : IndexExpr::constant(0));
  ValueId v = written ? value : throughViews(g, plan, k.ctx, value, idx);
  IndexExpr offset = elementOffset(k.ctx, g.node(v).shape, idx);
  std::optional<int64_t> byRow = linearCoefficient(k.ctx, offset, row),
                         byCol = col ? linearCoefficient(k.ctx, offset, *col) : 0;
  if (!byRow || !byCol)
    return layoutProblem(value, plan.kernels[k.index].matmul);
  KRows r;
  r.param = addParam(g, k, v, written);
  r.base = col ? zeroAt(k.ctx, offset, {row, *col}) : zeroAt(k.ctx, offset, {row});
  r.strideRow = *byRow;
  r.strideCol = *byCol;
  return r;
}

/// The offset, in the buffer of `root`, of O's element `idx`, where `root`
/// is O (`out`) permuted and reshaped (Fusion's storedThroughViews: the heads
/// put back together). A reshape keeps the row-major order, so the index is
/// carried through one only where a permute follows it.
IndexExpr offsetThroughViews(const Graph &g, IndexContext &ctx, ValueId out, ValueId root,
                             Index idx) {
  std::vector<ValueId> chain;
  for (ValueId v = root; v != out; v = g.node(v).operands[0])
    chain.push_back(v);
  Shape shape = g.node(out).shape; // the shape idx indexes
  std::optional<Shape> reshapedTo; // the shape of the reshapes since, if any
  for (auto v = chain.rbegin(); v != chain.rend(); ++v) {
    const Node &n = g.node(*v);
    if (n.op == OpKind::Reshape) {
      reshapedTo = n.shape;
      continue;
    }
    assert(n.op == OpKind::Permute && "Fusion stores O through permutes and reshapes");
    if (reshapedTo) {
      idx = reshapedIndex(ctx, shape, idx, *reshapedTo);
      reshapedTo.reset();
    }
    Index permuted(idx.size());
    for (unsigned i = 0; i < n.perm.size(); ++i)
      permuted[i] = idx[n.perm[i]];
    idx = std::move(permuted);
    shape = n.shape;
  }
  return elementOffset(ctx, shape, idx);
}

/// The literal a scale (mul or div of the scores' path) multiplies or
/// divides by: its second operand's, else its first's.
double literalOf(const Graph &g, const Node &scale) {
  for (ValueId v : {scale.operands[1], scale.operands[0]}) {
    while (g.node(v).op == OpKind::Broadcast || g.node(v).op == OpKind::Reshape)
      v = g.node(v).operands[0];
    if (g.node(v).op == OpKind::Constant)
      return g.node(v).value;
  }
  llvm_unreachable("findAttentionBackward takes scales by literals");
}

/// What a backward kernel reads and writes beside Q, K and V (KAttention),
/// or the value to store first.
std::optional<StoreRequest> describeBackward(const Graph &g, const FusionPlan &plan,
                                             const AttentionMatch &m, LoweredKernel &k,
                                             KAttention &a, const Index &outIdx) {
  const KernelGroup &kg = plan.kernels[k.index];
  const AttentionBackwardMatch b = findAttentionBackward(g, m).value().match.value();
  const Shape &o = g.node(m.out).shape;
  struct Want {
    ValueId value;
    KRows *rows;
    IndexExpr row;
    std::optional<IndexExpr> col;
    bool written;
  };
  std::vector<Want> wants{{m.out, &a.out, k.m, a.dd, false},
                          {b.dOut, &a.dOut, k.m, a.dd, false},
                          {m.max, &a.max, k.m, std::nullopt, false},
                          {m.sum, &a.sum, k.m, std::nullopt, false}};
  for (auto [value, rows, row, col] :
       {std::tuple{b.dq, &a.dq, k.m, k.kk}, std::tuple{b.dk, &a.dk, k.n, k.kk},
        std::tuple{b.dv, &a.dv, k.n, a.dd}})
    if (value >= 0 && llvm::is_contained(kg.roots, value))
      wants.push_back({value, rows, row, col, true});
  for (const Want &w : wants) {
    auto r = describeRows(g, plan, k, w.value, o, outIdx, w.row, w.col, w.written);
    if (StoreRequest *problem = std::get_if<StoreRequest>(&r))
      return *problem;
    *w.rows = std::get<KRows>(r);
  }
  for (const ScoreWorkStep &s : b.steps) {
    const Node &n = g.node(s.forward);
    if (n.op == OpKind::Tanh) { // its derivative reads the tanh the score work computes
      auto y = llvm::find_if(k.values, [&](const KValue &v) {
        return v.node == s.forward && v.kind == KValue::Kind::Compute;
      });
      assert(y != k.values.end() && "the score work computes the soft-cap");
      a.scaleSteps.push_back({OpKind::Tanh, 0, static_cast<int>(y - k.values.begin())});
      continue;
    }
    if (n.op != OpKind::Mul && n.op != OpKind::Div)
      continue;
    KScaleStep step{n.op, literalOf(g, n)};
    if (s.movedAfterProducts)
      a.productScale = step;
    else
      a.scaleSteps.push_back(step);
  }
  return std::nullopt;
}

/// V, through its views, at (b, key n, dd): its parameter, base and strides
/// in `a`; a store of V first where its views mix the key and column strides.
std::optional<StoreRequest> describeValues(const Graph &g, const FusionPlan &plan, ValueId out,
                                           LoweredKernel &k, KAttention &a, const Index &outIdx) {
  const Node &o = g.node(out);
  unsigned rank = o.shape.rank();
  ValueId vOperand = o.operands[1], v = vOperand;
  const Node &vn = g.node(vOperand);
  Index vIdx;
  unsigned vBatch = vn.shape.rank() - 2, off = (rank - 2) - vBatch;
  for (unsigned d = 0; d < vBatch; ++d)
    vIdx.push_back(stretchesTo(vn.shape.dim(d), o.shape.dim(off + d)) ? IndexExpr::constant(0)
                                                                      : outIdx[off + d]);
  vIdx.push_back(k.n);
  vIdx.push_back(a.dd);
  v = throughViews(g, plan, k.ctx, v, vIdx);
  IndexExpr vOff = elementOffset(k.ctx, g.node(v).shape, vIdx);
  std::optional<int64_t> vn1 = linearCoefficient(k.ctx, vOff, k.n),
                         vd = linearCoefficient(k.ctx, vOff, a.dd);
  if (!vn1 || !vd)
    return layoutProblem(vOperand, out);
  a.vParam = addParam(g, k, v, false);
  a.vBase = zeroAt(k.ctx, vOff, {k.n, a.dd});
  a.vStrideN = *vn1;
  a.vStrideD = *vd;
  a.vDtype = g.node(v).dtype;
  return std::nullopt;
}

} // namespace

LoweringResult lowerAttention(const Graph &g, const FusionPlan &plan, int index,
                              const LoweringOptions &options) {
  const KernelGroup &kg = plan.kernels[index];
  std::optional<AttentionCandidate> c =
      findAttention(g, kg.matmul, [&](ValueId v) { return plan.storedBy[v] >= 0; });
  assert(c && c->match && !c->store && "fusion formed the attention kernel from a match");
  const AttentionMatch &m = *c->match;

  // The scores and their work: a matmul kernel over S whose root is g(S).
  FusionPlan scores = plan;
  KernelGroup sk;
  sk.kind = KernelKind::Matmul;
  sk.domain = g.node(m.scores).shape;
  sk.matmul = m.scores;
  sk.roots = {m.logits};
  sk.held = heldClosure(g, kg, m.logits);
  sk.reads = kg.reads;
  scores.kernels = {sk};
  LoweringResult r = lowerKernel(g, scores, 0, options);
  if (StoreRequest *problem = std::get_if<StoreRequest>(&r)) {
    problem->root = kg.matmul;
    return *problem;
  }
  LoweredKernel k = std::move(std::get<LoweredKernel>(r));
  assert(k.stores.size() == 1 && k.stores[0].param + 1 == static_cast<int>(k.params.size()) &&
         "the scores' kernel stores g(S) alone, in its last parameter");
  KAttention a;
  a.node = kg.matmul;
  a.score = k.stores[0].value;
  k.stores.clear();
  k.params.pop_back();

  k.index = index;
  k.kind = kg.kind;
  k.domain = kg.domain;
  k.dtype = g.node(kg.matmul).dtype;
  k.held.clear();
  for (ValueId v : kg.held)
    if (g.node(v).op != OpKind::Input)
      k.held.push_back({g.node(v).op, nodeText(g, v)});

  // The batch index of each of O's leading axes, from the flat `b`.
  const Node &o = g.node(kg.matmul);
  unsigned rank = o.shape.rank();
  Index outIdx(rank);
  int64_t inner = 1;
  for (int d = static_cast<int>(rank) - 3; d >= 0; --d) {
    outIdx[d] = k.ctx.mod(k.ctx.div(k.b, inner), o.shape[d]);
    inner *= o.shape[d];
  }
  a.valueDim = o.shape[rank - 1];
  a.dd = k.ctx.var("dd", a.valueDim);

  if (std::optional<StoreRequest> problem = describeValues(g, plan, kg.matmul, k, a, outIdx))
    return *problem;

  if (isAttentionBackward(kg.kind)) {
    if (std::optional<StoreRequest> problem = describeBackward(g, plan, m, k, a, outIdx))
      return *problem;
  } else {
    // O at (b, query m, dd): row-major, or where the views after it put
    // that element when the kernel's root is O permuted and reshaped.
    outIdx[rank - 2] = k.m;
    outIdx[rank - 1] = a.dd;
    auto stored = llvm::find_if(kg.roots, [&](ValueId r) { return r != m.max && r != m.sum; });
    assert(stored != kg.roots.end() && "an attention kernel stores O or a view of it");
    IndexExpr oOff = *stored == kg.matmul
                         ? elementOffset(k.ctx, o.shape, outIdx)
                         : offsetThroughViews(g, k.ctx, kg.matmul, *stored, outIdx);
    std::optional<int64_t> byM = linearCoefficient(k.ctx, oOff, k.m),
                           byD = linearCoefficient(k.ctx, oOff, a.dd);
    if (!byM || !byD) // the views mix O's rows or columns: O is stored, then copied
      return StoreRequest{
          kg.matmul, FusionReason{FusionReasonKind::AttentionOwnKernel, {kg.matmul}, {}}, *stored};
    a.outParam = addParam(g, k, *stored, true);
    a.outBase = zeroAt(k.ctx, oOff, {k.m, a.dd});
    a.outStrideM = *byM;
    a.outStrideD = *byD;
    // The rows' max and sum, where a fused backward reads them.
    for (auto [value, rows] : {std::pair{m.max, &a.max}, std::pair{m.sum, &a.sum}}) {
      if (!llvm::is_contained(kg.roots, value))
        continue;
      auto r = describeRows(g, plan, k, value, o.shape, outIdx, k.m, std::nullopt, true);
      if (StoreRequest *problem = std::get_if<StoreRequest>(&r))
        return *problem;
      *rows = std::get<KRows>(r);
    }
  }

  a.scale = m.scale;
  a.mask = m.mask;
  a.bias = m.bias;
  a.softcap = m.softcap;
  a.causal = m.causal;
  a.window = m.window;
  a.kBatches = m.kBatches;
  a.vBatches = m.vBatches;
  // FLOPs per output element: the two products, the score work and the
  // softmax (max, exp, sum, rescale) per score, spread over O's elements.
  int64_t perScore = 2 * k.matmul->K + 2 * a.valueDim + k.flopsPerElement - 2 * k.matmul->K + 4;
  k.numel = o.shape.numel();
  k.flopsPerElement = perScore * k.matmul->N / a.valueDim;
  int64_t big = int64_t(1) << 31;
  for (const KParam &p : k.params)
    k.index64 = k.index64 || p.numel >= big;
  k.index64 = k.index64 || k.matmul->batch * k.matmul->M * k.matmul->N >= big;
  k.symbolic.reset();
  k.attention = a;
  return k;
}

} // namespace minijit
