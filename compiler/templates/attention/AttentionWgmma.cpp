//===- compiler/templates/attention/AttentionWgmma.cpp - attention on Hopper's wgmma ---===//
// The attention template's body for f16 and bf16 on sm_90a, after
// FlashAttention-3: a block of three warpgroups owns 128 query rows of one
// batch. Warpgroup 0 is the producer: its warps 0 and 1 copy Q's tile once
// and K's tiles of `bc` keys, its warps 2 and 3 V's tiles, by cp.async into
// rings of `stages` tiles of shared memory laid out as wgmma reads them
// (rows of 128 bytes, 64 columns, in the 128-byte swizzle). A copying thread
// announces a tile on the ring slot's `full` mbarrier once its copies of it
// have landed (one tile behind the one it copies) and fenced for the async
// proxy. Warpgroups 1 and 2 are the consumers, 64 query rows each: for each
// tile of keys S = Q K^T by wgmma from shared memory (both operands
// k-major), the slot of K freed at once; the graph's score work and the
// online softmax on S's accumulators (a row's 4 threads combine by
// shuffles); O rescaled, then O += P V by wgmma with P, rounded to the
// inputs' type, as A fragments in registers (an accumulator's layout is
// theirs) and V's tile read n-major; the slot of V freed. With `overlap` (the
// default) a consumer issues tile j's S, then tile j - 1's P V, and runs
// tile j's softmax while P V multiplies (FlashAttention-3's overlap inside a
// warpgroup: two groups of wgmmas in flight, S's waited for first). O is
// multiplied by the row's inverse sum once at the end. setmaxnreg gives the
// producer's registers to the consumers.
//===----------------------------------------------------------------------===//
#include "compiler/emit/CudaEmitter.h"
#include "compiler/emit/ExprEmitter.h"
#include "compiler/templates/attention/AttentionCommon.h"
#include "compiler/templates/attention/AttentionInternal.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit {

namespace {

class AttentionWgmmaEmitter {
public:
  AttentionWgmmaEmitter(KernelEmitter &e, const AttentionWgmmaSchedule &s)
      : E(e), W(e.W), K(e.K), S(s), MM(*e.K.matmul), A(*e.K.attention),
        Stages(std::to_string(s.stages)) {}

  void run() {
    declarations();
    producer();
    consumer();
    W.close(); // the kernel
  }

private:
  // The tiles: Q's as boxes of 128 rows x 64 columns (each 128 * 128
  // bytes), K's as boxes of bc keys x 64 columns, V's as boxes of 64 keys x
  // 64 columns (8192 bytes), those of one block of 64 keys side by side.
  int64_t qBox() const { return int64_t(S.br) * 128; }
  int64_t kBox() const { return int64_t(S.bc) * 128; }
  int64_t vKeyBlock() const { return A.valueDim * 128; }
  /// A thread's accumulators of S (bc keys) and of O (the value dim).
  unsigned sRegs() const { return S.bc / 2; }
  unsigned oRegs() const { return static_cast<unsigned>(A.valueDim / 2); }
  /// The first key of tile `j` (code).
  std::string firstKeyOf(const std::string &j) const {
    return First + " + (" + E.Idx + ")" + j + " * " + std::to_string(S.bc);
  }

