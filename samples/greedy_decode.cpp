//===- samples/greedy_decode.cpp - a greedy decoding step -------------------===//
// softmax over the vocabulary and its argmax (ties to the lowest token), one
// kernel fused: the argmax is a reduction of (value, position) pairs.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "samples/Sample.h"

#include <string>

int main() {
  const int64_t rows = 64, vocab = 32000;
  minijit::HandWritten hw;
  hw.entry = "greedy_decode_by_hand";
  hw.source = R"(// Greedy decoding by hand: the argmax of the logits is the argmax of their
// softmax (exp is monotone), a block per row, ties to the lowest position.
extern "C" __global__ void greedy_decode_by_hand(const float *logits, int *token) {
  const int vocab = )" + std::to_string(vocab) + R"(;
  const float *row = logits + (long long)blockIdx.x * vocab;
  __shared__ float best[256];
  __shared__ int at[256];
  float m = -INFINITY;
  int i = 0x7fffffff;
  for (int c = threadIdx.x; c < vocab; c += blockDim.x)
    if (row[c] > m || (row[c] == m && c < i)) { m = row[c]; i = c; }
  best[threadIdx.x] = m;
  at[threadIdx.x] = i;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) {
      const float v = best[threadIdx.x + k];
      const int vi = at[threadIdx.x + k];
      if (v > best[threadIdx.x] || (v == best[threadIdx.x] && vi < at[threadIdx.x])) {
        best[threadIdx.x] = v;
        at[threadIdx.x] = vi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) token[blockIdx.x] = at[0];
}
)";
  hw.block = 256;
  hw.grid = rows;
  return minijit::runSample("greedy decoding step over 64 rows of 32000 logits",
                            minijit::lecture::greedyDecode(rows, vocab), hw);
}
