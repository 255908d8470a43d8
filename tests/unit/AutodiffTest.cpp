// Reverse-mode autodiff (ir/Autodiff.h): every op's gradient rule against
// central finite differences of the CPU reference, in f32 at random points
// away from kinks; f16 and bf16 against the f32 gradient; ties, zeros,
// errors, shared sweeps, second derivatives and the text form.
#include "ir/Autodiff.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include "tests/support/Expect.h"

#include "llvm/ADT/STLExtras.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace minijit;

namespace {

using Forward = std::function<Tensor(const std::vector<Tensor> &)>;
/// Moves random inputs into the op's smooth domain (away from kinks and poles).
using Domain = std::function<double(size_t input, double x)>;

double anywhere(size_t, double x) { return x; }
double positive(size_t, double x) { return std::fabs(x) + 0.5; }
/// At least `gap` away from zero, keeping the sign.
double awayFromZero(size_t, double x) { return x + (x < 0 ? -0.3 : 0.3); }

struct GradCase {
  std::string name;
  std::vector<Shape> shapes;
  Forward f;
  Domain domain = anywhere;
};

/// The graph loss = sum(f(xs) * c) with c a random cotangent input, returning
/// the loss and the gradient with respect to each x.
Graph gradGraph(const GradCase &tc, DType dtype) {
  Graph g("grad_" + tc.name);
  std::vector<Tensor> xs;
  for (size_t i = 0; i < tc.shapes.size(); ++i)
    xs.push_back(g.input("x" + std::to_string(i), dtype, tc.shapes[i]));
  Tensor y = tc.f(xs);
  Tensor c = g.input("c", y.dtype(), y.shape());
  Tensor loss = sum(y * c);
  g.output(loss, "loss");
  for (size_t i = 0; i < xs.size(); ++i)
    g.output(grad(loss, xs[i]), "d" + std::to_string(i));
  return g;
}

std::vector<HostTensor> inputsFor(const GradCase &tc, const Graph &g, uint64_t seed) {
  std::vector<HostTensor> ins = randomInputs(g, seed);
  for (size_t i = 0; i < tc.shapes.size(); ++i)
    for (int64_t e = 0; e < ins[i].numel(); ++e)
      ins[i].set(e, tc.domain(i, ins[i].get(e)));
  return ins;
}

/// Central differences of the loss at up to 16 elements of each input,
/// against the gradients the graph computes.
void checkFiniteDifferences(const GradCase &tc, uint64_t seed = 7) {
  SCOPED_TRACE(tc.name);
  Graph g = gradGraph(tc, DType::F32);
  std::vector<HostTensor> ins = inputsFor(tc, g, seed);
  std::vector<HostTensor> outs = evaluate(g, ins);
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (size_t i = 0; i < tc.shapes.size(); ++i) {
    const HostTensor &analytic = outs[1 + i];
    double scale = 1e-3;
    for (int64_t e = 0; e < analytic.numel(); ++e)
      scale = std::max(scale, std::fabs(analytic.get(e)));
    int64_t n = ins[i].numel();
    for (int probe = 0; probe < std::min<int64_t>(n, 16); ++probe) {
      int64_t e = n <= 16 ? probe : static_cast<int64_t>(rng() % n);
      double x = ins[i].get(e), h = 1e-2 * std::max(1.0, std::fabs(x));
      std::vector<HostTensor> plus = ins, minus = ins;
      plus[i].set(e, x + h);
      minus[i].set(e, x - h);
      double step = plus[i].get(e) - minus[i].get(e); // as rounded to f32
      double fd = (evaluate(g, plus)[0].get(0) - evaluate(g, minus)[0].get(0)) / step;
      EXPECT_NEAR(analytic.get(e), fd, 5e-3 * scale + 5e-3 * std::fabs(fd))
          << "d loss / d x" << i << "[" << e << "] at x = " << x;
    }
  }
}

/// The gradients in f16 and bf16 against the f32 gradients on the same
/// (rounded) inputs.
void checkHalfPrecision(const GradCase &tc) {
  SCOPED_TRACE(tc.name);
  for (DType half : {DType::F16, DType::BF16}) {
    Graph g32 = gradGraph(tc, DType::F32), g16 = gradGraph(tc, half);
    std::vector<HostTensor> ins16 = inputsFor(tc, g16, 11), ins32;
    for (const HostTensor &t : ins16) {
      HostTensor w(DType::F32, t.shape());
      for (int64_t e = 0; e < t.numel(); ++e)
        w.set(e, t.get(e));
      ins32.push_back(w);
    }
    std::vector<HostTensor> o32 = evaluate(g32, ins32), o16 = evaluate(g16, ins16);
    for (size_t i = 1; i < o32.size(); ++i) {
      EXPECT_EQ(o16[i].dtype(), half);
      double scale = 1e-2;
      for (int64_t e = 0; e < o32[i].numel(); ++e)
        scale = std::max(scale, std::fabs(o32[i].get(e)));
      for (int64_t e = 0; e < o32[i].numel(); ++e)
        EXPECT_NEAR(o16[i].get(e), o32[i].get(e), 4e-2 * scale)
            << std::string(dtypeName(half)) << " d" << i - 1 << "[" << e << "]";
    }
  }
}

void checkBoth(const GradCase &tc) {
  checkFiniteDifferences(tc);
  checkHalfPrecision(tc);
}

const Shape kM{3, 5};

TEST(Autodiff, UnaryRulesMatchFiniteDifferences) {
  std::vector<GradCase> cases = {
      {"neg", {kM}, [](auto &x) { return -x[0]; }},
      {"abs", {kM}, [](auto &x) { return abs(x[0]); }, awayFromZero},
      {"exp", {kM}, [](auto &x) { return exp(x[0]); }},
      {"exp2", {kM}, [](auto &x) { return exp2(x[0]); }},
      {"expm1", {kM}, [](auto &x) { return expm1(x[0]); }},
      {"log", {kM}, [](auto &x) { return log(x[0]); }, positive},
      {"log2", {kM}, [](auto &x) { return log2(x[0]); }, positive},
      {"log1p", {kM}, [](auto &x) { return log1p(x[0]); }, positive},
      {"sqrt", {kM}, [](auto &x) { return sqrt(x[0]); }, positive},
      {"rsqrt", {kM}, [](auto &x) { return rsqrt(x[0]); }, positive},
      {"sin", {kM}, [](auto &x) { return sin(x[0]); }},
      {"cos", {kM}, [](auto &x) { return cos(x[0]); }},
      {"tanh", {kM}, [](auto &x) { return tanh(x[0]); }},
      {"sigmoid", {kM}, [](auto &x) { return sigmoid(x[0]); }},
      {"erf", {kM}, [](auto &x) { return erf(x[0]); }},
      {"relu", {kM}, [](auto &x) { return relu(x[0]); }, awayFromZero},
      {"recip", {kM}, [](auto &x) { return recip(x[0]); }, positive},
  };
  for (const GradCase &tc : cases)
    checkBoth(tc);
}

TEST(Autodiff, BinaryRulesSumOverBroadcastAxes) {
  Shape row{5}, col{3, 1};
  auto apart = [](size_t i, double x) { return i == 0 ? x : x + (x < 0 ? -3.0 : 3.0); };
  auto powDomain = [](size_t i, double x) { return i == 0 ? std::fabs(x) + 0.5 : x; };
  std::vector<GradCase> cases = {
      {"add", {kM, row}, [](auto &x) { return x[0] + x[1]; }},
      {"sub", {col, kM}, [](auto &x) { return x[0] - x[1]; }},
      {"mul", {kM, col}, [](auto &x) { return x[0] * x[1]; }},
      {"div", {kM, row}, [](auto &x) { return x[0] / x[1]; }, positive},
      {"pow", {kM, row}, [](auto &x) { return pow(x[0], x[1]); }, powDomain},
      {"pow_literal", {kM}, [](auto &x) { return pow(x[0], 3.0); }},
      {"maximum", {kM, row}, [](auto &x) { return maximum(x[0], x[1]); }, apart},
      {"minimum", {row, kM}, [](auto &x) { return minimum(x[0], x[1]); }, apart},
      {"where",
       {kM, kM, row},
       [](auto &x) { return where(gt(x[0], scalarLike(x[0], 0)), x[1], x[2]); },
       awayFromZero},
      {"same_operand", {kM}, [](auto &x) { return x[0] * x[0] + x[0]; }},
  };
  for (const GradCase &tc : cases)
    checkBoth(tc);
}

TEST(Autodiff, ReductionRulesBroadcastBack) {
  Shape s3{2, 3, 4};
  // Distinct values a step apart, so no finite difference crosses a tie.
  auto distinct = [](size_t, double x) { return x * 4; };
  std::vector<GradCase> cases = {
      {"sum_axis", {s3}, [](auto &x) { return sum(x[0], {1}); }},
      {"sum_keepdim",
       {s3},
       [](auto &x) {
         return sum(x[0], {0, 2}, true);
       }},
      {"sum_all", {s3}, [](auto &x) { return sum(x[0]); }},
      {"mean_axis", {s3}, [](auto &x) { return mean(x[0], {2}); }},
      {"mean_keepdim",
       {s3},
       [](auto &x) {
         return mean(x[0], {0, 1}, true);
       }},
      {"max_axis", {s3}, [](auto &x) { return max(x[0], {1}); }, distinct},
      {"min_all", {s3}, [](auto &x) { return min(x[0]); }, distinct},
      {"prod_axis", {s3}, [](auto &x) { return prod(x[0], {2}); }, awayFromZero},
  };
  for (const GradCase &tc : cases)
    checkBoth(tc);
}

TEST(Autodiff, ViewAndMatmulRulesInvert) {
  std::vector<GradCase> cases = {
      {"reshape",
       {Shape{3, 4}},
       [](auto &x) {
         return exp(x[0].reshape({2, 6}));
       }},
      {"permute",
       {Shape{2, 3, 4}},
       [](auto &x) {
         return x[0].permute({2, 0, 1}) * 2.0;
       }},
      {"broadcast",
       {Shape{3, 1}},
       [](auto &x) {
         return x[0].broadcast({2, 3, 4});
       }},
      {"matmul", {Shape{3, 4}, Shape{4, 5}}, [](auto &x) { return matmul(x[0], x[1]); }},
      {"matmul_batched", {Shape{2, 3, 4}, Shape{4, 5}}, [](auto &x) { return matmul(x[0], x[1]); }},
      {"matmul_batch_broadcast",
       {Shape{1, 3, 4}, Shape{2, 4, 2}},
       [](auto &x) { return matmul(x[0], x[1]); }},
  };
  for (const GradCase &tc : cases)
    checkFiniteDifferences(tc);
}

TEST(Autodiff, CompositeGraphsMatchFiniteDifferences) {
  auto softmax = [](const Tensor &x) {
    Tensor e = exp(x - max(x, {1}, true));
    return e / sum(e, {1}, true);
  };
  std::vector<GradCase> cases = {
      {"softmax", {Shape{4, 7}}, [&](auto &x) { return softmax(x[0]); }},
      {"log_softmax",
       {Shape{4, 7}},
       [](auto &x) {
         Tensor m = max(x[0], {1}, true);
         return x[0] - m - log(sum(exp(x[0] - m), {1}, true));
       }},
      {"layernorm",
       {Shape{4, 8}, Shape{8}, Shape{8}},
       [](auto &x) {
         Tensor mu = mean(x[0], {1}, true);
         Tensor d = x[0] - mu;
         Tensor var = mean(d * d, {1}, true);
         return d * rsqrt(var + 1e-5) * x[1] + x[2];
       }},
      {"gelu_linear",
       {Shape{4, 6}, Shape{6, 5}, Shape{5}},
       [](auto &x) {
         Tensor h = matmul(x[0], x[1]) + x[2];
         return h * 0.5 * (1.0 + erf(h * 0.70710678));
       }},
      {"permute_then_matmul",
       {Shape{5, 3}, Shape{5, 4}},
       [](auto &x) {
         return matmul(x[0].permute({1, 0}), tanh(x[1]));
       }},
  };
  for (const GradCase &tc : cases)
    checkFiniteDifferences(tc);
}

std::vector<double> valuesOf(const HostTensor &h) {
  std::vector<double> v;
  for (int64_t i = 0; i < h.numel(); ++i)
    v.push_back(h.get(i));
  return v;
}

HostTensor tensorOf(const Shape &s, const std::vector<double> &v) {
  HostTensor h(DType::F32, s);
  for (size_t i = 0; i < v.size(); ++i)
    h.set(static_cast<int64_t>(i), v[i]);
  return h;
}

TEST(Autodiff, MaxReductionSplitsTiesEvenly) {
  Graph g("ties");
  Tensor x = g.input("x", DType::F32, {2, 4});
  g.output(grad(sum(max(x, {1})), x), "dx");
  auto out = evaluate(g, {tensorOf({2, 4}, {1, 3, 3, 2, 5, 5, 5, 0})});
  double third = static_cast<float>(1.0 / 3);
  EXPECT_EQ(valuesOf(out[0]), (std::vector<double>{0, 0.5, 0.5, 0, third, third, third, 0}));
}

TEST(Autodiff, MaximumSplitsTiesEvenly) {
  Graph g("ties2");
  Tensor a = g.input("a", DType::F32, {3});
  Tensor b = g.input("b", DType::F32, {3});
  Tensor l = sum(maximum(a, b));
  g.output(grad(l, a), "da");
  g.output(grad(l, b), "db");
  auto out = evaluate(g, {tensorOf({3}, {1, 2, 3}), tensorOf({3}, {1, 5, 0})});
  EXPECT_EQ(valuesOf(out[0]), (std::vector<double>{0.5, 0, 1}));
  EXPECT_EQ(valuesOf(out[1]), (std::vector<double>{0.5, 1, 0}));
}

TEST(Autodiff, EdgeConventionsFollowPyTorch) {
  Graph g("edges");
  Tensor x = g.input("x", DType::F32, {3});
  g.output(grad(sum(relu(x)), x), "relu");
  g.output(grad(sum(abs(x)), x), "abs");
  g.output(grad(sum(sqrt(x)), x), "sqrt");
  g.output(grad(sum(floor(x)), x), "floor");
  auto out = evaluate(g, {tensorOf({3}, {0, -2, 4})});
  EXPECT_EQ(valuesOf(out[0]), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(valuesOf(out[1]), (std::vector<double>{0, -1, 1}));
  EXPECT_TRUE(std::isinf(out[2].get(0)));
  EXPECT_DOUBLE_EQ(out[2].get(2), 0.25);
  EXPECT_EQ(valuesOf(out[3]), (std::vector<double>{0, 0, 0}));
}

TEST(Autodiff, PowExponentGradientIsZeroWhereTheBaseIsZero) {
  Graph g("pow0");
  Tensor a = g.input("a", DType::F32, {3});
  Tensor b = g.input("b", DType::F32, {3});
  Tensor l = sum(pow(a, b));
  g.output(grad(l, a), "da");
  g.output(grad(l, b), "db");
  auto out = evaluate(g, {tensorOf({3}, {0, 0, 2}), tensorOf({3}, {2, 0, 3})});
  EXPECT_EQ(valuesOf(out[0]), (std::vector<double>{0, 0, 12}));
  EXPECT_EQ(out[1].get(0), 0);
  EXPECT_EQ(out[1].get(1), 0);
  EXPECT_NEAR(out[1].get(2), 8 * std::log(2.0), 1e-5);
}

TEST(Autodiff, ProdIsExactWithZeros) {
  Graph g("prod0");
  Tensor x = g.input("x", DType::F32, {3, 3});
  g.output(grad(sum(prod(x, {1})), x), "dx");
  // Rows: no zero, one zero, two zeros.
  auto out = evaluate(g, {tensorOf({3, 3}, {2, 3, 4, 2, 0, 5, 0, 7, 0})});
  EXPECT_EQ(valuesOf(out[0]), (std::vector<double>{12, 8, 6, 0, 10, 0, 0, 0, 0}));
}

TEST(Autodiff, ValueTheLossDoesNotUseHasZeroGradient) {
  Graph g("zero");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor u = g.input("u", DType::F32, {2, 2});
  Tensor s = g.input("s", DType::F32, {});
  Tensor l = sum(x * x);
  Tensor later = exp(x); // defined after the loss
  g.output(grad(l, u), "du");
  g.output(grad(l, later), "dlater");
  g.output(grad(l, s), "ds");
  auto out = evaluate(g, randomInputs(g, 3));
  EXPECT_EQ(valuesOf(out[0]), std::vector<double>(4, 0));
  EXPECT_EQ(valuesOf(out[1]), std::vector<double>(4, 0));
  EXPECT_EQ(valuesOf(out[2]), std::vector<double>(1, 0));
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
}

TEST(Autodiff, CastCastsTheGradientBack) {
  Graph g("cast");
  Tensor x = g.input("x", DType::F16, {3});
  Tensor c = g.input("c", DType::F32, {3});
  g.output(grad(sum(x.cast(DType::F32) * c), x), "dx");
  auto in = randomInputs(g, 2);
  auto out = evaluate(g, in);
  EXPECT_EQ(out[0].dtype(), DType::F16);
  for (int64_t e = 0; e < 3; ++e)
    EXPECT_EQ(out[0].get(e), roundToDType(in[1].get(e), DType::F16));
}

TEST(Autodiff, GradientThroughIntegerValuesIsCut) {
  Graph g("cut");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor l = sum(x * x.cast(DType::I32).cast(DType::F32));
  g.output(grad(l, x), "dx");
  auto in = tensorOf({4}, {1.5, -2.5, 3.25, 0.5});
  EXPECT_EQ(valuesOf(evaluate(g, {in})[0]), (std::vector<double>{1, -2, 3, 0}));
}

TEST(Autodiff, ErrorsNameTheValue) {
  Graph g("errs");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor i = g.input("i", DType::I32, {4});
  Tensor l = sum(x);
  EXPECT_EQ(graphErrorOf([&] { grad(l, i); }),
            "grad: the value %i has dtype i32; only floating-point values "
            "(f32, f16, bf16) have "
            "gradients");
  EXPECT_EQ(graphErrorOf([&] { grad(sum(i), x); }),
            "grad: the loss %t1 has dtype i32; only floating-point values "
            "(f32, f16, bf16) have "
            "gradients");
  EXPECT_EQ(graphErrorOf([&] { grad(x, x); }),
            "grad: the loss %x has shape [4] (4 elements) but must have one "
            "element; reduce it "
            "first (e.g. `mean(x)`) or use vjp");
  Tensor dy = g.input("dy", DType::F32, {3});
  EXPECT_EQ(graphErrorOf([&] { vjp(x, x, dy); }),
            "vjp: the cotangent is f32[3] but must have the output %x's type f32[4]");
}

TEST(Autodiff, GradsOfOneLossShareOneSweep) {
  auto build = [](bool together) {
    Graph g("mlp");
    Tensor x = g.input("x", DType::F32, {4, 8});
    Tensor w1 = g.input("w1", DType::F32, {8, 8});
    Tensor w2 = g.input("w2", DType::F32, {8, 2});
    Tensor l = mean(matmul(tanh(matmul(x, w1)), w2));
    if (together) {
      g.output(grad(l, w1), "d1");
      g.output(grad(l, w2), "d2");
    } else {
      Tensor l2 = mean(matmul(tanh(matmul(x, w1)), w2));
      g.output(grad(l, w1), "d1");
      g.output(grad(l2, w2), "d2");
    }
    return expandAutodiff(g);
  };
  auto matmuls = [](const Graph &g) {
    return llvm::count_if(g.nodes(), [](const Node &n) { return n.op == OpKind::Matmul; });
  };
  // Forward 2; one sweep adds dW2, the gradient of the hidden layer and dW1.
  EXPECT_EQ(matmuls(build(true)), 5);
  // Two losses: 4 forward, then 2 (the hidden layer's gradient and dW1) and 1.
  EXPECT_EQ(matmuls(build(false)), 7);
}

TEST(Autodiff, SecondDerivative) {
  Graph g("second");
  Tensor x = g.input("x", DType::F32, {3});
  Tensor d1 = grad(sum(x * x * x), x); // 3x^2
  g.output(d1, "d1");
  g.output(grad(sum(d1), x), "d2"); // 6x
  auto out = evaluate(g, {tensorOf({3}, {1, -2, 0.5})});
  EXPECT_EQ(valuesOf(out[0]), (std::vector<double>{3, 12, 0.75}));
  EXPECT_EQ(valuesOf(out[1]), (std::vector<double>{6, -12, 3}));
}

TEST(Autodiff, VjpIsTheGradientOfTheWeightedSum) {
  Graph g("vjp");
  Tensor x = g.input("x", DType::F32, {2, 3});
  Tensor dy = g.input("dy", DType::F32, {2});
  Tensor y = sum(sin(x), {1});
  g.output(vjp(y, x, dy), "dx");
  auto in = randomInputs(g, 5);
  auto out = evaluate(g, in);
  for (int64_t e = 0; e < 6; ++e)
    EXPECT_NEAR(out[0].get(e), in[1].get(e / 3) * std::cos(in[0].get(e)), 1e-6);
}

TEST(Autodiff, ResultsKeepTheirNames) {
  Graph g("names");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor h = tanh(x).named("h");
  Tensor l = sum(h * h);
  g.output(grad(l, x), "dx");
  g.output(grad(l, h), "dh");
  Graph e = expandAutodiff(g);
  EXPECT_EQ(e.node(e.outputs()[0]).name, "dx");
  EXPECT_EQ(e.node(e.outputs()[1]).name, "dh");
  EXPECT_FALSE(hasDerivatives(e));
}

TEST(Autodiff, TextRoundTripsGradVjpAndUpdates) {
  const char *text =
      R"(graph step(%x: f32[4, 3], %w: f32[3, 2], %dy: f32[4, 2]) {
  %y = matmul %x, %w : f32[4, 2]
  %l = mean %y axes=[0, 1] : f32[]
  %dw = grad %l, %w : f32[3, 2]
  %dx = vjp %y, %x, %dy : f32[4, 3]
  %w.next = sub %w, %dw : f32[3, 2]
  return %l, %dx, %w.next -> %w
}
)";
  std::vector<Graph> gs = parseGraphs(text, "step.mj");
  EXPECT_EQ(printGraph(gs[0]), text);
  EXPECT_EQ(gs[0].updates()[2], gs[0].inputs()[1]);
  EXPECT_EQ(gs[0].updates()[0], -1);
  // The expanded graph prints as text that parses back to itself.
  std::string expanded = printGraph(expandAutodiff(gs[0]));
  EXPECT_EQ(printGraph(parseGraphs(expanded, "expanded.mj")[0]), expanded);
}

