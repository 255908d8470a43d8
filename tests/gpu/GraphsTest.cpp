//===- tests/gpu/GraphsTest.cpp - whole graphs on the GPU ------------------===//
#include "tests/gpu/GpuTest.h"
#include "tests/support/RandomRun.h"

namespace minijit {
namespace {

class Graphs : public GpuTest {};

TEST_F(Graphs, EverySampleFusedAndUnfused) {
  for (const char *s : {"gelu.mj", "softmax.mj", "layernorm.mj", "rmsnorm.mj", "rope.mj",
                        "embedding_ln.mj", "cross_entropy.mj", "greedy_decode.mj", "mlp.mj"})
    for (const Graph &g : parseFile(samplePath(s)))
      for (uint64_t seed : {1, 2})
        expectMatches(g, seed);
}

TEST_F(Graphs, PermutesOfA3DTensor) {
  const std::vector<int64_t> perms[] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                        {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto &p : perms) {
    Graph g("permute");
    Tensor x = g.input("x", DType::F32, {5, 33, 65});
    Tensor px = exp(x).permute(p);
    g.output(px, "y");
    g.output(sum(px, {2}), "s"); // a reduction over a permuted (strided) operand
    expectMatches(g, 8);
  }
}

TEST_F(Graphs, ReshapesAndBroadcasts) {
  Graph g("views");
  Tensor x = g.input("x", DType::F32, {6, 35});
  Tensor b = g.input("b", DType::F32, {7});
  Tensor r = x.reshape({6, 5, 7}) + b;           // broadcast over rows
  Tensor p = r.permute({1, 0, 2}).reshape({5, 42}); // a reshape of a permute: div/mod indexing
  g.output(tanh(p), "y");
  g.output(b.broadcast({3, 7}) * 2, "z");
  expectMatches(g, 6);
}

TEST_F(Graphs, OutputsThatAreInputsViewsOrRepeated) {
  Graph g("outs");
  Tensor x = g.input("x", DType::F32, {33, 17});
  Tensor y = sigmoid(x);
  g.output(y, "y");
  g.output(y);                    // the same value twice
  g.output(x);                    // an input as an output
  g.output(y.permute({1, 0}), "yt"); // a view as an output
  expectMatches(g, 12);
}

TEST_F(Graphs, ReductionReadAtAnotherRowIsStored) {
  // The row sums are read transposed: fusion must store them first.
  Graph g("moved_rows");
  Tensor x = g.input("x", DType::F32, {64, 64});
  Tensor s = sum(x, {1}, true);                 // [64, 1]
  Tensor t = s.reshape({1, 64});                // read along the other axis
  g.output(x * t + s, "y");
  expectMatches(g, 14);
}

TEST_F(Graphs, RandomGraphsFusedAndUnfused) {
  // MINIJIT_RANDOM_GRAPHS and MINIJIT_RANDOM_FIRST (the first seed) make
  // longer runs; scripts/random_run.sh runs minijit_random_run in processes.
  // Every flagged graph is reported and the run goes on.
  RandomRunOptions o;
  o.count = 200;
  if (const char *n = std::getenv("MINIJIT_RANDOM_GRAPHS"))
    o.count = std::strtoull(n, nullptr, 10);
  if (const char *f = std::getenv("MINIJIT_RANDOM_FIRST"))
    o.first = std::strtoull(f, nullptr, 10);
  std::string log;
  llvm::raw_string_ostream os(log);
  RandomRunSummary s = runRandomGraphs(o, Gpu ? &*Gpu : nullptr, os);
  EXPECT_EQ(s.graphs, o.count);
  EXPECT_TRUE(s.findings.empty()) << s.findings.size() << " programs flagged, seeds "
                                  << s.line(o.first) << "\n"
                                  << os.str();
  MJ_REQUIRE_GPU();
}

TEST_F(Graphs, RandomGraphsWithNamedSizes) {
  // Each graph's leading size named B and bound at three sizes (its own,
  // twice it plus one, and 1): the kernels that serve a bucket of sizes
  // against the reference, fused and unfused, outputs poisoned.
  RandomRunOptions o;
  o.count = 60;
  o.first = 5001;
  o.namedSizes = true;
  std::string log;
  llvm::raw_string_ostream os(log);
  RandomRunSummary s = runRandomGraphs(o, Gpu ? &*Gpu : nullptr, os);
  EXPECT_GT(s.graphs, o.count) << "most graphs take a name, so most seeds run three bindings";
  EXPECT_TRUE(s.findings.empty()) << s.findings.size() << " programs flagged, seeds "
                                  << s.line(o.first) << "\n"
                                  << os.str();
  MJ_REQUIRE_GPU();
}

TEST_F(Graphs, SlicesComputedFromSlicedOperands) {
  // A slice of what only it reads is computed from slices of the operands:
  // a product's last row (Mamba2's new_states[:, -1]), every third column of
  // elementwise work with a broadcast operand, rows of a reduction over
  // another axis, a scan's prefix; against the reference at odd sizes.
  Graph g("sliced");
  Tensor a = g.input("a", DType::F32, {6, 33, 17});
  Tensor w = g.input("w", DType::F32, {6, 17, 29});
  Tensor x = g.input("x", DType::F32, {65, 1001});
  Tensor b = g.input("b", DType::F32, {1001});
  Tensor r = g.input("r", DType::F32, {37, 50, 71});
  g.output(slice(matmul(a, w), 1, 32, 33), "row");
  g.output(slice(exp(x * 0.01 + b), 1, 10, 1000, 3), "cols");
  g.output(slice(sum(r, {2}), 0, 5, 30, 2), "rows");
  g.output(slice(cumsum(x, 1), 1, 0, 777), "prefix");
  expectMatches(g, 7);
}

} // namespace
} // namespace minijit
