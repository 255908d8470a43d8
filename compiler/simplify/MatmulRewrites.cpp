//===- compiler/simplify/MatmulRewrites.cpp - products in a cheaper form --------===//
// One walk in graph order copies the graph, replacing the products the
// rewrites apply to; a second pads the operands of the products left. A value
// that is rewritten keeps its name (on the last node of its new form), so
// outputs and --emit texts still name it.
//===----------------------------------------------------------------------===//
#include "compiler/simplify/MatmulRewrites.h"
#include "compiler/simplify/Simplify.h"
#include "compiler/simplify/SumThroughLinear.h"

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

namespace {

/// The depth of one of `slices` slices of k: whole k-steps of 8.
int64_t sliceDepth(int64_t k, int64_t slices) { return ((k + slices - 1) / slices + 7) / 8 * 8; }

} // namespace

std::pair<std::string, std::string> tf32x3PartsNames(const std::string &prefix) {
  return {prefix + ".a.parts", prefix + ".b.parts_t"};
}

bool tf32x3Pays(int64_t m, int64_t n, int64_t k) {
  // Times per batch on the H200 (docs/PERFORMANCE.md): the CUDA cores'
  // 2mnk at about 44 TFLOP/s; split, the copies (each operand read once,
  // its three parts written, then read by the product: 28 bytes an element
  // of A and B at about 4 TB/s) and 3 * 2mnk at about 360 TFLOP/s of TF32.
  // The split saves time where 2mnk (1/44 - 3/360) > 7 (m + n) k / 1000,
  // that is where mn / (m + n) > 243, rounded to 256: a square product past
  // 512, a wide one whose smaller side is past 256 (4096^2: 2048; an
  // nn.Linear of 1024 rows and 8192 columns: 910; 128 rows through any
  // layer: less than 128).
  if (m * n * k < (int64_t(1) << 24))
    return false;
  return double(m) * double(n) / double(m + n) > 256.0;
}

int64_t splitSlices(int64_t tiles, int64_t outputs, int64_t k, int64_t slots, int64_t mPlusN) {
  if (slots <= 0 || tiles >= slots || k < 512)
    return 1;
  // In units of one k-step of a full wave: the waves times their depth,
  // plus the partial sums written and read (8 bytes an output and slice at
  // about 3 TB/s against a wave's 128x128 tiles at about 45 TFLOP/s).
  auto cost = [&](int64_t s) {
    int64_t waves = (tiles * s + slots - 1) / slots;
    double partials = s == 1 ? 0.0 : double(s) * double(outputs) * 120.0 / (double(slots) * 32768.0);
    // slices that do not end where k does need both operands copied with
    // zeros (read and written once, as the partial sums are)
    double padding = s == 1 || s * sliceDepth(k, s) == k
                         ? 0.0
                         : double(mPlusN) * double(k) * 120.0 / (double(slots) * 32768.0);
    return double(waves * (s == 1 ? k : sliceDepth(k, s))) + partials + padding;
  };
  // Up to the count that fills the slots with the tiles (a product of few
  // tiles over a long k takes many slices), and at least 16.
  int64_t most = std::max<int64_t>(16, slots / tiles);
  int64_t best = 1;
  for (int64_t s = 2; s <= most && sliceDepth(k, s) >= 256; ++s)
    if (cost(s) < cost(best))
      best = s;
  return cost(best) <= 0.8 * cost(1) ? best : 1;
}

namespace {

class Rewriter {
public:
  Rewriter(const Graph &g, bool reassociate, bool alignRows, bool float4Rows,
           SplitKOptions splitK = {}, bool tf32 = false, bool tf32x3 = false)
      : G(g), Reassociate(reassociate), AlignRows(alignRows), Float4Rows(float4Rows),
        Tf32(tf32), Tf32x3(tf32x3), SplitK(splitK),
        Out(g.name()), Map(g.size(), -1),
        Uses(g.size(), 0), OutputUses(g.size(), 0) {
    Out.reserveNamesOf(g);
    for (const Node &n : g.nodes())
      for (ValueId o : n.operands)
        ++Uses[o];
    for (ValueId o : g.outputs()) {
      ++Uses[o];
      ++OutputUses[o];
    }
  }