  void declarations() {
    W.line("extern __shared__ __align__(1024) unsigned char mj_smem[];");
    W.line("// per slot of the rings of K's ([0]) and V's ([1]) tiles: its tile has landed (full: "
           "the 64 threads that copy it arrive) / both consumers are done with it (empty)");
    W.line("__shared__ __align__(8) unsigned long long mj_full[2][" + Stages + "], mj_empty[2][" +
           Stages + "];");
    W.line("// the 128-byte swizzle repeats every 1024 bytes: the tiles start on such a boundary");
    W.line("unsigned char *const mj_q = mj_smem + (1024 - mj_smem_addr(mj_smem) % 1024) % 1024;");
    W.line(llvm::formatv("unsigned char *const mj_k = mj_q + {0}; // Q's tile: {1} rows x {2}, in "
                         "boxes of 64 columns",
                         S.qBytes, S.br, MM.K)
               .str());
    W.line(llvm::formatv("unsigned char *const mj_v = mj_k + {0}; // K's ring: {1} tiles of {2} "
                         "keys x {3}; then V's: {1} of {2} x {4}",
                         int64_t(S.stages) * S.kBytes, S.stages, S.bc, MM.K, A.valueDim)
               .str());
    attentionTileOrigin(E, S.tilesM, S.br);
    W.line("const " + E.Idx + " mj_qBatch = " + E.idx(MM.aBase) +
           ", mj_kBatch = " + E.idx(MM.bBase) + ";");
    W.line("const " + E.Idx + " mj_vBatch = " + E.idx(A.vBase) +
           ", mj_oBatch = " + E.idx(A.outBase) + ";");
    std::string keys = attentionKeyBound(E, S.br), first = attentionKeyStart(E, S.bc);
    W.line(llvm::formatv("const int mj_tiles = (int)(({0} - {1} + {2}) / {3}); // tiles of keys "
                         "walked: n0 = {1} + j * {3}",
                         keys, first, S.bc - 1, S.bc)
               .str());
    First = first;
    W.open("if (threadIdx.x == 0)");
    W.open("for (int s = 0; s < " + Stages + "; ++s)");
    W.line("mj_mbar_init(&mj_full[0][s], 64), mj_mbar_init(&mj_full[1][s], 64);");
    W.line("mj_mbar_init(&mj_empty[0][s], 2), mj_mbar_init(&mj_empty[1][s], 2); // an arrival "
           "per consumer warpgroup");
    W.close();
    W.line("mj_fence_mbar_init();");
    W.close();
    W.line("__syncthreads();");
  }

  /// Rows row0 ... of an operand (`width` 16-bit columns) into the tile at
  /// `dst`, each 16-byte chunk c8 of row r at byte `place` (code in r and
  /// c8), zeros past the end: by cp.async where a row is whole aligned
  /// chunks, else element by element (stores, fenced like the copies).
  /// The 64 threads of `mj_t` share the work.
  void copyTile(const std::string &what, const std::string &dst, const std::string &place,
                int param, int64_t width, const std::string &row0, int64_t rows,
                const std::string &batch, int64_t strideRow, int64_t strideCol,
                const IndexExpr &base, unsigned tileRows) {
    const KParam &p = K.params[param];
    if (attentionCopiesWholePieces(K, width, strideRow, strideCol, base)) {
      int64_t pieces = width / 8;
      W.line("// " + what + ": 16 bytes a copy; rows past the end are zeros");
      W.open(llvm::formatv("for (int e = mj_t; e < {0}; e += 64)", tileRows * pieces).str());
      W.line(llvm::formatv("const int r = e / {0}, c8 = e % {0};", pieces).str());
      W.line(llvm::formatv("const bool ok = {0} + r < {1};", row0, rows).str());
      W.line(llvm::formatv("mj_cp_async16({0} + {1}, {2} + (ok ? {3} + ({4} + r) * {5} + c8 * 8 : "
                           "0), ok);",
                           dst, place, p.name, batch, row0, strideRow)
                 .str());
      W.close();
      return;
    }
    W.line("// " + what + ", element by element; rows past the end are zeros");
    W.open(llvm::formatv("for (int e = mj_t; e < {0}; e += 64)", tileRows * width).str());
    W.line(llvm::formatv("const int r = e / {0}, c = e % {0}, c8 = c / 8;", width).str());
    W.line(llvm::formatv("*reinterpret_cast<unsigned short *>({0} + {1} + c % 8 * 2) = {2} + r < "
                         "{3} ? {4}[{5} + ({2} + r) * {6} + c * {7}] : (unsigned short)0;",
                         dst, place, row0, rows, p.name, batch, strideRow, strideCol)
               .str());
    W.close();
  }

