//===- compiler/templates/matmul/MatmulWgmmaSplit.cpp - exact f32 as three TF32 products, split in the kernel ---===//
// An f32 product C = A @ B with both operands k-major (x and nn.Linear's W)
// as three TF32 products, A_hi B_hi + A_lo B_hi_cross + A_hi_cross B_lo,
// whose parts the kernel makes itself, so that no part crosses DRAM
// (MatmulWgmmaSchedule::splitInKernel). The consumers compute the tile's
// transpose, C^T = B^T A^T: B's rows are wgmma's A operand, read from
// registers, where each thread splits its own fragment; A's tile is
// wgmma's B operand, split into parts in shared memory by the producer
// warpgroup. Each k-slice's product goes into accumulators of its own,
// added to the tile's sum on the CUDA cores, rounded to nearest (as
// promote does): the tensor cores' sums span 32 of k.
//
// Two rings of shared memory. Ring A (`stages` stages, filled by TMA): B's
// 128 x 32 tile, then A's bm x 32 tile as stored. Ring B (two stages): A's
// three parts, hi, lo and hi_cross, each bm x 32, written by the producer's
// threads (one row each) with k permuted inside the slice, so that a
// consumer thread's fragment of a k-slice is 8 consecutive floats of B's
// row: logical column 8 s + j (k-step s, fragment column j) holds physical
// column 8 (j % 4) + 2 s + j / 4. Both operands are permuted alike, so the
// sum over k is the same.
//
// Barriers: `loaded` (ring A's stage has landed: the TMA bytes), `freeA`
// (the producer's threads have read its A tile and both consumers its B
// tile), `full` (ring B's parts are written), `freeB` (both consumers are
// done with them). Slices are counted over all the tiles a block walks, so
// the rings run on from one tile into the next.
//===----------------------------------------------------------------------===//
#include "compiler/emit/CudaEmitter.h"
#include "compiler/templates/matmul/MatmulTiles.h"

namespace minijit {

namespace {

/// The kernel's body, after KernelEmitter::header: the declarations, the
/// producer's branch, the consumers' loop (run()).
class SplitEmitter : MatmulEmitter {
  const MatmulWgmmaSchedule &S;
  /// numbers of the schedule as code: the TMA ring's stages and a stage's
  /// bytes, B's tile's bytes, one part's bytes, A's rows, accumulators
  const std::string Stages, StageBytes, BBytes, PartBytes, Bm, Regs;

public:
  SplitEmitter(KernelEmitter &e, const MatmulWgmmaSchedule &s)
      : MatmulEmitter(e, s), S(s), Stages(std::to_string(s.stages)),
        StageBytes(std::to_string(s.stageBytes())), BBytes(std::to_string(s.bn * s.bk * 4)),
        PartBytes(std::to_string(s.bm * s.bk * 4)), Bm(std::to_string(s.bm)),
        Regs(std::to_string(s.bm / 2)) {}

  void run() {
    declarations();
    producer();
    consumer();
    W.raw("}\n"); // the kernel's, opened by the header
  }

private:
  void declarations() {
    W.line("// ring A: " + Stages + " stages of " + StageBytes + " bytes (B's 128x32 tile, then A's " +
           Bm + "x32 as stored); ring B: 2 stages of A's mj_parts mj_hi, mj_lo, hi_cross (" + PartBytes +
           " bytes each)");
    W.line("extern __shared__ __align__(1024) unsigned char mj_smem[];");
    W.line("__shared__ __align__(8) unsigned long long mj_loaded[" + Stages + "], mj_freeA[" +
           Stages + "], mj_full[2], mj_freeB[2];");
    W.line("unsigned char *const mj_ringA = mj_smem + (1024 - mj_smem_addr(mj_smem) % 1024) % 1024;");
    W.line("unsigned char *const mj_ringB = mj_ringA + " + std::to_string(S.stages * S.stageBytes()) +
           ";");
    W.line("const int kTiles = " + std::to_string((K.matmul->K + S.bk - 1) / S.bk) +
           "; // k-slices of 32");
    W.line("const int mj_tiles = " + tilesMText() + " * " +
           std::to_string(S.tilesN * K.matmul->batch) + "; // m fastest, then n, then the batch");
    W.line("// the slices of every tile this block walks (tiles blockIdx.x, + gridDim.x, ...)");
    W.line("const long long mj_slices = (long long)((mj_tiles - (int)blockIdx.x + (int)gridDim.x - "
           "1) / (int)gridDim.x) * kTiles;");
    W.open("if (threadIdx.x == 0)");
    W.open("for (int s = 0; s < " + Stages + "; ++s)");
    W.line("mj_mbar_init(&mj_loaded[s], 1);     // thread 0's arrival, plus the bytes TMA brings");
    W.line("mj_mbar_init(&mj_freeA[s], 128 + 2); // the producer's threads and one per consumer");
    W.close();
    W.open("for (int s = 0; s < 2; ++s)");
    W.line("mj_mbar_init(&mj_full[s], 128);");
    W.line("mj_mbar_init(&mj_freeB[s], 2);");
    W.close();
    W.line("mj_fence_mbar_init();");
    W.close();
    W.line("__syncthreads();");
  }

