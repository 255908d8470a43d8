//===- compiler/lower/Lowering.cpp - a kernel as loads, math and stores ---------===//
// Evaluates each stored value of a kernel "at an index": views turn the index
// into their operand's index, elementwise ops broadcast it to their operands,
// a reduction's value is available only at the row being reduced, and values
// stored by other kernels (or inputs) are loaded. Each (value, index) pair is
// lowered once. What no kernel of this plan can do is returned as the value
// to store first (a StoreRequest); lowering stops at the first one.
//===----------------------------------------------------------------------===//
#include "compiler/lower/Lowering.h"

#include "compiler/lower/CudaNames.h"
#include "compiler/Mutation.h"

#include "ir/Error.h"
#include "ir/Printer.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>

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
  case KernelKind::Matmul: return k.matmul->M;
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

int64_t KernelGroup::rows() const {
  if (!isRowKernel(kind))
    return 1;
  int64_t r = 1;
  for (unsigned d = 0; d < domain.rank(); ++d)
    if (!llvm::is_contained(reducedAxes, d))
      r *= domain[d];
  return r;
}

int64_t KernelGroup::reducedSize() const {
  if (!isRowKernel(kind))
    return 1;
  int64_t k = 1;
  for (int64_t a : reducedAxes)
    k *= domain[a];
  return k;
}

