// The C++ API as a user meets it (ir/Builder.h, ir/Graph.h): misuse is a
// GraphError in the C++ spelling, every op is a free function, axes come from
// any integer range, and the composites build the nodes a user would write.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Printer.h"

#include "tests/support/Expect.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

using namespace minijit;

namespace {

/// The ops of `g` from node `from` on, as "op(operands)" lines without names,
/// so two graphs built with different names can be compared.
std::string opsOf(const Graph &g, ValueId from = 0) {
  std::string s;
  for (ValueId id = from; id < static_cast<ValueId>(g.size()); ++id) {
    const Node &n = g.node(id);
    s += std::string(opName(n.op)) + "(";
    for (ValueId o : n.operands)
      s += std::to_string(o - from) + " ";
    s += ")" + n.shape.str();
    if (n.op == OpKind::Constant)
      s += "=" + std::to_string(n.value);
    if (n.cls() == OpClass::Reduce)
      s += " axes=" + Shape(n.axes).str() + (n.keepdim ? " keepdim" : "");
    if (n.op == OpKind::Permute)
      s += " perm=" + Shape(n.perm).str();
    s += "\n";
  }
  return s;
}

} // namespace

// ---- misuse

TEST(ApiErrors, EmptyTensorInAnOperator) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4});
  Tensor t;
  EXPECT_TRUE(t.empty());
  EXPECT_FALSE(static_cast<bool>(t));
  EXPECT_EQ(graphErrorOf([&] { t + 1.0; }),
            "add: the first operand is an empty Tensor (default-constructed, it belongs to no "
            "graph)");
  EXPECT_EQ(graphErrorOf([&] { 2.0 * t; }),
            "mul: the second operand is an empty Tensor (default-constructed, it belongs to no "
            "graph)");
  EXPECT_EQ(graphErrorOf([&] { x + t; }),
            "add: the second operand is an empty Tensor (default-constructed, it belongs to no "
            "graph)");
  EXPECT_EQ(graphErrorOf([&] { where(t, x, x); }),
            "where: the first operand is an empty Tensor (default-constructed, it belongs to no "
            "graph)");
}

TEST(ApiErrors, EmptyTensorInAFunctionOrMember) {
  Tensor t;
  const std::string empty = "an empty Tensor (default-constructed, it belongs to no graph)";
  EXPECT_EQ(graphErrorOf([&] { exp(t); }), "exp: the first operand is " + empty);
  EXPECT_EQ(graphErrorOf([&] { sum(t, {0}); }), "sum: the first operand is " + empty);
  EXPECT_EQ(graphErrorOf([&] { t.cast(DType::F16); }), "cast: the first operand is " + empty);
  EXPECT_EQ(graphErrorOf([&] { t.transpose(); }), "transpose: the first operand is " + empty);
  EXPECT_EQ(graphErrorOf([&] { reshape(t, {2, 2}); }), "reshape: the first operand is " + empty);
  EXPECT_EQ(graphErrorOf([&] { softmax(t); }), "max: the first operand is " + empty);
  EXPECT_EQ(graphErrorOf([&] { t.shape(); }),
            "an empty Tensor (default-constructed) belongs to no graph; make tensors with "
            "Graph::input or an op on another tensor");
}

TEST(ApiErrors, EmptyTensorAsAnOutput) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {4});
  EXPECT_EQ(graphErrorOf([&] { g.output(Tensor()); }),
            "output: the tensor is empty (default-constructed)");
  EXPECT_EQ(graphErrorOf([&] { g.update(x, Tensor()); }),
            "update: the tensor is empty (default-constructed)");
}

TEST(ApiErrors, TensorsOfTwoGraphs) {
  Graph g("g"), h("h");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor y = h.input("y", DType::F32, {4});
  Tensor c = h.input("c", DType::Bool, {4});
  EXPECT_EQ(graphErrorOf([&] { matmul(x, y); }),
            "matmul: the second operand belongs to graph 'h' but the first to graph 'g'; a "
            "graph's values are built from its own inputs");
  EXPECT_EQ(graphErrorOf([&] { where(c, y, x); }),
            "where: the third operand belongs to graph 'g' but the first to graph 'h'; a graph's "
            "values are built from its own inputs");
  EXPECT_EQ(graphErrorOf([&] { grad(sum(y), x); }),
            "grad: the second operand belongs to graph 'g' but the first to graph 'h'; a graph's "
            "values are built from its own inputs");
  Tensor w = g.input("w", DType::F32, {4});
  EXPECT_EQ(graphErrorOf([&] { g.update(w, y); }), "update: the tensor belongs to another graph");
  EXPECT_EQ(graphErrorOf([&] { g.output(y, "out"); }),
            "output: the tensor belongs to another graph");
  EXPECT_EQ(graphErrorOf([&] { g.update(Tensor(), w); }),
            "update: the tensor is empty (default-constructed)");
  // the node-level API checks what the builders would
  NodeSpec none;
  none.op = OpKind::Concat;
  EXPECT_EQ(graphErrorOf([&] { g.add(none); }), "concat: expects at least one operand, got 0");
}

