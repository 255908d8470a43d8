// compiler/simplify/ArgmaxRewrites: an argmax (argmin) of a strictly
// monotone chain reads the chain's start; where it applies, where it must
// not, that the compiler names it and --no-reassociate / --no-fusion keep
// the graph as written, and that the CPU reference of the rewritten graph
// gives the positions the original gives (ties included; a NaN is the one
// documented difference).
#include "compiler/Compiler.h"
#include "compiler/simplify/ArgmaxRewrites.h"
#include "compiler/simplify/Simplify.h"
#include "ir/Builder.h"
#include "ir/Evaluator.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace minijit;

namespace {

/// The rewritten graph, simplified (dead values gone), checked to verify.
MatmulRewriteResult rewritten(const Graph &g) {
  MatmulRewriteResult r = rewriteMonotoneArgs(g);
  r.graph = simplifyGraph(r.graph);
  EXPECT_NO_THROW(verifyGraph(r.graph));
  return r;
}

/// The node output `o` of `g` is.
const Node &outputNode(const Graph &g, size_t o) { return g.node(g.outputs()[o]); }

/// Both graphs' outputs on the same inputs, element for element.
void expectSameOutputs(const Graph &a, const Graph &b, const std::vector<HostTensor> &in) {
  std::vector<HostTensor> x = evaluate(a, in), y = evaluate(b, in);
  ASSERT_EQ(x.size(), y.size());
  for (size_t o = 0; o < x.size(); ++o)
    for (int64_t i = 0; i < x[o].numel(); ++i)
      ASSERT_EQ(x[o].get(i), y[o].get(i)) << "output " << o << " element " << i;
}

Graph greedy(int64_t rows = 4, int64_t cols = 1001) {
  Graph g("greedy");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  g.output(argmax(softmax(x, 1), 1), "token");
  return g;
}

TEST(ArgmaxRewrites, TheArgmaxOfASoftmaxReadsTheLogits) {
  Graph g = greedy();
  MatmulRewriteResult r = rewritten(g);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::MonotoneArg);
  EXPECT_EQ(r.applied[0].value, "token");
  EXPECT_EQ(printGraph(r.graph), "graph greedy(%x: f32[4, 1001]) {\n"
                                 "  %token = argmax %x axis=1 : i32[4]\n"
                                 "  return %token\n"
                                 "}\n");
  EXPECT_NE(r.applied[0].text().find("%token: argmax over axis 1 of a value strictly increasing "
                                     "in %x along it (sub, exp, div), as the argmax of %x"),
            std::string::npos)
      << r.applied[0].text();
  for (uint64_t seed : {1, 2, 3})
    expectSameOutputs(g, r.graph, randomInputs(g, seed));
}

TEST(ArgmaxRewrites, ALogSoftmaxAndAnArgminToo) {
  Graph g("lsm");
  Tensor x = g.input("x", DType::F32, {5, 300});
  g.output(argmax(logSoftmax(x, 1), 1), "a");
  g.output(argmin(softmax(x, 1), 1, /*keepdim=*/true), "b");
  MatmulRewriteResult r = rewritten(g);
  ASSERT_EQ(r.applied.size(), 2u);
  for (size_t o = 0; o < 2; ++o)
    EXPECT_EQ(outputNode(r.graph, o).operands[0], *r.graph.lookup("x")) << printGraph(r.graph);
  EXPECT_EQ(outputNode(r.graph, 0).op, OpKind::Argmax);
  EXPECT_EQ(outputNode(r.graph, 1).op, OpKind::Argmin);
  EXPECT_TRUE(outputNode(r.graph, 1).keepdim);
  expectSameOutputs(g, r.graph, randomInputs(g, 5));
}

