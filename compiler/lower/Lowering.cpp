//===- compiler/lower/Lowering.cpp - a kernel as loads, math and stores ---------===//
// Evaluates each stored value of a kernel "at an index": views turn the index
// into their operand's index, elementwise ops broadcast it to their operands,
// a reduction's value is available only at the row being reduced, and values
// stored by other kernels (or inputs) are loaded. Each (value, index) pair is
// lowered once. What no kernel of this plan can do is returned as the value
// to store first (a StoreRequest); lowering stops at the first one.
//===----------------------------------------------------------------------===//
#include "compiler/lower/Lowering.h"
#include "compiler/lower/NamedExtent.h"
#include "compiler/lower/ViewIndex.h"

#include "compiler/lower/CudaNames.h"

#include "ir/Error.h"
#include "ir/Printer.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>

namespace minijit {

namespace {

class Lowerer {
public:
  Lowerer(const Graph &g, const FusionPlan &plan, int index, const LoweringOptions &options)
      : G(g), Plan(plan), KG(plan.kernels[index]), Options(options), InKernel(g.size(), false) {
    L.index = index;
    L.kind = KG.kind;
    L.domain = KG.domain;
    L.reducedAxes = KG.reducedAxes;
    L.dtype = G.node(KG.roots[0]).dtype;
    for (ValueId v : KG.held) {
      InKernel[v] = true;
      if (G.node(v).op != OpKind::Input)
        L.held.push_back({G.node(v).op, printed(v)});
    }
  }

  LoweringResult run() {
    buildDomain();
    for (ValueId r : KG.roots) {
      if (!addStore(r)) {
        Problem->root = r;
        return std::move(*Problem);
      }
    }
    finish();
    return std::move(L);
  }

private:
  void buildDomain() {
    const Shape &dom = KG.domain;
    DomainIdx.assign(dom.rank(), IndexExpr::constant(0));
    if (KG.kind == KernelKind::Matmul) {
      unsigned r = dom.rank();
      DimVector batch(dom.dims().begin(), dom.dims().end() - 2);
      llvm::SmallVector<unsigned, kMaxRank> batchDims;
      for (unsigned d = 0; d + 2 < r; ++d)
        batchDims.push_back(d);
      L.b = L.ctx.var("b", Shape(batch).numel());
      L.m = L.ctx.var("m", rangeOf(dom.dim(r - 2)));
      L.n = L.ctx.var("n", dom[r - 1]);
      decompose(L.b, batch, batchDims);
      DomainIdx[r - 2] = L.m;
      DomainIdx[r - 1] = L.n;
      L.numel = dom.numel();
      // m alone may be named (a batch of rows through a layer); a named
      // batch, n or k is compiled for its value.
      bool othersNamed = false;
      for (unsigned d = 0; d < r; ++d)
        othersNamed = othersNamed || (d != r - 2 && dom.dim(d).isNamed());
      if (!othersNamed)
        Extent = dom.dim(r - 2);
      return;
    }
    if (KG.kind == KernelKind::Pointwise) {
      L.numel = dom.numel();
      Extent = dom.numelDim();
      L.elem = L.ctx.var("i", rangeOf(*Extent));
      llvm::SmallVector<unsigned, kMaxRank> all;
      for (unsigned d = 0; d < dom.rank(); ++d)
        all.push_back(d);
      decompose(L.elem, dom.dims(), all);
      return;
    }
    llvm::SmallVector<unsigned, kMaxRank> kept, red;
    DimVector keptSizes, redSizes;
    Dim rows(int64_t(1));
    for (unsigned d = 0; d < dom.rank(); ++d) {
      if (llvm::is_contained(KG.reducedAxes, d)) {
        red.push_back(d);
        redSizes.push_back(dom[d]);
      } else {
        kept.push_back(d);
        keptSizes.push_back(dom[d]);
        rows = rows * dom.dim(d);
      }
    }
    Extent = rows;
    L.rows = KG.rows();
    L.K = KG.reducedSize();
    L.row = L.ctx.var("row", rangeOf(rows));
    L.k = L.ctx.var("k", L.K);
    decompose(L.row, keptSizes, kept);
    decompose(L.k, redSizes, red);
  }

