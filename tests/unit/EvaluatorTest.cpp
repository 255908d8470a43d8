// The CPU reference (ir/Evaluator.h): every op against values computed here; rounding; compare.
#include "ir/Evaluator.h"
#include "ir/Builder.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace minijit;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
const double kIntMax = 2147483647.0, kIntMin = -2147483648.0;

HostTensor tensorOf(DType t, const Shape &s, const std::vector<double> &v) {
  HostTensor h(t, s);
  EXPECT_EQ(static_cast<int64_t>(v.size()), h.numel());
  for (size_t i = 0; i < v.size(); ++i)
    h.set(static_cast<int64_t>(i), v[i]);
  return h;
}

std::vector<double> valuesOf(const HostTensor &h) {
  std::vector<double> v;
  for (int64_t i = 0; i < h.numel(); ++i)
    v.push_back(h.get(i));
  return v;
}

/// Exact equality, NaN equal to NaN, and the sign of zero ignored.
void expectSame(const std::vector<double> &got, const std::vector<double> &want,
                const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "]: got " << got[i] << ", want NaN";
    else
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
  }
}

std::vector<double> evalUnary(OpKind op, DType t, const std::vector<double> &in) {
  Graph g("u");
  Tensor x = g.input("x", t, {static_cast<int64_t>(in.size())});
  g.output(unary(op, x));
  return valuesOf(evaluate(g, {tensorOf(t, x.shape(), in)})[0]);
}

std::vector<double> evalBinary(OpKind op, DType t, const std::vector<double> &a,
                               const std::vector<double> &b) {
  Graph g("b");
  Shape s{static_cast<int64_t>(a.size())};
  Tensor x = g.input("x", t, s);
  Tensor y = g.input("y", t, s);
  g.output(binary(op, x, y));
  return valuesOf(evaluate(g, {tensorOf(t, s, a), tensorOf(t, s, b)})[0]);
}

std::vector<double> evalCast(DType from, DType to, const std::vector<double> &in) {
  Graph g("c");
  Tensor x = g.input("x", from, {static_cast<int64_t>(in.size())});
  g.output(x.cast(to));
  return valuesOf(evaluate(g, {tensorOf(from, x.shape(), in)})[0]);
}

double f32(double v) { return static_cast<double>(static_cast<float>(v)); }

const std::vector<double> kFloatInputs = {-2.5, -1, -0.25, 0, 0.5, 1, 3.75, 10};

} // namespace

// ---- unary ops

TEST(Evaluator, FloatUnaryOpsMatchTheirDefinitions) {
  struct Case {
    OpKind op;
    std::function<double(double)> fn;
  };
  const Case cases[] = {
      {OpKind::Neg, [](double a) { return -a; }},
      {OpKind::Abs, [](double a) { return std::fabs(a); }},
      {OpKind::Exp, [](double a) { return std::exp(a); }},
      {OpKind::Exp2, [](double a) { return std::pow(2.0, a); }},
      {OpKind::Log, [](double a) { return std::log(a); }},
      {OpKind::Log2, [](double a) { return std::log(a) / std::log(2.0); }},
      {OpKind::Sqrt, [](double a) { return std::sqrt(a); }},
      {OpKind::Rsqrt, [](double a) { return 1 / std::sqrt(a); }},
      {OpKind::Sin, [](double a) { return std::sin(a); }},
      {OpKind::Cos, [](double a) { return std::cos(a); }},
      {OpKind::Tanh, [](double a) { return std::tanh(a); }},
      {OpKind::Sigmoid, [](double a) { return 1 / (1 + std::exp(-a)); }},
      {OpKind::Erf, [](double a) { return std::erf(a); }},
      {OpKind::Relu, [](double a) { return a > 0 ? a : 0.0; }},
      {OpKind::Recip, [](double a) { return 1 / a; }},
      {OpKind::Floor, [](double a) { return std::floor(a); }},
      {OpKind::Ceil, [](double a) { return std::ceil(a); }},
  };
  for (const Case &c : cases) {
    std::vector<double> want;
    for (double a : kFloatInputs)
      want.push_back(f32(c.fn(a)));
    std::vector<double> got = evalUnary(c.op, DType::F32, kFloatInputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]) || std::isinf(want[i])) {
        expectSame({got[i]}, {want[i]}, std::string(opName(c.op)));
        continue;
      }
      // log2 and exp2 are checked through another formula: allow one f32 ulp.
      EXPECT_NEAR(got[i], want[i], std::fabs(want[i]) * 1.2e-7)
          << std::string(opName(c.op)) << "(" << kFloatInputs[i] << ")";
    }
  }
}

TEST(Evaluator, RoundTf32KeepsTenBitsOfFraction) {
  const double maxF32 = std::numeric_limits<float>::max();
  // exact; ties away from zero on both signs; below half a step, down; a
  // carry into the exponent; the largest f32 past TF32's largest: inf;
  // the smallest subnormals: 0 and, at the tie, 2^-136.
  expectSame(evalUnary(OpKind::RoundTf32, DType::F32,
                       {1.0, 1 + 0x1p-10, 1 + 0x1p-11, -(1 + 0x1p-11), 1 + 0x1p-12, 3 * 0x1p-11 + 1,
                        2 - 0x1p-12, maxF32, 0x1p-149, 0x1p-137, 0.0, kInf, -kInf, kNaN}),
             {1.0, 1 + 0x1p-10, 1 + 0x1p-10, -(1 + 0x1p-10), 1.0, 1 + 0x1p-9, 2.0, kInf, 0.0,
              0x1p-136, 0.0, kInf, -kInf, kNaN},
             "round_tf32");
}

