// Symbolic index arithmetic (compiler/lower/IndexExpr.h): view round trips, splitting, divisibility.
#include "compiler/lower/IndexExpr.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace minijit;

namespace {

IndexExpr c(int64_t v) { return IndexExpr::constant(v); }

/// The value of `e` with its variables set: substituting constants folds
/// every division and remainder, so the result is a constant.
int64_t valueAt(IndexContext &ctx, const IndexExpr &e,
                const std::map<std::string, int64_t> &values) {
  IndexExpr r = ctx.substitute(e, [&](const std::string &n) -> std::optional<IndexExpr> {
    auto it = values.find(n);
    if (it == values.end())
      return std::nullopt;
    return IndexExpr::constant(it->second);
  });
  EXPECT_TRUE(r.isConstant()) << ctx.str(r);
  return r.constantTerm();
}

} // namespace

TEST(IndexExpr, ConstantsFold) {
  IndexContext ctx;
  IndexExpr e = ctx.add(ctx.mul(c(6), 7), c(-2));
  EXPECT_TRUE(e.isConstant());
  EXPECT_EQ(e.constantTerm(), 40);
  EXPECT_EQ(ctx.div(c(40), 6).constantTerm(), 6);
  EXPECT_EQ(ctx.mod(c(40), 6).constantTerm(), 4);
}

TEST(IndexExpr, LikeTermsMergeAndCancel) {
  IndexContext ctx;
  IndexExpr i = ctx.var("i", 100);
  IndexExpr e = ctx.add(ctx.mul(i, 3), ctx.mul(i, -3));
  EXPECT_TRUE(e.isConstant());
  EXPECT_EQ(e.constantTerm(), 0);
  IndexExpr f = ctx.add(i, i);
  ASSERT_EQ(f.terms().size(), 1u);
  EXPECT_EQ(f.terms()[0].second, 2);
}

TEST(IndexExpr, VariablesAreInternedByNameAndSize) {
  IndexContext ctx;
  EXPECT_EQ(ctx.var("i", 10).key(), ctx.var("i", 10).key());
  EXPECT_NE(ctx.var("i", 10).key(), ctx.var("j", 10).key());
}

TEST(IndexExpr, RangesFollowCoefficients) {
  IndexContext ctx;
  IndexExpr i = ctx.var("i", 10), j = ctx.var("j", 4);
  auto [lo, hi] = ctx.range(ctx.add(ctx.mul(i, 4), ctx.mul(j, -1)));
  EXPECT_EQ(lo, -3);
  EXPECT_EQ(hi, 36);
  auto [dlo, dhi] = ctx.range(ctx.div(i, 3));
  EXPECT_EQ(dlo, 0);
  EXPECT_EQ(dhi, 3);
}

TEST(IndexExpr, DivisionAndRemainderWithinRangeFold) {
  IndexContext ctx;
  IndexExpr k = ctx.var("k", 1024);
  EXPECT_EQ(ctx.div(k, 1024).key(), c(0).key());
  EXPECT_EQ(ctx.mod(k, 1024).key(), k.key());
  EXPECT_EQ(ctx.mod(k, 1).key(), c(0).key());
  EXPECT_EQ(ctx.div(k, 1).key(), k.key());
}

TEST(IndexExpr, MultiplesDivideOut) {
  IndexContext ctx;
  IndexExpr row = ctx.var("row", 4096), k = ctx.var("k", 1024);
  IndexExpr lin = ctx.add(ctx.mul(row, 1024), k);
  EXPECT_EQ(ctx.div(lin, 1024).key(), row.key());
  EXPECT_EQ(ctx.mod(lin, 1024).key(), k.key());
}

TEST(IndexExpr, ReshapeRoundTripFoldsBack) {
  // i over [A*B] viewed as [A, B] and flattened again: (i/B)%A * B + i%B = i.
  const int64_t a = 4096, b = 1024;
  IndexContext ctx;
  IndexExpr i = ctx.var("i", a * b);
  IndexExpr i0 = ctx.mod(ctx.div(i, b), a), i1 = ctx.mod(i, b);
  EXPECT_EQ(ctx.add(ctx.mul(i0, b), i1).key(), i.key());
}

