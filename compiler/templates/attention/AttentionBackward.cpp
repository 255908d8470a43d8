//===- compiler/templates/attention/AttentionBackward.cpp - FlashAttention-2's backward -===//
// The backward of an attention kernel on the CUDA cores, in two kernels that
// need no atomics (the Triton tutorial's _attn_bwd_dkdv and _attn_bwd_dq):
// dK and dV by a block per tile of keys, walking the query tiles, and dQ by a
// block per tile of queries, walking the key tiles. Each computes the tile's
// scores again from Q and K (the graph's score work, as the forward does),
// the probabilities P = exp(logit - max) / sum from the rows' max and sum the
// forward stored, dP = dO V^T, and dS = P (dP - D) times the score work's
// scales, with D = rowsum(dO O) per query row; then dV += P^T dO and
// dK += dS^T Q, or dQ += dS K. f32 throughout.
//===----------------------------------------------------------------------===//
#include "compiler/emit/ExprEmitter.h"
#include "compiler/templates/attention/AttentionCommon.h"
#include "compiler/templates/attention/AttentionInternal.h"

#include "llvm/Support/FormatVariadic.h"

#include <cassert>

namespace minijit {

namespace {

class BackwardEmitter {
public:
  BackwardEmitter(KernelEmitter &e, const AttentionBackwardSchedule &s)
      : E(e), W(e.W), K(e.K), S(s), MM(*e.K.matmul), A(*e.K.attention),
        Keys(e.K.kind == KernelKind::AttentionBackwardKV) {}

  void run() {
    assert(S.br == S.bc && "a block has a thread group per query row of the tile, for D");
    prologue();
    if (Keys)
      keyTiles();
    else
      queryTiles();
    W.close(); // the kernel
  }

private:
  int64_t qStride() const { return MM.K + 4; }
  int64_t vStride() const { return A.valueDim + 4; }
  std::string param(const KRows &r) const { return K.params[r.param].name; }

  /// The element (row, col) of `r` in batch b.
  std::string at(const KRows &r, const std::string &row, const std::string &col) {
    std::string text =
        param(r) + "[" + E.idx(r.base) + " + (" + row + ") * " + std::to_string(r.strideRow);
    if (!col.empty())
      text += " + (" + col + ") * " + std::to_string(r.strideCol);
    return text + "]";
  }

  std::string load(const KRows &r, const std::string &row, const std::string &col) {
    return loadConv(K.params[r.param].dtype, at(r, row, col));
  }

  void prologue() {
    W.line("extern __shared__ __align__(16) unsigned char mj_smem[];");
    W.line(llvm::formatv("float *mj_q = reinterpret_cast<float *>(mj_smem); // Q's tile, {0} x {1} "
                         "(rows padded by a float4)",
                         S.br, MM.K)
               .str());
    W.line(llvm::formatv("float *mj_do = mj_q + {0}; // dO's tile, {1} x {2}", S.br * qStride(),
                         S.br, A.valueDim)
               .str());
    W.line(llvm::formatv("float *mj_k = mj_do + {0}; // K's tile, {1} keys", S.br * vStride(), S.bc)
               .str());
    W.line(llvm::formatv("float *mj_v = mj_k + {0}; // V's tile", S.bc * qStride()).str());
    W.line(llvm::formatv("float *mj_p = mj_v + {0}; // P's tile, a row per key", S.bc * vStride())
               .str());
    W.line(llvm::formatv("float *mj_ds = mj_p + {0}; // dS's tile", S.bc * (S.br + 1)).str());
    W.line(llvm::formatv("float *mj_stat = mj_ds + {0}; // per query row of the tile: max, sum, D",
                         S.bc * (S.br + 1))
               .str());
    W.line("const " + E.Idx + " b = blockIdx.x / " + std::to_string(S.tilesM) + "; // batch");
    W.line(llvm::formatv("const int mj_row = threadIdx.x / {0}; // the thread's row of the tile",
                         S.threadsPerRow)
               .str());
    W.line(llvm::formatv("const int mj_part = threadIdx.x % {0}; // its share: columns mj_part, "
                         "mj_part + {0}, ...",
                         S.threadsPerRow)
               .str());
    W.line("const " + E.Idx + " mj_qBatch = " + E.idx(MM.aBase) +
           ", mj_kBatch = " + E.idx(MM.bBase) + ", mj_vBatch = " + E.idx(A.vBase) + ";");
  }

