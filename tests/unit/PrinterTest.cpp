// The canonical text form: exact statements, literal spellings and operand text.
#include "ir/Printer.h"
#include "ir/Builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

using namespace minijit;

TEST(Printer, SoftmaxPrintsEveryStatementWithItsType) {
  Graph g("softmax");
  Tensor x = g.input("x", DType::F32, {4096, 1024});
  Tensor m = max(x, {1}, true).named("m"); // takes t0 first, then is renamed
  Tensor e = exp(x - m);
  g.output(e / sum(e, {1}, true), "y");
  EXPECT_EQ(printGraph(g), "graph softmax(%x: f32[4096, 1024]) {\n"
                           "  %m = max %x axes=[1] keepdim=true : f32[4096, 1]\n"
                           "  %t1 = sub %x, %m : f32[4096, 1024]\n"
                           "  %t2 = exp %t1 : f32[4096, 1024]\n"
                           "  %t3 = sum %t2 axes=[1] keepdim=true : f32[4096, 1]\n"
                           "  %y = div %t2, %t3 : f32[4096, 1024]\n"
                           "  return %y\n"
                           "}\n");
}

TEST(Printer, WritesToAStandardStream) {
  Graph g("neg");
  Tensor x = g.input("x", DType::F16, {3});
  g.output(-x, "y");
  std::ostringstream os;
  printGraph(os, g);
  EXPECT_EQ(os.str(), printGraph(g));
}

TEST(Printer, AttributesOfViewsCastsAndReductions) {
  Graph g("v");
  Tensor x = g.input("x", DType::F32, {2, 3});
  Tensor p = x.permute({1, 0}).named("p");
  Tensor r = p.reshape({6}).named("r");
  Tensor b = r.broadcast({2, 6}).named("b");
  Tensor c = b.cast(DType::BF16).named("c");
  Tensor s = sum(c, {0}).named("s");
  g.output(s);
  EXPECT_EQ(printGraph(g), "graph v(%x: f32[2, 3]) {\n"
                           "  %p = permute %x perm=[1, 0] : f32[3, 2]\n"
                           "  %r = reshape %p shape=[6] : f32[6]\n"
                           "  %b = broadcast %r shape=[2, 6] : f32[2, 6]\n"
                           "  %c = cast %b to=bf16 : bf16[2, 6]\n"
                           "  %s = sum %c axes=[0] : bf16[6]\n"
                           "  return %s\n"
                           "}\n");
}

TEST(Printer, ScalarArgumentsAndSeveralResults) {
  Graph g("two");
  Tensor a = g.input("a", DType::I32, {});
  Tensor b = g.input("b", DType::Bool, {3});
  g.output(a + 1, "p");
  g.output(logicalNot(b), "q");
  EXPECT_EQ(printGraph(g), "graph two(%a: i32[], %b: bool[3]) {\n"
                           "  %p = add %a, 1 : i32[]\n"
                           "  %q = not %b : bool[3]\n"
                           "  return %p, %q\n"
                           "}\n");
}

TEST(Printer, NodeAndOperandText) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4});
  Tensor y = x + 0.25;
  EXPECT_EQ(nodeText(g, y.id()), "%t0 = add %x, 0.25 : f32[4]");
  EXPECT_EQ(operandText(g, x.id()), "%x");
  EXPECT_EQ(operandText(g, y.node().operands[1]), "0.25");
  EXPECT_EQ(typeText(DType::F16, Shape({2, 3})), "f16[2, 3]");
  EXPECT_EQ(typeText(DType::F32, Shape()), "f32[]");
}

TEST(Printer, LiteralSpellings) {
  EXPECT_EQ(literalText(INFINITY, DType::F32), "inf");
  EXPECT_EQ(literalText(-INFINITY, DType::F16), "-inf");
  EXPECT_EQ(literalText(NAN, DType::F32), "nan");
  EXPECT_EQ(literalText(1, DType::Bool), "true");
  EXPECT_EQ(literalText(0, DType::Bool), "false");
  EXPECT_EQ(literalText(-2147483648.0, DType::I32), "-2147483648");
  EXPECT_EQ(literalText(3, DType::I32), "3");
  EXPECT_EQ(literalText(1e-05, DType::F32), "1e-05");
  EXPECT_EQ(literalText(0.5, DType::F32), "0.5");
  EXPECT_EQ(literalText(-2.5, DType::F32), "-2.5");
  EXPECT_EQ(literalText(1, DType::F32), "1");
}

TEST(Printer, FloatLiteralsAreTheShortestTextThatReadsBack) {
  EXPECT_EQ(literalText(static_cast<float>(1.0 / 3), DType::F32), "0.33333334");
  EXPECT_EQ(literalText(static_cast<float>(0.1), DType::F32), "0.1");
  EXPECT_EQ(literalText(static_cast<float>(1e20), DType::F32), "1e+20");
  EXPECT_EQ(literalText(static_cast<float>(16777217.0), DType::F32), "16777216");
}

TEST(Printer, WholeNumbersPrintAsIntegers) {
  EXPECT_EQ(literalText(100, DType::F32), "100");
  EXPECT_EQ(literalText(-3, DType::F16), "-3");
  EXPECT_EQ(literalText(1e20, DType::F32), "1e+20");
}

TEST(Printer, NegativeZeroKeepsItsSign) {
  // so -0.0 prints as "0" and a literal -0 reads back as +0: x + -0 is x, but
  // x + 0 turns x = -0 into +0. (Introduced with the whole-number rule in
  // ir/Printer.cpp after 8a20cd2; at 8a20cd2 it printed "-0".)
  EXPECT_EQ(literalText(-0.0, DType::F32), "-0");
}
