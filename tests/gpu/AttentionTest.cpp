//===- tests/gpu/AttentionTest.cpp - attention as one kernel on the GPU ----===//
// Attention written as plain ops (issue 43) against the CPU reference, fused
// (one attention kernel, where the template takes the shape: f16 and bf16
// with head dims 32, 64, 80 and 128 on the tensor cores) and unfused:
// sequence lengths that are not whole tiles (1, 17, 1000), head dims 32,
// 64, 80 and 128, f32, f16 and bf16, causal masks from iota, a bias,
// grouped K/V heads and a soft-cap with a sliding window (masked tiles at
// the start of a row), and the GPT-2 block samples. Each graph is also
// checked to compile to the attention kernel (or not, where its rows are too
// short), so a recognition that silently stops matching fails here. Hopper's
// kernel (wgmma=1) runs the tiles' cases of head dims 64 and 128 and other
// layouts.
//===----------------------------------------------------------------------===//
#include "tests/gpu/GpuTest.h"

#include "compiler/CompileDetail.h"

#include <cmath>

namespace minijit {
namespace {

class Attention : public GpuTest {
protected:
  /// Compiles `g` fused (no NVRTC) and checks whether it holds one attention
  /// kernel, then runs it as expectMatches does.
  void expectAttention(const Graph &g, bool fuses, uint64_t seed) {
    std::string fused;
    size_t attention = kernelsOfKind(
        g, {ScheduleKind::Attention, ScheduleKind::AttentionMma, ScheduleKind::AttentionWgmma},
        fused);
    EXPECT_EQ(attention, fuses ? 1u : 0u) << g.name() << "\n" << fused;
    expectMatches(g, seed);
  }
};

std::string name(const std::string &what, DType t, int64_t s, int64_t d) {
  return what + "_" + std::string(dtypeName(t)) + "_s" + std::to_string(s) + "_d" +
         std::to_string(d);
}

/// softmax(scale * q @ k^T + mask) @ v; q [B, H, sq, d], k and v [B, H, sk, d].
Tensor attend(const Tensor &q, const Tensor &k, const Tensor &v, bool causal) {
  int64_t d = q.shape()[q.shape().rank() - 1];
  Tensor s = matmul(q, transpose(k)) * (1.0 / std::sqrt(double(d)));
  if (causal) {
    int64_t sq = q.shape()[q.shape().rank() - 2], sk = k.shape()[k.shape().rank() - 2];
    Graph &g = q.graph();
    Tensor keyPos = iota(g, {sq, sk}, 1), queryPos = iota(g, {sq, sk}, 0);
    s = where(le(keyPos, queryPos), s, -INFINITY);
  }
  return matmul(softmax(s, -1), v);
}

TEST_F(Attention, EveryDtypeLengthAndHeadDim) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int64_t s : {1, 17, 1000})
      for (int64_t d : {32, 64, 80, 128}) {
        Graph g(name("attention", t, s, d));
        Tensor q = g.input("q", t, {1, 2, s, d});
        Tensor k = g.input("k", t, {1, 2, s, d});
        Tensor v = g.input("v", t, {1, 2, s, d});
        g.output(attend(q, k, v, false), "o");
        expectAttention(g, s >= 16, 11);
      }
}

TEST_F(Attention, CausalMaskFromIota) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int64_t s : {17, 1000})
      for (int64_t d : {64, 128}) {
        Graph g(name("causal", t, s, d));
        Tensor q = g.input("q", t, {2, 2, s, d});
        Tensor k = g.input("k", t, {2, 2, s, d});
        Tensor v = g.input("v", t, {2, 2, s, d});
        g.output(attend(q, k, v, true), "o");
        expectAttention(g, true, 13);
      }
}

TEST_F(Attention, CausalMaskWithFewerQueriesThanKeys) {
  // Top-left: query i sees keys 0..i; the walk over the keys stops at the
  // tile's last query row.
  for (DType t : {DType::F32, DType::F16}) {
    Graph g(name("causal_rect", t, 1000, 64));
    Tensor q = g.input("q", t, {1, 3, 33, 64});
    Tensor k = g.input("k", t, {1, 3, 1000, 64});
    Tensor v = g.input("v", t, {1, 3, 1000, 64});
    g.output(attend(q, k, v, true), "o");
    expectAttention(g, true, 29);
  }
}

