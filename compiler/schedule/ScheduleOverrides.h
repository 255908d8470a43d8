//===- compiler/schedule/ScheduleOverrides.h - hand-set schedule parameters -*- C++ -*-===//
// Schedule parameters set by hand, as typed fields: parsed once where text
// comes in (the CLI's --schedule, $MINIJIT_SCHEDULE, a tuning database
// entry), then passed inward as they are; each template reads the ones it has.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Expected.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace minijit {

/// A field is set when the text names its key. Ranges are checked by the
/// template that applies it (what fits depends on the kernel).
/// Built in code by naming the fields set: {.tpr = 64, ...} (each field
/// starts unset, `= {}`, so a designated initializer may leave it out).
struct ScheduleOverrides {
  std::optional<int64_t> block = {}; ///< pointwise; inner rows of up to a warp
  std::optional<int64_t> vec = {};   ///< pointwise, inner rows
  std::optional<int64_t> items = {}; ///< pointwise: vectors per thread
  std::optional<int64_t> tpr = {};   ///< inner rows: threads per row
  std::optional<bool> cached = {};   ///< inner rows: keep the row in registers
  std::optional<int64_t> parts = {}; ///< outer columns: threads per column
  /// outer columns: blocks sharing a group of columns; inner rows of a
  /// block each: blocks sharing a row
  std::optional<int64_t> splits = {};
  /// scans: 1 chains a row's tiles over blocks, one a block (a decoupled
  /// look-back), 0 keeps a block walking each row; unset: the rule (chained
  /// where the rows alone leave SMs idle)
  std::optional<int64_t> chain = {};
  std::optional<int64_t> transpose = {}; ///< pointwise: 0 keeps permuted operands out of tiles
  /// inner rows: a sum of exp(x - max) in its max's pass (online softmax)
  /// and a sum of squared deviations in its mean's (Welford): 0 never,
  /// 1 always; unset: the online sum where the kernel then reads its rows
  /// once, both where its passes read them from DRAM
  std::optional<int64_t> online = {};
  /// inner rows read in a loop: vectors a thread loads before it works on
  /// them (1: one at a time)
  std::optional<int64_t> ahead = {};
  std::optional<int64_t> tile = {};  ///< matmul: the block tile's height, one of the template's
  /// tensor-core matmul; frag also f32 on the CUDA cores (2: the pipelined
  /// loop, next fragments read during the multiply-adds)
  std::optional<int64_t> bm = {}, bn = {}, bk = {}, stages = {}, frag = {}, wm = {}, wn = {};
  /// f16/bf16 matmul on Hopper: 0 keeps the mma.sync template (where the
  /// wgmma one would apply, it takes bn and stages; tile, bm, bk, frag, wm
  /// and wn are mma.sync's); f16/bf16 attention on Hopper: the wgmma kernel
  /// (AttentionWgmmaSchedule) is the rule where it takes the attention, 0
  /// keeps mma.sync's, 1 asks for it (as the rule does)
  std::optional<int64_t> wgmma = {};
  /// the Hopper matmul: 1 gives each consumer warpgroup every other tile
  /// (ping-pong), 0 both every tile (cooperative); attention on wgmma: 1
  /// makes its two consumers take turns issuing their wgmmas
  std::optional<int64_t> pingpong = {};
  /// the Hopper matmul, cooperative: 2 pairs the blocks in clusters of two
  /// that take neighbouring tiles along m and share B's tile, each loading
  /// half of it for both (TMA multicast); 1 (the default) no clusters
  std::optional<int64_t> cluster = {};
  /// the Hopper matmul: 1 stages the epilogue through shared memory (whole
  /// lines of a row per warp store), 0 stores from the accumulators' layout
  std::optional<int64_t> staged = {};
  /// the Hopper matmul of f32 operands read as TF32, cooperative, bn up to
  /// 128: 1 gives each k-slice's product accumulators of its own and adds it
  /// to the tile's sum on the CUDA cores, rounded to nearest, once it is done
  /// (the tensor cores' own sums then span 32 of k, not all of it), the
  /// default for three TF32 products where the tile allows it; 0 one
  /// accumulator, the default for --allow-tf32
  std::optional<int64_t> promote = {};
  /// f32 matmul on the CUDA cores, the 128x128 tile: columns a thread
  /// computes, 8 (256 threads, the default) or 16 (128 threads of 8x16)
  std::optional<int64_t> tn = {};
  /// f32 matmul on the CUDA cores: 3 or 4 copies the tiles into that many
  /// stages of shared memory by cp.async; 0 fetches the next k-slice into
  /// registers and stores it after this one (two stages). Unset: the rule
  /// (4 with frag=2 where rows are not whole lines or both operands are
  /// copied as stored, deeperPipelinePays)
  std::optional<int64_t> cpasync = {};
  /// f32 matmul on the CUDA cores, threads of 8x16 outputs (tile=256 or
  /// tn=16): 1 keeps the tiles of an operand whose k is contiguous in
  /// memory so in shared memory (float4 copies and reads along k), 0
  /// transposes them on the way (MatmulSimtSchedule::kRowsA, kRowsB)
  std::optional<int64_t> krows = {};
  /// an inner-row reduction with a block per row (sm_90): 2, 4 or 8 splits
  /// each row over a cluster of that many blocks, which meet at its
  /// barrier; 1 (the default) a block a row
  std::optional<int64_t> rowcluster = {};
  /// f32 matmul on the CUDA cores: 0 reads operands whose rows are not whole
  /// float4s element by element (no padded copies, MatmulRewrites.h)
  std::optional<int64_t> pad = {};
  /// f32 matmul on the CUDA cores, split-K (MatmulRewrites.h): unset or 1
  /// splits k where too few tiles would leave block slots idle (the rule),
  /// N >= 2 splits every product whose layout allows it into N slices, 0
  /// never
  std::optional<int64_t> splitk = {};
  /// f32 matmul on Hopper (CompileOptions::tf32x3): 1 runs every f32
  /// product as three TF32 products, past tf32x3Pays's line too, except one
  /// of too few tiles (less than a round of the SMs, or one split-K slices
  /// or would); 0 none (as --exact-f32); unset: the line
  std::optional<bool> tf32x3 = {};
  /// exact f32 matmul on Hopper: 1 runs it as three TF32 products whose
  /// parts the kernel splits itself (MatmulWgmmaSchedule::splitInKernel), 0
  /// keeps the CUDA cores; unset: the rule (splitInKernelPays)
  std::optional<int64_t> split3 = {};
  /// attention on Hopper's wgmma: 1 issues each tile's S = Q K^T before the
  /// product with V of the tile before, and runs that product while the
  /// softmax of this tile's scores does (FlashAttention-3's overlap inside a
  /// warpgroup); 0 waits for each product before the work after it; unset: 1
  std::optional<int64_t> overlap = {};
  /// attention on the CUDA cores: query rows a thread (1, 2 or 4), each
  /// K and V element read from shared memory feeding that many rows
  std::optional<int64_t> rpt = {};
  /// matmul: products over k from 2 to N are sums of k columns times rows,
  /// a pointwise kernel (MatmulRewrites.h, FewTerms); 0 or 1 none; unset:
  /// kFewTermsUpTo
  std::optional<int64_t> terms = {};

  /// No field set.
  bool empty() const;
  /// "key=value,..." of the fields set, in one fixed order (tile, bm, bn,
  /// bk, tpr, block, transpose, vec, items, parts, splits, online, cached,
  /// ahead, tn, cpasync, krows, stages, staged, frag, wm, wn, wgmma,
  /// pingpong, cluster, rowcluster, pad, splitk, chain, promote, tf32x3,
  /// split3, overlap, rpt, terms); empty when none is.
  /// parseScheduleOverrides(o.str()) gives `o` back.
  std::string str() const;
  bool operator==(const ScheduleOverrides &other) const;
  bool operator!=(const ScheduleOverrides &other) const { return !(*this == other); }
};

/// Parses "key=value,..." (empty text: no overrides). Refuses with
/// "schedule override: ..." an unknown key or a value that is not a
/// non-negative integer. A key given twice keeps its last value.
Expected<ScheduleOverrides> parseScheduleOverrides(std::string_view text);

/// The text of $MINIJIT_SCHEDULE, empty when it is unset: the one place the
/// variable is read.
std::string scheduleEnvironmentText();

} // namespace minijit
