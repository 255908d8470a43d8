//===- compiler/templates/matmul/MatmulWgmma.cpp - tensor-core matmul on Hopper (sm_90a) ---===//
// Warp-specialised: warpgroup 0 is the producer (one thread issues the TMA
// loads of each k-slice into a ring of `stages` shared-memory stages, an
// mbarrier per stage saying it has landed); warpgroups 1 and 2 are the
// consumers (each multiplies 64 rows of the 128-row tile with wgmma straight
// from shared memory, frees the stage through a second mbarrier, then runs
// the fused epilogue on its accumulators). setmaxnreg gives the producer's
// registers to the consumers. The grid is persistent: each block walks tiles
// blockIdx.x, + gridDim.x, ..., so the producer already loads the next tile
// while the consumers store this one.
//
// In clusters of two (cluster=2) the blocks of a cluster walk pairs of tiles
// along m, the same n: each loads its A tile and half of the B tile they
// share, which TMA multicasts into both blocks' stages. A stage is then
// refilled only once the consumers of both blocks are done with it (each
// arrives on both blocks' `empty` barrier), and a block leaves only once the
// other's consumers are done with its stages (the producer's last waits).
//
// Shared memory per stage: A's 128 x bk tile, then B's bn x bk tile, each in
// rows of 128 bytes swizzled by TMA (128-byte swizzle): bk = 64 for f16 and
// bf16, 32 for f32 read as TF32. A k-major operand is one box (rows of k);
// an m- or n-major one (16-bit only: TF32's wgmma has no transposed form) is
// boxes of 64 x 64 (rows of 64 m or n, one row per k) side by side, which
// wgmma reads transposed.
//===----------------------------------------------------------------------===//
#include "compiler/emit/CudaEmitter.h"
#include "compiler/templates/matmul/MatmulTiles.h"

#include <cassert>

namespace minijit {

namespace {

class WgmmaEmitter : MatmulEmitter {
public:
  WgmmaEmitter(KernelEmitter &e, const MatmulWgmmaSchedule &s)
      : MatmulEmitter(e, s), S(s), Stages(std::to_string(s.stages)),
        StageBytes(std::to_string(s.stageBytes())),
        ABytes(std::to_string(s.bm * s.bk * s.elementBytes)), Bk(std::to_string(s.bk)),
        Regs(std::to_string(s.bn / 2)), Clustered(s.cluster == 2),
        First(Clustered ? "mj_cid" : "blockIdx.x"),
        Stride(Clustered ? "mj_clusters" : "gridDim.x") {}

  void run() {
    declarations();
    producer();
    consumer();
    W.raw("}\n");
  }

private:
  void declarations() {
    W.line("// " + Stages + " stages of " + StageBytes + " bytes: A's " + std::to_string(S.bm) +
           "x" + Bk + " tile, then B's " + std::to_string(S.bn) + "x" + Bk);
    W.line("extern __shared__ __align__(1024) unsigned char mj_smem[];");
    W.line("// per stage: its tiles have landed (full) / both consumers are done with it (empty)");
    W.line("__shared__ __align__(8) unsigned long long mj_full[" + Stages + "], mj_empty[" +
           Stages + "];");
    if (S.pingpong)
      W.line("__shared__ __align__(8) unsigned long long mj_turn[2]; // consumer c may multiply "
             "(the other's mainloop of the tile before is done)");
    W.line("// the 128-byte swizzle repeats every 1024 bytes: the stages start on such a boundary");
    W.line("unsigned char *const tiles = mj_smem + (1024 - mj_smem_addr(mj_smem) % 1024) % 1024;");
    W.line("const int kTiles = " + std::to_string((K.matmul->K + S.bk - 1) / S.bk) +
           "; // k-slices of " + Bk);
    if (E.symbolic())
      W.line("const int mj_tiles = " + rowsWalked() + " * " +
             std::to_string(S.tilesN * K.matmul->batch) + "; // " +
             (Clustered ? "pairs of tiles" : "tiles") + " of this launch's m");
    if (Clustered) {
      W.line("// cluster mj_cid of mj_clusters walks pairs of tiles; this block takes the pair's "
             "tile mj_rank along m");
      W.line("const int mj_rank = mj_cluster_rank(), mj_cid = mj_cluster_id(), mj_clusters = "
             "mj_cluster_count();");
    }
    W.open("if (threadIdx.x == 0)");
    W.open("for (int s = 0; s < " + Stages + "; ++s)");
    W.line("mj_mbar_init(&mj_full[s], 1);  // the producer's arrival, plus the bytes TMA brings");
    if (S.pingpong)
      W.line("mj_mbar_init(&mj_empty[s], 1); // the arrival of the consumer that used it");
    else if (Clustered)
      W.line("mj_mbar_init(&mj_empty[s], 4); // one arrival per consumer warpgroup of either "
             "block");
    else
      W.line("mj_mbar_init(&mj_empty[s], 2); // one arrival per consumer warpgroup");
    W.close();
    if (S.pingpong)
      W.line("mj_mbar_init(&mj_turn[0], 1), mj_mbar_init(&mj_turn[1], 1);");
    W.line("mj_fence_mbar_init();");
    W.close();
    if (Clustered)
      W.line("mj_cluster_sync(); // the other block's barriers are ready before anything reaches "
             "them");
    else
      W.line("__syncthreads();");
  }

