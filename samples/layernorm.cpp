//===- samples/layernorm.cpp - layer normalisation -------------------------===//
// Two reductions over each row (the mean, then the variance of the deviations)
// and an epilogue with a weight and a bias: one kernel when fused.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "samples/Sample.h"

#include <string>

int main() {
  const int64_t rows = 4096, cols = 1024;
  minijit::HandWritten hw;
  hw.entry = "layernorm_by_hand";
  hw.source = R"(// Layer norm by hand: a block per row, tree reductions in shared memory.
__device__ float blockSum(float v, float *red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  float r = red[0];
  __syncthreads();
  return r;
}
extern "C" __global__ void layernorm_by_hand(const float *x, const float *w, const float *b, float *y) {
  const int cols = )" + std::to_string(cols) + R"(;
  const float *in = x + (long long)blockIdx.x * cols;
  float *out = y + (long long)blockIdx.x * cols;
  __shared__ float red[256];
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += in[c];
  const float mean = blockSum(s, red) / cols;
  float v = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) v += (in[c] - mean) * (in[c] - mean);
  const float rstd = rsqrtf(blockSum(v, red) / cols + 1e-5f);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = (in[c] - mean) * rstd * w[c] + b[c];
}
)";
  hw.block = 256;
  hw.grid = rows;
  return minijit::runSample("layernorm over 4096 rows of 1024",
                            minijit::lecture::layernorm(rows, cols), hw);
}
