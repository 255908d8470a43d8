//===- compiler/templates/attention/AttentionMma.cpp - attention on the tensor cores ---===//
// The attention template's body for f16 and bf16 (FlashAttention-2's
// forward with mma.sync m16n8k16): a block of warps owns `br` query rows
// of one batch, a warp 16 of them or, with two row tiles a warp, 32 (each
// fragment of K and V read from shared memory then feeds twice the
// products). Q's fragments are loaded once (ldmatrix from shared memory)
// where they fit the registers, else again for each tile of keys; K and V
// have a tile of shared memory each, copied by
// cp.async one step ahead (V's while S is computed, the next K's while P V
// is); for each tile of `bc` keys, S = Q K^T goes to f32
// accumulators, the graph's score work runs on each accumulator (the
// element emitter, m and n the accumulator's row and key), each row keeps
// its running max and sum (the four threads of a row combine by shuffles),
// and the probabilities, rounded to the inputs' type, are the A fragments
// of P V, whose B fragments come from V's tile by ldmatrix.trans. O stays
// in f32 accumulators and is divided by the sum once at the end.
//===----------------------------------------------------------------------===//
#include "compiler/emit/ExprEmitter.h"
#include "compiler/templates/attention/AttentionCommon.h"
#include "compiler/templates/attention/AttentionInternal.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace minijit {

namespace {

class AttentionMmaEmitter {
public:
  AttentionMmaEmitter(KernelEmitter &e, const AttentionMmaSchedule &s)
      : E(e), W(e.W), K(e.K), S(s), MM(*e.K.matmul), A(*e.K.attention),
        Mma(MM.dtype == DType::BF16 ? "mj_mma_bf16" : "mj_mma_f16") {}

  void run() {
    prologue();
    loadTile("Q's tile, once", "mj_q", MM.aParam, MM.K, qStride(), "m0", MM.M, "mj_qBatch",
             MM.aStrideM, MM.aStrideK, MM.aBase, S.br);
    W.line("mj_cp_async_commit();");
    std::string keys = attentionKeyBound(E, S.br), first = attentionKeyStart(E, S.bc);
    loadTile("K's first tile", "mj_k", MM.bParam, MM.K, kStride(), first, MM.N, "mj_kBatch",
             MM.bStrideN, MM.bStrideK, MM.bBase, S.bc);
    W.line("mj_cp_async_commit();");
    W.line("mj_cp_async_wait<1>(); // Q's tile is in (K's may still be on its way)");
    W.line("__syncthreads();");
    queryFragments();
    Log2 = attentionScoresInLog2(E);
    W.line(llvm::formatv("float mj_rowMax[{0}], mj_rowSum[{0}]; // the thread's rows [2 * r + i / "
                         "2]: running max, and the sum relative to it",
                         threadRows())
               .str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int h = 0; h < {0}; ++h) mj_rowMax[h] = -MJ_INF, mj_rowSum[h] = 0.0f;",
                         threadRows())
               .str());
    accumulators("mj_o", A.valueDim / 8, "O of the warp's rows, an accumulator per row tile and 8 "
                                         "columns");
    // K's tile n0 is copied while the last tile's P V runs, V's while S and
    // the softmax of this one run (cp.async where rows are whole 16 bytes).
    W.open(llvm::formatv("for ({0} n0 = {3}; n0 < {1}; n0 += {2})", E.Idx, keys, S.bc, first).str());
    W.line("mj_cp_async_wait<0>();");
    W.line("__syncthreads(); // K's tile is in; every warp is done with the last tile of V");
    loadTile("V's tile of keys n0 ...", "mj_v", A.vParam, A.valueDim, vStride(), "n0", MM.N,
             "mj_vBatch", A.vStrideN, A.vStrideD, A.vBase, S.bc);
    W.line("mj_cp_async_commit();");
    scores();
    scoreWork();
    softmaxStep();
    W.line("mj_cp_async_wait<0>();");
    W.line("__syncthreads(); // V's tile is in; every warp is done with K's");
    W.open(llvm::formatv("if (n0 + {0} < {1})", S.bc, keys).str());
    loadTile("K's next tile", "mj_k", MM.bParam, MM.K, kStride(),
             llvm::formatv("n0 + {0}", S.bc).str(), MM.N, "mj_kBatch", MM.bStrideN, MM.bStrideK,
             MM.bBase, S.bc);
    W.line("mj_cp_async_commit();");
    W.close();
    accumulate();
    W.close();
    store();
    W.close(); // the kernel
  }

