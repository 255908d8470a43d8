// compiler/simplify/MatmulRewrites: narrow products, sums of products, scalar
// factors; each graph before and after, what --no-reassociate keeps, and that
// the CPU reference of the rewritten graph computes what the original does.
#include "compiler/Compiler.h"
#include "compiler/simplify/MatmulRewrites.h"
#include "compiler/simplify/Simplify.h"
#include "ir/Bind.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace minijit;

namespace {

std::string body(const Graph &g) {
  std::string s = printGraph(g);
  size_t open = s.find("{\n");
  return s.substr(open + 2, s.rfind("}") - open - 2);
}

/// The rewritten graph verifies and computes what the original does.
/// (f16 results round the product once less than the graph as written.)
MatmulRewriteResult rewriteChecked(const Graph &g, const MatmulRewriteOptions &options,
                                   double tol = 1e-5) {
  MatmulRewriteResult r = rewriteMatmuls(g, options);
  Graph clean = simplifyGraph(r.graph);
  EXPECT_NO_THROW(verifyGraph(clean));
  std::vector<HostTensor> in = randomInputs(g, 3);
  std::vector<HostTensor> a = evaluate(g, in), b = evaluate(clean, in);
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    CompareResult c = compareTensors(b[i], a[i], Tolerance{tol});
    EXPECT_TRUE(c.ok) << "output " << i << ": " << c.summary;
  }
  r.graph = std::move(clean);
  return r;
}

MatmulRewriteResult rewriteChecked(const Graph &g, bool reassociate = true, double tol = 1e-5) {
  return rewriteChecked(g, MatmulRewriteOptions{.reassociate = reassociate}, tol);
}

TEST(MatmulRewrites, AMatrixVectorProductIsAProductAndARowSum) {
  Graph g("gemv");
  Tensor a = g.input("a", DType::F32, {64, 300});
  Tensor x = g.input("x", DType::F32, {300, 1});
  g.output(matmul(a, x), "y");
  MatmulRewriteResult r = rewriteChecked(g);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::NarrowProduct);
  EXPECT_EQ(body(r.graph), "  %t0 = reshape %x shape=[1, 300] : f32[1, 300]\n"
                           "  %t1 = mul %a, %t0 : f32[64, 300]\n"
                           "  %y = sum %t1 axes=[1] keepdim=true : f32[64, 1]\n"
                           "  return %y\n")
      << printGraph(r.graph);
}

TEST(MatmulRewrites, ARowTimesAMatrixIsAProductAndAColumnSumInF32) {
  Graph g("gevm");
  Tensor a = g.input("a", DType::BF16, {1, 40});
  Tensor w = g.input("w", DType::BF16, {40, 24});
  g.output(matmul(a, w), "y");
  MatmulRewriteResult r = rewriteChecked(g);
  ASSERT_EQ(r.applied.size(), 1u);
  std::string text = body(r.graph);
  EXPECT_NE(text.find("cast %a to=f32"), std::string::npos) << text;
  EXPECT_NE(text.find("cast %w to=f32"), std::string::npos) << text;
  EXPECT_NE(text.find("axes=[0] keepdim=true : f32[1, 24]"), std::string::npos) << text;
  EXPECT_NE(text.find("%y = cast"), std::string::npos) << text;
  EXPECT_EQ(text.find("matmul"), std::string::npos) << text;
}

TEST(MatmulRewrites, AHalfProductReadByAnEpilogueStaysAMatmul) {
  // Its sum would end in a cast that rounds to f16 before the epilogue; the
  // fused matmul's epilogue reads the f32 accumulator.
  Graph g("gemv_half");
  Tensor a = g.input("a", DType::F16, {64, 300});
  Tensor x = g.input("x", DType::F16, {300, 1});
  g.output(relu(matmul(a, x) * 0.5), "y");
  EXPECT_TRUE(rewriteMatmuls(g, {}).applied.empty());
  Graph out("gemv_half_out");
  Tensor a2 = out.input("a", DType::F16, {64, 300});
  Tensor x2 = out.input("x", DType::F16, {300, 1});
  out.output(matmul(a2, x2), "y");
  EXPECT_EQ(rewriteMatmuls(out, {}).applied.size(), 1u);
}

TEST(MatmulRewrites, AProductOverOneKIsAColumnTimesARow) {
  Graph g("outer");
  Tensor a = g.input("a", DType::F32, {64, 1});
  Tensor b = g.input("b", DType::F32, {3, 1, 40});
  g.output(matmul(a, b), "y");
  MatmulRewriteResult r = rewriteChecked(g, /*reassociate=*/false, 0.0);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::OuterProduct);
  EXPECT_EQ(body(r.graph), "  %y = mul %a, %b : f32[3, 64, 40]\n"
                           "  return %y\n")
      << printGraph(r.graph);
  // 16-bit: multiplied in f32 and rounded once, as the product is; one read
  // by an epilogue stays a product (the epilogue reads it unrounded)
  Graph h("outer_half");
  Tensor ah = h.input("a", DType::BF16, {64, 1});
  Tensor bh = h.input("b", DType::BF16, {1, 40});
  h.output(matmul(ah, bh), "y");
  MatmulRewriteResult rh = rewriteChecked(h, false, 0.0);
  ASSERT_EQ(rh.applied.size(), 1u);
  EXPECT_NE(body(rh.graph).find("%y = cast"), std::string::npos) << printGraph(rh.graph);
  Graph e("outer_half_epilogue");
  Tensor ae = e.input("a", DType::BF16, {64, 1});
  Tensor be = e.input("b", DType::BF16, {1, 40});
  e.output(relu(matmul(ae, be) * 0.5), "y");
  EXPECT_TRUE(rewriteMatmuls(e, {}).applied.empty());
  // k a named size (bound to 1 or not) stays a product: a name does not
  // broadcast against m's or n's as a 1 does
  Graph named("outer_named");
  Tensor an = named.input("a", DType::F32, {Dim("M"), Dim("K")});
  Tensor bn = named.input("b", DType::F32, {Dim("K"), Dim("N")});
  named.output(matmul(an, bn), "y");
  EXPECT_TRUE(rewriteMatmuls(bindDims(named, {{"M", 64}, {"K", 1}, {"N", 32}}), {}).applied.empty());
}

TEST(MatmulRewrites, WideProductsStay) {
  Graph g("mm");
  Tensor a = g.input("a", DType::F32, {64, 32});
  Tensor b = g.input("b", DType::F32, {32, 2});
  g.output(matmul(a, b), "y");
  MatmulRewriteResult r = rewriteChecked(g);
  EXPECT_TRUE(r.applied.empty());
  EXPECT_EQ(printGraph(r.graph), printGraph(g));
}

