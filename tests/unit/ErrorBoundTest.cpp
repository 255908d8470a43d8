// The error bounds of the CPU reference (ir/ErrorBound.h): each rule against
// cases whose worst error is known (cancellation, exp near overflow, f16
// rounding, long sums), and the comparison that uses them.
#include "ir/ErrorBound.h"
#include "ir/Builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace minijit;

namespace {

const double kU = 0x1p-24;

HostTensor tensorOf(DType t, const Shape &s, const std::vector<double> &v) {
  HostTensor h(t, s);
  for (size_t i = 0; i < v.size(); ++i)
    h.set(static_cast<int64_t>(i), v[i]);
  return h;
}

/// The one output's value and bound at element `i`.
struct At {
  double value, bound;
};
At boundAt(const Graph &g, const std::vector<HostTensor> &in, int64_t i = 0,
           const EvalOptions &eo = {}) {
  BoundedOutputs r = evaluateWithBounds(g, in, eo);
  return {r.values[0].get(i), r.bounds[0].get(i)};
}

TEST(ErrorBound, CancellationKeepsTheSizeOfTheTerms) {
  // (x + 1) - 1 with x = 1e-8: f32 rounds x + 1 to 1, so a correct kernel
  // (and the reference) gives 0 where the exact value is 1e-8.
  Graph g("cancel");
  Tensor x = g.input("x", DType::F32, {1});
  g.output((x + 1.0) - 1.0);
  At a = boundAt(g, {tensorOf(DType::F32, {1}, {1e-8})});
  EXPECT_EQ(a.value, 0.0);
  EXPECT_GE(a.bound, 1e-8);      // covers the exact value
  EXPECT_LE(a.bound, 2 * kU * 1); // about half an ulp of the term, 1
}

TEST(ErrorBound, ComparisonPassesCancellationTheToleranceFailed) {
  Graph g("cancel");
  Tensor x = g.input("x", DType::F32, {4});
  g.output((x + 1.0) - 1.0);
  std::vector<HostTensor> in = {tensorOf(DType::F32, {4}, {1e-8, -2e-8, 3e-8, 1e-9})};
  BoundedOutputs r = evaluateWithBounds(g, in);
  HostTensor exact = tensorOf(DType::F32, {4}, {1e-8, -2e-8, 3e-8, 1e-9});
  EXPECT_FALSE(compareTensors(exact, r.values[0], Tolerance{}).ok); // rtol alone cries wolf
  CompareResult c = compareTensors(exact, r.values[0], Tolerance{}, nullptr, &r.bounds[0]);
  EXPECT_TRUE(c.ok) << c.summary;
  EXPECT_EQ(c.savedByBound, 4);
  // A real error (a hundred times the bound) still fails and says by how much.
  HostTensor wrong = tensorOf(DType::F32, {4}, {1e-5, -2e-8, 3e-8, 1e-9});
  CompareResult w = compareTensors(wrong, r.values[0], Tolerance{}, nullptr, &r.bounds[0]);
  EXPECT_FALSE(w.ok);
  EXPECT_GT(w.maxBounds, 50);
  EXPECT_NE(w.summary.find("bounds"), std::string::npos) << w.summary;
}

TEST(ErrorBound, ExpGrowsItsArgumentsErrorByItsSize) {
  // exp(a + b): the sum's rounding (u * 88.5) becomes a relative error of
  // the result of that size (exp's condition number is |x|), plus 2 ulp.
  Graph g("exp");
  Tensor a = g.input("a", DType::F32, {1});
  Tensor b = g.input("b", DType::F32, {1});
  g.output(exp(a + b));
  At r = boundAt(g, {tensorOf(DType::F32, {1}, {88.0}), tensorOf(DType::F32, {1}, {0.5})});
  double rel = r.bound / r.value;
  EXPECT_GE(rel, 88.5 * kU);
  EXPECT_LE(rel, 88.5 * kU * 1.01 + 3 * 0x1p-23);
}

TEST(ErrorBound, ExpPastOverflowHasNoBound) {
  // Near log(FLT_MAX) = 88.7228 the rounding of (a + b) - b (1e-4 here) may
  // take expf past the largest float: a correct kernel may give inf, and the
  // check accepts it.
  Graph g("exp_overflow");
  Tensor a = g.input("a", DType::F32, {1});
  Tensor b = g.input("b", DType::F32, {1});
  g.output(exp((a + b) - b));
  std::vector<HostTensor> in = {tensorOf(DType::F32, {1}, {88.7228}),
                                tensorOf(DType::F32, {1}, {1000})};
  BoundedOutputs r = evaluateWithBounds(g, in);
  EXPECT_TRUE(std::isfinite(r.values[0].get(0)));
  EXPECT_TRUE(std::isinf(r.bounds[0].get(0)));
  HostTensor inf = tensorOf(DType::F32, {1}, {INFINITY});
  EXPECT_TRUE(compareTensors(inf, r.values[0], Tolerance{}, nullptr, &r.bounds[0]).ok);
  // Without the sum in front, exp(88.5) is finite and its bound is 2 ulp.
  Graph h("exp_plain");
  h.output(exp(h.input("a", DType::F32, {1})));
  At p = boundAt(h, {tensorOf(DType::F32, {1}, {88.5})});
  EXPECT_LE(p.bound, 2.01 * 0x1p-23 * p.value);
}

TEST(ErrorBound, F16StorageRoundsEveryStoredValue) {
  // Every value stored in f16 (no `stored` flags: an eager run) is rounded:
  // (x + 0.0004) - x with x = 1 stores 1 + 0.0004 as 1, so gives 0.
  Graph g("f16");
  Tensor x = g.input("x", DType::F16, {1});
  g.output((x + 0.0004) - x);
  At a = boundAt(g, {tensorOf(DType::F16, {1}, {1.0})});
  EXPECT_EQ(a.value, 0.0);
  EXPECT_GE(a.bound, 0.0004 * 0.99);      // covers the exact value (0.0004 rounded to f16)
  EXPECT_LE(a.bound, 3 * 0x1p-11 * 1.0);  // about one rounding of 1 to f16
  // Kept in registers (not stored), the same value carries only f32 rounding.
  std::vector<bool> stored = {true, false, false, true};
  EvalOptions eo;
  eo.stored = &stored;
  At f = boundAt(g, {tensorOf(DType::F16, {1}, {1.0})}, 0, eo);
  EXPECT_LE(f.bound, 0x1p-11);
}

TEST(ErrorBound, F16IntrinsicsCarryTheirDocumentedError) {
  // An f16 result uses tanh.approx.f32 (relative error 2^-10.987), then the
  // f16 rounding when stored.
  Graph g("tanh16");
  Tensor x = g.input("x", DType::F16, {1});
  g.output(tanh(x));
  At a = boundAt(g, {tensorOf(DType::F16, {1}, {0.5})});
  EXPECT_GE(a.bound, 0x1p-11 * a.value * 1.9);
  EXPECT_LE(a.bound, 0x1p-11 * a.value * 2.5);
}

TEST(ErrorBound, LongSumsCoverF32AccumulationInAnyOrder) {
  // 2^20 positive terms: an f32 sum one element at a time and one in 32
  // strided runs joined by a tree both stay within the bound, which is far
  // below the sum itself.
  const int64_t n = 1 << 20;
  Graph g("long_sum");
  Tensor x = g.input("x", DType::F32, {n});
  g.output(sum(x));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u01(0, 1);
  std::vector<double> v(n);
  for (double &e : v)
    e = u01(rng);
  At a = boundAt(g, {tensorOf(DType::F32, {n}, v)});
  float sequential = 0;
  for (double e : v)
    sequential += static_cast<float>(e);
  std::vector<float> runs(32, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    runs[i % 32] += static_cast<float>(v[i]);
  for (int w = 16; w > 0; w /= 2)
    for (int i = 0; i < w; ++i)
      runs[i] += runs[i + w];
  EXPECT_LE(std::fabs(sequential - a.value), a.bound);
  EXPECT_LE(std::fabs(runs[0] - a.value), a.bound / 4);
  EXPECT_LE(a.bound, 1e-3 * a.value);
}

TEST(ErrorBound, SumsOfCancellingTermsAreJudgedByTheirTerms) {
  // Terms of both signs that cancel: the bound follows sum |x|, not the sum.
  Graph g("cancel_sum");
  Tensor x = g.input("x", DType::F32, {4});
  g.output(sum(x));
  At a = boundAt(g, {tensorOf(DType::F32, {4}, {1e4, 1e-3, -1e4, 0})});
  EXPECT_NEAR(a.value, 1e-3, 1e-9);
  EXPECT_GE(a.bound, kU * 2e4);
  EXPECT_LE(a.bound, 20 * kU * 2e4);
}

TEST(ErrorBound, MaxAndViewsAreExact) {
  Graph g("max");
  Tensor x = g.input("x", DType::F32, {3, 5});
  g.output(max(x.permute({1, 0}), {1}));
  BoundedOutputs r = evaluateWithBounds(g, {HostTensor::random(DType::F32, {3, 5}, 1)});
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(r.bounds[0].get(i), 0.0);
}

TEST(ErrorBound, ViewsMoveBoundsWithTheirValues) {
  // x[0, 1] is the largest term; after a permute its bound sits at [1, 0].
  Graph g("moved");
  Tensor x = g.input("x", DType::F32, {2, 2});
  g.output(((x + 1.0) - 1.0).permute({1, 0}));
  BoundedOutputs r = evaluateWithBounds(g, {tensorOf(DType::F32, {2, 2}, {0, 100, 0, 0})});
  EXPECT_GT(r.bounds[0].get(2), 100 * kU);
  EXPECT_LT(r.bounds[0].get(1), r.bounds[0].get(2));
}

TEST(ErrorBound, ComparisonsThatMayFlipSelectEitherBranch) {
  // where(a > b, a - b, b - a) with a and b within rounding of each other:
  // the comparison may go either way, so the bound spans both branches.
  Graph g("flip");
  Tensor a = g.input("a", DType::F32, {1});
  Tensor b = g.input("b", DType::F32, {1});
  Tensor s = (a + 1.0) - 1.0;
  g.output(where(gt(s, b), s - b, b - s));
  At r = boundAt(g, {tensorOf(DType::F32, {1}, {1e-9}), tensorOf(DType::F32, {1}, {0})});
  EXPECT_GE(r.bound, 1e-9);
  // Far apart, the branch is certain and only its own error counts.
  At far = boundAt(g, {tensorOf(DType::F32, {1}, {0.5}), tensorOf(DType::F32, {1}, {0})});
  EXPECT_LE(far.bound, 4 * kU);
}

TEST(ErrorBound, MatmulBoundsFollowTheProductsSizes) {
  Graph g("mm");
  Tensor a = g.input("a", DType::F32, {2, 64});
  Tensor b = g.input("b", DType::F32, {64, 3});
  g.output(matmul(a, b));
  std::vector<HostTensor> in = {HostTensor::random(DType::F32, {2, 64}, 3),
                                HostTensor::random(DType::F32, {64, 3}, 4)};
  BoundedOutputs r = evaluateWithBounds(g, in);
  double sumAbs = 0;
  for (int p = 0; p < 64; ++p)
    sumAbs += std::fabs(in[0].get(p) * in[1].get(p * 3));
  EXPECT_GE(r.bounds[0].get(0), kU * sumAbs);
  EXPECT_LE(r.bounds[0].get(0), 30 * kU * sumAbs);
}

TEST(ErrorBound, ScalarRulesAtPoles) {
  // log near 0 and a division by a value within its error of 0 have no bound.
  Graph g("poles");
  Tensor x = g.input("x", DType::F32, {1});
  Tensor l = log(x);
  Tensor d = x / x;
  EXPECT_TRUE(std::isinf(elementwiseErrorBound(l.node(), DType::F32, {1e-3}, {2e-3}, std::log(1e-3))));
  EXPECT_TRUE(std::isinf(elementwiseErrorBound(d.node(), DType::F32, {1, 1e-3}, {0, 2e-3}, 1e3)));
  EXPECT_NEAR(elementwiseErrorBound(l.node(), DType::F32, {2}, {0}, std::log(2.0)),
              0x1p-23 * std::log(2.0), 1e-12);
}

} // namespace

namespace {

TEST(ErrorBound, CertainRoundingNeedsRoomOnBothSides) {
  // f16 spacing at 1.5 is 2^-10: 1.5 + 2^-12 rounds to 1.5 with room to spare,
  // 1.5 + 0.49 * 2^-10 is too close to the midpoint for a bound of 2^-14.
  EXPECT_TRUE(certainRounding(DType::F16, 1.5, 1.5 + 0x1p-12, 0x1p-20));
  EXPECT_FALSE(certainRounding(DType::F16, 1.5, 1.5 + 0.49 * 0x1p-10, 0x1p-14));
  // At a power of two the spacing below is half the one above.
  EXPECT_FALSE(certainRounding(DType::F16, 1.0, 1.0 - 0x1p-12 - 0x1p-14, 0));
  EXPECT_TRUE(certainRounding(DType::F16, 1.0, 1.0 + 0x1p-13, 0));
  // An eighth of the spacing is kept free of the bound: 1.5 + 0.4 * 2^-10
  // is within half a spacing but not certain, even with no bound.
  EXPECT_FALSE(certainRounding(DType::F16, 1.5, 1.5 + 0.4 * 0x1p-10, 0));
  EXPECT_TRUE(certainRounding(DType::F16, 1.5, 1.5 + 0.3 * 0x1p-10, 0));
}

TEST(ErrorBound, StoredHalfValuesWhoseRoundingIsCertainMustBeExact) {
  // x * 3 in f16, stored: the f32 product is exact, so a correct kernel
  // stores the reference's f16 value; one f16 ulp off (what rounding toward
  // zero gives) fails although the f16 tolerance (1e-2) would pass it.
  Graph g("f16mul");
  Tensor x = g.input("x", DType::F16, {2});
  g.output(x * 3.0);
  std::vector<HostTensor> in = {tensorOf(DType::F16, {2}, {1.25, 0.5})};
  BoundedOutputs r = evaluateWithBounds(g, in);
  EXPECT_EQ(r.bounds[0].get(0), 0.0);
  HostTensor off = r.values[0];
  off.set(0, r.values[0].get(0) - 0x1p-9); // one ulp below 3.75
  EXPECT_TRUE(compareTensors(off, r.values[0], Tolerance{1e-2}).ok);
  CompareResult c = compareTensors(off, r.values[0], Tolerance{1e-2}, nullptr, &r.bounds[0]);
  EXPECT_FALSE(c.ok) << c.summary;
  EXPECT_TRUE(compareTensors(r.values[0], r.values[0], Tolerance{1e-2}, nullptr, &r.bounds[0]).ok);
}

TEST(ErrorBound, AStoredValueItsKernelAlsoReadsCoversBothReaders) {
  // t = x * y in f16 (1.25 * (1 + 2^-10) = 1.25 + 1.25 * 2^-10) is stored
  // rounded, with certainty, to 1.25 + 2^-10, and the same kernel computes
  // t - x from its unrounded value (1.25 * 2^-10); another kernel would read
  // the stored one and get 2^-10. The reference gives t's readers the
  // rounded value, so t - x is 2^-10 there with a bound of 0: the in-register
  // reader fails unless t is flagged as read in registers. t's own
  // comparison stays exact either way.
  Graph g("f16regs");
  Tensor x = g.input("x", DType::F16, {1});
  Tensor y = g.input("y", DType::F16, {1});
  Tensor t = x * y;
  g.output(t);
  g.output(t - x);
  std::vector<HostTensor> in = {tensorOf(DType::F16, {1}, {1.25}),
                                tensorOf(DType::F16, {1}, {1 + 0x1p-10})};
  std::vector<bool> stored = {true, true, true, true};
  EvalOptions eo;
  eo.stored = &stored;
  HostTensor inRegisters = tensorOf(DType::F16, {1}, {1.25 * 0x1p-10});
  BoundedOutputs plain = evaluateWithBounds(g, in, eo);
  ASSERT_EQ(plain.values[0].get(0), 1.25 + 0x1p-10);
  ASSERT_EQ(plain.values[1].get(0), 0x1p-10);
  EXPECT_FALSE(compareTensors(inRegisters, plain.values[1], Tolerance{0}, nullptr,
                              &plain.bounds[1]).ok);
  std::vector<bool> registers = {false, false, true, false};
  eo.readInRegisters = &registers;
  BoundedOutputs both = evaluateWithBounds(g, in, eo);
  CompareResult c = compareTensors(inRegisters, both.values[1], Tolerance{0}, nullptr,
                                   &both.bounds[1]);
  EXPECT_TRUE(c.ok) << c.summary;
  EXPECT_TRUE(compareTensors(plain.values[1], both.values[1], Tolerance{0}, nullptr,
                             &both.bounds[1]).ok); // the other kernel's reader
  EXPECT_EQ(both.values[0].get(0), 1.25 + 0x1p-10);
  EXPECT_EQ(both.bounds[0].get(0), 0.0); // t itself: still certain, so exact
  EXPECT_LE(both.bounds[1].get(0), 4 * 0x1p-11 * 1.25);
}

TEST(ErrorBound, Tf32MatmulsAllowForTheOperandsShorterFraction) {
  // A dot product of 64 terms of 1 * 1: f32 carries only the sum's rounding;
  // read as TF32 (EvalOptions::tf32Matmuls) each product may be off by
  // (2 * 2^-10 + 2^-20) of its size, so the bound grows by that times 64.
  Graph g("tf32");
  Tensor a = g.input("a", DType::F32, {1, 64}), b = g.input("b", DType::F32, {64, 1});
  g.output(matmul(a, b));
  std::vector<HostTensor> in = {tensorOf(DType::F32, {1, 64}, std::vector<double>(64, 1.0)),
                                tensorOf(DType::F32, {64, 1}, std::vector<double>(64, 1.0))};
  At f32 = boundAt(g, in);
  EvalOptions eo;
  eo.tf32Matmuls = true;
  At tf32 = boundAt(g, in, 0, eo);
  EXPECT_EQ(tf32.value, f32.value); // the values are the reference's either way
  EXPECT_LE(f32.bound, 64 * 0x1p-18); // the sum's rounding, about 25 x 2^-24 x 64
  EXPECT_NEAR(tf32.bound - f32.bound, 64 * (0x1p-9 + 0x1p-20 - 0x1p-24), 1e-9);
}

} // namespace