TEST(ArgmaxRewrites, ADecreasingChainSwapsArgmaxAndArgmin) {
  Graph g("flip");
  Tensor x = g.input("x", DType::F32, {3, 70});
  g.output(argmax(-2.0 * exp(x), 1), "a");         // decreasing
  g.output(argmin(1.0 - sigmoid(x / -4.0), 1), "b"); // two decreasing steps
  g.output(argmax(tanh(neg(x)) * 3.0, 1), "c");
  MatmulRewriteResult r = rewritten(g);
  ASSERT_EQ(r.applied.size(), 3u);
  EXPECT_EQ(outputNode(r.graph, 0).op, OpKind::Argmin);
  EXPECT_EQ(outputNode(r.graph, 1).op, OpKind::Argmin);
  EXPECT_EQ(outputNode(r.graph, 2).op, OpKind::Argmin);
  for (size_t o = 0; o < 3; ++o)
    EXPECT_EQ(outputNode(r.graph, o).operands[0], *r.graph.lookup("x")) << printGraph(r.graph);
  expectSameOutputs(g, r.graph, randomInputs(g, 7));
}

TEST(ArgmaxRewrites, TheSoftmaxStaysWhenSomethingElseReadsIt) {
  Graph g("both");
  Tensor x = g.input("x", DType::F32, {4, 1001});
  Tensor p = softmax(x, 1);
  g.output(p, "p");
  g.output(argmax(p, 1), "token");
  MatmulRewriteResult r = rewritten(g);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(outputNode(r.graph, 0).op, OpKind::Div) << printGraph(r.graph);
  EXPECT_EQ(outputNode(r.graph, 1).operands[0], *r.graph.lookup("x")) << printGraph(r.graph);
  expectSameOutputs(g, r.graph, randomInputs(g, 1));
}

TEST(ArgmaxRewrites, ExactTiesStayTiesAndGoToTheLowestPosition) {
  // Logits rounded to halves tie often; equal logits give equal
  // probabilities, so both graphs pick the lowest position of the largest.
  Graph g("ties");
  Tensor x = g.input("x", DType::F32, {16, 200});
  Tensor t = floor(x * 2.0);
  g.output(argmax(softmax(t, 1), 1), "a");
  g.output(argmin(softmax(t, 1), 1), "b");
  MatmulRewriteResult r = rewritten(g);
  ASSERT_EQ(r.applied.size(), 2u);
  for (uint64_t seed : {1, 2, 3, 4})
    expectSameOutputs(g, r.graph, randomInputs(g, seed));
}

TEST(ArgmaxRewrites, ANaNIsNoLongerSpreadOverTheRow) {
  // As written, a NaN makes the row's max and sum NaN, every probability NaN
  // and the argmax 0; rewritten, the first NaN wins (numpy's rule), as the
  // argmax of the logits would give. Documented in docs/FORMAT.md.
  Graph g = greedy(1, 10);
  std::vector<HostTensor> in = randomInputs(g, 1);
  in[0].set(6, NAN);
  EXPECT_EQ(evaluate(g, in)[0].get(0), 0);
  EXPECT_EQ(evaluate(rewritten(g).graph, in)[0].get(0), 6);
}

TEST(ArgmaxRewrites, NotThroughACast) {
  Graph g("cast");
  Tensor x = g.input("x", DType::F32, {4, 64});
  g.output(argmax(cast(exp(x), DType::F16), 1), "a");
  EXPECT_TRUE(rewriteMonotoneArgs(g).applied.empty());
  // a chain under the cast still goes as far as the cast
  Graph h("under");
  Tensor y = h.input("y", DType::F32, {4, 64});
  Tensor half = cast(y, DType::F16).named("half");
  h.output(argmax(exp(half), 1), "a");
  MatmulRewriteResult r = rewritten(h);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(outputNode(r.graph, 0).operands[0], *r.graph.lookup("half")) << printGraph(r.graph);
}

TEST(ArgmaxRewrites, NotThroughAProductByZeroOrByAValue) {
  Graph g("mul");
  Tensor x = g.input("x", DType::F32, {4, 64});
  Tensor pos = g.input("pos", DType::F32, {4, 1});
  g.output(argmax(x * 0.0, 1), "zero");
  g.output(argmax(x * exp(pos), 1), "value"); // positive, but not a literal
  g.output(argmax(x * x, 1), "square");
  EXPECT_TRUE(rewriteMonotoneArgs(g).applied.empty());
}

