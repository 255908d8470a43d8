//===- tests/gpu/SplitKernelsTest.cpp - kernels split for NVRTC ------------===//
// Fusion splits a kernel whose ops weigh more than kMaxKernelWeight
// (compiler/fusion/CodeWeight.h); the split kernels, read through the
// values stored between them, must still match the CPU reference.
#include "compiler/fusion/CodeWeight.h"
#include "compiler/lower/FuseAndLower.h"
#include "tests/gpu/GpuTest.h"

namespace minijit {
namespace {

class SplitKernels : public GpuTest {};

TEST_F(SplitKernels, AChainOfSinSplitMatchesTheReference) {
  Graph g("sins");
  Tensor x = g.input("x", DType::F32, {3001});
  Tensor y = x;
  for (int i = 0; i < 40; ++i)
    y = sin(y);
  g.output(y, "y");
  ASSERT_EQ(fuseGraph(g, true).kernels.size(), 3u); // 16, 16 and 8 sin
  expectMatches(g, 1, /*fusedOnly=*/true);
}

TEST_F(SplitKernels, DiamondsBeforeAReductionSplitMatchTheReference) {
  Graph g("diamonds");
  Tensor x = g.input("x", DType::F32, {37, 101});
  Tensor y = x;
  for (int i = 0; i < 30; ++i)
    y = tanh(y) + sin(y) * 0.5;
  g.output(sum(y, {1}), "s");
  g.output(y, "y");
  FusionPlan plan = fuseGraph(g, true);
  ASSERT_GT(plan.kernels.size(), 2u);
  for (const KernelGroup &k : plan.kernels) {
    int64_t w = 0;
    for (ValueId v : k.held)
      w += codeWeight(g.node(v).op);
    EXPECT_LE(w, kMaxKernelWeight);
  }
  expectMatches(g, 2, /*fusedOnly=*/true);
}

} // namespace
} // namespace minijit
