// What the GPU tests of products share (MatmulTest.cpp, SplitKWavesTest.cpp):
// a schedule set for one case, and the operands of one layout pair.
#pragma once

#include "minijit.h"

#include <cstdlib>
#include <utility>

namespace minijit {

/// MINIJIT_SCHEDULE set for one case only, even when it throws.
struct ScheduleEnv {
  explicit ScheduleEnv(const char *v) { ::setenv("MINIJIT_SCHEDULE", v, 1); }
  ~ScheduleEnv() { ::unsetenv("MINIJIT_SCHEDULE"); }
};

/// f32 operands A [m, k] (stored [k, m] when aT) and B [k, n] (stored [n, k]
/// when bT), `batch` of each where more than 1: one layout pair.
inline std::pair<Tensor, Tensor> layoutPair(Graph &g, bool aT, bool bT, int64_t m, int64_t n,
                                            int64_t k, int64_t batch = 1) {
  auto input = [&](const char *name, int64_t rows, int64_t cols) {
    return batch > 1 ? g.input(name, DType::F32, {batch, rows, cols})
                     : g.input(name, DType::F32, {rows, cols});
  };
  auto swap = [&](Tensor t) { return batch > 1 ? t.permute({0, 2, 1}) : t.permute({1, 0}); };
  Tensor a = aT ? swap(input("a", k, m)) : input("a", m, k);
  Tensor b = bT ? swap(input("b", n, k)) : input("b", k, n);
  return {a, b};
}

} // namespace minijit
