//===- tests/gpu/ModelIdiomsTest.cpp - issue 42's idioms on the GPU --------===//
// flip, full, reshape's -1, expm1/log1p and the random ops inside fused
// kernels and their gradients, against the CPU reference at odd sizes (every
// unary op alone is in OpsTest); rand bit for bit.
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

HostTensor scalarI32(int32_t v) {
  HostTensor t(DType::I32, Shape{});
  t.set(0, v);
  return t;
}

// rand on the GPU is the CPU reference's, bit for bit: the same Philox words
// and the same 24 bits scaled by 2^-24, fused with ops around it.
TEST_F(ModelIdioms, RandIsTheReferenceBitForBit) {
  for (DType t : {DType::F32, DType::F16})
    for (int64_t n : kSizes) {
      Graph g("rand_" + std::string(dtypeName(t)) + "_" + std::to_string(n));
      Tensor seed = g.input("seed", DType::I32, {}), offset = g.input("offset", DType::I32, {});
      Tensor u = rand(seed, offset, {n}, t);
      g.output(u, "u");
      g.output(exp(u.cast(DType::F32)) - 1.0, "y");
      g.output(rand(seed, offset, {3, n}) * 2.0, "v");
      if (!Gpu) {
        EXPECT_NO_THROW(compileGraph(g, CompileOptions())) << printGraph(g);
        continue;
      }
      std::vector<HostTensor> in = {scalarI32(20261205), scalarI32(static_cast<int32_t>(n))};
      CheckedRun r = runAndCheck(g, gpu(), /*fusion=*/true, 1, &in);
      EXPECT_TRUE(r.ok) << r.compiled.fusedText();
      for (size_t o : {size_t(0), size_t(2)})
        for (int64_t i = 0; i < r.outputs[o].numel(); ++i)
          ASSERT_EQ(r.outputs[o].get(i), r.reference[o].get(i))
              << g.name() << " output " << o << " element " << i;
    }
  if (!Gpu)
    GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
}

TEST_F(ModelIdioms, RandnAndDropoutMatchTheReference) {
  for (int64_t n : kSizes) {
    Graph g("randn_dropout_" + std::to_string(n));
    Tensor x = g.input("x", DType::F32, {n});
    Tensor h = g.input("h", DType::F16, {n});
    Tensor seed = g.input("seed", DType::I32, {}), offset = g.input("offset", DType::I32, {});
    g.output(randn(seed, offset, {n}), "z");
    g.output(randn(seed, offset, {n}, DType::BF16), "zb");
    g.output(tanh(dropout(x, seed, offset, 0.2)) + x, "d");
    g.output(dropout(h, seed, offset, 0.5), "dh");
    g.output(sum(dropout(x, seed, offset, 0.1) * x), "s");
    expectMatches(g, 13);
  }
}

TEST_F(ModelIdioms, DropoutGradientReusesTheMask) {
  for (int64_t n : {int64_t(3), int64_t(1025)}) {
    Graph g("dropout_grad_" + std::to_string(n));
    Tensor x = g.input("x", DType::F32, {8, n});
    Tensor seed = g.input("seed", DType::I32, {}), offset = g.input("offset", DType::I32, {});
    Tensor y = dropout(relu(x), seed, offset, 0.25);
    Tensor loss = mean(y * y + rand(seed, offset, {8, n}) * y);
    g.output(y, "y");
    g.output(grad(loss, x), "dx");
    expectMatches(g, 17);
  }
}

// Random ops in the other templates' element work: a matmul's epilogue
// (f32 and f16 operands), a scan's prologue, a row reduction.
TEST_F(ModelIdioms, RandomOpsInMatmulEpiloguesScansAndRows) {
  for (DType t : {DType::F32, DType::F16}) {
    Graph g("random_templates_" + std::string(dtypeName(t)));
    Tensor x = g.input("x", t, {257, 128}), w = g.input("w", t, {128, 255});
    Tensor seed = g.input("seed", DType::I32, {}), offset = g.input("offset", DType::I32, {});
    Tensor h = dropout(matmul(x, w), seed, offset, 0.1);
    Tensor y = relu(h) + randn(seed, offset, {257, 255}, t);
    g.output(y, "y");
    g.output(cumsum(y.cast(DType::F32) * rand(seed, offset, {257, 255}), 1), "c");
    g.output(softmax(y.cast(DType::F32) + rand(seed, offset, {257, 255}), 1), "s");
    expectMatches(g, 19);
  }
}

} // namespace
} // namespace minijit
