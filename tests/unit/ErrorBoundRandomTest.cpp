// The error bounds never cry wolf on random graphs: an evaluation that moves
// each computed f32 value by a random amount within the op's documented
// error (what a correct kernel may do) stays within the bounds of the
// reference, by the GPU tests' comparison with no tolerance (the bound alone).
#include "ir/ErrorBound.h"
#include "tests/support/RandomGraph.h"
#include "tools/Harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace minijit;

namespace {

/// The ulps a correct f32 kernel may be from the exact result, per op.
double allowedUlps(OpKind op) {
  switch (op) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Sqrt:
  case OpKind::Recip: return 0.5;
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Expm1:
  case OpKind::Log1p: return 1;
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tanh:
  case OpKind::Rsqrt:
  case OpKind::Erf:
  case OpKind::Sigmoid: return 2;
  default: return 0; // exact ops, and what this test leaves alone
  }
}

/// Evaluates `g` with each computed f32 value moved by up to its op's ulps,
/// in a random direction (a stand-in for a correct kernel).
std::vector<HostTensor> perturbedEvaluation(const Graph &g, llvm::ArrayRef<HostTensor> inputs,
                                            const EvalOptions &base, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  EvalOptions eo = base;
  eo.observe = [&](ValueId id, std::span<const HostTensor> values) {
    double ulps = allowedUlps(g.node(id).op);
    // The observer sees the values it may change: the test is the kernel here.
    auto &v = const_cast<HostTensor &>(values[id]);
    if (ulps == 0 || v.dtype() != DType::F32)
      return;
    for (int64_t i = 0; i < v.numel(); ++i) {
      double x = v.get(i);
      if (!std::isfinite(x) || x == 0)
        continue;
      double ulp = std::ldexp(1.0, std::ilogb(x) - 23);
      v.set(i, x + unit(rng) * ulps * ulp);
    }
  };
  return evaluate(g, inputs, eo);
}

/// `compiled`: the stored flags of the fused and unfused programs; without,
/// every value is rounded to its dtype (the same for f32 graphs).
void checkSeeds(const RandomGraphOptions &opt, uint64_t first, uint64_t count,
                bool compiled = true) {
  int saved = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    Graph g = randomGraph(seed, opt);
    for (bool fusion : {true, false}) {
      std::vector<bool> stored;
      EvalOptions eo;
      if (compiled) {
        CompileOptions co;
        co.fusion = fusion;
        co.compileKernels = false;
        stored = storedValues(g, compileGraph(g, co));
        eo.stored = &stored;
      }
      std::vector<HostTensor> in = randomInputs(g, seed);
      BoundedOutputs ref = evaluateWithBounds(g, in, eo);
      std::vector<HostTensor> got = perturbedEvaluation(g, in, eo, seed);
      for (size_t i = 0; i < got.size(); ++i) {
        // No tolerance: the bound alone decides.
        CompareResult r = compareTensors(got[i], ref.values[i], Tolerance{0}, nullptr,
                                         &ref.bounds[i]);
        saved += r.savedByBound > 0;
        ASSERT_TRUE(r.ok) << "seed " << seed << (fusion ? " fused" : " unfused") << " output "
                          << i << ": " << r.summary << "\n"
                          << printGraph(g);
      }
    }
  }
  std::printf("[ bounds ] %d outputs passed only within their error bound\n", saved);
}

TEST(ErrorBoundRandom, CorrectF32EvaluationsStayWithinTheBounds) {
  RandomGraphOptions opt;
  opt.allowHalf = false;
  checkSeeds(opt, 1, 150);
}

TEST(ErrorBoundRandom, CorrectEvaluationsOfHalfGraphsStayWithinTheBounds) {
  // A quarter of these are f16/bf16 graphs (values held in f32 between the
  // stores of a fused kernel are moved; stored ones round as the kernel's).
  checkSeeds(RandomGraphOptions{}, 1001, 150);
}

TEST(ErrorBoundRandom, DataMovementOpsStayWithinTheBounds) {
  // slice, pad, concat, take, argmax, cumsum, iota in f32 graphs (not
  // compiled: some of them meet the compiler bugs of tests/lit/known_bug_*).
  RandomGraphOptions opt;
  opt.allowHalf = false;
  opt.dataMovement = true;
  checkSeeds(opt, 2001, 150, /*compiled=*/false);
}

TEST(ErrorBoundRandom, DataMovementHalfGraphsCompiled) {
  RandomGraphOptions opt;
  opt.dataMovement = true;
  checkSeeds(opt, 1001, 150);
}

} // namespace