TEST(ApiErrors, AnInputReturnedUnderAnotherNameKeepsItsName) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  EXPECT_EQ(graphErrorOf([&] { g.output(x, "y"); }),
            "output: %x is an argument of graph 'g'; returning it as %y would rename the argument, "
            "so it is returned as %x or not at all");
  EXPECT_EQ(x.node().name, "x");
  EXPECT_TRUE(g.outputs().empty());
  g.output(x, "x"); // its own name is fine
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.node(g.outputs()[0]).name, "x");
}

TEST(ApiErrors, HintsAreCxxWithTheRealNames) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor b = g.input("b", DType::BF16, {4});
  Tensor w = g.input("w", DType::F16, {4});
  // The graph has its own %b: the hint names the operand that needs the cast.
  EXPECT_EQ(graphErrorOf([&] { w * b; }),
            "mul: operands have different dtypes f16 (%w) and bf16 (%b); insert a cast (e.g. "
            "`b.cast(DType::F16)`)");
  EXPECT_EQ(graphErrorOf([&] { x - w; }),
            "sub: operands have different dtypes f32 (%x) and f16 (%w); insert a cast (e.g. "
            "`w.cast(DType::F32)`)");
  EXPECT_EQ(graphErrorOf([&] { grad(x * 2, x); }),
            "grad: the loss %t0 has shape [4] (4 elements) but must have one element; reduce it "
            "first (e.g. `mean(t0)`) or use vjp");
}

TEST(ApiErrors, TransposeOutOfRange) {
  Graph g;
  Tensor v = g.input("v", DType::F32, {4});
  Tensor m = g.input("m", DType::F32, {2, 3});
  EXPECT_EQ(graphErrorOf([&] { v.transpose(); }),
            "transpose: %v has shape [4]; swapping the last two axes needs rank >= 2 (reshape a "
            "vector to [1, n] or [n, 1])");
  EXPECT_EQ(graphErrorOf([&] { transpose(m, 0, 2); }),
            "transpose: axis 2 is out of range for rank 2 (valid: -2..1)");
}

// ---- one API: free functions, members, axes from any range

TEST(Api, ViewsAreFreeFunctionsAndMembers) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  EXPECT_EQ(reshape(x, {6, 4}).shape(), Shape({6, 4}));
  EXPECT_EQ(x.reshape({6, 4}).shape(), Shape({6, 4}));
  EXPECT_EQ(permute(x, {2, 0, 1}).shape(), Shape({4, 2, 3}));
  EXPECT_EQ(broadcast(x, {5, 2, 3, 4}).shape(), Shape({5, 2, 3, 4}));
  EXPECT_EQ(cast(x, DType::BF16).dtype(), DType::BF16);
  Tensor t = transpose(x);
  EXPECT_EQ(t.shape(), Shape({2, 4, 3}));
  EXPECT_EQ(t.node().perm, DimVector({0, 2, 1}));
  EXPECT_EQ(x.transpose().node().perm, DimVector({0, 2, 1}));
  EXPECT_EQ(transpose(x, 0, -1).node().perm, DimVector({2, 1, 0}));
  EXPECT_EQ(x.transpose(1, 0).shape(), Shape({3, 2, 4}));
}