  void producer() {
    W.open("if (threadIdx.x < 128)");
    W.line("// warpgroup 0, the producer: warps 0 and 1 copy Q's tile and K's, warps 2 and 3 "
           "V's; each thread announces a tile once its copies of it have landed: after it has "
           "issued the next tile's, or before it waits for the next tile's slot");
    W.line("mj_setmaxnreg_dec<56>();");
    W.line("const int mj_kv = threadIdx.x / 64, mj_t = threadIdx.x % 64; // mj_kv: K (0) or V (1)");
    W.open("for (int j = 0; j < mj_tiles; ++j)");
    W.line("const int s = j % " + Stages + ";");
    W.line("const unsigned mj_free = j / " + Stages +
           " % 2 ^ 1; // slot s is free again (at once in the first round)");
    W.line("bool mj_announced = j == 0; // tile j - 1's copies announced");
    W.open("if (!mj_announced && !mj_mbar_test(&mj_empty[mj_kv][s], mj_free))");
    W.line("// slot s is still read: announce tile j - 1 before waiting for it");
    announce("0", "j - 1");
    W.line("mj_announced = true;");
    W.close();
    W.line("mj_mbar_wait(&mj_empty[mj_kv][s], mj_free);");
    W.line("const " + E.Idx + " n0 = " + firstKeyOf("j") + ";");
    W.open("if (mj_kv == 0)");
    W.open("if (j == 0)");
    copyTile("Q's tile", "mj_q",
             llvm::formatv("c8 / 8 * {0} + mj_swizzle128(r, c8 % 8)", qBox()).str(), MM.aParam,
             MM.K, "m0", MM.M, "mj_qBatch", MM.aStrideM, MM.aStrideK, MM.aBase, S.br);
    W.close();
    copyTile("K's tile of keys n0 ...", llvm::formatv("mj_k + s * {0}", S.kBytes).str(),
             llvm::formatv("c8 / 8 * {0} + mj_swizzle128(r, c8 % 8)", kBox()).str(), MM.bParam,
             MM.K, "n0", MM.N, "mj_kBatch", MM.bStrideN, MM.bStrideK, MM.bBase, S.bc);
    W.close();
    W.open("else");
    copyTile(
        "V's tile of keys n0 ... (blocks of 64 keys, each boxes of 64 columns)",
        llvm::formatv("mj_v + s * {0}", S.vBytes).str(),
        llvm::formatv("r / 64 * {0} + c8 / 8 * 8192 + mj_swizzle128(r % 64, c8 % 8)", vKeyBlock())
            .str(),
        A.vParam, A.valueDim, "n0", MM.N, "mj_vBatch", A.vStrideN, A.vStrideD, A.vBase, S.bc);
    W.close();
    W.line("mj_cp_async_commit();");
    W.open("if (!mj_announced)");
    announce("1", "j - 1");
    W.close();
    W.close();
    W.open("if (mj_tiles > 0)");
    announce("0", "mj_tiles - 1");
    W.close();
    W.line("return;");
    W.close();
  }

  /// Announces tile `tile` once this thread's copies of it have landed
  /// (all but the last `pending` groups it committed), fenced for wgmma.
  void announce(const std::string &pending, const std::string &tile) {
    W.line("mj_cp_async_wait<" + pending + ">(); // this thread's copies of tile " + tile +
           " have landed");
    W.line("mj_fence_proxy_async(); // seen by wgmma");
    W.line("mj_mbar_arrive(&mj_full[mj_kv][(" + tile + ") % " + Stages + "]);");
  }

  /// The thread's rows of its warp's 16 (h = 0: mj_g, 1: mj_g + 8) and the
  /// query row of accumulator i: wgmma's layout.
  std::string rowOf(const std::string &i) const {
    return "m0 + mj_wg * 64 + mj_warp * 16 + mj_g + 8 * (" + i + " / 2 % 2)";
  }

  void consumer() {
    W.line("// warpgroups 1 and 2, the consumers: query rows m0 + mj_wg * 64 ... m0 + mj_wg * 64 + "
           "63");
    W.line("mj_setmaxnreg_inc<224>();");
    W.line("const int mj_wg = threadIdx.x / 128 - 1; // the consumer warpgroup");
    W.line("const int mj_warp = threadIdx.x % 128 / 32, mj_lane = threadIdx.x % 32;");
    W.line(
        "// accumulator i holds row mj_g (+8 for i / 2 odd) of the warp's 16, column 8 * (i / 4) "
        "+ mj_c2 (+1 for i odd)");
    W.line("const int mj_g = mj_lane / 4, mj_c2 = 2 * (mj_lane % 4);");
    Log2 = attentionScoresInLog2(E);
    W.line("float mj_rowMax[2], mj_rowSum[2]; // the thread's two rows: running max, and the sum "
           "relative to it");
    W.line("mj_rowMax[0] = mj_rowMax[1] = -MJ_INF;");
    W.line("mj_rowSum[0] = mj_rowSum[1] = 0.0f;");
    W.line(llvm::formatv("float mj_o[{0}]; // O of the thread's rows, {1} columns", oRegs(),
                         A.valueDim)
               .str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int i = 0; i < {0}; ++i) mj_o[i] = 0.0f;", oRegs()).str());
    if (S.overlap)
      overlappedTiles();
    else
      tiles();
    store();
  }