TEST(MatmulRewrites, AProductOverAFewKIsASumOfColumnsTimesRows) {
  MatmulRewriteOptions upTo8{.reassociate = false, .fewTermsUpTo = 8, .fewTermsUpTo16Bit = 8};
  Graph g("few");
  Tensor a = g.input("a", DType::F32, {5, 3});
  Tensor b = g.input("b", DType::F32, {3, 7});
  g.output(matmul(a, b), "y");
  MatmulRewriteResult r = rewriteChecked(g, upTo8);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::FewTerms);
  EXPECT_EQ(r.applied[0].text(), "%y: a product over k = 3, as a sum of k columns times rows (a "
                                 "pointwise kernel, no tile of k-steps)");
  // j = 0 .. k-1 in order, as the matmul templates sum them
  EXPECT_EQ(body(r.graph), "  %t0 = slice %a axis=1 start=0 end=1 : f32[5, 1]\n"
                           "  %t1 = slice %b axis=0 start=0 end=1 : f32[1, 7]\n"
                           "  %t2 = mul %t0, %t1 : f32[5, 7]\n"
                           "  %t3 = slice %a axis=1 start=1 end=2 : f32[5, 1]\n"
                           "  %t4 = slice %b axis=0 start=1 end=2 : f32[1, 7]\n"
                           "  %t5 = mul %t3, %t4 : f32[5, 7]\n"
                           "  %t6 = add %t2, %t5 : f32[5, 7]\n"
                           "  %t7 = slice %a axis=1 start=2 end=3 : f32[5, 1]\n"
                           "  %t8 = slice %b axis=0 start=2 end=3 : f32[1, 7]\n"
                           "  %t9 = mul %t7, %t8 : f32[5, 7]\n"
                           "  %y = add %t6, %t9 : f32[5, 7]\n"
                           "  return %y\n")
      << printGraph(r.graph);
  // a batch on one side broadcast against the other, k = 8 (the default's
  // largest); under 2 none
  Graph h("few_batched");
  Tensor ah = h.input("a", DType::F32, {4, 33, 8});
  Tensor bh = h.input("b", DType::F32, {8, 65});
  h.output(matmul(ah, bh), "y");
  MatmulRewriteResult rh = rewriteChecked(h, upTo8);
  ASSERT_EQ(rh.applied.size(), 1u);
  EXPECT_EQ(rh.applied[0].detail, "8");
  EXPECT_EQ(rh.graph.node(rh.graph.outputs()[0]).shape, Shape({4, 33, 65}));
  EXPECT_TRUE(rewriteMatmuls(h, {.reassociate = false, .fewTermsUpTo = 7}).applied.empty());
  EXPECT_TRUE(rewriteMatmuls(h, {.reassociate = false, .fewTermsUpTo = 0}).applied.empty());
  // B stored [n, k] (x @ W.T) stays a product: its rows along n are strided
  Graph t("few_transposed");
  Tensor at = t.input("a", DType::F32, {33, 4});
  Tensor bt = t.input("b", DType::F32, {65, 4});
  t.output(matmul(at, transpose(bt)), "y");
  EXPECT_TRUE(rewriteMatmuls(t, upTo8).applied.empty());
  // 16-bit: summed in f32 and rounded once, as the product is; one read by
  // an epilogue stays a product (the epilogue reads it unrounded)
  Graph f("few_half");
  Tensor af = f.input("a", DType::F16, {64, 2});
  Tensor bf = f.input("b", DType::F16, {2, 40});
  f.output(matmul(af, bf), "y");
  MatmulRewriteResult rf = rewriteChecked(f, upTo8, 1e-3);
  ASSERT_EQ(rf.applied.size(), 1u);
  EXPECT_NE(body(rf.graph).find("%y = cast"), std::string::npos) << printGraph(rf.graph);
  Graph e("few_half_epilogue");
  Tensor ae = e.input("a", DType::BF16, {64, 2});
  Tensor be = e.input("b", DType::BF16, {2, 40});
  e.output(relu(matmul(ae, be) * 0.5), "y");
  EXPECT_TRUE(rewriteMatmuls(e, upTo8).applied.empty());
  // a named k stays a product: it has no number of terms until bound
  Graph named("few_named");
  Tensor an = named.input("a", DType::F32, {Dim("M"), Dim("K")});
  Tensor bn = named.input("b", DType::F32, {Dim("K"), Dim("N")});
  named.output(matmul(an, bn), "y");
  EXPECT_TRUE(rewriteMatmuls(named, upTo8).applied.empty());
}

TEST(MatmulRewrites, RewritesKeepChainsOfViewsWithinTheLimits) {
  // B read through `before` views, the product through 2 more: the product
  // starts a fresh index, its rewrites do not (ir/Limits.h's kMaxViewChain)
  MatmulRewriteOptions upTo8{.reassociate = false, .fewTermsUpTo = 8, .fewTermsUpTo16Bit = 8};
  auto graph = [](unsigned before, int64_t k) {
    Graph g("chain");
    Tensor a = g.input("a", DType::F32, {5, k});
    Tensor b = g.input("b", DType::F32, {k, 64});
    for (unsigned i = 0; i < before; ++i) // (a transpose, then a reshape: nothing simplifies)
      b = i % 2 ? b.reshape({k, 64}) : b.permute({1, 0});
    g.output(exp(matmul(a, b).reshape({320}).reshape({64, 5})), "y");
    return g;
  };
  // the pointwise form's chain is 10 + 1 + 2: the reduction's, 10 + 1
  Graph g = graph(10, 3);
  ASSERT_EQ(g.viewChain(g.node(g.outputs()[0]).operands[0]), 2u);
  MatmulRewriteResult r = rewriteChecked(g, upTo8);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::FewTermsSum);
  EXPECT_NE(body(r.graph).find("sum "), std::string::npos) << printGraph(r.graph);
  EXPECT_EQ(r.applied[0].text(), "%t10: a product over k = 3, as a sum over k of its terms (a "
                                 "reduction: the pointwise form's chain of views would pass "
                                 "ir/Limits.h's)");
  // 12 before: neither form fits, the product stays
  Graph full = graph(12, 3);
  EXPECT_TRUE(rewriteChecked(full, upTo8).applied.empty());
  // an outer product (k = 1) and a narrow one (one output row) likewise
  Graph outer = graph(12, 1);
  EXPECT_TRUE(rewriteChecked(outer, upTo8).applied.empty());
  Graph outerFits = graph(10, 1);
  EXPECT_EQ(rewriteChecked(outerFits, upTo8).applied.size(), 1u);
  Graph narrow("narrow_chain");
  Tensor x = narrow.input("x", DType::F32, {1, 64});
  Tensor w = narrow.input("w", DType::F32, {64, 6});
  for (unsigned i = 0; i < 12; ++i)
    w = i % 2 ? w.permute({1, 0}) : w.reshape({6, 64});
  narrow.output(matmul(x, w), "y");
  EXPECT_TRUE(rewriteChecked(narrow, upTo8).applied.empty());
}