  /// The tile rows the grid walks, as code: tilesM, or its pairs.
  std::string rowsWalked() const {
    if (!Clustered)
      return tilesMText();
    return E.symbolic() ? "(" + tilesMText() + " + 1) / 2" : std::to_string((S.tilesM + 1) / 2);
  }

  bool batched() const { return K.matmul->batch > 1; }

  /// The tiles the grid walks, as code: a number, or the local the
  /// declarations compute from this launch's m.
  std::string tilesText() const {
    return E.symbolic() ? "mj_tiles" : std::to_string(S.walked());
  }

  /// Whether the epilogue's loads or stores read the batch index `b`.
  bool epilogueUsesBatch() const {
    IndexContext ctx = K.ctx;
    for (const KStore &st : K.stores)
      if (ctx.mentions(st.offset, K.b))
        return true;
    for (const KValue &v : K.values)
      if ((v.kind == KValue::Kind::Load || v.kind == KValue::Kind::Index) &&
          ctx.mentions(v.offset, K.b))
        return true;
    return false;
  }

  /// m0, n0 (and b, where `withBatch`) of linear tile `tile`: batch-major,
  /// then groups of 8 tile rows walked down each column, so the tiles in
  /// flight at once share rows of A and columns of B in the L2. In clusters
  /// `tile` counts pairs of tile rows, and the block takes its rank's row.
  void tileCoordinates(bool withBatch) {
    std::string perBatch = E.symbolic() ? rowsWalked() + " * " + std::to_string(S.tilesN)
                                        : std::to_string(S.walked() / K.matmul->batch);
    std::string groupTiles = std::to_string(8 * S.tilesN);
    std::string at = "tile";
    if (batched()) {
      W.line("const int inBatch = tile % " + perBatch + ";");
      at = "inBatch";
    }
    if (withBatch)
      W.line("const " + E.Idx + " b = tile / " + perBatch + "; // batch");
    W.line("const int group = " + at + " / " + groupTiles + ", firstM = group * 8;");
    W.line("const int groupRows = min(" + rowsWalked() + " - firstM, 8);");
    if (Clustered)
      W.line("const " + E.Idx + " m0 = ((firstM + " + at + " % groupRows) * 2 + mj_rank) * " +
             std::to_string(S.bm) + ";");
    else
      W.line("const " + E.Idx + " m0 = (firstM + " + at + " % groupRows) * " +
             std::to_string(S.bm) + ";");
    W.line("const " + E.Idx + " n0 = (" + at + " % " + groupTiles + " / groupRows) * " +
           std::to_string(S.bn) + ";");
  }