TEST(Evaluator, UnaryEdgeValues) {
  expectSame(evalUnary(OpKind::Log, DType::F32, {0, -1, kInf}), {-kInf, kNaN, kInf}, "log");
  expectSame(evalUnary(OpKind::Log2, DType::F32, {0, 8, -1}), {-kInf, 3, kNaN}, "log2");
  expectSame(evalUnary(OpKind::Sqrt, DType::F32, {-1, 4}), {kNaN, 2}, "sqrt");
  expectSame(evalUnary(OpKind::Rsqrt, DType::F32, {0, 4}), {kInf, 0.5}, "rsqrt");
  expectSame(evalUnary(OpKind::Recip, DType::F32, {0, -4}), {kInf, -0.25}, "recip");
  expectSame(evalUnary(OpKind::Exp, DType::F32, {-kInf, 100}), {0, kInf}, "exp");
  expectSame(evalUnary(OpKind::Sigmoid, DType::F32, {-kInf, kInf, 0}), {0, 1, 0.5}, "sigmoid");
  expectSame(evalUnary(OpKind::Tanh, DType::F32, {kInf, -kInf}), {1, -1}, "tanh");
}

TEST(Evaluator, UnaryOpsPropagateNaN) {
  for (OpKind op : {OpKind::Neg, OpKind::Abs, OpKind::Exp, OpKind::Log, OpKind::Sqrt, OpKind::Sin,
                    OpKind::Tanh, OpKind::Sigmoid, OpKind::Erf, OpKind::Floor, OpKind::Recip})
    expectSame(evalUnary(op, DType::F32, {kNaN}), {kNaN}, std::string(opName(op)));
}

TEST(Evaluator, ReluOfNaNIsNaN) {
  expectSame(evalUnary(OpKind::Relu, DType::F32, {kNaN, -kInf, kInf, -3}), {kNaN, 0, kInf, 0},
             "relu");
}

TEST(Evaluator, NotOfBool) {
  expectSame(evalUnary(OpKind::Not, DType::Bool, {0, 1}), {1, 0}, "not");
}

TEST(Evaluator, IntegerUnaryOps) {
  expectSame(evalUnary(OpKind::Neg, DType::I32, {5, -7, 0}), {-5, 7, 0}, "neg");
  expectSame(evalUnary(OpKind::Abs, DType::I32, {-5, 7}), {5, 7}, "abs");
  expectSame(evalUnary(OpKind::Relu, DType::I32, {-3, 4, 0}), {0, 4, 0}, "relu");
}

TEST(Evaluator, IntegerNegAndAbsOfMinWrap) {
  expectSame(evalUnary(OpKind::Neg, DType::I32, {kIntMin}), {kIntMin}, "neg");
  expectSame(evalUnary(OpKind::Abs, DType::I32, {kIntMin}), {kIntMin}, "abs");
}

// ---- binary ops

TEST(Evaluator, FloatArithmetic) {
  std::vector<double> a = {1.5, -2, 0.1, 7};
  std::vector<double> b = {0.25, 3, 0.2, -0.5};
  std::vector<double> fa, fb;
  for (double v : a)
    fa.push_back(f32(v));
  for (double v : b)
    fb.push_back(f32(v));
  auto each = [&](std::function<double(double, double)> fn) {
    std::vector<double> r;
    for (size_t i = 0; i < fa.size(); ++i)
      r.push_back(f32(fn(fa[i], fb[i])));
    return r;
  };
  expectSame(evalBinary(OpKind::Add, DType::F32, a, b), each(std::plus<double>()), "add");
  expectSame(evalBinary(OpKind::Sub, DType::F32, a, b), each(std::minus<double>()), "sub");
  expectSame(evalBinary(OpKind::Mul, DType::F32, a, b), each(std::multiplies<double>()), "mul");
  expectSame(evalBinary(OpKind::Div, DType::F32, a, b), each(std::divides<double>()), "div");
  expectSame(evalBinary(OpKind::Maximum, DType::F32, a, b), {1.5, 3, f32(0.2), 7}, "maximum");
  expectSame(evalBinary(OpKind::Minimum, DType::F32, a, b), {0.25, -2, f32(0.1), -0.5}, "minimum");
}

TEST(Evaluator, FloatDivisionByZero) {
  expectSame(evalBinary(OpKind::Div, DType::F32, {1, -1, 0}, {0, 0, 0}), {kInf, -kInf, kNaN},
             "div");
}

TEST(Evaluator, Pow) {
  expectSame(evalBinary(OpKind::Pow, DType::F32, {2, -2, -8, 9, 0}, {10, 3, 1.0 / 3, 0.5, 0}),
             {1024, -8, kNaN, 3, 1}, "pow");
}

TEST(Evaluator, MaximumAndMinimumPropagateNaN) {
  expectSame(evalBinary(OpKind::Maximum, DType::F32, {kNaN, 1, kNaN}, {1, kNaN, kNaN}),
             {kNaN, kNaN, kNaN}, "maximum");
  expectSame(evalBinary(OpKind::Minimum, DType::F32, {kNaN, 1}, {1, kNaN}), {kNaN, kNaN},
             "minimum");
}