  /// m0, n0 (and b where batched) of tile `tileVar`.
  void tileCoordinates(const std::string &tileVar) {
    std::string perBatch = "(" + tilesMText() + " * " + std::to_string(S.tilesN) + ")";
    if (K.matmul->batch > 1)
      W.line("const " + E.Idx + " b = " + tileVar + " / " + perBatch + ";");
    if (!E.symbolic() && S.tilesM == 1) {
      W.line("const " + E.Idx + " m0 = 0;");
      W.line("const " + E.Idx + " n0 = (" + E.Idx + ")(" + tileVar + " % " +
             std::to_string(S.tilesN) + ") * 128;");
      return;
    }
    W.line("const " + E.Idx + " m0 = (" + E.Idx + ")(" + tileVar + " % " +
           tilesMText() + ") * " + Bm + ";");
    W.line("const " + E.Idx + " n0 = (" + E.Idx + ")(" + tileVar + " / " +
           tilesMText() + " % " + std::to_string(S.tilesN) + ") * 128;");
  }

  void producer() {
    W.open("if (threadIdx.x < 128)");
    W.line("// warpgroup 0, the producer: thread 0 issues ring A's loads " +
           std::to_string(S.stages - 1) + " slices ahead; thread r < " + Bm +
           " splits row r of A's tile into ring B");
    W.line("mj_setmaxnreg_dec<56>();");
    W.line("const int r = threadIdx.x;");
    W.line("// slice q of this block's walk into ring A, once its stage is free");
    W.open("auto mj_issue = [&](long long mj_q)");
    W.line("const int tile = (int)blockIdx.x + (int)(mj_q / kTiles) * (int)gridDim.x;");
    tileCoordinates("tile");
    W.line("const int t = (int)(mj_q % kTiles), mj_sa = (int)(mj_q % " + Stages + ");");
    W.line("mj_mbar_wait(&mj_freeA[mj_sa], (unsigned)(mj_q / " + Stages + " % 2) ^ 1);");
    W.line("unsigned char *const stage = mj_ringA + mj_sa * " + StageBytes + ";");
    W.line("mj_mbar_expect_tx(&mj_loaded[mj_sa], " + StageBytes + ");");
    std::string bb = S.b.batchStride ? ", " + tmaCoord("b") : "";
    std::string ab = S.a.batchStride ? ", " + tmaCoord("b") : "";
    W.line("mj_tma_load(stage, mj_tmB, &mj_loaded[mj_sa], t * 32, " + tmaCoord("n0") + bb +
           "); // B's 128 rows");
    W.line("mj_tma_load(stage + " + BBytes + ", mj_tmA, &mj_loaded[mj_sa], t * 32, " + tmaCoord("m0") +
           ab + "); // A's " + Bm + " rows");
    W.close("};");
    W.line("if (r == 0)");
    W.line("  for (long long mj_q = 0; mj_q < " + std::to_string(S.stages - 1) +
           " && mj_q < mj_slices; ++mj_q) mj_issue(mj_q);");
    W.open("for (long long mj_q = 0; mj_q < mj_slices; ++mj_q)");
    W.line("const int mj_sa = (int)(mj_q % " + Stages + "), mj_sb = (int)(mj_q % 2);");
    W.line("mj_mbar_wait(&mj_loaded[mj_sa], (unsigned)(mj_q / " + Stages + " % 2));");
    W.line("mj_mbar_wait(&mj_freeB[mj_sb], (unsigned)(mj_q / 2 % 2) ^ 1);");
    W.open("if (r < " + Bm + ")");
    W.line("const unsigned char *const mj_raw = mj_ringA + mj_sa * " + StageBytes + " + " + BBytes + ";");
    W.line("unsigned char *const mj_parts = mj_ringB + mj_sb * " + std::to_string(3 * S.bm * S.bk * 4) +
           ";");
    W.line("#pragma unroll");
    W.open("for (int mj_half = 0; mj_half < 2; ++mj_half)");
    W.line("// logical 16-byte chunks L = 4 * mj_half .. + 3 take element i from physical column 8 "
           "* i + L, in physical chunks 2 * j + mj_half");
    W.line("float4 p[4];");
    W.line("#pragma unroll");
    W.line("for (int j = 0; j < 4; ++j) p[j] = *reinterpret_cast<const float4 *>(mj_raw + "
           "mj_swizzle128(r, 2 * j + mj_half));");
    W.line("#pragma unroll");
    W.open("for (int e = 0; e < 4; ++e)");
    W.line("unsigned mj_hi[4], mj_cross[4], mj_lo[4];");
    W.line("#pragma unroll");
    W.line("for (int i = 0; i < 4; ++i) mj_split_tf32x3((&p[i].x)[e], mj_hi[i], mj_cross[i], mj_lo[i]);");
    W.line("const int mj_at = mj_swizzle128(r, 4 * mj_half + e);");
    W.line("*reinterpret_cast<uint4 *>(mj_parts + mj_at) = make_uint4(mj_hi[0], mj_hi[1], mj_hi[2], mj_hi[3]);");
    W.line("*reinterpret_cast<uint4 *>(mj_parts + " + PartBytes +
           " + mj_at) = make_uint4(mj_lo[0], mj_lo[1], mj_lo[2], mj_lo[3]);");
    W.line("*reinterpret_cast<uint4 *>(mj_parts + " + std::to_string(2 * S.bm * S.bk * 4) +
           " + mj_at) = make_uint4(mj_cross[0], mj_cross[1], mj_cross[2], mj_cross[3]);");
    W.close();
    W.close();
    W.close();
    W.line("mj_fence_proxy_async(); // the mj_parts, seen by wgmma");
    W.line("mj_mbar_arrive(&mj_full[mj_sb]);");
    W.line("mj_mbar_arrive(&mj_freeA[mj_sa]);");
    W.line("if (r == 0 && mj_q + " + std::to_string(S.stages - 1) + " < mj_slices) mj_issue(mj_q + " +
           std::to_string(S.stages - 1) + ");");
    W.close();
    W.line("return;");
    W.close();
  }

