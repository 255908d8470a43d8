//===- samples/gelu.cpp - the lecture's elementwise example ----------------===//
// GeLU (tanh approximation): eight elementwise ops that fusion turns into one
// kernel reading x once and writing y once.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "samples/Sample.h"

#include <string>

int main() {
  const int64_t n = int64_t(1) << 24;
  minijit::HandWritten hw;
  hw.entry = "gelu_by_hand";
  hw.source = R"(// GeLU by hand: one thread per element, as a first CUDA kernel is written.
extern "C" __global__ void gelu_by_hand(const float *x, float *y) {
  const int n = )" + std::to_string(n) + R"(;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}
)";
  hw.block = 256;
  hw.grid = (n + 255) / 256;
  return minijit::runSample("GeLU over 2^24 floats", minijit::lecture::gelu(n), hw);
}