TEST_F(Attention, BiasOverQueriesAndKeysOfUnequalLengths) {
  for (DType t : {DType::F32, DType::F16})
    for (int64_t sk : {17, 1000}) {
      int64_t sq = 33, d = 80;
      Graph g(name("bias", t, sk, d));
      Tensor q = g.input("q", t, {2, 3, sq, d});
      Tensor k = g.input("k", t, {2, 3, sk, d});
      Tensor v = g.input("v", t, {2, 3, sk, d});
      Tensor bias = g.input("bias", t, {3, sq, sk});
      Tensor s = matmul(q, transpose(k)) * (1.0 / std::sqrt(double(d))) + bias;
      g.output(matmul(softmax(s, -1), v), "o");
      expectAttention(g, true, 17);
    }
}

TEST_F(Attention, GroupedKVHeadsBroadcast) {
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t s : {17, 1000}) {
      int64_t d = 64;
      Graph g(name("grouped", t, s, d));
      Tensor q = g.input("q", t, {1, 2, 4, s, d});
      Tensor k = g.input("k", t, {1, 2, 1, s, d});
      Tensor v = g.input("v", t, {1, 2, 1, s, d});
      g.output(attend(q, k, v, true), "o");
      expectAttention(g, true, 19);
    }
}

TEST_F(Attention, HalvesOnTheCudaCores) {
  // bm=32 keeps f16 and bf16 off the tensor cores: f32 arithmetic, the
  // probabilities never rounded.
  for (DType t : {DType::F16, DType::BF16})
    for (int64_t s : {17, 1000}) {
      Graph g(name("cuda_cores", t, s, 64));
      Tensor q = g.input("q", t, {1, 4, s, 64});
      Tensor k = g.input("k", t, {1, 4, s, 64});
      Tensor v = g.input("v", t, {1, 4, s, 64});
      g.output(attend(q, k, v, true), "o");
      CompileOptions opt;
      opt.scheduleOverrides.bm = 32;
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      ASSERT_EQ(cg.detail->kernels.size(), 1u) << cg.fusedText();
      EXPECT_EQ(cg.detail->kernels[0].schedule.kind(), ScheduleKind::Attention);
      opt.compileKernels = true;
      expectMatchesWith(g, opt, 31);
    }
}

/// The masks of the tensor cores' tile tests.
enum class TileMask { Plain, Causal, Window50, FiniteLow };

/// A case of the tiles' tests: a [1, 3, sq, d] attention over sk keys.
struct TileCase {
  DType t;
  int64_t sq, sk, d;
  TileMask mask;
  double low; // FiniteLow's value
};

// Causal and plain, a sliding window (its walk starting past the first
// tile), cross-attention (256 queries, 1000 keys), head dims 32, 64, 80 and
// 128, f16 and bf16, and large finite masks as models write them (the type's
// lowest value, -1e9 in bf16; in f16 -1e9 would round to -inf): the first
// tile of keys masked for every row and the first rows masked at every key,
// whose softmax is then the mean of V.
const TileCase kTileCases[] = {
    {DType::BF16, 1000, 1000, 128, TileMask::Causal, 0},
    {DType::F16, 17, 17, 80, TileMask::Plain, 0},
    {DType::BF16, 1000, 1000, 64, TileMask::Window50, 0},
    {DType::F16, 333, 333, 32, TileMask::Causal, 0},
    {DType::BF16, 256, 256, 64, TileMask::Causal, 0},
    {DType::F16, 256, 1000, 64, TileMask::Plain, 0},
    {DType::F16, 256, 256, 64, TileMask::FiniteLow, -65504.0},
    {DType::BF16, 256, 1000, 64, TileMask::FiniteLow, -1e9},
    {DType::BF16, 300, 300, 128, TileMask::FiniteLow, -3.3895313892515355e38}};

