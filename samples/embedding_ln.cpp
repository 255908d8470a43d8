//===- samples/embedding_ln.cpp - an embedding lookup and its layer norm ----===//
// take(table, ids) feeds a layer norm: the row index is read once per row and
// the row's loads stay vectorized; one kernel fused.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "samples/Sample.h"

#include <string>

int main() {
  const int64_t tokens = 4096, vocab = 32000, dim = 1024;
  minijit::HandWritten hw;
  hw.entry = "embedding_ln_by_hand";
  hw.source = R"(// Embedding + layer norm by hand: a block per token, the row in two passes.
extern "C" __global__ void embedding_ln_by_hand(const float *table, const int *ids, const float *w,
                                                const float *b, float *y) {
  const int dim = )" + std::to_string(dim) + R"(, vocab = )" + std::to_string(vocab) + R"(;
  const int id = min(max(ids[blockIdx.x], 0), vocab - 1);
  const float *row = table + (long long)id * dim;
  float *out = y + (long long)blockIdx.x * dim;
  __shared__ float red[256];
  float s = 0.0f;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) s += row[c];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  const float mu = red[0] / dim;
  __syncthreads();
  float v = 0.0f;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) v += (row[c] - mu) * (row[c] - mu);
  red[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  const float r = rsqrtf(red[0] / dim + 1e-5f);
  for (int c = threadIdx.x; c < dim; c += blockDim.x) out[c] = (row[c] - mu) * r * w[c] + b[c];
}
)";
  hw.block = 256;
  hw.grid = tokens;
  return minijit::runSample("embedding lookup + layer norm, 4096 tokens of 1024 from 32000",
                            minijit::lecture::embeddingLayerNorm(tokens, vocab, dim), hw);
}
