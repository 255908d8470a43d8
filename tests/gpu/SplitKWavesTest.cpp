//===- tests/gpu/SplitKWavesTest.cpp - split-K and its tiles on the GPU ---===//
// f32 products of few tiles: split along k (simplify/MatmulRewrites.h) and
// the tile of the CUDA cores that pads least (schedule/SimtTiles.h), against
// the CPU reference.
//===----------------------------------------------------------------------===//
#include "compiler/CompileDetail.h"
#include "tests/gpu/GpuTest.h"
#include "tests/gpu/MatmulCases.h"

#include <cstdlib>
#include <string>
#include <utility>

namespace minijit {
namespace {

class SplitKWaves : public GpuTest {};

/// Split-K: an f32 product of too few tiles, split by the rule (the default;
/// nn.Linear's layout, a bias after the sum) and forced
/// into 3 slices on every layout pair with k = 77 padded to 3 slices of 32,
/// m and n whole float4s and not.
TEST_F(SplitKWaves, SplitKOnFewTiles) {
  auto splits = [](const Graph &g, const char *overrides) {
    CompileOptions opt;
    opt.compileKernels = false;
    opt.scheduleOverrides = *parseScheduleOverrides(overrides);
    return compileGraph(g, opt).fusedText().find("split along k") != std::string::npos;
  };
  {
    Graph g("linear_split");
    Tensor x = g.input("x", DType::F32, {300, 2000});
    Tensor w = g.input("w", DType::F32, {260, 2000});
    Tensor bias = g.input("bias", DType::F32, {260});
    g.output(matmul(x, w.permute({1, 0})) + bias, "y");
    EXPECT_TRUE(splits(g, "")); // by default
    EXPECT_TRUE(splits(g, "splitk=1"));
    EXPECT_FALSE(splits(g, "splitk=0"));
    expectMatches(g, 21);
  }
  // m and n whole float4s, and not (a contiguous m or n padded, sliced back)
  for (auto [m, n] : {std::pair<int64_t, int64_t>{132, 260}, {133, 259}})
    for (bool aT : {false, true})
      for (bool bT : {false, true}) {
        ScheduleEnv env("splitk=3");
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + (aT ? " A^T" : " A") +
                     (bT ? " B^T" : " B"));
        Graph g("mm_split");
        auto [a, b] = layoutPair(g, aT, bT, m, n, 77);
        g.output(tanh(matmul(a, b) * 0.05), "c");
        EXPECT_TRUE(splits(g, "splitk=3"));
        expectMatches(g, static_cast<uint64_t>(31 + 2 * aT + bT + m));
      }
}

/// Split-K where the tiles are few and k is long: 130 rows take three
/// 64-row tiles, not two of 128 (half of the second empty), and the slices
/// fill a whole wave of the 64x128 tile's blocks (four an SM), k padded to
/// whole slices (A copied for it; B is copied anyway, n = 250).
TEST_F(SplitKWaves, SplitKFillsAWaveOnFewTiles) {
  Graph g("long_k");
  Tensor a = g.input("a", DType::F32, {130, 65536});
  Tensor b = g.input("b", DType::F32, {65536, 250});
  g.output(matmul(a, b), "y");
  CompileOptions opt;
  opt.compileKernels = false;
  std::string fused = compileGraph(g, opt).fusedText();
  EXPECT_NE(fused.find("split along k (88 slices of 752)"), std::string::npos) << fused;
  EXPECT_NE(fused.find("64x128 tile"), std::string::npos) << fused;
  EXPECT_NE(fused.find("1.00 waves of 528 blocks"), std::string::npos) << fused;
  expectMatches(g, 17);
}

/// Each tile of the waves rule (SimtTiles.h) at m and n that are not
/// multiples of it, over k = 5003 cut into 40 slices of 128 (200 of 32 for
/// the tiles of an m and n of a few dozen; k padded, so the last slice ends
/// in zeros), on both layouts of each operand (all four pairs on the first
/// shape), with an epilogue after the sum; on the CUDA cores (split3=0: the
/// slices of the larger ones would be split in the kernel on Hopper).
TEST_F(SplitKWaves, WaveTilesAtOddShapes) {
  struct Case {
    int64_t m, n;
    const char *tile, *slices, *split;
  };
  for (const Case &c :
       {Case{130, 250, "64x128 tile", "splitk=40,split3=0", "40 slices of 128"},
        Case{250, 130, "128x64 tile", "splitk=40,split3=0", "40 slices of 128"},
        Case{257, 257, "64x64 tile, k step 8", "splitk=40,split3=0", "40 slices of 128"},
        Case{250, 250, "128x128 tile", "splitk=40,split3=0", "40 slices of 128"},
        Case{24, 40, "32x32 tile", "splitk=200", "200 slices of 32"},
        Case{7, 9, "16x16 tile", "splitk=200", "200 slices of 32"}})
    for (int layout = 0; layout < 4; ++layout) {
      bool aT = layout & 1, bT = layout & 2;
      if (c.m != 130 && aT != bT)
        continue;
      ScheduleEnv env(c.slices);
      SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + (aT ? " A^T" : " A") +
                   (bT ? " B^T" : " B"));
      Graph g("mm_wave_tile");
      auto [a, b] = layoutPair(g, aT, bT, c.m, c.n, 5003);
      Tensor bias = g.input("bias", DType::F32, {c.n});
      g.output(tanh(matmul(a, b) * 0.05 + bias), "c");
      CompileOptions opt;
      opt.compileKernels = false;
      std::string fused = compileGraph(g, opt).fusedText();
      EXPECT_NE(fused.find(std::string("split along k (") + c.split + ")"), std::string::npos)
          << fused;
      EXPECT_NE(fused.find(c.tile), std::string::npos) << fused;
      expectMatches(g, static_cast<uint64_t>(c.m + c.n + layout));
    }
}