/// The case's graph, named after `tile` and the case.
Graph tileGraph(const std::string &tile, const TileCase &c) {
  const char *maskNames[] = {"plain", "causal", "window50", "finitelow"};
  Graph g(name(tile + "_" + maskNames[int(c.mask)] + "_k" + std::to_string(c.sk), c.t, c.sq, c.d));
  Tensor q = g.input("q", c.t, {1, 3, c.sq, c.d});
  Tensor k = g.input("k", c.t, {1, 3, c.sk, c.d});
  Tensor v = g.input("v", c.t, {1, 3, c.sk, c.d});
  Tensor scores = matmul(q, transpose(k)) * (1.0 / std::sqrt(double(c.d)));
  Tensor keyPos = iota(g, {c.sq, c.sk}, 1), queryPos = iota(g, {c.sq, c.sk}, 0);
  switch (c.mask) {
  case TileMask::Plain:
    break;
  case TileMask::Causal:
    scores = where(le(keyPos, queryPos), scores, -INFINITY);
    break;
  case TileMask::Window50:
    scores =
        where(logicalAnd(le(keyPos, queryPos), lt(queryPos - keyPos, 50.0)), scores, -INFINITY);
    break;
  case TileMask::FiniteLow:
    scores = where(logicalAnd(ge(keyPos, 64.0), ge(queryPos, 5.0)), scores, c.low);
    break;
  }
  g.output(matmul(softmax(scores, -1), v), "o");
  return g;
}

TEST_F(Attention, EveryTensorCoreTile) {
  // Every tile of the tensor cores' kernel (bm rows a block, wm a warp, bn
  // keys), each on the cases above, whose lengths are whole tiles or not (the
  // score's bound tests dropped where the tiles divide the rows and the
  // keys; Q's fragments read again for each tile of keys at 128 with two row
  // tiles a warp).
  const int64_t tiles[][3] = {
      {128, 32, 64}, {128, 32, 32}, {128, 16, 64}, {64, 32, 64}, {64, 16, 32}};
  for (const auto &tile : tiles)
    for (const TileCase &c : kTileCases) {
      Graph g = tileGraph("tile" + std::to_string(tile[0]) + "x" + std::to_string(tile[1]) + "x" +
                              std::to_string(tile[2]),
                          c);
      CompileOptions opt;
      opt.scheduleOverrides.bm = tile[0];
      opt.scheduleOverrides.wm = tile[1];
      opt.scheduleOverrides.bn = tile[2];
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      ASSERT_EQ(cg.detail->kernels.size(), 1u) << cg.fusedText();
      const Schedule &sched = cg.detail->kernels[0].schedule;
      ASSERT_EQ(sched.kind(), ScheduleKind::AttentionMma) << g.name() << "\n" << cg.fusedText();
      const auto &m = sched.as<AttentionMmaSchedule>();
      EXPECT_EQ(int64_t(m.br), tile[0]) << g.name();
      EXPECT_EQ(int64_t(16 * m.rowTiles), tile[1]) << g.name();
      EXPECT_EQ(int64_t(m.bc), tile[2]) << g.name();
      opt.compileKernels = true;
      expectMatchesWith(g, opt, 37);
    }
}

TEST_F(Attention, CudaCoresRowsAThread) {
  // f32 on the CUDA cores with 1, 2 and 4 query rows a thread (each K and V
  // element read once for all of them), 2 to 8 threads a row, 16 to 128 rows
  // a block (the rule's combinations among them): odd lengths (tiles past the rows' and the keys'
  // ends), head dims whose columns a thread are whole float4s (64, 128) or not (36 over 4 threads),
  // a causal mask and a bias.
  struct Case {
    int64_t bm, rpt, tpr;
  };
  const Case cases[] = {{64, 4, 4}, {128, 4, 8}, {32, 2, 4}, {16, 2, 2}, {64, 1, 4},
                        {128, 2, 8}, {64, 4, 8}, {16, 2, 8}, {32, 2, 8}, {16, 1, 8}};
  for (const Case &c : cases)
    for (int64_t d : {36, 64, 128}) {
      if (d % c.tpr != 0)
        continue;
      for (bool causal : {false, true}) {
        int64_t s = causal ? 1000 : 77;
        Graph g(name(causal ? "rows_causal" : "rows_bias", DType::F32, s, d) + "_bm" +
                std::to_string(c.bm) + "_rpt" + std::to_string(c.rpt) + "_tpr" +
                std::to_string(c.tpr));
        Tensor q = g.input("q", DType::F32, {2, 3, s, d});
        Tensor k = g.input("k", DType::F32, {2, 3, s, d});
        Tensor v = g.input("v", DType::F32, {2, 3, s, d});
        if (causal) {
          g.output(attend(q, k, v, true), "o");
        } else {
          Tensor sc = matmul(q, transpose(k)) * (1.0 / std::sqrt(double(d))) +
                      g.input("bias", DType::F32, {3, s, s});
          g.output(matmul(softmax(sc, -1), v), "o");
        }
        CompileOptions opt;
        opt.scheduleOverrides.bm = c.bm;
        opt.scheduleOverrides.rpt = c.rpt;
        opt.scheduleOverrides.tpr = c.tpr;
        opt.compileKernels = false;
        CompiledGraph cg = compileGraph(g, opt);
        ASSERT_EQ(cg.detail->kernels.size(), 1u) << cg.fusedText();
        const Schedule &sched = cg.detail->kernels[0].schedule;
        ASSERT_EQ(sched.kind(), ScheduleKind::Attention) << g.name() << "\n" << cg.fusedText();
        EXPECT_EQ(int64_t(sched.as<AttentionSchedule>().rowsPerThread), c.rpt) << g.name();
        opt.compileKernels = true;
        expectMatchesWith(g, opt, 61);
      }
    }
}

