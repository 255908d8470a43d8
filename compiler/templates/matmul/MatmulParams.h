//===- compiler/templates/matmul/MatmulParams.h - matmul's parameters -*- C++ -*-===//
// The parameters of the matmul family's templates: on the CUDA cores (SIMT),
// on the tensor cores through mma.sync, and on Hopper through TMA and wgmma.
// Read by every stage from scheduling on (compiler/templates/LaunchGeometry.h).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/LaunchGeometry.h"

#include <algorithm>

namespace minijit {

/// The block tile and the layout of its loads, shared by both matmul templates.
struct MatmulTile : LaunchGeometry {
  unsigned bm = 128, bn = 128, bk = 16; ///< block tile
  bool vecA = false, vecB = false;      ///< 16-byte loads of A / B tiles
  /// 16-byte loads across a tile's rows, where the operand is stored
  /// transposed (A with m contiguous, B with k contiguous: nn.Linear's x @ W.T
  /// and the weight gradient dY^T @ X). The tensor-core template keeps such a
  /// tile transposed in shared memory too (As[k][m], Bs[n][k]).
  bool vecAT = false, vecBT = false;
  int64_t tilesM = 1, tilesN = 1;
};

struct MatmulSimtSchedule : MatmulTile {
  unsigned tm = 8, tn = 8; ///< outputs per thread
  /// k-slices of the tiles in shared memory: 2, the next slice fetched into
  /// registers during this one and stored after it; 3 or 4, copied by
  /// cp.async straight into shared memory, stages - 1 slices in flight
  unsigned stages = 2;
  /// The tiles of an operand whose k is contiguous in memory (A = x, B =
  /// nn.Linear's W) kept so in shared memory, As[s][m][k] and Bs[s][n][k +
  /// 4], copied and read by float4s along k, four k-steps at a time; a
  /// thread's rows of such a tile are interleaved (row ty + ii * bm / tm,
  /// column tx + jj * bn / tn). Else As[s][k][m + 4] and Bs[s][k][n + 4],
  /// transposed on the way.
  bool kRowsA = false, kRowsB = false;
  /// Static shared memory of the tiles: `stages` of A's and B's.
  unsigned staticSharedBytes() const {
    unsigned a = kRowsA ? bm * bk : bk * (bm + 4), b = kRowsB ? bn * (bk + 4) : bk * (bn + 4);
    return stages * (a + b) * 4;
  }
  /// 2: the fragments of the next k-step are read from shared memory while
  /// this one's multiply-adds run, and the next stage's first fragments
  /// right after the stage switch (no pause at the switch), with either
  /// kind of stages; 1: one set
  unsigned fragBuffers = 1;
  /// Registers a thread needs: the accumulators, the fragments (with those
  /// being read; four k-steps of a tile kept along k), addresses.
  unsigned estimatedRegisters() const {
    return tm * tn + (fragBuffers + 1) * (tm + tn) + 4 * ((kRowsA ? tm : 0) + (kRowsB ? tn : 0)) +
           32;
  }
};

struct MatmulMmaSchedule : MatmulTile {
  unsigned warpsM = 2, warpsN = 4; ///< warps per block
  unsigned stages = 2;             ///< k-slices of the tiles in flight
  unsigned fragBuffers = 1;        ///< 2 loads the next fragments during the mma
  unsigned sharedBytes = 0;        ///< dynamic shared memory per block
  /// Registers a thread needs: the accumulators, the fragments, addresses.
  unsigned estimatedRegisters() const {
    unsigned wtm = bm / warpsM, wtn = bn / warpsN;
    unsigned acc = (wtm / 16) * (wtn / 8) * 4;
    unsigned frags = fragBuffers * ((wtm / 16) * 4 + (wtn / 8) * 2);
    return acc + frags + 40;
  }
};

/// How one operand of the Hopper matmul lies in memory, as its TMA
/// descriptor sees it: K-major (k contiguous: A = x, B = nn.Linear's W.T) or
/// MN-major (m or n contiguous: B = W, A = x.T), and the strides in elements.
struct WgmmaOperand {
  bool kMajor = true;
  int64_t outerStride = 0; ///< elements between rows along the non-contiguous axis
  int64_t batchStride = 0; ///< elements between batches; 0: one matrix for every batch
  int64_t offset = 0;      ///< elements from the buffer's start to batch 0's first element
};

/// The Hopper template (templates/matmul/MatmulWgmma.cpp): a 128 x bn tile
/// per step, k in slices of 128 bytes (the swizzle's width: 64 of f16 or bf16, 32 of f32
/// read as TF32), `stages` slices in flight. Warpgroup 0 issues the TMA
/// loads; warpgroups 1 and 2 multiply (wgmma m64n{bn}k16, k8 for TF32) and
/// run the epilogue on their accumulators. grid = min(tiles, SMs) blocks
/// walk the tiles. In clusters of two (`cluster` = 2) the blocks of a
/// cluster take tiles m and m + 1 of one column pair by pair; each loads its
/// own A tile and half of the B tile they share, which TMA multicasts into
/// both blocks' shared memory.
struct MatmulWgmmaSchedule : MatmulTile {
  unsigned stages = 4;
  /// Ping-pong: each consumer takes every other tile, all its rows (bn at
  /// most 128), so one's epilogue overlaps the other's multiplies; else
  /// both take each tile (cooperative), 64 rows each.
  bool pingpong = false;
  // (cluster, of LaunchGeometry: 1 or 2, cooperative only; two share B's tile)
  WgmmaOperand a, b;
  int64_t tiles = 1;       ///< tilesM x tilesN x batch
  /// What the grid walks: the tiles, or with clusters of two the
  /// ceil(tilesM / 2) x tilesN x batch pairs of tiles along m, a cluster
  /// each (an odd tilesM leaves the last pair's second tile outside the
  /// matrix: its A tile loads as zeros and its epilogue stores nothing).
  int64_t walked() const {
    return cluster == 1 ? tiles : (tilesM + 1) / 2 * tilesN * (tiles / (tilesM * tilesN));
  }
  /// The persistent grid: a block (a cluster) per SM (pair of SMs), or
  /// fewer where there is less to walk.
  int64_t persistentGrid(int smCount) const {
    return cluster * std::min<int64_t>(walked(), std::max(1, smCount / int(cluster)));
  }
  /// The grid launched: a block a tile for the kernel that splits exact f32
  /// (the hardware's waves: walking two tiles a block was up to 28 % slower,
  /// docs/PERFORMANCE_LOG.md, "A block a tile, and slices by the split
  /// kernel's tiles"), else the persistent grid.
  int64_t launchGrid(int smCount) const {
    return splitInKernel ? tiles : persistentGrid(smCount);
  }
  /// The epilogue through shared memory: each consumer leaves its
  /// accumulators of 64 columns in a buffer of its own, then reads four
  /// consecutive columns of a row a thread, so that a warp's stores are
  /// whole lines of a row (16 bytes a thread) instead of 8 rows of 32 bytes
  /// (pairs from the accumulators' layout); two or one where n is not a
  /// multiple of 4 (matmulStoreRun), still one row's consecutive columns a
  /// warp. It pays most where the stores are most of the work (a short k:
  /// attention scores, outer products).
  bool stagedEpilogue = false;
  /// TF32 only: each k-slice's product goes into accumulators of its own
  /// (two sets, even and odd slices, so that one is added while the next
  /// slice's wgmmas run), which the CUDA cores add to the tile's sum rounded
  /// to nearest once the slice is done. The tensor cores' sums round more
  /// coarsely than an f32 add; this keeps their part to 32 of k. Three sets
  /// of bn / 2 accumulators a thread: bn at most 128, cooperative only.
  bool promote = false;
  /// Exact f32 as three TF32 products whose parts the kernel makes itself
  /// (MatmulWgmmaSplit.cpp): the consumers compute the tile's transpose,
  /// B's rows (nn.Linear's W) as wgmma's A operand, split into hi, hi_cross
  /// and lo in registers; the producer warpgroup splits A's tile (x) into
  /// its parts in shared memory. Each k-slice's product is added to the sum
  /// on the CUDA cores (as promote). The tile is 128 rows of A (bm, wgmma's
  /// n) by 128 of B (bn, 64 a consumer); `stages` counts the TMA ring's
  /// stages (B's and A's raw tiles), kSplitPartStages the parts' ring.
  bool splitInKernel = false;
  static constexpr unsigned kSplitPartStages = 2;
  /// Bytes of one stage of the parts' ring: A's tile three times.
  unsigned splitPartBytes() const { return 3 * bm * bk * elementBytes; }
  /// Bytes of one consumer's buffer: 64 rows of 64 floats, padded by 8 so
  /// that the pairs' stores fall in distinct banks.
  static constexpr unsigned kStagedRowFloats = 64 + 8;
  static constexpr unsigned kStagedBufferBytes = 64 * kStagedRowFloats * 4;
  unsigned epilogueBytes() const { return stagedEpilogue ? 2 * kStagedBufferBytes : 0; }
  /// The stages (from a 1024-byte boundary), the epilogue's buffers after
  /// them, plus 1 KiB to align the stages.
  unsigned sharedBytes = 0;
  unsigned elementBytes = 2; ///< 2 (f16, bf16) or 4 (f32 as TF32)
  /// Bytes of one stage: a 128 x bk tile of A and a bn x bk tile of B.
  unsigned stageBytes() const { return (bm + bn) * bk * elementBytes; }
  /// Shared memory of the stages (both rings where splitInKernel), without
  /// the epilogue's buffers and the alignment.
  unsigned ringBytes() const {
    return stages * stageBytes() + (splitInKernel ? kSplitPartStages * splitPartBytes() : 0);
  }
  /// k of one wgmma: 16 (f16, bf16) or 8 (TF32), 32 bytes either way.
  unsigned kStep() const { return 32 / elementBytes; }
  /// setmaxnreg moves registers to the consumers; the launch needs 168.
  unsigned estimatedRegisters() const { return 168; }
};

} // namespace minijit
