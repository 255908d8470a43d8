// The graph IR: type inference in Graph::add, its error messages, names, outputs, the verifier.
#include "ir/Graph.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Verifier.h"

#include "tests/support/Expect.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <string>

using namespace minijit;

namespace {


NodeSpec reduceSpec(OpKind op, ValueId x, DimVector axes, bool keepdim = false) {
  NodeSpec s;
  s.op = op;
  s.operands = {x};
  s.axes = axes;
  s.keepdim = keepdim;
  return s;
}

} // namespace

// ---- type inference

TEST(Graph, InputsAreRecordedInOrder) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {2, 3});
  Tensor y = g.input("y", DType::I32, {4});
  ASSERT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.inputs()[0], x.id());
  EXPECT_EQ(g.inputs()[1], y.id());
  EXPECT_EQ(y.dtype(), DType::I32);
  EXPECT_EQ(y.shape(), Shape({4}));
  EXPECT_EQ(g.node(x.id()).name, "x");
}

TEST(Graph, BinaryOpsBroadcastTheirShapes) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4, 1, 3});
  Tensor b = g.input("b", DType::F32, {5, 1});
  Tensor y = x + b;
  EXPECT_EQ(y.shape(), Shape({4, 5, 3}));
  EXPECT_EQ(y.dtype(), DType::F32);
}

TEST(Graph, ComparisonsGiveBool) {
  Graph g;
  Tensor x = g.input("x", DType::I32, {3});
  Tensor c = lt(x, scalarLike(x, 2));
  EXPECT_EQ(c.dtype(), DType::Bool);
  EXPECT_EQ(c.shape(), Shape({3}));
  EXPECT_EQ(eq(c, c).dtype(), DType::Bool); // comparisons accept any dtype, bool too
}

TEST(Graph, WhereBroadcastsAllThreeOperands) {
  Graph g;
  Tensor c = g.input("c", DType::Bool, {4, 1});
  Tensor a = g.input("a", DType::F16, {3});
  Tensor b = g.input("b", DType::F16, {2, 1, 1});
  Tensor y = where(c, a, b);
  EXPECT_EQ(y.shape(), Shape({2, 4, 3}));
  EXPECT_EQ(y.dtype(), DType::F16);
}

TEST(Graph, CastChangesOnlyTheDType) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 2});
  Tensor y = x.cast(DType::BF16);
  EXPECT_EQ(y.dtype(), DType::BF16);
  EXPECT_EQ(y.shape(), Shape({2, 2}));
  EXPECT_EQ(y.cast(DType::Bool).dtype(), DType::Bool); // cast accepts any dtype
}

TEST(Graph, ReductionAxesAreNormalizedAndSorted) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  ValueId r = g.add(reduceSpec(OpKind::Sum, x.id(), {-1, 0}));
  const Node &n = g.node(r);
  ASSERT_EQ(n.axes.size(), 2u);
  EXPECT_EQ(n.axes[0], 0);
  EXPECT_EQ(n.axes[1], 2);
  EXPECT_EQ(n.shape, Shape({3}));
}

TEST(Graph, KeepdimKeepsReducedAxesAsOnes) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  EXPECT_EQ(sum(x, {1}, true).shape(), Shape({2, 1, 4}));
  EXPECT_EQ(sum(x, {1}, false).shape(), Shape({2, 4}));
}

TEST(Graph, MissingAxesReduceEveryAxis) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  NodeSpec s;
  s.op = OpKind::Max;
  s.operands = {x.id()};
  const Node &n = g.node(g.add(s));
  EXPECT_EQ(n.shape, Shape());
  ASSERT_EQ(n.axes.size(), 2u);
  EXPECT_EQ(max(x, {}, true).shape(), Shape({1, 1}));
}

TEST(Graph, ViewsInferTheirShapes) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  EXPECT_EQ(x.permute({2, 0, 1}).shape(), Shape({4, 2, 3}));
  EXPECT_EQ(x.reshape({6, 4}).shape(), Shape({6, 4}));
  EXPECT_EQ(x.broadcast({5, 2, 3, 4}).shape(), Shape({5, 2, 3, 4}));
  Tensor c = g.input("c", DType::F32, {3, 1});
  EXPECT_EQ(c.broadcast({2, 3, 7}).shape(), Shape({2, 3, 7}));
}