  /// The TMA loads of one operand's slice at k0 = t * bk into `dst`. A
  /// `shared` one (B in a cluster) loads only this block's half of the rows,
  /// into both blocks (cta mask 3).
  void loads(const WgmmaOperand &w, const std::string &map, const std::string &dst,
             const std::string &outer0, unsigned rows, bool shared) {
    std::string batch = w.batchStride ? ", " + tmaCoord("b") : "";
    std::string call = shared ? "mj_tma_load_multicast(" : "mj_tma_load(";
    std::string bar = shared ? ", &mj_full[s], 3, " : ", &mj_full[s], ";
    if (w.kMajor) {
      std::string half = std::to_string(rows / 2);
      if (shared)
        W.line(call + dst + " + mj_rank * " + std::to_string(rows / 2 * 128) + ", " + map + bar +
               "t * " + Bk + ", " + tmaCoord("(" + outer0 + " + mj_rank * " + half + ")") + batch +
               ");");
      else
        W.line(call + dst + ", " + map + bar + "t * " + Bk + ", " + tmaCoord(outer0) + batch + ");");
      return;
    }
    // boxes of 64 rows of m (n) by bk, 8192 bytes each; in a cluster the
    // block's half of them
    unsigned boxes = shared ? rows / 128 : rows / 64;
    for (unsigned j = 0; j < boxes; ++j) {
      std::string box = "(mj_rank * " + std::to_string(boxes) + " + " + std::to_string(j) + ")";
      std::string at = shared ? " + " + box + " * 8192" : j ? " + " + std::to_string(j * 8192) : "";
      std::string from = shared ? " + " + box + " * 64" : j ? " + " + std::to_string(j * 64) : "";
      W.line(call + dst + at + ", " + map + bar + tmaCoord(outer0) + from + ", t * " + Bk + batch +
             ");");
    }
  }

  void producer() {
    W.open("if (threadIdx.x < 128)");
    W.line("// warpgroup 0, the producer: one thread issues the loads, the others leave");
    W.line("mj_setmaxnreg_dec<40>();");
    W.line("if (threadIdx.x != 0) return;");
    W.line("int s = 0;");
    W.line("unsigned phase = 0; // of stage s in the ring, flipping each time round");
    W.open("for (int tile = " + First + "; tile < " + tilesText() + "; tile += " + Stride + ")");
    tileCoordinates(S.a.batchStride || S.b.batchStride);
    W.open("for (int t = 0; t < kTiles; ++t)");
    W.line(std::string("mj_mbar_wait(&mj_empty[s], phase ^ 1); // stage s is free again") +
           (Clustered ? " in both blocks" : "") + " (at once in round 0)");
    W.line("unsigned char *const stage = tiles + s * " + StageBytes + ";");
    W.line(std::string("mj_mbar_expect_tx(&mj_full[s], ") + StageBytes + ");" +
           (Clustered ? " // A's tile, this block's half of B's and the other's" : ""));
    loads(S.a, "mj_tmA", "stage", "m0", S.bm, false);
    loads(S.b, "mj_tmB", "stage + " + ABytes, "n0", S.bn, Clustered);
    W.line("if (++s == " + Stages + ") s = 0, phase ^= 1;");
    W.close();
    W.close();
    if (Clustered) {
      W.line("// the other block's consumers arrive on this block's barriers up to its last "
             "stage: wait for them all before leaving");
      W.open("for (int i = 0; i < " + Stages + "; ++i)");
      W.line("mj_mbar_wait(&mj_empty[s], phase ^ 1);");
      W.line("if (++s == " + Stages + ") s = 0, phase ^= 1;");
      W.close();
    }
    W.line("return;");
    W.close();
  }

