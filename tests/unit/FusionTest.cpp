// compiler/Fusion (fuseGraph): which ops share a kernel, what is stored and why, launch order.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/lower/FuseAndLower.h"
#include "compiler/lower/Lowering.h"
#include "compiler/simplify/Simplify.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace minijit;

namespace {

/// Checks what every plan must satisfy: each root is stored by its kernel,
/// each output is stored, a kernel reads only inputs and values stored by
/// earlier kernels, and every stored value says why.
void expectValidPlan(const Graph &g, const FusionPlan &plan) {
  ASSERT_EQ(plan.storedBy.size(), g.size());
  ASSERT_EQ(plan.storeReason.size(), g.size());
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const KernelGroup &kg = plan.kernels[k];
    EXPECT_FALSE(kg.roots.empty()) << "k" << k;
    for (ValueId r : kg.roots) {
      EXPECT_EQ(plan.storedBy[r], static_cast<int>(k)) << "%" << g.node(r).name;
      EXPECT_TRUE(llvm::is_contained(kg.held, r) || g.node(r).op == OpKind::Input)
          << "%" << g.node(r).name;
    }
    for (ValueId r : kg.reads) {
      EXPECT_FALSE(llvm::is_contained(kg.held, r)) << "%" << g.node(r).name;
      if (g.node(r).op == OpKind::Input)
        continue;
      EXPECT_GE(plan.storedBy[r], 0)
          << "k" << k << " reads %" << g.node(r).name << ", which no kernel stores";
      EXPECT_LT(plan.storedBy[r], static_cast<int>(k))
          << "k" << k << " reads %" << g.node(r).name << " before it is stored";
    }
  }
  for (ValueId o : g.outputs())
    EXPECT_GE(plan.storedBy[o], 0) << "output %" << g.node(o).name;
  for (size_t v = 0; v < g.size(); ++v) {
    if (plan.storedBy[v] >= 0)
      EXPECT_FALSE(plan.storeReason[v].empty()) << "%" << g.node(v).name << " has no reason";
    else
      EXPECT_TRUE(plan.storeReason[v].empty()) << "%" << g.node(v).name;
  }
}

FusionPlan fused(const Graph &g) {
  FusionPlan p = fuseGraph(g, true);
  expectValidPlan(g, p);
  return p;
}

FusionPlan unfused(const Graph &g) {
  FusionPlan p = fuseGraph(g, false);
  expectValidPlan(g, p);
  return p;
}

Graph softmax(int64_t rows = 4096, int64_t cols = 1024) {
  Graph g("softmax");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  Tensor m = max(x, {1}, true).named("m");
  Tensor e = exp(x - m).named("e");
  g.output((e / sum(e, {1}, true).named("s")).named("y"));
  return g;
}

Graph gelu() {
  Graph g("gelu");
  Tensor x = g.input("x", DType::F32, {1 << 20});
  g.output(0.5f * x * (1.0f + tanh(0.79788456f * (x + 0.044715f * x * x * x))), "y");
  return g;
}

ValueId id(const Graph &g, const char *name) {
  std::optional<ValueId> v = g.lookup(name);
  EXPECT_TRUE(v.has_value()) << name;
  return v.value_or(0);
}

} // namespace

// ---- one kernel for the row-wise workloads

TEST(Fusion, SoftmaxBecomesOneKernel) {
  Graph g = softmax();
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  const KernelGroup &k = p.kernels[0];
  EXPECT_EQ(k.kind, KernelKind::Reduction);
  EXPECT_EQ(k.domain, Shape({4096, 1024}));
  ASSERT_EQ(k.reducedAxes.size(), 1u);
  EXPECT_EQ(k.reducedAxes[0], 1);
  EXPECT_EQ(k.rows(), 4096);
  EXPECT_EQ(k.reducedSize(), 1024);
  ASSERT_EQ(k.roots.size(), 1u);
  EXPECT_EQ(k.roots[0], id(g, "y"));
  EXPECT_EQ(p.storedBy[id(g, "m")], -1);
  EXPECT_EQ(p.storedBy[id(g, "s")], -1);
  EXPECT_EQ(describeReason(g, p.storeReason[id(g, "y")]), "graph output");
}

