//===- compiler/simplify/MatmulRewrites.cpp - products in a cheaper form --------===//
// One walk in graph order copies the graph, replacing the products the
// rewrites apply to; a second pads the operands of the products left. A value
// that is rewritten keeps its name (on the last node of its new form), so
// outputs and --emit texts still name it. Here: the walk, the products in a
// cheaper form, and the rule of the TF32 split.
//===----------------------------------------------------------------------===//
#include "compiler/simplify/MatmulRewrites.h"
#include "compiler/simplify/MatmulRewritesInternal.h"
#include "compiler/simplify/Simplify.h"
#include "compiler/simplify/SumThroughLinear.h"

#include "ir/Limits.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

namespace minijit {

std::string MatmulRewrite::text() const {
  switch (kind) {
  case MatmulRewriteKind::NarrowProduct:
    return "%" + value + ": a product of one output row or column, as an elementwise product "
                         "and a sum over k (the matrix read once)";
  case MatmulRewriteKind::OuterProduct:
    return "%" + value + ": a product over k = 1, as an elementwise product of a column by a row "
                         "(a pointwise kernel)";
  case MatmulRewriteKind::FewTermsSum:
    return "%" + value + ": a product over k = " + detail +
           ", as a sum over k of its terms (a reduction: the pointwise form's chain of views "
           "would pass ir/Limits.h's)";
  case MatmulRewriteKind::FewTerms:
    return "%" + value + ": a product over k = " + detail +
           ", as a sum of k columns times rows (a pointwise kernel, no tile of k-steps)";
  case MatmulRewriteKind::SumOfProduct:
    return "%" + value + ": a sum over a product's columns (rows), as the product with the "
                         "operand summed first (reassociates)";
  case MatmulRewriteKind::SumThroughLinear:
    return "%" + value + ": a sum of a product's linear function (scaled, shifted), moved onto the "
                         "product and the linear ops applied to the sum (reassociates)";
  case MatmulRewriteKind::ScalarFactor:
    return "%" + value + ": a scalar factor of an operand moved after the product, into its "
                         "epilogue (reassociates)";
  case MatmulRewriteKind::AlignedRows:
    return "%" + value + ": 16-bit operands whose rows are not whole 16-byte units copied into "
                         "padded rows first (TMA reads only aligned rows)";
  case MatmulRewriteKind::Float4Rows:
    return "%" + value + ": f32 operands whose rows are not whole float4s copied into padded "
                         "rows first (k padded with zeros), so the tiles are read by float4s";
  case MatmulRewriteKind::MonotoneArg:
    return "%" + value + ": " + detail;
  case MatmulRewriteKind::SplitK:
    return "%" + value + ": an f32 product of too few tiles to fill the SMs, split along k (" +
           detail + "), a batch of products and a sum over it (split-K; reassociates)";
  case MatmulRewriteKind::Tf32Operands:
    return "%" + value + ": f32 operands copied k-major in rows of whole 16-byte units (" +
           detail + "), as TF32's wgmma reads them";
  case MatmulRewriteKind::Tf32x3:
    return "%" + value + ": an f32 product as three TF32 products on the tensor cores (" + detail +
           "; each operand x = hi + lo, hi = round_tf32(x), lo = round_tf32(x - hi): "
           "A@B = Ahi@Bhi + Ahi@Blo + Alo@Bhi, one product of the parts side by side along k)";
  }
  llvm_unreachable("bad rewrite kind");
}

int64_t sliceDepth(int64_t k, int64_t slices) { return ((k + slices - 1) / slices + 7) / 8 * 8; }

std::pair<std::string, std::string> tf32x3PartsNames(const std::string &prefix) {
  return {prefix + ".a.parts", prefix + ".b.parts_t"};
}

bool tf32x3Pays(int64_t m, int64_t n, int64_t k) {
  // Per batch, the CUDA cores' time grows with mnk; the split's with
  // k(m + n) (each operand read once, its three parts written, then read by
  // the product: 28 bytes an element of A and B) plus about half of the
  // CUDA cores' time (3 * 2mnk on the tensor cores, promoted). So the
  // split's share of the CUDA cores' time falls as a + b / (mn / (m + n)).
  // On the H100 every product measured past 300 ran a quarter faster split
  // or more; at 254 and 256 3-4 % faster, at 192 14 % slower
  // (docs/PERFORMANCE_LOG.md, "Where three TF32 products pay"). Far under
  // the line, as in an nn.Linear of 128 rows (127), the copies of the weight
  // cost more than the product saves.
  if (m * n * k < (int64_t(1) << 24))
    return false;
  return double(m) * double(n) / double(m + n) > 300.0;
}

namespace detail {

Rewriter::Rewriter(const Graph &g, const MatmulRewriteOptions &options, bool tf32)
    : G(g), Reassociate(options.reassociate), AlignRows(options.alignRows),
      Float4Rows(options.float4Rows), Tf32(tf32), Tf32x3(options.tf32x3),
      Tf32x3Always(options.tf32x3Always), FewTermsUpTo(options.fewTermsUpTo),
      FewTermsUpTo16Bit(options.fewTermsUpTo16Bit), SplitK(options.splitK),
      FewTiles(options.fewTiles), KeptProducts(options.keptProducts), Out(g.name()),
      Map(g.size(), -1), Uses(g.size(), 0), OutputUses(g.size(), 0), ViewsBelow(g.size(), 0),
      OpsBelow(g.size(), 0) {
  Out.reserveNamesOf(g);
  for (size_t i = g.size(); i-- > 0;) { // users come after their operands
    const Node &u = g.node(static_cast<ValueId>(i));
    bool resets = u.cls() == OpClass::Reduce || u.cls() == OpClass::Matmul;
    unsigned views = resets ? 0 : ViewsBelow[i] + (u.cls() == OpClass::View);
    for (ValueId o : u.operands) {
      ViewsBelow[o] = std::max(ViewsBelow[o], views);
      OpsBelow[o] = std::max(OpsBelow[o], OpsBelow[i] + 1);
    }
  }
  for (const Node &n : g.nodes())
    for (ValueId o : n.operands)
      ++Uses[o];
  for (ValueId o : g.outputs()) {
    ++Uses[o];
    ++OutputUses[o];
  }
}

MatmulRewriteResult Rewriter::run() {
  for (size_t i = 0; i < G.size(); ++i)
    Map[i] = copy(static_cast<ValueId>(i));
  copyOutputs(G, Map, Out);
  return {std::move(Out), std::move(Applied)};
}

ValueId Rewriter::add(NodeSpec s) {
  if (!s.name.empty() && Out.lookup(s.name))
    s.name.clear();
  return Out.add(s);
}

ValueId Rewriter::cast(ValueId v, DType t, const std::string &name) {
  if (out(v).dtype == t)
    return v;
  NodeSpec s;
  s.op = OpKind::Cast;
  s.operands = {v};
  s.dtype = t;
  s.name = name;
  return add(s);
}

ValueId Rewriter::reshape(ValueId v, const Shape &shape, const std::string &name) {
  if (out(v).shape == shape && name.empty())
    return v;
  NodeSpec s;
  s.op = OpKind::Reshape;
  s.operands = {v};
  s.shape = shape;
  s.name = name;
  return add(s);
}

ValueId Rewriter::binary(OpKind op, ValueId a, ValueId b, const std::string &name) {
  NodeSpec s;
  s.op = op;
  s.operands = {a, b};
  s.name = name;
  return add(s);
}

ValueId Rewriter::reduce(OpKind op, ValueId v, int64_t axis, bool keepdim,
                         const std::string &name) {
  NodeSpec s;
  s.op = op;
  s.operands = {v};
  s.axes = DimVector{axis};
  s.keepdim = keepdim;
  s.name = name;
  return add(s);
}

ValueId Rewriter::finish(ValueId v, DType t, const Shape &shape, const std::string &name) {
  if (out(v).dtype == t && out(v).shape == shape && out(v).name == name)
    return v; // the sum was given the value's name
  if (out(v).dtype == t)
    return reshape(v, shape, name);
  return cast(reshape(v, shape), t, name);
}

Shape Rewriter::withLast2(const Shape &s, int64_t a, int64_t b) {
  DimVector d(s.dims().begin(), s.dims().end());
  d[d.size() - 2] = a;
  d[d.size() - 1] = b;
  return Shape(llvm::ArrayRef<int64_t>(d));
}

ValueId Rewriter::copy(ValueId id) {
  const Node &n = G.node(id);
  NodeSpec s = specOf(n);
  for (ValueId &o : s.operands)
    o = Map[o];
  if (n.op == OpKind::Input)
    return Out.input(n.name, n.dtype, n.shape).id();
  if (AlignRows || Float4Rows || SplitK.enabled() || Tf32 || Tf32x3) { // the last walks: products still matmuls
    if (n.op == OpKind::Matmul && kept(id))
      return add(s);
    if (n.op == OpKind::Matmul && Tf32x3) // first: the split's copies replace the others
      if (std::optional<ValueId> v = tf32x3Split(n, s.operands[0], s.operands[1]))
        return *v;
    if (n.op == OpKind::Matmul && Tf32)
      if (std::optional<ValueId> v = tf32Operands(n, s.operands[0], s.operands[1]))
        return *v;
    if (n.op == OpKind::Matmul && SplitK.enabled())
      if (std::optional<ValueId> v = splitK(n, s.operands[0], s.operands[1]))
        return *v;
    if (n.op == OpKind::Matmul && AlignRows)
      if (std::optional<ValueId> v = alignedOperands(n, s.operands[0], s.operands[1]))
        return *v;
    if (n.op == OpKind::Matmul && Float4Rows)
      if (std::optional<ValueId> v = float4Operands(n, s.operands[0], s.operands[1]))
        return *v;
    return add(s);
  }
  if (n.op == OpKind::Matmul) {
    if (std::optional<ValueId> v = narrowProduct(id, s.operands[0], s.operands[1]))
      return *v;
    if (std::optional<ValueId> v = outerProduct(id, s.operands[0], s.operands[1]))
      return *v;
    if (std::optional<ValueId> v = fewTerms(id, s.operands[0], s.operands[1]))
      return *v;
    if (Reassociate)
      if (std::optional<ValueId> v = scalarFactor(n, s.operands[0], s.operands[1]))
        return *v;
  }
  if (Reassociate && (n.op == OpKind::Sum || n.op == OpKind::Mean))
    if (std::optional<ValueId> v = sumOfProduct(n, s.operands[0]))
      return *v;
  return add(s);
}

ValueId Rewriter::sumOverK(ValueId fa, ValueId fb, const std::string &name) {
  const Shape &sa = out(fa).shape, &sb = out(fb).shape;
  int64_t K = sa[sa.rank() - 1], N = sb[sb.rank() - 1];
  if (N == 1) {
    ValueId row = reshape(fb, withLast2(sb, 1, K)); // B's column as a row
    return reduce(OpKind::Sum, binary(OpKind::Mul, fa, row), -1, true, name);
  }
  ValueId col = reshape(fa, withLast2(sa, K, 1)); // A's row as a column
  return reduce(OpKind::Sum, binary(OpKind::Mul, col, fb), -2, true, name);
}

std::optional<ValueId> Rewriter::narrowProduct(ValueId id, ValueId a, ValueId b) {
  const Node &n = G.node(id);
  const Shape &sa = out(a).shape, &sb = out(b).shape;
  if (sb[sb.rank() - 1] != 1 && sa[sa.rank() - 2] != 1)
    return std::nullopt;
  // A 16-bit product is rounded where it is stored; fused with what reads
  // it, it stays in f32. As a sum it ends in a cast that rounds, so it is
  // formed only when nothing but the graph's outputs reads it (found on the
  // H200: an epilogue after the cast rounded twice, one unit off).
  if (n.dtype != DType::F32 && Uses[id] != OutputUses[id])
    return std::nullopt;
  // (a reshape of an operand, then a product, a sum and a cast)
  if (std::max(viewsOf(a), viewsOf(b)) + 1 > kMaxViewChain ||
      !chainsFit(id, 0, std::max(opsAsF32(a), opsAsF32(b)) + 4))
    return std::nullopt;
  // The sum has the product's shape (keepdim); an f32 one is the value.
  ValueId sum = sumOverK(cast(a, DType::F32), cast(b, DType::F32),
                         n.dtype == DType::F32 ? n.name : "");
  Applied.push_back({MatmulRewriteKind::NarrowProduct, n.name, ""});
  return finish(sum, n.dtype, n.shape, n.name);
}

std::optional<ValueId> Rewriter::outerProduct(ValueId id, ValueId a, ValueId b) {
  const Node &n = G.node(id);
  const Shape &sa = out(a).shape, &sb = out(b).shape;
  if (sa[sa.rank() - 1] != 1)
    return std::nullopt;
  // k a named size bound to 1 does not broadcast against m or n as a 1 does
  if (sa.dim(sa.rank() - 1).isNamed() || sb.dim(sb.rank() - 2).isNamed())
    return std::nullopt;
  // (as narrowProduct: a 16-bit product that an epilogue would read in
  // f32 is left a product)
  if (n.dtype != DType::F32 && Uses[id] != OutputUses[id])
    return std::nullopt;
  // (no longer a matmul, the product does not start a fresh index: the
  // operands' views and those after it make one chain)
  if (!chainsFit(id, std::max(viewsOf(a), viewsOf(b)), std::max(opsAsF32(a), opsAsF32(b)) + 2))
    return std::nullopt;
  std::string name = n.name; // (adding nodes moves the graph's storage)
  DType t = n.dtype;
  Shape shape = n.shape;
  ValueId p = binary(OpKind::Mul, cast(a, DType::F32), cast(b, DType::F32),
                     t == DType::F32 ? name : "");
  Applied.push_back({MatmulRewriteKind::OuterProduct, name, ""});
  return finish(p, t, shape, name);
}

ValueId Rewriter::slice(ValueId v, int64_t axis, int64_t start, int64_t end) {
  NodeSpec s;
  s.op = OpKind::Slice;
  s.operands = {v};
  s.axis = axis;
  s.start = start;
  s.end = end;
  return add(s);
}

bool Rewriter::kept(ValueId id) {
  if (!Kept)
    Kept = KeptProducts ? KeptProducts(G) : std::vector<bool>(G.size());
  return (*Kept)[id];
}

bool Rewriter::chainsFit(ValueId id, unsigned views, unsigned ops) const {
  return views + ViewsBelow[id] <= kMaxViewChain && ops + OpsBelow[id] <= kMaxDepth;
}

std::optional<ValueId> Rewriter::fewTerms(ValueId id, ValueId a, ValueId b) {
  const Node &n = G.node(id);
  const Shape &sa = out(a).shape, &sb = out(b).shape;
  const Dim &ka = sa.dim(sa.rank() - 1), &kb = sb.dim(sb.rank() - 2);
  // (a named k has no number of terms until it is bound)
  if (ka.isNamed() || kb.isNamed())
    return std::nullopt;
  int64_t K = sa[sa.rank() - 1];
  if (K < 2 || K > (n.dtype == DType::F32 ? FewTermsUpTo : FewTermsUpTo16Bit))
    return std::nullopt;
  // (as narrowProduct: a 16-bit product that an epilogue would read in
  // f32 is left a product)
  if (n.dtype != DType::F32 && Uses[id] != OutputUses[id])
    return std::nullopt;
  // B stored [.., N, K] (x @ W.T): its rows along n are K elements apart, so
  // that each term's loads of a warp span K times the lines of a row (4x
  // slower than the product at k = 4 on the H100); the template reads it
  // along k. Attention's products stay products: fusion makes them one
  // kernel, whatever their k.
  if (operandRows(b).transposed || kept(id))
    return std::nullopt;
  // The chains each form ends: a slice more than the operands', then a
  // product, K - 1 adds and a cast (the pointwise form); a reshape more,
  // then a product, a sum and a cast (the reduction).
  unsigned views = std::max(viewsOf(a), viewsOf(b)) + 1;
  unsigned ops = std::max(opsAsF32(a), opsAsF32(b));
  bool pointwise = chainsFit(id, views, ops + 2 + static_cast<unsigned>(K));
  if (!pointwise && (views > kMaxViewChain || !chainsFit(id, 0, ops + 4)))
    return std::nullopt;
  std::string name = n.name; // (adding nodes moves the graph's storage)
  DType t = n.dtype;
  Shape shape = n.shape;
  ValueId fa = cast(a, DType::F32), fb = cast(b, DType::F32);
  if (!pointwise) {
    std::vector<Dim> da = out(fa).shape.allDims(), db = out(fb).shape.allDims();
    da.push_back(Dim(1));            // [.., M, K, 1]
    db.insert(db.end() - 2, Dim(1)); // [.., 1, K, N]
    ValueId columns = reshape(fa, Shape(std::span<const Dim>(da)));
    ValueId rows = reshape(fb, Shape(std::span<const Dim>(db)));
    ValueId sum = reduce(OpKind::Sum, binary(OpKind::Mul, columns, rows), -2, false,
                         t == DType::F32 ? name : "");
    Applied.push_back({MatmulRewriteKind::FewTermsSum, name, std::to_string(K)});
    return finish(sum, t, shape, name);
  }
  auto term = [&](int64_t j) { // (the column first: a fixed order of nodes)
    ValueId column = slice(fa, -1, j, j + 1);
    ValueId row = slice(fb, -2, j, j + 1);
    return binary(OpKind::Mul, column, row);
  };
  ValueId sum = term(0);
  for (int64_t j = 1; j < K; ++j) {
    ValueId next = term(j);
    sum = binary(OpKind::Add, sum, next, j == K - 1 && t == DType::F32 ? name : "");
  }
  Applied.push_back({MatmulRewriteKind::FewTerms, name, std::to_string(K)});
  return finish(sum, t, shape, name);
}

std::optional<ValueId> Rewriter::sumOfProduct(const Node &n, ValueId p) {
  const Node &prod = out(p);
  if (prod.op != OpKind::Matmul || n.axes.size() != 1 || Uses[n.operands[0]] != 1)
    return std::nullopt;
  int64_t rank = static_cast<int64_t>(prod.shape.rank());
  int64_t axis = n.axes[0];
  if (axis != rank - 1 && axis != rank - 2)
    return std::nullopt;
  // (ids, not the node: adding nodes moves the graph's storage)
  ValueId a = prod.operands[0], b = prod.operands[1];
  ValueId fa = cast(a, DType::F32), fb = cast(b, DType::F32);
  if (axis == rank - 1)
    fb = reduce(n.op, fb, -1, true);
  else
    fa = reduce(n.op, fa, -2, true);
  ValueId sum = sumOverK(fa, fb, n.dtype == DType::F32 && n.keepdim ? n.name : "");
  Applied.push_back({MatmulRewriteKind::SumOfProduct, n.name, ""});
  return finish(sum, n.dtype, n.shape, n.name);
}

std::optional<std::pair<ValueId, ValueId>> Rewriter::scalarProduct(ValueId v, ValueId original) const {
  const Node &m = out(v);
  if (m.op != OpKind::Mul || Uses[original] != 1)
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Node &c = out(m.operands[side]);
    ValueId rest = m.operands[1 - side];
    // The operand left must be memory the matmul can read: not a view of
    // a literal (autodiff's broadcast ones), which no kernel stores.
    if (c.op == OpKind::Constant && out(rest).shape == m.shape && !viewOfLiteral(rest))
      return std::make_pair(m.operands[side], rest);
  }
  return std::nullopt;
}

bool Rewriter::viewOfLiteral(ValueId v) const {
  while (out(v).cls() == OpClass::View)
    v = out(v).operands[0];
  return out(v).op == OpKind::Constant;
}

std::optional<ValueId> Rewriter::scalarFactor(const Node &n, ValueId a, ValueId b) {
  std::optional<std::pair<ValueId, ValueId>> fa = scalarProduct(a, n.operands[0]),
                                            fb = scalarProduct(b, n.operands[1]);
  if (!fa && !fb)
    return std::nullopt;
  NodeSpec s;
  s.op = OpKind::Matmul;
  s.operands = {fa ? fa->second : a, fb ? fb->second : b};
  ValueId p = add(s);
  if (fa)
    p = binary(OpKind::Mul, p, fa->first, fb ? "" : n.name);
  if (fb)
    p = binary(OpKind::Mul, p, fb->first, n.name);
  Applied.push_back({MatmulRewriteKind::ScalarFactor, n.name, ""});
  return p;
}

Rewriter::OperandRows Rewriter::operandRows(ValueId v) const {
  const Node &n = out(v);
  size_t rank = n.shape.rank();
  bool transposed = n.op == OpKind::Permute && rank >= 2 &&
                    n.perm[rank - 1] == static_cast<int64_t>(rank - 2) &&
                    n.perm[rank - 2] == static_cast<int64_t>(rank - 1);
  for (size_t i = 0; transposed && i + 2 < rank; ++i)
    transposed = n.perm[i] == static_cast<int64_t>(i);
  ValueId src = transposed ? n.operands[0] : v;
  const Shape &s = out(src).shape;
  int64_t rows = s[rank - 2], last = s[rank - 1];
  return {src, transposed, last % 8 == 0 || last == 1 || rows == 1};
}

bool Rewriter::paddable(const OperandRows &r) const {
  const Node &m = out(r.src);
  return m.cls() != OpClass::View && m.op != OpKind::Constant;
}

ValueId Rewriter::swapLast2(ValueId v, const std::string &name) {
  size_t rank = out(v).shape.rank();
  NodeSpec p;
  p.op = OpKind::Permute;
  p.operands = {v};
  p.name = name;
  for (size_t i = 0; i < rank; ++i)
    p.perm.push_back(static_cast<int64_t>(i));
  std::swap(p.perm[rank - 1], p.perm[rank - 2]);
  return add(p);
}

} // namespace detail