TEST(Api, AxesFromAnyIntegerRange) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  std::vector<int> vi = {0, 2};
  std::vector<int64_t> vl = {0, 2};
  std::array<int, 2> ai = {0, 2};
  int64_t raw[] = {0, 2};
  std::span<const int64_t> sp(raw);
  for (const Tensor &t : {sum(x, vi), sum(x, vl), sum(x, ai), sum(x, sp), sum(x, {0, 2}),
                          sum(x, {int64_t(0), int64_t(-1)})}) {
    EXPECT_EQ(t.shape(), Shape({3}));
    EXPECT_EQ(t.node().axes, DimVector({0, 2}));
  }
  EXPECT_EQ(mean(x, std::vector<int>{1}, true).shape(), Shape({2, 1, 4}));
  EXPECT_EQ(permute(x, std::vector<int>{1, 2, 0}).shape(), Shape({3, 4, 2}));
  EXPECT_EQ(x.permute(std::array<int64_t, 3>{2, 1, 0}).shape(), Shape({4, 3, 2}));
  EXPECT_EQ(max(x).shape(), Shape({})) << "no axes: every axis";
  static_assert(std::is_convertible_v<std::vector<unsigned>, AxisList>);
  static_assert(!std::is_convertible_v<std::string, AxisList>, "a string is not a list of axes");
  static_assert(!std::is_convertible_v<std::vector<bool>, AxisList>);
  static_assert(!std::is_convertible_v<std::vector<double>, AxisList>);
}

TEST(Api, ReductionsAreMembersToo) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  Tensor s = x.sum({1}, true);
  EXPECT_EQ(s.node().op, OpKind::Sum);
  EXPECT_EQ(s.shape(), Shape({2, 1, 4}));
  EXPECT_EQ(x.mean(std::vector<int>{0, 2}).shape(), Shape({3}));
  EXPECT_EQ(x.max().shape(), Shape({}));
  EXPECT_EQ(x.min({-1}).node().op, OpKind::Min);
  EXPECT_EQ(x.prod({0}).node().axes, DimVector({0}));
  EXPECT_EQ(graphErrorOf([&] { Tensor().sum(); }),
            "sum: the first operand is an empty Tensor (default-constructed, it belongs to no "
            "graph)");
}

TEST(Api, ComparisonsWithANumber) {
  Graph g;
  Tensor x = g.input("x", DType::I32, {4});
  Tensor c = ne(x, 0);
  EXPECT_EQ(c.dtype(), DType::Bool);
  EXPECT_EQ(c.node().op, OpKind::Ne);
  EXPECT_EQ(g.node(c.node().operands[1]).dtype, DType::I32) << "the literal takes x's dtype";
  EXPECT_EQ(lt(x, 3).node().op, OpKind::Lt);
  EXPECT_EQ(ge(x, 3).node().op, OpKind::Ge);
}

// ---- composites build what a user would write

TEST(Api, SoftmaxIsTheUsersGraph) {
  Graph a, b;
  Tensor x = a.input("x", DType::F32, {8, 16});
  a.output(softmax(x));
  Tensor y = b.input("x", DType::F32, {8, 16});
  Tensor e = exp(y - max(y, {1}, true));
  b.output(e / sum(e, {1}, true));
  EXPECT_EQ(opsOf(a), opsOf(b));
  Tensor s0 = softmax(x, 0); // e / sum(e, {0}, true)
  EXPECT_EQ(a.node(s0.node().operands[1]).axes, DimVector({0}));
}

TEST(Api, LogSoftmaxIsTheUsersGraph) {
  Graph a, b;
  Tensor x = a.input("x", DType::F32, {8, 16});
  a.output(logSoftmax(x));
  Tensor y = b.input("x", DType::F32, {8, 16});
  Tensor s = y - max(y, {-1}, true);
  b.output(s - log(sum(exp(s), {-1}, true)));
  EXPECT_EQ(opsOf(a), opsOf(b));
}

TEST(Api, LayerNormIsTheUsersGraph) {
  Graph a, b;
  Tensor x = a.input("x", DType::F32, {8, 16});
  Tensor w = a.input("w", DType::F32, {16});
  Tensor bias = a.input("b", DType::F32, {16});
  a.output(layerNorm(x, w, bias));
  Tensor x2 = b.input("x", DType::F32, {8, 16});
  Tensor w2 = b.input("w", DType::F32, {16});
  Tensor b2 = b.input("b", DType::F32, {16});
  Tensor d = x2 - mean(x2, {1}, true);
  b.output(d * rsqrt(mean(d * d, {1}, true) + 1e-5) * w2 + b2);
  EXPECT_EQ(opsOf(a), opsOf(b));
  Graph c;
  Tensor x3 = c.input("x", DType::F32, {8, 16});
  EXPECT_EQ(layerNorm(x3).node().op, OpKind::Mul) << "no weight, no bias: ends at the rsqrt";
}