TEST(Fusion, LayernormBecomesOneKernel) {
  Graph g("layernorm");
  Tensor x = g.input("x", DType::F32, {4096, 1024});
  Tensor w = g.input("w", DType::F32, {1024});
  Tensor b = g.input("b", DType::F32, {1024});
  Tensor d = x - mean(x, {1}, true);
  g.output(d * rsqrt(mean(d * d, {1}, true) + 1e-5) * w + b, "y");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].kind, KernelKind::Reduction);
  EXPECT_EQ(p.kernels[0].reads.size(), 3u);              // x, w and b, each once
  EXPECT_EQ(fused(simplifyGraph(g)).kernels.size(), 1u); // as the compiler sees it
}

TEST(Fusion, RmsnormBecomesOneKernel) {
  Graph g("rmsnorm");
  Tensor x = g.input("x", DType::BF16, {4096, 1024});
  Tensor w = g.input("w", DType::BF16, {1024});
  g.output(x * rsqrt(mean(x * x, {-1}, true) + 1e-6) * w, "y");
  FusionPlan p = fused(simplifyGraph(g));
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].kind, KernelKind::Reduction);
}

TEST(Fusion, LogsumexpBecomesOneKernel) {
  Graph g("lse");
  Tensor x = g.input("x", DType::F32, {64, 128});
  Tensor m = max(x, {1}, true);
  g.output(log(sum(exp(x - m), {1}, true)) + m, "y");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].kind, KernelKind::Reduction);
  EXPECT_EQ(p.kernels[0].domain, Shape({64, 128})); // the row-shaped output is stored per row
}

TEST(Fusion, ScaledMaskedSoftmaxBecomesOneKernel) {
  Graph g("msm");
  Tensor x = g.input("x", DType::F32, {64, 128});
  Tensor mask = g.input("mask", DType::Bool, {1, 128});
  Tensor xm = where(mask, x * 0.125, -INFINITY);
  Tensor e = exp(xm - max(xm, {1}, true));
  g.output(e / sum(e, {1}, true), "y");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].reads.size(), 2u); // x and the mask, nothing else
}

TEST(Fusion, ElementwiseChainBecomesOneKernel) {
  Graph g = gelu();
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].kind, KernelKind::Pointwise);
  EXPECT_EQ(p.kernels[0].domain, Shape({1 << 20}));
}

TEST(Fusion, BroadcastsFuseIntoTheirConsumers) {
  Graph g("bias");
  Tensor x = g.input("x", DType::F32, {256, 64});
  Tensor b = g.input("b", DType::F32, {64});
  Tensor c = g.input("c", DType::F32, {256, 1});
  g.output(relu(x + b.broadcast({256, 64})) * c, "y");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].reads.size(), 3u);
}

// ---- fusion off

TEST(Fusion, UnfusedSoftmaxHasFiveKernels) {
  Graph g = softmax();
  FusionPlan p = unfused(g);
  ASSERT_EQ(p.kernels.size(), 5u);
  EXPECT_FALSE(p.fusion);
  for (const KernelGroup &k : p.kernels)
    EXPECT_EQ(k.roots.size(), 1u);
  EXPECT_EQ(describeReason(g, p.storeReason[id(g, "m")]), "fusion is off: every op is its own kernel");
  EXPECT_EQ(describeReason(g, p.storeReason[id(g, "y")]), "graph output");
}

TEST(Fusion, UnfusedGeluHasOneKernelPerOp) {
  Graph g = gelu();
  int ops = 0;
  for (const Node &n : g.nodes())
    ops += isElementwise(n.op);
  ASSERT_EQ(ops, 9);
  FusionPlan p = unfused(g);
  EXPECT_EQ(p.kernels.size(), 9u);
  for (const KernelGroup &k : p.kernels)
    EXPECT_EQ(k.kind, KernelKind::Pointwise);
}