  MatmulRewriteResult run() {
    for (size_t i = 0; i < G.size(); ++i)
      Map[i] = copy(static_cast<ValueId>(i));
    copyOutputs(G, Map, Out);
    return {std::move(Out), std::move(Applied)};
  }

private:
  const Node &out(ValueId v) const { return Out.node(v); }

  /// Adds `s`; a name already taken (by a fresh name of a node this pass
  /// made) is left for the graph to choose.
  ValueId add(NodeSpec s) {
    if (!s.name.empty() && Out.lookup(s.name))
      s.name.clear();
    return Out.add(s);
  }
  ValueId cast(ValueId v, DType t, const std::string &name = "") {
    if (out(v).dtype == t)
      return v;
    NodeSpec s;
    s.op = OpKind::Cast;
    s.operands = {v};
    s.dtype = t;
    s.name = name;
    return add(s);
  }
  ValueId reshape(ValueId v, const Shape &shape, const std::string &name = "") {
    if (out(v).shape == shape && name.empty())
      return v;
    NodeSpec s;
    s.op = OpKind::Reshape;
    s.operands = {v};
    s.shape = shape;
    s.name = name;
    return add(s);
  }
  ValueId binary(OpKind op, ValueId a, ValueId b, const std::string &name = "") {
    NodeSpec s;
    s.op = op;
    s.operands = {a, b};
    s.name = name;
    return add(s);
  }
  ValueId reduce(OpKind op, ValueId v, int64_t axis, bool keepdim, const std::string &name = "") {
    NodeSpec s;
    s.op = op;
    s.operands = {v};
    s.axes = DimVector{axis};
    s.keepdim = keepdim;
    s.name = name;
    return add(s);
  }
  /// `v` as `t`, named `name` (a cast to the same type would be dropped, so
  /// a name that must stay is put on a reshape that changes nothing).
  ValueId finish(ValueId v, DType t, const Shape &shape, const std::string &name) {
    if (out(v).dtype == t && out(v).shape == shape && out(v).name == name)
      return v; // the sum was given the value's name
    if (out(v).dtype == t)
      return reshape(v, shape, name);
    return cast(reshape(v, shape), t, name);
  }

  static Shape withLast2(const Shape &s, int64_t a, int64_t b) {
    DimVector d(s.dims().begin(), s.dims().end());
    d[d.size() - 2] = a;
    d[d.size() - 1] = b;
    return Shape(llvm::ArrayRef<int64_t>(d));
  }

  ValueId copy(ValueId id) {
    const Node &n = G.node(id);
    NodeSpec s = specOf(n);
    for (ValueId &o : s.operands)
      o = Map[o];
    if (n.op == OpKind::Input)
      return Out.input(n.name, n.dtype, n.shape).id();
    if (AlignRows || Float4Rows || SplitK.enabled() || Tf32 || Tf32x3) { // the last walks: products still matmuls
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
      if (Reassociate)
        if (std::optional<ValueId> v = scalarFactor(n, s.operands[0], s.operands[1]))
          return *v;
    }
    if (Reassociate && (n.op == OpKind::Sum || n.op == OpKind::Mean))
      if (std::optional<ValueId> v = sumOfProduct(n, s.operands[0]))
        return *v;
    return add(s);
  }

  /// The product of f32 operands [.., M, K] @ [.., K, 1] (or [.., 1, K] @
  /// [.., K, N]) as an elementwise product and a sum over k, with keepdim.
  /// The sum is named `name` (empty: a fresh name).
  ValueId sumOverK(ValueId fa, ValueId fb, const std::string &name) {
    const Shape &sa = out(fa).shape, &sb = out(fb).shape;
    int64_t K = sa[sa.rank() - 1], N = sb[sb.rank() - 1];
    if (N == 1) {
      ValueId row = reshape(fb, withLast2(sb, 1, K)); // B's column as a row
      return reduce(OpKind::Sum, binary(OpKind::Mul, fa, row), -1, true, name);
    }
    ValueId col = reshape(fa, withLast2(sa, K, 1)); // A's row as a column
    return reduce(OpKind::Sum, binary(OpKind::Mul, col, fb), -2, true, name);
  }

