//===- tests/unit/SplitKWavesTest.cpp - split-K and tiles by waves --------===//
// The slices split-K cuts (splitSlices, simplify/MatmulRewrites.h) and the
// tile of the CUDA cores' f32 template for a product of few tiles
// (pickSimtTile, schedule/SimtTiles.h), chosen together by whole waves.
//===----------------------------------------------------------------------===//
#include "compiler/schedule/SimtTiles.h"
#include "compiler/simplify/MatmulRewrites.h"

#include <gtest/gtest.h>

using namespace minijit;

TEST(SplitKWaves, SplitKCountsWavesAndThePartialSums) {
  const DeviceProperties dev = DeviceProperties::assumedH200(); // 132 SMs
  // nn.Linear 2048 x 1027 x 3001: 144 tiles of 128x128, 0.55 waves; 7
  // slices of 432 (on 128x64 tiles: 1027 columns waste less in 17 of 64)
  EXPECT_EQ(splitSlices(2048, 1027, 3001, dev), 7);
  // 512 x 512 x 8192: 16 tiles; 16 slices of 512 fill one wave
  EXPECT_EQ(splitSlices(512, 512, 8192, dev), 16);
  // a full wave or more, a short k: whole
  EXPECT_EQ(splitSlices(2048, 2112, 8192, dev), 1);
  EXPECT_EQ(splitSlices(2048, 1027, 500, dev), 1);
  // 128 rows through a 32768 x 32768 layer: 256 tiles, 0.97 waves; no split
  // saves a fifth (the waves grow with the slices)
  EXPECT_EQ(splitSlices(128, 32768, 32768, dev), 1);
  // slices are at least kMinSliceDepth deep: k = 600 allows 4 (152 deep)
  int64_t s = splitSlices(256, 256, 600, dev);
  EXPECT_GE(s, 2);
  EXPECT_LE(s, 4);
}

TEST(SplitKWaves, SplitKFillsTheSlotsWhenTilesAreFewAndKIsLong) {
  const DeviceProperties dev = DeviceProperties::assumedH200();
  // 256 x 256 over k = 524288: 4 tiles; 66 slices make 264 blocks, one
  // whole wave (16, the old cap, left the tile too small for the schedule)
  EXPECT_EQ(splitSlices(256, 256, 524288, dev), 66);
  // counting the operands' copies that 66 slices of 7944 (k padded by 16)
  // need: 64 slices of 8192, 256 blocks, no copy
  EXPECT_EQ(splitSlices(256, 256, 524288, dev, (256 + 256) * 524288), 64);
  // prime counts of tiles, sides a multiple of 64 and not: the slices fill
  // 0.9 of a wave of the rule's tile or more, without a second one
  for (int64_t tiles : {1, 3, 5, 7, 11, 13})
    for (int64_t extra : {0, 37}) {
      int64_t m = 128 * tiles - extra, n = 128 + extra;
      int64_t slices = splitSlices(m, n, 1 << 20, dev);
      SimtTileShape t = pickSimtTile(m, n, slices, dev);
      int64_t slots = int64_t(simtBlocksPerSM(t, dev)) * dev.smCount;
      int64_t blocks = ((m + t.bm - 1) / t.bm) * ((n + t.bn - 1) / t.bn) * slices;
      EXPECT_LE(blocks, slots) << m << " x " << n;
      EXPECT_GE(blocks, slots * 9 / 10) << m << " x " << n;
    }
  // a k too short for that many slices still takes slices of
  // kMinSliceDepth or more
  int64_t s = splitSlices(256, 256, 8192, dev);
  EXPECT_GE(8192 / s, kMinSliceDepth - 8);
  EXPECT_GE(s, 16);
}

