// The C++ builder API (ir/Builder.h): expressions build the ops they read as, literals typed.
#include "ir/Builder.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace minijit;

namespace {

/// The expression tree under `id`: `op(a, b)`, `%name` for inputs, `C` for
/// literals (collected in `literals`, left to right).
std::string treeOf(const Graph &g, ValueId id, std::vector<Node> &literals) {
  const Node &n = g.node(id);
  if (n.op == OpKind::Input)
    return "%" + n.name;
  if (n.op == OpKind::Constant) {
    literals.push_back(n);
    return "C";
  }
  std::string s = std::string(opName(n.op)) + "(";
  for (size_t i = 0; i < n.operands.size(); ++i)
    s += (i ? ", " : "") + treeOf(g, n.operands[i], literals);
  return s + ")";
}

} // namespace

TEST(Builder, GeluReadsLikeTheMath) {
  Graph g("gelu");
  Tensor x = g.input("x", DType::F16, {1024});
  Tensor y = 0.5f * x * (1.0f + tanh(0.79788456f * (x + 0.044715f * x * x * x)));
  std::vector<Node> lits;
  EXPECT_EQ(treeOf(g, y.id(), lits),
            "mul(mul(C, %x), add(C, tanh(mul(C, add(%x, mul(mul(mul(C, %x), %x), %x))))))");
  ASSERT_EQ(lits.size(), 4u);
  EXPECT_EQ(lits[0].value, 0.5);
  EXPECT_EQ(lits[1].value, 1.0);
  EXPECT_EQ(lits[2].value, static_cast<double>(0.79788456f));
  EXPECT_EQ(lits[3].value, static_cast<double>(0.044715f));
  for (const Node &l : lits)
    EXPECT_EQ(l.dtype, DType::F16) << "literals take x's dtype";
  EXPECT_EQ(y.dtype(), DType::F16);
  EXPECT_EQ(y.shape(), Shape({1024}));
}

TEST(Builder, ScalarOnEitherSideKeepsOperandOrder) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2});
  std::vector<Node> lits;
  EXPECT_EQ(treeOf(g, (x - 1).id(), lits), "sub(%x, C)");
  EXPECT_EQ(treeOf(g, (1 - x).id(), lits), "sub(C, %x)");
  EXPECT_EQ(treeOf(g, (2 / x).id(), lits), "div(C, %x)");
  EXPECT_EQ(treeOf(g, (x / 2).id(), lits), "div(%x, C)");
  EXPECT_EQ(treeOf(g, (-x).id(), lits), "neg(%x)");
  EXPECT_EQ(treeOf(g, (x + 3).id(), lits), "add(%x, C)");
  EXPECT_EQ(treeOf(g, (3 * x).id(), lits), "mul(C, %x)");
}

TEST(Builder, LiteralsTakeTheIntegerDType) {
  Graph g;
  Tensor i = g.input("i", DType::I32, {2});
  std::vector<Node> lits;
  treeOf(g, (i + 3).id(), lits);
  ASSERT_EQ(lits.size(), 1u);
  EXPECT_EQ(lits[0].dtype, DType::I32);
  EXPECT_EQ(lits[0].value, 3);
}

TEST(Builder, AFractionalLiteralBesideAnIntegerIsAnError) {
  Graph g;
  Tensor i = g.input("i", DType::I32, {2});
  EXPECT_THROW(i * 0.5, GraphError);
}

TEST(Builder, WhereLiteralTakesTheOtherBranchsDType) {
  Graph g;
  Tensor c = g.input("c", DType::Bool, {2});
  Tensor x = g.input("x", DType::BF16, {2});
  std::vector<Node> lits;
  EXPECT_EQ(treeOf(g, where(c, x, -1.0).id(), lits), "where(%c, %x, C)");
  EXPECT_EQ(treeOf(g, where(c, 0.0, x).id(), lits), "where(%c, C, %x)");
  ASSERT_EQ(lits.size(), 2u);
  EXPECT_EQ(lits[0].dtype, DType::BF16);
  EXPECT_EQ(lits[0].value, -1.0);
  EXPECT_EQ(lits[1].dtype, DType::BF16);
}