TEST(Evaluator, ComparisonsWithNaNAreFalseExceptNe) {
  std::vector<double> a = {kNaN, kNaN, 1};
  std::vector<double> b = {kNaN, 1, kNaN};
  expectSame(evalBinary(OpKind::Eq, DType::F32, a, b), {0, 0, 0}, "eq");
  expectSame(evalBinary(OpKind::Ne, DType::F32, a, b), {1, 1, 1}, "ne");
  expectSame(evalBinary(OpKind::Lt, DType::F32, a, b), {0, 0, 0}, "lt");
  expectSame(evalBinary(OpKind::Le, DType::F32, a, b), {0, 0, 0}, "le");
  expectSame(evalBinary(OpKind::Gt, DType::F32, a, b), {0, 0, 0}, "gt");
  expectSame(evalBinary(OpKind::Ge, DType::F32, a, b), {0, 0, 0}, "ge");
}

TEST(Evaluator, ComparisonsOfNumbersAndBools) {
  std::vector<double> a = {1, 2, 3}, b = {2, 2, 2};
  expectSame(evalBinary(OpKind::Eq, DType::I32, a, b), {0, 1, 0}, "eq");
  expectSame(evalBinary(OpKind::Ne, DType::I32, a, b), {1, 0, 1}, "ne");
  expectSame(evalBinary(OpKind::Lt, DType::F16, a, b), {1, 0, 0}, "lt");
  expectSame(evalBinary(OpKind::Le, DType::BF16, a, b), {1, 1, 0}, "le");
  expectSame(evalBinary(OpKind::Gt, DType::F32, a, b), {0, 0, 1}, "gt");
  expectSame(evalBinary(OpKind::Ge, DType::I32, a, b), {0, 1, 1}, "ge");
  expectSame(evalBinary(OpKind::Lt, DType::Bool, {0, 1, 0}, {1, 0, 0}), {1, 0, 0}, "lt bool");
}

TEST(Evaluator, LogicalOps) {
  std::vector<double> a = {0, 0, 1, 1}, b = {0, 1, 0, 1};
  expectSame(evalBinary(OpKind::And, DType::Bool, a, b), {0, 0, 0, 1}, "and");
  expectSame(evalBinary(OpKind::Or, DType::Bool, a, b), {0, 1, 1, 1}, "or");
}

TEST(Evaluator, IntegerArithmeticWrapsAround) {
  expectSame(evalBinary(OpKind::Add, DType::I32, {kIntMax, 5}, {1, -7}), {kIntMin, -2}, "add");
  expectSame(evalBinary(OpKind::Sub, DType::I32, {kIntMin, 5}, {1, 7}), {kIntMax, -2}, "sub");
  expectSame(evalBinary(OpKind::Mul, DType::I32, {65536, 65537, -3}, {65536, 65537, 5}),
             {0, 131073, -15}, "mul"); // 65537^2 = 2^32 + 2^17 + 1
  expectSame(evalBinary(OpKind::Maximum, DType::I32, {kIntMin, 3}, {-1, 2}), {-1, 3}, "maximum");
  expectSame(evalBinary(OpKind::Minimum, DType::I32, {kIntMin, 3}, {-1, 2}), {kIntMin, 2},
             "minimum");
}

TEST(Evaluator, IntegerDivisionTruncatesAndByZeroIsZero) {
  expectSame(evalBinary(OpKind::Div, DType::I32, {7, -7, 7, -7, 7, 0}, {2, 2, -2, -2, 0, 0}),
             {3, -3, -3, 3, 0, 0}, "div");
  expectSame(evalBinary(OpKind::Div, DType::I32, {kIntMin}, {-1}), {kIntMin}, "INT_MIN / -1");
}