  /// Declares tile j's slot s, its phase mj_phase, its first key n0 and its
  /// scores mj_s.
  void tileOf(const std::string &j) {
    W.line("const int s = " + j + " % " + Stages + ";");
    W.line("const unsigned mj_phase = " + j + " / " + Stages + " % 2;");
    W.line("const " + E.Idx + " n0 = " + firstKeyOf(j) + ";");
    W.line(llvm::formatv("float mj_s[{0}]; // S, then the scores, then the probabilities", sRegs())
               .str());
  }

  /// Each tile in turn, each product waited for at once.
  void tiles() {
    W.open("for (int j = 0; j < mj_tiles; ++j)");
    tileOf("j");
    waitForK();
    issueScores();
    W.line("mj_wgmma_wait<0>();");
    scoresDone();
    scoreWork();
    softmaxStep();
    rescaleO();
    declareP();
    packP();
    waitForV("s", "mj_phase");
    fenceOperands(false, true);
    W.line("mj_wgmma_fence(); // O and P were written by these threads");
    issueProduct("s");
    W.line("mj_wgmma_wait<0>();");
    productDone("s");
    W.close();
  }

  /// FlashAttention-3's overlap inside a warpgroup: tile j's S is issued,
  /// then tile j - 1's P V; the softmax of tile j runs while P V multiplies.
  /// With `pingpong` the two consumers take turns issuing their wgmmas
  /// (named barriers 1 and 2), so that one's softmax runs while the other's
  /// products do: consumer 0 first, each giving the other its turn after
  /// issuing, as many turns each (consumer 1 gives none after its last).
  void overlappedTiles() {
    declareP();
    W.open("if (mj_tiles > 0)");
    if (S.pingpong)
      W.line("if (mj_wg == 1) mj_named_arrive(1, 256); // consumer 0 issues first");
    W.line("// tile 0: its S, its softmax, its P (O is still zero)");
    tileOf("0");
    waitForK();
    takeTurn();
    issueScores();
    giveTurn("");
    W.line("mj_wgmma_wait<0>();");
    scoresDone();
    scoreWork();
    softmaxStep();
    packP();
    W.close();
    W.open("for (int j = 1; j < mj_tiles; ++j)");
    tileOf("j");
    W.line("const int sv = (j - 1) % " + Stages + "; // V's slot of tile j - 1");
    W.line("const unsigned mj_vphase = (j - 1) / " + Stages + " % 2;");
    waitForK();
    if (S.pingpong)
      waitForV("sv", "mj_vphase");
    takeTurn();
    issueScores(/*productNext=*/true);
    W.line("// tile j - 1's P V (O and P last written before the fence above)");
    if (!S.pingpong)
      waitForV("sv", "mj_vphase");
    issueProduct("sv");
    giveTurn("");
    W.line("mj_wgmma_wait<1>(); // S is done; P V may still be multiplying");
    scoresDone();
    scoreWork();
    softmaxStep();
    W.line("mj_wgmma_wait<0>(); // P V is done");
    productDone("sv");
    rescaleO();
    packP();
    W.close();
    W.line("// the last tile's P V");
    W.open("if (mj_tiles > 0)");
    W.line("const int sv = (mj_tiles - 1) % " + Stages + ";");
    W.line("const unsigned mj_vphase = (mj_tiles - 1) / " + Stages + " % 2;");
    waitForV("sv", "mj_vphase");
    takeTurn();
    fenceOperands(false, true);
    W.line("mj_wgmma_fence(); // O and P were written by these threads");
    issueProduct("sv");
    giveTurn("mj_wg == 0"); // consumer 1's last turn is given to no one
    W.line("mj_wgmma_wait<0>();");
    productDone("sv");
    W.close();
  }

  /// With pingpong: waits for this consumer's turn to issue wgmmas.
  void takeTurn() {
    if (S.pingpong)
      W.line("mj_named_sync(1 + mj_wg, 256); // this consumer's turn to issue");
  }

  /// With pingpong: gives the other consumer its turn (where `when`, code,
  /// holds; empty: always).
  void giveTurn(const std::string &when) {
    if (!S.pingpong)
      return;
    W.line((when.empty() ? std::string() : "if (" + when + ") ") +
           "mj_named_arrive(2 - mj_wg, 256); // the other consumer's turn");
  }