TEST(Builder, EveryUnaryFunctionBuildsItsOp) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2});
  Tensor b = g.input("b", DType::Bool, {2});
  EXPECT_EQ(neg(x).node().op, OpKind::Neg);
  EXPECT_EQ(abs(x).node().op, OpKind::Abs);
  EXPECT_EQ(exp(x).node().op, OpKind::Exp);
  EXPECT_EQ(exp2(x).node().op, OpKind::Exp2);
  EXPECT_EQ(log(x).node().op, OpKind::Log);
  EXPECT_EQ(log2(x).node().op, OpKind::Log2);
  EXPECT_EQ(sqrt(x).node().op, OpKind::Sqrt);
  EXPECT_EQ(rsqrt(x).node().op, OpKind::Rsqrt);
  EXPECT_EQ(sin(x).node().op, OpKind::Sin);
  EXPECT_EQ(cos(x).node().op, OpKind::Cos);
  EXPECT_EQ(tanh(x).node().op, OpKind::Tanh);
  EXPECT_EQ(sigmoid(x).node().op, OpKind::Sigmoid);
  EXPECT_EQ(erf(x).node().op, OpKind::Erf);
  EXPECT_EQ(relu(x).node().op, OpKind::Relu);
  EXPECT_EQ(recip(x).node().op, OpKind::Recip);
  EXPECT_EQ(floor(x).node().op, OpKind::Floor);
  EXPECT_EQ(ceil(x).node().op, OpKind::Ceil);
  EXPECT_EQ(logicalNot(b).node().op, OpKind::Not);
}

TEST(Builder, EveryBinaryFunctionBuildsItsOp) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2});
  Tensor b = g.input("b", DType::Bool, {2});
  std::vector<Node> lits;
  EXPECT_EQ(treeOf(g, pow(x, 2).id(), lits), "pow(%x, C)");
  EXPECT_EQ(treeOf(g, maximum(x, 0).id(), lits), "maximum(%x, C)");
  EXPECT_EQ(treeOf(g, minimum(x, x).id(), lits), "minimum(%x, %x)");
  EXPECT_EQ(treeOf(g, eq(x, x).id(), lits), "eq(%x, %x)");
  EXPECT_EQ(treeOf(g, ne(x, x).id(), lits), "ne(%x, %x)");
  EXPECT_EQ(treeOf(g, lt(x, x).id(), lits), "lt(%x, %x)");
  EXPECT_EQ(treeOf(g, le(x, x).id(), lits), "le(%x, %x)");
  EXPECT_EQ(treeOf(g, gt(x, x).id(), lits), "gt(%x, %x)");
  EXPECT_EQ(treeOf(g, ge(x, x).id(), lits), "ge(%x, %x)");
  EXPECT_EQ(treeOf(g, logicalAnd(b, b).id(), lits), "and(%b, %b)");
  EXPECT_EQ(treeOf(g, logicalOr(b, b).id(), lits), "or(%b, %b)");
}

TEST(Builder, ReductionsTakeAxesAndKeepdim) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  Tensor s = sum(x, {-1}, true);
  EXPECT_EQ(s.node().op, OpKind::Sum);
  EXPECT_EQ(s.shape(), Shape({2, 3, 1}));
  ASSERT_EQ(s.node().axes.size(), 1u);
  EXPECT_EQ(s.node().axes[0], 2);
  EXPECT_TRUE(s.node().keepdim);
  EXPECT_EQ(mean(x, {0, 1}).shape(), Shape({4}));
  EXPECT_EQ(prod(x).shape(), Shape());
  EXPECT_EQ(min(x, {1}).node().op, OpKind::Min);
}