  /// [.., M, K] @ [.., K, 1] or [.., 1, K] @ [.., K, N]: an elementwise
  /// product in f32 and a sum over k.
  std::optional<ValueId> narrowProduct(ValueId id, ValueId a, ValueId b) {
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
    // The sum has the product's shape (keepdim); an f32 one is the value.
    ValueId sum = sumOverK(cast(a, DType::F32), cast(b, DType::F32),
                           n.dtype == DType::F32 ? n.name : "");
    Applied.push_back({MatmulRewriteKind::NarrowProduct, n.name, ""});
    return finish(sum, n.dtype, n.shape, n.name);
  }

  /// [.., M, 1] @ [.., 1, N]: the column times the row, broadcast, in f32
  /// (each output is the one product a * b, as the matmul templates form
  /// it), then rounded to a 16-bit product's type.
  std::optional<ValueId> outerProduct(ValueId id, ValueId a, ValueId b) {
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
    std::string name = n.name; // (adding nodes moves the graph's storage)
    DType t = n.dtype;
    Shape shape = n.shape;
    ValueId p = binary(OpKind::Mul, cast(a, DType::F32), cast(b, DType::F32),
                       t == DType::F32 ? name : "");
    Applied.push_back({MatmulRewriteKind::OuterProduct, name, ""});
    return finish(p, t, shape, name);
  }

