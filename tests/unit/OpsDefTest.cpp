// The facts of ir/Ops.def against the CPU reference: an op said to rise
// rises, a commutative one commutes, an identity leaves its operand alone,
// and so on, on sample values; and the columns agree with each other.
#include "ir/Evaluator.h"
#include "ir/Op.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace minijit;

namespace {

std::vector<OpKind> opsOf(OpClass cls) {
  std::vector<OpKind> ops;
  for (unsigned k = 0; k < kNumOps; ++k)
    if (opClass(static_cast<OpKind>(k)) == cls)
      ops.push_back(static_cast<OpKind>(k));
  return ops;
}

/// The op applied by the reference to f32 operands (i32 for an integer op).
double apply(OpKind op, std::vector<double> args, DType t = DType::F32) {
  Node n;
  n.op = op;
  n.dtype = t;
  return applyElementwise(n, t, args);
}

DType sampleType(OpKind op) {
  return opInfo(op).operands == OperandTypes::Bool ? DType::Bool : DType::F32;
}

std::vector<double> samples(DType t) {
  if (t == DType::Bool)
    return {0, 1};
  return {-5, -2, -0.5, 0, 0.3, 1, 3};
}

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

} // namespace

TEST(OpsDef, RisingAndFallingOpsAreStrictlyMonotone) {
  for (OpKind op : opsOf(OpClass::Unary)) {
    const OpInfo &info = opInfo(op);
    if (!info.isRising() && !info.isFalling())
      continue;
    std::vector<double> xs = samples(DType::F32);
    for (size_t i = 1; i < xs.size(); ++i) {
      double lo = apply(op, {xs[i - 1]}), hi = apply(op, {xs[i]});
      EXPECT_TRUE(info.isRising() ? lo < hi : lo > hi) << opName(op) << " at " << xs[i];
    }
  }
}

TEST(OpsDef, MonotoneOpsDoNotTurnWhereDefined) {
  for (OpKind op : opsOf(OpClass::Unary)) {
    if (!opInfo(op).has(OpProp::Monotone))
      continue;
    std::vector<double> ys;
    for (double x : samples(DType::F32))
      if (double y = apply(op, {x}); !std::isnan(y))
        ys.push_back(y);
    ASSERT_GE(ys.size(), 2u) << opName(op);
    bool up = true, down = true;
    for (size_t i = 1; i < ys.size(); ++i) {
      up = up && ys[i - 1] <= ys[i];
      down = down && ys[i - 1] >= ys[i];
    }
    EXPECT_TRUE(up || down) << opName(op);
  }
}

TEST(OpsDef, CommutativeIdempotentAndIdentityHold) {
  for (OpKind op : opsOf(OpClass::Binary)) {
    const OpInfo &info = opInfo(op);
    DType t = sampleType(op);
    for (double a : samples(t)) {
      if (info.isIdempotent()) {
        EXPECT_TRUE(same(apply(op, {a, a}, t), a)) << opName(op) << " at " << a;
      }
      if (info.identity) {
        EXPECT_TRUE(same(apply(op, {a, *info.identity}, t), a)) << opName(op) << " at " << a;
      }
      for (double b : samples(t)) {
        if (info.isCommutative()) {
          EXPECT_TRUE(same(apply(op, {a, b}, t), apply(op, {b, a}, t))) << opName(op);
        }
      }
    }
  }
  for (OpKind op : opsOf(OpClass::Unary)) {
    if (!opInfo(op).isIdempotent())
      continue;
    for (double x : samples(sampleType(op)))
      EXPECT_TRUE(same(apply(op, {apply(op, {x})}), apply(op, {x}))) << opName(op) << " at " << x;
  }
}

TEST(OpsDef, LinearOpsAreLinear) {
  // Small integers in f32: every sum and product below is exact.
  for (unsigned k = 0; k < kNumOps; ++k) {
    auto op = static_cast<OpKind>(k);
    const OpInfo &info = opInfo(op);
    if (!info.isLinear())
      continue;
    ASSERT_TRUE(isElementwise(op)) << opName(op);
    if (opClass(op) == OpClass::Unary) {
      EXPECT_EQ(apply(op, {3 + 5}), apply(op, {3}) + apply(op, {5})) << opName(op);
      continue;
    }
    if (info.isAdditive()) {
      EXPECT_EQ(apply(op, {3 + 5, 4 + 2}), apply(op, {3, 4}) + apply(op, {5, 2})) << opName(op);
    } else { // scaling: linear in operand 0 by a constant operand 1
      EXPECT_EQ(apply(op, {3 + 5, 2}), apply(op, {3, 2}) + apply(op, {5, 2})) << opName(op);
    }
  }
}

TEST(OpsDef, CombinersAreBinaryOpsWithAnIdentity) {
  for (unsigned k = 0; k < kNumOps; ++k) {
    auto op = static_cast<OpKind>(k);
    std::optional<OpKind> c = opInfo(op).combiner;
    bool accumulates = opClass(op) == OpClass::Reduce || opClass(op) == OpClass::Scan;
    EXPECT_EQ(c.has_value(), accumulates) << opName(op);
    if (!c)
      continue;
    EXPECT_EQ(opClass(*c), OpClass::Binary) << opName(op);
    EXPECT_TRUE(opInfo(*c).identity) << opName(op);
  }
}

TEST(OpsDef, CallColumnsAgree) {
  for (unsigned k = 0; k < kNumOps; ++k) {
    auto op = static_cast<OpKind>(k);
    const OpInfo &info = opInfo(op);
    EXPECT_GE(info.weight, 1) << opName(op);
    EXPECT_FALSE(std::isnan(info.ulps)) << opName(op) << ": the precise figure is a plain one";
    if (!info.hasFastCall()) { // without a fast call the fast figure is the precise one
      EXPECT_EQ(info.ulpsFast, info.ulps) << opName(op);
    }
    if (!isElementwise(op)) {
      EXPECT_TRUE(info.cuda.empty() && !info.hasFastCall() && info.ulps == 0) << opName(op);
    }
  }
}

TEST(OpsDef, ShapeAttributesAreTheOpsThatTakeAShape) {
  for (unsigned k = 0; k < kNumOps; ++k) {
    auto op = static_cast<OpKind>(k);
    OpClass c = opClass(op);
    bool given = c == OpClass::Input || c == OpClass::Iota || op == OpKind::Rand ||
                 op == OpKind::Randn || op == OpKind::Reshape || op == OpKind::Broadcast;
    EXPECT_EQ(opInfo(op).hasShapeAttr(), given) << opName(op);
  }
}
