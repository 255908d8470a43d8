// compiler/fusion/Attention (findAttention) and the attention template: which
// graphs become one attention kernel, what --emit=fused says of them, and
// the reason printed for each shape that keeps the unfused kernels.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/fusion/Attention.h"
#include "compiler/templates/KernelTemplate.h"
#include "ir/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace minijit;

namespace {

/// The assumed H200 (its own target, or `arch`), `overrides`, no NVRTC, no
/// tuning.
CompileOptions options(const ScheduleOverrides &overrides = {}, const std::string &arch = "") {
  ::unsetenv("MINIJIT_SCHEDULE");
  CompileOptions opt;
  opt.device = DeviceProperties::assumedH200();
  opt.arch = arch;
  opt.scheduleOverrides = overrides;
  opt.compileKernels = false;
  opt.tuning = CompileOptions::Tuning::Off;
  return opt;
}

/// `wgmma` 0 keeps mma.sync's kernel where the rule would give Hopper's.
CompiledGraph compiled(const std::string &text, std::optional<int64_t> wgmma = {}) {
  return compileGraph(parseGraphs(text)[0], options({.wgmma = wgmma}));
}

/// softmax(work(q @ k^T)) @ v over [B, H, S, D] (keys Sk), `work` the
/// lines that make %t from %s; `extra` more arguments, `after` more lines
/// after %o, `ret` what it returns.
std::string attention(const std::string &dtype, int64_t sq, int64_t sk, int64_t d,
                      const std::string &work = "  %t = mul %s, 0.125\n",
                      const std::string &extra = "", const std::string &after = "",
                      const std::string &ret = "%o") {
  auto shape = [&](int64_t s, int64_t dim) {
    return dtype + "[2, 4, " + std::to_string(s) + ", " + std::to_string(dim) + "]";
  };
  return "graph attn(%q: " + shape(sq, d) + ", %k: " + shape(sk, d) + ", %v: " + shape(sk, d) +
         extra + ") {\n  %kt = permute %k perm=[0, 1, 3, 2]\n  %s = matmul %q, %kt\n" + work +
         "  %m = max %t axes=[3] keepdim=true\n  %dd = sub %t, %m\n  %e = exp %dd\n"
         "  %z = sum %e axes=[3] keepdim=true\n  %p = div %e, %z\n  %o = matmul %p, %v\n" +
         after + "  return " + ret + "\n}\n";
}

size_t attentionKernels(const CompiledGraph &g) {
  size_t n = 0;
  for (const CompiledKernel &k : g.detail->kernels)
    n += k.schedule.kind() == ScheduleKind::Attention ||
         k.schedule.kind() == ScheduleKind::AttentionMma ||
         k.schedule.kind() == ScheduleKind::AttentionWgmma;
  return n;
}

bool says(const CompiledGraph &g, const std::string &text) {
  return g.fusedText().find(text) != std::string::npos;
}

TEST(Attention, ScaledSoftmaxOfAProductTimesVIsOneKernel) {
  CompiledGraph g = compiled(attention("f32", 100, 100, 64));
  ASSERT_EQ(g.detail->kernels.size(), 1u) << g.fusedText();
  EXPECT_EQ(g.detail->kernels[0].schedule.kind(), ScheduleKind::Attention);
  EXPECT_TRUE(says(g, "attention %o: S = %q @ %kt [2, 4, 100, 100], scale, softmax over 100 keys"))
      << g.fusedText();
  EXPECT_EQ(kernelTemplate(ScheduleKind::Attention).name(), "attention");
}

TEST(Attention, CausalMaskFromIotaAndWhereIsHeld) {
  std::string work = "  %u = mul %s, 0.125\n  %qi = iota shape=[100, 100] axis=0 dtype=i32\n"
                     "  %ki = iota shape=[100, 100] axis=1 dtype=i32\n  %c = le %ki, %qi\n"
                     "  %t = where %c, %u, -inf\n";
  // mma.sync's kernel walks the keys up to the diagonal, Hopper's (the rule
  // on sm_90) counts the tiles up to it
  for (auto [wgmma, walk] : {std::pair{std::optional<int64_t>(0), "n0 < mj_keys"},
                             std::pair{std::optional<int64_t>(), "(mj_keys - 0 + 127) / 128"}}) {
    CompiledGraph g = compiled(attention("f16", 100, 100, 64, work), wgmma);
    ASSERT_EQ(attentionKernels(g), 1u) << g.fusedText();
    EXPECT_EQ(g.detail->kernels.size(), 1u);
    EXPECT_TRUE(says(g, ", scale, causal mask, softmax")) << g.fusedText();
    EXPECT_NE(g.detail->kernels[0].cuda.find(walk), std::string::npos) << g.detail->kernels[0].cuda;
  }
}

TEST(Attention, ASlidingWindowBoundsTheWalkAtBothEnds) {
  // key <= query and query - key < 10: the walk over the keys stops at the
  // diagonal and starts at the tile of the window's first key.
  std::string work = "  %qi = iota shape=[100, 100] axis=0 dtype=i32\n"
                     "  %ki = iota shape=[100, 100] axis=1 dtype=i32\n  %c0 = le %ki, %qi\n"
                     "  %dist = sub %qi, %ki\n  %near = lt %dist, 10\n  %c = and %c0, %near\n"
                     "  %t = where %c, %s, -inf\n";
  CompiledGraph g = compiled(attention("f32", 100, 100, 64, work));
  ASSERT_EQ(attentionKernels(g), 1u) << g.fusedText();
  EXPECT_TRUE(says(g, ", causal mask (a window of 10 keys), softmax")) << g.fusedText();
  EXPECT_NE(g.detail->kernels[0].cuda.find("n0 = mj_firstKey; n0 < mj_keys"), std::string::npos)
      << g.detail->kernels[0].cuda;
}

TEST(Attention, AMaskOfKeyAtLeastQueryIsNotCausal) {
  // key >= query keeps the keys past the diagonal: the walk is not cut short.
  std::string work = "  %qi = iota shape=[100, 100] axis=0 dtype=i32\n"
                     "  %ki = iota shape=[100, 100] axis=1 dtype=i32\n  %c = ge %ki, %qi\n"
                     "  %t = where %c, %s, -inf\n";
  CompiledGraph g = compiled(attention("f32", 100, 100, 64, work));
  ASSERT_EQ(attentionKernels(g), 1u) << g.fusedText();
  EXPECT_TRUE(says(g, "], mask, softmax")) << g.fusedText();
  EXPECT_EQ(g.detail->kernels[0].cuda.find("mj_keys"), std::string::npos);
  EXPECT_EQ(g.detail->kernels[0].cuda.find("mj_firstKey"), std::string::npos);
}

TEST(Attention, AdditiveBiasAndSoftCapAreHeld) {
  std::string work = "  %c = tanh %s\n  %u = mul %c, 30\n  %t = add %u, %bias\n";
  CompiledGraph g =
      compiled(attention("f32", 33, 17, 80, work, ", %bias: f32[4, 33, 17]"));
  ASSERT_EQ(attentionKernels(g), 1u) << g.fusedText();
  EXPECT_TRUE(says(g, ", scale, bias, soft-cap, softmax over 17 keys")) << g.fusedText();
}

TEST(Attention, GroupedHeadsBroadcastKAndV) {
  CompiledGraph g = compiled(
      "graph gqa(%q: bf16[2, 2, 4, 50, 128], %k: bf16[2, 2, 1, 50, 128], %v: bf16[2, 2, 1, 50, 128]) {\n"
      "  %kt = permute %k perm=[0, 1, 2, 4, 3]\n  %s = matmul %q, %kt\n"
      "  %m = max %s axes=[4] keepdim=true\n  %d = sub %s, %m\n  %e = exp %d\n"
      "  %z = sum %e axes=[4] keepdim=true\n  %p = div %e, %z\n  %o = matmul %p, %v\n"
      "  return %o\n}\n");
  ASSERT_EQ(attentionKernels(g), 1u) << g.fusedText();
  EXPECT_TRUE(says(g, "K/V heads broadcast (4 and 4 of 16 batches)")) << g.fusedText();
}

TEST(Attention, HalvesWithWhole16HeadDimsRunOnTheTensorCores) {
  CompiledGraph g = compiled(attention("f16", 100, 100, 64), 0); // mma.sync's (wgmma=0)
  ASSERT_EQ(g.detail->kernels.size(), 1u) << g.fusedText();
  EXPECT_EQ(g.detail->kernels[0].schedule.kind(), ScheduleKind::AttentionMma);
  EXPECT_TRUE(kernelTemplate(ScheduleKind::AttentionMma).usesTensorCores());
  EXPECT_NE(g.detail->kernels[0].cuda.find("mj_mma_f16(mj_o[r][2 * tp], pf[r], b0);"),
            std::string::npos);
  // f32, head dims of no whole 16s, or wider than 128: the CUDA cores.
  for (std::string text : {attention("f32", 100, 100, 64), attention("f16", 100, 100, 72),
                           attention("bf16", 128, 128, 256)}) {
    CompiledGraph c = compiled(text);
    ASSERT_EQ(c.detail->kernels.size(), 1u) << c.fusedText();
    EXPECT_EQ(c.detail->kernels[0].schedule.kind(), ScheduleKind::Attention) << c.fusedText();
  }
}

// Hopper's kernel, asked for by wgmma=1 and the rule's otherwise: taken by
// f16/bf16 head dims of 64 and 128 on sm_90 only; other head dims, f32 and
// sm_80 keep the other kernels, as do wgmma=0 and mma.sync's keys.
TEST(Attention, HopperKernelWhereAskedOrByRule) {
  auto kindOf = [](const std::string &text, const std::string &arch,
                   const ScheduleOverrides &overrides) {
    CompiledGraph g = compileGraph(parseGraphs(text)[0], options(overrides, arch));
    EXPECT_EQ(g.detail->kernels.size(), 1u) << g.fusedText();
    return g.detail->kernels[0].schedule.kind();
  };
  // wgmma=1: wherever it takes the attention
  const ScheduleOverrides asked{.wgmma = 1};
  EXPECT_EQ(kindOf(attention("f16", 100, 100, 64), "sm_90", asked), ScheduleKind::AttentionWgmma);
  EXPECT_EQ(kindOf(attention("bf16", 37, 300, 128), "sm_90", asked), ScheduleKind::AttentionWgmma);
  EXPECT_EQ(kindOf(attention("bf16", 100, 100, 64), "sm_80", asked), ScheduleKind::AttentionMma);
  EXPECT_EQ(kindOf(attention("f16", 100, 100, 32), "sm_90", asked), ScheduleKind::AttentionMma);
  EXPECT_EQ(kindOf(attention("f16", 100, 100, 96), "sm_90", asked), ScheduleKind::AttentionMma);
  EXPECT_EQ(kindOf(attention("f32", 100, 100, 64), "sm_90", asked), ScheduleKind::Attention);
  // by rule: wherever it takes the attention, fewer blocks than SMs too;
  // not on sm_80, not with wgmma=0, not for head dims it does not take, not
  // with mma.sync's keys
  EXPECT_EQ(kindOf(attention("bf16", 2100, 300, 128), "sm_90", {}), ScheduleKind::AttentionWgmma);
  EXPECT_EQ(kindOf(attention("f16", 100, 300, 64), "sm_90", {}), ScheduleKind::AttentionWgmma);
  EXPECT_EQ(kindOf(attention("bf16", 2100, 300, 128), "sm_80", {}), ScheduleKind::AttentionMma);
  EXPECT_EQ(kindOf(attention("bf16", 2100, 300, 128), "sm_90", {.wgmma = 0}),
            ScheduleKind::AttentionMma);
  EXPECT_EQ(kindOf(attention("f16", 2100, 300, 96), "sm_90", {}), ScheduleKind::AttentionMma);
  EXPECT_EQ(kindOf(attention("f16", 2100, 300, 64), "sm_90", {.bm = 64}),
            ScheduleKind::AttentionMma);
  EXPECT_TRUE(kernelTemplate(ScheduleKind::AttentionWgmma).usesTensorCores());
}

TEST(Attention, HopperKernelKeepsThreeStagesWhereTheyFit) {
  CompileOptions opt = options({}, "sm_90");
  CompiledGraph g = compileGraph(parseGraphs(attention("bf16", 2100, 300, 128))[0], opt);
  ASSERT_EQ(g.detail->kernels[0].schedule.kind(), ScheduleKind::AttentionWgmma);
  const auto &w = g.detail->kernels[0].schedule.as<AttentionWgmmaSchedule>();
  EXPECT_EQ(w.stages, 3u);
  EXPECT_LE(w.sharedBytes, opt.device.sharedPerBlockOptin);
  // a block with less shared memory keeps 2
  opt.device.sharedPerBlockOptin = 200 * 1024;
  CompiledGraph g2 = compileGraph(parseGraphs(attention("bf16", 2100, 300, 128))[0], opt);
  ASSERT_EQ(g2.detail->kernels[0].schedule.kind(), ScheduleKind::AttentionWgmma);
  EXPECT_EQ(g2.detail->kernels[0].schedule.as<AttentionWgmmaSchedule>().stages, 2u);
}

TEST(Attention, ProductsWithRowsOfOddLengthAreNotPaddedApart) {
  // bf16 rows of 100 keys are not whole 16-byte units: the Hopper matmul
  // would pad P first (a copy kernel), and the attention would be lost.
  CompiledGraph g = compiled(attention("bf16", 100, 100, 256));
  ASSERT_EQ(g.detail->kernels.size(), 1u) << g.fusedText();
  EXPECT_EQ(attentionKernels(g), 1u);
  Graph parsed = parseGraphs(attention("bf16", 100, 100, 256))[0];
  std::vector<bool> kept = attentionProducts(parsed);
  size_t products = 0;
  for (size_t i = 0; i < parsed.size(); ++i)
    if (kept[i]) {
      ++products;
      EXPECT_EQ(parsed.nodes()[i].op, OpKind::Matmul);
    }
  EXPECT_EQ(products, 2u);
}

TEST(Attention, HeadDimOutsideTheTemplateKeepsTheUnfusedKernels) {
  for (int64_t d : {17, 16, 512, 34}) {
    SCOPED_TRACE(d);
    CompiledGraph g = compiled(attention("f32", 100, 100, d));
    EXPECT_EQ(attentionKernels(g), 0u);
    EXPECT_TRUE(says(g, "not attention: attention %o has head dim " + std::to_string(d) +
                            "; the template takes 32 to 256, a multiple of 4"))
        << g.fusedText();
  }
}

TEST(Attention, ShortRowsKeepTheUnfusedKernels) {
  // (12 keys: over 8 or fewer, P @ V is a sum of a few terms, no product)
  CompiledGraph g = compiled(attention("f32", 100, 12, 64));
  EXPECT_EQ(attentionKernels(g), 0u);
  EXPECT_TRUE(
      says(g, "not attention: attention %o has rows of 12 keys; the template takes 16 or more"))
      << g.fusedText();
}

TEST(Attention, NamedSizesKeepTheUnfusedKernels) {
  std::string text = attention("f32", 100, 100, 64);
  for (size_t at = text.find("[2, 4"); at != std::string::npos; at = text.find("[2, 4"))
    text.replace(at, 2, "[B");
  Graph g = parseGraphs(text)[0];
  std::optional<AttentionCandidate> c =
      findAttention(g, g.outputs()[0], [](ValueId) { return false; });
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->match);
  EXPECT_EQ(c->refused.kind, FusionReasonKind::AttentionNamedSizes);
}