/// The tile of a product of few tiles: the one of the wave tiles that pads
/// least (130 rows: three 64-row tiles, not two of 128), the 128x128 one
/// where the others pad as much (their lesser reuse counted); of many
/// tiles, the one of least whole waves where it saves a tenth; the named
/// tiles' rule elsewhere (too few for 128x128 to fill the SMs).
TEST(SplitKWaves, SplitKTileWastesLeastPadding) {
  const DeviceProperties dev = DeviceProperties::assumedH200();
  auto is = [](SimtTileShape t, unsigned bm, unsigned bn, unsigned tm) {
    return t.bm == bm && t.bn == bn && t.tm == tm;
  };
  EXPECT_TRUE(is(pickSimtTile(130, 250, 64, dev), 64, 128, 8));
  EXPECT_TRUE(is(pickSimtTile(250, 130, 64, dev), 128, 64, 8));
  EXPECT_TRUE(is(pickSimtTile(64, 64, 200, dev), 64, 64, 8));
  EXPECT_TRUE(is(pickSimtTile(256, 256, 64, dev), 128, 128, 8));
  EXPECT_TRUE(is(pickSimtTile(384, 200, 40, dev), 128, 128, 8)); // 64 columns pad as much
  EXPECT_TRUE(is(pickSimtTile(4096, 4096, 1, dev), 128, 128, 8)); // many tiles
  // many tiles whose m or n pads a 128-wide tile much: the tile of least
  // whole waves (130 rows: three 64-row tiles; NetVLAD's 32 clusters of
  // 204800 rows: 256x32, a 32-wide tile only where it holds all of n;
  // its batched [32, 100] @ [100, 512]: 32x256; 48 columns: 128x64)
  EXPECT_TRUE(is(pickSimtTile(130, 100000, 1, dev), 64, 128, 8));
  EXPECT_TRUE(is(pickSimtTile(204800, 32, 1, dev), 256, 32, 8));
  EXPECT_TRUE(is(pickSimtTile(204800, 10, 1, dev), 256, 32, 8));
  EXPECT_TRUE(is(pickSimtTile(32, 512, 2048, dev), 32, 256, 8));
  EXPECT_TRUE(is(pickSimtTile(204800, 48, 1, dev), 128, 64, 8));
  EXPECT_TRUE(is(pickSimtTile(130, 250, 64, dev), 64, 128, 8)); // (not 32x256: m > 32)
  EXPECT_TRUE(is(pickSimtTile(8192, 8192, 1, dev), 128, 128, 8));
  // on shapes nobody tuned for: where the 128x128 tiles give every SM a
  // block, the rule's tile does too (20000 x 32: 79 tiles of 256x32 would
  // leave 53 SMs idle)
  for (int64_t batch : {1, 7, 300})
    for (int64_t m : {1, 17, 32, 33, 130, 4097, 20000, 65537, 1000003})
      for (int64_t n : {1, 17, 32, 48, 130, 257, 4096, 50000}) {
        if (m * n * batch > (int64_t(1) << 32))
          continue;
        auto count = [&](unsigned bm, unsigned bn) {
          return (m + bm - 1) / bm * ((n + bn - 1) / bn) * batch;
        };
        SimtTileShape t = pickSimtTile(m, n, batch, dev);
        if (count(128, 128) >= dev.smCount)
          EXPECT_GE(count(t.bm, t.bn), dev.smCount)
              << batch << " x " << m << " x " << n << ": " << t.bm << "x" << t.bn;
      }
  EXPECT_TRUE(is(pickSimtTile(512, 512, 1, dev), 32, 32, 2)); // too few for 128x128
  // 16 x 16 outputs: the 16x16 tile, 1x1 a thread (a 64x64 one would be
  // 15/16 padding); 7 x 7 too
  EXPECT_TRUE(is(pickSimtTile(16, 16, 1000, dev), 16, 16, 1));
  EXPECT_TRUE(is(pickSimtTile(7, 7, 1000, dev), 16, 16, 1));
  EXPECT_TRUE(is(pickSimtTile(33, 129, 300, dev), 64, 64, 8));
  // the wave tiles of 8x8 threads hold 512 threads an SM, as two of 128x128 do
  for (const SimtTileShape &t : simtWaveTiles()) {
    if (t.tm == 8 && t.tn == 8) {
      EXPECT_EQ(simtBlocksPerSM(t, dev) * t.threads(), 512u) << t.bm << "x" << t.bn;
    }
  }
}

TEST(SplitKWaves, ProductsSplitInTheKernelAreSlicedByItsTiles) {
  const DeviceProperties dev = DeviceProperties::assumedH200(); // 132 SMs
  // a wave of 128 x 128 tiles or more: whole (128 rows through 16384 x
  // 16384, 128 tiles; 80 rows through 1024 x 20000, 157 tiles: the slices'
  // extra rounds and sums cost more than the second round's few tiles)
  EXPECT_EQ(splitInKernelSlices(128, 16384, 16384, 0, dev), 1);
  EXPECT_EQ(splitInKernelSlices(80, 20000, 1024, 0, dev), 1);
  // too few tiles: the fewest slices that fill a wave (64 tiles: 2), more
  // where they save whole rounds (48 rows, 96 tiles: 4 slices, 2.9 waves)
  EXPECT_EQ(splitInKernelSlices(128, 8192, 8192, 0, dev), 2);
  EXPECT_EQ(splitInKernelSlices(32, 8192, 4096, 0, dev), 2);
  EXPECT_EQ(splitInKernelSlices(48, 12288, 3072, 0, dev), 4);
  // past 16 slices where a product has very few tiles (6: 20 fill a wave)
  EXPECT_GE(splitInKernelSlices(200, 300, 50000, 0, dev), 20);
  // not the kernel's: few rows, a short k, or no count that fills a wave
  // (8 tiles over k = 1024: slices of 128 make 64 tiles)
  EXPECT_EQ(splitInKernelSlices(16, 32768, 32768, 0, dev), 0);
  EXPECT_EQ(splitInKernelSlices(128, 32768, 64, 0, dev), 0);
  EXPECT_EQ(splitInKernelSlices(128, 1024, 1024, 0, dev), 0);
}