TEST(Fusion, ViewsStayFreeWithFusionOff) {
  Graph g("views");
  Tensor x = g.input("x", DType::F32, {16, 32});
  Tensor t = x.permute({1, 0}).reshape({4, 128}).named("v");
  g.output(exp(t), "y");
  FusionPlan p = unfused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.storedBy[id(g, "v")], -1);
  EXPECT_TRUE(llvm::is_contained(p.kernels[0].held, id(g, "v")));
}

TEST(Fusion, ReturningAnInputMakesACopyKernel) {
  Graph g("copy");
  Tensor x = g.input("x", DType::F32, {8});
  g.output(x);
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].roots[0], x.id());
  EXPECT_EQ(p.kernels[0].reads.size(), 1u);
}

// ---- sharing, several outputs, recomputation

TEST(Fusion, SeveralReductionsOverTheSameRowsShareOneKernel) {
  Graph g("stats");
  Tensor x = g.input("x", DType::F32, {512, 256});
  g.output(sum(x, {1}), "s");
  g.output(max(x, {1}), "mx");
  g.output(min(x * x, {1}), "mn");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].roots.size(), 3u);
  EXPECT_EQ(p.kernels[0].reads.size(), 1u);
}

TEST(Fusion, AKernelWritesSeveralOutputs) {
  Graph g("ln");
  Tensor x = g.input("x", DType::F32, {512, 256});
  Tensor mu = mean(x, {1}, true).named("mu");
  Tensor d = x - mu;
  Tensor rstd = rsqrt(mean(d * d, {1}, true) + 1e-5).named("rstd");
  g.output(d * rstd, "y");
  g.output(mu);
  g.output(rstd);
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  const std::vector<ValueId> &roots = p.kernels[0].roots;
  EXPECT_EQ(roots.size(), 3u);
  EXPECT_TRUE(llvm::is_contained(roots, id(g, "y")));
  EXPECT_TRUE(llvm::is_contained(roots, id(g, "mu")));
  EXPECT_TRUE(llvm::is_contained(roots, id(g, "rstd")));
}

TEST(Fusion, ElementwiseOutputsOfOneShareOneKernel) {
  Graph g("two");
  Tensor x = g.input("x", DType::F32, {1000});
  Tensor t = tanh(x).named("t");
  g.output(t * 2, "a");
  g.output(t + 1, "b");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].roots.size(), 2u);
  EXPECT_EQ(p.storedBy[id(g, "t")], -1);
}

TEST(Fusion, CheapProducerUsedByTwoKernelsIsRecomputed) {
  Graph g("recompute");
  Tensor x = g.input("x", DType::F32, {64, 128});
  Tensor t = exp(x).named("t");
  g.output(sum(t, {1}), "a"); // rows
  g.output(sum(t, {0}), "b"); // columns: another kernel
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.storedBy[t.id()], -1);
  EXPECT_TRUE(p.storeReason[t.id()].empty());
  EXPECT_TRUE(llvm::is_contained(p.kernels[0].held, t.id()));
  EXPECT_TRUE(llvm::is_contained(p.kernels[1].held, t.id()));
}

