// The idioms models bring (issue 42): reshape's inferred -1, expm1 and log1p,
// flip, full, and counter-based random numbers, checked on the graph, the
// parser and the CPU reference.
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Graph.h"
#include "ir/Parser.h"
#include "ir/Philox.h"
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
            "reshape: cannot infer the -1 of shape=[0, -1]: dim 0 is 0, so every size would do "
            "(PyTorch refuses it too); give that dimension instead of -1");
  EXPECT_EQ(graphErrorOf([&] { x.reshape({-2, 3}); }),
            "reshape: shape=[-2, 3] has -2 at dim 0; a dimension is at least 1, or -1 for the one "
            "inferred from the element count");
  EXPECT_EQ(graphErrorOf([&] { x.broadcast({-1, 3}); }),
            "broadcast: dimension 0 of [-1, 3] is -1; dimensions must be at least 0");
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
  EXPECT_EQ(graphErrorOf([&] { full(g, {-1, 2}, 1); }),
            "full: dimension 0 of [-1, 2] is -1; dimensions must be at least 0");
  EXPECT_EQ(full(g, {0, 2}, 1).shape(), (Shape{0, 2})) << "an empty full (issue 42)";
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

// ---- random numbers

namespace {

struct RandomGraph {
  Graph g{"r"};
  Tensor seed = g.input("seed", DType::I32, {});
  Tensor offset = g.input("offset", DType::I32, {});
};

HostTensor scalarI32(int32_t v) {
  HostTensor t(DType::I32, Shape{});
  t.set(0, v);
  return t;
}

} // namespace

TEST(Philox, KnownAnswers) {
  // Random123's known-answer vectors for philox4x32_10 (kat_vectors).
  using W = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, 0, 0), (W{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff),
            (W{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0),
            (W{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Random, RandIsThePhiloxNumberOfEachElement) {
  RandomGraph r;
  r.g.output(rand(r.seed, r.offset, {3, 5}), "u");
  auto out = evaluate(r.g, {scalarI32(-17), scalarI32(3)});
  for (int64_t i = 0; i < 15; ++i) {
    uint32_t w = randomWords(-17, 3, i)[0];
    EXPECT_EQ(out[0].get(i), (w >> 8) * 0x1p-24) << i;
  }
}

TEST(Random, HalfRandKeepsTheBitsItsDTypeHoldsAndNeverGivesOne) {
  // f16 keeps 11 bits, bf16 8: rounding 24 bits to them gave 1.0 about once
  // in 2^12 (2^9) draws
  for (DType t : {DType::F16, DType::BF16}) {
    RandomGraph r;
    r.g.output(rand(r.seed, r.offset, {1 << 16}, t), "u");
    auto out = evaluate(r.g, {scalarI32(5), scalarI32(0)});
    int bits = t == DType::F16 ? 11 : 8;
    double largest = 0;
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      uint32_t w = randomWords(5, 0, i)[0];
      ASSERT_EQ(out[0].get(i), std::ldexp(double(w >> (32 - bits)), -bits)) << i;
      largest = std::max(largest, out[0].get(i));
    }
    EXPECT_LT(largest, 1.0);
    EXPECT_EQ(largest, 1.0 - std::ldexp(1.0, -bits)) << "2^16 draws reach the largest value";
  }
}

TEST(Random, RandIsUniformByChiSquare) {
  // 10^6 draws in 100 bins: chi-square with 99 degrees of freedom has mean
  // 99 and standard deviation 14; 99 + 5 * 14 = 169 fails a correct
  // generator about once in 10^6 runs.
  RandomGraph r;
  const int64_t n = 1000000;
  r.g.output(rand(r.seed, r.offset, {n}), "u");
  for (int32_t seed : {0, 1, 123456789}) {
    auto out = evaluate(r.g, {scalarI32(seed), scalarI32(0)});
    std::vector<int64_t> bins(100, 0);
    for (int64_t i = 0; i < n; ++i) {
      double u = out[0].get(i);
      ASSERT_GE(u, 0.0);
      ASSERT_LT(u, 1.0);
      ++bins[static_cast<size_t>(u * 100)];
    }
    double chi2 = 0, expected = n / 100.0;
    for (int64_t b : bins)
      chi2 += (b - expected) * (b - expected) / expected;
    EXPECT_LT(chi2, 169.0) << "seed " << seed;
    EXPECT_GT(chi2, 40.0) << "seed " << seed << ": too even to be random";
  }
}

TEST(Random, RandnHasMeanZeroAndVarianceOne) {
  RandomGraph r;
  const int64_t n = 1000000;
  r.g.output(randn(r.seed, r.offset, {n}), "z");
  auto out = evaluate(r.g, {scalarI32(9), scalarI32(1)});
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    double z = out[0].get(i);
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sq += z * z;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_LT(std::fabs(mean), 5.0 / std::sqrt(double(n))); // 5 sigma
  EXPECT_LT(std::fabs(var - 1), 5.0 * std::sqrt(2.0 / double(n)));
}

TEST(Random, SeedsAndOffsetsDrawFreshNumbersAndARunIsReproducible) {
  RandomGraph r;
  r.g.output(rand(r.seed, r.offset, {1000}), "u");
  auto a = evaluate(r.g, {scalarI32(1), scalarI32(0)});
  auto again = evaluate(r.g, {scalarI32(1), scalarI32(0)});
  auto seed2 = evaluate(r.g, {scalarI32(2), scalarI32(0)});
  auto replay = evaluate(r.g, {scalarI32(1), scalarI32(1)});
  int sameSeed = 0, sameOffset = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(a[0].get(i), again[0].get(i));
    sameSeed += a[0].get(i) == seed2[0].get(i);
    sameOffset += a[0].get(i) == replay[0].get(i);
  }
  EXPECT_LT(sameSeed, 3);
  EXPECT_LT(sameOffset, 3);
}

TEST(Random, DropoutKeepRateIsOneMinusPWithinFourSigma) {
  // 10^7 draws: the count of kept elements is binomial(n, 1-p).
  RandomGraph r;
  const int64_t n = 10000000;
  const double p = 0.3;
  Tensor x = full(r.g, {n}, 1.0);
  r.g.output(dropout(x, r.seed, r.offset, p), "y");
  auto out = evaluate(r.g, {scalarI32(77), scalarI32(0)});
  double scale = dropoutScale(static_cast<float>(p));
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    double y = out[0].get(i);
    if (y != 0) {
      ASSERT_EQ(y, static_cast<double>(static_cast<float>(scale))) << i;
      ++kept;
    }
  }
  double mean = n * (1 - p), sigma = std::sqrt(n * p * (1 - p));
  EXPECT_LT(std::fabs(kept - mean), 4 * sigma) << kept << " kept of " << n;
}

