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

// ---- expm1 and log1p

TEST(Expm1Log1p, ReferenceKeepsTheDigitsNearZero) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4});
  g.output(expm1(x), "e");
  g.output(log1p(x), "l");
  g.output(exp(x) - 1.0, "naive");
  std::vector<double> in = {1e-7, -3e-6, 0.5, -1};
  auto out = evaluate(g, {tensorOf(DType::F32, {4}, in)});
  for (int i = 0; i < 3; ++i) {
    float xf = static_cast<float>(in[i]);
    EXPECT_EQ(out[0].get(i), static_cast<double>(static_cast<float>(std::expm1(double(xf)))));
    EXPECT_EQ(out[1].get(i), static_cast<double>(static_cast<float>(std::log1p(double(xf)))));
  }
  // exp(x) - 1 in f32 loses x = 1e-7 entirely; expm1 keeps it to the ulp.
  EXPECT_NEAR(out[0].get(0) / 1e-7, 1.0, 1e-6);
  EXPECT_GT(std::fabs(out[2].get(0) / 1e-7 - 1.0), 1e-3);
  EXPECT_EQ(out[1].get(3), -INFINITY); // log1p(-1)
}

TEST(Expm1Log1p, TakeFloatsOnly) {
  Graph g;
  Tensor i = g.input("i", DType::I32, {4});
  EXPECT_NE(graphErrorOf([&] { expm1(i); }).find("expm1"), std::string::npos);
  EXPECT_NE(graphErrorOf([&] { log1p(i); }).find("log1p"), std::string::npos);
}

// ---- flip

TEST(Flip, ReversesTheNamedAxes) {
  Graph g;
  Tensor x = g.input("x", DType::I32, {2, 3});
  g.output(flip(x, {1}), "a");
  g.output(flip(x, {-2}), "b");
  g.output(flip(x, {0, 1}), "c");
  auto out = evaluate(g, {tensorOf(DType::I32, {2, 3}, {0, 1, 2, 3, 4, 5})});
  auto values = [](const HostTensor &h) {
    std::vector<double> v;
    for (int64_t i = 0; i < h.numel(); ++i)
      v.push_back(h.get(i));
    return v;
  };
  EXPECT_EQ(values(out[0]), (std::vector<double>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(values(out[2]), (std::vector<double>{5, 4, 3, 2, 1, 0}));
}

TEST(Flip, ErrorsSayWhy) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] { flip(x, {2}); }),
            "flip: axis 2 is out of range for rank 2 (valid: -2..1)");
  EXPECT_EQ(graphErrorOf([&] { flip(x, {1, -1}); }), "flip: axis 1 appears twice in axes=[1, -1]");
  EXPECT_EQ(graphErrorOf([&] { flip(x, AxisList()); }),
            "flip: needs axes=[...], the axes to reverse (at least one)");
  Tensor b = g.input("b", DType::F32, {Dim("B"), 3});
  EXPECT_NE(graphErrorOf([&] { flip(b, {0}); }).find("flipping a named dimension"),
            std::string::npos);
}

TEST(Flip, TextRoundTrips) {
  std::string text = "graph g(%x: f32[2, 3, 4]) {\n"
                     "  %y = flip %x axes=[2, 0] : f32[2, 3, 4]\n"
                     "  return %y\n"
                     "}\n";
  std::vector<Graph> gs = parseGraphs(text, "t.mj");
  std::string printed = printGraph(gs[0]);
  EXPECT_NE(printed.find("%y = flip %x axes=[0, 2] : f32[2, 3, 4]"), std::string::npos) << printed;
  EXPECT_EQ(printGraph(parseGraphs(printed, "t.mj")[0]), printed);
  EXPECT_NE(parseErrorOf("graph g(%x: f32[2]) {\n  %y = flip %x\n  return %y\n}\n")
                .find("flip needs the attribute axes=..."),
            std::string::npos);
}

// ---- full

TEST(Full, EveryElementIsTheValue) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {3, 5});
  g.output(full(g, x.shape(), 0, x.dtype()) + x, "zeros_like_plus_x");
  g.output(full(g, {2, 2}, -7, DType::I32), "i");
  g.output(full(g, {3}, 1, DType::Bool), "b");
  g.output(full(g, {2}, 0.1, DType::F16), "h");
  std::vector<double> in(15);
  for (int i = 0; i < 15; ++i)
    in[i] = i * 0.25;
  auto out = evaluate(g, {tensorOf(DType::F32, {3, 5}, in)});
  for (int i = 0; i < 15; ++i)
    EXPECT_EQ(out[0].get(i), in[i]);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[1].get(i), -7);
  EXPECT_EQ(out[2].dtype(), DType::Bool);
  EXPECT_EQ(out[2].get(2), 1);
  EXPECT_EQ(out[3].get(1), roundToDType(0.1, DType::F16));
}

TEST(Full, ErrorsSayWhy) {
  Graph g;
  EXPECT_EQ(graphErrorOf([&] { full(g, {2}, 1.5, DType::I32); }),
            "full: value=1.5 is not an i32 value");
  EXPECT_EQ(graphErrorOf([&] { full(g, {2}, 2, DType::Bool); }),
            "full: value=2 is not a bool value (use 0 or 1)");
  EXPECT_EQ(graphErrorOf([&] { full(g, {0, 2}, 1); }),
            "full: dimension 0 of [0, 2] is 0; dimensions must be at least 1");
  EXPECT_NE(parseErrorOf("graph g() {\n  %y = full shape=[2]\n  return %y\n}\n")
                .find("full needs the attribute value=..."),
            std::string::npos);
  EXPECT_NE(parseErrorOf("graph g(%x: f32[2]) {\n  %y = full %x shape=[2] value=1\n  return %y\n}\n")
                .find("full: takes no operands"),
            std::string::npos);
}

TEST(Full, TextRoundTrips) {
  std::string text = "graph g(%x: f32[2, 3]) {\n"
                     "  %z = full shape=[2, 3] value=-0.5 dtype=f32 : f32[2, 3]\n"
                     "  %m = full shape=[3] value=true dtype=bool : bool[3]\n"
                     "  %k = full shape=[1] value=3 dtype=i32 : i32[1]\n"
                     "  %y = add %x, %z : f32[2, 3]\n"
                     "  return %y, %m, %k\n"
                     "}\n";
  std::vector<Graph> gs = parseGraphs(text, "t.mj");
  EXPECT_EQ(printGraph(gs[0]), text);
}