TEST(Evaluator, BinaryOpsBroadcast) {
  Graph g("bc");
  Tensor x = g.input("x", DType::F32, {2, 3});
  Tensor r = g.input("r", DType::F32, {3});
  Tensor c = g.input("c", DType::F32, {2, 1});
  g.output((x + r) * c);
  HostTensor xv = tensorOf(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor rv = tensorOf(DType::F32, {3}, {10, 20, 30});
  HostTensor cv = tensorOf(DType::F32, {2, 1}, {1, -1});
  expectSame(valuesOf(evaluate(g, {xv, rv, cv})[0]), {11, 22, 33, -14, -25, -36}, "broadcast");
}

TEST(Evaluator, LiteralsBroadcast) {
  Graph g("lit");
  Tensor x = g.input("x", DType::I32, {3});
  g.output(10 - x * 2);
  expectSame(valuesOf(evaluate(g, {tensorOf(DType::I32, {3}, {1, 2, 3})})[0]), {8, 6, 4}, "lit");
}

TEST(Evaluator, WhereSelectsAndBroadcasts) {
  Graph g("w");
  Tensor c = g.input("c", DType::Bool, {2, 1});
  Tensor a = g.input("a", DType::F32, {3});
  g.output(where(c, a, -1.0));
  HostTensor cv = tensorOf(DType::Bool, {2, 1}, {1, 0});
  HostTensor av = tensorOf(DType::F32, {3}, {1, 2, 3});
  HostTensor out = evaluate(g, {cv, av})[0];
  EXPECT_EQ(out.shape(), Shape({2, 3}));
  expectSame(valuesOf(out), {1, 2, 3, -1, -1, -1}, "where");
}

TEST(Evaluator, WhereOnIntegersKeepsExactValues) {
  Graph g("w");
  Tensor c = g.input("c", DType::Bool, {2});
  Tensor a = g.input("a", DType::I32, {2});
  g.output(where(c, a, kIntMin));
  expectSame(valuesOf(evaluate(g, {tensorOf(DType::Bool, {2}, {0, 1}),
                                   tensorOf(DType::I32, {2}, {kIntMax, kIntMax})})[0]),
             {kIntMin, kIntMax}, "where");
}

// ---- casts

TEST(Evaluator, FloatToIntCastTruncatesAndSaturates) {
  expectSame(evalCast(DType::F32, DType::I32, {2.9, -2.9, 3e9, -3e9, kNaN, kInf, -kInf, -0.5}),
             {2, -2, kIntMax, kIntMin, 0, kIntMax, kIntMin, 0}, "f32->i32");
  expectSame(evalCast(DType::F16, DType::I32, {65504, -1.5}), {65504, -1}, "f16->i32");
}

TEST(Evaluator, CastsToBool) {
  expectSame(evalCast(DType::F32, DType::Bool, {0, -0.0, 0.5, kNaN, -kInf}), {0, 0, 1, 1, 1},
             "f32->bool");
  expectSame(evalCast(DType::I32, DType::Bool, {0, -1, 5}), {0, 1, 1}, "i32->bool");
}

TEST(Evaluator, CastsFromBool) {
  expectSame(evalCast(DType::Bool, DType::F32, {1, 0}), {1, 0}, "bool->f32");
  expectSame(evalCast(DType::Bool, DType::I32, {1, 0}), {1, 0}, "bool->i32");
  expectSame(evalCast(DType::Bool, DType::F16, {1, 0}), {1, 0}, "bool->f16");
}

TEST(Evaluator, CastsToHalfTypesRoundToNearestEven) {
  expectSame(evalCast(DType::F32, DType::F16, {1.0 / 3, 65520, 1e-8, 3 * std::ldexp(1.0, -25)}),
             {0.333251953125, kInf, 0, std::ldexp(1.0, -23)}, "f32->f16");
  expectSame(evalCast(DType::F32, DType::BF16, {1.0 / 3, 70000}), {0.333984375, 70144},
             "f32->bf16");
  expectSame(evalCast(DType::I32, DType::F32, {16777217}), {16777216}, "i32->f32");
  expectSame(evalCast(DType::F16, DType::F32, {0.333251953125}), {0.333251953125}, "f16->f32");
}

// ---- rounding of 16-bit results

TEST(Evaluator, HalfResultsAreRoundedAsStored) {
  for (DType t : {DType::F16, DType::BF16}) {
    Graph g("h");
    Tensor x = g.input("x", t, {1});
    g.output(x / 3);
    double got = evaluate(g, {tensorOf(t, {1}, {1})})[0].get(0);
    EXPECT_EQ(got, t == DType::F16 ? 0.333251953125 : 0.333984375) << std::string(dtypeName(t));
  }
}

TEST(Evaluator, StoredFlagsKeepUnstoredValuesInF32) {
  Graph g("h");
  Tensor x = g.input("x", DType::F16, {1});
  Tensor y = x / 3;
  Tensor z = y.cast(DType::F32);
  g.output(z);
  HostTensor in = tensorOf(DType::F16, {1}, {1});
  // Every value stored: y is rounded to f16.
  EXPECT_EQ(evaluate(g, {in})[0].get(0), 0.333251953125);
  // y kept in registers (as a fused kernel does): f32 precision.
  std::vector<bool> stored(g.size(), true);
  stored[y.id()] = false;
  EvalOptions opt;
  opt.stored = &stored;
  EXPECT_EQ(evaluate(g, {in}, opt)[0].get(0), f32(1.0 / 3));
}

TEST(Evaluator, UnstoredHalfOutputIsStillRoundedToItsDType) {
  Graph g("h");
  Tensor x = g.input("x", DType::F16, {1});
  g.output(x / 3);
  std::vector<bool> stored(g.size(), false);
  EvalOptions opt;
  opt.stored = &stored;
  HostTensor out = evaluate(g, {tensorOf(DType::F16, {1}, {1})}, opt)[0];
  EXPECT_EQ(out.dtype(), DType::F16);
  EXPECT_EQ(out.get(0), 0.333251953125);
}

// ---- reductions

namespace {

/// Exact powers of two with mixed signs, so sums and products are exact in
/// any order.
double reductionInput(int64_t i) {
  double mag = std::ldexp(1.0, static_cast<int>((i * 7) % 3) - 1);
  return (i * 5) % 4 == 0 ? -mag : mag;
}

} // namespace

TEST(Evaluator, ReductionsOverEveryAxisCombination) {
  const Shape shape{2, 3, 4};
  std::vector<double> in;
  for (int64_t i = 0; i < shape.numel(); ++i)
    in.push_back(reductionInput(i));
  HostTensor xv = tensorOf(DType::F32, shape, in);
  for (OpKind op : {OpKind::Sum, OpKind::Mean, OpKind::Max, OpKind::Min, OpKind::Prod})
    for (int mask = 1; mask < 8; ++mask)
      for (bool keepdim : {false, true}) {
        DimVector axes;
        for (int d = 0; d < 3; ++d)
          if (mask >> d & 1)
            axes.push_back(d);
        Graph g("r");
        Tensor x = g.input("x", DType::F32, shape);
        g.output(reduce(op, x, axes, keepdim));
        HostTensor out = evaluate(g, {xv})[0];
        std::string what =
            std::string(opName(op)) + " axes " + Shape(axes).str() + (keepdim ? " keepdim" : "");
        // The expected shape and values, computed here.
        DimVector outDims;
        for (int d = 0; d < 3; ++d)
          if (!(mask >> d & 1))
            outDims.push_back(shape[d]);
          else if (keepdim)
            outDims.push_back(1);
        ASSERT_EQ(out.shape(), Shape(outDims)) << what;
        std::vector<double> acc, count;
        std::vector<int64_t> outIndex;
        int64_t keptCount = 1;
        for (int d = 0; d < 3; ++d)
          if (!(mask >> d & 1))
            keptCount *= shape[d];
        double init = op == OpKind::Prod  ? 1
                      : op == OpKind::Max ? -kInf
                      : op == OpKind::Min ? kInf
                                          : 0;
        acc.assign(keptCount, init);
        count.assign(keptCount, 0);
        for (int64_t i0 = 0; i0 < 2; ++i0)
          for (int64_t i1 = 0; i1 < 3; ++i1)
            for (int64_t i2 = 0; i2 < 4; ++i2) {
              int64_t idx[3] = {i0, i1, i2};
              int64_t o = 0;
              for (int d = 0; d < 3; ++d)
                if (!(mask >> d & 1))
                  o = o * shape[d] + idx[d];
              double v = in[(i0 * 3 + i1) * 4 + i2];
              switch (op) {
              case OpKind::Sum:
              case OpKind::Mean:
                acc[o] += v;
                break;
              case OpKind::Prod:
                acc[o] *= v;
                break;
              case OpKind::Max:
                acc[o] = std::max(acc[o], v);
                break;
              case OpKind::Min:
                acc[o] = std::min(acc[o], v);
                break;
              default:
                FAIL();
              }
              count[o] += 1;
            }
        std::vector<double> want;
        for (int64_t o = 0; o < keptCount; ++o)
          want.push_back(f32(op == OpKind::Mean ? acc[o] / count[o] : acc[o]));
        expectSame(valuesOf(out), want, what);
      }
}

TEST(Evaluator, ReductionsPropagateNaN) {
  for (OpKind op : {OpKind::Sum, OpKind::Max, OpKind::Min, OpKind::Prod, OpKind::Mean}) {
    Graph g("r");
    Tensor x = g.input("x", DType::F32, {4});
    g.output(reduce(op, x));
    HostTensor out = evaluate(g, {tensorOf(DType::F32, {4}, {1, kNaN, 3, -kInf})})[0];
    EXPECT_TRUE(std::isnan(out.get(0))) << std::string(opName(op));
  }
}

TEST(Evaluator, IntegerReductionsWrap) {
  Graph g("r");
  Tensor x = g.input("x", DType::I32, {2});
  g.output(sum(x), "s");
  g.output(prod(x), "p");
  g.output(max(x), "mx");
  g.output(min(x), "mn");
  std::vector<HostTensor> out = evaluate(g, {tensorOf(DType::I32, {2}, {kIntMax, 1})});
  EXPECT_EQ(out[0].get(0), kIntMin);
  EXPECT_EQ(out[1].get(0), kIntMax);
  EXPECT_EQ(out[2].get(0), kIntMax);
  EXPECT_EQ(out[3].get(0), 1);
  out = evaluate(g, {tensorOf(DType::I32, {2}, {65536, 65536})});
  EXPECT_EQ(out[1].get(0), 0);
}

TEST(Evaluator, HalfReductionsAccumulateWide) {
  // In f16 each step 2048 + 1 would round back to 2048; accumulated wide
  // and rounded once the sum is 2050, which f16 holds exactly.
  Graph g("r");
  Tensor x = g.input("x", DType::F16, {3});
  g.output(sum(x));
  EXPECT_EQ(evaluate(g, {tensorOf(DType::F16, {3}, {2048, 1, 1})})[0].get(0), 2050);
}

TEST(Evaluator, LongRowsAreReducedExactly) {
  // One long row (split into parallel chunks) and many rows: the same sums.
  const int64_t n = 1 << 18;
  Graph g("long");
  Tensor x = g.input("x", DType::F32, {n});
  g.output(sum(x), "s");
  g.output(max(x), "m");
  HostTensor xv(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i)
    xv.set(i, (i % 7) - 3 + (i == 123457 ? 1000 : 0));
  // sum over i of (i%7 - 3): each full cycle of 7 sums to 0.
  double want = 1000;
  for (int64_t i = n - n % 7; i < n; ++i)
    want += (i % 7) - 3;
  std::vector<HostTensor> out = evaluate(g, {xv});
  EXPECT_EQ(out[0].get(0), want);
  EXPECT_EQ(out[1].get(0), 1000 + (123457 % 7) - 3);
}

// ---- views

TEST(Evaluator, PermuteMovesDims) {
  Graph g("p");
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  g.output(x.permute({2, 0, 1}));
  std::vector<double> in;
  for (int i = 0; i < 24; ++i)
    in.push_back(i);
  HostTensor out = evaluate(g, {tensorOf(DType::F32, {2, 3, 4}, in)})[0];
  ASSERT_EQ(out.shape(), Shape({4, 2, 3}));
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(out.get((a * 2 + b) * 3 + c), in[(b * 3 + c) * 4 + a]);
}

TEST(Evaluator, BroadcastStretchesOnesAndAddsDims) {
  Graph g("b");
  Tensor x = g.input("x", DType::I32, {3, 1});
  g.output(x.broadcast({2, 3, 4}));
  HostTensor out = evaluate(g, {tensorOf(DType::I32, {3, 1}, {7, 8, 9})})[0];
  ASSERT_EQ(out.shape(), Shape({2, 3, 4}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(out.get((i * 3 + j) * 4 + k), 7 + j);
}

TEST(Evaluator, ReshapeKeepsRowMajorOrder) {
  Graph g("r");
  Tensor x = g.input("x", DType::F32, {2, 3});
  g.output(x.permute({1, 0}).reshape({6}));
  HostTensor out = evaluate(g, {tensorOf(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5})})[0];
  expectSame(valuesOf(out), {0, 3, 1, 4, 2, 5}, "transpose then flatten");
}

// ---- matmul

TEST(Evaluator, MatmulTwoD) {
  Graph g("mm");
  Tensor a = g.input("a", DType::F32, {2, 3});
  Tensor b = g.input("b", DType::F32, {3, 2});
  g.output(matmul(a, b));
  HostTensor out = evaluate(g, {tensorOf(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                                tensorOf(DType::F32, {3, 2}, {7, 8, 9, 10, 11, 12})})[0];
  EXPECT_EQ(out.shape(), Shape({2, 2}));
  expectSame(valuesOf(out), {58, 64, 139, 154}, "matmul");
}

TEST(Evaluator, MatmulBatchedWithBroadcasting) {
  const int64_t m = 2, k = 3, n = 2;
  Graph g("bmm");
  Tensor a = g.input("a", DType::F32, {2, 1, m, k});
  Tensor b = g.input("b", DType::F32, {4, k, n});
  g.output(matmul(a, b));
  std::vector<double> av, bv;
  for (int i = 0; i < 2 * m * k; ++i)
    av.push_back((i * 5) % 7 - 3);
  for (int i = 0; i < 4 * k * n; ++i)
    bv.push_back((i * 3) % 5 - 2);
  HostTensor out =
      evaluate(g, {tensorOf(DType::F32, {2, 1, m, k}, av), tensorOf(DType::F32, {4, k, n}, bv)})[0];
  ASSERT_EQ(out.shape(), Shape({2, 4, m, n}));
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double want = 0;
          for (int t = 0; t < k; ++t)
            want += av[(p * m + i) * k + t] * bv[(q * k + t) * n + j];
          EXPECT_EQ(out.get(((p * 4 + q) * m + i) * n + j), want)
              << "batch " << p << "," << q << " [" << i << "," << j << "]";
        }
}

TEST(Evaluator, HalfMatmulAccumulatesWideAndRoundsOnce) {
  Graph g("mm");
  Tensor a = g.input("a", DType::F16, {1, 3});
  Tensor b = g.input("b", DType::F16, {3, 1});
  g.output(matmul(a, b));
  // 2048 + 1 + 1 = 2050 exactly; 2048 + 1 = 2049 would round to 2048.
  EXPECT_EQ(evaluate(g, {tensorOf(DType::F16, {1, 3}, {2048, 1, 1}),
                         tensorOf(DType::F16, {3, 1}, {1, 1, 1})})[0]
                .get(0),
            2050);
  EXPECT_EQ(evaluate(g, {tensorOf(DType::F16, {1, 3}, {2048, 1, 0}),
                         tensorOf(DType::F16, {3, 1}, {1, 1, 1})})[0]
                .get(0),
            2048);
}

// ---- inputs and outputs

TEST(Evaluator, OutputsComeInOrderAndMayRepeat) {
  Graph g("o");
  Tensor x = g.input("x", DType::F32, {1});
  Tensor y = x * 2;
  g.output(y);
  g.output(x);
  g.output(y);
  std::vector<HostTensor> out = evaluate(g, {tensorOf(DType::F32, {1}, {3})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].get(0), 6);
  EXPECT_EQ(out[1].get(0), 3);
  EXPECT_EQ(out[2].get(0), 6);
}

TEST(Evaluator, WrongInputsAreGraphErrors) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  g.output(x * 2);
  try {
    evaluate(g, {});
    FAIL() << "no error";
  } catch (const GraphError &e) {
    EXPECT_STREQ(e.what(), "graph 'g' takes 1 inputs, got 0");
  }
  try {
    evaluate(g, {HostTensor(DType::F32, {5})});
    FAIL() << "no error";
  } catch (const GraphError &e) {
    EXPECT_STREQ(e.what(), "input %x: expected f32[4], got f32[5]");
  }
  try {
    evaluate(g, {HostTensor(DType::F16, {4})});
    FAIL() << "no error";
  } catch (const GraphError &e) {
    EXPECT_STREQ(e.what(), "input %x: expected f32[4], got f16[4]");
  }
}

// ---- random inputs

TEST(RandomInputs, SameSeedSameBytes) {
  Graph g("g");
  g.input("x", DType::F32, {1000});
  g.input("y", DType::BF16, {33});
  g.input("i", DType::I32, {100});
  std::vector<HostTensor> a = randomInputs(g, 7), b = randomInputs(g, 7);
  ASSERT_EQ(a.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].bytes(), b[i].bytes());
    EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].bytes()), 0) << "input " << i;
  }
}