TEST(Fusion, ExpensiveProducerUsedByTwoKernelsIsStored) {
  // A chain of 20 ops needed by a row and a column reduction: the first value
  // whose recomputation costs more than 16 ops is stored, the rest recomputed.
  // (exp: 20 sin would weigh more than one kernel may, compiler/fusion/CodeWeight.h.)
  Graph g("expensive");
  Tensor x = g.input("x", DType::F32, {64, 128});
  Tensor t = x;
  for (int i = 0; i < 20; ++i)
    t = exp(t).named("s" + std::to_string(i));
  g.output(sum(t, {1}), "a");
  g.output(sum(t, {0}), "b");
  FusionPlan p = fused(g);
  ValueId s16 = id(g, "s16");
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.storedBy[s16], 0);
  EXPECT_EQ(describeReason(g, p.storeReason[s16]),
            "%s16 costs 17 ops to recompute and is needed by kernels k0 and k1; storing it is "
            "cheaper");
  EXPECT_EQ(p.storedBy[id(g, "s15")], -1);
  EXPECT_EQ(p.storedBy[id(g, "s17")], -1);
  EXPECT_TRUE(llvm::is_contained(p.kernels[1].reads, s16));
}

TEST(Fusion, ReductionNeededByKernelsOfAnotherDomainIsStored) {
  Graph g("twodom");
  Tensor x = g.input("x", DType::F32, {64, 128});
  Tensor m = sum(x, {1}, true).named("m");
  g.output(x / m, "y");
  g.output(sum(x * m, {0}), "z"); // a column reduction needs the row sums
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 2u);
  ASSERT_GE(p.storedBy[m.id()], 0);
  EXPECT_EQ(describeReason(g, p.storeReason[m.id()]), "reduction %m (over [64, 128] axes [1]) feeds %z, a reduction "
                                   "over another domain ([64, 128] axes [0])");
}

TEST(Fusion, RowResultsSqueezedOrUnsqueezedStayInTheRowKernel) {
  // PyTorch's 1-D pooling reduces through a unit height and squeezes it
  // after: unit axes added or removed lay the result out as the rows are.
  Graph g("squeeze");
  Tensor x = g.input("x", DType::F32, {6, 1, 40});
  Tensor m = max(x, {2}, true).named("m");
  Tensor q = reshape(m, {1, 6, 1}).named("q");
  g.output(reshape(q, {6}) * 2, "y");
  g.output(q + 1, "z");
  EXPECT_EQ(fused(g).kernels.size(), 1u);

  Graph h("split");
  Tensor a = h.input("a", DType::F32, {6, 40});
  h.output(reshape(sum(a, {1}), {2, 3}) * 2, "y"); // splits the rows: another shape
  EXPECT_EQ(fused(h).kernels.size(), 2u);
}

TEST(Fusion, ReductionBroadcastToAnotherShapeIsStored) {
  Graph g("othershape");
  Tensor x = g.input("x", DType::F32, {64, 128});
  Tensor w = g.input("w", DType::F32, {64, 3});
  Tensor m = max(x, {1}, true).named("m");
  g.output(x - m, "y");
  g.output(m * w, "z");
  FusionPlan p = fused(g);
  ASSERT_GE(p.storedBy[m.id()], 0);
  EXPECT_EQ(describeReason(g, p.storeReason[m.id()]), "%z has shape [64, 3], neither the reduction's domain [64, 128] "
                                   "nor its result [64, 1]");
  EXPECT_EQ(p.kernels.size(), 2u);
}

TEST(Fusion, ReductionReadAtAnotherRowGetsStoredAndItsConsumerApart) {
  Graph g("apart");
  Tensor x = g.input("x", DType::F32, {64, 64});
  Tensor s = sum(x, {1}).named("s");
  g.output(x - s.reshape({1, 64}), "y"); // y[i, j] needs the sum of row j
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 2u);
  ValueId y = id(g, "y");
  EXPECT_EQ(p.storedBy[s.id()], 0);
  EXPECT_EQ(p.storedBy[y], 1);
  const std::string why =
      "reduction %s is read at another row than the one it reduces (a view moves its rows)";
  EXPECT_EQ(describeReason(g, p.storeReason[s.id()]), why);
  EXPECT_EQ(describeReason(g, p.apartReason[y]), why);
  EXPECT_FALSE(llvm::is_contained(p.kernels[1].held, s.id()));
  EXPECT_TRUE(llvm::is_contained(p.kernels[1].reads, s.id()));
  EXPECT_EQ(p.kernels[1].kind, KernelKind::Pointwise);
}