  void waitForK() {
    W.line("mj_mbar_wait(&mj_full[0][s], mj_phase); // K's tile (and Q's, with the first)");
  }

  void waitForV(const std::string &slot, const std::string &phase) {
    W.line("mj_mbar_wait(&mj_full[1][" + slot + "], " + phase + "); // V's tile");
  }

  /// Issues S = Q K^T of the warpgroup's rows and the keys of tile s (K's
  /// tile is in), committed as one group.
  void issueScores(bool productNext = false) {
    fenceOperands(true, productNext);
    W.line("mj_wgmma_fence();");
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int kk = 0; kk < {0}; ++kk) // 16 columns each: 32 bytes along a "
                         "box's rows, a box each 4",
                         MM.K / 16)
               .str());
    W.line(llvm::formatv("  {0}<0, 0>(mj_s, mj_wgmma_desc(mj_q + kk / 4 * {1} + mj_wg * 8192, 16, "
                         "1024) + kk % 4 * 2, mj_wgmma_desc(mj_k + s * {2} + kk / 4 * {3}, 16, "
                         "1024) + kk % 4 * 2, kk > 0);",
                         wgmmaName(S.bc, MM.dtype), qBox(), S.kBytes, kBox())
               .str());
    W.line("mj_wgmma_commit();");
    W.line("mj_fence_acc(mj_s);");
  }

  /// The registers the next wgmmas read or write, as the compiler's before
  /// the fence (their writes stay before it): with `scores` S's, with
  /// `product` O's and P's.
  void fenceOperands(bool scores, bool product) {
    W.line(std::string(scores ? "mj_fence_acc(mj_s); " : "") +
           (product ? "mj_fence_acc(mj_o); mj_fence_frags(mj_p); " : "") +
           "// written before the fence");
  }

  /// Once S's wgmmas are waited for: S read as the compiler's, K's slot freed.
  void scoresDone() {
    W.line("mj_fence_acc(mj_s);");
    W.line("if (threadIdx.x % 128 == 0) mj_mbar_arrive(&mj_empty[0][s]); // K's slot is free");
  }

  /// The graph's work on each accumulator of S; -inf past the ends.
  void scoreWork() {
    W.line("float mj_tileMax[2] = {-MJ_INF, -MJ_INF};");
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", sRegs()).str());
    std::string pos = attentionPosType(E);
    W.line("const " + pos + " m = " + rowOf("i") + ";");
    W.line("const " + pos + " n = n0 + i / 4 * 8 + mj_c2 + i % 2;");
    attentionScoreWork(E, "mj_s[i]", "past the ends",
                       ScoreBounds{MM.M % S.br != 0, MM.N % S.bc != 0});
    W.line("mj_s[i] = mj_score;");
    W.line("mj_tileMax[i / 2 % 2] = mj_max_nan(mj_tileMax[i / 2 % 2], mj_score);");
    W.close();
  }

  void softmaxStep() {
    attentionRescale(E, 2, Log2);
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", sRegs()).str());
    W.line("mj_s[i] = " + attentionExp(Log2, "mj_s[i] - mj_base[i / 2 % 2]") + ";");
    W.line("mj_tileSum[i / 2 % 2] += mj_s[i];");
    W.close();
    attentionAddTileSums(E, 2);
  }

  /// O rescaled to the tile's new max, unless no row of the warp has a new max (a factor of
  /// exactly 1, as most tiles past the first few leave it): the warp skips
  /// the multiplies then. A NaN factor is not 1, and spreads as before.
  void rescaleO() {
    W.open("if (__any_sync(0xffffffffu, mj_rescale[0] != 1.0f || mj_rescale[1] != 1.0f))");
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int i = 0; i < {0}; ++i) mj_o[i] *= mj_rescale[i / 2 % 2];", oRegs())
               .str());
    W.close();
  }

  void declareP() {
    W.line(llvm::formatv("unsigned mj_p[{0}][4]; // P as A fragments, keys kk * 16 ...: "
                         "accumulators 8 kk ... 8 kk + 7 in pairs",
                         S.bc / 16)
               .str());
  }

  /// The probabilities in mj_s, rounded to the inputs' type, into mj_p.
  void packP() {
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int kk = 0; kk < {0}; ++kk)", S.bc / 16).str());
    W.line("#pragma unroll");
    W.line("for (int q = 0; q < 4; ++q) mj_p[kk][q] = " +
           attentionPack(MM.dtype, "mj_s[8 * kk + 2 * q]", "mj_s[8 * kk + 2 * q + 1]") + ";");
    W.close();
  }

  /// Issues O += P V with V's tile in slot `slot` (it is in), committed as
  /// one group.
  void issueProduct(const std::string &slot) {
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int kk = 0; kk < {0}; ++kk) // 16 keys each: 16 rows of a box of "
                         "64 keys, a block of boxes each 4",
                         S.bc / 16)
               .str());
    W.line(llvm::formatv("  {0}<1>(mj_o, mj_p[kk], mj_wgmma_desc(mj_v + {1} * {2} + kk / 4 * {3}, "
                         "8192, 1024) + kk % 4 * 128, 1);",
                         wgmmaRsName(static_cast<unsigned>(A.valueDim), MM.dtype), slot, S.vBytes,
                         vKeyBlock())
               .str());
    W.line("mj_wgmma_commit();");
    W.line("mj_fence_acc(mj_o); mj_fence_frags(mj_p);");
  }

  /// Once P V's wgmmas are waited for: O read as the compiler's, V's slot
  /// `slot` freed.
  void productDone(const std::string &slot) {
    W.line("mj_fence_acc(mj_o);");
    W.line("if (threadIdx.x % 128 == 0) mj_mbar_arrive(&mj_empty[1][" + slot +
           "]); // V's slot is free");
  }

  /// O over the rows' sums. Accumulators i and i + 1 (i even) are
  /// neighbouring columns of one row: stored as one 4-byte (16-bit O) or
  /// 8-byte (f32 O) store where O's rows are contiguous and aligned for it.
  void store() {
    const KParam &o = K.params[A.outParam];
    std::string value = "mj_o[i] * mj_inv[i / 2 % 2]";
    int64_t d = K.ctx.divisibility(A.outBase);
    bool pairs = A.outStrideD == 1 && A.outStrideM % 2 == 0 && (d == 0 || d % 2 == 0) &&
                 (o.dtype == DType::F16 || o.dtype == DType::BF16 || o.dtype == DType::F32);
    W.line(std::string("// O = the accumulated P V over the row's sum (times its inverse, one "
                       "division a row)") +
           (pairs ? ", two neighbouring columns a store" : ""));
    W.line("const float mj_inv[2] = {1.0f / mj_rowSum[0], 1.0f / mj_rowSum[1]};");
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; i += {1})", oRegs(), pairs ? 2 : 1).str());
    W.line("const " + attentionPosType(E) + " m = " + rowOf("i") + ";");
    W.line("const int col = i / 4 * 8 + mj_c2 + i % 2;");
    if (!pairs) {
      W.line(llvm::formatv("if (m < {0}) {1}[mj_oBatch + m * {2} + col * {3}] = {4};", MM.M, o.name,
                           A.outStrideM, A.outStrideD, storeConv(o.dtype, value))
                 .str());
      W.close();
      return;
    }
    W.line("const float lo = mj_o[i] * mj_inv[i / 2 % 2], hi = mj_o[i + 1] * mj_inv[i / 2 % 2];");
    std::string at = llvm::formatv("&{0}[mj_oBatch + m * {1} + col]", o.name, A.outStrideM).str();
    if (o.dtype == DType::F32)
      W.line("if (m < " + std::to_string(MM.M) + ") *reinterpret_cast<float2 *>(" + at +
             ") = make_float2(lo, hi);");
    else
      W.line("if (m < " + std::to_string(MM.M) + ") *reinterpret_cast<unsigned *>(" + at +
             ") = " + attentionPack(o.dtype, "lo", "hi") + ";");
    W.close();
  }

  KernelEmitter &E;
  CodeWriter &W;
  const LoweredKernel &K;
  const AttentionWgmmaSchedule &S;
  const KMatmul &MM;
  const KAttention &A;
  const std::string Stages;
  std::string First; ///< the walk's first key (code)
  bool Log2 = false; ///< the scores in log2 units (attentionScoresInLog2)
};

} // namespace

void emitAttentionWgmma(KernelEmitter &e, const AttentionWgmmaSchedule &s) {
  AttentionWgmmaEmitter(e, s).run();
}

} // namespace minijit