  /// The range an outer loop variable of extent `extent` is declared
  /// with: the extent, or for a named one its bucket's largest (so the
  /// index arithmetic simplifies alike for every size of the bucket).
  static int64_t rangeOf(const Dim &extent) { return bucketExtent(extent.expr(), extent.size()); }

  /// Sets DomainIdx[dims[i]] from a flat index over `sizes` (row-major).
  /// A named outermost dimension takes no remainder (the flat index is below
  /// the product of the sizes), so that its index does not fold away where
  /// its size is 1, nor depend on the size (the flat index's range is its
  /// bucket's, rangeOf).
  void decompose(const IndexExpr &flat, llvm::ArrayRef<int64_t> sizes,
                 llvm::ArrayRef<unsigned> dims) {
    int64_t inner = 1;
    for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
      IndexExpr q = L.ctx.div(flat, inner);
      bool named = i == 0 && KG.domain.dim(dims[0]).isNamed();
      DomainIdx[dims[i]] = named ? q : L.ctx.mod(q, sizes[i]);
      inner *= sizes[i];
    }
  }

  IndexExpr offsetOf(const Shape &s, const Index &idx) { return elementOffset(L.ctx, s, idx); }

  Index broadcastIndex(const Shape &from, const Shape &to, const Index &idx) {
    Index out = broadcastOperandIndex(from, to, idx);
    if (Options.misreadBroadcasts && misreadBroadcast(L.ctx, out, from, to))
      ++L.misreadReads;
    return out;
  }

  Index viewOperandIndex(const Node &n, const Index &idx) {
    if (n.op == OpKind::Broadcast)
      return broadcastIndex(G.node(n.operands[0]).shape, n.shape, idx);
    return viewIndex(L.ctx, n, G.node(n.operands[0]).shape, idx);
  }

  std::string printed(ValueId v) const {
    return nodeText(G, v);
  }

  /// Records why lowering cannot go on; returns -1, the failed value.
  int fail(ValueId node, FusionReasonKind kind, llvm::ArrayRef<ValueId> values,
           llvm::ArrayRef<int64_t> numbers = {}) {
    if (!Problem)
      Problem = StoreRequest{node, FusionReason{kind,
                                                llvm::SmallVector<ValueId, 3>(values.begin(), values.end()),
                                                llvm::SmallVector<int64_t, 3>(numbers.begin(), numbers.end())}};
    return -1;
  }

  std::string cName(const std::string &irName) {
    std::string s = cudaIdentifier(irName);
    return isReservedName(s) ? s + "_" : s;
  }

  std::string uniqueParamName(const std::string &base) {
    std::string n = base;
    for (int i = 1; UsedParamNames.count(n); ++i)
      n = base + "_" + std::to_string(i);
    UsedParamNames.insert(n);
    return n;
  }

  int paramFor(ValueId node, bool written) {
    for (size_t i = 0; i < L.params.size(); ++i)
      if (L.params[i].node == node && L.params[i].written == written)
        return static_cast<int>(i);
    const Node &n = G.node(node);
    KParam p;
    p.node = node;
    p.written = written;
    // Outputs are `NAME_out`, so the kernel's local for the value keeps NAME.
    std::string base = cName(n.name) + (written ? "_out" : "");
    p.name = uniqueParamName(base);
    p.irName = n.name;
    p.dtype = n.dtype;
    p.numel = n.shape.numel();
    L.params.push_back(p);
    return static_cast<int>(L.params.size() - 1);
  }