  /// The consumer loop, for consumer c: in the cooperative form both take
  /// every tile, c its 64 rows; in the ping-pong form each takes every other
  /// tile of the block, all 128 rows (two wgmmas of 64 rows, mh = 0 and 1,
  /// per k step), so one's epilogue runs while the other multiplies. `i`
  /// counts the block's tiles: tile i's k-slices take slots i * kTiles .. of
  /// the ring.
  void consumer() {
    bool pp = S.pingpong;
    std::string acc = pp ? "acc[mh]" : "acc";
    if (pp)
      W.line("// warpgroups 1 and 2, the consumers: every other tile each, all 128 rows");
    else
      W.line("// warpgroups 1 and 2, the consumers: rows c * 64 .. c * 64 + 63 of each tile");
    W.line("mj_setmaxnreg_inc<232>();");
    W.line("const int c = threadIdx.x / 128 - 1;");
    W.line("const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;");
    if (pp)
      W.line("float acc[2][" + Regs + "]; // rows 0..63 and 64..127 of the tile");
    else
      W.line("float acc[" + Regs + "];");
    if (S.promote)
      W.line("float mj_even[" + Regs + "], mj_odd[" + Regs +
             "]; // the even and odd k-slices' products, each started afresh, added to acc once "
             "done");
    if (pp)
      W.open("for (int i = c, tile = blockIdx.x + c * gridDim.x; tile < " + tilesText() +
             "; i += 2, tile += 2 * gridDim.x)");
    else
      W.open("for (int i = 0, tile = " + First + "; tile < " + tilesText() + "; ++i, tile += " +
             Stride + ")");
    tileCoordinates(epilogueUsesBatch());
    W.line("const long long slot = (long long)i * kTiles; // this tile's first slot of the ring");
    W.line("int s = slot % " + Stages + ";");
    W.line("unsigned phase = slot / " + Stages + " % 2;");
    if (S.promote) {
      W.line("#pragma unroll");
      W.line("for (int r = 0; r < " + Regs + "; ++r) acc[r] = 0.0f; // this tile's sum");
    }
    if (pp) {
      // The mainloops take turns: a consumer waits until the other has
      // multiplied tile i - 1 (its ((i - 1) / 2)-th), so the two never wait on
      // ring slots more than one round apart (a parity names one round only).
      W.line("if (i > 0) // the other's mainloop of tile i - 1 is done");
      W.line("  mj_mbar_wait(&mj_turn[c], (i - 1) / 2 % 2);");
    }
    kSlices(acc);
    if (pp) { // every slot of this tile has landed: the other may wait on the slots after them
      W.line("if (threadIdx.x % 128 == 0) // its turn, during this epilogue");
      W.line("  mj_mbar_arrive(&mj_turn[c ^ 1]);");
    }
    W.line("mj_wgmma_wait<0>();");
    if (S.promote) {
      W.line("if ((kTiles - 1) % 2 == 0) mj_add_acc(acc, mj_even); // the last slice");
      W.line("else mj_add_acc(acc, mj_odd);");
    }
    if (pp) {
      W.line("mj_fence_acc(acc[0]);");
      W.line("mj_fence_acc(acc[1]);");
    } else {
      W.line("mj_fence_acc(acc);");
    }
    W.line(release("(s + " + std::to_string(S.stages - 1) + ") % " + Stages));
    tileEpilogue(acc);
    W.close();
  }

