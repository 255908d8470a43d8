//===- compiler/Lowering.cpp - a kernel as loads, math and stores ---------===//
// Evaluates each stored value of a kernel "at an index": views turn the index
// into their operand's index, elementwise ops broadcast it to their operands,
// a reduction's value is available only at the row being reduced, and values
// stored by other kernels (or inputs) are loaded. Each (value, index) pair is
// lowered once.
//===----------------------------------------------------------------------===//
#include "compiler/Lowering.h"

#include "ir/Error.h"
#include "ir/Printer.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace minijit {

int64_t KernelGroup::rows() const {
  if (kind != KernelKind::Reduction)
    return 1;
  int64_t r = 1;
  for (unsigned d = 0; d < domain.rank(); ++d)
    if (!llvm::is_contained(reducedAxes, d))
      r *= domain[d];
  return r;
}

int64_t KernelGroup::reducedSize() const {
  if (kind != KernelKind::Reduction)
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
    for (ValueId v : KG.held)
      InKernel[v] = true;
  }

  LoweredKernel run() {
    buildDomain();
    for (ValueId r : KG.roots) {
      try {
        addStore(r);
      } catch (NeedsStore &p) {
        p.root = r;
        throw;
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
      L.m = L.ctx.var("m", dom[r - 2]);
      L.n = L.ctx.var("n", dom[r - 1]);
      decompose(L.b, batch, batchDims);
      DomainIdx[r - 2] = L.m;
      DomainIdx[r - 1] = L.n;
      L.numel = dom.numel();
      return;
    }
    if (KG.kind == KernelKind::Pointwise) {
      L.numel = dom.numel();
      L.elem = L.ctx.var("i", L.numel);
      llvm::SmallVector<unsigned, kMaxRank> all;
      for (unsigned d = 0; d < dom.rank(); ++d)
        all.push_back(d);
      decompose(L.elem, dom.dims(), all);
      return;
    }
    llvm::SmallVector<unsigned, kMaxRank> kept, red;
    DimVector keptSizes, redSizes;
    for (unsigned d = 0; d < dom.rank(); ++d) {
      if (llvm::is_contained(KG.reducedAxes, d)) {
        red.push_back(d);
        redSizes.push_back(dom[d]);
      } else {
        kept.push_back(d);
        keptSizes.push_back(dom[d]);
      }
    }
    L.rows = KG.rows();
    L.K = KG.reducedSize();
    L.row = L.ctx.var("row", L.rows);
    L.k = L.ctx.var("k", L.K);
    decompose(L.row, keptSizes, kept);
    decompose(L.k, redSizes, red);
  }

  /// Sets DomainIdx[dims[i]] from a flat index over `sizes` (row-major).
  void decompose(const IndexExpr &flat, llvm::ArrayRef<int64_t> sizes,
                 llvm::ArrayRef<unsigned> dims) {
    int64_t inner = 1;
    for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
      DomainIdx[dims[i]] = L.ctx.mod(L.ctx.div(flat, inner), sizes[i]);
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

  Index broadcastIndex(const Shape &from, const Shape &to, const Index &idx) {
    Index out;
    unsigned off = to.rank() - from.rank();
    for (unsigned i = 0; i < from.rank(); ++i)
      out.push_back(from[i] == 1 ? IndexExpr::constant(0) : idx[off + i]);
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
    case OpKind::Reshape: {
      IndexExpr lin = offsetOf(n.shape, idx);
      auto inStrides = in.strides();
      Index out;
      for (unsigned d = 0; d < in.rank(); ++d)
        out.push_back(L.ctx.mod(L.ctx.div(lin, inStrides[d]), in[d]));
      return out;
    }
    default: break;
    }
    llvm_unreachable("not a view");
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
    p.dtype = n.dtype;
    p.numel = n.shape.numel();
    L.params.push_back(p);
    return static_cast<int>(L.params.size() - 1);
  }

  int addValue(KValue v) {
    // Context and stage follow from the operands.
    switch (v.kind) {
    case KValue::Kind::Literal:
      v.perRow = true;
      v.stage = 0;
      break;
    case KValue::Kind::Load:
      v.perRow = L.kind == KernelKind::Reduction && !L.ctx.mentions(v.offset, L.k);
      v.stage = 0;
      break;
    case KValue::Kind::Compute:
      v.perRow = L.kind == KernelKind::Reduction;
      v.stage = 0;
      for (int a : v.args) {
        v.perRow = v.perRow && L.values[a].perRow;
        v.stage = std::max(v.stage, L.values[a].stage);
      }
      break;
    case KValue::Kind::ReduceResult:
      v.perRow = true;
      v.stage = L.reductions[v.reduction].pass + 1;
      break;
    case KValue::Kind::MatmulResult:
      v.perRow = false;
      v.stage = 0;
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

  int value(ValueId id, const Index &idx) {
    std::string key = indexKey(id, idx);
    auto it = Memo.find(key);
    if (it != Memo.end())
      return it->second;
    const Node &n = G.node(id);
    int result;
    if (n.op == OpKind::Constant) {
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
      result = addValue(v);
    } else {
      switch (n.cls()) {
      case OpClass::View: result = value(n.operands[0], viewOperandIndex(n, idx)); break;
      case OpClass::Unary:
      case OpClass::Binary:
      case OpClass::Select:
      case OpClass::Cast: {
        KValue v;
        v.kind = KValue::Kind::Compute;
        v.node = id;
        for (ValueId o : n.operands)
          v.args.push_back(value(o, broadcastIndex(G.node(o).shape, n.shape, idx)));
        result = addValue(v);
        break;
      }
      case OpClass::Reduce: result = reduceResult(id, idx); break;
      case OpClass::Matmul: result = matmulResult(id, idx); break;
      case OpClass::Input:
      case OpClass::Constant:
        llvm_unreachable("handled above");
      case OpClass::Derivative: llvm_unreachable("autodiff runs before lowering");
      }
    }
    Memo[key] = result;
    return result;
  }

  int reduceResult(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    const Shape &in = G.node(n.operands[0]).shape;
    if (KG.kind != KernelKind::Reduction || in != KG.domain ||
        !llvm::equal(n.axes, KG.reducedAxes))
      throw NeedsStore{id, llvm::formatv("reduction %{0} reduces {1} over axes {2}, another "
                                         "domain than its consumer's kernel",
                                         n.name, in.str(), Shape(n.axes).str())
                               .str()};
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
      throw NeedsStore{id, llvm::formatv("reduction %{0} is read at another row than the one it "
                                         "reduces (a view moves its rows)",
                                         n.name)
                               .str()};
    int r = -1;
    for (size_t i = 0; i < L.reductions.size(); ++i)
      if (L.reductions[i].node == id)
        r = static_cast<int>(i);
    if (r < 0) {
      int input = value(n.operands[0], DomainIdx);
      // Its input is stored instead, and the reduction starts a new kernel.
      if (L.values[input].stage + 1 >= kMaxPasses)
        throw NeedsStore{n.operands[0],
                         llvm::formatv("reduction %{0} would be pass {1} of one kernel; a kernel "
                                       "makes at most {2} passes over its rows",
                                       n.name, L.values[input].stage + 1, kMaxPasses)
                             .str()};
      KReduction red{id, n.op, input, L.values[input].stage};
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

  /// Follows views held by the kernel down to a value read from memory.
  std::pair<ValueId, Index> throughViews(ValueId id, Index idx, ValueId matmul) {
    while (G.node(id).cls() == OpClass::View && InKernel[id]) {
      idx = viewOperandIndex(G.node(id), idx);
      id = G.node(id).operands[0];
    }
    const Node &n = G.node(id);
    if (n.op != OpKind::Input && InKernel[id])
      throw NeedsStore{id, llvm::formatv("%{0} is an operand of matmul %{1}: matmul operands are "
                                         "read from memory",
                                         n.name, G.node(matmul).name)
                               .str()};
    return {id, idx};
  }

  int matmulResult(ValueId id, const Index &idx) {
    const Node &n = G.node(id);
    if (KG.kind != KernelKind::Matmul || KG.matmul != id)
      throw NeedsStore{id, llvm::formatv("matmul %{0} runs in a kernel of its own", n.name).str()};
    if (indexKey(id, idx) != indexKey(id, DomainIdx))
      throw NeedsStore{id, llvm::formatv("matmul %{0} is read at another element than the one it "
                                         "computes (a view moves it)",
                                         n.name)
                               .str()};
    if (!L.matmul) {
      const Node &a = G.node(n.operands[0]), &bn = G.node(n.operands[1]);
      unsigned r = n.shape.rank();
      int64_t k = a.shape[a.shape.rank() - 1];
      L.kk = L.ctx.var("kk", k);
      auto operandIndex = [&](const Shape &s, const IndexExpr &row, const IndexExpr &col) {
        Index out;
        unsigned batchRank = s.rank() - 2, off = (r - 2) - batchRank;
        for (unsigned d = 0; d < batchRank; ++d)
          out.push_back(s[d] == 1 ? IndexExpr::constant(0) : DomainIdx[off + d]);
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
      auto [bSrc, bIdx] = throughViews(n.operands[1], operandIndex(bn.shape, L.kk, L.n), id);
      IndexExpr aOff = offsetOf(G.node(aSrc).shape, aIdx);
      IndexExpr bOff = offsetOf(G.node(bSrc).shape, bIdx);
      std::optional<int64_t> am = linearCoefficient(aOff, L.m), ak = linearCoefficient(aOff, L.kk);
      std::optional<int64_t> bk = linearCoefficient(bOff, L.kk), bnn = linearCoefficient(bOff, L.n);
      auto layoutProblem = [&](ValueId operand) {
        return NeedsStore{operand, llvm::formatv("%{0}, an operand of matmul %{1}, has no row and "
                                                 "column strides (a reshape mixes them); it is "
                                                 "stored first",
                                                 G.node(operand).name, n.name)
                                       .str()};
      };
      if (!am || !ak)
        throw layoutProblem(n.operands[0]);
      if (!bk || !bnn)
        throw layoutProblem(n.operands[1]);
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
    KValue v;
    v.kind = KValue::Kind::MatmulResult;
    v.node = id;
    return addValue(v);
  }

  void addStore(ValueId root) {
    const Node &n = G.node(root);
    Index idx;
    if (n.shape == KG.domain) {
      idx = DomainIdx;
    } else {
      // A row-shaped root of a reduction kernel (keepdim or not).
      assert(KG.kind == KernelKind::Reduction && "pointwise roots have the domain's shape");
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
    KStore s;
    s.param = paramFor(root, true);
    s.offset = offsetOf(n.shape, idx);
    s.value = v;
    s.perRow = L.kind == KernelKind::Reduction && !L.ctx.mentions(s.offset, L.k);
    L.stores.push_back(s);
  }

  void finish() {
    int maxPass = -1;
    for (const KReduction &r : L.reductions)
      maxPass = std::max(maxPass, r.pass);
    for (const KStore &s : L.stores)
      if (!s.perRow)
        maxPass = std::max(maxPass, L.values[s.value].stage);
    L.passes = std::max(1, maxPass + 1);
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
};

} // namespace

std::string cudaIdentifier(llvm::StringRef irName) {
  std::string s;
  for (char c : irName)
    s += (c == '.') ? '_' : c;
  if (s.empty() || (s[0] >= '0' && s[0] <= '9'))
    s = "v" + s;
  llvm::StringRef r(s);
  if (r.startswith("mj_") || r.startswith("MJ_") || r.startswith("Mj") || r.startswith("__"))
    s = "v_" + s;
  return s;
}

bool isReservedName(llvm::StringRef name) {
  static const llvm::StringSet<> names = {
      // C++ and CUDA words a value name could collide with
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char",
      "class", "const", "constexpr", "const_cast", "continue", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace",
      "new", "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public",
      "register", "reinterpret_cast", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "throw", "true",
      "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void",
      "volatile", "while", "xor", "half", "dim3", "threadIdx", "blockIdx", "blockDim", "gridDim",
      "warpSize", "min", "max", "uint2", "uint4", "float4", "int4",
      // the emitter's own locals
      "i", "vi", "row", "rowRaw", "rowValid", "k", "kv", "lane", "it", "j", "item", "first",
      "part", "b", "m", "n", "kk", "acc", "tile", "warp", "wm", "wn", "m0", "n0", "mi", "ni", "c",
      "t", "s", "p", "ii", "jj", "As", "Bs", "aBatch", "bBatch", "group", "firstM", "groupRows",
      "kTiles", "tx", "ty", "gm", "gn", "gk", "r", "e", "ok", "af", "bfr", "k0", "k16", "ar",
      "br", "loadTiles"};
  return names.count(name) > 0;
}

LoweredKernel lowerKernel(const Graph &g, const FusionPlan &plan, int index) {
  Lowerer l(g, plan, index);
  return l.run();
}

} // namespace minijit

namespace minijit {

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