  /// Rows [first, first + rows) of an operand into shared memory `to`;
  /// rows past `end` are zeros.
  void loadTile(const std::string &to, int64_t rows, int64_t width, int64_t stride,
                const std::string &first, int64_t end, const std::string &element) {
    W.open(
        llvm::formatv("for (int e = threadIdx.x; e < {0}; e += {1})", rows * width, S.block).str());
    W.line(llvm::formatv("const int r = e / {0}, c = e % {0};", width).str());
    W.line(llvm::formatv("{0}[r * {1} + c] = {2} + r < {3} ? {4} : 0.0f;", to, stride, first, end,
                         element)
               .str());
    W.close();
  }

  void loadKeys(const std::string &first) {
    W.line("// K's and V's tiles of keys " + first + " ...; keys past the end are zeros");
    loadTile("mj_k", S.bc, MM.K, qStride(), first, MM.N,
             loadConv(K.params[MM.bParam].dtype,
                      llvm::formatv("{0}[mj_kBatch + ({1} + r) * {2} + c * {3}]",
                                    K.params[MM.bParam].name, first, MM.bStrideN, MM.bStrideK)
                          .str()));
    loadTile("mj_v", S.bc, A.valueDim, vStride(), first, MM.N,
             loadConv(K.params[A.vParam].dtype,
                      llvm::formatv("{0}[mj_vBatch + ({1} + r) * {2} + c * {3}]",
                                    K.params[A.vParam].name, first, A.vStrideN, A.vStrideD)
                          .str()));
  }

  /// Q's and dO's tiles of query rows m0 ..., and each row's max, sum and
  /// D = rowsum(dO O) in mj_stat (rows past the end: sum 1, so P is 0).
  void loadQueries() {
    W.line("// Q's and dO's tiles of queries m0 ...; rows past the end are zeros");
    loadTile("mj_q", S.br, MM.K, qStride(), "m0", MM.M,
             loadConv(K.params[MM.aParam].dtype,
                      llvm::formatv("{0}[mj_qBatch + (m0 + r) * {1} + c * {2}]",
                                    K.params[MM.aParam].name, MM.aStrideM, MM.aStrideK)
                          .str()));
    loadTile("mj_do", S.br, A.valueDim, vStride(), "m0", MM.M, load(A.dOut, "m0 + r", "c"));
    W.open(llvm::formatv("for (int r = threadIdx.x; r < {0}; r += {1})", S.br, S.block).str());
    W.line(llvm::formatv("mj_stat[r] = m0 + r < {0} ? {1} : 0.0f;", MM.M, load(A.max, "m0 + r", ""))
               .str());
    W.line(llvm::formatv("mj_stat[{0} + r] = m0 + r < {1} ? {2} : 1.0f;", S.br, MM.M,
                         load(A.sum, "m0 + r", ""))
               .str());
    W.close();
    W.line("__syncthreads();");
    W.line("// D = rowsum(dO O): the row's threads share its columns");
    W.open(llvm::formatv("if (mj_row < {0})", S.br).str());
    W.line("float mj_d = 0.0f;");
    W.open(llvm::formatv("if (m0 + mj_row < {0})", MM.M).str());
    W.open(llvm::formatv("for (int c = mj_part; c < {0}; c += {1})", A.valueDim, S.threadsPerRow)
               .str());
    W.line(llvm::formatv("mj_d += mj_do[mj_row * {0} + c] * {1};", vStride(),
                         load(A.out, "m0 + mj_row", "c"))
               .str());
    W.close();
    W.close();
    rowCombine("mj_d += __shfl_xor_sync(0xffffffffu, mj_d, w);");
    W.line(llvm::formatv("if (mj_part == 0) mj_stat[{0} + mj_row] = mj_d;", 2 * S.br).str());
    W.close();
    W.line("__syncthreads();");
  }

  void rowCombine(const std::string &combine) {
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int w = {0}; w > 0; w /= 2)", S.threadsPerRow / 2).str());
    W.line(combine);
    W.close();
  }

  /// A dot product of a row of `a` and one of `b` (shared tiles whose rows
  /// are padded to float4s).
  void dot(const std::string &name, const std::string &a, const std::string &b, int64_t width,
           int64_t stride) {
    W.line("float " + name + " = 0.0f;");
    W.open(llvm::formatv("for (int d = 0; d < {0}; d += 4)", width).str());
    W.line(llvm::formatv("const float4 x4 = *reinterpret_cast<const float4 *>(&{0} * {1} + d]);", a,
                         stride)
               .str());
    W.line(llvm::formatv("const float4 y4 = *reinterpret_cast<const float4 *>(&{0} * {1} + d]);", b,
                         stride)
               .str());
    W.line(name + " += x4.x * y4.x;");
    W.line(name + " += x4.y * y4.y;");
    W.line(name + " += x4.z * y4.z;");
    W.line(name + " += x4.w * y4.w;");
    W.close();
  }