TEST(MatmulRewrites, ASumOverTheColumnsOfAProductSumsTheWeightFirst) {
  Graph g("sum_of_linear");
  Tensor x = g.input("x", DType::F32, {16, 40});
  Tensor w = g.input("w", DType::F32, {50, 40}); // nn.Linear's [out, in]
  g.output(sum(matmul(x, transpose(w)), {1}), "y");
  MatmulRewriteResult r = rewriteChecked(g);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::SumOfProduct);
  // (%t1 was the product, left dead)
  EXPECT_EQ(body(r.graph), "  %t0 = permute %w perm=[1, 0] : f32[40, 50]\n"
                           "  %t2 = sum %t0 axes=[1] keepdim=true : f32[40, 1]\n"
                           "  %t3 = reshape %t2 shape=[1, 40] : f32[1, 40]\n"
                           "  %t4 = mul %x, %t3 : f32[16, 40]\n"
                           "  %t5 = sum %t4 axes=[1] keepdim=true : f32[16, 1]\n"
                           "  %y = reshape %t5 shape=[16] : f32[16]\n"
                           "  return %y\n")
      << printGraph(r.graph);
  // switched off, the graph is unchanged
  MatmulRewriteResult off = rewriteChecked(g, /*reassociate=*/false);
  EXPECT_TRUE(off.applied.empty());
  EXPECT_EQ(printGraph(off.graph), printGraph(simplifyGraph(g)));
}

TEST(MatmulRewrites, AMeanOverTheRowsOfAProductAveragesTheLeftOperand) {
  Graph g("mean_rows");
  Tensor x = g.input("x", DType::F32, {2, 30, 20});
  Tensor w = g.input("w", DType::F32, {20, 10});
  g.output(mean(matmul(x, w), {1}, true), "y");
  MatmulRewriteResult r = rewriteChecked(g);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_NE(body(r.graph).find("mean %x axes=[1] keepdim=true : f32[2, 1, 20]"), std::string::npos)
      << printGraph(r.graph);
}

TEST(MatmulRewrites, AHalfSumWithoutKeepdimKeepsItsShapeAndDType) {
  Graph g("half_sum");
  Tensor x = g.input("x", DType::F16, {3, 20, 12});
  Tensor w = g.input("w", DType::F16, {30, 12});
  g.output(sum(matmul(x, transpose(w)), {-1}), "y");
  MatmulRewriteResult r = rewriteChecked(g, true, 4e-3);
  ASSERT_EQ(r.applied.size(), 1u);
  const Node &y = r.graph.node(r.graph.outputs()[0]);
  EXPECT_EQ(y.shape, (Shape{3, 20}));
  EXPECT_EQ(y.dtype, DType::F16);
  EXPECT_EQ(y.name, "y");
}

TEST(MatmulRewrites, AProductWithAnotherUseIsNotSummedFirst) {
  Graph g("two_uses");
  Tensor x = g.input("x", DType::F32, {16, 40});
  Tensor w = g.input("w", DType::F32, {40, 50});
  Tensor y = matmul(x, w);
  g.output(sum(y, {1}), "s");
  g.output(y, "y");
  MatmulRewriteResult r = rewriteChecked(g);
  EXPECT_TRUE(r.applied.empty());
}

TEST(MatmulRewrites, AScalarFactorMovesAfterTheProduct) {
  Graph g("scaled");
  Tensor x = g.input("x", DType::F32, {16, 40});
  Tensor w = g.input("w", DType::F32, {40, 50});
  g.output(matmul(x * 0.5, w), "y");
  MatmulRewriteResult r = rewriteChecked(g);
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::ScalarFactor);
  EXPECT_EQ(body(r.graph), "  %t1 = matmul %x, %w : f32[16, 50]\n"
                           "  %y = mul %t1, 0.5 : f32[16, 50]\n"
                           "  return %y\n")
      << printGraph(r.graph);
  EXPECT_TRUE(rewriteChecked(g, /*reassociate=*/false).applied.empty());
}

TEST(MatmulRewrites, TheCompilerNamesThemAndOnlyWithFusion) {
  Graph g("gemv");
  Tensor a = g.input("a", DType::F32, {64, 300});
  Tensor x = g.input("x", DType::F32, {300, 1});
  g.output(matmul(a, x) + 1.0, "y");
  CompileOptions opt;
  opt.compileKernels = false;
  CompiledGraph c = compileGraph(g, opt);
  EXPECT_EQ(c.numKernels(), 1u);
  EXPECT_NE(c.fusedText().find("rewrites:\n  %t0: a product of one output row or column"),
            std::string::npos)
      << c.fusedText();
  opt.fusion = false;
  CompiledGraph eager = compileGraph(g, opt);
  EXPECT_TRUE(eager.rewrites.empty());
  EXPECT_EQ(eager.fusedText().find("rewrites:"), std::string::npos);
}

/// CompileOptions::tf32x3 runs the split product on the tensor cores (its
/// kernel found by the product's name, which the parts' nodes must not take:
/// here the product has a name the graph would give a fresh value), the
/// epilogue in it; without the flag the CUDA cores; checks widened for it.
/// By default (tf32x3 on) where the product has tiles enough; one of too few
/// tiles is split along k on the CUDA cores instead.
TEST(MatmulRewrites, TheCompilerRunsTheTf32x3SplitOnTensorCores) {
  Graph g = parseGraphs(R"(graph linear(%x: f32[4096, 2048], %w: f32[2048, 2048], %b: f32[2048]) {
  %t0 = permute %w perm=[1, 0]
  %t1 = matmul %x, %t0
  %t2 = add %t1, %b
  %y = tanh %t2
  return %y
})")[0];
  CompileOptions opt;
  opt.compileKernels = false;
  EXPECT_TRUE(opt.tf32x3); // the default
  CompiledGraph c = compileGraph(g, opt);
  ASSERT_EQ(c.numKernels(), 3u) << c.fusedText(); // the parts of x and of w, the product
  EXPECT_NE(c.fusedText().find("matmul %t1 [4096, 6144] @ [6144, 2048] with its elementwise "
                               "epilogue\n  schedule: matmul on tensor cores (wgmma m64n"),
            std::string::npos)
      << c.fusedText();
  EXPECT_NE(c.fusedText().find("%t1: an f32 product as three TF32 products"), std::string::npos);
  EXPECT_TRUE(c.tf32x3Matmuls);
  EXPECT_FALSE(c.tf32Matmuls);
  opt.tf32x3 = false;
  CompiledGraph cores = compileGraph(g, opt);
  EXPECT_NE(cores.fusedText().find("matmul on CUDA cores"), std::string::npos);
  EXPECT_FALSE(cores.tf32x3Matmuls);
  // Over the line (mn / (m + n) = 824) but 182 tiles: split along k on the
  // CUDA cores; without split-K (splitk=0, or no reassociation) whole there.
  opt.tf32x3 = true;
  Graph few = parseGraphs(R"(graph few(%x: f32[1600, 4096], %w: f32[4096, 1700]) {
  %y = matmul %x, %w
  return %y
})")[0];
  EXPECT_TRUE(tf32x3Pays(1600, 1700, 4096));
  CompiledGraph split = compileGraph(few, opt);
  EXPECT_FALSE(split.tf32x3Matmuls) << split.fusedText();
  EXPECT_NE(split.fusedText().find("split along k"), std::string::npos) << split.fusedText();
  CompileOptions whole = opt;
  whole.scheduleOverrides.splitk = 0;
  CompiledGraph unsplit = compileGraph(few, whole);
  EXPECT_FALSE(unsplit.tf32x3Matmuls) << unsplit.fusedText();
  EXPECT_EQ(unsplit.fusedText().find("split along k"), std::string::npos) << unsplit.fusedText();
  whole = opt;
  whole.reassociate = false;
  EXPECT_FALSE(compileGraph(few, whole).tf32x3Matmuls);
}

