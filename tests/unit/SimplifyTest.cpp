// compiler/Simplify: folding, CSE, dead values, identities, mean kept whole; input untouched.
#include "compiler/simplify/Simplify.h"
#include "ir/Builder.h"
#include "ir/Evaluator.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace minijit;

namespace {

/// The statements of a graph's canonical text, without the header and the
/// closing brace.
std::string body(const Graph &g) {
  std::string s = printGraph(g);
  size_t open = s.find("{\n");
  size_t close = s.rfind("}");
  return s.substr(open + 2, close - open - 2);
}

Tensor constantTensor(Graph &g, double v, DType t) { return Tensor(&g, g.constant(v, t)); }

/// The simplified graph must compute what the original does.
void expectSameResults(const Graph &before, const Graph &after) {
  std::vector<HostTensor> in = randomInputs(before, 5);
  std::vector<HostTensor> a = evaluate(before, in), b = evaluate(after, in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CompareResult r = compareTensors(b[i], a[i], Tolerance{1e-6});
    EXPECT_TRUE(r.ok) << "output " << i << ": " << r.summary;
  }
}

} // namespace

TEST(Simplify, FoldsConstants) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor c = constantTensor(g, 2, DType::F32) * constantTensor(g, 3, DType::F32) + 0.5;
  g.output((x * c).named("y"));
  Graph s = simplifyGraph(g);
  EXPECT_EQ(body(s), "  %y = mul %x, 6.5 : f32[4]\n  return %y\n");
  expectSameResults(g, s);
}

TEST(Simplify, FoldingFollowsIntegerAndNaNRules) {
  Graph g("g");
  Tensor x = g.input("x", DType::I32, {4});
  Tensor wrapped = constantTensor(g, 2147483647, DType::I32) + 1;
  Tensor quotient = constantTensor(g, 7, DType::I32) / 0;
  g.output((x + wrapped).named("a"));
  g.output((x * quotient).named("b"));
  Graph s = simplifyGraph(g);
  EXPECT_EQ(body(s),
            "  %a = add %x, -2147483648 : i32[4]\n  %b = mul %x, 0 : i32[4]\n  return %a, %b\n");
}

TEST(Simplify, FoldedFloatLiteralsAreRoundedToF32) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor third = constantTensor(g, 1, DType::F32) / 3;
  g.output(maximum(x, third).named("y"));
  Graph s = simplifyGraph(g);
  const Node &y = s.node(*s.lookup("y"));
  const Node &lit = s.node(y.operands[1]);
  ASSERT_EQ(lit.op, OpKind::Constant);
  EXPECT_EQ(lit.value, static_cast<double>(1.0f / 3.0f));
}

TEST(Simplify, FoldsNaNLiteralsOfMaximum) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor n = maximum(constantTensor(g, NAN, DType::F32), constantTensor(g, 1, DType::F32));
  g.output((x + n).named("y"));
  Graph s = simplifyGraph(g);
  EXPECT_EQ(body(s), "  %y = add %x, nan : f32[4]\n  return %y\n");
}

TEST(Simplify, ComputedLiteralAsAnOutput) {
  // not a literal) folds to a literal, and simplifyGraph then throws
  // GraphError "output: a literal cannot be a graph result; compute it from
  // an input" -- so compileGraph rejects a graph that verifies.
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  g.output(x * 2, "y");
  g.output(constantTensor(g, 2, DType::F32) + 3, "c");
  EXPECT_NO_THROW(verifyGraph(g));
  EXPECT_NO_THROW(simplifyGraph(g));
}

TEST(Simplify, CommonSubexpressionsAreMerged) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor a = exp(x).named("a");
  Tensor b = exp(x).named("b");
  Tensor s1 = sum(a * 2, {0}).named("s1");
  Tensor s2 = sum(b * 2, {0}).named("s2");
  g.output((s1 + s2).named("y"));
  Graph s = simplifyGraph(g);
  EXPECT_EQ(body(s), "  %a = exp %x : f32[4]\n"
                     "  %t2 = mul %a, 2 : f32[4]\n"
                     "  %s1 = sum %t2 axes=[0] : f32[]\n"
                     "  %y = add %s1, %s1 : f32[]\n"
                     "  return %y\n");
  expectSameResults(g, s);
}

