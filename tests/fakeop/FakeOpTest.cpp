// The recipe of docs/ARCHITECTURE.md ("How to add an op"), checked: this
// build has one op more, fake_cbrt (the cube root), added by the four places
// the recipe names and nothing else: its line in ir/Ops.def (its Cuda column
// cbrtf, Rising, 1 ulp), its reference meaning (applyElementwise,
// ir/Evaluator.cpp), its gradient (ir/Autodiff.cpp) and its CUDA expression
// (elementwiseExpr, compiler/emit/ExprEmitter.cpp), each under
// MINIJIT_TEST_FAKE_OP. The IR and the compiler are compiled again for it
// with -Werror=switch (tests/fakeop/CMakeLists.txt): a switch over the ops
// that lists every op and misses this one breaks the build; these tests
// find the stages that would treat it wrongly behind a default.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "ir/Builder.h"
#include "ir/ErrorBound.h"
#include "ir/Evaluator.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace minijit;

namespace {

const char *kText = "graph g(%x: f32[5]) {\n"
                    "  %y = fake_cbrt %x\n"
                    "  return %y\n"
                    "}\n";

HostTensor inputs() {
  float xs[] = {-8, -1, 0.125f, 1, 27};
  return HostTensor::fromData(Shape({5}), std::span<const float>(xs));
}

} // namespace

TEST(FakeOp, IsAnOpOfThisBuild) {
  std::optional<OpKind> op = parseOpName("fake_cbrt");
  ASSERT_TRUE(op);
  EXPECT_EQ(opName(*op), "fake_cbrt");
  EXPECT_EQ(opClass(*op), OpClass::Unary);
  EXPECT_TRUE(isElementwise(*op));
}

TEST(FakeOp, ParsesAndPrints) {
  std::vector<Graph> gs = parseGraphs(kText);
  ASSERT_EQ(gs.size(), 1u);
  std::string printed = printGraph(gs[0]);
  EXPECT_NE(printed.find("%y = fake_cbrt %x : f32[5]"), std::string::npos) << printed;
  EXPECT_EQ(printGraph(parseGraphs(printed)[0]), printed); // it reads back
}

TEST(FakeOp, Evaluates) {
  Graph g = parseGraphs(kText)[0];
  HostTensor y = evaluate(g, {inputs()})[0];
  float want[] = {-2, -1, 0.5f, 1, 3};
  for (int i = 0; i < 5; ++i)
    EXPECT_FLOAT_EQ(y.get(i), want[i]) << i;
}

TEST(FakeOp, Differentiates) {
  // d/dx sum(cbrt(x)) = 1 / (3 cbrt(x)^2)
  Graph g = parseGraphs("graph g(%x: f32[5]) {\n"
                        "  %y = fake_cbrt %x\n"
                        "  %l = sum %y\n"
                        "  %d = grad %l, %x\n"
                        "  return %d\n"
                        "}\n")[0];
  HostTensor d = evaluate(g, {inputs()})[0];
  float want[] = {1.0f / 12, 1.0f / 3, 4.0f / 3, 1.0f / 3, 1.0f / 27};
  for (int i = 0; i < 5; ++i)
    EXPECT_NEAR(d.get(i), want[i], 1e-6) << i;
}

TEST(FakeOp, ItsErrorBoundComesFromItsLine) {
  // Rising: bounded by the reference at the ends of its operand's
  // interval, plus its 1 ulp (Ops.def); no rule in ErrorBoundRules.cpp.
  Graph g = parseGraphs("graph g(%x: f32[5]) {\n"
                        "  %e = exp %x\n"
                        "  %y = fake_cbrt %e\n"
                        "  return %y\n"
                        "}\n")[0];
  BoundedOutputs r = evaluateWithBounds(g, {inputs()});
  for (int64_t i = 0; i < 5; ++i) {
    double b = r.bounds[0].get(i), y = r.values[0].get(i);
    EXPECT_TRUE(std::isfinite(b)) << i;
    EXPECT_GT(b, 0x1p-23 * std::fabs(y)) << i; // at least its own ulp
    EXPECT_LT(b, 0x1p-19 * std::fabs(y)) << i; // and a few of exp's
  }
}

TEST(FakeOp, EmitsCuda) {
  for (const char *dtype : {"f32", "f16"}) {
    std::string text = std::string("graph g(%x: ") + dtype + "[1024]) {\n" +
                       "  %y = fake_cbrt %x\n  %z = mul %y, 2\n  return %z\n}\n";
    CompileOptions opt;
    opt.stopAfter = Stage::Cuda;
    CompiledGraph c = compileGraph(parseGraphs(text)[0], opt);
    ASSERT_EQ(c.detail->kernels.size(), 1u) << dtype; // fused like any elementwise op
    const std::string &cuda = c.detail->kernels[0].cuda;
    EXPECT_NE(cuda.find("cbrtf("), std::string::npos) << cuda;
  }
}

TEST(FakeOp, ArgmaxRewritesSeeItRise) {
  // Ops.def calls it Rising: the argmax of fake_cbrt(x) is the argmax of x.
  Graph g = parseGraphs("graph g(%x: f32[64, 1000]) {\n"
                        "  %y = fake_cbrt %x\n"
                        "  %a = argmax %y axis=1\n"
                        "  return %a\n"
                        "}\n")[0];
  CompileOptions opt;
  opt.stopAfter = Stage::Graph;
  CompiledGraph c = compileGraph(g, opt);
  std::string printed = printGraph(c.graph);
  EXPECT_EQ(printed.find("fake_cbrt"), std::string::npos) << printed;
}