/// The override tf32x3=1 takes a product under the line (mn / (m + n) =
/// 254, 512 tiles) to three TF32 products, tf32x3=0 keeps one over it on
/// the CUDA cores; neither moves a product of too few tiles (split-K's, or
/// less than a round of the SMs).
TEST(MatmulRewrites, TheTf32x3OverrideMovesTheLineNotTheErrorRules) {
  Graph under = parseGraphs(R"(graph under(%a: f32[32768, 1024], %b: f32[1024, 256]) {
  %y = matmul %a, %b
  return %y
})")[0];
  EXPECT_FALSE(tf32x3Pays(32768, 256, 1024));
  CompileOptions opt;
  opt.compileKernels = false;
  EXPECT_FALSE(compileGraph(under, opt).tf32x3Matmuls);
  opt.scheduleOverrides.tf32x3 = true;
  CompiledGraph forced = compileGraph(under, opt);
  EXPECT_TRUE(forced.tf32x3Matmuls) << forced.fusedText();
  Graph few = parseGraphs(R"(graph few(%x: f32[1600, 4096], %w: f32[4096, 1700]) {
  %y = matmul %x, %w
  return %y
})")[0];
  EXPECT_FALSE(compileGraph(few, opt).tf32x3Matmuls);
  // Over the line (512) but 64 tiles, less than a round of the SMs (and k
  // too short for split-K): the parts' copies cost more than they save,
  // override or not.
  Graph small = parseGraphs(R"(graph small(%a: f32[1024, 256], %b: f32[256, 1024]) {
  %y = matmul %a, %b
  return %y
})")[0];
  EXPECT_TRUE(tf32x3Pays(1024, 1024, 256));
  EXPECT_FALSE(compileGraph(small, opt).tf32x3Matmuls);
  opt.scheduleOverrides.tf32x3.reset();
  EXPECT_FALSE(compileGraph(small, opt).tf32x3Matmuls);
  Graph over = parseGraphs(R"(graph over(%a: f32[4096, 4096], %b: f32[4096, 4096]) {
  %y = matmul %a, %b
  return %y
})")[0];
  opt.scheduleOverrides.tf32x3 = false;
  CompiledGraph exact = compileGraph(over, opt);
  EXPECT_FALSE(exact.tf32x3Matmuls);
  EXPECT_NE(exact.fusedText().find("matmul on CUDA cores"), std::string::npos);
}

/// Under the line, an exact f32 product of x and nn.Linear's W (both
/// k-major) of 32 rows or more and tiles enough is split into three TF32
/// products in its kernel (split3): no copies, one kernel. Not where
/// --exact-f32 (tf32x3=0) or TF32 is asked, for f16, for few rows, a short
/// k or tiles too few for a wave (split3=1 takes those), for a row-major W
/// (refused by split3=1 with the reason) or without Hopper. The tile's
/// rows are A's rows rounded up to 8.
TEST(MatmulRewrites, ExactProductsOfFewRowsAreSplitInTheKernel) {
  auto linear = [](int64_t m, int64_t n, int64_t k, const char *dtype = "f32",
                   bool rowMajorW = false) {
    std::string w = rowMajorW ? "[" + std::to_string(k) + ", " + std::to_string(n) + "]"
                              : "[" + std::to_string(n) + ", " + std::to_string(k) + "]";
    std::string text = std::string("graph lin(%x: ") + dtype + "[" + std::to_string(m) + ", " +
                       std::to_string(k) + "], %w: " + dtype + w + ") {\n" +
                       (rowMajorW ? "  %y = matmul %x, %w\n"
                                  : "  %wt = permute %w perm=[1, 0]\n  %y = matmul %x, %wt\n") +
                       "  return %y\n}\n";
    return parseGraphs(text)[0];
  };
  CompileOptions opt;
  opt.compileKernels = false;
  const char *split = "exact f32 as three TF32 products split in the kernel (wgmma m64n";
  CompiledGraph kb = compileGraph(linear(128, 32768, 32768), opt);
  EXPECT_EQ(kb.numKernels(), 1u) << kb.fusedText();
  EXPECT_NE(kb.fusedText().find(std::string(split) + "128k8"), std::string::npos)
      << kb.fusedText();
  EXPECT_TRUE(kb.tf32x3Matmuls);
  EXPECT_FALSE(kb.tf32Matmuls);
  CompileOptions exact = opt;
  exact.tf32x3 = false;
  EXPECT_NE(compileGraph(linear(128, 32768, 32768), exact).fusedText().find("matmul on CUDA cores"),
            std::string::npos);
  CompileOptions tf32 = opt;
  tf32.allowTf32 = true;
  CompiledGraph t = compileGraph(linear(128, 32768, 32768), tf32);
  EXPECT_EQ(t.fusedText().find("split in the kernel"), std::string::npos) << t.fusedText();
  EXPECT_TRUE(t.tf32Matmuls);
  EXPECT_EQ(compileGraph(linear(128, 32768, 32768, "f16"), opt).fusedText().find("split in"),
            std::string::npos);
  EXPECT_EQ(compileGraph(linear(16, 32768, 32768), opt).fusedText().find("split in"),
            std::string::npos);
  // 133 tiles (a second round of one tile), the tile narrowed to 104 rows;
  // 32 tiles (a quarter of a wave) stay on the CUDA cores unless split3=1
  std::string oddText = compileGraph(linear(97, 17001, 1004), opt).fusedText();
  EXPECT_NE(oddText.find(std::string(split) + "104k8"), std::string::npos) << oddText;
  Graph half = linear(128, 4096, 128); // (too short a k for split-K to slice)
  EXPECT_EQ(compileGraph(half, opt).fusedText().find("split in"), std::string::npos);
  CompileOptions forced = opt;
  forced.scheduleOverrides.split3 = 1;
  EXPECT_NE(compileGraph(half, forced).fusedText().find("split in"), std::string::npos);
  // k under 128
  EXPECT_EQ(compileGraph(linear(128, 32768, 64), opt).fusedText().find("split in"),
            std::string::npos);
  EXPECT_EQ(compileGraph(linear(128, 32768, 32768, "f32", true), opt).fusedText().find("split in"),
            std::string::npos);
  try {
    compileGraph(linear(128, 32768, 32768, "f32", true), forced);
    ADD_FAILURE() << "split3=1 took a row-major W";
  } catch (const CompileError &e) {
    EXPECT_NE(std::string(e.what()).find("TF32's wgmma reads only k-major operands"),
              std::string::npos)
        << e.what();
  }
  // Split-K leaves whole a product the kernel splits with tiles for a wave
  // (128 x 16384 x 16384: 128 tiles), and slices one of too few (128 x
  // 8192 x 8192: 64 tiles) into a batch the kernel splits.
  CompiledGraph whole = compileGraph(linear(128, 16384, 16384), opt);
  EXPECT_EQ(whole.numKernels(), 1u) << whole.fusedText();
  EXPECT_EQ(whole.fusedText().find("split along k"), std::string::npos) << whole.fusedText();
  CompiledGraph sliced = compileGraph(linear(128, 8192, 8192), opt);
  EXPECT_NE(sliced.fusedText().find("split along k"), std::string::npos) << sliced.fusedText();
  EXPECT_NE(sliced.fusedText().find("split in the kernel"), std::string::npos);
  CompileOptions ampere = opt;
  ampere.arch = "sm_80";
  EXPECT_EQ(compileGraph(linear(128, 32768, 32768), ampere).fusedText().find("split in"),
            std::string::npos);
}