TEST(Attention, StoredProbabilitiesKeepTheUnfusedKernels) {
  CompiledGraph g = compiled(attention("f32", 64, 64, 32, "  %t = mul %s, 0.125\n", "", "", "%o, %p"));
  EXPECT_EQ(attentionKernels(g), 0u);
  EXPECT_TRUE(says(g, "not attention: %p, inside attention %o, is stored, so the scores leave the "
                      "kernel"))
      << g.fusedText();
}

TEST(Attention, AGradientThroughTheScoresKeepsTheUnfusedForwardInHalves) {
  // In f16 the backward reads the scores and probabilities: they are
  // stored, and the forward stays the matmul, softmax, matmul it was.
  CompiledGraph g = compiled(attention("f16", 64, 64, 32, "  %t = mul %s, 0.125\n",
                                       ", %do: f16[2, 4, 64, 32]",
                                       "  %w = mul %o, %do\n  %l = sum %w\n  %gq = grad %l, %q\n",
                                       "%o, %gq"));
  EXPECT_EQ(attentionKernels(g), 0u);
  EXPECT_TRUE(says(g, "not attention: %")) << g.fusedText();
}

TEST(Attention, AGradientThroughTheScoresKeepsTheForwardFusedInF32) {
  // In f32 the backward is FlashAttention-2's (compiler/fusion/AttentionBackward.h):
  // the forward stays one kernel and also stores the rows' max and sum.
  CompiledGraph g = compiled(attention("f32", 64, 64, 32, "  %t = mul %s, 0.125\n",
                                       ", %do: f32[2, 4, 64, 32]",
                                       "  %w = mul %o, %do\n  %l = sum %w\n  %gq = grad %l, %q\n",
                                       "%o, %gq"));
  EXPECT_EQ(attentionKernels(g), 1u) << g.fusedText();
  EXPECT_TRUE(says(g, "storing the rows' max and sum for its backward")) << g.fusedText();
}