  /// A tile's k-slices: each waits for its stage, multiplies it into `acc`
  /// (or, with promote, into the even or odd slice's accumulators, the one
  /// before added to acc once done) and frees the stage before it.
  void kSlices(const std::string &acc) {
    const KMatmul &mm = *K.matmul;
    bool pp = S.pingpong;
    std::string fn = wgmmaName(S.bn, mm.dtype) + "<" + (S.a.kMajor ? "0" : "1") + ", " +
                     (S.b.kMajor ? "0" : "1") + ">";
    // k-major: rows of 128 bytes, 8-row groups 1024 bytes apart; one wgmma's
    // k (16 of f16, 8 of TF32) is 32 bytes along the row. m/n-major: rows of
    // 64 m (n) per k, 64 x 64 boxes 8192 bytes apart; 16 of k are 16 rows,
    // 2048 bytes. Either way 64 rows of A start 8192 bytes after the 64
    // before.
    auto desc = [&](const WgmmaOperand &w, const std::string &at) {
      return "mj_wgmma_desc(" + at + ", " + (w.kMajor ? "16" : "8192") + ", 1024)";
    };
    std::string aStep = S.a.kMajor ? "2" : "128", bStep = S.b.kMajor ? "2" : "128";
    std::string last = std::to_string(S.stages - 1);
    W.open("for (int t = 0; t < kTiles; ++t)");
    W.line("mj_mbar_wait(&mj_full[s], phase);");
    W.line("const unsigned char *const stage = tiles + s * " + StageBytes + ";");
    W.line("const unsigned long long descB = " + desc(S.b, "stage + " + ABytes) + ";");
    W.line("mj_wgmma_fence();");
    std::string ks = "k" + std::to_string(S.kStep()); // k16 or k8: the wgmma of the slice
    // The slice's four wgmmas into `into`, adding to it where `accumulate`.
    auto slice = [&](const std::string &into, const std::string &accumulate) {
      W.line("#pragma unroll");
      W.line("for (int " + ks + " = 0; " + ks + " < 4; ++" + ks +
             ") // the descriptors move by 16-byte units");
      W.line("  " + fn + "(" + into + ", descA + " + ks + " * " + aStep + ", descB + " + ks +
             " * " + bStep + ", " + accumulate + ");");
    };
    if (pp) {
      W.line("#pragma unroll");
      W.open("for (int mh = 0; mh < 2; ++mh)");
      W.line("const unsigned long long descA = " + desc(S.a, "stage + mh * 8192") + ";");
    } else {
      W.line("const unsigned long long descA = " + desc(S.a, "stage + c * 8192") + ";");
    }
    if (S.promote) {
      W.open("if (t % 2 == 0)");
      slice("mj_even", ks + " > 0");
      W.close();
      W.open("else");
      slice("mj_odd", ks + " > 0");
      W.close();
    } else {
      slice(acc, "t > 0 || " + ks + " > 0");
    }
    if (pp)
      W.close();
    W.line("mj_wgmma_commit();");
    W.line("mj_wgmma_wait<1>(); // the slice before this one is done: free its stage");
    if (S.promote) {
      W.line("// slice t - 1 is done: its product into the sum");
      W.open("if (t > 0)");
      W.line("if (t % 2 == 1) mj_add_acc(acc, mj_even);");
      W.line("else mj_add_acc(acc, mj_odd);");
      W.close();
    }
    W.line("if (t > 0)");
    W.line("  " + release("(s + " + last + ") % " + Stages));
    W.line("if (++s == " + Stages + ") s = 0, phase ^= 1;");
    W.close();
  }

  /// The fused epilogue on the accumulators `acc` of a finished tile.
  void tileEpilogue(const std::string &acc) {
    bool pp = S.pingpong;
    W.line("// epilogue: accumulator r holds row 16 * warp + lane / 4 (+8 for r / 2 odd) of the "
           "64, column 8 * (r / 4) + 2 * (lane % 4) (+1 for r odd)");
    if (pp) {
      W.line("#pragma unroll");
      W.open("for (int mh = 0; mh < 2; ++mh)");
    }
    std::string rows = std::string(pp ? "mh" : "c") + " * 64"; // the first of this warpgroup's 64
    std::string row = "const " + E.Idx + " m = m0 + " + rows +
                      " + warp * 16 + lane / 4 + r / 2 % 2 * 8;";
    if (S.stagedEpilogue) { // (the schedule checked its stores: matmulStoreRun)
      stagedEpilogue(acc, rows);
    } else if (vectorEpilogueFits(2)) {
      W.line("#pragma unroll");
      // accumulators r and r + 1 are neighbouring columns: one pair of
      // element work, whose stores move both at once
      W.open("for (int r = 0; r < " + Regs + "; r += 2)");
      W.line(row);
      W.line("const " + E.Idx + " nv = (n0 + r / 4 * 8 + lane % 4 * 2) / 2; // columns 2 * nv, "
             "2 * nv + 1");
      vectorEpilogue(acc + "[r + j]", 2);
      W.close();
    } else {
      W.line("#pragma unroll");
      W.open("for (int r = 0; r < " + Regs + "; ++r)");
      W.line(row);
      W.line("const " + E.Idx + " n = n0 + r / 4 * 8 + lane % 4 * 2 + r % 2;");
      epilogue(acc + "[r]");
      W.close();
    }
    if (pp)
      W.close();
  }