TEST(RandomInputs, SeedsAndInputsDiffer) {
  Graph g("g");
  g.input("x", DType::F32, {1000});
  g.input("y", DType::F32, {1000});
  std::vector<HostTensor> a = randomInputs(g, 7), b = randomInputs(g, 8);
  EXPECT_NE(std::memcmp(a[0].data(), b[0].data(), a[0].bytes()), 0);
  EXPECT_NE(std::memcmp(a[0].data(), a[1].data(), a[0].bytes()), 0);
}

TEST(RandomInputs, Distributions) {
  HostTensor f = HostTensor::random(DType::F32, {20000}, 3);
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < f.numel(); ++i) {
    sum += f.get(i);
    sq += f.get(i) * f.get(i);
  }
  double mean = sum / f.numel(), stddev = std::sqrt(sq / f.numel() - mean * mean);
  EXPECT_LT(std::fabs(mean), 0.05);
  EXPECT_NEAR(stddev, 1.0, 0.05);
  HostTensor i = HostTensor::random(DType::I32, {5000}, 3);
  bool sawLow = false, sawHigh = false;
  for (int64_t k = 0; k < i.numel(); ++k) {
    double v = i.get(k);
    ASSERT_EQ(v, std::trunc(v));
    ASSERT_GE(v, -16);
    ASSERT_LE(v, 16);
    sawLow |= v == -16;
    sawHigh |= v == 16;
  }
  EXPECT_TRUE(sawLow && sawHigh);
  HostTensor b = HostTensor::random(DType::Bool, {1000}, 3);
  int ones = 0;
  for (int64_t k = 0; k < b.numel(); ++k)
    ones += b.get(k) != 0;
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
}