TEST(Graph, MatmulBroadcastsBatchDims) {
  Graph g;
  Tensor a = g.input("a", DType::F32, {2, 1, 8, 16});
  Tensor b = g.input("b", DType::F32, {5, 16, 4});
  EXPECT_EQ(matmul(a, b).shape(), Shape({2, 5, 8, 4}));
}

TEST(Graph, FreshNamesAreTemporaries) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2});
  Tensor y = exp(x);
  Tensor z = exp(y);
  EXPECT_EQ(y.node().name, "t0");
  EXPECT_EQ(z.node().name, "t1");
  EXPECT_EQ(g.lookup("t1"), z.id());
  EXPECT_FALSE(g.lookup("t2").has_value());
}

TEST(Graph, FreshNamesSkipTakenNames) {
  Graph g;
  Tensor x = g.input("t0", DType::F32, {2});
  EXPECT_EQ(exp(x).node().name, "t1");
}

TEST(Graph, FloatLiteralsKeepF32Precision) {
  Graph g;
  ValueId c = g.constant(0.1, DType::F16);
  EXPECT_EQ(g.node(c).value, static_cast<double>(0.1f));
  EXPECT_EQ(g.node(c).dtype, DType::F16);
  EXPECT_TRUE(g.node(c).name.empty());
  EXPECT_EQ(g.node(c).shape, Shape());
}

TEST(Graph, InfiniteLiteralsAreAccepted) {
  Graph g;
  ValueId c = g.constant(-INFINITY, DType::F32);
  EXPECT_EQ(g.node(c).value, -INFINITY);
}

TEST(Graph, RenameAndNamed) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2});
  Tensor y = exp(x).named("y");
  EXPECT_EQ(y.node().name, "y");
  EXPECT_EQ(g.lookup("y"), y.id());
  EXPECT_FALSE(g.lookup("t0").has_value());
  g.rename(y.id(), "y"); // renaming to its own name is fine
  EXPECT_EQ(g.lookup("y"), y.id());
}

TEST(Graph, OutputWithANameRenames) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2});
  Tensor y = exp(x);
  g.output(y, "out");
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0], y.id());
  EXPECT_EQ(y.node().name, "out");
}

// ---- error messages of Graph::add

TEST(GraphErrors, MixedDTypesSuggestACast) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4});
  Tensor h = g.input("h", DType::F16, {4});
  EXPECT_EQ(
      graphErrorOf([&] { x + h; }),
      "add: operands have different dtypes f32 (%x) and f16 (%h); insert a cast (e.g. "
      "`h.cast(DType::F32)`)");
}

TEST(GraphErrors, BoolWhereAFloatIsNeeded) {
  Graph g;
  Tensor b = g.input("b", DType::Bool, {4});
  EXPECT_EQ(graphErrorOf([&] { exp(b); }),
            "exp: operand %b has dtype bool but needs a floating-point type (f32, f16 or bf16); "
            "cast it first (e.g. `b.cast(DType::F32)`)");
}

TEST(GraphErrors, IntegerWhereAFloatIsNeeded) {
  Graph g;
  Tensor i = g.input("i", DType::I32, {4});
  EXPECT_EQ(graphErrorOf([&] { mean(i); }),
            "mean: operand %i has dtype i32 but needs a floating-point type (f32, f16 or bf16); "
            "cast it first (e.g. `i.cast(DType::F32)`)");
}

TEST(GraphErrors, BoolWhereANumberIsNeeded) {
  Graph g;
  Tensor b = g.input("b", DType::Bool, {4});
  EXPECT_EQ(graphErrorOf([&] { b + b; }),
            "add: operand %b has dtype bool but needs a numeric type (f32, f16, bf16, i32 or i64); "
            "cast it first (e.g. `b.cast(DType::I32)`)");
}

TEST(GraphErrors, NumberWhereABoolIsNeeded) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4});
  EXPECT_EQ(graphErrorOf([&] { logicalNot(x); }),
            "not: operand %x has dtype f32 but needs bool; compare first (e.g. `ne(x, 0)`)");
  EXPECT_EQ(graphErrorOf([&] { logicalAnd(x, x); }),
            "and: operand %x has dtype f32 but needs bool; compare first (e.g. `ne(x, 0)`)");
}