  /// The epilogue through the consumer's buffer in shared memory (after the
  /// stages), 64 columns at a time: each thread leaves its accumulators'
  /// pairs there, then takes `run` consecutive columns of a row (four, or
  /// two or one where n is not a multiple of four: matmulStoreRun), so that
  /// a warp's stores are whole lines (two rows of 64 columns), or 64 or 32
  /// consecutive columns of one row. `acc` names the
  /// accumulators, `rows` the code of the warpgroup's first row in the tile.
  void stagedEpilogue(const std::string &acc, const std::string &rows) {
    const unsigned run = matmulStoreRun(K);
    assert(run != 0 && "the schedule stages only stores that run along the rows");
    const std::string Row = std::to_string(MatmulWgmmaSchedule::kStagedRowFloats);
    const std::string offset = std::to_string(S.stages * S.stageBytes());
    const std::string perRow = std::to_string(64 / run); // threads across a row of the chunk
    const char *columns = run == 4   ? "four consecutive columns"
                          : run == 2 ? "two consecutive columns"
                                     : "one column";
    W.line("// epilogue through shared memory, 64 columns at a time: the accumulators' pairs into "
           "this warpgroup's 64 x 64 buffer (rows padded to " + Row + " floats), then " +
           columns + " of a row a thread: a warp stores " +
           (run == 4 ? "whole lines" : "consecutive columns of a row"));
    W.line("float *const mj_out = reinterpret_cast<float *>(tiles + " + offset + " + c * " +
           std::to_string(MatmulWgmmaSchedule::kStagedBufferBytes) + ");");
    W.line("#pragma unroll");
    W.open("for (int mj_ch = 0; mj_ch < " + std::to_string(S.bn / 64) + "; ++mj_ch)");
    W.line("#pragma unroll");
    W.line("for (int r = mj_ch * 32; r < mj_ch * 32 + 32; r += 2) // the chunk's accumulators: columns "
           "8 * (r / 4) ..");
    W.line("  *reinterpret_cast<float2 *>(&mj_out[(warp * 16 + lane / 4 + r / 2 % 2 * 8) * " + Row +
           " + r / 4 % 8 * 8 + lane % 4 * 2]) = make_float2(" + acc + "[r], " + acc + "[r + 1]);");
    W.line("mj_warpgroup_sync(c);");
    W.line("#pragma unroll");
    W.open("for (int part = 0; part < " + std::to_string(32 / run) + "; ++part)");
    W.line("const int e = threadIdx.x % 128 + part * 128, row = e / " + perRow + ", mj_q = e % " +
           perRow + ";");
    W.line("const " + E.Idx + " m = m0 + " + rows + " + row;");
    if (run == 1) {
      W.line("const float mj_v = mj_out[row * " + Row + " + mj_q];");
      W.line("const " + E.Idx + " n = n0 + mj_ch * 64 + mj_q;");
      epilogue("mj_v");
    } else {
      std::string type = run == 4 ? "float4" : "float2", R = std::to_string(run);
      W.line("const " + type + " mj_v = *reinterpret_cast<const " + type + " *>(&mj_out[row * " +
             Row + " + mj_q * " + R + "]);");
      W.line("const " + E.Idx + " nv = (n0 + mj_ch * 64) / " + R + " + mj_q; // columns " + R +
             " * nv .. " + R + " * nv + " + std::to_string(run - 1));
      vectorEpilogue("(&mj_v.x)[j]", run);
    }
    W.close();
    W.line("mj_warpgroup_sync(c); // read before the next chunk is written");
    W.close();
  }

  /// A consumer warpgroup frees stage `stage`: its first thread arrives on
  /// the stage's `empty` barrier; in a cluster its first two threads, on
  /// both blocks' barriers (block 0's and block 1's).
  std::string release(const std::string &stage) const {
    if (Clustered)
      return "if (threadIdx.x % 128 < 2) mj_mbar_arrive_cluster(&mj_empty[" + stage +
             "], threadIdx.x % 128);";
    return "if (threadIdx.x % 128 == 0) mj_mbar_arrive(&mj_empty[" + stage + "]);";
  }

  const MatmulWgmmaSchedule &S;
  const std::string Stages, StageBytes, ABytes, Bk, Regs;
  const bool Clustered;
  const std::string First, Stride; ///< the walk's first tile and step
};

} // namespace

void emitMatmulWgmma(KernelEmitter &e, const MatmulWgmmaSchedule &s) { WgmmaEmitter(e, s).run(); }

} // namespace minijit