// ---- host tensors and comparison

TEST(HostTensor, SetRoundsToTheDType) {
  HostTensor h(DType::F16, {3});
  EXPECT_EQ(h.bytes(), 6u);
  h.set(0, 1.0 / 3);
  h.set(1, 1e6);
  EXPECT_EQ(h.get(0), 0.333251953125);
  EXPECT_EQ(h.get(1), kInf);
  EXPECT_EQ(h.get(2), 0); // zero-filled
  HostTensor i(DType::I32, {1});
  i.set(0, -3.7);
  EXPECT_EQ(i.get(0), -3);
}

TEST(HostTensor, PoisonIsDetectedPerElement) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool}) {
    HostTensor h(t, {4});
    h.poison();
    for (int64_t i = 0; i < 4; ++i)
      EXPECT_TRUE(h.isPoisoned(i)) << std::string(dtypeName(t));
    h.set(2, 1);
    EXPECT_FALSE(h.isPoisoned(2)) << std::string(dtypeName(t));
    EXPECT_TRUE(h.isPoisoned(3)) << std::string(dtypeName(t));
  }
}

TEST(HostTensor, ComputedNaNIsNotPoison) {
  HostTensor h(DType::F32, {1});
  h.set(0, kNaN);
  EXPECT_FALSE(h.isPoisoned(0));
}