TEST_F(Attention, StoresHeadsPutBackTogether) {
  // O permuted from [B, H, S, D] to [B, S, H, D] and reshaped to [B, S, H *
  // D] (a transformer layer's heads put back together): the attention kernel
  // stores each element there, no copy kernel after it, with each of the
  // three kernels (CUDA cores for f32, mma.sync, Hopper's wgmma), odd
  // lengths; the graph's output, or read by a product as [B * S, H * D].
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int wgmma : {0, 1}) {
      if (t == DType::F32 && wgmma == 1)
        continue;
      for (int64_t s : {77, 1000})
        for (bool project : {false, true}) {
          Graph g(name(project ? "heads_projected" : "heads_back", t, s, 64) +
                  (wgmma ? "_wgmma" : ""));
          Tensor q = g.input("q", t, {2, 3, s, 64});
          Tensor k = g.input("k", t, {2, 3, s, 64});
          Tensor v = g.input("v", t, {2, 3, s, 64});
          Tensor heads = reshape(permute(attend(q, k, v, true), {0, 2, 1, 3}), {2, s, 192});
          if (project)
            g.output(matmul(reshape(heads, {2 * s, 192}), g.input("w", t, {192, 40})), "y");
          else
            g.output(heads, "o");
          CompileOptions opt;
          opt.scheduleOverrides.wgmma = wgmma;
          opt.compileKernels = false;
          CompiledGraph cg = compileGraph(g, opt);
          EXPECT_EQ(cg.detail->kernels.size(), project ? 2u : 1u) << g.name() << "\n"
                                                                  << cg.fusedText();
          opt.compileKernels = true;
          expectMatchesWith(g, opt, 59);
        }
    }
}

/// Compiles `g` for the assumed H200 with `opt` (no NVRTC) and checks that
/// its first of `kernels` kernels is Hopper's attention with `bn` keys a
/// tile, `stages` slots a ring, and `overlap` and `pingpong` as said.
void expectHopperAttention(const Graph &g, CompileOptions opt, int64_t bn, int64_t stages,
                           bool overlap = true, size_t kernels = 1, bool pingpong = false) {
  opt.compileKernels = false;
  opt.device = DeviceProperties::assumedH200();
  CompiledGraph cg = compileGraph(g, opt);
  ASSERT_EQ(cg.detail->kernels.size(), kernels) << cg.fusedText();
  const Schedule &sched = cg.detail->kernels[0].schedule;
  ASSERT_EQ(sched.kind(), ScheduleKind::AttentionWgmma) << g.name() << "\n" << cg.fusedText();
  EXPECT_EQ(int64_t(sched.as<AttentionWgmmaSchedule>().bc), bn) << g.name();
  EXPECT_EQ(int64_t(sched.as<AttentionWgmmaSchedule>().stages), stages) << g.name();
  EXPECT_EQ(sched.as<AttentionWgmmaSchedule>().overlap, overlap) << g.name();
  EXPECT_EQ(sched.as<AttentionWgmmaSchedule>().pingpong, pingpong) << g.name();
}