MatmulRewriteResult rewriteMatmuls(const Graph &g, const MatmulRewriteOptions &options) {
  // Sums reached through linear ops first, so that each meets its product.
  SumThroughLinearResult moved;
  if (options.reassociate)
    moved = moveSumsOntoProducts(g);
  MatmulRewriteOptions first;
  first.reassociate = options.reassociate;
  first.fewTermsUpTo = options.fewTermsUpTo;
  first.fewTermsUpTo16Bit = options.fewTermsUpTo16Bit;
  first.keptProducts = options.keptProducts;
  MatmulRewriteResult r = detail::Rewriter(moved.moved.empty() ? g : moved.graph, first).run();
  for (size_t i = 0; i < moved.moved.size(); ++i)
    r.applied.insert(r.applied.begin() + static_cast<std::ptrdiff_t>(i),
                     {MatmulRewriteKind::SumThroughLinear, moved.moved[i], ""});
  MatmulRewriteOptions second = options;
  second.reassociate = false;
  if (!options.reassociate)
    second.splitK = {};
  if (!second.alignRows && !second.float4Rows && !second.splitK.enabled() && !second.tf32x3)
    return r;
  // A second walk splits or pads the operands of what is still a matmul
  // (not those of a product that became a sum).
  MatmulRewriteResult aligned = detail::Rewriter(r.graph, second).run();
  r.graph = std::move(aligned.graph);
  r.applied.insert(r.applied.end(), aligned.applied.begin(), aligned.applied.end());
  return r;
}

MatmulRewriteResult rewriteTf32Operands(const Graph &g) {
  MatmulRewriteOptions none;
  none.reassociate = false;
  MatmulRewriteResult r = detail::Rewriter(g, none, /*tf32=*/true).run();
  if (!r.applied.empty()) // an operand's permute the copy replaced is read no more
    r.graph = withoutDeadValues(r.graph); // (not simplifyGraph: it drops a pad of nothing)
  return r;
}

} // namespace minijit