TEST(ArgmaxRewrites, NotThroughADivisionByWhatMayNotBePositive) {
  Graph g("div");
  Tensor x = g.input("x", DType::F32, {4, 64});
  Tensor e = exp(x);
  g.output(argmax(e / sum(x, {1}, true), 1), "sum");    // a sum, not of exp
  g.output(argmax(e / max(e, {1}, true), 1), "max");    // positive, not provably so here
  g.output(argmax(e / sum(e, {0}, true), 1), "across"); // positive, varies along the axis
  g.output(argmax(x / 0.0, 1), "zero");
  g.output(argmax(2.0 / e, 1), "recip"); // decreasing where e > 0 only
  EXPECT_TRUE(rewriteMonotoneArgs(g).applied.empty()) << printGraph(g);
  // a positive literal and a sum of exp along the axis do
  Graph h("ok");
  Tensor y = h.input("y", DType::F32, {4, 64});
  Tensor f = exp(y);
  h.output(argmax(y / 8.0, 1), "lit");
  h.output(argmax(f / sum(f, {1}, true), 1), "sm");
  EXPECT_EQ(rewriteMonotoneArgs(h).applied.size(), 2u);
}

TEST(ArgmaxRewrites, NotThroughAnAdditionThatVariesAlongTheAxis) {
  Graph g("add");
  Tensor x = g.input("x", DType::F32, {4, 64});
  Tensor bias = g.input("bias", DType::F32, {64}); // one per column
  g.output(argmax(x + bias, 1), "along");
  g.output(argmax(x - x * 2.0, 1), "self");
  MatmulRewriteResult none = rewriteMonotoneArgs(g);
  EXPECT_TRUE(none.applied.empty()) << printGraph(none.graph);
  // constant along the axis the argmax runs over: a bias per column is
  // constant along the rows (axis 0), a value per row along axis 1
  Graph h("along");
  Tensor y = h.input("y", DType::F32, {4, 64});
  Tensor b = h.input("b", DType::F32, {64});
  Tensor r = h.input("r", DType::F32, {4, 1});
  h.output(argmax(y + b, 0), "cols");
  h.output(argmin(r + y - 1.5, 1), "rows");
  EXPECT_EQ(rewriteMonotoneArgs(h).applied.size(), 2u);
}

TEST(ArgmaxRewrites, NotOverIntegersOrThroughOtherOps) {
  Graph g("other");
  Tensor i = g.input("i", DType::I32, {4, 64});
  Tensor x = g.input("x", DType::F32, {4, 64});
  g.output(argmax(i + 1, 1), "wraps");
  g.output(argmax(log(x), 1), "log"); // NaN below 0
  g.output(argmax(relu(x), 1), "relu"); // ties
  g.output(argmax(x, 1), "plain");
  EXPECT_TRUE(rewriteMonotoneArgs(g).applied.empty());
}

TEST(ArgmaxRewrites, TheCompilerNamesItAndNotWithoutReassociationOrFusion) {
  CompileOptions opt;
  opt.compileKernels = false;
  CompiledGraph c = compileGraph(greedy(64, 128256), opt);
  EXPECT_EQ(c.numKernels(), 1u);
  ASSERT_EQ(c.rewrites.size(), 1u);
  EXPECT_NE(c.fusedText().find("rewrites:\n  %token: argmax over axis 1 of a value strictly "
                               "increasing in %x"),
            std::string::npos)
      << c.fusedText();
  EXPECT_EQ(c.graph.size(), 2u) << printGraph(c.graph); // %x and the argmax
  opt.reassociate = false;
  CompiledGraph asWritten = compileGraph(greedy(64, 128256), opt);
  EXPECT_TRUE(asWritten.rewrites.empty());
  EXPECT_EQ(asWritten.fusedText().find("rewrites:"), std::string::npos);
  EXPECT_GT(asWritten.graph.size(), 2u);
  opt.reassociate = true;
  opt.fusion = false;
  CompiledGraph eager = compileGraph(greedy(64, 128256), opt);
  EXPECT_TRUE(eager.rewrites.empty());
  EXPECT_GT(eager.numKernels(), 1u);
}

} // namespace