TEST_F(Attention, HopperKernelWhereAsked) {
  // wgmma=1: Hopper's kernel (AttentionWgmma.cpp) on each case above whose
  // head dims it takes (64 and 128), with tiles of 128 and 64 keys, rings of
  // 2 to 4 slots (the walk wrapping round each ring several times), each
  // tile's softmax beside the tile before's P V or not, and the consumers
  // taking turns to issue or not. On a GPU without wgmma the rules keep
  // mma.sync's kernel, which then runs.
  // {bn, stages, overlap, pingpong}
  const int64_t tiles[][4] = {{128, 2, 1, 0}, {64, 3, 1, 0},  {128, 3, 0, 0}, {64, 4, 0, 0},
                              {128, 2, 0, 0}, {128, 2, 1, 1}, {64, 3, 1, 1}};
  for (const auto &tile : tiles)
    for (const TileCase &c : kTileCases) {
      if (c.d != 64 && c.d != 128)
        continue;
      Graph g = tileGraph("wgmma" + std::to_string(tile[0]) + "x" + std::to_string(tile[1]) +
                              (tile[2] ? "_overlap" : "") + (tile[3] ? "_pingpong" : ""),
                          c);
      CompileOptions opt;
      opt.scheduleOverrides.wgmma = 1;
      opt.scheduleOverrides.bn = tile[0];
      opt.scheduleOverrides.stages = tile[1];
      opt.scheduleOverrides.overlap = tile[2];
      opt.scheduleOverrides.pingpong = tile[3];
      expectHopperAttention(g, opt, tile[0], tile[1], tile[2] == 1, 1, tile[3] == 1);
      expectMatchesWith(g, opt, 43);
    }
}

TEST_F(Attention, HopperKernelReadsEveryLayout) {
  // wgmma=1 on layouts other than [B, H, S, D] in place: Q, K and V read
  // from [B, S, H, D] (the rows of a tile H * D apart; O stored through the
  // permute back), grouped K/V heads
  // (a batch's K and V shared by 4 heads of Q), a value head dim (128) unlike
  // the key's (64), and V stored transposed ([B, H, D, S]: its rows are not
  // whole 16-byte chunks, copied element by element); odd lengths.
  CompileOptions opt;
  opt.scheduleOverrides.wgmma = 1;
  {
    Graph g("wgmma_bshd_bf16");
    Tensor q = permute(g.input("q", DType::BF16, {2, 77, 3, 64}), {0, 2, 1, 3});
    Tensor k = permute(g.input("k", DType::BF16, {2, 77, 3, 64}), {0, 2, 1, 3});
    Tensor v = permute(g.input("v", DType::BF16, {2, 77, 3, 64}), {0, 2, 1, 3});
    g.output(permute(attend(q, k, v, true), {0, 2, 1, 3}), "o"); // back to [B, S, H, D]
    expectHopperAttention(g, opt, 128, 3, true, 1);
    expectMatchesWith(g, opt, 47);
  }
  {
    Graph g("wgmma_grouped_f16");
    Tensor q = g.input("q", DType::F16, {2, 2, 4, 200, 128});
    Tensor k = g.input("k", DType::F16, {2, 2, 1, 200, 128});
    Tensor v = g.input("v", DType::F16, {2, 2, 1, 200, 128});
    g.output(attend(q, k, v, false), "o");
    expectHopperAttention(g, opt, 128, 3);
    expectMatchesWith(g, opt, 53);
  }
  {
    Graph g("wgmma_dv128_bf16");
    Tensor q = g.input("q", DType::BF16, {1, 4, 130, 64});
    Tensor k = g.input("k", DType::BF16, {1, 4, 250, 64});
    Tensor v = g.input("v", DType::BF16, {1, 4, 250, 128});
    g.output(attend(q, k, v, false), "o");
    expectHopperAttention(g, opt, 128, 3);
    expectMatchesWith(g, opt, 59);
  }
  {
    Graph g("wgmma_vt_bf16");
    Tensor q = g.input("q", DType::BF16, {1, 2, 129, 64});
    Tensor k = g.input("k", DType::BF16, {1, 2, 129, 64});
    Tensor v = transpose(g.input("vt", DType::BF16, {1, 2, 64, 129}));
    g.output(attend(q, k, v, true), "o");
    expectHopperAttention(g, opt, 128, 3);
    expectMatchesWith(g, opt, 61);
  }
}