private:
  // Rows padded by 8 halves (16 bytes): ldmatrix's eight row addresses fall
  // in different banks.
  int64_t qStride() const { return MM.K + 8; }
  int64_t kStride() const { return MM.K + 8; }
  int64_t vStride() const { return A.valueDim + 8; }
  int64_t keyTiles() const { return S.bc / 8; }

  /// `#pragma unroll`, then a loop of r over the warp's row tiles, opened.
  void openRowTiles() {
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int r = 0; r < {0}; ++r)", S.rowTiles).str());
  }

  /// Declares `name`[rowTiles][tiles][4], an mma accumulator per row tile
  /// and 8 columns, zeroed.
  void accumulators(const std::string &name, int64_t tiles, const std::string &what) {
    W.line(llvm::formatv("float {0}[{1}][{2}][4]; // {3}", name, S.rowTiles, tiles, what).str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int r = 0; r < {0}; ++r)", S.rowTiles).str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("  for (int t = 0; t < {0}; ++t) {1}[r][t][0] = {1}[r][t][1] = "
                         "{1}[r][t][2] = {1}[r][t][3] = 0.0f;",
                         tiles, name)
               .str());
  }

  void prologue() {
    const std::string &Idx = E.Idx;
    W.line("extern __shared__ __align__(16) unsigned char mj_smem[];");
    W.line(llvm::formatv("unsigned short *mj_q = reinterpret_cast<unsigned short *>(mj_smem); // "
                         "Q's tile, {0} x {1} (rows padded by 8)",
                         S.br, MM.K)
               .str());
    W.line(llvm::formatv("unsigned short *mj_k = mj_q + {0}; // K's tile: {1} keys",
                         S.br * qStride(), S.bc)
               .str());
    W.line(llvm::formatv("unsigned short *mj_v = mj_k + {0}; // V's tile", S.bc * kStride()).str());
    attentionTileOrigin(E, S.tilesM, S.br);
    W.line("const int mj_warp = threadIdx.x / 32, mj_lane = threadIdx.x % 32;");
    W.line("// The thread's rows of the warp's 16 (mj_g and mj_g + 8) and, in each 8-column tile "
           "of an accumulator, its two columns (mj_c2, mj_c2 + 1): mma.sync's layout");
    W.line("const int mj_g = mj_lane / 4, mj_c2 = 2 * (mj_lane % 4);");
    W.line("const " + Idx + " mj_qBatch = " + E.idx(MM.aBase) + ", mj_kBatch = " + E.idx(MM.bBase) +
           ";");
    W.line("const " + Idx + " mj_vBatch = " + E.idx(A.vBase) + ", mj_oBatch = " + E.idx(A.outBase) +
           ";");
  }

  /// Rows row0 ... of an operand into `dst` as stored (16-bit), zeros past
  /// the end: by cp.async of 16 bytes where a row is whole aligned 16-byte
  /// pieces (waited for with mj_cp_async_wait), else element by element.
  void loadTile(const std::string &what, const std::string &dst, int param, int64_t width,
                int64_t stride, const std::string &row0, int64_t rows, const std::string &batch,
                int64_t strideRow, int64_t strideCol, const IndexExpr &base, unsigned tileRows) {
    const KParam &p = K.params[param];
    if (attentionCopiesWholePieces(K, width, strideRow, strideCol, base)) {
      int64_t pieces = width / 8;
      W.line("// " + what + ": 16 bytes a copy; rows past the end are zeros");
      W.open(
          llvm::formatv("for (int e = threadIdx.x; e < {0}; e += {1})", tileRows * pieces, S.block)
              .str());
      W.line(llvm::formatv("const int r = e / {0}, c = e % {0} * 8;", pieces).str());
      W.line(llvm::formatv("const bool ok = {0} + r < {1};", row0, rows).str());
      W.line(
          llvm::formatv(
              "mj_cp_async16(&{0}[r * {1} + c], {2} + (ok ? {3} + ({4} + r) * {5} + c : 0), ok);",
              dst, stride, p.name, batch, row0, strideRow)
              .str());
      W.close();
      return;
    }
    W.line("// " + what + "; rows past the end are zeros");
    W.open(llvm::formatv("for (int e = threadIdx.x; e < {0}; e += {1})", tileRows * width, S.block)
               .str());
    W.line(llvm::formatv("const int r = e / {0}, c = e % {0};", width).str());
    W.line(
        llvm::formatv("{0}[r * {1} + c] = {2} + r < {3} ? {4}[{5} + ({2} + r) * {6} + c * {7}] : "
                      "(unsigned short)0;",
                      dst, stride, row0, rows, p.name, batch, strideRow, strideCol)
            .str());
    W.close();
  }

  /// Q's fragments stay in registers when a thread holds at most 32 of them
  /// (head dims up to 128 with one row tile a warp, 64 with two) and, with
  /// O's and S's accumulators, at most 200 registers: K = 64 beside a value
  /// dim of 128 with two row tiles reads them again (--emit=resources: 48
  /// bytes of spills holding them at 1024 keys, none reading them again).
  bool qInRegisters() const {
    int64_t q = S.rowTiles * (MM.K / 16) * 4, o = S.rowTiles * (A.valueDim / 8) * 4,
            s = S.rowTiles * keyTiles() * 4;
    return q <= 32 && q + o + s <= 200;
  }

  /// ldmatrix of the A fragments of the warp's row tile `r`, columns kk * 16 ... of Q.
  std::string qLoad(const std::string &dst, const std::string &r, const std::string &kk) const {
    return llvm::formatv("mj_ldmatrix_x4({0}, &mj_q[((mj_warp * {1} + {2}) * 16 + mj_lane % 8 + 8 "
                         "* ((mj_lane / 8) % 2)) * {3} + {4} * 16 + 8 * (mj_lane / 16)]);",
                         dst, S.rowTiles, r, qStride(), kk)
        .str();
  }

  void queryFragments() {
    if (!qInRegisters()) {
      W.line("// Q's fragments are read from its tile for each tile of keys (they would not fit "
             "the registers)");
      return;
    }
    W.line(llvm::formatv("unsigned mj_qf[{0}][{1}][4]; // the warp's rows of Q as A fragments, 16 "
                         "columns each",
                         S.rowTiles, MM.K / 16)
               .str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int r = 0; r < {0}; ++r)", S.rowTiles).str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("  for (int kk = 0; kk < {0}; ++kk)", MM.K / 16).str());
    W.line("    " + qLoad("mj_qf[r][kk]", "r", "kk"));
  }

  /// S of the warp's rows and the tile's keys: an accumulator per row tile and 8 keys.
  void scores() {
    accumulators("mj_s", keyTiles(), "S, then the scores, then the probabilities");
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int kk = 0; kk < {0}; ++kk)", MM.K / 16).str());
    std::string qf = "mj_qf[r][kk]";
    if (!qInRegisters()) {
      W.line(llvm::formatv("unsigned qf[{0}][4];", S.rowTiles).str());
      W.line("#pragma unroll");
      W.line(llvm::formatv("for (int r = 0; r < {0}; ++r) ", S.rowTiles).str() +
             qLoad("qf[r]", "r", "kk"));
      qf = "qf[r]";
    }
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int tp = 0; tp < {0}; ++tp)", keyTiles() / 2).str());
    W.line("unsigned kf[4]; // B fragments of keys tp * 16 ... (two 8-key tiles), columns kk * 16 "
           "...");
    W.line(llvm::formatv("mj_ldmatrix_x4(kf, &mj_k[(tp * 16 + mj_lane % 8 + 8 * (mj_lane / 16)) * "
                         "{0} + kk * 16 + 8 * ((mj_lane / 8) % 2)]);",
                         kStride())
               .str());
    W.line("const unsigned b0[2] = {kf[0], kf[1]}, b1[2] = {kf[2], kf[3]};");
    openRowTiles();
    W.line(Mma + "(mj_s[r][2 * tp], " + qf + ", b0);");
    W.line(Mma + "(mj_s[r][2 * tp + 1], " + qf + ", b1);");
    W.close();
    W.close();
    W.close();
  }

  /// The query row of accumulator element i of the warp's row tile r.
  std::string rowOf(const std::string &r, const std::string &i) const {
    return llvm::formatv("m0 + (mj_warp * {0} + {1}) * 16 + mj_g + 8 * ({2} / 2)", S.rowTiles, r, i)
        .str();
  }
  /// The thread's rows: two a row tile (mj_g and mj_g + 8), [2 * r + i / 2].
  unsigned threadRows() const { return 2 * S.rowTiles; }

  /// The graph's work on each accumulator of S; -inf past the ends.
  void scoreWork() {
    W.line(llvm::formatv("float mj_tileMax[{0}];", threadRows()).str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int h = 0; h < {0}; ++h) mj_tileMax[h] = -MJ_INF;", threadRows())
               .str());
    openRowTiles();
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int t = 0; t < {0}; ++t)", keyTiles()).str());
    W.line("#pragma unroll");
    W.open("for (int i = 0; i < 4; ++i)");
    W.line("const " + attentionPosType(E) + " m = " + rowOf("r", "i") + ";");
    W.line("const " + attentionPosType(E) + " n = n0 + t * 8 + mj_c2 + i % 2;");
    attentionScoreWork(E, "mj_s[r][t][i]", "past the ends",
                       ScoreBounds{MM.M % S.br != 0, MM.N % S.bc != 0});
    W.line("mj_s[r][t][i] = mj_score;");
    W.line("mj_tileMax[2 * r + i / 2] = mj_max_nan(mj_tileMax[2 * r + i / 2], mj_score);");
    W.close();
    W.close();
    W.close();
  }

  void softmaxStep() {
    attentionRescale(E, threadRows(), Log2);
    openRowTiles();
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int t = 0; t < {0}; ++t)", keyTiles()).str());
    W.line("#pragma unroll");
    W.open("for (int i = 0; i < 4; ++i)");
    // The fast exp (ex2.approx, relative error near 2^-21, results below
    // 2^-126 flushed to 0): the probabilities are rounded to 16 bits for
    // P V, far coarser. The subtraction comes first: folded into an fma as
    // s log2(e) - max log2(e), the rounding of max log2(e) would be an
    // absolute error in the exponent, large for the large finite masks
    // models use (-1e9, the type's lowest value).
    W.line("mj_s[r][t][i] = " + attentionExp(Log2, "mj_s[r][t][i] - mj_base[2 * r + i / 2]") + ";");
    W.line("mj_tileSum[2 * r + i / 2] += mj_s[r][t][i];");
    W.close();
    W.close();
    W.close();
    attentionAddTileSums(E, threadRows());
  }

  void accumulate() {
    W.line("// O += P V over the tile, after rescaling O to the new max");
    openRowTiles();
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int t = 0; t < {0}; ++t)", A.valueDim / 8).str());
    W.line("mj_o[r][t][0] *= mj_rescale[2 * r];");
    W.line("mj_o[r][t][1] *= mj_rescale[2 * r];");
    W.line("mj_o[r][t][2] *= mj_rescale[2 * r + 1];");
    W.line("mj_o[r][t][3] *= mj_rescale[2 * r + 1];");
    W.close();
    W.close();
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int kk = 0; kk < {0}; ++kk)", S.bc / 16).str());
    W.line("// keys kk * 16 ...: the accumulators of S are the A fragments' layout");
    W.line(llvm::formatv("unsigned pf[{0}][4];", S.rowTiles).str());
    openRowTiles();
    W.line("pf[r][0] = " + attentionPack(MM.dtype, "mj_s[r][2 * kk][0]", "mj_s[r][2 * kk][1]") +
           ";");
    W.line("pf[r][1] = " + attentionPack(MM.dtype, "mj_s[r][2 * kk][2]", "mj_s[r][2 * kk][3]") +
           ";");
    W.line("pf[r][2] = " +
           attentionPack(MM.dtype, "mj_s[r][2 * kk + 1][0]", "mj_s[r][2 * kk + 1][1]") + ";");
    W.line("pf[r][3] = " +
           attentionPack(MM.dtype, "mj_s[r][2 * kk + 1][2]", "mj_s[r][2 * kk + 1][3]") + ";");
    W.close();
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int tp = 0; tp < {0}; ++tp)", A.valueDim / 16).str());
    W.line("unsigned vf[4]; // B fragments of V's columns tp * 16 ... (two 8-column tiles)");
    W.line(
        llvm::formatv("mj_ldmatrix_x4_trans(vf, &mj_v[(kk * 16 + mj_lane % 8 + 8 * ((mj_lane / 8) "
                      "% 2)) * {0} + tp * 16 + 8 * (mj_lane / 16)]);",
                      vStride())
            .str());
    W.line("const unsigned b0[2] = {vf[0], vf[1]}, b1[2] = {vf[2], vf[3]};");
    openRowTiles();
    W.line(Mma + "(mj_o[r][2 * tp], pf[r], b0);");
    W.line(Mma + "(mj_o[r][2 * tp + 1], pf[r], b1);");
    W.close();
    W.close();
    W.close();
  }

  void store() {
    const KParam &o = K.params[A.outParam];
    W.line("// O = the accumulated P V over the row's sum");
    openRowTiles();
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int t = 0; t < {0}; ++t)", A.valueDim / 8).str());
    W.line("#pragma unroll");
    W.open("for (int i = 0; i < 4; ++i)");
    W.line("const " + attentionPosType(E) + " m = " + rowOf("r", "i") + ";");
    W.line("const int c = t * 8 + mj_c2 + i % 2;");
    W.line(llvm::formatv("if (m < {0}) {1}[mj_oBatch + m * {2} + c * {3}] = {4};", MM.M, o.name,
                         A.outStrideM, A.outStrideD,
                         storeConv(o.dtype, "mj_o[r][t][i] / mj_rowSum[2 * r + i / 2]"))
               .str());
    W.close();
    W.close();
    W.close();
  }

  KernelEmitter &E;
  CodeWriter &W;
  const LoweredKernel &K;
  const AttentionMmaSchedule &S;
  const KMatmul &MM;
  const KAttention &A;
  const std::string Mma;
  bool Log2 = false; ///< the scores in log2 units (attentionScoresInLog2)
};

} // namespace

void emitAttentionMma(KernelEmitter &e, const AttentionMmaSchedule &s) {
  AttentionMmaEmitter(e, s).run();
}

} // namespace minijit