  /// sum(A @ B, -1) = A @ sum(B, -1) and sum(A @ B, -2) = sum(A, -2) @ B
  /// (mean likewise), when the product has no other use. The operand is
  /// summed in f32, and the narrow product that results is formed as
  /// narrowProduct does.
  std::optional<ValueId> sumOfProduct(const Node &n, ValueId p) {
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

  /// The literal a scalar product `v` (c * x or x * c, one use) scales by,
  /// and its other operand.
  std::optional<std::pair<ValueId, ValueId>> scalarProduct(ValueId v, ValueId original) const {
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

  bool viewOfLiteral(ValueId v) const {
    while (out(v).cls() == OpClass::View)
      v = out(v).operands[0];
    return out(v).op == OpKind::Constant;
  }

  /// (c * A) @ B = c * (A @ B) and A @ (c * B) likewise.
  std::optional<ValueId> scalarFactor(const Node &n, ValueId a, ValueId b) {
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

  /// How a matmul operand lies in memory, as far as the graph says: the
  /// value it reads (through a transpose of its last two axes, if it is one)
  /// and whether that value's rows are whole 16-byte units (or need none:
  /// a single row or column has no stride to speak of).
  struct OperandRows {
    ValueId src;
    bool transposed, aligned;
  };
  OperandRows operandRows(ValueId v) const {
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

  /// Whether padding `r.src`'s rows is a plain copy of the operand: not of a
  /// view (a broadcast, a reshape), which would copy more than it.
  bool paddable(const OperandRows &r) const {
    const Node &m = out(r.src);
    return m.cls() != OpClass::View && m.op != OpKind::Constant;
  }

  /// The operand with its rows padded to the next 8 elements and sliced
  /// back: the pad is a copy kernel, the slice a view the matmul reads with
  /// the padded row stride; a transposed operand is transposed again.
  ValueId padRows(ValueId v, const OperandRows &r) {
    const Shape &s = out(r.src).shape;
    size_t rank = s.rank();
    int64_t last = s[rank - 1];
    NodeSpec pad;
    pad.op = OpKind::Pad;
    pad.operands = {r.src};
    pad.before.assign(rank, 0);
    pad.after.assign(rank, 0);
    pad.after[rank - 1] = (last + 7) / 8 * 8 - last;
    NodeSpec slice;
    slice.op = OpKind::Slice;
    slice.operands = {add(pad)};
    slice.axis = -1;
    slice.start = 0;
    slice.end = last;
    ValueId aligned = add(slice);
    if (!r.transposed)
      return aligned;
    NodeSpec t = specOf(out(v));
    t.operands = {aligned};
    t.name.clear();
    return add(t);
  }

  /// A 16-bit product big enough for the pads to pay (2^24 multiply-adds,
  /// batches counted: a few microseconds on the tensor cores), one of whose
  /// operands has unaligned rows, when both can then be read by TMA: each is
  /// aligned already or paddable.
  std::optional<ValueId> alignedOperands(const Node &n, ValueId a, ValueId b) {
    if (n.dtype == DType::F32)
      return std::nullopt;
    const Shape &sa = out(a).shape;
    if (n.shape.numel() * sa[sa.rank() - 1] < (int64_t(1) << 24))
      return std::nullopt;
    OperandRows ra = operandRows(a), rb = operandRows(b);
    if ((ra.aligned && rb.aligned) || (!ra.aligned && !paddable(ra)) ||
        (!rb.aligned && !paddable(rb)))
      return std::nullopt;
    NodeSpec s = specOf(n);
    s.operands = {ra.aligned ? a : padRows(a, ra), rb.aligned ? b : padRows(b, rb)};
    Applied.push_back({MatmulRewriteKind::AlignedRows, n.name, ""});
    return add(s);
  }

  /// How float4Operands pads one operand's stored source [.., rows, cols]:
  /// its last axis up to whole float4s (then sliced back to its length, or
  /// kept: k), its rows up to a multiple of 4 (k, with zeros).
  struct Float4Pad {
    bool last = false, sliceLast = false, rows = false;
    bool any() const { return last || rows; }
  };

  /// Pads r.src as `p` says, then slices and transposes back as needed.
  ValueId padToFloat4s(ValueId v, const OperandRows &r, const Float4Pad &p) {
    const Shape &s = out(r.src).shape;
    size_t rank = s.rank();
    int64_t rows = s[rank - 2], last = s[rank - 1];
    NodeSpec pad;
    pad.op = OpKind::Pad;
    pad.operands = {r.src};
    pad.before.assign(rank, 0);
    pad.after.assign(rank, 0);
    if (p.last)
      pad.after[rank - 1] = (last + 3) / 4 * 4 - last;
    if (p.rows)
      pad.after[rank - 2] = (rows + 3) / 4 * 4 - rows;
    ValueId padded = add(pad);
    if (p.sliceLast) {
      NodeSpec slice;
      slice.op = OpKind::Slice;
      slice.operands = {padded};
      slice.axis = -1;
      slice.start = 0;
      slice.end = last;
      padded = add(slice);
    }
    if (!r.transposed)
      return padded;
    NodeSpec t = specOf(out(v));
    t.operands = {padded};
    t.name.clear();
    return add(t);
  }

  /// An f32 product on the CUDA cores reads a tile by float4s only where
  /// the operand's rows are whole float4s (tileGeometry's vecA, vecB, ...).
  /// Where they are not, and each element copied serves at least 512
  /// multiply-adds (so the copies cost a few percent of the product at
  /// most), the operands are copied into padded rows first: along k both
  /// gain zeros up to a multiple of 4 (the sums gain terms 0 * 0); a
  /// row-major B whose n is not a multiple of 4 (an A stored transposed
  /// whose m is not) is padded along it and sliced back, so that the last
  /// vector of a tile row reads into the padding, for outputs no one stores.
  std::optional<ValueId> float4Operands(const Node &n, ValueId a, ValueId b) {
    if (n.dtype != DType::F32)
      return std::nullopt;
    const Shape &sa = out(a).shape, &sb = out(b).shape; // ranks may differ (a batch broadcast)
    int64_t M = sa[sa.rank() - 2], K = sa[sa.rank() - 1], N = sb[sb.rank() - 1];
    OperandRows ra = operandRows(a), rb = operandRows(b);
    bool padK = K % 4 != 0;
    Float4Pad pa, pb;
    if (ra.transposed) // stored [.., K, M]
      pa = {M % 4 != 0, true, padK};
    else // stored [.., M, K]
      pa = {padK, false, false};
    if (rb.transposed) // stored [.., N, K]
      pb = {padK, false, false};
    else // stored [.., K, N]
      pb = {N % 4 != 0, true, padK};
    if ((!pa.any() && !pb.any()) || (pa.any() && !paddable(ra)) || (pb.any() && !paddable(rb)))
      return std::nullopt;
    // A padded operand's size, whose copy must pay.
    auto padded = [&](const OperandRows &r, const Float4Pad &p) -> int64_t {
      if (!p.any())
        return 0;
      const Shape &s = out(r.src).shape;
      int64_t rows = s[s.rank() - 2], last = s[s.rank() - 1];
      return s.numel() / (rows * last) * ((rows + 3) / 4 * 4) * ((last + 3) / 4 * 4);
    };
    int64_t work = n.shape.numel() * K; // multiply-adds
    if (work / 512 < padded(ra, pa) + padded(rb, pb))
      return std::nullopt;
    NodeSpec s = specOf(n);
    s.operands = {pa.any() ? padToFloat4s(a, ra, pa) : a, pb.any() ? padToFloat4s(b, rb, pb) : b};
    Applied.push_back({MatmulRewriteKind::Float4Rows, n.name, ""});
    return add(s);
  }

  /// Split-K (see splitSlices) where the layout allows it: both operands
  /// rank 2 and plain values (not views, which a pad or reshape would copy).
  /// k is padded with zeros to S whole slices of a multiple of 8 (the
  /// template's k-step; whole float4s); a row-major B whose n is not whole
  /// float4s (an A stored transposed whose m is not) has its rows padded too
  /// and sliced back, as float4Operands does. Each operand becomes a view of
  /// its padded copy with the slices as a batch.
  std::optional<ValueId> splitK(const Node &n, ValueId a, ValueId b) {
    if (n.dtype != DType::F32 || n.shape.hasNames() || out(a).shape.rank() != 2 ||
        out(b).shape.rank() != 2)
      return std::nullopt;
    int64_t M = n.shape[0], N = n.shape[1], K = out(a).shape[1];
    OperandRows ra = operandRows(a), rb = operandRows(b);
    if (!paddable(ra) || !paddable(rb) || out(ra.src).shape.hasNames() ||
        out(rb.src).shape.hasNames())
      return std::nullopt;
    int64_t slices = SplitK.force > 0 ? SplitK.force
                                      : splitSlices(((M + 127) / 128) * ((N + 127) / 128), M * N,
                                                    K, SplitK.slots, M + N);
    if (slices < 2 || K < 8 * slices)
      return std::nullopt;
    int64_t ks = sliceDepth(K, slices);
    NodeSpec s = specOf(n);
    s.operands = {splitOperand(ra, true, slices, ks, K), splitOperand(rb, false, slices, ks, K)};
    s.name.clear();
    ValueId product = add(s);
    Applied.push_back({MatmulRewriteKind::SplitK, n.name,
                       std::to_string(slices) + " slices of " + std::to_string(ks)});
    return reduce(OpKind::Sum, product, 0, false, n.name);
  }

  /// One operand of a split product: its stored source (rank 2) padded with
  /// zeros along k to slices * ks (and, where m or n is its contiguous axis,
  /// that axis to whole float4s, sliced back), reshaped and permuted to
  /// [S, M, ks] (A) or [S, ks, N] (B), a view.
  ValueId splitOperand(const OperandRows &r, bool isA, int64_t slices, int64_t ks, int64_t K) {
    ValueId v = r.src;
    const Shape &src = out(v).shape;
    int64_t kAxis = isA != r.transposed ? 1 : 0; // A [M, K], A^T [K, M], B [K, N], B^T [N, K]
    int64_t other = src[1 - kAxis];
    int64_t otherPad = kAxis == 0 ? (other + 3) / 4 * 4 - other : 0;
    if (slices * ks > K || otherPad > 0) {
      NodeSpec pad;
      pad.op = OpKind::Pad;
      pad.operands = {v};
      pad.before.assign(2, 0);
      pad.after.assign(2, 0);
      pad.after[kAxis] = slices * ks - K;
      pad.after[1 - kAxis] = otherPad;
      v = add(pad);
    }
    if (otherPad > 0) { // [slices * ks, other] in rows of whole float4s
      NodeSpec slice;
      slice.op = OpKind::Slice;
      slice.operands = {v};
      slice.axis = 1;
      slice.start = 0;
      slice.end = other;
      v = add(slice);
    }
    auto permute = [&](ValueId x, DimVector perm) {
      NodeSpec p;
      p.op = OpKind::Permute;
      p.operands = {x};
      p.perm = std::move(perm);
      return add(p);
    };
    if (kAxis == 1) { // [other, S, ks]
      ValueId r3 = reshape(v, Shape({other, slices, ks}));
      return isA ? permute(r3, DimVector{1, 0, 2}) : permute(r3, DimVector{1, 2, 0});
    }
    ValueId r3 = reshape(v, Shape({slices, ks, other})); // [S, ks, other]
    return isA ? permute(r3, DimVector{0, 2, 1}) : r3;
  }

  /// See rewriteTf32Operands.
  std::optional<ValueId> tf32Operands(const Node &n, ValueId a, ValueId b) {
    const Shape &sa = out(a).shape, &sb = out(b).shape;
    if (n.dtype != DType::F32 || n.shape.hasNames() || sa.hasNames() || sb.hasNames())
      return std::nullopt;
    int64_t K = sa[sa.rank() - 1];
    if (n.shape.numel() * K < (int64_t(1) << 24))
      return std::nullopt;
    OperandRows ra = operandRows(a), rb = operandRows(b);
    bool padK = K % 4 != 0;
    bool copyA = padK || ra.transposed, copyB = padK || !rb.transposed;
    if ((!copyA && !copyB) || (copyA && !paddable(ra)) || (copyB && !paddable(rb)))
      return std::nullopt;
    NodeSpec s = specOf(n);
    s.operands = {copyA ? kMajorCopy(ra, true, K) : a, copyB ? kMajorCopy(rb, false, K) : b};
    std::string what = copyA && copyB ? "both" : copyA ? "A" : "B";
    if (padK)
      what += ", k padded with zeros to " + std::to_string((K + 3) / 4 * 4);
    else
      what += " transposed";
    Applied.push_back({MatmulRewriteKind::Tf32Operands, n.name, what});
    return add(s);
  }

  /// See rewriteMatmuls (tf32x3): the product of the operands' TF32 parts
  /// side by side along k, [Ahi, Ahi, Alo] @ [Bhi; Blo; Bhi], both k-major
  /// (the layout TF32's wgmma reads) with k padded to whole 16-byte units.
  std::optional<ValueId> tf32x3Split(const Node &n, ValueId a, ValueId b) {
    const Shape &sa = out(a).shape, &sb = out(b).shape;
    if (n.dtype != DType::F32 || n.shape.hasNames() || sa.hasNames() || sb.hasNames())
      return std::nullopt;
    int64_t M = sa[sa.rank() - 2], K = sa[sa.rank() - 1], N = sb[sb.rank() - 1];
    if (!tf32x3Pays(M, N, K))
      return std::nullopt;
    OperandRows ra = operandRows(a), rb = operandRows(b);
    // (the parts of a broadcast operand would be copied out in full)
    if (viewOfBroadcast(ra.src) || viewOfBroadcast(rb.src))
      return std::nullopt;
    int64_t Kp = (K + 3) / 4 * 4;
    NodeSpec s = specOf(n);
    s.operands = {tf32Parts(ra, true, K, n.name + ".a"), tf32Parts(rb, false, K, n.name + ".b")};
    std::string what = "k " + std::to_string(K) + " as 3 x " + std::to_string(Kp);
    if (Kp != K)
      what += ", each part padded with zeros";
    Applied.push_back({MatmulRewriteKind::Tf32x3, n.name, what});
    return add(s);
  }

  /// Whether `v` is a broadcast, or a view (a reshape, permute, slice) of one.
  bool viewOfBroadcast(ValueId v) const {
    for (const Node *n = &out(v); n->cls() == OpClass::View; n = &out(n->operands[0]))
      if (n->op == OpKind::Broadcast)
        return true;
    return false;
  }

  /// One operand's parts side by side along k, k-major: [.., rows, 3 Kp] in
  /// memory, each part padded with zeros to Kp (a multiple of 4); A holds
  /// [hi, hi, lo], B (a transposed view of it, [.., 3 Kp, N]) [hi, lo, hi]
  /// (the hi that meets the other's lo is 0 where x is not finite).
  /// Written as [.., rows, 3, Kp], the part chosen by its index, so each
  /// element reads the operand once (a concat would read every part).
  ValueId tf32Parts(const OperandRows &r, bool isA, int64_t K, const std::string &name) {
    // (named after the product: its kernel is found by its operands' names,
    // tf32x3PartsNames, which no fresh name can take)
    auto named = [&](NodeSpec s, const char *what) {
      s.name = name + "." + what;
      return add(s);
    };
    ValueId v = r.src;
    if (isA == r.transposed) // stored [.., K, M] (A) or [.., K, N] (B)
      v = swapLast2(v, name + ".k_major");
    Shape s = out(v).shape;
    size_t rank = s.rank();
    int64_t Kp = (K + 3) / 4 * 4;
    if (Kp != K) {
      NodeSpec pad;
      pad.op = OpKind::Pad;
      pad.operands = {v};
      pad.before.assign(rank, 0);
      pad.after.assign(rank, 0);
      pad.after[rank - 1] = Kp - K;
      v = named(pad, "padded");
    }
    DimVector d(s.dims().begin(), s.dims().end());
    d[rank - 1] = 1;
    d.push_back(Kp);
    ValueId one = reshape(v, Shape(llvm::ArrayRef<int64_t>(d)), name + ".row"); // [.., rows, 1, Kp]
    d[rank - 1] = 3;
    NodeSpec bc;
    bc.op = OpKind::Broadcast;
    bc.operands = {one};
    bc.shape = Shape(llvm::ArrayRef<int64_t>(d)); // [.., rows, 3, Kp]
    ValueId x = named(bc, "x3");
    auto roundTf32 = [&](ValueId y, const char *what) {
      NodeSpec u;
      u.op = OpKind::RoundTf32;
      u.operands = {y};
      return named(u, what);
    };
    // hi, except where rounding overflows a finite x (within 2^-11 of the
    // largest f32): there x itself (TF32 reads it cut); lo = round_tf32(x -
    // hi), and 0 where x == hi, so that an infinite x gives hi = x, lo = 0
    // (its products infinite, as the product as written), not inf - inf.
    // Finite: v - v == 0 (false for inf and NaN).
    auto finite = [&](ValueId v, const char *what) {
      return binary(OpKind::Eq, binary(OpKind::Sub, v, v, name + "." + what + "_d"),
                    Out.constant(0, DType::F32), name + "." + what);
    };
    auto select = [&](ValueId c, ValueId a, ValueId b, const char *what) {
      NodeSpec w;
      w.op = OpKind::Where;
      w.operands = {c, a, b};
      return named(w, what);
    };
    ValueId rounded = roundTf32(x, "rounded");
    NodeSpec overflow;
    overflow.op = OpKind::Not;
    overflow.operands = {finite(rounded, "rounded_finite")};
    ValueId xFinite = finite(x, "x_finite");
    ValueId overflowed =
        binary(OpKind::And, named(overflow, "rounded_not_finite"), xFinite, name + ".overflow");
    ValueId hi = select(overflowed, x, rounded, "hi");
    ValueId rest = select(binary(OpKind::Eq, x, hi, name + ".exact"), Out.constant(0, DType::F32),
                          binary(OpKind::Sub, x, hi, name + ".rest_d"), "rest");
    ValueId lo = roundTf32(rest, "lo");
    // The hi that meets the other operand's lo: 0 where x is not finite, so
    // that an infinite x times a lo of the other sign (or of 0) does not
    // make inf - inf (or inf * 0) of a product that is infinite as written.
    ValueId hiCross = select(xFinite, hi, Out.constant(0, DType::F32), "hi_cross");
    NodeSpec part;
    part.op = OpKind::Iota;
    part.shape = Shape{3, 1};
    part.axis = 0;
    part.dtype = DType::I32;
    ValueId index = named(part, "part");
    // A: [hi, hi_cross, lo]; B: [hi, lo, hi_cross]
    ValueId isLo = binary(OpKind::Eq, index, Out.constant(isA ? 2 : 1, DType::I32), name + ".is_lo");
    ValueId isCross =
        binary(OpKind::Eq, index, Out.constant(isA ? 1 : 2, DType::I32), name + ".is_cross");
    ValueId pick = select(isLo, lo, select(isCross, hiCross, hi, "hi_or_cross"), "parts3");
    d[rank - 1] = 3 * Kp;
    d.pop_back();
    ValueId parts = reshape(pick, Shape(llvm::ArrayRef<int64_t>(d)),
                            name + ".parts"); // [.., rows, 3 Kp]
    return isA ? parts : swapLast2(parts, name + ".parts_t");
  }

  /// `v` with its last two axes swapped (a view).
  ValueId swapLast2(ValueId v, const std::string &name = "") {
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

  /// One operand copied k-major: [.., rows, Kp] in memory, Kp = k up to a
  /// multiple of 4 with zeros after it; as A that copy, as B a transposed
  /// view of it ([.., Kp, N]).
  ValueId kMajorCopy(const OperandRows &r, bool isA, int64_t K) {
    ValueId v = r.src;
    if (isA == r.transposed) // stored [.., K, M] (A) or [.., K, N] (B)
      v = swapLast2(v);
    size_t rank = out(v).shape.rank();
    NodeSpec pad;
    pad.op = OpKind::Pad;
    pad.operands = {v};
    pad.before.assign(rank, 0);
    pad.after.assign(rank, 0);
    pad.after[rank - 1] = (K + 3) / 4 * 4 - K;
    ValueId copy = add(pad);
    return isA ? copy : swapLast2(copy);
  }

  const Graph &G;
  bool Reassociate, AlignRows, Float4Rows, Tf32, Tf32x3;
  SplitKOptions SplitK;
  Graph Out;
  std::vector<ValueId> Map;
  std::vector<int> Uses; ///< of each value of G, outputs counted
  std::vector<int> OutputUses; ///< of each value of G, as a graph output
  std::vector<MatmulRewrite> Applied;
};

} // namespace

MatmulRewriteResult rewriteMatmuls(const Graph &g, bool reassociate, bool alignRows,
                                   bool float4Rows, SplitKOptions splitK, bool tf32x3) {
  // Sums reached through linear ops first, so that each meets its product.
  SumThroughLinearResult moved;
  if (reassociate)
    moved = moveSumsOntoProducts(g);
  MatmulRewriteResult r = Rewriter(moved.moved.empty() ? g : moved.graph, reassociate, false, false).run();
  for (size_t i = 0; i < moved.moved.size(); ++i)
    r.applied.insert(r.applied.begin() + static_cast<std::ptrdiff_t>(i),
                     {MatmulRewriteKind::SumThroughLinear, moved.moved[i], ""});
  if (!reassociate)
    splitK = {};
  if (!alignRows && !float4Rows && !splitK.enabled() && !tf32x3)
    return r;
  // A second walk splits or pads the operands of what is still a matmul
  // (not those of a product that became a sum).
  MatmulRewriteResult aligned =
      Rewriter(r.graph, false, alignRows, float4Rows, splitK, false, tf32x3).run();
  r.graph = std::move(aligned.graph);
  r.applied.insert(r.applied.end(), aligned.applied.begin(), aligned.applied.end());
  return r;
}

MatmulRewriteResult rewriteTf32Operands(const Graph &g) {
  MatmulRewriteResult r = Rewriter(g, false, false, false, {}, true).run();
  if (!r.applied.empty()) // an operand's permute the copy replaced is read no more
    r.graph = withoutDeadValues(r.graph); // (not simplifyGraph: it drops a pad of nothing)
  return r;
}

} // namespace minijit
