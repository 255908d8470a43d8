// The idioms models bring (issue 42): reshape's inferred -1, expm1 and log1p,
// flip, full, and counter-based random numbers, checked on the graph, the
// parser and the CPU reference.
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Graph.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include "tests/support/Expect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace minijit;

namespace {

HostTensor tensorOf(DType t, const Shape &s, const std::vector<double> &v) {
  HostTensor h(t, s);
  EXPECT_EQ(static_cast<int64_t>(v.size()), h.numel());
  for (size_t i = 0; i < v.size(); ++i)
    h.set(static_cast<int64_t>(i), v[i]);
  return h;
}


/// The ParseError message of `text`, or "" when it parses.
std::string parseErrorOf(const std::string &text) {
  try {
    parseGraphs(text, "t.mj");
  } catch (const ParseError &e) {
    return e.what();
  }
  return "";
}

} // namespace

// ---- reshape with -1

TEST(ReshapeInferred, OneMinusOneTakesTheRestOfTheCount) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  EXPECT_EQ(x.reshape({-1}).shape(), Shape({24}));
  EXPECT_EQ(x.reshape({6, -1}).shape(), Shape({6, 4}));
  EXPECT_EQ(x.reshape({-1, 2, 3}).shape(), Shape({4, 2, 3}));
  EXPECT_EQ(x.reshape({24, -1}).shape(), Shape({24, 1}));
}

TEST(ReshapeInferred, NamedSizesDivideSymbolically) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B"), Dim("S"), 64});
  EXPECT_EQ(x.reshape({Dim("B"), -1}).shape().str(), "[B, 64*S]");
  EXPECT_EQ(x.reshape({-1, 64}).shape().str(), "[B*S, 64]");
  EXPECT_EQ(x.reshape({-1, 8}).shape().str(), "[8*B*S, 8]");
  EXPECT_EQ(graphErrorOf([&] { x.reshape({Dim("T"), -1}); }),
            "reshape: cannot infer the -1 of shape=[T, -1]: [B, S, 64] has 64*B*S elements, "
            "which the other dimensions (T elements) do not divide");
}

TEST(ReshapeInferred, ErrorsSayWhy) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] { x.reshape({-1, -1}); }),
            "reshape: shape=[-1, -1] has -1 at dims 0 and 1; only one dimension can be inferred");
  EXPECT_EQ(graphErrorOf([&] { x.reshape({4, -1}); }),
            "reshape: cannot infer the -1 of shape=[4, -1]: [2, 3] has 6 elements, which the "
            "other dimensions (4 elements) do not divide");
  EXPECT_EQ(graphErrorOf([&] { x.reshape({0, -1}); }),
            "reshape: shape=[0, -1] has 0 at dim 0 beside the -1 at dim 1; the other dimensions "
            "must be at least 1 to infer it");
  EXPECT_EQ(graphErrorOf([&] { x.reshape({-2, 3}); }),
            "reshape: shape=[-2, 3] has -2 at dim 0; a dimension is at least 1, or -1 for the one "
            "inferred from the element count");
  EXPECT_EQ(graphErrorOf([&] { x.broadcast({-1, 3}); }),
            "broadcast: dimension 0 of [-1, 3] is -1; dimensions must be at least 1");
}

TEST(ReshapeInferred, TextPrintsTheInferredDimension) {
  std::vector<Graph> gs = parseGraphs("graph g(%x: f32[4, 6]) {\n"
                                      "  %y = reshape %x shape=[-1, 3]\n"
                                      "  return %y\n"
                                      "}\n",
                                      "t.mj");
  std::string text = printGraph(gs[0]);
  EXPECT_NE(text.find("reshape %x shape=[8, 3]"), std::string::npos) << text;
  HostTensor in = tensorOf(DType::F32, {4, 6}, std::vector<double>(24, 1.5));
  EXPECT_EQ(evaluate(gs[0], {in})[0].shape(), Shape({8, 3}));
  EXPECT_NE(parseErrorOf("graph g(%x: f32[4, 6]) {\n  %y = reshape %x shape=[-1, -1]\n"
                         "  return %y\n}\n")
                .find("t.mj:2:8: error: reshape: shape=[-1, -1] has -1 at dims 0 and 1"),
            std::string::npos);
}