TEST(Autodiff, UpdateErrors) {
  Graph g("upd");
  Tensor w = g.input("w", DType::F32, {3});
  Tensor v = g.input("v", DType::F16, {3});
  Tensor e = exp(w);
  EXPECT_EQ(graphErrorOf([&] { g.update(e, w); }),
            "update: %t0 is not an argument of graph 'upd'; only arguments can "
            "be updated in place");
  EXPECT_EQ(graphErrorOf([&] { g.update(v, e); }),
            "update: %t0 is f32[3] but the argument %v it updates is f16[3]");
  EXPECT_EQ(graphErrorOf([&] { g.update(w, w); }), "update: %w would update itself");
  g.update(w, e);
  EXPECT_EQ(graphErrorOf([&] { g.update(w, e * 2.0); }), "update: %w is already updated by %t0");
}

TEST(Autodiff, ParserReportsBadUpdates) {
  try {
    parseGraphs("graph u(%w: f32[3]) {\n  %e = exp %w\n  return %e -> %e\n}\n", "u.mj");
    FAIL() << "no error";
  } catch (const ParseError &e) {
    EXPECT_EQ(std::string(e.what()),
              "u.mj:3:16: error: update: %e is not an argument of graph 'u'; "
              "only arguments can "
              "be updated in place");
  }
}

} // namespace