  int addValue(KValue v) {
    const Node &n = G.node(v.node);
    v.op = n.op;
    v.dtype = n.dtype;
    v.name = n.name;
    if (v.kind == KValue::Kind::Literal)
      v.literal = n.value;
    else if (v.kind != KValue::Kind::Load)
      v.text = printed(v.node);
    // Context and stage follow from the operands: a value is per row when its
    // own index does not move along the row and every operand is per row.
    bool rowKernel = isRowKernel(L.kind), fromArgs = true;
    v.stage = 0;
    switch (v.kind) {
    case KValue::Kind::Literal:
      v.perRow = true;
      fromArgs = false;
      break;
    case KValue::Kind::Load:
    case KValue::Kind::Index: v.perRow = rowKernel && !L.ctx.mentions(v.offset, L.k); break;
    case KValue::Kind::Compute: v.perRow = rowKernel; break;
    case KValue::Kind::ReduceResult:
      v.perRow = !isScan(L.reductions[v.reduction].op); // a scan's result is per element
      v.stage = L.reductions[v.reduction].pass + 1;
      fromArgs = false;
      break;
    case KValue::Kind::MatmulResult:
      v.perRow = false;
      fromArgs = false;
      break;
    case KValue::Kind::InRange:
      v.dtype = DType::Bool;
      v.perRow = rowKernel && llvm::none_of(v.tests, [&](const KValue::Test &t) {
                   return L.ctx.mentions(t.e, L.k);
                 });
      break;
    }
    for (int a : fromArgs ? llvm::ArrayRef<int>(v.args) : llvm::ArrayRef<int>()) {
      v.perRow = v.perRow && L.values[a].perRow;
      v.stage = std::max(v.stage, L.values[a].stage);
      if (v.kind == KValue::Kind::Load) // a gather's index values
        L.elementIndexed = L.elementIndexed || !L.values[a].perRow;
    }
    L.values.push_back(std::move(v));
    return static_cast<int>(L.values.size() - 1);
  }

  std::string indexKey(ValueId n, const Index &idx) {
    std::string key = std::to_string(n);
    for (const IndexExpr &e : idx)
      key += "|" + e.key();
    return key;
  }

  /// The kernel value of `id` at `idx`, or -1 when lowering failed.
  int value(ValueId id, const Index &idx) {
    std::string key = indexKey(id, idx);
    auto it = Memo.find(key);
    if (it != Memo.end())
      return it->second;
    const Node &n = G.node(id);
    int result;
    if (n.op == OpKind::Constant || (n.op == OpKind::Full && InKernel[id])) {
      // a full read inside its kernel is its literal, whatever the index
      KValue v;
      v.kind = KValue::Kind::Literal;
      v.node = id;
      result = addValue(v);
    } else if (n.op == OpKind::Input || !InKernel[id]) {
      KValue v;
      v.kind = KValue::Kind::Load;
      v.node = id;
      v.param = paramFor(id, false);
      v.offset = offsetOf(n.shape, idx);
      for (int a : L.ctx.valuesIn(v.offset))
        v.args.push_back(a);
      result = addValue(v);
    } else {
      switch (n.cls()) {
      case OpClass::View:
        result = n.op == OpKind::Pad ? padValue(id, idx)
                                     : value(n.operands[0], viewOperandIndex(n, idx));
        break;
      case OpClass::Unary:
      case OpClass::Binary:
      case OpClass::Select:
      case OpClass::Cast: {
        KValue v;
        v.kind = KValue::Kind::Compute;
        v.node = id;
        for (ValueId o : n.operands) {
          int a = value(o, broadcastIndex(G.node(o).shape, n.shape, idx));
          if (a < 0)
            return -1;
          v.args.push_back(a);
        }
        result = addValue(v);
        break;
      }
      case OpClass::Reduce: result = reduceResult(id, idx); break;
      case OpClass::Matmul: result = matmulResult(id, idx); break;
      case OpClass::Iota: {
        KValue v;
        v.kind = KValue::Kind::Index;
        v.node = id;
        v.offset = idx[n.axis];
        for (int a : L.ctx.valuesIn(v.offset)) // a gather's index values it reads
          v.args.push_back(a);
        result = addValue(v);
        break;
      }
      case OpClass::Concat: result = concatValue(id, idx); break;
      case OpClass::Gather: result = gatherValue(id, idx); break;
      case OpClass::Scan: result = scanResult(id, idx); break;
      case OpClass::Random: result = randomValue(id, idx); break;
      case OpClass::Input:
      case OpClass::Constant:
        llvm_unreachable("handled above");
      case OpClass::Derivative: llvm_unreachable("autodiff runs before lowering");
      }
    }
    if (result >= 0)
      Memo[key] = result;
    return result;
  }

