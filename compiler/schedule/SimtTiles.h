//===- compiler/schedule/SimtTiles.h - f32 tiles by waves -------*- C++ -*-===//
// The tile of the CUDA cores' f32 template (templates/matmul/) that the
// rule gives a product, and the cost split-K (simplify/MatmulRewrites.h)
// weighs its slice counts by, so that both choose by one measure: whole
// waves of a tile's blocks (as many an SM as registers and shared memory
// allow) times the work of a wave, the padding of the last row and column
// of tiles included. A product of few tiles whose m or n is far from a
// multiple of 128 (130 rows: two 128-row tiles, half of the second empty)
// takes a narrower tile where that wastes less (of the same threads of 8x8
// outputs; for an m and n of a few dozen, the 32x32 and 16x16 tiles);
// split-K's slices then fill whole waves of that tile.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DeviceProperties.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace minijit {

/// A tile of the f32 template: bm x bn outputs, k in steps of bk, tm x tn
/// outputs a thread.
struct SimtTileShape {
  unsigned bm, bn, bk, tm, tn;
  unsigned threads() const { return (bm / tm) * (bn / tn); }
  /// The launch bounds' blocks an SM: threads of 8x8 outputs keep 512 of
  /// them an SM (two 256-thread blocks, four of 128, eight of 64), so each
  /// has the 128 registers the 128x128 tile's threads have; a block of at
  /// most 16384 accumulators otherwise two, a larger one one.
  unsigned minBlocksPerSM() const;
  bool operator==(const SimtTileShape &o) const {
    return bm == o.bm && bn == o.bn && bk == o.bk && tm == o.tm && tn == o.tn;
  }
};

/// The tiles `tile=` names, largest first: 256x128 (8x16 a thread, by hand
/// or by the tuner only), 128x128 (8x8), 64x64 (4x4), 32x32 (2x2), 16x16
/// (1x1, k steps of 64).
const std::vector<SimtTileShape> &simtNamedTiles();

/// The tiles the waves rule chooses from: those of threads of 8x8 outputs
/// and k steps of 8, 128x128 first, then 128x64, 64x128, 64x64, 256x32 and
/// 32x256 (an n or m of 32 or fewer); then the
/// named 32x32 and 16x16 tiles (2x2 and 1x1 a thread), for an m and n of a
/// few dozen.
const std::vector<SimtTileShape> &simtWaveTiles();

/// Resident blocks of tile `t` an SM, registers estimated (blocksPerSM of
/// Schedule.h on the template's two-stage form).
int simtBlocksPerSM(const SimtTileShape &t, const DeviceProperties &dev);

/// The work per k of an m x n product on tile `t`, in multiply-adds: its
/// tiles' (the padding of the last row and column of tiles included), each
/// tile's multiply-adds plus one for each float a thread reads from shared
/// memory for them (tm + tn for tm x tn: a quarter more for 8x8, twice as
/// much for 1x1) and 4 for each float of the operands' tiles a k-step
/// copies into shared memory (a load, a store, their addresses: the
/// narrower tiles' lesser reuse, 2 % more a useful multiply-add for 128x64,
/// 5 % for 64x64, than for 128x128).
double simtPaddedWork(const SimtTileShape &t, int64_t m, int64_t n);

/// The time of [batch, m, k] @ [batch, k, n] on tile `t`, in multiply-adds
/// of the whole machine at the 128x128 tile's rate: whole waves (a last
/// wave partly full takes as long as a full one) of the blocks an SM holds
/// of `t` on every SM, each block k times the work simtPaddedWork gives one
/// tile.
double simtProductCost(const SimtTileShape &t, int64_t m, int64_t n, int64_t batch, int64_t k,
                       const DeviceProperties &dev);

/// For [batch, m, k] @ [batch, k, n] (m x n a batch) whose matrices have
/// fewer 128x128 tiles than two an SM, all of them, batches counted, at
/// least one an SM (a product of few tiles, split-K's slices among them;
/// larger ones keep the measured 128x128 rules, smaller ones the named
/// tiles' rule): the one of simtWaveTiles of least simtPaddedWork (the
/// first of those of equal work) whose tiles, batches counted, give every
/// SM a block (256x32, larger than 128x128 along m, may not). It wastes least on padding, and the
/// blocks of the smaller tiles fill the last wave more finely. Split-K
/// then fills whole waves of that tile (splitSlices). Else none.
std::optional<SimtTileShape> simtWaveTile(int64_t m, int64_t n, int64_t batch,
                                          const DeviceProperties &dev);