TEST(IndexExpr, ReshapeToThreeDimsAndBackFoldsBack) {
  // stays as 35*(i/35) + 7*((i/7)%5) + i%7, because (i/7)/5 is canonicalized
  // to i/35 and the recombination rule looks for (i/7)/5. Every pointwise
  // kernel over a rank-3 (or higher) tensor then indexes with divisions, e.g.
  // f32[8,16,32] -> exp emits `x + (((vi * 4) % 32) + (((vi * 4) / 32) % 16) * 32
  // + ((vi * 4) / 512) * 512)` instead of `x + vi * 4`.
  const int64_t a = 6, b = 5, d = 7;
  IndexContext ctx;
  IndexExpr i = ctx.var("i", a * b * d);
  IndexExpr i0 = ctx.mod(ctx.div(i, b * d), a);
  IndexExpr i1 = ctx.mod(ctx.div(i, d), b);
  IndexExpr i2 = ctx.mod(i, d);
  IndexExpr back = ctx.add(ctx.add(ctx.mul(i0, b * d), ctx.mul(i1, d)), i2);
  EXPECT_EQ(ctx.str(back), "i");
  EXPECT_TRUE(ctx.isAffine(back));
}

TEST(IndexExpr, ReshapeToThreeDimsAndBackIsStillExact) {
  const int64_t a = 6, b = 5, d = 7;
  IndexContext ctx;
  IndexExpr i = ctx.var("i", a * b * d);
  IndexExpr back = ctx.add(
      ctx.add(ctx.mul(ctx.mod(ctx.div(i, b * d), a), b * d), ctx.mul(ctx.mod(ctx.div(i, d), b), d)),
      ctx.mod(i, d));
  for (int64_t v = 0; v < a * b * d; ++v)
    ASSERT_EQ(valueAt(ctx, back, {{"i", v}}), v);
}

TEST(IndexExpr, TwoDimsFlattenedAndSplitGiveTheDimsBack) {
  IndexContext ctx;
  IndexExpr r = ctx.var("r", 64), k = ctx.var("k", 48);
  IndexExpr lin = ctx.add(ctx.mul(r, 48), k);
  EXPECT_EQ(ctx.mod(ctx.div(lin, 48), 64).key(), r.key());
  EXPECT_EQ(ctx.mod(lin, 48).key(), k.key());
}

TEST(IndexExpr, NestedDivisionsCombine) {
  IndexContext ctx;
  IndexExpr x = ctx.var("x", 100000);
  EXPECT_EQ(ctx.div(ctx.div(x, 4), 8).key(), ctx.div(x, 32).key());
  EXPECT_EQ(ctx.str(ctx.div(ctx.div(x, 4), 8)), ctx.str(ctx.div(x, 32)));
}

TEST(IndexExpr, SmallTermsSplitOffRemainders) {
  // (4v + 3) % 1024 = (4v) % 1024 + 3, since 3 < 4 and 4 divides 1024.
  IndexContext ctx;
  IndexExpr v = ctx.var("v", 1000);
  IndexExpr e = ctx.add(ctx.mul(v, 4), c(3));
  IndexExpr want = ctx.add(ctx.mod(ctx.mul(v, 4), 1024), c(3));
  EXPECT_EQ(ctx.mod(e, 1024).key(), want.key());
  EXPECT_EQ(ctx.div(e, 1024).key(), ctx.div(ctx.mul(v, 4), 1024).key());
}

TEST(IndexExpr, SmallVariableTermsSplitToo) {
  // (8a + j) / 1024 with j in [0, 7]: j never carries, so = (8a) / 1024.
  IndexContext ctx;
  IndexExpr a = ctx.var("a", 5000), j = ctx.var("j", 8);
  IndexExpr e = ctx.add(ctx.mul(a, 8), j);
  EXPECT_EQ(ctx.div(e, 1024).key(), ctx.div(ctx.mul(a, 8), 1024).key());
  EXPECT_EQ(ctx.mod(e, 1024).key(), ctx.add(ctx.mod(ctx.mul(a, 8), 1024), j).key());
}