TEST(GraphErrors, ShapesThatDoNotBroadcast) {
  Graph g;
  Tensor a = g.input("a", DType::F32, {4096, 1024});
  Tensor b = g.input("b", DType::F32, {1024, 4096});
  EXPECT_EQ(graphErrorOf([&] { a - b; }),
            "sub: shapes [4096, 1024] and [1024, 4096] do not broadcast (dim 0: 4096 vs 1024)");
}

TEST(GraphErrors, AxisOutOfRange) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] { sum(x, {2}); }),
            "sum: axis 2 is out of range for rank 2 (valid: -2..1)");
  EXPECT_EQ(graphErrorOf([&] { max(x, {-3}); }),
            "max: axis -3 is out of range for rank 2 (valid: -2..1)");
}

TEST(GraphErrors, DuplicateAxis) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] { sum(x, {1, -1}); }), "sum: axis 1 appears twice in axes=[1, -1]");
}

TEST(GraphErrors, EmptyAxesList) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] { g.add(reduceSpec(OpKind::Prod, x.id(), {})); }),
            "prod: axes=[] reduces nothing; leave axes out to reduce every axis");
}

TEST(GraphErrors, ReshapeElementCount) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] { x.reshape({4}); }),
            "reshape: cannot reshape [2, 3] (6 elements) to [4] (4 elements)");
}

TEST(GraphErrors, ReshapeToABadShape) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] {
              x.reshape({6, -2});
            }),
            "reshape: shape=[6, -2] has -2 at dim 1; a dimension is at least 1, or -1 for the one "
            "inferred from the element count");
  EXPECT_EQ(graphErrorOf([&] { x.reshape({6, 0}); }),
            "reshape: cannot reshape [2, 3] (6 elements) to [6, 0] (0 elements)");
}

TEST(GraphErrors, BadPermutation) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] {
              x.permute({0, 0});
            }),
            "permute: perm=[0, 0] is not a permutation of 0..1 (operand shape [2, 3])");
  EXPECT_EQ(graphErrorOf([&] { x.permute({0}); }),
            "permute: perm=[0] is not a permutation of 0..1 (operand shape [2, 3])");
  EXPECT_EQ(graphErrorOf([&] {
              x.permute({1, 2});
            }),
            "permute: perm=[1, 2] is not a permutation of 0..1 (operand shape [2, 3])");
  EXPECT_EQ(graphErrorOf([&] {
              x.permute({-1, 0});
            }),
            "permute: perm=[-1, 0] is not a permutation of 0..1 (operand shape [2, 3])");
}

TEST(GraphErrors, BroadcastThatDoesNotFit) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] {
              x.broadcast({4, 3});
            }),
            "broadcast: [2, 3] does not broadcast to [4, 3] (dim 0: 2 vs 4)");
  EXPECT_EQ(graphErrorOf([&] {
              x.broadcast({5, 2, 4});
            }),
            "broadcast: [2, 3] does not broadcast to [5, 2, 4] (dim 2: 3 vs 4)");
}

TEST(GraphErrors, BroadcastToFewerDims) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] { x.broadcast({3}); }),
            "broadcast: [2, 3] has more dimensions than the target [3]");
}

TEST(GraphErrors, MatmulInnerDimMismatch) {
  Graph g;
  Tensor a = g.input("a", DType::F32, {2, 3});
  Tensor b = g.input("b", DType::F32, {4, 5});
  EXPECT_EQ(graphErrorOf([&] { matmul(a, b); }),
            "matmul: inner dimensions do not match: [2, 3] @ [4, 5] (3 vs 4)");
}

TEST(GraphErrors, MatmulRankBelowTwo) {
  Graph g;
  Tensor v = g.input("v", DType::F32, {3});
  Tensor m = g.input("m", DType::F32, {3, 4});
  EXPECT_EQ(graphErrorOf([&] { matmul(v, m); }),
            "matmul: operands must have rank >= 2, got [3] and [3, 4]; reshape a vector to [1, n] "
            "or [n, 1]");
}

TEST(GraphErrors, MatmulBatchDimsMustBroadcast) {
  Graph g;
  Tensor a = g.input("a", DType::F32, {2, 3, 4});
  Tensor b = g.input("b", DType::F32, {5, 4, 6});
  EXPECT_EQ(graphErrorOf([&] { matmul(a, b); }),
            "matmul (batch dimensions): shapes [2] and [5] do not broadcast (dim 0: 2 vs 5)");
}

