//===- compiler/templates/attention/Attention.cpp - softmax(g(A @ B)) @ V in one kernel ---===//
// The attention template's body (FlashAttention-2's forward on the CUDA
// cores): a block owns a tile of query rows of one batch; it walks the keys
// in tiles, computes the tile's scores from Q's tile and K's tile in shared
// memory, applies the graph's score work to each (the expression emitter,
// as a matmul epilogue), keeps each row's running max and sum, and adds the
// tile's probabilities times V's tile (the same shared buffer, after K) to
// the row's share of O, rescaled whenever the max grows. O is divided by the
// sum once at the end. Arithmetic is f32; f16 and bf16 are converted on
// loading and on the store.
//===----------------------------------------------------------------------===//
#include "compiler/emit/ExprEmitter.h"
#include "compiler/templates/attention/AttentionCommon.h"
#include "compiler/templates/attention/AttentionInternal.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace minijit {

namespace {

class AttentionEmitter {
public:
  AttentionEmitter(KernelEmitter &e, const AttentionSchedule &s)
      : E(e), W(e.W), K(e.K), S(s), MM(*e.K.matmul), A(*e.K.attention) {}

  void run() {
    prologue();
    loadQueries();
    W.line(llvm::formatv("float mj_rowMax[{0}], mj_rowSum[{0}]; // each row's running max, its "
                         "sum relative to it",
                         R())
               .str());
    W.line(llvm::formatv("float mj_o[{0}][{1}]; // O[row i][{2}], not yet divided by the sum", R(),
                         outPerThread(), column())
               .str());
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", R()).str());
    W.line("mj_rowMax[i] = -MJ_INF;");
    W.line("mj_rowSum[i] = 0.0f;");
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int j = 0; j < {0}; ++j) mj_o[i][j] = 0.0f;", outPerThread()).str());
    W.close();
    std::string keys = attentionKeyBound(E, S.br), first = attentionKeyStart(E, S.bc);
    W.open(llvm::formatv("for ({0} n0 = {3}; n0 < {1}; n0 += {2})", E.Idx, keys, S.bc, first).str());
    W.line("__syncthreads(); // every thread is done with the last tile of V and probabilities");
    loadTile("K", MM.bParam, MM.K, "mj_kBatch", MM.bStrideN, MM.bStrideK);
    W.line("__syncthreads();");
    scores();
    softmaxStep();
    W.line("__syncthreads(); // K's tile is read, the probabilities written");
    loadTile("V", A.vParam, A.valueDim, "mj_vBatch", A.vStrideN, A.vStrideD);
    W.line("__syncthreads();");
    accumulate();
    W.close();
    store();
    W.close(); // the kernel
  }

private:
  unsigned R() const { return S.rowsPerThread; }
  /// Row groups of the tile: a thread's rows are mj_group + groups() * i.
  unsigned groups() const { return S.br / S.rowsPerThread; }
  /// The tile's row of the thread's row i.
  std::string tileRow() const { return llvm::formatv("(mj_group + {0} * i)", groups()).str(); }
  int64_t outPerThread() const { return A.valueDim / S.threadsPerRow; }
  int64_t keysPerThread() const { return S.bc / S.threadsPerRow; }
  // Rows of Q's and the K/V tile are padded by a float4: reads of float4s
  // stay aligned, and the rows a warp reads at once fall in other banks.
  int64_t qStride() const { return MM.K + 4; }
  int64_t kvStride() const { return std::max(MM.K, A.valueDim) + 4; }
  /// A thread's columns of O are contiguous (its share of V's rows read as
  /// float4s) where they are whole float4s; else every threadsPerRow-th.
  bool vectorColumns() const { return outPerThread() % 4 == 0; }
  /// Column of O (and of V's tile) of the thread's accumulator j.
  std::string column() const {
    if (vectorColumns())
      return llvm::formatv("mj_part * {0} + j", outPerThread()).str();
    return llvm::formatv("mj_part + {0} * j", S.threadsPerRow).str();
  }