/// A batch of products of few tiles (not split: split-K takes products of
/// rank 2) takes the tile that pads least too: 130 x 250 in 64x128 tiles,
/// k = 77 not a multiple of the k-step.
TEST_F(SplitKWaves, BatchOfFewTilesTakesTheWaveTile) {
  for (bool bT : {false, true}) {
    Graph g("bmm_wave_tile");
    auto [a, b] = layoutPair(g, false, bT, 130, 250, 77, 64);
    g.output(matmul(a, b) * 0.5, "c");
    CompileOptions opt;
    opt.compileKernels = false;
    std::string fused = compileGraph(g, opt).fusedText();
    EXPECT_NE(fused.find("64x128 tile"), std::string::npos) << fused;
    EXPECT_EQ(fused.find("split along k"), std::string::npos) << fused;
    expectMatches(g, 23 + bT, /*fusedOnly=*/true);
  }
}

/// Products of many tiles with an n (or, batched, an m) of 32 or fewer:
/// the narrow tiles (256x32, 32x256; NetVLAD's [204800, 512] @ [512, 32]
/// and its batch of [32, 100] @ [100, 512]) on every layout pair, n and m
/// whole float4s or not, k a multiple of the k-step or not; by the rule
/// (three cp.async stages: held in registers, the next slice spills) and
/// through registers (cpasync=0), an epilogue after.
TEST_F(SplitKWaves, NarrowTilesOfManyRowsOrABatchOfFew) {
  struct Case {
    int64_t m, n, k, batch;
    const char *tile;
  };
  for (const Case &c :
       {Case{70001, 32, 129, 1, "256x32 tile"}, Case{70001, 19, 512, 1, "256x32 tile"},
        Case{32, 515, 100, 300, "32x256 tile"}, Case{21, 512, 77, 300, "32x256 tile"}})
    for (int layout = 0; layout < 4; ++layout)
      for (const char *overrides : {"split3=0", "split3=0,cpasync=0"}) {
        bool aT = layout & 1, bT = layout & 2;
        ScheduleEnv env(overrides);
        SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" +
                     std::to_string(c.n) + "x" + std::to_string(c.k) + (aT ? " A^T" : " A") +
                     (bT ? " B^T" : " B") + " " + overrides);
        Graph g("mm_narrow_tile");
        auto [a, b] = layoutPair(g, aT, bT, c.m, c.n, c.k, c.batch);
        Tensor bias = g.input("bias", DType::F32, {c.n});
        g.output(tanh(matmul(a, b) * 0.05 + bias), "c");
        CompileOptions opt;
        opt.compileKernels = false;
        if (Gpu)
          opt.device = gpu().properties();
        std::string fused = compileGraph(g, opt).fusedText();
        EXPECT_NE(fused.find(c.tile), std::string::npos) << fused;
        EXPECT_EQ(fused.find("split along k"), std::string::npos) << fused;
        expectMatches(g, static_cast<uint64_t>(c.m + c.n + layout), /*fusedOnly=*/true);
      }
}

} // namespace
} // namespace minijit