TEST(GraphErrors, MatmulNeedsFloats) {
  Graph g;
  Tensor a = g.input("a", DType::I32, {2, 2});
  EXPECT_EQ(graphErrorOf([&] { matmul(a, a); }),
            "matmul: operand %a has dtype i32 but needs a floating-point type (f32, f16 or bf16); "
            "cast it first (e.g. `a.cast(DType::F32)`)");
}

TEST(GraphErrors, WhereWithANonBoolCondition) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4});
  EXPECT_EQ(graphErrorOf([&] { where(x, x, x); }),
            "where: condition %x has dtype f32 but must be bool; compare first (e.g. `ne(x, 0)`)");
}

TEST(GraphErrors, WhereWithMixedBranches) {
  Graph g;
  Tensor c = g.input("c", DType::Bool, {4});
  Tensor x = g.input("x", DType::F32, {4});
  Tensor i = g.input("i", DType::I32, {4});
  EXPECT_EQ(graphErrorOf([&] { where(c, x, i); }),
            "where: operands have different dtypes f32 (%x) and i32 (%i); insert a cast (e.g. "
            "`i.cast(DType::F32)`)");
}

TEST(GraphErrors, DuplicateNames) {
  Graph g("g1");
  Tensor x = g.input("x", DType::F32, {4});
  EXPECT_EQ(graphErrorOf([&] { g.input("x", DType::F32, {4}); }),
            "%x is already defined in graph 'g1'");
  exp(x).named("y");
  EXPECT_EQ(graphErrorOf([&] { x.named("y"); }), "%y is already defined in graph 'g1'");
}

TEST(GraphErrors, InvalidValueNames) {
  Graph g;
  EXPECT_EQ(graphErrorOf([&] { g.input("a b", DType::F32, {4}); }),
            "'a b' is not a valid value name (letters, digits, '_' and '.')");
  Tensor x = g.input("x", DType::F32, {4});
  EXPECT_EQ(graphErrorOf([&] { x.named("x-1"); }),
            "'x-1' is not a valid value name (letters, digits, '_' and '.')");
  EXPECT_EQ(graphErrorOf([&] { x.named(""); }),
            "'' is not a valid value name (letters, digits, '_' and '.')");
}

TEST(GraphErrors, InvalidGraphNames) {
  EXPECT_EQ(graphErrorOf([] { Graph g("1abc"); }),
            "'1abc' is not a valid graph name (a letter or '_', then letters, digits, '_' and "
            "'.')");
  EXPECT_EQ(graphErrorOf([] { Graph g(""); }),
            "'' is not a valid graph name (a letter or '_', then letters, digits, '_' and '.')");
  EXPECT_EQ(graphErrorOf([] { Graph g(".x"); }),
            "'.x' is not a valid graph name (a letter or '_', then letters, digits, '_' and '.')");
  EXPECT_NO_THROW(Graph("_a.b2"));
}

TEST(GraphErrors, InputNeedsANameAndAValidShape) {
  Graph g;
  NodeSpec s;
  s.op = OpKind::Input;
  s.shape = Shape({2});
  EXPECT_EQ(graphErrorOf([&] { g.add(s); }), "input: a graph argument needs a name");
  EXPECT_EQ(graphErrorOf([&] {
              g.input("x", DType::F32, {2, -1});
            }),
            "input %x: dimension 1 of [2, -1] is -1; dimensions must be at least 0");
}

TEST(GraphErrors, OperandThatIsNotAValue) {
  Graph g;
  NodeSpec s;
  s.op = OpKind::Exp;
  s.operands = {7};
  EXPECT_EQ(graphErrorOf([&] { g.add(s); }), "exp: operand 7 is not a value of graph 'main'");
}

TEST(GraphErrors, WrongOperandCount) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4});
  NodeSpec s;
  s.op = OpKind::Exp;
  s.operands = {x.id(), x.id()};
  EXPECT_EQ(graphErrorOf([&] { g.add(s); }), "exp: expects 1 operand, got 2");
  s.op = OpKind::Add;
  s.operands = {x.id()};
  EXPECT_EQ(graphErrorOf([&] { g.add(s); }), "add: expects 2 operands, got 1");
}

