//===- compiler/schedule/Schedule.h - kernel templates and their parameters -*- C++ -*-===//
// A schedule picks a template for a lowered kernel (pointwise, inner or outer
// reduction, matmul on CUDA cores or tensor cores) and that template's
// parameters, from the kernel's sizes and the device. Each template has its
// own parameter struct; a Schedule is one of them. Printable and
// deterministic: the same kernel and device give the same schedule.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/Lowering.h"
#include "compiler/schedule/ScheduleOverrides.h"
#include "runtime/DeviceProperties.h"
#include "runtime/Program.h"
#include "runtime/Target.h"

#include <optional>
#include <string>
#include <variant>

namespace minijit {

enum class ScheduleKind {
  Pointwise, ///< vectors of elements, several per thread, scalar tail
  InnerRow,  ///< reduce contiguous rows: T threads per row (sub-warp, warp or block)
  OuterCol,  ///< reduce strided columns: 32 columns per block, the rows split over parts
  MatmulSimt, ///< f32 matmul on the CUDA cores: shared-memory tiles, a TM x TN block per thread
  MatmulMma,  ///< f16/bf16 matmul on the tensor cores: mma.sync m16n8k16, ldmatrix, cp.async
  Transpose,  ///< pointwise with operands read across the innermost axis: tiles through shared memory
  Scan,       ///< cumsum/cumprod along rows: a block per row, tiles scanned by warps then the block
  /// f16/bf16 matmul on Hopper (sm_90a): TMA tiles into a ring of shared
  /// memory driven by mbarriers, wgmma from shared-memory descriptors, a
  /// producer warpgroup and two consumer warpgroups, a persistent grid
  MatmulWgmma,
  /// softmax(g(A @ B)) @ V on the CUDA cores: a block per (batch, tile of
  /// query rows), K and V tiles through shared memory, an online softmax
  Attention,
  /// the same for f16/bf16 on the tensor cores: mma.sync m16n8k16, a warp
  /// per 16 query rows, the probabilities kept in registers as A fragments
  AttentionMma,
  /// an attention's backward on the CUDA cores (FlashAttention-2's): dK
  /// and dV a block per tile of keys, dQ a block per tile of queries
  AttentionBackward,
};

/// How a schedule's description (describeSchedule, in compiler/templates/)
/// prints the grid: its size, or "sized at launch".
enum class GridText { Number, AtLaunch };

/// Every template launches `grid` blocks of `block` threads.
struct LaunchGeometry {
  unsigned block = 256; ///< threads per block
  int64_t grid = 1;     ///< blocks
  unsigned minBlocksPerSM = 0; ///< __launch_bounds__'s second argument; 0: none
  /// Blocks per cluster (sm_90: __cluster_dims__(cluster, 1, 1), the grid a
  /// multiple of it): blocks the hardware runs at once, on the SMs of one
  /// GPC, which may wait for each other at a barrier; 1: no clusters.
  unsigned cluster = 1;
};

struct PointwiseSchedule : LaunchGeometry {
  unsigned vec = 1;   ///< elements per vector access (16 bytes of the widest type)
  unsigned items = 1; ///< vectors per thread
  int64_t numVec = 0; ///< vectors covered by the vector loop
  bool tail = false;  ///< numel % vec elements left for a scalar loop
};

/// A pointwise kernel some of whose loads are contiguous along another axis
/// of the domain than its innermost one (a permute that moves the innermost
/// axis): the domain is cut into 32 x 32 tiles over that axis (`axis`, a
/// positions) and the innermost one (c positions). The block first reads
/// the transposed operands' tiles along `axis` (coalesced) into shared memory,
/// then does the element work along the innermost axis (coalesced stores),
/// reading those operands from the tiles. `outer` counts the tiles' other
/// coordinates (the domain's other axes, flattened).
struct TransposeSchedule : LaunchGeometry {
  int axis = 0;                  ///< the domain axis the transposed loads are contiguous along
  int64_t a = 1, c = 1, outer = 1; ///< extents: that axis, the innermost axis, the others
  unsigned tile = 32;            ///< tile edge
  unsigned rowsPerPass = 8;      ///< elements: block = tile x rowsPerPass threads
  /// 16-byte vectors: the tiled operands read `vec` positions along `axis`
  /// at a time, the element work `vec` along the innermost axis (1: elements)
  unsigned vec = 1;
  std::vector<int> tiled;        ///< the loads (LoweredKernel::values) staged in shared memory
  int64_t tilesA = 1, tilesC = 1;
};

struct RowSchedule : LaunchGeometry {
  unsigned vec = 1;
  unsigned threadsPerRow = 32;
  unsigned rowsPerBlock = 1;
  unsigned itemsPerThread = 1; ///< vectors per thread per row, when cached
  bool cached = true;          ///< the row's loads are kept in registers across passes
  /// A row read in a loop (not cached): each thread loads this many of its
  /// vectors (t apart) before it works on them, so their loads are in
  /// flight together and an online sum rescales once for all of them; 1:
  /// one vector at a time.
  unsigned ahead = 1;
  /// Blocks sharing one row (few, long rows): each reduces a chunk of
  /// `chunk` vectors. With one pass the last block of the row to finish
  /// combines the partial results (in a fixed order) and runs what follows
  /// the reduction. With several (`waits`), the row's blocks meet at a
  /// barrier after each pass, every one combines the partials in the same
  /// order and goes on with its chunk: all of the grid must be resident at
  /// once, so the kernel asks for `minBlocksPerSM` in its launch bounds and
  /// the grid is at most that many blocks per SM.
  /// With `cluster` (of LaunchGeometry) = splits, the row's blocks are a
  /// cluster (sm_90) and meet at the cluster's barrier: no more of the grid
  /// need be resident, so rows too long for one block's registers are split
  /// over the SMs of a cluster and kept in registers there (`waits` too).
  unsigned splits = 1;
  int64_t chunk = 0;
  bool waits = false;
  /// Rows whose length no vector width divides (50257, 3001) start anywhere
  /// in a vector. Set, the vectors are aligned to memory as the rows of this
  /// load (a value of the kernel) fall: a row's first and last vectors hold
  /// lanes of its neighbours, which are masked. Unset, every row starts at a
  /// vector.
  std::optional<int> alignedTo;