/// A 3-D tensor times a matrix pays as one product of all its rows: the
/// matrix's parts are copied once. [256, 256, 256] @ [256, 768] is 256 rows
/// a batch (mn / (m + n) = 192, under the line) but 65536 in all (759).
TEST(MatmulRewrites, ATensorTimesAMatrixPaysAsAllItsRows) {
  Graph g = parseGraphs(R"(graph t(%a: f32[256, 256, 256], %b: f32[256, 768]) {
  %c = matmul %a, %b
  return %c
})")[0];
  EXPECT_FALSE(tf32x3Pays(256, 768, 256));
  EXPECT_TRUE(tf32x3Pays(256 * 256, 768, 256));
  CompileOptions opt;
  opt.compileKernels = false;
  CompiledGraph c = compileGraph(g, opt);
  EXPECT_TRUE(c.tf32x3Matmuls) << c.fusedText();
}

} // namespace

namespace {

TEST(MatmulRewrites, AScalarFactorStaysWhenTheRestIsAViewOfALiteral) {
  // A mean's gradient is a broadcast literal times 1/n: moved out, the
  // matmul would read the broadcast literal, which no kernel stores (the
  // fuzzer's seed corpus crashed the program's assembly on it).
  Graph g("mean_grad");
  Tensor x = g.input("x", DType::F32, {4, 3});
  Tensor w = g.input("w", DType::F32, {3, 2});
  Tensor dw = grad(mean(matmul(x, w)), w);
  g.output(dw, "dw");
  CompileOptions opt;
  opt.compileKernels = false;
  CompiledGraph c = compileGraph(g, opt);
  for (const MatmulRewrite &r : c.rewrites)
    EXPECT_NE(r.kind, MatmulRewriteKind::ScalarFactor) << c.fusedText();
  for (const ProgramKernel &k : c.program.kernels)
    for (int b : k.args)
      EXPECT_GE(b, 0) << c.fusedText();
}

} // namespace

namespace {

/// Hopper's TMA reads rows of whole 16-byte units: a 16-bit operand whose
/// rows are not (k = 1001 halves, or nn.Linear's W with 1001 columns read
/// transposed) is padded to the next 8 elements and sliced back; the pad is
/// the copy, the slice a view. Products already aligned, f32 ones, small
/// ones and targets without TMA are left as they are.
TEST(MatmulRewrites, MisalignedHalfOperandsArePaddedForTma) {
  Graph g("odd");
  Tensor x = g.input("x", DType::F16, {300, 1001});
  Tensor w = g.input("w", DType::F16, {997, 1001}); // [out, in]
  g.output(matmul(x, transpose(w)), "y");
  MatmulRewriteResult r = rewriteMatmuls(g, {.alignRows = true});
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::AlignedRows);
  Graph clean = simplifyGraph(r.graph);
  EXPECT_NO_THROW(verifyGraph(clean));
  std::string text = body(clean);
  EXPECT_NE(text.find("pad %x before=[0, 0] after=[0, 7] value=0 : f16[300, 1008]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("pad %w before=[0, 0] after=[0, 7] value=0 : f16[997, 1008]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("slice"), std::string::npos) << text;
  EXPECT_NE(text.find("permute"), std::string::npos) << text; // W still read transposed
  std::vector<HostTensor> in = randomInputs(g, 4);
  CompareResult c = compareTensors(evaluate(clean, in)[0], evaluate(g, in)[0], Tolerance{0});
  EXPECT_TRUE(c.ok) << c.summary; // padding with zeros changes no sum

  EXPECT_TRUE(rewriteMatmuls(g, {.alignRows = false}).applied.empty());
  Graph aligned("aligned"), f32("f32"), small("small");
  for (Graph *h : {&aligned, &f32, &small}) {
    DType t = h == &f32 ? DType::F32 : DType::F16;
    int64_t k = h == &aligned ? 1008 : 1001, m = h == &small ? 8 : 300;
    Tensor a = h->input("a", t, {m, k});
    Tensor b = h->input("b", t, {k, 1000});
    h->output(matmul(a, b), "y");
    EXPECT_TRUE(rewriteMatmuls(*h, {.alignRows = true}).applied.empty()) << printGraph(*h);
  }
}

} // namespace

namespace {

/// The CUDA cores read f32 tiles by float4s only where rows are whole
/// float4s: with k = 1001 both operands gain three zero columns (rows) of k,
/// each layout padded along its own axis; a row-major B with n = 1001 is also
/// padded along n and sliced back. The product is unchanged (0 * 0 terms), and
/// the schedule then reads every tile by float4s.
TEST(MatmulRewrites, F32OperandsArePaddedToWholeFloat4s) {
  struct Case {
    bool transA, transB;
    const char *padA, *padB; // what the pads print
  };
  const Case cases[] = {
      {false, false, "after=[0, 3] value=0 : f32[1400, 1004]", "after=[3, 3] value=0 : f32[1004, 1004]"},
      {false, true, "after=[0, 3] value=0 : f32[1400, 1004]", "after=[0, 3] value=0 : f32[1001, 1004]"},
      {true, false, "after=[3, 0] value=0 : f32[1004, 1400]", "after=[3, 3] value=0 : f32[1004, 1004]"},
      {true, true, "after=[3, 0] value=0 : f32[1004, 1400]", "after=[0, 3] value=0 : f32[1001, 1004]"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string("A ") + (c.transA ? "transposed" : "row-major") + ", B " +
                 (c.transB ? "transposed" : "row-major"));
    Graph g("odd");
    Tensor a = c.transA ? transpose(g.input("a", DType::F32, {1001, 1400}))
                        : g.input("a", DType::F32, {1400, 1001});
    Tensor b = c.transB ? transpose(g.input("b", DType::F32, {1001, 1001}))
                        : g.input("b", DType::F32, {1001, 1001});
    g.output(matmul(a, b) * 2.0, "y");
    MatmulRewriteResult r = rewriteMatmuls(g, {.float4Rows = true});
    ASSERT_EQ(r.applied.size(), 1u);
    EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::Float4Rows);
    EXPECT_NE(r.applied[0].text().find("whole float4s"), std::string::npos);
    Graph clean = simplifyGraph(r.graph);
    EXPECT_NO_THROW(verifyGraph(clean));
    std::string text = body(clean);
    EXPECT_NE(text.find(c.padA), std::string::npos) << text;
    EXPECT_NE(text.find(c.padB), std::string::npos) << text;
    std::vector<HostTensor> in = randomInputs(g, 5);
    CompareResult cmp = compareTensors(evaluate(clean, in)[0], evaluate(g, in)[0], Tolerance{0});
    EXPECT_TRUE(cmp.ok) << cmp.summary; // padding with zeros changes no sum

    CompileOptions opt;
    opt.arch = "sm_90";
    opt.stopAfter = Stage::Fused;
    opt.scheduleOverrides.splitk = 0; // 88 tiles would be split along k
    opt.tf32x3 = false;               // (the CUDA cores' template under test)
    std::string fused = compileGraph(g, opt).fusedText();
    EXPECT_NE(fused.find("A by float4"), std::string::npos) << fused;
    EXPECT_NE(fused.find("B by float4"), std::string::npos) << fused;
    EXPECT_EQ(fused.find("by elements"), std::string::npos) << fused;
    EXPECT_NE(fused.find("whole float4s"), std::string::npos) << fused;
  }

