//===- compiler/templates/attention/AttentionParams.h - attention's parameters -*- C++ -*-===//
// The parameters of the attention family's templates: the forward on the CUDA
// cores and on the tensor cores, and the backward. Read by every stage from
// scheduling on (compiler/templates/LaunchGeometry.h).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/LaunchGeometry.h"

namespace minijit {

/// A block per (batch, tile of `br` query rows), `threadsPerRow` threads
/// per row: Q's tile stays in shared memory, K's and V's tiles of `bc` keys
/// pass through one buffer in turn, each row keeps its running max and sum
/// (online softmax) and its share of O (dv / threadsPerRow columns) in
/// registers. f32 arithmetic throughout (f16/bf16 converted on loading).
struct AttentionSchedule : LaunchGeometry {
  unsigned br = 32, bc = 32, threadsPerRow = 4;
  /// CUDA cores: query rows a thread (rows g, g + br / rowsPerThread, ...
  /// of the tile for the thread's group g), each element of K's and V's
  /// tiles read from shared memory once for all of them
  unsigned rowsPerThread = 1;
  int64_t tilesM = 1;       ///< query tiles per batch
  unsigned sharedBytes = 0; ///< Q's tile, the K/V tile, the probabilities' tile
};

/// The attention template on the tensor cores (f16/bf16, head dims that are
/// whole 16s up to 128): a warp per 16 x `rowTiles` of the block's `br`
/// query rows (by default 128 rows a block with 32 a warp; for few blocks
/// 64, 32 or 16 rows with 16 a warp), `bc` keys a tile (64 or 32);
/// threadsPerRow unused (a row's four threads are mma.sync's layout).
struct AttentionMmaSchedule : AttentionSchedule {
  unsigned rowTiles = 1; ///< row tiles of 16 a warp: 1 or 2
};

/// The attention template on Hopper (sm_90a; f16/bf16, head dims of 64 or
/// 128, opted into by `wgmma=1`): FlashAttention-3's split of a block into a
/// producer warpgroup and two consumer warpgroups of 64 query rows each
/// (br = 128, 384 threads). The producer's warps copy Q once and K's and V's
/// tiles of `bc` keys (64 or 128) into rings of `stages` tiles of shared
/// memory, in the 128-byte swizzle wgmma reads, each tile announced on an
/// mbarrier; the consumers compute S = Q K^T by wgmma from shared memory,
/// the score work and the online softmax on its accumulators, and O += P V
/// by wgmma with P from registers. threadsPerRow unused.
struct AttentionWgmmaSchedule : AttentionSchedule {
  unsigned stages = 2; ///< K's and V's tiles in flight (a ring each)
  /// A consumer issues tile j's S = Q K^T, then tile j - 1's O += P V, and
  /// runs tile j's softmax while the latter multiplies (FlashAttention-3's
  /// overlap inside a warpgroup); false: each product waited for at once.
  bool overlap = true;
  /// With overlap: the two consumers take turns issuing their wgmmas (named
  /// barriers), so that one's softmax runs while the other's products do
  /// (FlashAttention-3's ping-pong between warpgroups).
  bool pingpong = false;
  /// Bytes of Q's tile, and of a tile of K and of V in the rings (16-bit
  /// elements, 128-byte rows of 64 columns: no padding).
  int64_t qBytes = 0, kBytes = 0, vBytes = 0;
  /// The full and empty mbarriers of each slot of the two rings.
  unsigned staticSharedBytes() const { return 4 * 8 * stages; }
  /// At launch, before setmaxnreg splits them.
  unsigned estimatedRegisters() const { return 168; }
};

/// An attention's backward (KernelKind::AttentionBackwardKV or Q): a block
/// per (batch, tile of `bc` keys) for dK and dV, walking the query tiles of
/// `br` rows, or per (batch, tile of `br` queries) for dQ, walking the key
/// tiles of `bc`; `threadsPerRow` threads per row of the block's tile, its
/// share of the accumulated rows in registers; `tilesM` the block's tiles a
/// batch. f32 (templates/attention/AttentionSchedule.cpp).
struct AttentionBackwardSchedule : AttentionSchedule {};

} // namespace minijit