  void consumer() {
    W.line("// warpgroups 1 and 2, the consumers: rows c * 64 .. c * 64 + 63 of B's tile, as "
           "wgmma's A from registers");
    W.line("mj_setmaxnreg_inc<224>();");
    W.line("const int c = threadIdx.x / 128 - 1;");
    W.line("const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;");
    W.line("const int row = c * 64 + warp * 16 + lane / 4; // and row + 8: this thread's rows of "
           "B's tile");
    W.line("float acc[" + Regs + "], mj_part[" + Regs +
           "]; // the tile's sum; a k-slice's product");
    W.line("long long mj_q = 0; // slices of the walk so far");
    W.open("for (int tile = blockIdx.x; tile < mj_tiles; tile += gridDim.x)");
    tileCoordinates("tile");
    W.line("#pragma unroll");
    W.line("for (int i = 0; i < " + Regs + "; ++i) acc[i] = 0.0f;");
    W.open("for (int t = 0; t < kTiles; ++t, ++mj_q)");
    W.line("const int mj_sa = (int)(mj_q % " + Stages + "), mj_sb = (int)(mj_q % 2);");
    W.line("mj_mbar_wait(&mj_loaded[mj_sa], (unsigned)(mj_q / " + Stages + " % 2));");
    W.line("const unsigned char *const mj_tileB = mj_ringA + mj_sa * " + StageBytes + ";");
    W.line("// physical columns 8 * (lane % 4) .. + 7 of rows row and row + 8: logical columns "
           "lane % 4 and lane % 4 + 4 of each k-step");
    W.line("float4 mj_w[4];");
    W.line("mj_w[0] = *reinterpret_cast<const float4 *>(mj_tileB + mj_swizzle128(row, 2 * (lane % 4)));");
    W.line("mj_w[1] = *reinterpret_cast<const float4 *>(mj_tileB + mj_swizzle128(row, 2 * (lane % 4) + "
           "1));");
    W.line("mj_w[2] = *reinterpret_cast<const float4 *>(mj_tileB + mj_swizzle128(row + 8, 2 * (lane % "
           "4)));");
    W.line("mj_w[3] = *reinterpret_cast<const float4 *>(mj_tileB + mj_swizzle128(row + 8, 2 * (lane % 4) "
           "+ 1));");
    W.line("const float *const mj_w0 = &mj_w[0].x, *const mj_w8 = &mj_w[2].x;");
    W.line("unsigned mj_hi[4][4], mj_cross[4][4], mj_lo[4][4]; // [k-step][fragment register]");
    W.line("#pragma unroll");
    W.open("for (int s = 0; s < 4; ++s)");
    W.line("// fragment columns q = lane % 4 and q + 4; a0: (row, q), a1: (row + 8, q), a2: (row, q + "
           "4), a3: (row + 8, q + 4)");
    W.line("mj_split_tf32x3(mj_w0[2 * s], mj_hi[s][0], mj_cross[s][0], mj_lo[s][0]);");
    W.line("mj_split_tf32x3(mj_w8[2 * s], mj_hi[s][1], mj_cross[s][1], mj_lo[s][1]);");
    W.line("mj_split_tf32x3(mj_w0[2 * s + 1], mj_hi[s][2], mj_cross[s][2], mj_lo[s][2]);");
    W.line("mj_split_tf32x3(mj_w8[2 * s + 1], mj_hi[s][3], mj_cross[s][3], mj_lo[s][3]);");
    W.close();
    W.line("mj_mbar_wait(&mj_full[mj_sb], (unsigned)(mj_q / 2 % 2));");
    W.line("const unsigned char *const mj_parts = mj_ringB + mj_sb * " +
           std::to_string(3 * S.bm * S.bk * 4) + ";");
    W.line("const unsigned long long mj_dHi = mj_wgmma_desc(mj_parts, 16, 1024), mj_dLo = "
           "mj_wgmma_desc(mj_parts + " + PartBytes + ", 16, 1024), mj_dCross = mj_wgmma_desc(mj_parts + " +
           std::to_string(2 * S.bm * S.bk * 4) + ", 16, 1024);");
    std::string fn = wgmmaRsName(S.bm, DType::F32);
    W.line("mj_wgmma_fence();");
    W.line("#pragma unroll");
    W.line("// B_hi A_hi + B_hi_cross A_lo + B_lo A_hi_cross, k-step by k-step");
    W.open("for (int s = 0; s < 4; ++s)");
    W.line(fn + "(mj_part, mj_hi[s], mj_dHi + 2 * s, s > 0);");
    W.line(fn + "(mj_part, mj_cross[s], mj_dLo + 2 * s, 1);");
    W.line(fn + "(mj_part, mj_lo[s], mj_dCross + 2 * s, 1);");
    W.close();
    W.line("mj_wgmma_commit();");
    W.line("mj_wgmma_wait<0>();");
    W.line("if (threadIdx.x % 128 == 0) mj_mbar_arrive(&mj_freeA[mj_sa]), "
           "mj_mbar_arrive(&mj_freeB[mj_sb]);");
    W.line("mj_add_acc(acc, mj_part);");
    W.close();
    tileEpilogue();
    W.close();
  }

  /// The fused epilogue on the tile's transposed accumulators: accumulator
  /// r holds row (n) row + 8 * (r / 2 % 2) of B's tile, column (m) 8 * (r /
  /// 4) + 2 * (lane % 4) + r % 2 of A's.
  void tileEpilogue() {
    W.line("// epilogue: accumulator r is C[m0 + 8 * (r / 4) + 2 * (lane % 4) + r % 2][n0 + row + "
           "r / 2 % 2 * 8]");
    W.line("#pragma unroll");
    W.open("for (int r = 0; r < " + Regs + "; ++r)");
    W.line("const " + E.Idx + " m = m0 + r / 4 * 8 + lane % 4 * 2 + r % 2;");
    W.line("const " + E.Idx + " n = n0 + row + r / 2 % 2 * 8;");
    epilogue("acc[r]");
    W.close();
  }
};

} // namespace

void emitMatmulWgmmaSplit(KernelEmitter &e, const MatmulWgmmaSchedule &s) {
  SplitEmitter(e, s).run();
}

} // namespace minijit
