// The reducer (tools/Reduce.h): it keeps the condition, shrinks a planted
// failure to a few nodes, and every candidate it tries is a valid graph.
#include "tools/Reduce.h"

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "tests/support/RandomGraph.h"

#include "llvm/ADT/STLExtras.h"

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

TEST(Reduce, ShrinksSizesAndPlainsOps) {
  // The planted failure needs a sum over a row of at least 3 of a computed
  // value (not a view): the reducer leaves one plain op feeding the sum,
  // over one row of 3.
  Graph g("sizes");
  Tensor x = g.input("x", DType::F32, {33, 17});
  Tensor b = g.input("b", DType::F32, {17});
  Tensor r = (x + b).reshape({561}).reshape({33, 17});
  Tensor t = tanh(r * 1.5);
  g.output(sum(t, {1}, true) - x, "out");
  auto interesting = [](const Graph &c) {
    verifyGraph(c);
    return llvm::any_of(c.nodes(), [&](const Node &n) {
      const Node &in = c.node(n.operands.empty() ? 0 : n.operands[0]);
      return n.op == OpKind::Sum && in.cls() != OpClass::Input && in.cls() != OpClass::View &&
             in.shape.dims().back() >= 3;
    });
  };
  Graph red = reduceGraph(g, interesting);
  ASSERT_TRUE(interesting(red));
  EXPECT_LE(countOps(red), 2u) << printGraph(red);
  for (const Node &n : red.nodes())
    EXPECT_LE(n.shape.numel(), 3) << printGraph(red);
  // tanh and mul became plain ops (neg, add) or went away.
  EXPECT_FALSE(hasOp(red, OpKind::Tanh) || hasOp(red, OpKind::Mul)) << printGraph(red);
  EXPECT_TRUE(hasOp(red, OpKind::Neg) || hasOp(red, OpKind::Add)) << printGraph(red);
}

TEST(Reduce, ReshapesFollowAShrunkSize) {
  // A reshape that splits an axis keeps its shape consistent as sizes shrink.
  Graph g("split");
  Tensor x = g.input("x", DType::F32, {6, 35});
  Tensor r = x.reshape({6, 5, 7});
  g.output(sum(exp(r), {2}), "y");
  auto interesting = [](const Graph &c) {
    verifyGraph(c);
    return hasOp(c, OpKind::Reshape) && hasOp(c, OpKind::Sum);
  };
  Graph red = reduceGraph(g, interesting);
  ASSERT_TRUE(interesting(red));
  EXPECT_LT(red.node(red.inputs()[0]).shape.numel(), 6 * 35) << printGraph(red);
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