TEST(Fusion, MergingThatWouldCreateACycleIsAvoided) {
  // y could join m's kernel as an epilogue (same domain), but y reads q,
  // which a later kernel computes from m: merging would form a cycle.
  Graph g("cycle");
  Tensor x = g.input("x", DType::F32, {64, 128});
  Tensor w = g.input("w", DType::F32, {64, 3});
  Tensor m = max(x, {1}, true).named("m");
  Tensor q = sum(m * w, {1}, true).named("q");
  g.output(m);
  g.output(x - q, "y");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.storedBy[m.id()], 0);
  EXPECT_EQ(p.storedBy[q.id()], 1);
  EXPECT_EQ(p.storedBy[id(g, "y")], 2);
}

TEST(Fusion, KernelsLaunchAfterWhatTheyRead) {
  // The graph's order puts the column reduction's consumer first; kernels
  // must still be ordered by their dependencies.
  Graph g("order");
  Tensor x = g.input("x", DType::F32, {64, 32});
  Tensor colsum = sum(x, {0}, true).named("colsum");
  Tensor rowmax = max(x - colsum, {1}, true).named("rowmax");
  g.output(x - rowmax - colsum, "y");
  g.output(exp(colsum), "e");
  fused(g);
  unfused(g);
}

TEST(Fusion, StoredIntermediatesAlwaysHaveAReason) {
  Graph g("mix");
  Tensor x = g.input("x", DType::F32, {128, 64});
  Tensor a = exp(x);
  Tensor s1 = sum(a, {1}, true);
  Tensor s0 = sum(a / s1, {0}, true);
  Tensor y = a / s1 - s0;
  g.output(max(y, {1}), "r");
  g.output(y.permute({1, 0}), "t");
  fused(g); // expectValidPlan checks every stored value's reason
  unfused(g);
}

TEST(Fusion, InputGraphIsUnchanged) {
  Graph g = softmax();
  std::string before = printGraph(g);
  fuseGraph(g, true);
  fuseGraph(g, false);
  EXPECT_EQ(printGraph(g), before);
}

TEST(Fusion, MatmulTakesItsElementwiseEpilogue) {
  Graph g("mlp");
  Tensor a = g.input("a", DType::F32, {128, 64});
  Tensor b = g.input("b", DType::F32, {64, 32});
  Tensor bias = g.input("bias", DType::F32, {32});
  Tensor h = matmul(a, b).named("h");
  g.output(relu(h + bias) * 0.5, "y");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  const KernelGroup &k = p.kernels[0];
  EXPECT_EQ(k.kind, KernelKind::Matmul);
  EXPECT_EQ(k.matmul, h.id());
  EXPECT_EQ(k.domain, Shape({128, 32}));
  EXPECT_EQ(p.storedBy[h.id()], -1);
  EXPECT_EQ(k.reads.size(), 3u);
}

TEST(Fusion, MatmulUnfusedIsItsOwnKernel) {
  Graph g("mlp");
  Tensor a = g.input("a", DType::F32, {128, 64});
  Tensor b = g.input("b", DType::F32, {64, 32});
  g.output(tanh(matmul(a, b)), "y");
  FusionPlan p = unfused(g);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].kind, KernelKind::Matmul);
  EXPECT_EQ(p.kernels[1].kind, KernelKind::Pointwise);
}

TEST(Fusion, MatmulOperandsAreReadFromMemory) {
  Graph g("mm");
  Tensor a = g.input("a", DType::F32, {128, 64});
  Tensor b = g.input("b", DType::F32, {64, 32});
  Tensor ea = exp(a).named("ea");
  Tensor h = matmul(ea, b).named("h");
  g.output(h);
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.storedBy[ea.id()], 0);
  EXPECT_EQ(describeReason(g, p.storeReason[ea.id()]),
            "%ea is an operand of matmul %h: matmul operands are read from memory");
}