TEST(Random, DropoutMaskMatchesBetweenForwardAndBackwardAndDiffersBetweenSeeds) {
  RandomGraph r;
  Tensor x = r.g.input("x", DType::F32, {64, 33});
  Tensor y = dropout(x, r.seed, r.offset, 0.5);
  r.g.output(y, "y");
  r.g.output(grad(sum(y), x), "dx");
  HostTensor xin(DType::F32, {64, 33});
  for (int64_t i = 0; i < xin.numel(); ++i)
    xin.set(i, 1.0 + (i % 7) * 0.25); // never 0: a zero in y is a dropped element
  auto a = evaluate(r.g, {scalarI32(5), scalarI32(2), xin});
  auto b = evaluate(r.g, {scalarI32(6), scalarI32(2), xin});
  int64_t kept = 0, differ = 0;
  for (int64_t i = 0; i < xin.numel(); ++i) {
    bool keptForward = a[0].get(i) != 0, keptBackward = a[1].get(i) != 0;
    EXPECT_EQ(keptForward, keptBackward) << i;
    if (keptBackward) {
      EXPECT_EQ(a[1].get(i), 2.0); // d(sum y)/dx = the scale where kept
    }
    kept += keptForward;
    differ += keptForward != (b[0].get(i) != 0);
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(differ, xin.numel() / 4); // half of the elements differ, as expected at p = 0.5
}

TEST(Random, ErrorsSayWhy) {
  RandomGraph r;
  Tensor f = r.g.input("f", DType::F32, {});
  Tensor v = r.g.input("v", DType::I32, {2});
  EXPECT_EQ(graphErrorOf([&] { rand(f, r.offset, {4}); }),
            "rand: the seed %f is f32[] but must be an i32 scalar (i32[])");
  EXPECT_EQ(graphErrorOf([&] { randn(r.seed, v, {4}); }),
            "randn: the offset %v is i32[2] but must be an i32 scalar (i32[])");
  EXPECT_EQ(graphErrorOf([&] { rand(r.seed, r.offset, {4}, DType::I32); }),
            "rand: dtype i32; random numbers are f32, f16 or bf16 (cast them)");
  Tensor x = r.g.input("x", DType::F32, {4});
  EXPECT_EQ(graphErrorOf([&] { dropout(x, r.seed, r.offset, 1.0); }),
            "dropout: p=1 is outside [0, 1) (the probability of dropping an element)");
  EXPECT_NE(graphErrorOf([&] { dropout(v, r.seed, r.offset, 0.5); }).find("dropout"),
            std::string::npos);
  EXPECT_EQ(graphErrorOf([&] { rand(r.seed, r.offset, {65536, 65536}); }),
            "rand: [65536, 65536] has 4294967296 elements; random ops take at most 2^31 - 1");
}

TEST(Random, TextRoundTrips) {
  std::string text = "graph g(%x: f32[4, 8], %seed: i32[], %offset: i32[]) {\n"
                     "  %u = rand %seed, %offset shape=[4, 8] dtype=f32 : f32[4, 8]\n"
                     "  %z = randn 42, 0 shape=[8] dtype=bf16 : bf16[8]\n"
                     "  %d = dropout %x, %seed, %offset p=0.125 : f32[4, 8]\n"
                     "  %y = add %d, %u : f32[4, 8]\n"
                     "  return %y, %z\n"
                     "}\n";
  std::vector<Graph> gs = parseGraphs(text, "t.mj");
  EXPECT_EQ(printGraph(gs[0]), text);
  EXPECT_NE(parseErrorOf("graph g(%s: i32[]) {\n  %u = rand %s, %s\n  return %u\n}\n")
                .find("rand needs the attribute shape=..."),
            std::string::npos);
  EXPECT_NE(parseErrorOf("graph g(%x: f32[2]) {\n  %u = dropout %x, 1, 2\n  return %u\n}\n")
                .find("dropout needs the attribute p=..."),
            std::string::npos);
}