TEST(Compare, IdenticalTensorsPass) {
  HostTensor a = HostTensor::random(DType::F32, {64}, 1);
  CompareResult r = compareTensors(a, a, Tolerance{1e-5});
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_EQ(r.firstBad, -1);
  EXPECT_EQ(r.summary, "ok (max rel error 0.00e+00)");
}

TEST(Compare, PoisonedElementsFail) {
  HostTensor ref = tensorOf(DType::F32, {2, 2}, {1, 2, 3, 4});
  HostTensor got(DType::F32, {2, 2});
  got.poison();
  got.set(0, 1);
  got.set(1, 2);
  got.set(3, 4);
  CompareResult r = compareTensors(got, ref, Tolerance{1e-5});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.unwritten, 1);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.firstBad, 2);
  EXPECT_EQ(r.summary.rfind("1 of 4 elements differ (1 never written); first at [1, 0]: never "
                            "written",
                            0),
            0u)
      << r.summary;
}

TEST(Evaluator, MagnitudesAddTheSizeOfTheTerms) {
  Graph g("cancel");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor a = g.input("a", DType::F32, {1, 2});
  Tensor b = g.input("b", DType::F32, {2, 1});
  g.output(sum(x), "s");
  g.output(mean(x), "m");
  g.output(matmul(a, b), "c");
  std::vector<HostTensor> in = {tensorOf(DType::F32, {4}, {1, -1, 0.5, -0.25}),
                                tensorOf(DType::F32, {1, 2}, {2, -3}),
                                tensorOf(DType::F32, {2, 1}, {3, 2})};
  std::vector<HostTensor> v = evaluate(g, in);
  EvalOptions eo;
  eo.magnitudes = true;
  std::vector<HostTensor> m = evaluate(g, in, eo);
  expectSame(valuesOf(v[0]), {0.25}, "sum");
  expectSame(valuesOf(m[0]), {2.75}, "sum of |x|");
  expectSame(valuesOf(v[1]), {0.0625}, "mean");
  expectSame(valuesOf(m[1]), {0.6875}, "mean of |x|");
  expectSame(valuesOf(v[2]), {0}, "matmul");
  expectSame(valuesOf(m[2]), {12}, "matmul of |a b|");
}

TEST(Compare, CancellingSumsAreJudgedByTheSizeOfTheirTerms) {
  // A sum of terms near 1 that cancels to 5e-6: f32 rounding of the terms
  // (about 1e-8 each) is far beyond 1e-5 of the result, not of the terms.
  HostTensor ref = tensorOf(DType::F32, {1}, {4.613772e-06});
  HostTensor got = tensorOf(DType::F32, {1}, {4.6156347e-06});
  HostTensor terms = tensorOf(DType::F32, {1}, {0.5});
  EXPECT_FALSE(compareTensors(got, ref, Tolerance{2e-5}).ok);
  EXPECT_TRUE(compareTensors(got, ref, Tolerance{2e-5}, &terms).ok);
  HostTensor wrong = tensorOf(DType::F32, {1}, {0.01}); // off by the terms' size: still fails
  EXPECT_FALSE(compareTensors(wrong, ref, Tolerance{2e-5}, &terms).ok);
}