  /// A random op's element at `idx`: a call on the seed and offset (scalar
  /// loads), the element's row-major position in the op's result (an i32
  /// index value: random ops have fewer than 2^31 elements) and, for
  /// dropout, x at the same index and p (a literal of the node's value).
  int randomValue(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    bool drop = n.op == OpKind::Dropout;
    KValue v;
    v.kind = KValue::Kind::Compute;
    v.node = id;
    if (drop) {
      int x = value(n.operands[0], idx);
      if (x < 0)
        return -1;
      v.args.push_back(x);
    }
    for (unsigned k = drop ? 1 : 0; k < n.operands.size(); ++k) {
      int a = value(n.operands[k], Index{});
      if (a < 0)
        return -1;
      v.args.push_back(a);
    }
    KValue at;
    at.kind = KValue::Kind::Index;
    at.node = id;
    at.offset = offsetOf(n.shape, idx);
    for (int a : L.ctx.valuesIn(at.offset)) // a gather's index values it reads
      at.args.push_back(a);
    int position = addValue(at);
    L.values[position].dtype = DType::I32;
    L.values[position].name = n.name + "_i";
    v.args.push_back(position);
    if (drop) {
      KValue p;
      p.kind = KValue::Kind::Literal;
      p.node = id;
      int lit = addValue(p);
      L.values[lit].dtype = DType::F32;
      v.args.push_back(lit);
    }
    return addValue(v);
  }

  /// The predicate that `tests` all hold, or -1 when they always do.
  int inRange(ValueId id, std::vector<KValue::Test> tests) {
    llvm::erase_if(tests, [&](const KValue::Test &t) {
      auto [lo, hi] = L.ctx.range(t.e);
      return lo >= t.lo && hi <= t.hi;
    });
    if (tests.empty())
      return -1;
    KValue v;
    v.kind = KValue::Kind::InRange;
    v.node = id;
    // the index values (a gather's) the tests read come first
    for (const KValue::Test &t : tests)
      for (int a : L.ctx.valuesIn(t.e))
        if (!llvm::is_contained(v.args, a))
          v.args.push_back(a);
    v.tests = std::move(tests);
    return addValue(v);
  }

  /// `cond ? a : b` for the pad or concat `id`.
  int select(ValueId id, int cond, int a, int b) {
    KValue v;
    v.kind = KValue::Kind::Compute;
    v.node = id;
    v.args = {cond, a, b};
    return addValue(v);
  }

  /// A pad: its operand's element where the index falls inside the operand,
  /// the pad value elsewhere.
  int padValue(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    const Shape &in = G.node(n.operands[0]).shape;
    std::vector<KValue::Test> tests;
    for (unsigned d = 0; d < in.rank(); ++d)
      tests.push_back({idx[d], n.before[d], n.before[d] + in[d] - 1});
    int x = value(n.operands[0], viewOperandIndex(n, idx));
    if (x < 0)
      return -1;
    int cond = inRange(id, std::move(tests));
    if (cond < 0)
      return x;
    KValue fill;
    fill.kind = KValue::Kind::Literal;
    fill.node = id; // the literal is the pad's value, in its dtype
    return select(id, cond, x, addValue(fill));
  }