TEST(IndexExpr, SplitsAreExactWhereTermsCanCarry) {
  // (4v + c) for every c: whichever way the terms are split, the values of
  // the division and the remainder must be those of integer arithmetic.
  IndexContext ctx;
  IndexExpr v = ctx.var("v", 1000);
  for (int64_t cst = 0; cst < 9; ++cst) {
    IndexExpr e = ctx.add(ctx.mul(v, 4), c(cst));
    IndexExpr q = ctx.div(e, 1024), r = ctx.mod(e, 1024);
    for (int64_t x = 0; x < 1000; x += 37) {
      ASSERT_EQ(valueAt(ctx, q, {{"v", x}}), (4 * x + cst) / 1024) << cst << " " << x;
      ASSERT_EQ(valueAt(ctx, r, {{"v", x}}), (4 * x + cst) % 1024) << cst << " " << x;
    }
  }
}

TEST(IndexExpr, RandomExpressionsEvaluateLikeIntegerArithmetic) {
  // Random nests of add, mul, div and mod over two variables, compared at
  // random points with the same steps on plain integers (values stay >= 0).
  std::mt19937 rng(99);
  for (int iter = 0; iter < 500; ++iter) {
    const int64_t sa = 1 + rng() % 64, sb = 1 + rng() % 64;
    const int64_t ca = 1 + rng() % 8, cb = 1 + rng() % 8;
    std::vector<std::pair<int, int64_t>> steps;
    for (int step = 0; step < 5; ++step)
      steps.push_back({static_cast<int>(rng() % 4), static_cast<int64_t>(1 + rng() % 12)});
    IndexContext ctx;
    IndexExpr e = ctx.add(ctx.mul(ctx.var("a", sa), ca), ctx.mul(ctx.var("b", sb), cb));
    for (auto [kind, k] : steps)
      e = kind == 0   ? ctx.add(e, c(k))
          : kind == 1 ? ctx.mul(e, k)
          : kind == 2 ? ctx.div(e, k)
                      : ctx.mod(e, k);
    auto [lo, hi] = ctx.range(e);
    for (int probe = 0; probe < 16; ++probe) {
      int64_t av = rng() % sa, bv = rng() % sb;
      int64_t want = ca * av + cb * bv;
      for (auto [kind, k] : steps)
        want = kind == 0 ? want + k : kind == 1 ? want * k : kind == 2 ? want / k : want % k;
      int64_t got = valueAt(ctx, e, {{"a", av}, {"b", bv}});
      ASSERT_EQ(got, want) << ctx.str(e) << " at a=" << av << " b=" << bv;
      ASSERT_GE(got, lo) << ctx.str(e);
      ASSERT_LE(got, hi) << ctx.str(e);
    }
  }
}

TEST(IndexExpr, Divisibility) {
  IndexContext ctx;
  IndexExpr v = ctx.var("v", 1000), w = ctx.var("w", 10);
  EXPECT_EQ(ctx.divisibility(ctx.add(ctx.mul(v, 6), c(4))), 2);
  EXPECT_EQ(ctx.divisibility(ctx.add(ctx.mul(v, 8), ctx.mul(w, 12))), 4);
  EXPECT_EQ(ctx.divisibility(ctx.mul(v, 16)), 16);
  EXPECT_EQ(ctx.divisibility(c(0)), 0);
  EXPECT_EQ(ctx.divisibility(c(12)), 12);
  EXPECT_EQ(ctx.divisibility(v), 1);
  // A remainder keeps the factor its argument and divisor share.
  EXPECT_EQ(ctx.divisibility(ctx.mod(ctx.mul(v, 4), 1024)), 4);
  EXPECT_EQ(ctx.divisibility(ctx.mul(ctx.mod(ctx.mul(v, 4), 1024), 3)), 12);
}

TEST(IndexExpr, AffineCoefficientsAndMentions) {
  IndexContext ctx;
  IndexExpr row = ctx.var("row", 64), k = ctx.var("k", 32), other = ctx.var("o", 3);
  IndexExpr e = ctx.add(ctx.mul(row, 32), ctx.mul(k, 2));
  EXPECT_TRUE(ctx.isAffine(e));
  EXPECT_EQ(ctx.coefficient(e, row), 32);
  EXPECT_EQ(ctx.coefficient(e, k), 2);
  EXPECT_EQ(ctx.coefficient(e, other), 0);
  IndexExpr d = ctx.div(ctx.add(ctx.mul(row, 3), k), 7);
  EXPECT_FALSE(ctx.isAffine(d));
  EXPECT_TRUE(ctx.mentions(d, k));
  EXPECT_TRUE(ctx.mentions(d, row));
  EXPECT_FALSE(ctx.mentions(d, other));
}