TEST(Compare, PoisonFailsEvenWhereTheReferenceIsNaN) {
  HostTensor ref = tensorOf(DType::F32, {1}, {kNaN});
  HostTensor got(DType::F32, {1});
  got.poison();
  EXPECT_FALSE(compareTensors(got, ref, Tolerance{1e-5}).ok);
}

TEST(Compare, NaNWhereTheReferenceIsNotFails) {
  HostTensor ref = tensorOf(DType::F32, {3}, {1, 2, 3});
  HostTensor got = tensorOf(DType::F32, {3}, {1, kNaN, 3});
  CompareResult r = compareTensors(got, ref, Tolerance{1.0});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.firstBad, 1);
  EXPECT_EQ(r.unwritten, 0);
}

TEST(Compare, MissingNaNFails) {
  HostTensor ref = tensorOf(DType::F32, {2}, {kNaN, 1});
  EXPECT_FALSE(compareTensors(tensorOf(DType::F32, {2}, {0, 1}), ref, Tolerance{1.0}).ok);
  EXPECT_TRUE(compareTensors(tensorOf(DType::F32, {2}, {kNaN, 1}), ref, Tolerance{1e-5}).ok);
}

TEST(Compare, InfinitiesMustMatch) {
  HostTensor ref = tensorOf(DType::F32, {1}, {kInf});
  EXPECT_TRUE(compareTensors(tensorOf(DType::F32, {1}, {kInf}), ref, Tolerance{1e-5}).ok);
  EXPECT_FALSE(compareTensors(tensorOf(DType::F32, {1}, {-kInf}), ref, Tolerance{1.0}).ok);
  EXPECT_FALSE(compareTensors(tensorOf(DType::F32, {1}, {3e38}), ref, Tolerance{1.0}).ok);
}

TEST(Compare, ToleranceIsRelativeToValueAndScale) {
  HostTensor ref = tensorOf(DType::F32, {4}, {1, 1, 1, 1}); // scale (rms) 1
  // Allowed: 1e-5 * (|1| + 1) = 2e-5.
  EXPECT_TRUE(
      compareTensors(tensorOf(DType::F32, {4}, {1, 1.00001, 1, 1}), ref, Tolerance{1e-5}).ok);
  CompareResult r =
      compareTensors(tensorOf(DType::F32, {4}, {1, 1.00003, 1, 1}), ref, Tolerance{1e-5});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.firstBad, 1);
  EXPECT_NEAR(r.maxRelError, 1.5e-5, 1e-7);
  // Near zero in a tensor of large values, the tensor's scale counts.
  HostTensor big = tensorOf(DType::F32, {2}, {1000, 0});
  EXPECT_TRUE(compareTensors(tensorOf(DType::F32, {2}, {1000, 0.001}), big, Tolerance{1e-5}).ok);
}

TEST(Compare, ZeroToleranceIsExact) {
  HostTensor ref = tensorOf(DType::I32, {2}, {5, 6});
  EXPECT_TRUE(compareTensors(tensorOf(DType::I32, {2}, {5, 6}), ref, Tolerance{0}).ok);
  EXPECT_FALSE(compareTensors(tensorOf(DType::I32, {2}, {5, 7}), ref, Tolerance{0}).ok);
}

TEST(Compare, TypeMismatchFails) {
  CompareResult r =
      compareTensors(HostTensor(DType::F32, {4}), HostTensor(DType::F16, {4}), Tolerance{1e-2});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.summary, "type mismatch: got f32[4], expected f16[4]");
  EXPECT_FALSE(
      compareTensors(HostTensor(DType::F32, {4}), HostTensor(DType::F32, {2, 2}), Tolerance{}).ok);
}

// ---- tolerances

TEST(ToleranceFor, ByDTypeAndReductionLength) {
  Graph g("t");
  Tensor x = g.input("x", DType::F32, {4, 6400});
  Tensor h = g.input("h", DType::F16, {4});
  Tensor i = g.input("i", DType::I32, {4});
  Tensor a = g.input("a", DType::F32, {8, 256});
  Tensor b = g.input("b", DType::F32, {256, 8});
  Tensor e = exp(x);
  Tensor s = sum(e, {1});
  Tensor m = matmul(a, b);
  Tensor hc = h.cast(DType::F32);
  EXPECT_EQ(toleranceFor(g, e.id()).rtol, 1e-5);
  EXPECT_DOUBLE_EQ(toleranceFor(g, s.id()).rtol, 1e-4);          // sqrt(6400) / 8 = 10
  EXPECT_DOUBLE_EQ(toleranceFor(g, (s * 2).id()).rtol, 1e-4);    // inherited downstream
  EXPECT_DOUBLE_EQ(toleranceFor(g, m.id()).rtol, 2e-5);          // sqrt(256) / 8 = 2
  EXPECT_DOUBLE_EQ(toleranceFor(g, sum(s * 2).id()).rtol, 2e-4); // two reductions chained
  EXPECT_EQ(toleranceFor(g, exp(h).id()).rtol, 1e-2);
  EXPECT_EQ(toleranceFor(g, hc.id()).rtol, 1e-2); // f32 computed from f16
  EXPECT_EQ(toleranceFor(g, (i + 1).id()).rtol, 0);
  EXPECT_EQ(toleranceFor(g, lt(x, x).id()).rtol, 0);
}