TEST(Simplify, DifferentAttributesAreNotMerged) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {20, 3}); // (a sum over 8 or fewer is written out)
  Tensor a = sum(x, {0}, true).named("a");
  Tensor b = sum(x, {0}, false).named("b");
  Tensor c = sum(x, {1}, true).named("c");
  g.output(a);
  g.output(b);
  g.output(c);
  Graph s = simplifyGraph(g);
  EXPECT_EQ(s.size(), g.size());
}

TEST(Simplify, DeadValuesAreRemoved) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor unused = g.input("unused", DType::F32, {4});
  exp(x).named("dead");
  tanh(unused * 3);
  g.output(sin(x).named("y"));
  Graph s = simplifyGraph(g);
  EXPECT_EQ(printGraph(s), "graph g(%x: f32[4], %unused: f32[4]) {\n"
                           "  %y = sin %x : f32[4]\n"
                           "  return %y\n"
                           "}\n");
}

TEST(Simplify, MultiplyByOneAndAddZeroAreRemoved) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor y = 1 * ((0 + (x * 1)) + 0);
  g.output(exp(y).named("e"));
  EXPECT_EQ(body(simplifyGraph(g)), "  %e = exp %x : f32[4]\n  return %e\n");
}

TEST(Simplify, SubtractZeroAndDivideByOneAreRemoved) {
  Graph g("g");
  Tensor x = g.input("x", DType::I32, {4});
  g.output(((x - 0) / 1 + 5).named("y"));
  EXPECT_EQ(body(simplifyGraph(g)), "  %y = add %x, 5 : i32[4]\n  return %y\n");
}

TEST(Simplify, NonIdentitiesStay) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  g.output((0 - x).named("a"));
  g.output((1 / x).named("b"));
  g.output((x * 0).named("c")); // x*0 is not 0 for inf and NaN
  Graph s = simplifyGraph(g);
  EXPECT_EQ(body(s), "  %a = sub 0, %x : f32[4]\n"
                     "  %b = div 1, %x : f32[4]\n"
                     "  %c = mul %x, 0 : f32[4]\n"
                     "  return %a, %b, %c\n");
}

TEST(Simplify, IdentitiesThatBroadcastStay) {
  // x * 1 where the 1 is a [2, 4] tensor of ones would change x's shape; a
  // scalar literal never does, but a broadcast operand must be kept.
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  Tensor ones = g.input("o", DType::F32, {2, 4});
  g.output((x * ones).named("y"));
  EXPECT_EQ(body(simplifyGraph(g)), "  %y = mul %x, %o : f32[2, 4]\n  return %y\n");
}

TEST(Simplify, IdentityCastsAreRemoved) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  g.output(exp(x.cast(DType::F32)).cast(DType::F16).named("y"));
  EXPECT_EQ(body(simplifyGraph(g)), "  %t1 = exp %x : f32[4]\n"
                                    "  %y = cast %t1 to=f16 : f16[4]\n"
                                    "  return %y\n");
}

TEST(Simplify, IdentityViewsAreRemoved) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {2, 3});
  Tensor v = x.permute({0, 1}).broadcast({2, 3}).reshape({2, 3});
  g.output(exp(v).named("y"));
  EXPECT_EQ(body(simplifyGraph(g)), "  %y = exp %x : f32[2, 3]\n  return %y\n");
}

TEST(Simplify, ReshapeChainsCollapse) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  g.output(exp(x.reshape({6, 4}).reshape({24}).reshape({4, 6}).named("r")).named("y"));
  g.output(exp(x.reshape({24}).reshape({2, 3, 4})).named("z"));
  Graph s = simplifyGraph(g);
  const Node &r = s.node(*s.lookup("r"));
  EXPECT_EQ(r.op, OpKind::Reshape);
  EXPECT_EQ(r.operands[0], s.inputs()[0]); // reads x directly
  const Node &z = s.node(*s.lookup("z"));
  EXPECT_EQ(z.operands[0], s.inputs()[0]); // the round trip is gone
}

TEST(Simplify, ValuesMadeDeadByRewritesAreRemoved) {
  // Found at 8a20cd2: liveness was computed on the input graph only, so the
  // intermediate reshapes %t0 = reshape %x shape=[6, 4] and %t1 = reshape %x
  // shape=[24] stayed in the result.
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {2, 3, 4});
  g.output(exp(x.reshape({6, 4}).reshape({24}).reshape({4, 6}).named("r")).named("y"));
  g.output(exp(x.reshape({24}).reshape({2, 3, 4})).named("z"));
  EXPECT_EQ(body(simplifyGraph(g)), "  %r = reshape %x shape=[4, 6] : f32[4, 6]\n"
                                    "  %y = exp %r : f32[4, 6]\n"
                                    "  %z = exp %x : f32[2, 3, 4]\n"
                                    "  return %y, %z\n");
}

