// The reducer (tools/Reduce.h): it keeps the condition, shrinks a planted
// failure to a few nodes, and every candidate it tries is a valid graph.
#include "tools/Reduce.h"

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "tests/support/RandomGraph.h"

#include <gtest/gtest.h>

using namespace minijit;

namespace {

bool hasOp(const Graph &g, OpKind op) {
  return llvm::any_of(g.nodes(), [&](const Node &n) { return n.op == op; });
}

TEST(Reduce, ShrinksAPlantedFailureToAFewNodes) {
  Graph g("planted");
  Tensor x = g.input("x", DType::F32, {8, 16});
  Tensor y = g.input("y", DType::F32, {8, 16});
  Tensor h = tanh(x * y) + x;
  Tensor s = sum(exp(sin(h)), {1}, true);
  g.output(exp(sin(h)) / s - y, "out");
  g.output(s, "s");
  unsigned tries = 0;
  Graph r = reduceGraph(g, [&](const Graph &c) {
    ++tries;
    verifyGraph(c); // every candidate is a valid graph
    return hasOp(c, OpKind::Sin);
  });
  EXPECT_TRUE(hasOp(r, OpKind::Sin));
  EXPECT_EQ(countOps(r), 1u) << printGraph(r);
  EXPECT_GT(tries, 0u);
}

TEST(Reduce, KeepsWhatTheConditionNeeds) {
  Graph g("two");
  Tensor x = g.input("x", DType::F32, {4, 5});
  Tensor w = g.input("w", DType::F32, {5, 3});
  g.output(relu(matmul(exp(x), w)) * 2.0, "y");
  // The condition needs a matmul whose first operand is computed, not an argument.
  auto interesting = [](const Graph &c) {
    return llvm::any_of(c.nodes(), [&](const Node &n) {
      return n.op == OpKind::Matmul && c.node(n.operands[0]).op != OpKind::Input;
    });
  };
  ReduceStats stats;
  Graph r = reduceGraph(g, interesting, &stats);
  EXPECT_TRUE(interesting(r));
  EXPECT_EQ(countOps(r), 2u) << printGraph(r); // exp and matmul
  EXPECT_GE(stats.tries, stats.accepted);
  EXPECT_GT(stats.accepted, 0u);
}

TEST(Reduce, RandomGraphsReduceToValidGraphs) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    Graph g = randomGraph(seed);
    Graph r = reduceGraph(g, [](const Graph &c) {
      verifyGraph(c);
      return hasOp(c, OpKind::Input);
    });
    EXPECT_LE(countOps(r), countOps(g)) << "seed " << seed;
    EXPECT_LE(countOps(r), 1u) << "seed " << seed << "\n" << printGraph(r);
  }
}

} // namespace