  /// A concat: each operand's value at the index within it (clamped into
  /// it), the one that holds the element chosen by the index along the axis.
  int concatValue(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    IndexExpr a = idx[n.axis];
    llvm::SmallVector<int, 4> vals;
    llvm::SmallVector<int64_t, 4> ends;
    int64_t at = 0;
    for (ValueId o : n.operands) {
      int64_t size = G.node(o).shape[n.axis];
      Index in = idx;
      in[n.axis] = L.ctx.clamp(L.ctx.add(a, IndexExpr::constant(-at)), size - 1);
      int v = value(o, in);
      if (v < 0)
        return -1;
      vals.push_back(v);
      at += size;
      ends.push_back(at);
    }
    int result = vals.back();
    for (size_t j = vals.size() - 1; j-- > 0;) {
      int cond = inRange(id, {{a, 0, ends[j] - 1}});
      result = cond < 0 ? vals[j] : select(id, cond, vals[j], result);
    }
    return result;
  }

  /// take and take_along_axis: the index read first, then the operand at
  /// the index clamped into its axis.
  int gatherValue(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    const Shape &xs = G.node(n.operands[0]).shape, &is = G.node(n.operands[1]).shape;
    Index at, in;
    if (n.op == OpKind::Take) {
      at.assign(idx.begin() + n.axis, idx.begin() + n.axis + is.rank());
      in.assign(idx.begin(), idx.begin() + n.axis);
      in.push_back(IndexExpr::constant(0));
      in.insert(in.end(), idx.begin() + n.axis + is.rank(), idx.end());
    } else {
      for (unsigned d = 0; d < xs.rank(); ++d) {
        at.push_back(stretchesTo(is.dim(d), n.shape.dim(d)) ? IndexExpr::constant(0) : idx[d]);
        in.push_back(stretchesTo(xs.dim(d), n.shape.dim(d)) ? IndexExpr::constant(0) : idx[d]);
      }
    }
    int index = value(n.operands[1], at);
    if (index < 0)
      return -1;
    in[n.axis] = L.ctx.clamp(L.ctx.value(index), xs[n.axis] - 1);
    return value(n.operands[0], in);
  }

  /// The position of reduction (or scan) `id` in L.reductions, or -1.
  int reductionIndex(ValueId id) const {
    for (size_t i = 0; i < L.reductions.size(); ++i)
      if (L.reductions[i].node == id)
        return static_cast<int>(i);
    return -1;
  }

  /// The value of reduction `r` of the kernel, the result of node `id`.
  int reductionValue(ValueId id, int r) {
    KValue v;
    v.kind = KValue::Kind::ReduceResult;
    v.node = id;
    v.reduction = r;
    return addValue(v);
  }

  /// A scan: its kernel's own (Scan kernels hold one scan domain), read at
  /// the element it computes.
  int scanResult(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    if (KG.kind != KernelKind::Scan || n.shape != KG.domain || KG.reducedAxes[0] != n.axis)
      return fail(id, FusionReasonKind::ScanOwnKernel, {id});
    if (indexKey(id, idx) != indexKey(id, DomainIdx))
      return fail(id, FusionReasonKind::ScanOwnKernel, {id});
    int r = reductionIndex(id);
    if (r < 0) {
      int input = value(n.operands[0], DomainIdx);
      if (input < 0)
        return -1;
      // Every scan's input is computed before the kernel's scans run: a scan
      // of a scan reads the inner one from memory.
      if (L.values[input].stage != 0)
        return fail(n.operands[0], FusionReasonKind::ScanOwnKernel, {n.operands[0]});
      // The kernel walks its rows one way: a scan the other way is stored.
      if (!L.reductions.empty() && L.reductions[0].reverse != n.reverse)
        return fail(id, FusionReasonKind::ScanOwnKernel, {id});
      L.reductions.push_back({id, n.name, n.dtype, n.op, input, 0});
      L.reductions.back().reverse = n.reverse;
      r = static_cast<int>(L.reductions.size() - 1);
    }
    return reductionValue(id, r);
  }

