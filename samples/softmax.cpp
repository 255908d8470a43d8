//===- samples/softmax.cpp - the lecture's row-wise example ----------------===//
// Softmax over rows: a max, a sum and the normalisation broadcast back over
// the row. Eagerly that is five kernels and about 8 bytes per element moved;
// fused it is one kernel that keeps the row on chip: 2 bytes per element.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "samples/Sample.h"

#include <string>

int main() {
  const int64_t rows = 4096, cols = 1024;
  minijit::HandWritten hw;
  hw.entry = "softmax_by_hand";
  hw.source = R"(// Softmax by hand: a block per row, three passes over the row in memory,
// tree reductions in shared memory.
extern "C" __global__ void softmax_by_hand(const float *x, float *y) {
  const int cols = )" + std::to_string(cols) + R"(;
  const float *in = x + (long long)blockIdx.x * cols;
  float *out = y + (long long)blockIdx.x * cols;
  __shared__ float red[256];
  float m = -3.402823466e38f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(in[c] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  sum = red[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - m) / sum;
}
)";
  hw.block = 256;
  hw.grid = rows;
  return minijit::runSample("softmax over 4096 rows of 1024", minijit::lecture::softmax(rows, cols),
                            hw);
}
