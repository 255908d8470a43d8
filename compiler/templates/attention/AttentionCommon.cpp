//===- compiler/templates/attention/AttentionCommon.cpp - what both attention kernels write ---===//
#include "compiler/templates/attention/AttentionCommon.h"

#include "compiler/emit/KernelEmitter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace minijit {

std::string attentionKeyBound(KernelEmitter &e, unsigned rows) {
  const KMatmul &mm = *e.K.matmul;
  if (!e.K.attention->causal)
    return std::to_string(mm.N);
  e.W.line("// The mask is causal: keys past the tile's last query row are masked for every "
           "row of it, so the walk stops there");
  e.W.line(llvm::formatv("const {0} mj_keys = min(({0}){1}, m0 + {2});", e.Idx, mm.N, rows).str());
  return "mj_keys";
}

std::string attentionKeyStart(KernelEmitter &e, unsigned cols) {
  int64_t window = e.K.attention->window;
  if (window <= 0)
    return "0";
  e.W.line(llvm::formatv("// The mask hides the keys {0} or more before each query: those before "
                         "the tile's first row's window are hidden from every row of it, so the "
                         "walk starts at the tile holding the first key kept",
                         window)
               .str());
  e.W.line(llvm::formatv("const {0} mj_firstKey = m0 >= {1} ? (m0 - {1}) / {2} * {2} : 0;", e.Idx,
                         window - 1, cols)
               .str());
  return "mj_firstKey";
}

void attentionScoreWork(KernelEmitter &e, const std::string &dot, const std::string &pastEnds,
                        ScoreBounds bounds, const std::function<void()> &inside) {
  const LoweredKernel &k = e.K;
  const KMatmul &mm = *k.matmul;
  std::string test;
  if (bounds.rows)
    test = "m < " + std::to_string(mm.M);
  if (bounds.keys)
    test += (test.empty() ? "n < " : " && n < ") + std::to_string(mm.N);
  if (test.empty()) {
    e.W.line("float mj_score; // the tiles divide the rows and the keys: none past the ends");
  } else {
    e.W.line("float mj_score = -MJ_INF; // " + pastEnds + ": no probability");
    e.W.open("if (" + test + ")");
  }
  for (size_t i = 0; i < k.values.size(); ++i)
    if (k.values[i].kind == KValue::Kind::MatmulResult && e.Need[i])
      e.W.line("const float " + e.Names[i] + " = " + dot + ";" + e.comment(static_cast<int>(i)));
  e.elementWork(0, LaneCtx::elements("n", k.n, mm.N), "");
  e.W.line("mj_score = " + e.ref(k.attention->score) + "; // what the softmax reads");
  if (inside)
    inside();
  if (!test.empty())
    e.W.close();
}

void attentionTileOrigin(KernelEmitter &e, int64_t tiles, unsigned rows) {
  std::string t = std::to_string(tiles), r = std::to_string(rows);
  e.W.line("const " + e.Idx + " b = blockIdx.x / " + t + "; // batch");
  if (e.K.attention->causal)
    // A causal tile's work grows with its row: a batch's tiles go from the
    // last to the first, so that the grid ends on the lightest ones.
    e.W.line("const " + e.Idx + " m0 = (" + std::to_string(tiles - 1) + " - blockIdx.x % " + t +
             ") * " + r + "; // the tile's first query row: the batch's last tile first");
  else
    e.W.line("const " + e.Idx + " m0 = (blockIdx.x % " + t + ") * " + r +
             "; // the tile's first query row");
}

std::string attentionPosType(const KernelEmitter &e) {
  const int64_t big = int64_t(1) << 31;
  const KMatmul &mm = *e.K.matmul;
  bool fits = mm.M * mm.N < big;
  for (const KParam &p : e.K.params)
    fits = fits && p.numel < big;
  return fits ? std::string("int") : e.Idx;
}

std::string attentionPack(DType dtype, const std::string &lo, const std::string &hi) {
  std::string conv = dtype == DType::BF16 ? "mj_f2bf" : "mj_f2h";
  return "(unsigned)" + conv + "(" + lo + ") | ((unsigned)" + conv + "(" + hi + ") << 16)";
}

bool attentionCopiesWholePieces(const LoweredKernel &k, int64_t width, int64_t strideRow,
                                int64_t strideCol, const IndexExpr &base) {
  int64_t d = k.ctx.divisibility(base);
  return strideCol == 1 && width % 8 == 0 && strideRow % 8 == 0 && (d == 0 || d % 8 == 0);
}