  int reduceResult(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    const Shape &in = G.node(n.operands[0]).shape;
    if (KG.kind != KernelKind::Reduction || in != KG.domain ||
        !llvm::equal(n.axes, KG.reducedAxes))
      return fail(id, FusionReasonKind::ReductionOtherDomain, {id});
    // The index must name the row being reduced: kept dims as the domain's,
    // reduced dims (when kept as size 1) at 0.
    Index expected;
    for (unsigned d = 0; d < in.rank(); ++d) {
      bool reduced = llvm::is_contained(n.axes, d);
      if (!reduced)
        expected.push_back(DomainIdx[d]);
      else if (n.keepdim)
        expected.push_back(IndexExpr::constant(0));
    }
    if (indexKey(id, expected) != indexKey(id, idx))
      return fail(id, FusionReasonKind::ReductionOtherRow, {id});
    int r = reductionIndex(id);
    if (r < 0) {
      int input = value(n.operands[0], DomainIdx);
      if (input < 0)
        return -1;
      // Its input is stored instead, and the reduction starts a new kernel.
      if (L.values[input].stage + 1 >= kMaxPasses)
        return fail(n.operands[0], FusionReasonKind::TooManyPasses, {id},
                    {L.values[input].stage + 1, kMaxPasses});
      KReduction red{id, n.name, n.dtype, n.op, input, L.values[input].stage};
      L.reductions.push_back(red);
      r = static_cast<int>(L.reductions.size() - 1);
    }
    return reductionValue(id, r);
  }

  /// Follows views held by the kernel down to a value read from memory; -1
  /// when the operand is computed here.
  std::pair<ValueId, Index> throughViews(ValueId id, Index idx, ValueId matmul) {
    while (G.node(id).cls() == OpClass::View && G.node(id).op != OpKind::Pad && InKernel[id]) {
      idx = viewOperandIndex(G.node(id), idx);
      id = G.node(id).operands[0];
    }
    const Node &n = G.node(id);
    if (n.op != OpKind::Input && InKernel[id])
      return {fail(id, FusionReasonKind::MatmulOperand, {id, matmul}), idx};
    return {id, idx};
  }

  int matmulResult(ValueId id, const Index &idx) {
    if (KG.kind != KernelKind::Matmul || KG.matmul != id)
      return fail(id, FusionReasonKind::MatmulOwnKernel, {id});
    if (indexKey(id, idx) != indexKey(id, DomainIdx))
      return fail(id, FusionReasonKind::MatmulMoved, {id});
    if (!L.matmul && !describeMatmul(id))
      return -1;
    KValue v;
    v.kind = KValue::Kind::MatmulResult;
    v.node = id;
    return addValue(v);
  }

  /// Sets L.matmul: the operands' buffers, strides and batch offsets. False
  /// when an operand must be stored first.
  bool describeMatmul(ValueId id) {
    const Node &n = G.node(id);
    {
      const Node &a = G.node(n.operands[0]), &bn = G.node(n.operands[1]);
      unsigned r = n.shape.rank();
      int64_t k = a.shape[a.shape.rank() - 1];
      L.kk = L.ctx.var("kk", k);
      auto operandIndex = [&](const Shape &s, const IndexExpr &row, const IndexExpr &col) {
        Index out;
        unsigned batchRank = s.rank() - 2, off = (r - 2) - batchRank;
        for (unsigned d = 0; d < batchRank; ++d)
          out.push_back(stretchesTo(s.dim(d), n.shape.dim(off + d)) ? IndexExpr::constant(0)
                                                                  : DomainIdx[off + d]);
        out.push_back(row);
        out.push_back(col);
        return out;
      };
      KMatmul mm;
      mm.node = id;
      mm.dtype = a.dtype;
      mm.M = n.shape[r - 2];
      mm.N = n.shape[r - 1];
      mm.K = k;
      mm.batch = L.numel / (mm.M * mm.N);
      auto [aSrc, aIdx] = throughViews(n.operands[0], operandIndex(a.shape, L.m, L.kk), id);
      if (aSrc < 0)
        return false;
      auto [bSrc, bIdx] = throughViews(n.operands[1], operandIndex(bn.shape, L.kk, L.n), id);
      if (bSrc < 0)
        return false;
      IndexExpr aOff = offsetOf(G.node(aSrc).shape, aIdx);
      IndexExpr bOff = offsetOf(G.node(bSrc).shape, bIdx);
      std::optional<int64_t> am = linearCoefficient(L.ctx, aOff, L.m), ak = linearCoefficient(L.ctx, aOff, L.kk);
      std::optional<int64_t> bk = linearCoefficient(L.ctx, bOff, L.kk), bnn = linearCoefficient(L.ctx, bOff, L.n);
      auto layoutProblem = [&](ValueId operand) {
        return fail(operand, FusionReasonKind::MatmulLayout, {operand, id}) >= 0;
      };
      if (!am || !ak)
        return layoutProblem(n.operands[0]);
      if (!bk || !bnn)
        return layoutProblem(n.operands[1]);
      mm.aBase = zeroAt(L.ctx, aOff, {L.m, L.kk});
      mm.bBase = zeroAt(L.ctx, bOff, {L.kk, L.n});
      mm.aStrideM = *am;
      mm.aStrideK = *ak;
      mm.bStrideK = *bk;
      mm.bStrideN = *bnn;
      mm.aParam = paramFor(aSrc, false);
      mm.bParam = paramFor(bSrc, false);
      L.matmul = mm;
    }
    return true;
  }