  /// P and dS of query `qr` and key `kr` of the tiles (m and n set): the
  /// scores, the graph's work on them, P from the row's max and sum, dP,
  /// and dS = P (dP - D) times the score work's scales.
  void probabilities(const std::string &qr, const std::string &kr) {
    dot("mj_dot", "mj_q[(" + qr + ")", "mj_k[(" + kr + ")", MM.K, qStride());
    // A soft-cap's derivative, 1 - y * y of its tanh y, where y is in scope.
    std::vector<std::string> caps;
    for (const KScaleStep &s : A.scaleSteps)
      if (s.op == OpKind::Tanh) {
        caps.push_back("mj_cap" + std::to_string(caps.size()));
        W.line("float " + caps.back() + " = 0.0f;");
      }
    attentionScoreWork(E, "mj_dot", "past the end", {}, [&] {
      size_t i = 0;
      for (const KScaleStep &s : A.scaleSteps)
        if (s.op == OpKind::Tanh) {
          std::string y = E.ref(s.value);
          W.line(caps[i++] + " = 1.0f - " + y + " * " + y + "; // the soft-cap's derivative");
        }
    });
    W.line(llvm::formatv("const float p = expf(mj_score - mj_stat[{0}]) / mj_stat[{1} + {0}];", qr,
                         S.br)
               .str());
    dot("mj_dp", "mj_do[(" + qr + ")", "mj_v[(" + kr + ")", A.valueDim, vStride());
    W.line(llvm::formatv("float ds = p * (mj_dp - mj_stat[{0} + {1}]);", 2 * S.br, qr).str());
    size_t cap = 0;
    for (const KScaleStep &s : A.scaleSteps)
      W.line(s.op == OpKind::Tanh
                 ? "ds = ds * " + caps[cap++] + ";"
                 : llvm::formatv("ds = ds {0} {1}; // the score work's scale",
                                 s.op == OpKind::Mul ? "*" : "/", floatLiteral(s.literal))
                       .str());
  }

  std::string scaled(const std::string &v) {
    if (!A.productScale)
      return v;
    return llvm::formatv("{0} {1} {2}", v, A.productScale->op == OpKind::Mul ? "*" : "/",
                         floatLiteral(A.productScale->literal))
        .str();
  }

  void accumulators(const std::string &name, int64_t width) {
    W.line(llvm::formatv("float {0}[{1}]; // columns mj_part + {2} * j", name,
                         width / S.threadsPerRow, S.threadsPerRow)
               .str());
    W.line("#pragma unroll");
    W.line(
        llvm::formatv("for (int j = 0; j < {0}; ++j) {1}[j] = 0.0f;", width / S.threadsPerRow, name)
            .str());
  }

  void storeRows(const KRows &r, const std::string &acc, int64_t width, const std::string &row,
                 bool scale) {
    if (r.param < 0)
      return;
    W.line("#pragma unroll");
    W.open(llvm::formatv("for (int j = 0; j < {0}; ++j)", width / S.threadsPerRow).str());
    W.line(llvm::formatv("const int c = mj_part + {0} * j;", S.threadsPerRow).str());
    W.line(
        llvm::formatv("{0} = {1};", at(r, row, "c"),
                      storeConv(K.params[r.param].dtype, scale ? scaled(acc + "[j]") : acc + "[j]"))
            .str());
    W.close();
  }