TEST(Attention, WorkAfterTheProductRunsInAKernelOfItsOwn) {
  CompiledGraph g = compiled(attention("f32", 100, 100, 64, "  %t = mul %s, 0.125\n",
                                       ", %x: f32[2, 4, 100, 64]", "  %y = add %o, %x\n", "%y"));
  ASSERT_EQ(attentionKernels(g), 1u) << g.fusedText();
  EXPECT_EQ(g.detail->kernels.size(), 2u);
  EXPECT_TRUE(says(g, "attention %o runs in a kernel of its own")) << g.fusedText();
}

TEST(Attention, AComputedOperandIsStoredFirst) {
  // Q is a projection: a matmul of its own, stored for the attention to read.
  std::string text =
      "graph proj(%x: f32[2, 4, 100, 64], %wq: f32[64, 64], %k: f32[2, 4, 100, 64], %v: f32[2, 4, 100, 64]) {\n"
      "  %q = matmul %x, %wq\n  %kt = permute %k perm=[0, 1, 3, 2]\n  %s = matmul %q, %kt\n"
      "  %m = max %s axes=[3] keepdim=true\n  %d = sub %s, %m\n  %e = exp %d\n"
      "  %z = sum %e axes=[3] keepdim=true\n  %p = div %e, %z\n  %o = matmul %p, %v\n"
      "  return %o\n}\n";
  CompiledGraph g = compiled(text);
  ASSERT_EQ(g.detail->kernels.size(), 2u) << g.fusedText();
  EXPECT_EQ(attentionKernels(g), 1u);
  EXPECT_TRUE(says(g, "%q is an operand of attention %o: its operands are read from memory"))
      << g.fusedText();
}