TEST(GraphErrors, LiteralsThatDoNotFitTheirDType) {
  Graph g;
  EXPECT_NE(graphErrorOf([&] { g.constant(0.5, DType::I32); }).find("is not an i32 value"),
            std::string::npos);
  EXPECT_NE(graphErrorOf([&] { g.constant(3e9, DType::I32); }).find("is not an i32 value"),
            std::string::npos);
  EXPECT_NE(graphErrorOf([&] { g.constant(NAN, DType::I32); }).find("is not an i32 value"),
            std::string::npos);
  EXPECT_NE(graphErrorOf([&] {
              g.constant(2, DType::Bool);
            }).find("is not a bool value (use true, false, 1 or 0)"),
            std::string::npos);
  EXPECT_NE(graphErrorOf([&] { g.constant(1e39, DType::F32); }).find("overflows f32"),
            std::string::npos);
  EXPECT_NO_THROW(g.constant(-2147483648.0, DType::I32));
  EXPECT_NO_THROW(g.constant(FLT_MAX, DType::F32));
}

TEST(GraphErrors, LiteralMessagesShowTheNumberAsWritten) {
  // Found at 8a20cd2: formatv("{0}", double) printed "literal 0.50 is not an
  // i32 value" and 1e39 as a 40-digit integer.
  Graph g;
  EXPECT_EQ(graphErrorOf([&] { g.constant(0.5, DType::I32); }), "literal 0.5 is not an i32 value");
  EXPECT_EQ(graphErrorOf([&] { g.constant(2, DType::Bool); }),
            "literal 2 is not a bool value (use true, false, 1 or 0)");
  EXPECT_EQ(graphErrorOf([&] { g.constant(1e39, DType::F32); }), "literal 1e+39 overflows f32");
}

TEST(GraphErrors, OutputOfALiteral) {
  Graph g;
  ValueId c = g.constant(1, DType::F32);
  EXPECT_EQ(graphErrorOf([&] { g.output(c); }),
            "output: a literal cannot be a graph result; compute it from an input");
}

TEST(GraphErrors, OutputOfAnotherGraphsTensor) {
  Graph g, h;
  Tensor x = h.input("x", DType::F32, {2});
  EXPECT_EQ(graphErrorOf([&] { g.output(x); }), "output: the tensor belongs to another graph");
  EXPECT_EQ(graphErrorOf([&] { g.output(42); }), "output: 42 is not a value of graph 'main'");
}

TEST(GraphErrors, LiteralsHaveNoName) {
  Graph g;
  ValueId c = g.constant(1, DType::F32);
  EXPECT_EQ(graphErrorOf([&] { g.rename(c, "c"); }), "a literal has no name");
}

TEST(GraphErrors, OperandsOfDifferentGraphs) {
  Graph g("g"), h("h");
  Tensor x = g.input("x", DType::F32, {2});
  Tensor y = h.input("y", DType::F32, {2});
  EXPECT_EQ(graphErrorOf([&] { x + y; }),
            "add: the second operand belongs to graph 'h' but the first to graph 'g'; a graph's "
            "values are built from its own inputs");
}

TEST(GraphErrors, ResultShapeMustBeValid) {
  Graph g;
  Tensor a = g.input("a", DType::F32, {1 << 20, 1});
  Tensor b = g.input("b", DType::F32, {1, (1 << 20) + 1});
  std::string msg = graphErrorOf([&] { a + b; });
  EXPECT_EQ(msg, "add: shape [1048576, 1048577] has more than 2^40 elements, the largest tensor "
                 "minijit accepts");
}

// ---- verifier

TEST(Verifier, AcceptsAValidGraph) {
  Graph g("ok");
  Tensor x = g.input("x", DType::F32, {4, 8});
  g.output(x - max(x, {1}, true));
  EXPECT_NO_THROW(verifyGraph(g));
}

TEST(Verifier, RejectsAGraphWithoutOutputs) {
  Graph g("lonely");
  Tensor x = g.input("x", DType::F32, {4});
  exp(x);
  EXPECT_EQ(graphErrorOf([&] { verifyGraph(g); }), "graph 'lonely' has no outputs");
}

TEST(Verifier, AcceptsAReductionOfAScalar) {
  // and verifyGraph re-adds it with axes=[] which Graph::add rejects:
  // "sum: axes=[] reduces nothing; leave axes out to reduce every axis".
  // compileGraph verifies first, so such a graph cannot be compiled.
  Graph g("s");
  Tensor x = g.input("x", DType::F32, {});
  g.output(sum(x));
  EXPECT_NO_THROW(verifyGraph(g));
}
