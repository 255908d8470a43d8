//===- samples/rmsnorm.cpp - RMS normalisation -----------------------------===//
// One reduction (the mean square) and an epilogue with a weight.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "samples/Sample.h"

#include <string>

int main() {
  const int64_t rows = 4096, cols = 1024;
  minijit::HandWritten hw;
  hw.entry = "rmsnorm_by_hand";
  hw.source = R"(// RMS norm by hand: a block per row, a tree reduction in shared memory.
extern "C" __global__ void rmsnorm_by_hand(const float *x, const float *w, float *y) {
  const int cols = )" + std::to_string(cols) + R"(;
  const float *in = x + (long long)blockIdx.x * cols;
  float *out = y + (long long)blockIdx.x * cols;
  __shared__ float red[256];
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += in[c] * in[c];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  const float r = rsqrtf(red[0] / cols + 1e-6f);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = in[c] * r * w[c];
}
)";
  hw.block = 256;
  hw.grid = rows;
  return minijit::runSample("rmsnorm over 4096 rows of 1024", minijit::lecture::rmsnorm(rows, cols),
                            hw);
}