TEST(Api, RmsNormIsTheUsersGraph) {
  Graph a, b;
  Tensor x = a.input("x", DType::F16, {8, 16});
  Tensor w = a.input("w", DType::F16, {16});
  a.output(rmsNorm(x, w));
  Tensor x2 = b.input("x", DType::F16, {8, 16});
  Tensor w2 = b.input("w", DType::F16, {16});
  b.output(x2 * rsqrt(mean(x2 * x2, {1}, true) + 1e-6) * w2);
  EXPECT_EQ(opsOf(a), opsOf(b));
}

TEST(Api, GeluBothForms) {
  Graph a, b, c, d;
  Tensor x = a.input("x", DType::F32, {64});
  a.output(gelu(x, GeluForm::Tanh));
  Tensor y = b.input("x", DType::F32, {64});
  b.output(0.5 * y * (1.0 + tanh(0.7978845608 * (y + 0.044715 * y * y * y))));
  EXPECT_EQ(opsOf(a), opsOf(b));
  Tensor u = c.input("x", DType::F32, {64});
  c.output(gelu(u));
  Tensor v = d.input("x", DType::F32, {64});
  d.output(0.5 * v * (1.0 + erf(v * 0.7071067811865476)));
  EXPECT_EQ(opsOf(c), opsOf(d)) << "the default is the erf form, as F.gelu's";
}

TEST(Api, SiluIsXTimesSigmoid) {
  Graph a, b;
  Tensor x = a.input("x", DType::BF16, {64});
  a.output(silu(x));
  Tensor y = b.input("x", DType::BF16, {64});
  b.output(y * sigmoid(y));
  EXPECT_EQ(opsOf(a), opsOf(b));
}

// ---- what the compiler made, as data

TEST(Api, CompiledGraphCountsAndSummarizesKernels) {
  Graph g("softmax");
  Tensor x = g.input("x", DType::F32, {64, 256});
  g.output(softmax(x), "y");
  CompileOptions opt;
  opt.stopAfter = Stage::Fused; // schedules and bytes, no NVRTC
  CompiledGraph c = compileGraph(g, opt);
  ASSERT_EQ(c.numKernels(), 1u);
  std::vector<KernelSummary> ks = c.kernelSummaries();
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].name, c.detail->kernels[0].name);
  EXPECT_EQ(ks[0].schedule, describeSchedule(c.detail->kernels[0].schedule));
  EXPECT_EQ(ks[0].bytesRead, 64 * 256 * 4);
  EXPECT_EQ(ks[0].bytesWritten, 64 * 256 * 4);
  ASSERT_EQ(ks[0].reasons.size(), 1u);
  EXPECT_EQ(ks[0].reasons[0].rfind("%y: ", 0), 0u) << ks[0].reasons[0];
  EXPECT_NE(c.fusedText().find(ks[0].reasons[0].substr(5)), std::string::npos)
      << "the reason is the one --emit=fused prints";

  opt.fusion = false;
  CompiledGraph eager = compileGraph(g, opt);
  EXPECT_EQ(eager.numKernels(), 5u) << "max, sub, exp, sum, div";
  EXPECT_EQ(eager.kernelSummaries().size(), 5u);
  opt.stopAfter = Stage::Graph;
  EXPECT_EQ(compileGraph(g, opt).numKernels(), 0u);
}

TEST(Api, CompiledGraphKeepsItsDetailBehindAPointer) {
  Graph g("gelu");
  Tensor x = g.input("x", DType::F32, {1024});
  g.output(gelu(x), "y");
  CompileOptions opt;
  opt.stopAfter = Stage::Cuda;
  CompiledGraph c = compileGraph(g, opt);
  ASSERT_NE(c.detail, nullptr);
  EXPECT_EQ(c.detail->kernels.size(), c.numKernels());
  EXPECT_EQ(c.detail->plan.kernels.size(), 1u);
  CompiledGraph copy = c; // copies share the records, which nothing changes
  EXPECT_EQ(copy.detail, c.detail);
  EXPECT_EQ(copy.cudaText(), c.cudaText());

  CompiledGraph none; // no compile: no detail, and every accessor reads it as empty
  EXPECT_EQ(none.detail, nullptr);
  EXPECT_EQ(none.numKernels(), 0u);
  EXPECT_TRUE(none.kernelSummaries().empty());
  EXPECT_NE(none.fusedText().find("total: 0 kernels"), std::string::npos) << none.fusedText();
  EXPECT_EQ(none.ptxText(), "");
}
