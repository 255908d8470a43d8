//===- compiler/templates/attention/AttentionCommon.cpp - what both attention kernels write ---===//
#include "compiler/templates/attention/AttentionCommon.h"

#include "compiler/emit/KernelEmitter.h"

#include "llvm/Support/FormatVariadic.h"

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

} // namespace minijit