TEST(Autodiff, DataMovementRulesMatchFiniteDifferences) {
  std::vector<GradCase> cases = {
      {"slice", {Shape{3, 10}}, [](auto &x) { return exp(slice(x[0], 1, -7, 9)); }},
      {"slice_step", {Shape{3, 10}}, [](auto &x) { return slice(x[0], 1, 1, 10, 3) * 2.0; }},
      {"slice_step_to_end", {Shape{4, 9}}, [](auto &x) { return sin(slice(x[0], 0, 0, 4, 2)); }},
      {"pad", {Shape{3, 4}}, [](auto &x) { return exp(pad(x[0], {1, 0}, {2, 3}, 0.5)); }},
      {"concat",
       {Shape{3, 2}, Shape{3, 4}},
       [](auto &x) { return concat({x[0], x[1] * x[1], x[0]}, 1); }},
      {"concat_rows", {Shape{1, 4}, Shape{2, 4}}, [](auto &x) { return tanh(concat({x[1], x[0]}, 0)); }},
      {"iota_scaled",
       {Shape{2, 5}},
       [](auto &x) { return x[0] * iota(x[0].graph(), {2, 5}, 1, x[0].dtype()); }},
      {"flip", {Shape{3, 4, 5}}, [](auto &x) { return exp(flip(x[0], {0, 2})) * x[0]; }},
      // the mask depends on the seed, offset and index only: the gradient
      // reuses it (a literal seed and offset, so no input is an integer)
      {"dropout",
       {Shape{4, 33}},
       [](auto &x) {
         Graph &g = x[0].graph();
         Tensor seed(&g, g.constant(1234, DType::I32)), offset(&g, g.constant(5, DType::I32));
         return dropout(sin(x[0]), seed, offset, 0.3) * x[0];
       }},
      {"full_scaled",
       {Shape{2, 5}},
       [](auto &x) { return x[0] * full(x[0].graph(), {2, 5}, 1.5, x[0].dtype()); }},
  };
  for (const GradCase &tc : cases)
    checkBoth(tc);
}

