//===- samples/rope.cpp - rotary position embedding --------------------------===//
// Two slices, a negation and a concat (rotate_half), then the multiply-adds
// with the cos/sin tables: one pointwise kernel fused, no copy kernel.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "samples/Sample.h"

#include <string>

int main() {
  const int64_t b = 4, s = 512, h = 8, d = 64;
  const int64_t n = b * s * h * d;
  minijit::HandWritten hw;
  hw.entry = "rope_by_hand";
  hw.source = R"(// RoPE by hand: one thread per element, the partner element d/2 away.
extern "C" __global__ void rope_by_hand(const float *x, const float *cs, const float *sn, float *y) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= )" + std::to_string(n) + R"(LL) return;
  const int d = )" + std::to_string(d) + R"(, h = )" + std::to_string(h) + R"(, s = )" +
              std::to_string(s) + R"(;
  const int f = (int)(i % d);
  const int pos = (int)((i / ((long long)d * h)) % s);
  const float rot = f < d / 2 ? -x[i + d / 2] : x[i - d / 2];
  y[i] = x[i] * cs[pos * d + f] + rot * sn[pos * d + f];
}
)";
  hw.block = 256;
  hw.grid = (n + 255) / 256;
  return minijit::runSample("rope over [4, 512, 8, 64]", minijit::lecture::rope(b, s, h, d), hw);
}
