//===- compiler/templates/matmul/MatmulTiles.cpp - what both matmul templates share ---===//
#include "compiler/templates/matmul/MatmulTiles.h"

#include "compiler/emit/ExprEmitter.h"

namespace minijit {

std::string MatmulEmitter::tilesMText() const {
  if (!E.symbolic())
    return std::to_string(T.tilesM);
  return "(" + mText() + " + " + std::to_string(T.bm - 1) + ") / " + std::to_string(T.bm);
}

void MatmulEmitter::prologue() {
  // Which tile this block computes, grouped 8 tiles tall so that blocks
  // running together share rows of A and columns of B in the L2.
  const std::string &Idx = E.Idx;
  std::string tiles = E.symbolic() ? tilesMText() + " * " + std::to_string(T.tilesN)
                                   : std::to_string(T.tilesM * T.tilesN);
  if (E.symbolic())
    W.line("const int tiles = " + tiles + "; // of this launch's m");
  W.line("const int tile = blockIdx.x % " + std::string(E.symbolic() ? "tiles" : tiles) + ";");
  W.line("const " + Idx + " b = blockIdx.x / " + std::string(E.symbolic() ? "tiles" : tiles) +
         "; // batch");
  W.line("const int group = tile / " + std::to_string(8 * T.tilesN) + ", firstM = group * 8;");
  W.line("const int groupRows = min(" + tilesMText() + " - firstM, 8);");
  W.line("const " + Idx + " m0 = (firstM + tile % groupRows) * " + std::to_string(T.bm) + ";");
  W.line("const " + Idx + " n0 = ((tile % " + std::to_string(8 * T.tilesN) + ") / groupRows) * " +
         std::to_string(T.bn) + ";");
  W.line("const " + Idx + " aBatch = " + E.idx(K.matmul->aBase) + ", bBatch = " +
         E.idx(K.matmul->bBase) + ";");
}

MatmulOperand MatmulEmitter::operand(bool isA) const {
  const KMatmul &mm = *K.matmul;
  MatmulOperand o;
  o.param = &K.params[isA ? mm.aParam : mm.bParam];
  o.isA = isA;
  o.name = isA ? "A" : "B";
  o.batch = isA ? "aBatch" : "bBatch";
  o.rowVar = isA ? "gm" : "gk";
  o.colVar = isA ? "gk" : "gn";
  o.rowExtent = isA ? mm.M : mm.K;
  o.colExtent = isA ? mm.K : mm.N;
  o.rowsVary = isA && E.symbolic();
  o.rowExtentText = isA ? mText() : std::to_string(mm.K);
  o.colExtentText = std::to_string(o.colExtent);
  o.row0 = isA ? "m0" : "k0";
  o.col0 = isA ? "k0" : "n0";
  o.rows = isA ? T.bm : T.bk;
  o.cols = isA ? T.bk : T.bn;
  o.rowStride = isA ? mm.aStrideM : mm.bStrideK;
  o.colStride = isA ? mm.aStrideK : mm.bStrideN;
  o.vec = isA ? T.vecA : T.vecB;
  o.vecT = isA ? T.vecAT : T.vecBT;
  return o;
}

std::string MatmulEmitter::inBounds(const MatmulOperand &o) const {
  bool rowsWhole = !o.rowsVary && o.rowExtent % (o.isA ? T.bm : T.bk) == 0;
  bool colsWhole = o.colExtent % (o.isA ? T.bk : T.bn) == 0;
  std::string c;
  if (!rowsWhole)
    c = o.rowVar + " < " + o.rowExtentText;
  if (!colsWhole)
    c += (c.empty() ? "" : " && ") + o.colVar + " < " + o.colExtentText;
  return c;
}

std::string MatmulEmitter::bothBounds(const MatmulOperand &o) const {
  return o.rowVar + " < " + o.rowExtentText + " && " + o.colVar + " < " + o.colExtentText;
}

std::string MatmulEmitter::tilePosition(const MatmulOperand &o, const std::string &e) const {
  bool colFast = o.colStride == 1 || o.rowStride != 1;
  std::string rows = std::to_string(o.rows), cols = std::to_string(o.cols);
  if (colFast)
    return "const int r = " + e + " / " + cols + ", c = " + e + " % " + cols + ";";
  return "const int r = " + e + " % " + rows + ", c = " + e + " / " + rows + ";";
}

void MatmulEmitter::tileElement(const MatmulOperand &o, const std::string &e) {
  W.line(tilePosition(o, e));
  W.line("const " + E.Idx + " " + o.rowVar + " = " + o.row0 + " + r, " + o.colVar + " = " +
         o.col0 + " + c;");
}

std::string MatmulEmitter::operandLoad(const MatmulOperand &o, bool toFloat) const {
  std::string off = o.batch + " + " + o.rowVar + " * " + std::to_string(o.rowStride) + " + " +
                    o.colVar + " * " + std::to_string(o.colStride);
  std::string zero = toFloat ? "0.0f" : "(unsigned short)0";
  std::string v = o.param->name + "[" + off + "]";
  return "(" + bothBounds(o) + ") ? " + (toFloat ? loadConv(o.param->dtype, v) : v) + " : " + zero;
}

void MatmulEmitter::epilogue(const std::string &accExpr) {
  const KMatmul &mm = *K.matmul;
  W.open("if (m < " + mText() + " && n < " + std::to_string(mm.N) + ")");
  for (size_t i = 0; i < K.values.size(); ++i)
    if (K.values[i].kind == KValue::Kind::MatmulResult && E.Need[i])
      W.line("const float " + E.Names[i] + " = " + accExpr + ";" + E.comment(static_cast<int>(i)));
  E.elementWork(0, LaneCtx::elements("n", K.n, mm.N), "");
  W.close();
}

void MatmulEmitter::kTilesLine(unsigned bk) {
  std::string Bk = std::to_string(bk);
  W.line("const int kTiles = (" + std::to_string(K.matmul->K) + " + " + Bk + " - 1) / " + Bk +
         ";");
}

void MatmulEmitter::cpAsyncPrologue(const std::string &load, unsigned stages, unsigned bk) {
  W.line("#pragma unroll");
  W.open("for (int s = 0; s < " + std::to_string(stages - 1) + "; ++s)");
  W.line("if (s < kTiles) " + load + "(s, (" + E.Idx + ")s * " + std::to_string(bk) + ");");
  W.line("mj_cp_async_commit(); // one group per slice, empty ones included");
  W.close();
}

void MatmulEmitter::openCpAsyncSliceLoop(const std::string &load, unsigned stages, unsigned bk) {
  std::string Stages = std::to_string(stages);
  kTilesLine(bk);
  cpAsyncPrologue(load, stages, bk);
  W.open("for (int t = 0; t < kTiles; ++t)");
  W.line("mj_cp_async_wait<" + std::to_string(stages - 2) + ">(); // slice t has landed");
  W.line("__syncthreads(); // ... for every thread, and all are done with slice t - 1");
  cpAsyncNextSlice(load, stages, bk);
  W.line("const int s = t % " + Stages + ";");
}

void MatmulEmitter::cpAsyncNextSlice(const std::string &load, unsigned stages, unsigned bk) {
  std::string Bk = std::to_string(bk);
  W.line("const int next = t + " + std::to_string(stages - 1) + ";");
  W.line("if (next < kTiles) " + load + "(next % " + std::to_string(stages) + ", (" + E.Idx +
         ")next * " + Bk + "); // into the stage slice t - 1 used");
  W.line("mj_cp_async_commit();");
}

bool MatmulEmitter::vectorEpilogueFits(unsigned vec) const {
  return matmulStoresVectorize(K, vec);
}

void MatmulEmitter::vectorEpilogue(const std::string &accExpr, unsigned vec) {
  const KMatmul &mm = *K.matmul;
  W.open("if (m < " + mText() + " && nv < " + std::to_string(mm.N / vec) + ")");
  LaneCtx lc;
  lc.vec = vec;
  lc.x = K.n;
  lc.extent = mm.N;
  lc.var = "nv";
  for (size_t i = 0; i < K.values.size(); ++i)
    if (K.values[i].kind == KValue::Kind::MatmulResult && E.Need[i])
      lc.readFrom[static_cast<int>(i)] = accExpr;
  E.elementWork(0, lc, "");
  W.close();
}

} // namespace minijit