  /// dK and dV: the block's keys n0 ..., a thread's row its key.
  void keyTiles() {
    W.line("const " + E.Idx + " n0 = (blockIdx.x % " + std::to_string(S.tilesM) + ") * " +
           std::to_string(S.bc) + "; // the tile's first key");
    W.line("const " + E.Idx + " n = n0 + mj_row;");
    loadKeys("n0");
    accumulators("mj_dk", MM.K);
    accumulators("mj_dv", A.valueDim);
    std::string first = "0";
    if (A.causal) {
      W.line("// The mask is causal: query rows before the tile's first key see none of its keys");
      W.line(llvm::formatv("const {0} mj_first = n0 / {1} * {1};", E.Idx, S.br).str());
      first = "mj_first";
    }
    W.open(
        llvm::formatv("for ({0} m0 = {1}; m0 < {2}; m0 += {3})", E.Idx, first, MM.M, S.br).str());
    W.line("__syncthreads(); // every thread is done with the last tiles");
    loadQueries();
    W.line("#pragma unroll 1");
    W.open(llvm::formatv("for (int j = 0; j < {0}; ++j)", S.br / S.threadsPerRow).str());
    W.line(llvm::formatv("const int qr = mj_part + {0} * j;", S.threadsPerRow).str());
    W.line("const " + E.Idx + " m = m0 + qr;");
    probabilities("qr", "mj_row");
    W.line(llvm::formatv("mj_p[mj_row * {0} + qr] = p;", S.br + 1).str());
    W.line(llvm::formatv("mj_ds[mj_row * {0} + qr] = ds;", S.br + 1).str());
    W.close();
    W.line("__syncwarp(); // a key's P and dS are its row's threads'");
    W.line("// dV += P^T dO and dK += dS^T Q over the tile's queries");
    W.open(llvm::formatv("for (int qr = 0; qr < {0}; ++qr)", S.br).str());
    W.line(llvm::formatv("const float p = mj_p[mj_row * {0} + qr], ds = mj_ds[mj_row * {0} + qr];",
                         S.br + 1)
               .str());
    W.line("#pragma unroll");
    W.line(llvm::formatv(
               "for (int j = 0; j < {0}; ++j) mj_dv[j] += p * mj_do[qr * {1} + mj_part + {2} * j];",
               A.valueDim / S.threadsPerRow, vStride(), S.threadsPerRow)
               .str());
    W.line("#pragma unroll");
    W.line(llvm::formatv(
               "for (int j = 0; j < {0}; ++j) mj_dk[j] += ds * mj_q[qr * {1} + mj_part + {2} * j];",
               MM.K / S.threadsPerRow, qStride(), S.threadsPerRow)
               .str());
    W.close();
    W.close();
    W.line("// dK and dV of the thread's key");
    W.open(llvm::formatv("if (n < {0})", MM.N).str());
    storeRows(A.dk, "mj_dk", MM.K, "n", true);
    storeRows(A.dv, "mj_dv", A.valueDim, "n", false);
    W.close();
  }

  /// dQ: the block's queries m0 ..., a thread's row its query.
  void queryTiles() {
    W.line("const " + E.Idx + " m0 = (blockIdx.x % " + std::to_string(S.tilesM) + ") * " +
           std::to_string(S.br) + "; // the tile's first query row");
    W.line("const " + E.Idx + " m = m0 + mj_row;");
    loadQueries();
    accumulators("mj_dq", MM.K);
    std::string keys = attentionKeyBound(E, S.br), first = attentionKeyStart(E, S.bc);
    W.open(llvm::formatv("for ({0} n0 = {3}; n0 < {1}; n0 += {2})", E.Idx, keys, S.bc, first).str());
    W.line("__syncthreads(); // every thread is done with the last tiles");
    loadKeys("n0");
    W.line("__syncthreads();");
    W.line("#pragma unroll 1");
    W.open(llvm::formatv("for (int j = 0; j < {0}; ++j)", S.bc / S.threadsPerRow).str());
    W.line(llvm::formatv("const int kr = mj_part + {0} * j;", S.threadsPerRow).str());
    W.line("const " + E.Idx + " n = n0 + kr;");
    probabilities("mj_row", "kr");
    W.line(llvm::formatv("mj_ds[mj_row * {0} + kr] = ds;", S.bc + 1).str());
    W.close();
    W.line("__syncwarp(); // a query's dS is its row's threads'");
    W.line("// dQ += dS K over the tile's keys");
    W.open(llvm::formatv("for (int kr = 0; kr < {0}; ++kr)", S.bc).str());
    W.line(llvm::formatv("const float ds = mj_ds[mj_row * {0} + kr];", S.bc + 1).str());
    W.line("#pragma unroll");
    W.line(llvm::formatv(
               "for (int j = 0; j < {0}; ++j) mj_dq[j] += ds * mj_k[kr * {1} + mj_part + {2} * j];",
               MM.K / S.threadsPerRow, qStride(), S.threadsPerRow)
               .str());
    W.close();
    W.close();
    W.line("// dQ of the thread's query");
    W.open(llvm::formatv("if (m < {0})", MM.M).str());
    storeRows(A.dq, "mj_dq", MM.K, "m", true);
    W.close();
  }

  KernelEmitter &E;
  CodeWriter &W;
  const LoweredKernel &K;
  const AttentionBackwardSchedule &S;
  const KMatmul &MM;
  const KAttention &A;
  bool Keys; ///< the dK and dV kernel, else dQ's
};

} // namespace

void emitAttentionBackward(KernelEmitter &e, const AttentionBackwardSchedule &s) {
  BackwardEmitter(e, s).run();
}

} // namespace minijit