  /// Vectors one row covers: K / vec; when rows start mid-vector, at most
  /// ceil((K + vec - 1) / vec), for a row that starts up to vec - 1 elements
  /// into its first vector.
  int64_t vectorsPerRow(int64_t rowLength) const {
    return alignedTo ? (rowLength + 2 * int64_t(vec) - 2) / vec : rowLength / vec;
  }
};

/// The scratch memory a reduction split over blocks needs (RowSchedule or
/// ColumnSchedule splits > 1): counters (a row's blocks done, or at a
/// barrier; with barriers a second one per row, blocks past the last; for
/// columns one per block of 32 columns), then the partial results, `words`
/// per block: the one of reduction r from block `part` of row (or column)
/// `row` at (row * splits + part) * words + r, and after one word per
/// reduction the second words of the partials that are pairs (an online
/// sum's max, an argmax's or argmin's position), in reduction order
/// (secondWordSlot). The emitter addresses it; the compiler allocates
/// bytes() for the launch, zeroed, and the kernel leaves it zeroed.
struct SplitWorkspace {
  int64_t rows;
  unsigned splits;
  int words;
  int64_t counterWords;
  int64_t counters() const { return counterWords; } ///< words before the partials
  int64_t partials() const { return rows * splits * words; }
  int64_t bytes() const { return (counters() + partials()) * 4; }
};

/// Whether reduction `r`'s partial result is a pair, two words in the
/// split workspace: an online sum's (sum, max), an argmax's or argmin's
/// (value, position).
bool hasSecondWord(const KReduction &r);
/// Where a block's partials hold the second word of reduction `r` (one
/// with hasSecondWord): after one word per reduction, in reduction order.
int secondWordSlot(const LoweredKernel &k, int r);

struct ColumnSchedule : LaunchGeometry {
  unsigned parts = 8; ///< threads sharing one column
  /// Blocks sharing one group of 32 columns (few, long columns, one pass):
  /// each reduces `chunk` positions of the columns, and the last block of
  /// the group to finish combines the partial results in a fixed order.
  unsigned splits = 1;
  int64_t chunk = 0;
};

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
};

struct MatmulMmaSchedule : MatmulTile {
  unsigned warpsM = 2, warpsN = 4; ///< warps per block
  unsigned stages = 2;             ///< k-slices of the tiles in flight
  unsigned fragBuffers = 1;        ///< 2 loads the next fragments during the mma
  unsigned sharedBytes = 0;        ///< dynamic shared memory per block
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
  /// The epilogue through shared memory: each consumer leaves its
  /// accumulators of 64 columns in a buffer of its own, then reads four
  /// consecutive columns of a row a thread, so that a warp's stores are
  /// whole lines of a row (16 bytes a thread) instead of 8 rows of 32 bytes
  /// (pairs from the accumulators' layout); two or one where n is not a
  /// multiple of 4 (matmulStoreRun), still one row's consecutive columns a
  /// warp. It pays most where the stores are most of the work (a short k:
  /// attention scores, outer products).
  bool stagedEpilogue = false;
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
  /// k of one wgmma: 16 (f16, bf16) or 8 (TF32), 32 bytes either way.
  unsigned kStep() const { return 32 / elementBytes; }
};

/// One template's parameters. The alternatives are in ScheduleKind's order.
/// A block per row; each tile of block * items elements: every thread scans
/// its `items` consecutive elements, a warp scan (shuffles) and a block scan
/// (shared memory, one value per warp) combine them, a carry joins the tiles.
struct ScanSchedule : LaunchGeometry {
  unsigned items = 1; ///< consecutive elements per thread per tile
};

