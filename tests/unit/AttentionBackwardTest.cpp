// compiler/fusion/AttentionBackward (findAttentionBackward): which backwards
// autodiff writes for an attention are FlashAttention-2's, what they hold,
// and the typed reason --emit=fused prints for each one that is not.
#include "compiler/fusion/AttentionBackward.h"
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/simplify/Simplify.h"
#include "ir/Autodiff.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace minijit;

namespace {

/// A training step's attention over [2, 4, 100, 64]: `work` makes %t from
/// %s, `extra` more arguments, `grads` the grad lines, `ret` what it returns.
std::string training(const std::string &work, const std::string &extra, const std::string &grads,
                     const std::string &ret) {
  std::string t = "f32[2, 4, 100, 64]";
  return "graph train(%q: " + t + ", %k: " + t + ", %v: " + t + ", %w: " + t + extra +
         ") {\n  %kt = permute %k perm=[0, 1, 3, 2]\n  %s = matmul %q, %kt\n" + work +
         "  %m = max %t axes=[3] keepdim=true\n  %d = sub %t, %m\n  %e = exp %d\n"
         "  %z = sum %e axes=[3] keepdim=true\n  %p = div %e, %z\n  %o = matmul %p, %v\n"
         "  %ow = mul %o, %w\n  %loss = sum %ow axes=[0, 1, 2, 3]\n" +
         grads + "  return " + ret + "\n}\n";
}

const char *kCausal = "  %u = mul %s, 0.125\n  %qi = iota shape=[100, 100] axis=0 dtype=i32\n"
                      "  %ki = iota shape=[100, 100] axis=1 dtype=i32\n  %c = le %ki, %qi\n"
                      "  %t = where %c, %u, -inf\n";
const char *kAllGrads = "  %dq = grad %loss, %q\n  %dk = grad %loss, %k\n  %dv = grad %loss, %v\n";

struct Found {
  Graph g;
  std::optional<AttentionMatch> fwd;
  std::optional<AttentionBackwardCandidate> bwd;
};

/// Autodiff's graph of `text`, simplified as fusion sees it (no reshapes
/// to the same shape), its attention and that attention's backward.
Found find(const std::string &text) {
  Found f{simplifyGraph(expandAutodiff(parseGraphs(text)[0])), std::nullopt, std::nullopt};
  for (size_t i = 0; i < f.g.size() && !f.fwd; ++i) {
    if (f.g.nodes()[i].op != OpKind::Matmul || f.g.nodes()[i].name != "o")
      continue;
    std::optional<AttentionCandidate> c =
        findAttention(f.g, static_cast<ValueId>(i), [](ValueId) { return false; });
    if (c && c->match)
      f.fwd = c->match;
  }
  if (f.fwd)
    f.bwd = findAttentionBackward(f.g, *f.fwd);
  return f;
}

CompiledGraph compiledGraph(const std::string &text) {
  ::unsetenv("MINIJIT_SCHEDULE");
  CompileOptions opt;
  opt.device = DeviceProperties::assumedH200();
  opt.compileKernels = false;
  opt.tuning = CompileOptions::Tuning::Off;
  return compileGraph(parseGraphs(text)[0], opt);
}

std::string fused(const std::string &text) { return compiledGraph(text).fusedText(); }

TEST(AttentionBackward, CausalTrainingStepIsFlashAttention2sBackward) {
  Found f = find(training(kCausal, "", kAllGrads, "%o, %dq, %dk, %dv"));
  ASSERT_TRUE(f.fwd && f.bwd && f.bwd->match)
      << printGraph(f.g) << (f.bwd && !f.bwd->match ? describeReason(f.g, f.bwd->refused) : "");
  const AttentionBackwardMatch &b = *f.bwd->match;
  EXPECT_EQ(f.g.node(b.dq).name, "dq");
  EXPECT_EQ(f.g.node(b.dk).name, "dk");
  EXPECT_EQ(f.g.node(b.dv).name, "dv");
  EXPECT_EQ(f.g.node(b.dOut).name, "o.grad");
  EXPECT_EQ(f.g.node(b.dLogits).name, "t.grad");
  EXPECT_EQ(f.g.node(b.dScores).name, "s.grad");
  ASSERT_EQ(b.steps.size(), 2u);
  EXPECT_EQ(f.g.node(b.steps[0].forward).name, "t");
  EXPECT_EQ(f.g.node(b.steps[1].forward).name, "u");
  EXPECT_TRUE(b.scale && b.mask && f.fwd->causal);
  EXPECT_EQ(describeAttentionBackward(f.g, *f.fwd, b),
            "dQ %dq, dK %dk, dV %dv, scale, causal mask, from dO %o.grad");
}

TEST(AttentionBackward, TrainingStepNeverStoresTheScores) {
  // The forward (storing O and the rows' max and sum), dO, then dK and dV
  // by tiles of keys and dQ by tiles of queries: no kernel writes a value
  // of the scores' shape.
  CompiledGraph g = compiledGraph(training(kCausal, "", kAllGrads, "%o, %dq, %dk, %dv"));
  std::string text = g.fusedText();
  ASSERT_EQ(g.detail->kernels.size(), 4u) << text;
  EXPECT_NE(text.find("attention %o: S = %q @ %kt [2, 4, 100, 100], scale, causal mask, softmax "
                      "over 100 keys, @ %v [2, 4, 100, 64], storing the rows' max and sum for its "
                      "backward"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("attention %o backward, a block per tile of keys: dK %dk, dV %dv, scale, "
                      "causal mask, from dO %o.grad"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("attention %o backward, a block per tile of queries: dQ %dq"),
            std::string::npos)
      << text;
  for (const CompiledKernel &k : g.detail->kernels)
    for (const KParam &p : k.lowered.params)
      EXPECT_FALSE(p.written && p.numel == 2 * 4 * 100 * 100) << p.irName << " is written";
  EXPECT_EQ(g.detail->kernels[2].schedule.kind(), ScheduleKind::AttentionBackward);
  // Each backward kernel's launch asks for the shared memory its tiles take
  // (a merge once dropped it, and the kernels read past the block's).
  for (int i : {2, 3}) {
    const Schedule &s = g.detail->kernels[i].schedule;
    EXPECT_GT(s.dynamicSharedBytes(), 40000u);
    EXPECT_EQ(s.dynamicSharedBytes(), s.as<AttentionBackwardSchedule>().sharedBytes);
  }
  // Deterministic: no kernel adds into memory.
  for (const CompiledKernel &k : g.detail->kernels)
    EXPECT_EQ(k.cuda.find("atomicAdd"), std::string::npos);
}

TEST(AttentionBackward, HalvesKeepTheUnfusedKernels) {
  std::string text = training(kCausal, "", kAllGrads, "%o, %dq, %dk, %dv");
  for (size_t at = text.find("f32"); at != std::string::npos; at = text.find("f32"))
    text.replace(at, 3, "f16");
  std::string f = fused(text);
  EXPECT_NE(f.find("is stored for its backward (%dq, %dk, %dv): FlashAttention-2's, whose fused "
                   "kernels take f32 so far"),
            std::string::npos)
      << f;
}

TEST(AttentionBackward, AFiniteMaskFillIsNotTaken) {
  std::string work = "  %u = mul %s, 0.125\n  %qi = iota shape=[100, 100] axis=0 dtype=i32\n"
                     "  %ki = iota shape=[100, 100] axis=1 dtype=i32\n  %c = le %ki, %qi\n"
                     "  %t = where %c, %u, -10000\n";
  std::string f = fused(training(work, "", kAllGrads, "%o, %dq, %dk, %dv"));
  EXPECT_NE(f.find("not attention: the backward of attention %o differentiates %t (where)"),
            std::string::npos)
      << f;
}

TEST(AttentionBackward, ScaleByDivisionWithoutMask) {
  Found f = find(training("  %t = div %s, 8\n", "", kAllGrads, "%o, %dq, %dk, %dv"));
  ASSERT_TRUE(f.bwd && f.bwd->match);
  EXPECT_TRUE(f.bwd->match->scale);
  EXPECT_FALSE(f.bwd->match->mask);
}

TEST(AttentionBackward, AScaleMovedAfterTheProductIsFollowed) {
  // With dQ alone, the matmul rewrites move the scale after dQ's product.
  CompiledGraph g =
      compiledGraph(training("  %t = mul %s, 0.125\n", "", "  %dq = grad %loss, %q\n", "%o, %dq"));
  std::string text = g.fusedText();
  EXPECT_NE(text.find("attention %o backward, a block per tile of queries: dQ %dq, scale"),
            std::string::npos)
      << text;
  // The scale is applied as dQ is stored, not to dS.
  const CompiledKernel &dq = g.detail->kernels.back();
  EXPECT_NE(dq.cuda.find("= mj_dq[j] * 0.125f;"), std::string::npos) << dq.cuda;
  EXPECT_EQ(dq.cuda.find("the score work's scale"), std::string::npos) << dq.cuda;
}

TEST(AttentionBackward, GroupedHeadsKeepTheProductBeforeTheirSum) {
  Found f =
      find("graph gqa(%q: f32[2, 2, 4, 50, 64], %k: f32[2, 2, 1, 50, 64], %v: f32[2, 2, 1, 50, 64],"
           " %w: f32[2, 2, 4, 50, 64]) {\n  %kt = permute %k perm=[0, 1, 2, 4, 3]\n"
           "  %s = matmul %q, %kt\n  %t = mul %s, 0.125\n  %m = max %t axes=[4] keepdim=true\n"
           "  %d = sub %t, %m\n  %e = exp %d\n  %z = sum %e axes=[4] keepdim=true\n"
           "  %p = div %e, %z\n  %o = matmul %p, %v\n  %ow = mul %o, %w\n"
           "  %loss = sum %ow axes=[0, 1, 2, 3, 4]\n" +
           std::string(kAllGrads) + "  return %o, %dq, %dk, %dv\n}\n");
  ASSERT_TRUE(f.bwd && f.bwd->match) << printGraph(f.g);
  const AttentionBackwardMatch &b = *f.bwd->match;
  EXPECT_EQ(f.g.node(b.dk).shape, Shape({2, 2, 4, 50, 64}));
  EXPECT_EQ(f.g.node(b.dv).shape, Shape({2, 2, 4, 50, 64}));
  EXPECT_EQ(f.g.node(b.dq).name, "dq");
}

TEST(AttentionBackward, SoftCapIsDifferentiatedByItsTanh) {
  std::string work = "  %u = div %s, 30\n  %c = tanh %u\n  %t = mul %c, 30\n";
  Found f = find(training(work, "", "  %dq = grad %loss, %q\n", "%o, %dq"));
  ASSERT_TRUE(f.bwd && f.bwd->match) << describeReason(f.g, f.bwd->refused);
  const AttentionBackwardMatch &b = *f.bwd->match;
  EXPECT_TRUE(b.softcap && b.scale);
  ASSERT_EQ(b.steps.size(), 3u);
  EXPECT_EQ(f.g.node(b.steps[1].forward).name, "c");
  CompiledGraph g = compiledGraph(training(work, "", "  %dq = grad %loss, %q\n", "%o, %dq"));
  const CompiledKernel &dq = g.detail->kernels.back();
  EXPECT_EQ(dq.schedule.kind(), ScheduleKind::AttentionBackward) << g.fusedText();
  // 1 - y * y of the kernel's tanh, between the two scales, as autodiff orders them.
  size_t cap = dq.cuda.find("mj_cap0 = 1.0f - "), times = dq.cuda.find("ds = ds * 30.0f;");
  size_t by = dq.cuda.find("ds = ds * mj_cap0;"), over = dq.cuda.find("ds = ds / 30.0f;");
  ASSERT_NE(cap, std::string::npos) << dq.cuda;
  EXPECT_TRUE(cap < times && times < by && by < over) << dq.cuda;
}

TEST(AttentionBackward, ABiasWithAGradientHasItsReason) {
  std::string work = "  %u = mul %s, 0.125\n  %t = add %u, %b\n";
  std::string text =
      fused(training(work, ", %b: f32[100, 100]",
                     "  %dq = grad %loss, %q\n  %db = grad %loss, %b\n", "%o, %dq, %db"));
  EXPECT_NE(text.find("not attention: %db reads the gradient of a bias of attention %o"),
            std::string::npos)
      << text;
  // Without its gradient the bias is held.
  Found f = find(training(work, ", %b: f32[100, 100]", "  %dq = grad %loss, %q\n", "%o, %dq"));
  ASSERT_TRUE(f.bwd && f.bwd->match);
}

TEST(AttentionBackward, ALearnedScaleIsNotTaken) {
  Found f = find(training("  %t = mul %s, %tau\n", ", %tau: f32[]",
                          "  %dq = grad %loss, %q\n  %dt = grad %loss, %tau\n", "%o, %dq, %dt"));
  ASSERT_TRUE(f.bwd);
  EXPECT_FALSE(f.bwd->match);
  EXPECT_EQ(f.bwd->refused.kind, FusionReasonKind::AttentionBackwardRead);
}

TEST(AttentionBackward, ReturnedProbabilitiesAreNotABackwardsReason) {
  Found f = find(training("  %t = mul %s, 0.125\n", "", "  %dq = grad %loss, %q\n", "%o, %dq, %p"));
  ASSERT_TRUE(f.fwd);
  EXPECT_FALSE(f.bwd);
}

TEST(AttentionBackward, AGradientElsewhereLeavesTheForwardFused) {
  // dW does not read the scores: there is no backward through the attention.
  Found f = find(training("  %t = mul %s, 0.125\n", "", "  %dw = grad %loss, %w\n", "%o, %dw"));
  ASSERT_TRUE(f.fwd);
  EXPECT_FALSE(f.bwd);
}

} // namespace

namespace {

TEST(AttentionBackward, ComputedOperandsAreStoredFirst) {
  // Q, K and V projected from x and split into heads (permutes of one
  // value, which autodiff's transposes fold into one permute): the
  // projections are stored for the forward's kernel and the backward's.
  CompiledGraph g = compiledGraph(
      "graph selfattn(%x: f32[2, 64, 128], %wq: f32[128, 128], %wk: f32[128, 128],"
      " %wv: f32[128, 128]) {\n"
      "  %q0 = matmul %x, %wq\n  %k0 = matmul %x, %wk\n  %v0 = matmul %x, %wv\n"
      "  %q1 = reshape %q0 shape=[2, 64, 2, 64]\n  %k1 = reshape %k0 shape=[2, 64, 2, 64]\n"
      "  %v1 = reshape %v0 shape=[2, 64, 2, 64]\n  %q = permute %q1 perm=[0, 2, 1, 3]\n"
      "  %k = permute %k1 perm=[0, 2, 1, 3]\n  %v = permute %v1 perm=[0, 2, 1, 3]\n"
      "  %kt = permute %k perm=[0, 1, 3, 2]\n  %s = matmul %q, %kt\n  %t = mul %s, 0.125\n"
      "  %m = max %t axes=[3] keepdim=true\n  %d = sub %t, %m\n  %e = exp %d\n"
      "  %z = sum %e axes=[3] keepdim=true\n  %p = div %e, %z\n  %o = matmul %p, %v\n"
      "  %loss = sum %o axes=[0, 1, 2, 3]\n  %dx = grad %loss, %x\n  return %loss, %dx\n}\n");
  std::string text = g.fusedText();
  EXPECT_NE(text.find("attention %o backward, a block per tile of keys: dK %k.grad, dV %v.grad"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%v0 is an operand of attention %o"), std::string::npos) << text;
  size_t backward = 0;
  for (const CompiledKernel &k : g.detail->kernels)
    backward += k.schedule.kind() == ScheduleKind::AttentionBackward;
  EXPECT_EQ(backward, 2u);
}

} // namespace
