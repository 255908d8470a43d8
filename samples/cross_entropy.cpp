//===- samples/cross_entropy.cpp - cross-entropy forward --------------------===//
// logsumexp over each row and the logit at the row's label (take_along_axis),
// one kernel fused: the label's logit is one load per row.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "samples/Sample.h"

#include <string>

int main() {
  const int64_t rows = 2048, vocab = 32000;
  minijit::HandWritten hw;
  hw.entry = "cross_entropy_by_hand";
  hw.source = R"(// Cross-entropy by hand: a block per row, max then sum of exp, then the label.
__device__ float block_reduce(float v, float *red, bool isMax) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k)
      red[threadIdx.x] = isMax ? fmaxf(red[threadIdx.x], red[threadIdx.x + k])
                               : red[threadIdx.x] + red[threadIdx.x + k];
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();
  return r;
}
extern "C" __global__ void cross_entropy_by_hand(const float *logits, const int *labels, float *loss) {
  const int vocab = )" + std::to_string(vocab) + R"(;
  const float *row = logits + (long long)blockIdx.x * vocab;
  __shared__ float red[256];
  float m = -INFINITY;
  for (int c = threadIdx.x; c < vocab; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_reduce(m, red, true);
  float s = 0.0f;
  for (int c = threadIdx.x; c < vocab; c += blockDim.x) s += expf(row[c] - m);
  s = block_reduce(s, red, false);
  if (threadIdx.x == 0) {
    const int label = min(max(labels[blockIdx.x], 0), vocab - 1);
    loss[blockIdx.x] = logf(s) + m - row[label];
  }
}
)";
  hw.block = 256;
  hw.grid = rows;
  return minijit::runSample("cross-entropy over 2048 rows of 32000 logits",
                            minijit::lecture::crossEntropy(rows, vocab), hw);
}