  Index reshapedIndex(const Shape &from, const Index &idx, const Shape &to) {
    return minijit::reshapedIndex(L.ctx, from, idx, to);
  }

  /// Lowers `root` and stores it; false when lowering failed.
  bool addStore(ValueId root) {
    const Node &n = G.node(root);
    Index idx;
    if (n.shape == KG.domain) {
      idx = DomainIdx;
    } else if (KG.kind == KernelKind::Matmul) {
      // An epilogue after a reshape of the product ([B*S, H] back to
      // [B, S, H]): the root's element of the same flat position.
      idx = reshapedIndex(KG.domain, DomainIdx, n.shape);
    } else {
      assert(isRowKernel(KG.kind) && "pointwise roots have the domain's shape");
      idx = rowRootIndex(KG.domain, KG.reducedAxes, DomainIdx, n.shape);
    }
    int v = value(root, idx);
    if (v < 0)
      return false;
    KStore s;
    s.param = paramFor(root, true);
    s.offset = offsetOf(n.shape, idx);
    s.value = v;
    s.perRow = isRowKernel(L.kind) && !L.ctx.mentions(s.offset, L.k);
    L.stores.push_back(s);
    return true;
  }

  void finish() {
    if (Extent)
      L.symbolic = symbolicExtent(G, KG, L.params, *Extent);
    L.passes = passesOf(L);
    int64_t big = int64_t(1) << 31;
    L.index64 = L.numel >= big || L.rows * L.K >= big;
    for (const KParam &p : L.params)
      L.index64 = L.index64 || p.numel >= big;
    for (const KValue &v : L.values)
      if (v.kind == KValue::Kind::Compute && !v.perRow)
        ++L.flopsPerElement;
    L.flopsPerElement += static_cast<int64_t>(L.reductions.size());
    if (L.matmul)
      L.flopsPerElement += 2 * L.matmul->K;
  }

  const Graph &G;
  const FusionPlan &Plan;
  const KernelGroup &KG;
  const LoweringOptions &Options;
  std::vector<bool> InKernel;
  LoweredKernel L;
  Index DomainIdx;
  std::map<std::string, int> Memo;
  llvm::StringSet<> UsedParamNames;
  std::optional<StoreRequest> Problem; ///< the first value found to need a store
  std::optional<Dim> Extent; ///< the outer extent with its names (buildDomain)
};

} // namespace

LoweringResult lowerKernel(const Graph &g, const FusionPlan &plan, int index,
                           const LoweringOptions &options) {
  if (isAttentionKind(plan.kernels[index].kind))
    return lowerAttention(g, plan, index, options);
  Lowerer l(g, plan, index, options);
  return l.run();
}

} // namespace minijit