  void prologue() {
    const std::string &Idx = E.Idx;
    W.line("extern __shared__ __align__(16) unsigned char mj_smem[];");
    W.line(llvm::formatv("float *mj_q = reinterpret_cast<float *>(mj_smem); // Q's tile, {0} x {1} "
                         "(rows padded by a float4)",
                         S.br, MM.K)
               .str());
    W.line(llvm::formatv("float *mj_kv = mj_q + {0}; // K's tile, then V's: {1} keys", S.br * qStride(),
                         S.bc)
               .str());
    W.line(llvm::formatv("float *mj_p = mj_kv + {0}; // the tile's probabilities, {1} x {2}",
                         S.bc * kvStride(), S.br, S.bc)
               .str());
    W.line("const " + Idx + " b = blockIdx.x / " + std::to_string(S.tilesM) + "; // batch");
    W.line("const " + Idx + " m0 = (blockIdx.x % " + std::to_string(S.tilesM) + ") * " +
           std::to_string(S.br) + "; // the tile's first query row");
    W.line(
        llvm::formatv("const int mj_group = threadIdx.x / {0}; // the thread's rows of the tile: "
                      "mj_group + {1} * i, i < {2}",
                      S.threadsPerRow, groups(), R())
            .str());
    W.line(llvm::formatv("const int mj_part = threadIdx.x % {0}; // its share: keys and columns of "
                         "O mj_part, mj_part + {0}, ...",
                         S.threadsPerRow)
               .str());
    W.line("const " + Idx + " mj_qBatch = " + E.idx(MM.aBase) + ", mj_kBatch = " + E.idx(MM.bBase) +
           ";");
    W.line("const " + Idx + " mj_vBatch = " + E.idx(A.vBase) + ", mj_oBatch = " + E.idx(A.outBase) +
           ";");
  }

  /// One element of an operand, converted to float.
  std::string load(int param, const std::string &offset) const {
    const KParam &p = K.params[param];
    return loadConv(p.dtype, p.name + "[" + offset + "]");
  }

  void loadQueries() {
    W.line("// Q's tile, once; rows past the end are zeros");
    W.open(llvm::formatv("for (int e = threadIdx.x; e < {0}; e += {1})", S.br * MM.K, S.block).str());
    W.line(llvm::formatv("const int r = e / {0}, c = e % {0};", MM.K).str());
    W.line(llvm::formatv("mj_q[r * {0} + c] = m0 + r < {1} ? {2} : 0.0f;", qStride(), MM.M,
                         load(MM.aParam, llvm::formatv("mj_qBatch + (m0 + r) * {0} + c * {1}",
                                                       MM.aStrideM, MM.aStrideK)
                                             .str()))
               .str());
    W.close();
  }

  void loadTile(const std::string &what, int param, int64_t width, const std::string &batch,
                int64_t strideKey, int64_t strideCol) {
    W.line("// " + what + "'s tile of keys n0 ...; keys past the end are zeros");
    W.open(llvm::formatv("for (int e = threadIdx.x; e < {0}; e += {1})", S.bc * width, S.block).str());
    W.line(llvm::formatv("const int r = e / {0}, c = e % {0};", width).str());
    W.line(llvm::formatv("mj_kv[r * {0} + c] = n0 + r < {1} ? {2} : 0.0f;", kvStride(), MM.N,
                         load(param, llvm::formatv("{0} + (n0 + r) * {1} + c * {2}", batch, strideKey,
                                                   strideCol)
                                         .str()))
               .str());
    W.close();
  }