  // A batch of A times one B (ranks 3 and 2): n = 1001 is B's, padded and sliced back.
  {
    Graph g("batched");
    g.output(matmul(g.input("a", DType::F32, {3, 1400, 1001}), g.input("b", DType::F32, {1001, 1001})),
             "y");
    MatmulRewriteResult r = rewriteMatmuls(g, {.float4Rows = true});
    ASSERT_EQ(r.applied.size(), 1u);
    std::string text = body(simplifyGraph(r.graph));
    EXPECT_NE(text.find("pad %a before=[0, 0, 0] after=[0, 0, 3] value=0 : f32[3, 1400, 1004]"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("pad %b before=[0, 0] after=[3, 3] value=0 : f32[1004, 1004]"),
              std::string::npos)
        << text;
  }

  // Off, already whole, too small for the copies to pay, or 16-bit: as written.
  Graph whole("whole"), small("small"), half("half");
  for (Graph *h : {&whole, &small, &half}) {
    DType t = h == &half ? DType::F16 : DType::F32;
    int64_t k = h == &whole ? 1004 : 1001, m = h == &small ? 64 : 1400;
    h->output(matmul(h->input("a", t, {m, k}), h->input("b", t, {k, 1000})), "y");
    EXPECT_TRUE(rewriteMatmuls(*h, {.float4Rows = true}).applied.empty()) << printGraph(*h);
  }
  Graph g("odd");
  g.output(matmul(g.input("a", DType::F32, {1400, 1001}), g.input("b", DType::F32, {1001, 1000})),
           "y");
  EXPECT_TRUE(rewriteMatmuls(g, {.float4Rows = false}).applied.empty());
}

/// TF32's operands k-major (rewriteTf32Operands): a row-major B is
/// transposed by a copy (a pad of nothing, read through a permute), an A
/// stored transposed likewise, an odd k pads both; nn.Linear's layout and
/// products too small for copies are left alone. The copies change no value.
TEST(MatmulRewrites, Tf32OperandsAreCopiedKMajor) {
  struct Case {
    int64_t m, n, k;
    bool aT, bT;
    const char *expect; // in the rewritten graph; empty: no rewrite
  };
  const Case cases[] = {
      {512, 256, 384, false, false, "pad %t0 before=[0, 0] after=[0, 0] value=0 : f32[256, 384]"},
      {512, 256, 384, true, true, "pad %t2 before=[0, 0] after=[0, 0] value=0 : f32[512, 384]"},
      {512, 256, 383, false, true, "pad %a before=[0, 0] after=[0, 1] value=0 : f32[512, 384]"},
      {512, 256, 384, false, true, ""}, // nn.Linear's layout: k-major already
      {64, 64, 64, false, false, ""},   // 2^18 multiply-adds: too small to copy
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.k) + (c.aT ? " A^T" : " A") + (c.bT ? " B^T" : " B"));
    Graph g("tf32");
    Tensor a = c.aT ? transpose(g.input("a", DType::F32, {c.k, c.m}))
                    : g.input("a", DType::F32, {c.m, c.k});
    Tensor b = c.bT ? transpose(g.input("b", DType::F32, {c.n, c.k}))
                    : g.input("b", DType::F32, {c.k, c.n});
    g.output(matmul(a, b), "c");
    MatmulRewriteResult r = rewriteTf32Operands(g);
    if (!*c.expect) {
      EXPECT_TRUE(r.applied.empty());
      continue;
    }
    ASSERT_EQ(r.applied.size(), 1u);
    EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::Tf32Operands);
    EXPECT_NO_THROW(verifyGraph(r.graph));
    std::string text = body(r.graph);
    EXPECT_NE(text.find(c.expect), std::string::npos) << text;
    std::vector<HostTensor> in = randomInputs(g, 3);
    CompareResult cmp = compareTensors(evaluate(r.graph, in)[0], evaluate(g, in)[0], Tolerance{0});
    EXPECT_TRUE(cmp.ok) << cmp.summary;
  }
}

