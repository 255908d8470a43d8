//===- tests/gpu/ModelIdiomsTest.cpp - issue 42's idioms on the GPU --------===//
// flip, full, reshape's -1, and expm1/log1p inside fused kernels and their
// gradients, against the CPU reference at odd sizes (every unary op alone is
// in OpsTest).
#include "tests/gpu/GpuTest.h"

namespace minijit {
namespace {

const int64_t kSizes[] = {1, 3, 1023, 1025, (1 << 20) + 7};

class ModelIdioms : public GpuTest {};

TEST_F(ModelIdioms, FlipAtOddSizes) {
  for (DType t : {DType::F32, DType::F16, DType::I32})
    for (int64_t n : kSizes) {
      Graph g("flip_" + std::string(dtypeName(t)) + "_" + std::to_string(n));
      Tensor x = g.input("x", t, {n});
      Tensor m = g.input("m", t, {3, n});
      g.output(flip(x, {0}) * x, "y");
      g.output(flip(m, {0, 1}) + flip(m, {1}), "z");
      g.output(sum(flip(m, {-1}) * m, {1}), "s");
      expectMatches(g, 3);
    }
}

TEST_F(ModelIdioms, FullAtOddSizes) {
  for (int64_t n : kSizes) {
    Graph g("full_" + std::to_string(n));
    Tensor x = g.input("x", DType::F32, {n});
    g.output(x * full(g, {n}, -2.5), "y");
    g.output(full(g, {n}, 1, DType::Bool), "b");
    g.output(full(g, {n}, 7, DType::I32), "i");
    g.output(full(g, {n}, 0.1, DType::F16), "h");
    g.output(full(g, {n}, 0.1, DType::BF16) + x.cast(DType::BF16), "hb");
    expectMatches(g, 5);
  }
}

TEST_F(ModelIdioms, ReshapeInferredAndFlipFuse) {
  for (int64_t n : kSizes) {
    Graph g("reshape_flip_" + std::to_string(n));
    Tensor x = g.input("x", DType::F32, {3, n});
    Tensor flat = flip(x.reshape({-1}), {0});
    g.output(expm1(flat) + log1p(abs(flat)), "y");
    g.output(flip(x, {0}).reshape({n, -1}), "r");
    expectMatches(g, 7);
  }
}

TEST_F(ModelIdioms, GradientsOfExpm1Log1pFlip) {
  for (int64_t n : {int64_t(3), int64_t(1025)}) {
    Graph g("grad_idioms_" + std::to_string(n));
    Tensor x = g.input("x", DType::F32, {4, n});
    Tensor softplus = log1p(exp(x));
    Tensor elu = where(gt(x, 0.0), x, expm1(x));
    Tensor loss = mean(softplus * flip(elu, {1}));
    g.output(grad(loss, x), "dx");
    expectMatches(g, 9);
  }
}

} // namespace
} // namespace minijit