TEST(Autodiff, GatherRulesSumIntoTheTable) {
  // The indices are fixed inputs: repeated and out-of-range ones included.
  auto indexed = [](const Tensor &t, const Shape &shape, std::vector<int> values) {
    Graph &g = t.graph();
    Tensor pos = iota(g, shape, -1, DType::I32);
    Tensor idx = pos * 0;
    for (size_t k = 0; k < values.size(); ++k)
      idx = where(eq(pos, static_cast<double>(k)), scalarLike(pos, values[k]).broadcast(shape), idx);
    return idx;
  };
  std::vector<GradCase> cases = {
      {"take_rows",
       {Shape{4, 3}},
       [&](auto &x) { return exp(take(x[0], indexed(x[0], {5}, {0, 3, 3, -2, 9}), 0)); }},
      {"take_cols",
       {Shape{2, 5}},
       [&](auto &x) { return take(x[0], indexed(x[0], {2, 3}, {4, 0, 4}), 1) * 3.0; }},
      {"take_along_rows",
       {Shape{3, 6}},
       [&](auto &x) { return sin(takeAlongAxis(x[0], indexed(x[0], {3, 2}, {5, 1}), 1)); }},
      {"take_along_broadcast",
       {Shape{4, 1}},
       [&](auto &x) { return takeAlongAxis(x[0], indexed(x[0], {2, 3}, {3, 0, 7}), 0); }},
  };
  for (const GradCase &tc : cases)
    checkBoth(tc);
}

TEST(Autodiff, ScanRulesMatchFiniteDifferences) {
  std::vector<GradCase> cases = {
      {"cumsum_rows", {Shape{3, 7}}, [](auto &x) { return cumsum(x[0], 1); }},
      {"cumsum_cols", {Shape{4, 3}}, [](auto &x) { return exp(cumsum(x[0], 0)); }},
      {"cumprod", {Shape{2, 5}}, [](auto &x) { return cumprod(x[0], 1); }, awayFromZero},
      {"cumsum_reversed", {Shape{3, 7}}, [](auto &x) { return exp(cumsum(x[0], 1, true)); }},
      {"cumprod_reversed", {Shape{4, 3}}, [](auto &x) { return cumprod(x[0], 0, true); },
       awayFromZero},
  };
  for (const GradCase &tc : cases)
    checkBoth(tc);
}