/// Three TF32 products (rewriteMatmuls' tf32x3): where the copies pay, each
/// operand becomes its parts side by side along k, k-major ([Ahi, Ahi, Alo]
/// and [Bhi, Blo, Bhi], each padded to whole float4s), one product of them;
/// the value is within 3 * 2^-22 of each term of the product as written.
/// Without the flag, or where the rule says no, the graph is unchanged.
TEST(MatmulRewrites, Tf32x3SplitsLargeProductsIntoTf32Parts) {
  EXPECT_TRUE(tf32x3Pays(4096, 4096, 4096));
  EXPECT_TRUE(tf32x3Pays(1024, 8192, 8192)); // nn.Linear of 1024 rows: mn / (m + n) = 910
  EXPECT_TRUE(tf32x3Pays(1600, 1700, 77));   // 824
  EXPECT_TRUE(tf32x3Pays(600, 700, 77));     // 323
  EXPECT_FALSE(tf32x3Pays(500, 600, 77));    // 273
  EXPECT_FALSE(tf32x3Pays(128, 32768, 32768)); // 128 rows: the copies cost more
  EXPECT_FALSE(tf32x3Pays(32, 32768, 32768));  // 32 rows: likewise
  EXPECT_TRUE(tf32x3Pays(4096, 768, 4096));    // mn / (m + n) = 647
  EXPECT_TRUE(tf32x3Pays(512, 2048, 1024));    // 410, KernelBench's batched product
  EXPECT_TRUE(tf32x3Pays(4096, 384, 4096));    // 351
  EXPECT_FALSE(tf32x3Pays(4096, 256, 4096));   // 241
  EXPECT_FALSE(tf32x3Pays(64, 64, 64));        // 2^18 multiply-adds

  struct Case {
    int64_t batch, m, n, k;
    bool aT, bT;
  };
  const Case cases[] = {{1, 1600, 1700, 77, false, true}, {1, 1600, 1700, 136, true, false},
                        {2, 1520, 1600, 100, false, false}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.k) + (c.aT ? " A^T" : " A") + (c.bT ? " B^T" : " B"));
    Graph g("tf32x3");
    auto input = [&](const char *name, int64_t rows, int64_t cols) {
      return c.batch > 1 ? g.input(name, DType::F32, {c.batch, rows, cols})
                         : g.input(name, DType::F32, {rows, cols});
    };
    auto swap = [&](Tensor t) { return c.batch > 1 ? t.permute({0, 2, 1}) : transpose(t); };
    Tensor a = c.aT ? swap(input("a", c.k, c.m)) : input("a", c.m, c.k);
    Tensor b = c.bT ? swap(input("b", c.n, c.k)) : input("b", c.k, c.n);
    g.output(matmul(a, b), "c");
    EXPECT_TRUE(rewriteMatmuls(g, {}).applied.empty()); // not asked for
    MatmulRewriteResult r = rewriteMatmuls(g, {.alignRows = true, .tf32x3 = true});
    ASSERT_EQ(r.applied.size(), 1u);
    EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::Tf32x3);
    EXPECT_EQ(r.applied[0].value, "c");
    EXPECT_NE(r.applied[0].text().find("three TF32 products"), std::string::npos);
    EXPECT_NO_THROW(verifyGraph(r.graph));
    std::string text = body(r.graph);
    int64_t kp = (c.k + 3) / 4 * 4;
    for (std::string want : {std::string("round_tf32"), std::string("where"),
                             "f32[" + std::string(c.batch > 1 ? std::to_string(c.batch) + ", " : "") +
                                 std::to_string(c.m) + ", " + std::to_string(3 * kp) + "]"})
      EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
    std::vector<HostTensor> in = randomInputs(g, 5);
    HostTensor got = evaluate(r.graph, in)[0], want = evaluate(g, in)[0];
    EvalOptions mags;
    mags.magnitudes = true;
    HostTensor size = evaluate(g, in, mags)[0]; // sum |a| |b| of each output
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i)
      worst = std::max(worst, std::fabs(got.get(i) - want.get(i)) / size.get(i));
    // (both values rounded to f32 when stored: 2^-24 each)
    EXPECT_LE(worst, 3 * 0x1p-22 + 0x1p-23) << "the parts' product is off by " << worst;
    EXPECT_GT(worst, 0.0); // (the parts are not the operands)
  }
  // Infinities and NaN come out where the product as written has them: an
  // infinite x's lo is 0 and the hi that meets the other's lo is 0, so no
  // inf - inf or inf * 0 appears that the product does not have; the
  // largest f32s, whose TF32 rounding overflows, stay finite.
  Graph g("tf32x3_specials");
  Tensor a = g.input("a", DType::F32, {1600, 77});
  Tensor b = g.input("b", DType::F32, {1700, 77});
  g.output(matmul(a, transpose(b)), "c");
  MatmulRewriteResult r = rewriteMatmuls(g, {.alignRows = true, .tf32x3 = true});
  ASSERT_EQ(r.applied.size(), 1u);
  std::vector<HostTensor> in = randomInputs(g, 7);
  const double inf = std::numeric_limits<double>::infinity();
  in[0].set(0 * 77 + 5, inf);     // row 0: +-inf by the sign of b's column
  in[0].set(1 * 77 + 9, -inf);
  in[0].set(2 * 77 + 3, std::nan(""));
  in[1].set(4 * 77 + 11, inf);    // column 4
  in[0].set(3 * 77 + 1, 0x1.fffffep127); // rounds past TF32's largest
  in[1].set(6 * 77 + 1, 1e-30);
  HostTensor got = evaluate(r.graph, in)[0], want = evaluate(g, in)[0];
  int64_t specials = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double w = want.get(i), v = got.get(i);
    if (std::isnan(w) || std::isinf(w)) {
      ++specials;
      EXPECT_TRUE(std::isnan(w) ? std::isnan(v) : v == w) << "at " << i << ": " << v << " for " << w;
    } else {
      EXPECT_TRUE(std::isfinite(v)) << "at " << i << ": " << v << " for " << w;
    }
  }
  EXPECT_GT(specials, 1700 * 3);
  EXPECT_NEAR(got.get(3 * 1700 + 6), want.get(3 * 1700 + 6), std::fabs(want.get(3 * 1700 + 6)) * 1e-3);
}

} // namespace

TEST(MatmulRewrites, ASumReachedThroughLinearOpsMovesOntoTheProduct) {
  // KernelBench level 2 #14: x @ W.T, divided, summed over the columns, scaled
  Graph g("gemm_div_sum");
  Tensor x = g.input("x", DType::F32, {24, 40});
  Tensor w = g.input("w", DType::F32, {50, 40});
  g.output(sum(matmul(x, transpose(w)) / 2.0f, {1}, true) * 1.5f, "y");
  MatmulRewriteResult r = rewriteChecked(g);
  ASSERT_EQ(r.applied.size(), 2u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::SumThroughLinear);
  EXPECT_EQ(r.applied[1].kind, MatmulRewriteKind::SumOfProduct);
  EXPECT_EQ(printGraph(r.graph).find("matmul"), std::string::npos) << printGraph(r.graph);
}

TEST(MatmulRewrites, AMeanThroughABiasAndATermMovesOntoTheProduct) {
  // mean(x @ W.T + b - s) over the columns, and over every axis: the bias is
  // constant along neither sum's rows, s varies along both
  for (bool allAxes : {false, true}) {
    Graph g("gemm_bias_sub_mean");
    Tensor x = g.input("x", DType::F32, {17, 33});
    Tensor w = g.input("w", DType::F32, {29, 33});
    Tensor b = g.input("b", DType::F32, {29});
    Tensor s = g.input("s", DType::F32, {17, 29});
    Tensor y = -(matmul(x, transpose(w)) + b) - s;
    g.output(allAxes ? mean(y) : mean(y, {1}), "y");
    MatmulRewriteResult r = rewriteChecked(g);
    ASSERT_GE(r.applied.size(), 2u) << printGraph(r.graph);
    EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::SumThroughLinear);
    EXPECT_EQ(printGraph(r.graph).find("matmul"), std::string::npos) << printGraph(r.graph);
  }
}

TEST(MatmulRewrites, AMovedSumLeavesTheNamesOfLaterValues) {
  // values named like fresh ones (t0, t1, ...), as printed graphs name them:
  // the nodes the move makes must not take the name of an output after it
  Graph g = parseGraphs(R"(graph named(%x: f32[8, 12], %w: f32[12, 10]) {
  %t0 = matmul %x, %w
  %t1 = div %t0, 2
  %t2 = sum %t1 axes=[1] keepdim=true
  %t3 = exp %x
  %t4 = mul %t3, 3
  return %t2, %t4
})")[0];
  MatmulRewriteResult r = rewriteChecked(g);
  ASSERT_FALSE(r.applied.empty());
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::SumThroughLinear);
  ASSERT_EQ(r.graph.outputs().size(), 2u);
  EXPECT_EQ(r.graph.node(r.graph.outputs()[0]).name, "t2");
  EXPECT_EQ(r.graph.node(r.graph.outputs()[1]).name, "t4") << printGraph(r.graph);
}