TEST_F(Attention, HopperKernelByRule) {
  // Unasked, the rules give Hopper's kernel every attention it takes (rings
  // of 3 slots, which the shared memory holds at head dim 128 too): many
  // blocks of 128 query rows and fewer than the SMs; each runs against the
  // CPU reference. wgmma=0 keeps mma.sync's kernel.
  for (int64_t d : {64, 128}) {
    Graph g("wgmma_by_rule_bf16_d" + std::to_string(d));
    Tensor q = g.input("q", DType::BF16, {3, 48, 129, d});
    Tensor k = g.input("k", DType::BF16, {3, 48, 129, d});
    Tensor v = g.input("v", DType::BF16, {3, 48, 129, d});
    g.output(attend(q, k, v, true), "o");
    expectHopperAttention(g, CompileOptions{}, 128, 3);
    expectMatches(g, 67);
  }
  Graph few("wgmma_few_blocks_f16");
  Tensor q = few.input("q", DType::F16, {1, 8, 300, 64});
  Tensor k = few.input("k", DType::F16, {1, 8, 300, 64});
  Tensor v = few.input("v", DType::F16, {1, 8, 300, 64});
  few.output(attend(q, k, v, false), "o");
  expectHopperAttention(few, CompileOptions{}, 128, 3);
  expectMatches(few, 71);
  CompileOptions mma;
  mma.scheduleOverrides.wgmma = 0;
  std::string fused;
  EXPECT_EQ(kernelsOfKind(few, {ScheduleKind::AttentionMma}, fused, mma), 1u) << fused;
  expectMatchesWith(few, mma, 73);
}

TEST_F(Attention, SoftCapAndSlidingWindow) {
  int64_t s = 1000, d = 64;
  Graph g("softcap_window");
  Tensor q = g.input("q", DType::F32, {1, 2, s, d});
  Tensor k = g.input("k", DType::F32, {1, 2, s, d});
  Tensor v = g.input("v", DType::F32, {1, 2, s, d});
  Tensor scores = tanh(matmul(q, transpose(k)) * (1.0 / std::sqrt(double(d))) / 30.0) * 30.0;
  Tensor keyPos = iota(g, {s, s}, 1), queryPos = iota(g, {s, s}, 0);
  Tensor inWindow = logicalAnd(le(keyPos, queryPos), lt(queryPos - keyPos, 64.0));
  g.output(matmul(softmax(where(inWindow, scores, -INFINITY), -1), v), "o");
  expectAttention(g, true, 23);
}

TEST_F(Attention, SlidingWindowsStartTheWalkAtTheWindow) {
  // qpos - kpos < W (and-ed with causal, or nested, or <= W - 1): each query
  // tile's walk over the keys starts at the tile of its first row's first
  // key kept. Windows of 1 key, not a multiple of the tile, longer than the
  // sequence; the tensor cores' kernel (bf16) and the CUDA cores' (f32).
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t s : {17, 1000})
      for (int64_t window : {1, 50, 64, 301, 5000}) {
        int64_t d = 64;
        Graph g(name("window" + std::to_string(window), t, s, d));
        Tensor q = g.input("q", t, {1, 2, s, d});
        Tensor k = g.input("k", t, {1, 2, s, d});
        Tensor v = g.input("v", t, {1, 2, s, d});
        Tensor scores = matmul(q, transpose(k)) * (1.0 / std::sqrt(double(d)));
        Tensor keyPos = iota(g, {s, s}, 1), queryPos = iota(g, {s, s}, 0);
        Tensor masked =
            window % 2 == 0
                ? where(logicalAnd(le(keyPos, queryPos), lt(queryPos - keyPos, double(window))),
                        scores, -INFINITY)
                : where(le(keyPos, queryPos),
                        where(le(queryPos - keyPos, double(window - 1)), scores, -INFINITY),
                        -INFINITY);
        g.output(matmul(softmax(masked, -1), v), "o");
        expectAttention(g, true, 53);
      }
}

/// The GPT-2 block samples: the attention over q, k and v read in place from
/// the QKV product is one kernel, and the training step's backward is two.
TEST_F(Attention, Gpt2BlockSamples) {
  for (const Graph &g : parseFile(samplePath("gpt2_block.mj")))
    expectAttention(g, true, 29);
  for (const Graph &g : parseFile(samplePath("gpt2_block_train.mj"))) {
    std::string fused;
    EXPECT_EQ(kernelsOfKind(g, {ScheduleKind::AttentionBackward}, fused), 2u) << fused;
    expectMatches(g, 31);
  }
}

} // namespace
} // namespace minijit
