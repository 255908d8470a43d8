// Shapes: element counts, strides, text, numpy broadcasting and its errors, checkShape limits.
#include "ir/Shape.h"
#include "ir/Error.h"

#include "tests/support/Expect.h"

#include <gtest/gtest.h>

#include <string>

using namespace minijit;

TEST(Shape, NumelIsTheProductAndOneForScalars) {
  EXPECT_EQ(Shape({4096, 1024}).numel(), 4194304);
  EXPECT_EQ(Shape().numel(), 1);
  EXPECT_EQ(Shape({7}).numel(), 7);
}

TEST(Shape, StridesAreRowMajor) {
  auto s = Shape({2, 3, 4}).strides();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], 12);
  EXPECT_EQ(s[1], 4);
  EXPECT_EQ(s[2], 1);
  EXPECT_TRUE(Shape().strides().empty());
}

TEST(Shape, TextForm) {
  EXPECT_EQ(Shape({4096, 1024}).str(), "[4096, 1024]");
  EXPECT_EQ(Shape().str(), "[]");
  EXPECT_EQ(Shape({1}).str(), "[1]");
}

TEST(Shape, Equality) {
  EXPECT_EQ(Shape({2, 3}), Shape({2, 3}));
  EXPECT_NE(Shape({2, 3}), Shape({3, 2}));
  EXPECT_NE(Shape({6}), Shape({1, 6}));
}

TEST(Broadcast, AlignsOnTheRightAndStretchesOnes) {
  EXPECT_EQ(broadcastShapes({4096, 1024}, {1024}, "add"), Shape({4096, 1024}));
  EXPECT_EQ(broadcastShapes({4096, 1}, {1, 1024}, "add"), Shape({4096, 1024}));
  EXPECT_EQ(broadcastShapes({}, {3, 5}, "add"), Shape({3, 5}));
  EXPECT_EQ(broadcastShapes({8, 1, 6, 1}, {7, 1, 5}, "mul"), Shape({8, 7, 6, 5}));
  EXPECT_EQ(broadcastShapes({1}, {1}, "mul"), Shape({1}));
}

TEST(Broadcast, MismatchNamesTheOpShapesAndDim) {
  EXPECT_EQ(graphErrorOf([] {
              broadcastShapes({4096, 1024}, {1024, 4096}, "sub");
            }),
            "sub: shapes [4096, 1024] and [1024, 4096] do not broadcast (dim 0: 4096 vs 1024)");
}

TEST(Broadcast, MismatchDimCountsFromTheLeftOfTheResult) {
  EXPECT_EQ(graphErrorOf([] {
              broadcastShapes({3}, {2, 4}, "add");
            }),
            "add: shapes [3] and [2, 4] do not broadcast (dim 1: 3 vs 4)");
}

TEST(Broadcast, BroadcastsToFollowsNumpy) {
  EXPECT_TRUE(broadcastsTo({1024}, {4096, 1024}));
  EXPECT_TRUE(broadcastsTo({4096, 1}, {4096, 1024}));
  EXPECT_TRUE(broadcastsTo({}, {2, 2}));
  EXPECT_TRUE(broadcastsTo({2, 2}, {2, 2}));
  EXPECT_FALSE(broadcastsTo({4096, 1024}, {1024}));
  EXPECT_FALSE(broadcastsTo({2}, {2, 3}));
  // Broadcasting is one way: the target's 1 does not stretch the source.
  EXPECT_FALSE(broadcastsTo({3}, {1}));
}

TEST(CheckShape, AcceptsRankEightAndScalars) {
  EXPECT_NO_THROW(checkShape(Shape({1, 2, 1, 2, 1, 2, 1, 2}), "x"));
  EXPECT_NO_THROW(checkShape(Shape(), "x"));
}

TEST(CheckShape, RejectsRankNine) {
  EXPECT_EQ(graphErrorOf([] {
              checkShape(Shape({1, 1, 1, 1, 1, 1, 1, 1, 1}), "input %x");
            }),
            "input %x: rank 9 exceeds the maximum of 8");
}

TEST(CheckShape, AcceptsZeroDims) { // an empty tensor (issue 42)
  EXPECT_NO_THROW(checkShape(Shape({4, 0}), "input %x"));
  EXPECT_NO_THROW(checkShape(Shape({0, int64_t(1) << 40}), "input %x")) << "0 elements";
  EXPECT_EQ(graphErrorOf([] { checkShape(Shape({0, (int64_t(1) << 40) + 1}), "input %x"); }),
            "input %x: shape [0, 1099511627777] has more than 2^40 elements, the largest "
            "tensor minijit accepts")
      << "each dimension stays within the limit";
}

TEST(CheckShape, RejectsNegativeDims) {
  EXPECT_EQ(graphErrorOf([] { checkShape(Shape({-3}), "reshape"); }),
            "reshape: dimension 0 of [-3] is -3; dimensions must be at least 0");
}

TEST(CheckShape, AcceptsExactlyTwoToTheForty) {
  EXPECT_NO_THROW(checkShape(Shape({int64_t(1) << 20, int64_t(1) << 20}), "x"));
  EXPECT_NO_THROW(checkShape(Shape({kMaxElements}), "x"));
}

TEST(CheckShape, RejectsMoreThanTwoToTheForty) {
  EXPECT_EQ(graphErrorOf([] {
              checkShape(Shape({(int64_t(1) << 20) + 1, int64_t(1) << 20}), "x");
            }),
            "x: shape [1048577, 1048576] has more than 2^40 elements, the largest tensor minijit "
            "accepts");
  EXPECT_EQ(graphErrorOf([] { checkShape(Shape({kMaxElements + 1}), "x"); }),
            "x: shape [1099511627777] has more than 2^40 elements, the largest tensor minijit "
            "accepts");
}

TEST(CheckShape, ProductOverflowIsCaughtNotWrapped) {
  // 2^32 * 2^32 wraps int64 to 0; the check must see it as too large.
  std::string msg = graphErrorOf([] {
    checkShape(Shape({int64_t(1) << 32, int64_t(1) << 32}), "x");
  });
  EXPECT_NE(msg.find("more than 2^40 elements"), std::string::npos) << msg;
}

TEST(Shape, SameNonUnitDimsIgnoresAxesOfOneOnly) {
  auto same = [](Shape a, Shape b) { return sameNonUnitDims(a.allDims(), b.allDims()); };
  EXPECT_TRUE(same(Shape({4, 1, 5}), Shape({4, 5})));
  EXPECT_TRUE(same(Shape({1, 4, 1, 5, 1}), Shape({4, 1, 5})));
  EXPECT_TRUE(same(Shape({1}), Shape(std::span<const int64_t>())));
  EXPECT_FALSE(same(Shape({4, 5}), Shape({5, 4})));  // the order counts
  EXPECT_FALSE(same(Shape({20}), Shape({4, 5})));    // a merge is not a squeeze
  EXPECT_FALSE(same(Shape({4, 5, 2}), Shape({4, 5})));
  // a name is never a unit axis, even bound to 1; it matches itself
  EXPECT_TRUE(same(Shape({Dim("B"), 1, 8}), Shape({Dim("B"), 8})));
  EXPECT_FALSE(same(Shape({Dim("B"), 8}), Shape({8})));
}