/// For a product of many tiles (two 128x128 tiles an SM or more, batches
/// counted) whose m or n is far from a multiple of 128 (NetVLAD's [204800,
/// 512] @ [512, 32]: three quarters of each 128x128 tile would be padding):
/// the tile of threads of 8x8 outputs among simtWaveTiles (256x32, 32x256,
/// 128x64, ...) of least simtProductCost (whole waves of its padded work),
/// where it saves a tenth or more of the 128x128 tile's. Else none.
std::optional<SimtTileShape> simtNarrowTile(int64_t m, int64_t n, int64_t batch,
                                            const DeviceProperties &dev);

/// The tile the rule gives [batch, m, k] @ [batch, k, n]: simtWaveTile's
/// where it gives one, else simtNarrowTile's, else the largest of
/// simtNamedTiles but 256x128 whose tile count, batches counted, fills the
/// SMs (the smallest if none).
SimtTileShape pickSimtTile(int64_t m, int64_t n, int64_t batch, const DeviceProperties &dev);

/// The shallowest slice split-K cuts: 16 k-steps of 8. Once a slice, a
/// block waits for its first fetch with nothing to overlap it and stores
/// its partial sums after the last step (their traffic is counted apart,
/// in splitSlices' cost); 16 steps keep that wait a small part of the
/// slice, where slices of 32 steps or more left products of few tiles over
/// a k of a few thousand under two thirds of a wave.
constexpr int64_t kMinSliceDepth = 128;

/// The slices split-K (simplify/MatmulRewrites.h) cuts k into for an f32
/// product of [m, k] @ [k, n] on `dev`, where a matrix has fewer 128x128
/// tiles than two an SM and k is 512 or more: the count (2 up to the count
/// whose tiles fill an SM's blocks of the wave tile that has most of them,
/// or 16 if more; slices at least kMinSliceDepth deep) that minimizes the
/// time of the batch of slices on the tile pickSimtTile gives it
/// (simtProductCost: whole waves of that tile) plus the partial sums'
/// traffic and, for slices that do not end where k does, the copies of the
/// operands padded with zeros (`padCopies`: the elements of those not
/// copied anyway), when that saves a fifth or more; else 1.
int64_t splitSlices(int64_t m, int64_t n, int64_t k, const DeviceProperties &dev,
                    int64_t padCopies = 0);

/// Whether an exact f32 product of `batch` [m, k] @ [k, n], both operands
/// k-major, is worth three TF32 products split in its kernel on Hopper
/// (MatmulWgmmaSchedule::splitInKernel) by the rule: 32 rows or more (the
/// tensor cores not mostly multiplying zeros), a k of 128 or more (over a
/// few terms the parts' own error, the lo x lo terms left out, is not small
/// beside the sum's: up to 4 times the CUDA cores' at k = 4), and 128 x 128
/// tiles for 90 % of a wave or more.
bool splitInKernelFills(int64_t m, int64_t n, int64_t k, int64_t batch,
                        const DeviceProperties &dev);

/// The slices split-K cuts such a product into (the kernel, a block a
/// tile, then takes the batch of slices): of the counts (1 up to 16, or
/// two waves of tiles; slices at least kMinSliceDepth deep) whose batch the
/// kernel splits (splitInKernelFills), the one that minimizes the rounds of
/// tiles the hardware runs times each tile's depth and fixed work, plus the
/// partial sums' traffic and the copies of slices that do not end where k
/// does (`padCopies`, as splitSlices counts them), a count of more slices
/// only where it saves a tenth or more. 0 where no count fills: the CUDA
/// cores' rule (splitSlices) decides then.
int64_t splitInKernelSlices(int64_t m, int64_t n, int64_t k, int64_t padCopies,
                            const DeviceProperties &dev);

} // namespace minijit