TEST(IndexExpr, SubstituteReplacesVariablesAndSimplifies) {
  IndexContext ctx;
  IndexExpr i = ctx.var("i", 4096);
  IndexExpr e = ctx.add(ctx.mul(ctx.div(i, 4), 4), ctx.mod(i, 4)); // = i
  EXPECT_EQ(e.key(), i.key());
  IndexExpr v = ctx.var("v", 1024);
  IndexExpr r =
      ctx.substitute(ctx.mod(i, 4), [&](const std::string &n) -> std::optional<IndexExpr> {
        if (n == "i")
          return ctx.add(ctx.mul(v, 4), c(3));
        return std::nullopt;
      });
  EXPECT_EQ(r.key(), c(3).key()); // (4v + 3) % 4 = 3
}

TEST(IndexExpr, TextOfAffineExpressions) {
  IndexContext ctx;
  IndexExpr row = ctx.var("row", 4096), k = ctx.var("k", 1024);
  EXPECT_EQ(ctx.str(ctx.add(ctx.mul(row, 1024), k)), "row * 1024 + k");
  EXPECT_EQ(ctx.str(ctx.add(k, c(7))), "k + 7");
  EXPECT_EQ(ctx.str(c(0)), "0");
  EXPECT_EQ(ctx.str(c(42)), "42");
  EXPECT_EQ(ctx.str(ctx.mul(k, -2)), "k * (-2)");
}

TEST(IndexExpr, TextOfDivisionsAndRemainders) {
  IndexContext ctx;
  IndexExpr v = ctx.var("v", 1000);
  // a factor common to the expression and the divisor comes out first
  EXPECT_EQ(ctx.str(ctx.mod(ctx.add(ctx.mul(v, 4), c(3)), 1024)), "(v % 256) * 4 + 3");
  EXPECT_EQ(ctx.str(ctx.div(ctx.mul(v, 4), 1024)), "v / 256");
  EXPECT_EQ(ctx.str(ctx.add(ctx.mul(ctx.div(ctx.mul(v, 4), 1024), 3), c(2))),
            "(v / 256) * 3 + 2");
}

TEST(IndexExpr, AFlatIndexOfMergedAxesDividesBackToTheRow) {
  // [64, 512, 768] read as [32768, 768]: row m's flat index m * 768 + k
  // splits into (m / 512, m % 512, k) and flattens back to m * 768 + k, so a
  // product reads the merged input in place.
  IndexContext ctx;
  IndexExpr m = ctx.var("m", 32768), k = ctx.var("k", 768);
  IndexExpr lin = ctx.add(ctx.mul(m, 768), k);
  IndexExpr i0 = ctx.mod(ctx.div(lin, 512 * 768), 64), i1 = ctx.mod(ctx.div(lin, 768), 512),
            i2 = ctx.mod(lin, 768);
  IndexExpr back = ctx.add(ctx.add(ctx.mul(i0, 512 * 768), ctx.mul(i1, 768)), i2);
  EXPECT_EQ(back.key(), lin.key()) << ctx.str(back);
  EXPECT_EQ(ctx.str(i0), "m / 512");
}

TEST(IndexExpr, TextOfAVariableDividedHasNoRedundantParentheses) {
  // parentheses: str(mod(div(i, 3), 5)) is "((i) / 3) % 5" where the header
  // documents "(i / 3) % 5", and the emitted CUDA carries the noise.
  IndexContext ctx;
  IndexExpr i = ctx.var("i", 1 << 20);
  EXPECT_EQ(ctx.str(ctx.mod(ctx.div(i, 3), 5)), "(i / 3) % 5");
  EXPECT_EQ(ctx.str(ctx.div(i, 1024)), "i / 1024");
}