  /// The thread's scores of the tile: S by dot products over the head dim
  /// (each float4 of K's tile read once for the thread's rows), then the
  /// graph's work on each; -inf for keys past the end.
  void scores() {
    W.line(llvm::formatv("float mj_s[{0}][{1}]; // S of row i and key n0 + mj_part + {2} * j, then "
                         "the score work's",
                         R(), keysPerThread(), S.threadsPerRow)
               .str());
    W.line(llvm::formatv("float mj_tileMax[{0}];", R()).str());
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", R()).str());
    W.line("mj_tileMax[i] = -MJ_INF;");
    W.line("#pragma unroll");
    W.line(
        llvm::formatv("for (int j = 0; j < {0}; ++j) mj_s[i][j] = 0.0f;", keysPerThread()).str());
    W.close();
    W.open(llvm::formatv("for (int d = 0; d < {0}; d += 4)", MM.K).str());
    W.line(llvm::formatv("float4 q4[{0}];", R()).str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int i = 0; i < {0}; ++i) q4[i] = *reinterpret_cast<const float4 "
                         "*>(&mj_q[{1} * {2} + d]);",
                         R(), tileRow(), qStride())
               .str());
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int j = 0; j < {0}; ++j)", keysPerThread()).str());
    W.line(llvm::formatv("const float4 k4 = *reinterpret_cast<const float4 *>(&mj_kv[(mj_part + {0} * "
                         "j) * {1} + d]);",
                         S.threadsPerRow, kvStride())
               .str());
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", R()).str());
    W.line("mj_s[i][j] += q4[i].x * k4.x;");
    W.line("mj_s[i][j] += q4[i].y * k4.y;");
    W.line("mj_s[i][j] += q4[i].z * k4.z;");
    W.line("mj_s[i][j] += q4[i].w * k4.w;");
    W.close();
    W.close();
    W.close();
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", R()).str());
    W.line("const " + E.Idx + " m = m0 + " + tileRow() + ";");
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int j = 0; j < {0}; ++j)", keysPerThread()).str());
    W.line(llvm::formatv("const int c = mj_part + {0} * j;", S.threadsPerRow).str());
    W.line("const " + E.Idx + " n = n0 + c;");
    attentionScoreWork(E, "mj_s[i][j]", "keys past the end");
    W.line("mj_s[i][j] = mj_score;");
    W.line("mj_tileMax[i] = mj_max(mj_tileMax[i], mj_score);");
    W.close();
    W.close();
  }

  /// A row's threads are neighbouring lanes: a butterfly over them, for
  /// each of the thread's rows.
  void rowCombine(const std::string &combine) {
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int w = {0}; w > 0; w /= 2)", S.threadsPerRow / 2).str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int i = 0; i < {0}; ++i) {1}", R(), combine).str());
    W.close();
  }

  void softmaxStep() {
    rowCombine("mj_tileMax[i] = mj_max(mj_tileMax[i], __shfl_xor_sync(0xffffffffu, "
               "mj_tileMax[i], w));");
    W.line(llvm::formatv(
               "float mj_rescale[{0}], mj_tileSum[{0}]; // of each row's sum and O so far", R())
               .str());
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", R()).str());
    W.line("const float mj_newMax = mj_max(mj_rowMax[i], mj_tileMax[i]);");
    W.line("// A row whose keys so far are all masked keeps max -inf: its probabilities are 0");
    W.line("const float mj_base = mj_newMax == -MJ_INF ? 0.0f : mj_newMax;");
    W.line("mj_rescale[i] = expf(mj_rowMax[i] - mj_base);");
    W.line("mj_rowMax[i] = mj_newMax;");
    W.line("mj_tileSum[i] = 0.0f;");
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int j = 0; j < {0}; ++j)", keysPerThread()).str());
    W.line("const float p = expf(mj_s[i][j] - mj_base);");
    W.line(llvm::formatv("mj_p[{0} * {1} + mj_part + {2} * j] = p;", tileRow(), S.bc + 1,
                         S.threadsPerRow)
               .str());
    W.line("mj_tileSum[i] += p;");
    W.close();
    W.close();
    rowCombine("mj_tileSum[i] += __shfl_xor_sync(0xffffffffu, mj_tileSum[i], w);");
    W.line("#pragma unroll");
    W.line(
        llvm::formatv("for (int i = 0; i < {0}; ++i) mj_rowSum[i] = mj_rowSum[i] * mj_rescale[i] "
                      "+ mj_tileSum[i];",
                      R())
            .str());
  }

  void accumulate() {
    W.line("// O += P V over the tile, after rescaling O to the new max; each of V's");
    W.line("// elements read once for the thread's rows");
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", R()).str());
    W.line("#pragma unroll");
    W.line(
        llvm::formatv("for (int j = 0; j < {0}; ++j) mj_o[i][j] *= mj_rescale[i];", outPerThread())
            .str());
    W.close();
    W.open(llvm::formatv("for (int c = 0; c < {0}; ++c)", S.bc).str());
    W.line(llvm::formatv("float p[{0}];", R()).str());
    W.line("#pragma unroll");
    W.line(llvm::formatv("for (int i = 0; i < {0}; ++i) p[i] = mj_p[{1} * {2} + c];", R(),
                         tileRow(), S.bc + 1)
               .str());
    W.line("#pragma unroll");
    if (!vectorColumns()) {
      W.open(llvm::formatv("for (int j = 0; j < {0}; ++j)", outPerThread()).str());
      W.line(llvm::formatv("const float v = mj_kv[c * {0} + {1}];", kvStride(), column()).str());
      W.line("#pragma unroll");
      W.line(llvm::formatv("for (int i = 0; i < {0}; ++i) mj_o[i][j] += p[i] * v;", R()).str());
      W.close();
      W.close();
      return;
    }
    W.open(llvm::formatv("for (int j = 0; j < {0}; j += 4)", outPerThread()).str());
    W.line(llvm::formatv("const float4 v4 = *reinterpret_cast<const float4 *>(&mj_kv[c * {0} + {1}]);",
                         kvStride(), column())
               .str());
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", R()).str());
    W.line("mj_o[i][j] += p[i] * v4.x;");
    W.line("mj_o[i][j + 1] += p[i] * v4.y;");
    W.line("mj_o[i][j + 2] += p[i] * v4.z;");
    W.line("mj_o[i][j + 3] += p[i] * v4.w;");
    W.close();
    W.close();
    W.close();
  }

  void store() {
    const KParam &o = K.params[A.outParam];
    W.line("// O = the accumulated P V over the row's sum");
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int i = 0; i < {0}; ++i)", R()).str());
    W.line("const " + E.Idx + " m = m0 + " + tileRow() + ";");
    W.open(llvm::formatv("if (m < {0})", MM.M).str());
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int j = 0; j < {0}; ++j)", outPerThread()).str());
    W.line("const int c = " + column() + ";");
    W.line(llvm::formatv("{0}[mj_oBatch + m * {1} + c * {2}] = {3};", o.name, A.outStrideM,
                         A.outStrideD, storeConv(o.dtype, "mj_o[i][j] / mj_rowSum[i]"))
               .str());
    W.close();
    if (A.max.param >= 0 || A.sum.param >= 0)
      W.line("// the rows' max and sum, from which the fused backward computes P again");
    for (auto [rows, value] :
         {std::pair{&A.max, "mj_rowMax[i]"}, std::pair{&A.sum, "mj_rowSum[i]"}})
      if (rows->param >= 0)
        W.line(llvm::formatv("if (mj_part == 0) {0}[{1} + m * {2}] = {3};",
                             K.params[rows->param].name, E.idx(rows->base), rows->strideRow, value)
                   .str());
    W.close();
    W.close();
  }

  KernelEmitter &E;
  CodeWriter &W;
  const LoweredKernel &K;
  const AttentionSchedule &S;
  const KMatmul &MM;
  const KAttention &A;
};

} // namespace

void emitAttention(KernelEmitter &e, const AttentionSchedule &s) { AttentionEmitter(e, s).run(); }

} // namespace minijit