TEST(Simplify, ReductionsOverSizeOneAxesAreRemoved) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4, 1});
  g.output(exp(max(x, {1}, true)).named("a"));
  g.output(exp(sum(x, {1}, false)).named("b"));
  EXPECT_EQ(body(simplifyGraph(g)), "  %a = exp %x : f32[4, 1]\n"
                                    "  %t2 = reshape %x shape=[4] : f32[4]\n"
                                    "  %b = exp %t2 : f32[4]\n"
                                    "  return %a, %b\n");
}

TEST(Simplify, MeanStaysOneReduction) {
  // Simplify.h: kernels compute a mean as the sum times 1/n when they finish
  // it, so the graph keeps `mean` (an f16 mean never stores an f16 sum).
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {2, 3});
  g.output(mean(x, {1}, true).named("m"));
  bool changed = true;
  Graph s = simplifyGraph(g, &changed);
  EXPECT_EQ(body(s), "  %m = mean %x axes=[1] keepdim=true : f32[2, 1]\n  return %m\n");
  EXPECT_FALSE(changed);
}

TEST(Simplify, ResultVerifies) {
  Graph g("g");
  Tensor x = g.input("x", DType::F16, {8, 16});
  Tensor mu = mean(x, {1}, true);
  Tensor d = (x - mu) * 1;
  g.output((d / sqrt(mean(d * d, {1}, true) + 1e-5)).named("y"));
  Graph s = simplifyGraph(g);
  EXPECT_NO_THROW(verifyGraph(s));
  expectSameResults(g, s);
}

TEST(Simplify, InputGraphIsUnchanged) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {2, 3});
  Tensor a = exp(x) * 1;
  exp(x);
  g.output(mean(a + exp(x), {1}).named("y"));
  std::string before = printGraph(g);
  size_t size = g.size();
  bool changed = false;
  simplifyGraph(g, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(printGraph(g), before);
  EXPECT_EQ(g.size(), size);
}

TEST(Simplify, ChangedIsFalseWhenNothingChanges) {
  Graph g("softmax");
  Tensor x = g.input("x", DType::F32, {4, 8});
  Tensor e = exp(x - max(x, {1}, true));
  g.output((e / sum(e, {1}, true)).named("y"));
  bool changed = true;
  Graph s = simplifyGraph(g, &changed);
  EXPECT_FALSE(changed);
  EXPECT_EQ(printGraph(s), printGraph(g));
}

TEST(Simplify, ChangedIsTrueForEachRewrite) {
  auto changedFor = [](auto build) {
    Graph g("g");
    Tensor x = g.input("x", DType::F32, {4, 2});
    g.output(build(g, x));
    bool changed = false;
    simplifyGraph(g, &changed);
    return changed;
  };
  EXPECT_TRUE(changedFor([](Graph &, Tensor x) { return x * 1; }));
  EXPECT_TRUE(changedFor([](Graph &, Tensor x) { return exp(x) + exp(x); }));
  EXPECT_TRUE(changedFor([](Graph &, Tensor x) { return sum(x.reshape({4, 2, 1}), {2}); }));
  EXPECT_TRUE(changedFor([](Graph &, Tensor x) {
    exp(x);
    return sin(x);
  }));
  EXPECT_FALSE(changedFor([](Graph &, Tensor x) { return sum(x, {1}); }));
}

TEST(Simplify, AScanAlongAnAxisOfOneIsItsOperand) {
  // (the GPU's scan kernel of rows of one element stored nothing)
  Graph g("scan1");
  Tensor x = g.input("x", DType::F32, {5, 1});
  g.output(cumsum(x, 1) + cumprod(x, -1), "y");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  EXPECT_EQ(text.find("cum"), std::string::npos) << text;
  expectSameResults(g, s);
}