TEST(Fusion, TransposedMatmulOperandsStayViews) {
  Graph g("mm");
  Tensor a = g.input("a", DType::F32, {64, 128});
  Tensor b = g.input("b", DType::F32, {64, 32});
  Tensor at = a.permute({1, 0}).named("at");
  g.output(matmul(at, b), "y");
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.storedBy[at.id()], -1);
}

/// 33 reductions chained over the same rows: each needs the one before it,
/// so one kernel would make 33 passes over its rows.
Graph reductionChain(int pairs) {
  Graph g("chain");
  Tensor x = g.input("x", DType::F32, {4, 8});
  Tensor t = x;
  for (int i = 0; i < pairs; ++i)
    t = (x - sum(t, {1}, true)).named("chain" + std::to_string(i));
  g.output(t, "y");
  return g;
}

TEST(Fusion, ReductionChainsLongerThanAKernelsPassesSplit) {
  Graph g = reductionChain(33);
  FusionPlan p = fused(g);
  ASSERT_GE(p.kernels.size(), 2u);
  bool said = false;
  for (const FusionReason &why : p.storeReason)
    said = said || (why.kind == FusionReasonKind::TooManyPasses &&
                    llvm::StringRef(describeReason(g, why))
                        .contains("a kernel makes at most 32 passes over its rows"));
  EXPECT_TRUE(said);
  CompileOptions opt; // and every kernel compiles (with 33 passes one did not)
  CompiledGraph c;
  ASSERT_NO_THROW(c = compileGraph(g, opt));
  for (const CompiledKernel &ck : c.detail->kernels)
    EXPECT_LE(ck.lowered.passes, kMaxPasses);
  EXPECT_EQ(fused(reductionChain(31)).kernels.size(), 1u); // 32 passes still fit one kernel
}

TEST(Fusion, ChainedMatmulsAndReductionsSplit) {
  Graph g("mm2");
  Tensor a = g.input("a", DType::F32, {128, 64});
  Tensor b = g.input("b", DType::F32, {64, 32});
  Tensor w = g.input("w", DType::F32, {32, 16});
  Tensor h = matmul(a, b).named("h");
  Tensor h2 = matmul(h, w).named("h2");
  g.output(sum(h2, {1}).named("s"));
  FusionPlan p = fused(g);
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(describeReason(g, p.storeReason[h.id()]),
            "%h is an operand of matmul %h2: matmul operands are read from memory");
  EXPECT_EQ(describeReason(g, p.storeReason[h2.id()]),
            "matmul %h2 and reduction %s meet in %s; the matmul's result is stored");
  EXPECT_EQ(p.kernels[2].kind, KernelKind::Reduction);
}

TEST(Fusion, PrintedPlanNamesKernelsReadsWritesAndReasons) {
  Graph g("apart");
  Tensor x = g.input("x", DType::F32, {64, 64});
  Tensor s = sum(x, {1}).named("s");
  g.output(x - s.reshape({1, 64}), "y");
  FusionPlan p = fuseGraph(g, true);
  std::string text;
  llvm::raw_string_ostream os(text);
  printFusionPlan(os, g, p, {{"red_sum_row_k0", "sched0"}, {"poi_sub_k1", ""}});
  os.flush();
  const std::string why =
      "reduction %s is read at another row than the one it reduces (a view moves its rows)";
  EXPECT_EQ(text.rfind("graph apart: 2 kernels (fusion on)\n", 0), 0u) << text;
  EXPECT_NE(text.find("kernel k0 red_sum_row_k0: reduction of [64, 64] over axes [1] (64 rows of "
                      "64)\n  schedule: sched0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kernel k1 poi_sub_k1: pointwise over f32[64, 64]\n  holds:\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    %s from k0: " + why + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    %x (graph input)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  writes: %y\n    %y: graph output\n    %y has a kernel of its own: " + why +
                      "\n"),
            std::string::npos)
      << text;
}