TEST(MatmulRewrites, ASumThroughAFactorAlongItsAxisOrAnotherUseStays) {
  // a factor that varies along the summed axis is not linear there; a
  // product or an op with another use must be computed anyway; a sum over
  // the batch axis gains nothing
  Graph g("sums_that_stay");
  Tensor x = g.input("x", DType::F32, {4, 16, 24});
  Tensor w = g.input("w", DType::F32, {24, 20});
  Tensor f = g.input("f", DType::F32, {20});
  Tensor p = matmul(x, w);
  g.output(sum(p * f, {2}), "varying");
  Tensor q = matmul(x, w) * 3.0f;
  g.output(sum(q, {2}), "used_twice");
  g.output(q, "q");
  g.output(sum(matmul(x, w) * 2.0f, {0}), "batch");
  MatmulRewriteResult r = rewriteChecked(g);
  for (const MatmulRewrite &m : r.applied)
    EXPECT_NE(m.kind, MatmulRewriteKind::SumThroughLinear) << m.text();
}

/// nn.Linear's layout with k = 3001: both operands padded along k with zeros
/// to 3 slices of 1008, viewed as a batch of slices, multiplied and summed;
/// the bias follows the sum. Only with reassociation.
TEST(MatmulRewrites, SplitKSlicesKIntoABatchAndSumsIt) {
  Graph g("linear");
  Tensor x = g.input("x", DType::F32, {40, 3001});
  Tensor w = g.input("w", DType::F32, {24, 3001});
  Tensor b = g.input("b", DType::F32, {24});
  g.output(matmul(x, w.permute({1, 0})) + b, "y");
  SplitKOptions forced;
  forced.force = 3;
  MatmulRewriteResult r = rewriteMatmuls(g, {.splitK = forced});
  ASSERT_EQ(r.applied.size(), 1u);
  EXPECT_EQ(r.applied[0].kind, MatmulRewriteKind::SplitK);
  EXPECT_EQ(r.applied[0].detail, "3 slices of 1008");
  Graph clean = simplifyGraph(r.graph);
  // (the sum keeps the product's name, %t1; fresh names avoid the graph's;
  // a sum of 8 slices or fewer is their adds, Simplify.h)
  EXPECT_EQ(body(clean), "  %t2 = pad %x before=[0, 0] after=[0, 23] value=0 : f32[40, 3024]\n"
                         "  %t3 = reshape %t2 shape=[40, 3, 1008] : f32[40, 3, 1008]\n"
                         "  %t4 = permute %t3 perm=[1, 0, 2] : f32[3, 40, 1008]\n"
                         "  %t5 = pad %w before=[0, 0] after=[0, 23] value=0 : f32[24, 3024]\n"
                         "  %t6 = reshape %t5 shape=[24, 3, 1008] : f32[24, 3, 1008]\n"
                         "  %t7 = permute %t6 perm=[1, 2, 0] : f32[3, 1008, 24]\n"
                         "  %t8 = matmul %t4, %t7 : f32[3, 40, 24]\n"
                         "  %t9 = slice %t8 axis=0 start=0 end=1 : f32[1, 40, 24]\n"
                         "  %t10 = slice %t8 axis=0 start=1 end=2 : f32[1, 40, 24]\n"
                         "  %t11 = add %t9, %t10 : f32[1, 40, 24]\n"
                         "  %t12 = slice %t8 axis=0 start=2 end=3 : f32[1, 40, 24]\n"
                         "  %t13 = add %t11, %t12 : f32[1, 40, 24]\n"
                         "  %t1 = reshape %t13 shape=[40, 24] : f32[40, 24]\n"
                         "  %y = add %t1, %b : f32[40, 24]\n"
                         "  return %y\n")
      << printGraph(clean);
  std::vector<HostTensor> in = randomInputs(g, 3);
  CompareResult c = compareTensors(evaluate(clean, in)[0], evaluate(g, in)[0], Tolerance{1e-4});
  EXPECT_TRUE(c.ok) << c.summary;
  // switched off: the graph as it was
  EXPECT_TRUE(rewriteMatmuls(g, {.reassociate = false, .splitK = forced}).applied.empty());
  SplitKOptions never;
  never.rule = [](int64_t, int64_t, int64_t, int64_t) -> int64_t { return 8; };
  never.force = 1;
  EXPECT_TRUE(rewriteMatmuls(g, {.splitK = never}).applied.empty());
}

/// Every layout the split takes (A and B each stored either way), k a
/// multiple of the slices and not, m and n whole float4s and not (a
/// contiguous m or n is padded and sliced back); views stay whole.
TEST(MatmulRewrites, SplitKOnEveryLayoutComputesTheProduct) {
  SplitKOptions forced;
  forced.force = 4;
  for (int64_t k : {64, 77})
    for (int64_t m : {12, 13})
    for (bool aT : {false, true})
      for (bool bT : {false, true}) {
        int64_t n = m == 12 ? 20 : 21;
        SCOPED_TRACE(std::to_string(k) + " " + std::to_string(m) + (aT ? " A^T" : " A") +
                     (bT ? " B^T" : " B"));
        Graph g("mm");
        Tensor a = aT ? g.input("a", DType::F32, {k, m}).permute({1, 0})
                      : g.input("a", DType::F32, {m, k});
        Tensor b = bT ? g.input("b", DType::F32, {n, k}).permute({1, 0})
                      : g.input("b", DType::F32, {k, n});
        g.output(matmul(a, b), "c");
        MatmulRewriteResult r = rewriteMatmuls(g, {.splitK = forced});
        ASSERT_EQ(r.applied.size(), 1u);
        Graph clean = simplifyGraph(r.graph);
        EXPECT_NO_THROW(verifyGraph(clean));
        std::vector<HostTensor> in = randomInputs(g, 5);
        CompareResult c =
            compareTensors(evaluate(clean, in)[0], evaluate(g, in)[0], Tolerance{1e-4});
        EXPECT_TRUE(c.ok) << c.summary << "\n" << printGraph(clean);
      }
  Graph odd("oddn"); // a row-major B whose n is not whole float4s: padded, sliced back
  Tensor a = odd.input("a", DType::F32, {12, 64}), b = odd.input("b", DType::F32, {64, 21});
  odd.output(matmul(a, b), "c");
  Graph split = simplifyGraph(rewriteMatmuls(odd, {.splitK = forced}).graph);
  EXPECT_NE(body(split).find("pad %b before=[0, 0] after=[0, 3] value=0 : f32[64, 24]"),
            std::string::npos)
      << body(split);
  EXPECT_NE(body(split).find("slice %t2 axis=1 start=0 end=21 : f32[64, 21]"), std::string::npos)
      << body(split);
  Graph bc("broadcast"); // an operand that is a view (a broadcast) is not copied
  Tensor x = bc.input("x", DType::F32, {1, 64}), y = bc.input("y", DType::F32, {64, 20});
  bc.output(matmul(broadcast(x, Shape({12, 64})), y), "c");
  EXPECT_TRUE(rewriteMatmuls(bc, {.splitK = forced}).applied.empty());
}