TEST(Simplify, AnExclusiveScanShiftsItsInput) {
  // pad(slice(scan(x))) by the scan's identity along its axis is the scan of
  // x shifted: the shift becomes views the scan kernel reads through.
  Graph g("exclusive");
  Tensor x = g.input("x", DType::F32, {3, 9});
  Tensor n = g.input("n", DType::I32, {9, 4});
  g.output(pad(slice(cumsum(x, 1), 1, 0, 8), {0, 1}, {0, 0}), "e");
  g.output(pad(slice(cumprod(x, -1), 1, 0, 5), {0, 3}, {0, 0}, 1.0), "p");
  g.output(pad(slice(cumsum(n, 0), 0, 0, 7), {2, 0}, {0, 0}), "i");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  EXPECT_NE(text.find("%e = cumsum %"), std::string::npos) << text;
  EXPECT_NE(text.find("%p = cumprod %"), std::string::npos) << text;
  EXPECT_NE(text.find("%i = cumsum %"), std::string::npos) << text;
  expectSameResults(g, s);
}

TEST(Simplify, AFlippedScanIsTheScanTheOtherWay) {
  // flip_A(scan(w)) is scan(flip_A(w)), reversed when A holds the scan's
  // axis; the flips of flip(cumsum(flip(x))) then cancel.
  Graph g("flipped");
  Tensor x = g.input("x", DType::F32, {3, 9});
  Tensor n = g.input("n", DType::I32, {9, 4});
  g.output(flip(cumsum(flip(x, {1}), 1), {1}), "rev");
  g.output(flip(cumsum(flip(x, {1}), 1, true), {-1}), "fwd");
  g.output(flip(cumprod(x, 1), {0, 1}), "both");
  g.output(flip(cumsum(n, 1), {0}), "other_axis");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  auto lineOf = [&](const std::string &name) {
    size_t at = text.find("%" + name + " = ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(lineOf("rev"), "%rev = cumsum %x axis=1 reverse=true : f32[3, 9]") << text;
  EXPECT_EQ(lineOf("fwd"), "%fwd = cumsum %x axis=1 : f32[3, 9]") << text;
  EXPECT_NE(lineOf("both").find("cumprod %"), std::string::npos) << text;
  EXPECT_NE(lineOf("both").find("axis=1 reverse=true"), std::string::npos) << text;
  EXPECT_NE(lineOf("other_axis").find("cumsum %"), std::string::npos) << text;
  EXPECT_EQ(lineOf("other_axis").find("reverse"), std::string::npos) << text;
  expectSameResults(g, s);
}

TEST(Simplify, AScanReadElsewhereKeepsItsFlip) {
  // The scan is an output too: flipping it again would scan twice.
  Graph g("kept");
  Tensor x = g.input("x", DType::F32, {3, 9});
  Tensor c = cumsum(x, 1);
  g.output(c, "c");
  g.output(flip(c, {1}), "f");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  EXPECT_NE(text.find("%f = flip %c"), std::string::npos) << text;
  EXPECT_EQ(text.find("reverse"), std::string::npos) << text;
  expectSameResults(g, s);
}

TEST(Simplify, ATransposedProductIsTheProductOfTheTransposesTheOtherWay) {
  // (A @ B)^T = B^T @ A^T when only the transpose reads the product: the
  // product then stores the order its readers take (NetVLAD's
  // matmul(assignment, x).transpose(1, 2)); a transpose of a transposed
  // operand is the operand; a batch against a matrix stays broadcast.
  Graph g("transposed");
  Tensor a = g.input("a", DType::F32, {5, 7, 3});
  Tensor x = g.input("x", DType::F32, {5, 7, 4});
  Tensor w = g.input("w", DType::F32, {4, 6});
  g.output((matmul(a.permute({0, 2, 1}), x).permute({0, 2, 1}) - 1.0) * 2.0, "vlad");
  g.output(matmul(x, w).permute({0, 2, 1}), "bw");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  EXPECT_NE(text.find("matmul %t"), std::string::npos) << text; // x^T @ a
  EXPECT_NE(text.find("permute %x perm=[0, 2, 1]"), std::string::npos) << text;
  EXPECT_NE(text.find("permute %w perm=[1, 0]"), std::string::npos) << text;
  EXPECT_EQ(text.find("permute %a"), std::string::npos) << text; // (a^T)^T is a
  size_t products = 0;
  for (size_t at = text.find("matmul"); at != std::string::npos; at = text.find("matmul", at + 1))
    ++products;
  EXPECT_EQ(products, 2u) << text;
  expectSameResults(g, s);
}

TEST(Simplify, AProductReadElsewhereOrPermutedOtherwiseKeepsItsTranspose) {
  Graph g("kept");
  Tensor a = g.input("a", DType::F32, {5, 7, 3});
  Tensor b = g.input("b", DType::F32, {5, 3, 4});
  Tensor p = matmul(a, b);
  g.output(p, "p");
  g.output(p.permute({0, 2, 1}), "t"); // the product is an output too
  g.output(matmul(b.permute({0, 2, 1}), a.permute({0, 2, 1})).permute({2, 1, 0}), "other");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  EXPECT_NE(text.find("%t = permute %p perm=[0, 2, 1]"), std::string::npos) << text;
  EXPECT_NE(text.find("perm=[2, 1, 0]"), std::string::npos) << text;
  expectSameResults(g, s);
}

TEST(Simplify, AConcatWithAFullIsAPadAndAnExclusiveScan) {
  // cat((zeros, cumsum(x[:, :-1])), 1), KernelBench's exclusive cumsum: the
  // full becomes a pad, the pad of the scan of a prefix the scan of x shifted.
  Graph g("cat");
  Tensor x = g.input("x", DType::F32, {3, 9});
  Tensor i = g.input("i", DType::I32, {3, 9});
  g.output(concat({full(g, {3, 1}, 0.0), cumsum(slice(x, 1, 0, 8), 1)}, 1), "e");
  g.output(concat({x, full(g, {3, 2}, -1.0), full(g, {3, 4}, 2.0)}, 1), "behind");
  g.output(concat({full(g, {2, 9}, 7.0, DType::I32), i}, 0), "rows");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  EXPECT_NE(text.find("%e = cumsum %"), std::string::npos) << text;
  EXPECT_EQ(text.find("concat"), std::string::npos) << text;
  EXPECT_NE(text.find("before=[2, 0] after=[0, 0] value=7"), std::string::npos) << text;
  expectSameResults(g, s);
  // Pads by large integers that one f32 would round together stay apart.
  Graph h("big");
  Tensor j = h.input("j", DType::I32, {4, 8});
  h.output(concat({full(h, {4, 1}, 1000000000.0, DType::I32), j}, 1), "a");
  h.output(concat({full(h, {4, 1}, 1000000001.0, DType::I32), j}, 1), "b");
  Graph t = simplifyGraph(h);
  EXPECT_NE(printGraph(t).find("value=1000000001"), std::string::npos) << printGraph(t);
  expectSameResults(h, t);
}

TEST(Simplify, OtherShiftsOfAScanStay) {
  // Not the scan's identity, padded behind or on another axis, a slice not
  // from the start: the pad stays after the scan.
  Graph g("shifts");
  Tensor x = g.input("x", DType::F32, {3, 9});
  g.output(pad(slice(cumsum(x, 1), 1, 0, 8), {0, 1}, {0, 0}, 5.0), "value");
  g.output(pad(slice(cumsum(x, 1), 1, 0, 8), {0, 0}, {0, 1}), "behind");
  g.output(pad(slice(cumsum(x, 1), 1, 0, 8), {1, 1}, {0, 0}), "other_axis");
  g.output(pad(slice(cumsum(x, 1), 1, 1, 9), {0, 1}, {0, 0}), "from_one");
  g.output(pad(slice(cumprod(x, 1), 1, 0, 8), {0, 1}, {0, 0}), "prod_by_zero");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  for (const char *name : {"value", "behind", "other_axis", "from_one", "prod_by_zero"})
    EXPECT_NE(text.find(std::string("%") + name + " = pad"), std::string::npos) << name << "\n"
                                                                                << text;
  expectSameResults(g, s);
}

TEST(Simplify, AProductFlattenedToOneBatchAxisKeepsItsAxes) {
  // torch.matmul of [2, 3, 5, 4] and [2, 3, 4, 7] traced: both flattened to
  // 6 batches, bmm, the result unflattened. The product reads the operands
  // with their axes, and the result is the product itself; a K/V broadcast
  // over 3 heads (repeat_kv: [2, 1, 4, 7] expanded to [2, 1, 3, 4, 7]) is
  // reshaped to the query's axes.
  Graph g("bmm");
  Tensor q = g.input("q", DType::F32, {2, 3, 5, 4});
  Tensor k = g.input("k", DType::F32, {2, 3, 4, 7});
  Tensor kv = g.input("kv", DType::F32, {2, 1, 4, 7});
  Tensor s = matmul(reshape(q, {6, 5, 4}), reshape(k, {6, 4, 7}));
  g.output(reshape(s, {2, 3, 5, 7}), "s");
  Tensor wide = broadcast(reshape(kv, {2, 1, 1, 4, 7}), {2, 1, 3, 4, 7});
  Tensor t = matmul(reshape(q, {6, 5, 4}), reshape(wide, {6, 4, 7}));
  g.output(reshape(t, {2, 3, 5, 7}) * 2.0, "grouped");
  Graph out = simplifyGraph(g);
  std::string text = printGraph(out);
  EXPECT_NE(text.find(" = matmul %q, %k : f32[2, 3, 5, 7]"), std::string::npos) << text;
  EXPECT_NE(text.find("= matmul %q, %"), std::string::npos) << text;
  EXPECT_EQ(text.find("f32[6, 5, 4]"), std::string::npos) << text;
  EXPECT_EQ(text.find("f32[6, 5, 7]"), std::string::npos) << text;
  expectSameResults(g, out);
}

TEST(Simplify, OtherFlattenedProductsStay) {
  // A reshape that moves the product's own axes ([6, 20] -> [6, 5, 4]), or
  // one operand of a batch broadcast: the product stays as it was written.
  Graph g("stay");
  Tensor a = g.input("a", DType::F32, {2, 3, 20});
  Tensor b = g.input("b", DType::F32, {2, 3, 4, 7});
  Tensor c = g.input("c", DType::F32, {1, 4, 7});
  g.output(matmul(reshape(a, {6, 5, 4}), reshape(b, {6, 4, 7})), "moved");
  g.output(matmul(reshape(b, {6, 4, 7}) * 1.5, reshape(c, {1, 7, 4})), "broadcast");
  Graph out = simplifyGraph(g);
  std::string text = printGraph(out);
  EXPECT_NE(text.find("%moved = matmul %t"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[6, 5, 4]"), std::string::npos) << text;
  expectSameResults(g, out);
}

TEST(Simplify, AOneElementFullIsALiteral) {
  // torch.where(c, x, -inf) traced: the -inf is a full of one element,
  // reshaped to a scalar. Beside an operand of the result's shape it is the
  // literal; a reshaped full is a full of the new shape.
  Graph g("full");
  Tensor x = g.input("x", DType::F32, {4, 5});
  Tensor c = g.input("c", DType::Bool, {4, 5});
  g.output(where(c, x, reshape(full(g, {1}, -INFINITY), Shape{})), "masked");
  g.output(reshape(full(g, {2, 10}, 3.0), {4, 5}) + x, "plus");
  g.output(reshape(full(g, {1}, 2.0), {1, 1}), "alone"); // no operand beside it: a kernel's
  Graph out = simplifyGraph(g);
  std::string text = printGraph(out);
  EXPECT_NE(text.find("%masked = where %c, %x, -inf"), std::string::npos) << text;
  EXPECT_NE(text.find("%plus = add"), std::string::npos) << text;
  EXPECT_NE(text.find("full shape=[1, 1] value=2"), std::string::npos) << text;
  expectSameResults(g, out);
}

TEST(Simplify, ASliceOfWhatOnlyItReadsIsComputedFromSlicedOperands) {
  // Each op computes the part a slice keeps from slices of its operands:
  // elementwise work with a broadcast operand, a reduction over another
  // axis, a product's rows, columns and batch, a permute, a reshape that
  // keeps the axis whole, a scan's prefix and a reversed scan's suffix, a
  // concat along another axis. Same values, fewer elements.
  Graph g("sliced");
  Tensor x = g.input("x", DType::F32, {64, 100});
  Tensor b = g.input("b", DType::F32, {100});
  Tensor r = g.input("r", DType::F32, {32, 50, 70});
  Tensor a = g.input("a", DType::F32, {6, 33, 17});
  Tensor w = g.input("w", DType::F32, {6, 17, 29});
  Tensor a2 = g.input("a2", DType::F32, {6, 33, 17}), w2 = g.input("w2", DType::F32, {6, 17, 29});
  Tensor a3 = g.input("a3", DType::F32, {6, 33, 17}), w3 = g.input("w3", DType::F32, {6, 17, 29});
  Tensor s = g.input("s", DType::F32, {17, 300});
  Tensor c = g.input("c", DType::F32, {10, 6});
  g.output(slice(exp(x * 2.0 + b), 1, 10, 70, 3), "ew");
  g.output(slice(sum(r, {2}), 0, 5, 20, 2), "red");
  g.output(slice(matmul(a, w), 1, 32, 33), "row");
  g.output(slice(matmul(a2, w2), 2, 3, 20), "cols");
  g.output(slice(tanh(matmul(a3, w3)), 0, 1, 4), "batch");
  g.output(slice(permute(r, {2, 0, 1}) * 3.0, 0, 5, 9), "perm");
  g.output(slice(reshape(r + 1.0, {4, 8, 50, 70}), 2, 1, 3), "resh");
  g.output(slice(cumsum(s, 1), 1, 0, 123), "prefix");
  g.output(slice(cumsum(s, 1, /*reverse=*/true), 1, 250, 300), "suffix");
  g.output(slice(concat({c, slice(slice(x, 1, 0, 4), 0, 0, 10)}, 1) - 1.0, 0, 2, 5), "cat");
  Graph out = simplifyGraph(g);
  std::string text = printGraph(out);
  EXPECT_NE(text.find("slice %x axis=1 start=10 end=70 step=3"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %b axis=0 start=10 end=70 step=3"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %r axis=0 start=5 end=20 step=2"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %a axis=1 start=32 end=33"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %w2 axis=2 start=3 end=20"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %a3 axis=0 start=1 end=4"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %w3 axis=0 start=1 end=4"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %r axis=2 start=5 end=9"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %r axis=1 start=1 end=3"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %s axis=1 start=0 end=123"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %s axis=1 start=250 end=300"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %c axis=0 start=2 end=5"), std::string::npos) << text;
  EXPECT_NE(text.find("%cat = sub %"), std::string::npos) << text; // on the concat of the parts
  expectSameResults(g, out);
}

TEST(Simplify, ASliceStaysWhereItsValueIsReadWholeOrCannotBeComputedInPart) {
  // A softmax sliced along its axis: exp(x - max) is read whole by the sum,
  // so the division keeps its slice (moving it would split the row kernel).
  // A value read elsewhere, an output, a scan's middle, a random op's
  // numbers and a reshape that merges the sliced axis keep theirs too.
  Graph g("kept");
  Tensor x = g.input("x", DType::F32, {20, 48});
  Tensor y = g.input("y", DType::F32, {20, 48});
  Tensor r = g.input("r", DType::F32, {6, 8, 5});
  Tensor seed = g.input("seed", DType::I32, {}), offset = g.input("offset", DType::I32, {});
  g.output(slice(softmax(x, 1), 1, 0, 32), "soft");
  Tensor e = exp(y);
  g.output(e, "e");
  g.output(slice(e, 0, 2, 9), "part");
  g.output(slice(cumsum(y, 1), 1, 3, 40), "mid");
  g.output(slice(reshape(r * 2.0, {48, 5}), 0, 8, 16), "merged");
  g.output(slice(dropout(y, seed, offset, 0.5), 0, 1, 3), "drop");
  Graph out = simplifyGraph(g);
  std::string text = printGraph(out);
  EXPECT_NE(text.find("%soft = slice"), std::string::npos) << text;
  EXPECT_NE(text.find("%part = slice %e"), std::string::npos) << text;
  EXPECT_NE(text.find("%mid = slice"), std::string::npos) << text;
  EXPECT_NE(text.find("%merged = slice"), std::string::npos) << text;
  EXPECT_NE(text.find("%drop = slice"), std::string::npos) << text;
  expectSameResults(g, out);
}

TEST(Simplify, APermuteOfAxesOfSizeOneIsAReshape) {
  Graph g("ones");
  Tensor x = g.input("x", DType::F32, {4, 1, 6, 1});
  g.output(permute(x, {1, 0, 3, 2}) + 1.0, "moved");
  g.output(permute(x, {2, 1, 0, 3}), "swapped"); // 4 and 6 change places
  Graph out = simplifyGraph(g);
  std::string text = printGraph(out);
  EXPECT_NE(text.find("reshape %x shape=[1, 4, 1, 6]"), std::string::npos) << text;
  EXPECT_NE(text.find("permute %x perm=[2, 1, 0, 3]"), std::string::npos) << text;
  expectSameResults(g, out);
}

TEST(Simplify, ASumOverAShortOuterAxisIsTheAddsOfItsSlices) {
  // Split-K's sum of a few slices, a mean over a batch of 3: each a pointwise
  // kernel of whole vectors. The innermost axis, an axis of 9, an i32 sum,
  // two axes, a product's own rows and an operand other reductions read too
  // (one kernel reduces it for all) keep their reductions.
  Graph g("short");
  Tensor p = g.input("p", DType::F32, {5, 40, 24});
  Tensor q = g.input("q", DType::F32, {7, 3, 33});
  Tensor p2 = g.input("p2", DType::F32, {5, 40, 24});
  Tensor q2 = g.input("q2", DType::F32, {7, 3, 33});
  Tensor z = g.input("z", DType::F32, {4, 64});
  Tensor r = g.input("r", DType::F32, {9, 16});
  Tensor i = g.input("i", DType::I32, {4, 16});
  Tensor a = g.input("a", DType::F32, {3, 8}), b = g.input("b", DType::F32, {8, 16});
  g.output(relu(sum(p, {0})), "split");
  g.output(mean(q, {1}, true), "batch");
  g.output(sum(q2, {2}), "inner");
  g.output(sum(r, {0}), "nine");
  g.output(sum(i, {0}), "ints");
  g.output(sum(p2, {0, 1}), "two");
  g.output(sum(z, {0}), "shared");
  g.output(max(z, {0}), "zmax");
  g.output(sum(matmul(a, b), {0}), "rows");
  Graph out = simplifyGraph(g);
  std::string text = printGraph(out);
  EXPECT_NE(text.find("slice %p axis=0 start=4 end=5"), std::string::npos) << text;
  EXPECT_NE(text.find("slice %q axis=1 start=2 end=3"), std::string::npos) << text;
  EXPECT_NE(text.find("0.33333334"), std::string::npos) << text; // the mean's 1/3
  EXPECT_NE(text.find("%inner = sum %q2 axes=[2]"), std::string::npos) << text;
  EXPECT_NE(text.find("%shared = sum %z axes=[0]"), std::string::npos) << text;
  EXPECT_NE(text.find("%nine = sum %r axes=[0]"), std::string::npos) << text;
  EXPECT_NE(text.find("%ints = sum %i axes=[0]"), std::string::npos) << text;
  EXPECT_NE(text.find("%two = sum %p2 axes=[0, 1]"), std::string::npos) << text;
  EXPECT_EQ(text.find("slice %t"), std::string::npos) << text; // the product's rows not sliced
  expectSameResults(g, out);
}

TEST(Simplify, MovedSlicesAndShortSumsKeepWithinTheGraphsLimits) {
  // A moved slice lengthens its operand's chain of views (a reduction or a
  // product below it started a fresh one), and a short sum written out
  // continues the chains through it, also where the walk turns later values
  // into views (a reduction over an axis of 1 into a reshape): chains already
  // at ir/Limits.h's 12 views keep their slice and their sum.
  Graph g("limits");
  Tensor x = g.input("x", DType::F32, {6, 40, 30});
  Tensor e = x;
  for (int i = 0; i < 6; ++i)
    e = -exp(e.reshape({6, 1200})).reshape({6, 40, 30});
  g.output(slice(sum(e, {2}), 0, 1, 3), "sliced");
  Tensor y = g.input("y", DType::F32, {2, 8, 1, 16});
  Tensor a = sum(y, {0});
  for (int i = 0; i < 5; ++i)
    a = -a.permute({2, 1, 0});
  Tensor b = sum(a, {1});
  for (int i = 0; i < 6; ++i)
    b = -b.permute({1, 0});
  g.output(b, "chained");
  Graph out;
  ASSERT_NO_THROW(out = simplifyGraph(g)) << printGraph(g);
  expectSameResults(g, out);
}

TEST(Simplify, ASumThroughLinearOpsOfAProductIsLeftForTheProductRewrites) {
  // sum(P * 0.5 + b, rows): MatmulRewrites moves it onto the product (the
  // operand summed first), which adds of the product's rows would prevent.
  Graph g("linear");
  Tensor a = g.input("a", DType::F32, {4, 8, 512});
  Tensor w = g.input("w", DType::F32, {512, 1024});
  Tensor b = g.input("b", DType::F32, {1024});
  g.output(sum(matmul(a, w) * 0.5 + b, {1}), "s");
  Graph out = simplifyGraph(g);
  EXPECT_NE(printGraph(out).find("%s = sum"), std::string::npos) << printGraph(out);
  expectSameResults(g, out);
}