TEST(Attention, SoftmaxOverAnotherAxisIsNotAttention) {
  // The max and sum run over the queries: not the keys of the product.
  std::string text =
      "graph g(%q: f32[2, 100, 64], %k: f32[2, 100, 64], %v: f32[2, 100, 64]) {\n"
      "  %kt = permute %k perm=[0, 2, 1]\n  %s = matmul %q, %kt\n"
      "  %m = max %s axes=[1] keepdim=true\n  %d = sub %s, %m\n  %e = exp %d\n"
      "  %z = sum %e axes=[1] keepdim=true\n  %p = div %e, %z\n  %o = matmul %p, %v\n"
      "  return %o\n}\n";
  CompiledGraph g = compiled(text);
  EXPECT_EQ(attentionKernels(g), 0u);
  EXPECT_FALSE(says(g, "attention")) << g.fusedText();
  Graph parsed = parseGraphs(text)[0];
  EXPECT_FALSE(findAttention(parsed, parsed.outputs()[0], [](ValueId) { return false; }));
}

TEST(Attention, FindAttentionNamesTheSoftmaxAndOperands) {
  Graph g = parseGraphs(attention("f32", 100, 100, 64))[0];
  std::optional<AttentionCandidate> c =
      findAttention(g, g.outputs()[0], [](ValueId) { return false; });
  ASSERT_TRUE(c && c->match);
  EXPECT_FALSE(c->store);
  const AttentionMatch &m = *c->match;
  EXPECT_EQ(g.node(m.scores).name, "s");
  EXPECT_EQ(g.node(m.logits).name, "t");
  EXPECT_EQ(g.node(m.probs).name, "p");
  EXPECT_EQ(g.node(m.q).name, "q");
  EXPECT_EQ(g.node(m.k).name, "k");
  EXPECT_EQ(g.node(m.v).name, "v");
  EXPECT_EQ(m.queries, 100);
  EXPECT_EQ(m.keys, 100);
  EXPECT_EQ(m.headDim, 64);
  EXPECT_TRUE(m.scale);
  EXPECT_FALSE(m.mask || m.bias || m.softcap);
}

TEST(Attention, KernelReadsOnlyQKVAndWritesO) {
  CompiledGraph g = compiled(attention("f32", 100, 100, 64));
  ASSERT_EQ(g.detail->kernels.size(), 1u);
  const LoweredKernel &k = g.detail->kernels[0].lowered;
  ASSERT_TRUE(k.attention);
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.params[k.attention->outParam].irName, "o");
  EXPECT_TRUE(k.params[k.attention->outParam].written);
  EXPECT_EQ(k.params[k.attention->vParam].irName, "v");
  EXPECT_EQ(k.attention->vStrideN, 64);
  EXPECT_EQ(k.attention->vStrideD, 1);
  std::string cuda = g.detail->kernels[0].cuda;
  EXPECT_NE(cuda.find("mj_rowSum[i] = mj_rowSum[i] * mj_rescale[i] + mj_tileSum[i];"),
            std::string::npos)
      << cuda;
}

} // namespace