/// A block per (batch, tile of `br` query rows), `threadsPerRow` threads
/// per row: Q's tile stays in shared memory, K's and V's tiles of `bc` keys
/// pass through one buffer in turn, each row keeps its running max and sum
/// (online softmax) and its share of O (dv / threadsPerRow columns) in
/// registers. f32 arithmetic throughout (f16/bf16 converted on loading).
struct AttentionSchedule : LaunchGeometry {
  unsigned br = 32, bc = 32, threadsPerRow = 4;
  int64_t tilesM = 1;       ///< query tiles per batch
  unsigned sharedBytes = 0; ///< Q's tile, the K/V tile, the probabilities' tile
};

/// The attention template on the tensor cores (f16/bf16, head dims that are
/// whole 16s up to 128): a warp per 16 of the block's `br` query rows (64,
/// or 32 or 16 for few blocks), `bc` = 64 keys a tile; threadsPerRow
/// unused (a row's four threads are mma.sync's layout).
struct AttentionMmaSchedule : AttentionSchedule {};

/// An attention's backward (KernelKind::AttentionBackwardKV or Q): a block
/// per (batch, tile of `bc` keys) for dK and dV, walking the query tiles of
/// `br` rows, or per (batch, tile of `br` queries) for dQ, walking the key
/// tiles of `bc`; `threadsPerRow` threads per row of the block's tile, its
/// share of the accumulated rows in registers; `tilesM` the block's tiles a
/// batch. f32 (templates/attention/AttentionSchedule.cpp).
struct AttentionBackwardSchedule : AttentionSchedule {};

struct Schedule {
  std::variant<PointwiseSchedule, RowSchedule, ColumnSchedule, MatmulSimtSchedule,
               MatmulMmaSchedule, TransposeSchedule, ScanSchedule, MatmulWgmmaSchedule,
               AttentionSchedule, AttentionMmaSchedule, AttentionBackwardSchedule>
      params;

  ScheduleKind kind() const { return static_cast<ScheduleKind>(params.index()); }
  template <typename T> const T &as() const { return std::get<T>(params); }
  template <typename T> const T *getIf() const { return std::get_if<T>(&params); }
  const LaunchGeometry &geometry() const;
  /// Dynamic shared memory the launch asks for (the multi-stage matmul tiles).
  unsigned dynamicSharedBytes() const;
};

/// A lowered kernel as the scheduling stage leaves it: its body (rewritten
/// or not) and its schedule. The stage (scheduleKernel, chooseSchedule) is
/// in compiler/templates/KernelTemplate.h, above the templates' rules.
struct ScheduledKernel {
  LoweredKernel lowered;
  Schedule schedule;
};

/// `k` as the rules see it when it may serve many sizes
/// (LoweredKernel::symbolic): its outer extent rounded up to its bucket's
/// (a power of two), so that every size of the bucket gives the same text.
LoweredKernel atBucketExtent(const LoweredKernel &k);
/// `s`, chosen for `k`'s bucket (atBucketExtent), with the grid (and tile
/// counts) of `k`'s own extent; false for a template whose kernel text
/// holds its extent (a transpose, a column reduction, a scan, attention),
/// which is chosen per size instead.
bool sizeGridForExtent(Schedule &s, const LoweredKernel &k, const DeviceProperties &dev);

/// Resident blocks per SM of a launch of `s` whose threads use `registers`
/// each (0: unknown, estimated from the template: a matmul's accumulators
/// and fragments; others assume 32), bounded by threads, registers, shared
/// memory and blocks per SM.
int blocksPerSM(const Schedule &s, const DeviceProperties &dev, unsigned registers);
/// "2.08 waves of 264 blocks (2 per SM), the last 8 % full": the wave
/// quantization of the grid, as the profiler reports it.
std::string wavesText(const Schedule &s, const DeviceProperties &dev, unsigned registers);

/// The workspace of `k` scheduled as `s`, whether split or not.
SplitWorkspace splitWorkspace(const LoweredKernel &k, const RowSchedule &s);
SplitWorkspace splitWorkspace(const LoweredKernel &k, const ColumnSchedule &s);
/// Bytes of workspace the schedule's launch needs; 0 when it is not split.
int64_t workspaceBytes(const LoweredKernel &k, const Schedule &s);

/// How an access behaves across the `vec` lanes of a vector, when the
/// element index `x` (LoweredKernel::elem or LoweredKernel::k) is split as
/// x = vec*xv + j.
struct LaneAccess {
  enum class Kind { Same, Contiguous, Gather } kind = Kind::Same;
  IndexExpr base;                   ///< offset at lane 0, over xv
  std::vector<IndexExpr> perLane;   ///< Gather: the offset of each lane
};

/// Splits `x` (extent `extent`, a multiple of `vec`) as vec*xv + j in `ctx`,
/// with `xv` named `vecName`, and classifies `offset`: the same element for
/// every lane, contiguous and aligned to `vec`, or a gather. An operand of a
/// concat or pad read through a clamp whose range starts and ends at whole
/// vectors (the halves of a rotary embedding) is contiguous too: its lanes
/// are inside the operand all together or none, and where none the values
/// are not used, so `base` then reads any whole vector in bounds.
LaneAccess analyzeLanes(IndexContext &ctx, const IndexExpr &offset, const IndexExpr &x,
                        int64_t extent, unsigned vec, const std::string &vecName);

} // namespace minijit