namespace {

using Index = std::vector<IndexExpr>;

class Lowerer {
public:
  Lowerer(const Graph &g, const FusionPlan &plan, int index)
      : G(g), Plan(plan), KG(plan.kernels[index]), InKernel(g.size(), false) {
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

  /// Named dimensions only ahead of numbered ones: every stride of such a
  /// shape is a number, so its named sizes only count its outer rows.
  static bool namesLead(const Shape &s) {
    bool numbers = false;
    for (unsigned d = 0; d < s.rank(); ++d) {
      if (s.dim(d).isNamed() && numbers)
        return false;
      numbers = numbers || !s.dim(d).isNamed();
    }
    return true;
  }

  /// Marks the kernel's outer extent `extent` symbolic when it has names
  /// and they only count rows: named dimensions lead the domain and every
  /// buffer the kernel reads or writes, so no stride or row length depends
  /// on them and a schedule chosen for a larger size of the bucket is valid
  /// for this one. Otherwise the kernel is compiled for the sizes bound.
  void setSymbolic(const Dim &extent) {
    if (!extent.isNamed() || !namesLead(KG.domain))
      return;
    if (KG.kind != KernelKind::Matmul)
      for (unsigned d = 0; d < KG.domain.rank(); ++d)
        if (KG.domain.dim(d).isNamed() && llvm::is_contained(KG.reducedAxes, d))
          return; // a named row length
    for (const KParam &p : L.params)
      if (!namesLead(G.node(p.node).shape))
        return;
    KSymbolic s;
    s.extent = extent.expr();
    for (const std::string &n : s.extent.names)
      if (!llvm::is_contained(s.names, n))
        s.names.push_back(n);
    for (const std::string &n : s.names) {
      std::optional<int64_t> v = boundSize(n);
      if (!v)
        return; // no dimension of the graph is that name alone: compiled for its value
      s.values.push_back(*v);
    }
    L.symbolic = std::move(s);
  }

  /// The bound value of named dimension `name`, from a dimension of the
  /// graph that is exactly that name.
  std::optional<int64_t> boundSize(const std::string &name) const {
    for (const Node &n : G.nodes())
      for (unsigned d = 0; d < n.shape.rank(); ++d) {
        Dim dim = n.shape.dim(d);
        if (dim.isNamed() && dim.expr().coef == 1 && dim.expr().names.size() == 1 &&
            dim.expr().names[0] == name)
          return dim.size();
      }
    return std::nullopt;
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

  IndexExpr offsetOf(const Shape &s, const Index &idx) {
    auto strides = s.strides();
    IndexExpr off = IndexExpr::constant(0);
    for (unsigned d = 0; d < s.rank(); ++d)
      off = L.ctx.add(off, L.ctx.mul(idx[d], strides[d]));
    return off;
  }

  /// Dimension `from` of an operand stretches to dimension `to` of a
  /// result: it is 1 and not the same named size as `to`. A named size
  /// bound to 1 read where the result has that same name takes the result's
  /// index (the kernel text stays that of the name's bucket); read where a
  /// pass stretched it to another size (a bound graph broadcasts by value),
  /// it stretches.
  static bool stretches(const Dim &from, const Dim &to) {
    return from.size() == 1 && !(from.isNamed() && to.isNamed() && from.expr() == to.expr());
  }

  Index broadcastIndex(const Shape &from, const Shape &to, const Index &idx) {
    Index out;
    unsigned off = to.rank() - from.rank();
    for (unsigned i = 0; i < from.rank(); ++i)
      out.push_back(stretches(from.dim(i), to.dim(off + i)) ? IndexExpr::constant(0)
                                                             : idx[off + i]);
    mutateBroadcastIndex(L.ctx, out, from, to); // a test hook (compiler/Mutation.h)
    return out;
  }

  Index viewOperandIndex(const Node &n, const Index &idx) {
    const Shape &in = G.node(n.operands[0]).shape;
    switch (n.op) {
    case OpKind::Broadcast: return broadcastIndex(in, n.shape, idx);
    case OpKind::Permute: {
      Index out(in.rank());
      for (unsigned i = 0; i < n.perm.size(); ++i)
        out[n.perm[i]] = idx[i];
      return out;
    }
    case OpKind::Slice: {
      Index out = idx;
      out[n.axis] = L.ctx.add(L.ctx.mul(idx[n.axis], n.step), IndexExpr::constant(n.start));
      return out;
    }
    case OpKind::Pad: {
      // Where the predicate (padTests) fails, any index in bounds will do.
      Index out;
      for (unsigned d = 0; d < in.rank(); ++d)
        out.push_back(L.ctx.clamp(L.ctx.add(idx[d], IndexExpr::constant(-n.before[d])), in[d] - 1));
      return out;
    }
    case OpKind::Flip: {
      Index out = idx;
      for (int64_t a : n.axes)
        out[a] = L.ctx.add(L.ctx.mul(idx[a], -1), IndexExpr::constant(in[a] - 1));
      return out;
    }
    case OpKind::Reshape:
      return reshapedIndex(n.shape, idx, in);
    // not views
    case OpKind::Input: case OpKind::Constant: case OpKind::Neg: case OpKind::Abs:
    case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt:
    case OpKind::Rsqrt: case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh:
    case OpKind::Sigmoid: case OpKind::Erf: case OpKind::Relu: case OpKind::Recip:
    case OpKind::Floor: case OpKind::Ceil: case OpKind::RoundTf32: case OpKind::Not: case OpKind::Add: case OpKind::Sub:
    case OpKind::Mul: case OpKind::Div: case OpKind::Pow: case OpKind::Maximum:
    case OpKind::Minimum: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le:
    case OpKind::Gt: case OpKind::Ge: case OpKind::And: case OpKind::Or: case OpKind::Where:
    case OpKind::Cast: case OpKind::Sum: case OpKind::Mean: case OpKind::Max: case OpKind::Min:
    case OpKind::Prod: case OpKind::Matmul: case OpKind::Grad: case OpKind::Vjp:
    case OpKind::Concat: case OpKind::Iota: case OpKind::Take: case OpKind::TakeAlongAxis:
    case OpKind::Argmax: case OpKind::Argmin: case OpKind::Cumsum: case OpKind::Cumprod:
    case OpKind::Expm1: case OpKind::Log1p: case OpKind::Full: case OpKind::Rand:
    case OpKind::Randn: case OpKind::Dropout: break;
    }
    llvm_unreachable("not a view");
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
    // Context and stage follow from the operands.
    switch (v.kind) {
    case KValue::Kind::Literal:
      v.perRow = true;
      v.stage = 0;
      break;
    case KValue::Kind::Load:
      v.perRow = isRowKernel(L.kind) && !L.ctx.mentions(v.offset, L.k);
      v.stage = 0;
      for (int a : v.args) { // a gather's index values
        v.perRow = v.perRow && L.values[a].perRow;
        v.stage = std::max(v.stage, L.values[a].stage);
        L.elementIndexed = L.elementIndexed || !L.values[a].perRow;
      }
      break;
    case KValue::Kind::Compute:
      v.perRow = isRowKernel(L.kind);
      v.stage = 0;
      for (int a : v.args) {
        v.perRow = v.perRow && L.values[a].perRow;
        v.stage = std::max(v.stage, L.values[a].stage);
      }
      break;
    case KValue::Kind::ReduceResult:
      v.perRow = !isScan(L.reductions[v.reduction].op); // a scan's result is per element
      v.stage = L.reductions[v.reduction].pass + 1;
      break;
    case KValue::Kind::MatmulResult:
      v.perRow = false;
      v.stage = 0;
      break;
    case KValue::Kind::Index:
      v.perRow = isRowKernel(L.kind) && !L.ctx.mentions(v.offset, L.k) &&
                 llvm::all_of(v.args, [&](int a) { return L.values[a].perRow; });
      v.stage = 0;
      for (int a : v.args)
        v.stage = std::max(v.stage, L.values[a].stage);
      break;
    case KValue::Kind::InRange:
      // per row when neither the tests nor the index values they read
      // depend on the reduced position
      v.dtype = DType::Bool;
      v.perRow = isRowKernel(L.kind) &&
                 llvm::none_of(v.tests, [&](const KValue::Test &t) { return L.ctx.mentions(t.e, L.k); }) &&
                 llvm::all_of(v.args, [&](int a) { return L.values[a].perRow; });
      v.stage = 0;
      for (int a : v.args)
        v.stage = std::max(v.stage, L.values[a].stage);
      break;
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
        at.push_back(stretches(is.dim(d), n.shape.dim(d)) ? IndexExpr::constant(0) : idx[d]);
        in.push_back(stretches(xs.dim(d), n.shape.dim(d)) ? IndexExpr::constant(0) : idx[d]);
      }
    }
    int index = value(n.operands[1], at);
    if (index < 0)
      return -1;
    in[n.axis] = L.ctx.clamp(L.ctx.value(index), xs[n.axis] - 1);
    return value(n.operands[0], in);
  }

  /// A scan: its kernel's own (Scan kernels hold one scan domain), read at
  /// the element it computes.
  int scanResult(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    if (KG.kind != KernelKind::Scan || n.shape != KG.domain || KG.reducedAxes[0] != n.axis)
      return fail(id, FusionReasonKind::ScanOwnKernel, {id});
    if (indexKey(id, idx) != indexKey(id, DomainIdx))
      return fail(id, FusionReasonKind::ScanOwnKernel, {id});
    int r = -1;
    for (size_t i = 0; i < L.reductions.size(); ++i)
      if (L.reductions[i].node == id)
        r = static_cast<int>(i);
    if (r < 0) {
      int input = value(n.operands[0], DomainIdx);
      if (input < 0)
        return -1;
      // Every scan's input is computed before the kernel's scans run: a scan
      // of a scan reads the inner one from memory.
      if (L.values[input].stage != 0)
        return fail(n.operands[0], FusionReasonKind::ScanOwnKernel, {n.operands[0]});
      L.reductions.push_back({id, n.name, n.dtype, n.op, input, 0});
      r = static_cast<int>(L.reductions.size() - 1);
    }
    KValue v;
    v.kind = KValue::Kind::ReduceResult;
    v.node = id;
    v.reduction = r;
    return addValue(v);
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
    int r = -1;
    for (size_t i = 0; i < L.reductions.size(); ++i)
      if (L.reductions[i].node == id)
        r = static_cast<int>(i);
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
    KValue v;
    v.kind = KValue::Kind::ReduceResult;
    v.node = id;
    v.reduction = r;
    return addValue(v);
  }

  /// The coefficient of variable `v` in `e` when `v` appears only as a
  /// plain term (not inside a division or remainder): e - e[v := 0] must be
  /// exactly coef * v.
  std::optional<int64_t> linearCoefficient(const IndexExpr &e, const IndexExpr &v) {
    std::string name = L.ctx.str(v);
    IndexExpr at0 = L.ctx.substitute(e, [&](const std::string &n) -> std::optional<IndexExpr> {
      if (n == name)
        return IndexExpr::constant(0);
      return std::nullopt;
    });
    IndexExpr diff = L.ctx.add(e, L.ctx.mul(at0, -1));
    if (diff.terms().empty() && diff.constantTerm() == 0)
      return 0;
    if (diff.terms().size() != 1 || diff.constantTerm() != 0)
      return std::nullopt;
    int64_t coef = diff.terms()[0].second;
    if (diff.key() != L.ctx.mul(v, coef).key())
      return std::nullopt;
    return coef;
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
          out.push_back(stretches(s.dim(d), n.shape.dim(off + d)) ? IndexExpr::constant(0)
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
      std::optional<int64_t> am = linearCoefficient(aOff, L.m), ak = linearCoefficient(aOff, L.kk);
      std::optional<int64_t> bk = linearCoefficient(bOff, L.kk), bnn = linearCoefficient(bOff, L.n);
      auto layoutProblem = [&](ValueId operand) {
        return fail(operand, FusionReasonKind::MatmulLayout, {operand, id}) >= 0;
      };
      if (!am || !ak)
        return layoutProblem(n.operands[0]);
      if (!bk || !bnn)
        return layoutProblem(n.operands[1]);
      auto zero = [&](const IndexExpr &e, const IndexExpr &v1, const IndexExpr &v2) {
        std::string n1 = L.ctx.str(v1), n2 = L.ctx.str(v2);
        return L.ctx.substitute(e, [&](const std::string &nm) -> std::optional<IndexExpr> {
          if (nm == n1 || nm == n2)
            return IndexExpr::constant(0);
          return std::nullopt;
        });
      };
      mm.aBase = zero(aOff, L.m, L.kk);
      mm.bBase = zero(bOff, L.kk, L.n);
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

  /// The index into `to` of the element at index `idx` of `from`, counted
  /// in row-major order (the same number of elements).
  Index reshapedIndex(const Shape &from, const Index &idx, const Shape &to) {
    IndexExpr lin = offsetOf(from, idx);
    auto strides = to.strides();
    Index out;
    for (unsigned d = 0; d < to.rank(); ++d)
      out.push_back(L.ctx.mod(L.ctx.div(lin, strides[d]), to[d]));
    return out;
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
      // A row-shaped root of a reduction kernel (keepdim or not).
      assert(isRowKernel(KG.kind) && "pointwise roots have the domain's shape");
      bool keepdim = n.shape.rank() == KG.domain.rank();
      for (unsigned d = 0; d < KG.domain.rank(); ++d) {
        bool reduced = llvm::is_contained(KG.reducedAxes, d);
        if (!reduced)
          idx.push_back(DomainIdx[d]);
        else if (keepdim)
          idx.push_back(IndexExpr::constant(0));
      }
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
      setSymbolic(*Extent);
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
  std::vector<bool> InKernel;
  LoweredKernel L;
  Index DomainIdx;
  std::map<std::string, int> Memo;
  llvm::StringSet<> UsedParamNames;
  std::optional<StoreRequest> Problem; ///< the first value found to need a store
  std::optional<Dim> Extent; ///< the outer extent with its names (buildDomain)
};

} // namespace

LoweringResult lowerKernel(const Graph &g, const FusionPlan &plan, int index) {
  Lowerer l(g, plan, index);
  return l.run();
}

} // namespace minijit

namespace minijit {

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

std::vector<uint32_t> passesUsing(const LoweredKernel &k) {
  std::vector<uint32_t> use(k.values.size(), 0);
  auto mark = [&](int v, int pass) {
    if (!k.values[v].perRow || k.kind == KernelKind::Pointwise)
      use[v] |= 1u << pass;
  };
  for (const KReduction &r : k.reductions)
    mark(r.input, r.pass);
  for (const KStore &s : k.stores)
    if (!s.perRow)
      mark(s.value, k.kind == KernelKind::Pointwise ? 0 : k.values[s.value].stage);
  // Operands of an element value are needed in the same passes.
  for (size_t i = k.values.size(); i-- > 0;) {
    if (!use[i])
      continue;
    for (int a : k.values[i].args)
      if (!k.values[a].perRow || k.kind == KernelKind::Pointwise)
        use[a] |= use[i];
  }
  return use;
}

} // namespace minijit