namespace {

/// For each of the thread's `rows` rows (h), `combine` over the four
/// threads of a row, neighbouring lanes (w = 1, 2).
void quadCombine(KernelEmitter &e, unsigned rows, const std::string &combine) {
  e.W.line("#pragma unroll");
  e.W.open(llvm::formatv("for (int h = 0; h < {0}; ++h)", rows).str());
  e.W.line("#pragma unroll");
  e.W.line("for (int w = 1; w < 4; w *= 2) " + combine);
  e.W.close();
}

/// Whether value `i` of `k` reads a product's result, through any values.
bool readsProduct(const LoweredKernel &k, int i) {
  const KValue &v = k.values[i];
  if (v.kind == KValue::Kind::MatmulResult)
    return true;
  return llvm::any_of(v.args, [&](int a) { return readsProduct(k, a); });
}

} // namespace

bool attentionScoresInLog2(KernelEmitter &e) {
  const LoweredKernel &k = e.K;
  const KAttention &a = *k.attention;
  if (a.max.param >= 0 || a.sum.param >= 0)
    return false; // the statistics a backward reads are in e's units
  std::vector<int> reads(k.values.size(), 0);
  for (const KValue &v : k.values)
    for (int x : v.args)
      ++reads[x];
  for (const KStore &st : k.stores)
    ++reads[st.value];
  auto literal = [&](int i) { return k.values[i].kind == KValue::Kind::Literal; };
  int at = a.score;
  if (reads[at] != 0)
    return false;
  // down the masks, where(c, x, -inf) with c not reading the scores, and
  // casts to f32 (the kernel's values are f32: no rounding to move)
  while (k.values[at].kind == KValue::Kind::Compute &&
         (k.values[at].op == OpKind::Where ||
          (k.values[at].op == OpKind::Cast && k.values[at].dtype == DType::F32))) {
    const KValue &w = k.values[at];
    if (w.op == OpKind::Cast) {
      at = w.args[0];
      if (reads[at] != 1)
        return false;
      continue;
    }
    if (!literal(w.args[2]) ||
        !(std::isinf(k.values[w.args[2]].literal) && k.values[w.args[2]].literal < 0) ||
        readsProduct(k, w.args[0]))
      return false;
    at = w.args[1];
    if (reads[at] != 1)
      return false;
  }
  const KValue &m = k.values[at];
  if (m.kind != KValue::Kind::Compute || m.op != OpKind::Mul || m.args.size() != 2)
    return false;
  for (int side = 0; side < 2; ++side) {
    int product = m.args[side], scale = m.args[1 - side];
    if (k.values[product].kind != KValue::Kind::MatmulResult || !literal(scale) ||
        reads[scale] != 1)
      continue;
    double c = k.values[scale].literal;
    if (!(c > 0) || std::isinf(c))
      return false;
    e.LiteralAs[scale] = c * 1.4426950408889634; // log2(e)
    e.W.line("// The scores in log2 units (the scale's literal below is the graph's times "
             "log2(e)): each probability is exp2(score - max)");
    return true;
  }
  return false;
}

std::string attentionExp(bool log2, const std::string &x) {
  return (log2 ? "mj_exp2_ftz(" : "mj_exp_ftz(") + x + ")";
}

void attentionRescale(KernelEmitter &e, unsigned rows, bool log2) {
  CodeWriter &W = e.W;
  quadCombine(
      e, rows,
      "mj_tileMax[h] = mj_max_nan(mj_tileMax[h], __shfl_xor_sync(0xffffffffu, mj_tileMax[h], "
      "w));");
  W.line(llvm::formatv("float mj_base[{0}], mj_rescale[{0}], mj_tileSum[{0}];", rows).str());
  W.line("#pragma unroll");
  W.open(llvm::formatv("for (int h = 0; h < {0}; ++h)", rows).str());
  W.line("const float newMax = mj_max_nan(mj_rowMax[h], mj_tileMax[h]);");
  W.line("// A row whose keys so far are all masked keeps max -inf: its probabilities are 0");
  W.line("mj_base[h] = newMax == -MJ_INF ? 0.0f : newMax;");
  W.line("mj_rescale[h] = " + attentionExp(log2, "mj_rowMax[h] - mj_base[h]") +
         "; // of the sum and O so far");
  W.line("mj_rowMax[h] = newMax;");
  W.line("mj_tileSum[h] = 0.0f;");
  W.close();
}

void attentionAddTileSums(KernelEmitter &e, unsigned rows) {
  quadCombine(e, rows, "mj_tileSum[h] += __shfl_xor_sync(0xffffffffu, mj_tileSum[h], w);");
  e.W.line("#pragma unroll");
  e.W.line(llvm::formatv("for (int h = 0; h < {0}; ++h) mj_rowSum[h] = mj_rowSum[h] * "
                         "mj_rescale[h] + mj_tileSum[h];",
                         rows)
               .str());
}

} // namespace minijit
