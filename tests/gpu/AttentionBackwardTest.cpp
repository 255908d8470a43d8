//===- tests/gpu/AttentionBackwardTest.cpp - attention's fused backward ----===//
// Training steps through attention written as plain ops (issue 43): the
// gradients of q, k and v by autodiff, run fused (the forward attention
// kernel storing the rows' max and sum, then FlashAttention-2's backward in
// two kernels) and unfused, against the CPU reference on fresh random inputs
// with the outputs poisoned: causal and not, sequence lengths that are not
// whole tiles (17, 1000), head dims 64 and 80, grouped K/V heads, a bias
// without a gradient, a soft-cap, dQ alone (its scale moved after the
// product), a self-attention of projections, cross-attention by vjp, and
// shapes the fused backward does not take (rows too short, f16). Each graph
// is also checked to compile to the backward's two kernels (or not), so a
// recognition that silently stops matching fails here.
//===----------------------------------------------------------------------===//
#include "tests/gpu/GpuTest.h"

#include "compiler/CompileDetail.h"

#include <cmath>

namespace minijit {
namespace {

class AttentionBackward : public GpuTest {
protected:
  /// Compiles `g` fused (no NVRTC), checks whether it holds the backward's
  /// two kernels, then runs it fused and unfused as expectMatches does.
  /// (f32 products on the CUDA cores, the kernels' own; the default keeps an
  /// attention's products as written too: tests/lit/attention_backward_long.mj.)
  void expectBackward(const Graph &g, bool fuses, uint64_t seed) {
    std::string fused;
    size_t backward = kernelsOfKind(g, {ScheduleKind::AttentionBackward}, fused, exactF32());
    EXPECT_EQ(backward, fuses ? 2u : 0u) << g.name() << "\n" << fused;
    CompileOptions opt = exactF32();
    expectMatchesWith(g, opt, seed);
    opt.fusion = false;
    expectMatchesWith(g, opt, seed);
  }
};

std::string name(const std::string &what, DType t, int64_t s, int64_t d) {
  return what + "_" + std::string(dtypeName(t)) + "_s" + std::to_string(s) + "_d" +
         std::to_string(d);
}

/// softmax(scale * q @ k^T (+ bias) + causal mask) @ v.
Tensor attend(const Tensor &q, const Tensor &k, const Tensor &v, bool causal,
              const Tensor *bias = nullptr) {
  int64_t d = q.shape()[q.shape().rank() - 1];
  Tensor s = matmul(q, transpose(k)) * (1.0 / std::sqrt(double(d)));
  if (bias)
    s = s + *bias;
  if (causal) {
    int64_t sq = q.shape()[q.shape().rank() - 2], sk = k.shape()[k.shape().rank() - 2];
    Graph &g = q.graph();
    Tensor keyPos = iota(g, {sq, sk}, 1), queryPos = iota(g, {sq, sk}, 0);
    s = where(le(keyPos, queryPos), s, -INFINITY);
  }
  return matmul(softmax(s, -1), v);
}

/// O, and the gradients of sum(O * w) with respect to `wrt`.
void train(Graph &g, const Tensor &o, std::initializer_list<std::pair<Tensor, const char *>> wrt) {
  Tensor w = g.input("w", o.dtype(), o.shape());
  Tensor loss = sum(o * w);
  g.output(o, "o");
  for (const auto &[x, n] : wrt)
    g.output(grad(loss, x), n);
}

TEST_F(AttentionBackward, LengthsHeadDimsCausalOrNot) {
  for (bool causal : {false, true})
    for (int64_t s : {17, 1000})
      for (int64_t d : {64, 80}) {
        Graph g(name(causal ? "causal_train" : "train", DType::F32, s, d));
        Tensor q = g.input("q", DType::F32, {1, 2, s, d});
        Tensor k = g.input("k", DType::F32, {1, 2, s, d});
        Tensor v = g.input("v", DType::F32, {1, 2, s, d});
        train(g, attend(q, k, v, causal), {{q, "dq"}, {k, "dk"}, {v, "dv"}});
        expectBackward(g, true, 41);
      }
}

TEST_F(AttentionBackward, BatchesOfHeads) {
  int64_t s = 100, d = 64;
  Graph g(name("heads_train", DType::F32, s, d));
  Tensor q = g.input("q", DType::F32, {3, 4, s, d});
  Tensor k = g.input("k", DType::F32, {3, 4, s, d});
  Tensor v = g.input("v", DType::F32, {3, 4, s, d});
  train(g, attend(q, k, v, true), {{q, "dq"}, {k, "dk"}, {v, "dv"}});
  expectBackward(g, true, 43);
}

TEST_F(AttentionBackward, GroupedKVHeadsSumTheirGradients) {
  for (int64_t s : {17, 1000}) {
    int64_t d = 64;
    Graph g(name("grouped_train", DType::F32, s, d));
    Tensor q = g.input("q", DType::F32, {1, 2, 4, s, d});
    Tensor k = g.input("k", DType::F32, {1, 2, 1, s, d});
    Tensor v = g.input("v", DType::F32, {1, 2, 1, s, d});
    train(g, attend(q, k, v, true), {{q, "dq"}, {k, "dk"}, {v, "dv"}});
    expectBackward(g, true, 47);
  }
}

TEST_F(AttentionBackward, SlidingWindowStartsTheQueriesWalk) {
  // dQ's walk over the keys starts at the window, as the forward's does.
  for (int64_t window : {1, 37, 200}) {
    int64_t s = 300, d = 64;
    Graph g(name("window_train" + std::to_string(window), DType::F32, s, d));
    Tensor q = g.input("q", DType::F32, {1, 2, s, d});
    Tensor k = g.input("k", DType::F32, {1, 2, s, d});
    Tensor v = g.input("v", DType::F32, {1, 2, s, d});
    Tensor scores = matmul(q, transpose(k)) * 0.125;
    Tensor keyPos = iota(g, {s, s}, 1), queryPos = iota(g, {s, s}, 0);
    Tensor kept = logicalAnd(le(keyPos, queryPos), lt(queryPos - keyPos, double(window)));
    train(g, matmul(softmax(where(kept, scores, -INFINITY), -1), v), {{q, "dq"}, {k, "dk"}, {v, "dv"}});
    expectBackward(g, true, 59);
  }
}

TEST_F(AttentionBackward, ABiasWithoutAGradient) {
  int64_t s = 1000, d = 80;
  Graph g(name("bias_train", DType::F32, s, d));
  Tensor q = g.input("q", DType::F32, {1, 2, s, d});
  Tensor k = g.input("k", DType::F32, {1, 2, s, d});
  Tensor v = g.input("v", DType::F32, {1, 2, s, d});
  Tensor bias = g.input("bias", DType::F32, {2, s, s});
  train(g, attend(q, k, v, false, &bias), {{q, "dq"}, {k, "dk"}, {v, "dv"}});
  expectBackward(g, true, 53);
}

TEST_F(AttentionBackward, SoftCapAndCausalMask) {
  // Gemma-2's soft-cap with a small cap, so that tanh bends the scores.
  for (int64_t s : {17, 1000}) {
    int64_t d = 64;
    Graph g(name("softcap_train", DType::F32, s, d));
    Tensor q = g.input("q", DType::F32, {1, 2, s, d});
    Tensor k = g.input("k", DType::F32, {1, 2, s, d});
    Tensor v = g.input("v", DType::F32, {1, 2, s, d});
    Tensor scores = tanh(matmul(q, transpose(k)) * (1.0 / std::sqrt(double(d))) / 2.0) * 2.0;
    Tensor keyPos = iota(g, {s, s}, 1), queryPos = iota(g, {s, s}, 0);
    Tensor o = matmul(softmax(where(le(keyPos, queryPos), scores, -INFINITY), -1), v);
    train(g, o, {{q, "dq"}, {k, "dk"}, {v, "dv"}});
    expectBackward(g, true, 71);
  }
}

TEST_F(AttentionBackward, CrossAttentionByVjpWithANarrowerValue) {
  // 33 queries over 1000 keys (causal: top-left, so keys past 32 get no
  // gradient), V's rows of 32 against heads of 64, dO given.
  for (bool causal : {false, true}) {
    Graph g(name(causal ? "cross_causal_vjp" : "cross_vjp", DType::F32, 1000, 64));
    Tensor q = g.input("q", DType::F32, {1, 2, 33, 64});
    Tensor k = g.input("k", DType::F32, {1, 2, 1000, 64});
    Tensor v = g.input("v", DType::F32, {1, 2, 1000, 32});
    Tensor dy = g.input("dy", DType::F32, {1, 2, 33, 32});
    Tensor o = attend(q, k, v, causal);
    g.output(o, "o");
    g.output(vjp(o, q, dy), "dq");
    g.output(vjp(o, k, dy), "dk");
    g.output(vjp(o, v, dy), "dv");
    expectBackward(g, true, 73);
  }
}

TEST_F(AttentionBackward, QueriesAloneWithTheScaleMovedAfterTheProduct) {
  int64_t s = 1000, d = 64;
  Graph g(name("dq_train", DType::F32, s, d));
  Tensor q = g.input("q", DType::F32, {1, 2, s, d});
  Tensor k = g.input("k", DType::F32, {1, 2, s, d});
  Tensor v = g.input("v", DType::F32, {1, 2, s, d});
  train(g, attend(q, k, v, true), {{q, "dq"}});
  std::string fused;
  EXPECT_EQ(kernelsOfKind(g, {ScheduleKind::AttentionBackward}, fused, exactF32()), 1u) << fused;
  CompileOptions opt = exactF32();
  expectMatchesWith(g, opt, 59);
  opt.fusion = false;
  expectMatchesWith(g, opt, 59);
}

TEST_F(AttentionBackward, SelfAttentionOfProjectionsSplitIntoHeads) {
  // q, k and v from x by three products, split into heads by a reshape and
  // a permute; dx sums the three paths.
  int64_t b = 2, s = 100, heads = 2, d = 64;
  Graph g("selfattn_train");
  Tensor x = g.input("x", DType::F32, {b, s, heads * d});
  auto project = [&](const char *n) {
    Tensor w = g.input(n, DType::F32, {heads * d, heads * d});
    return permute(reshape(matmul(x, w), {b, s, heads, d}), {0, 2, 1, 3});
  };
  Tensor q = project("wq"), k = project("wk"), v = project("wv");
  Tensor o = attend(q, k, v, true);
  Tensor w = g.input("w", DType::F32, o.shape());
  Tensor loss = sum(o * w);
  g.output(loss, "loss"); // O is needed: the backward is found from it
  g.output(grad(loss, x), "dx");
  expectBackward(g, true, 67);
}

TEST_F(AttentionBackward, WhatTheKernelsDoNotTakeRunsUnfused) {
  // Rows of one key are too short for the template; f16 keeps the scores.
  for (auto [t, s] : {std::pair{DType::F32, int64_t(1)}, std::pair{DType::F16, int64_t(100)}}) {
    Graph g(name("unfused_train", t, s, 64));
    Tensor q = g.input("q", t, {1, 2, s, 64});
    Tensor k = g.input("k", t, {1, 2, s, 64});
    Tensor v = g.input("v", t, {1, 2, s, 64});
    train(g, attend(q, k, v, true), {{q, "dq"}, {k, "dk"}, {v, "dv"}});
    expectBackward(g, false, 61);
  }
}

} // namespace
} // namespace minijit
