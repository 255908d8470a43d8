//===- compiler/templates/matmul/MatmulSchedule.cpp - matmul tiles --------===//
// The largest tile whose tile count fills the SMs (a grid smaller than the
// machine leaves SMs idle; smaller tiles cost reuse); f32 products of few
// tiles by waves and padding (SimtTiles.h). f32 runs on the CUDA
// cores (MatmulSimtSchedule), f16/bf16 on the tensor cores
// (MatmulMmaSchedule), or on Hopper through TMA and wgmma
// (MatmulWgmmaSchedule) where the target has them and TMA can describe both
// operands. Overrides (tile, bm, bn, bk, stages, frag, wm, wn, wgmma) set the
// parameters by hand for tuning.
//===----------------------------------------------------------------------===//
#include "compiler/templates/matmul/MatmulInternal.h"

#include "compiler/schedule/ScheduleInternal.h"
#include "compiler/schedule/SimtTiles.h"

#include "llvm/Support/FormatVariadic.h"

#include <utility>
#include <variant>
#include <vector>

namespace minijit::detail {

namespace {

struct Tile {
  unsigned bm, bn, bk, tm, tn, warpsM, warpsN, stages, frag = 1;
};

/// f32: the tiles `tile=` names (SimtTiles.h). f16/bf16: each warp a 64x64
/// (or 32x32) part of the tile, `stages` k-slices in flight.
std::vector<Tile> candidateTiles(bool tensorCores) {
  if (tensorCores)
    return {{128, 128, 32, 0, 0, 2, 2, 4}, {64, 64, 32, 0, 0, 2, 2, 3}};
  std::vector<Tile> tiles;
  for (const SimtTileShape &t : simtNamedTiles())
    tiles.push_back({t.bm, t.bn, t.bk, t.tm, t.tn, 0, 0, 2});
  return tiles;
}

/// The tile asked for (`tile`), else the rule's: f32 by pickSimtTile,
/// f16/bf16 the larger tile whose count fills the SMs.
Expected<Tile> pickTile(const KMatmul &mm, const DeviceProperties &dev, bool tensorCores,
                        const ScheduleOverrides &o) {
  std::vector<Tile> tiles = candidateTiles(tensorCores);
  if (o.tile) {
    auto it = llvm::find_if(tiles, [&](const Tile &t) { return t.bm == *o.tile; });
    if (it != tiles.end())
      return *it;
    std::string known;
    for (const Tile &t : tiles)
      known += (known.empty() ? "" : ", ") + std::to_string(t.bm);
    return refuse("tile must be one of " + known + " for this matmul");
  }
  if (!tensorCores) {
    SimtTileShape t = pickSimtTile(mm.M, mm.N, mm.batch, dev);
    return Tile{t.bm, t.bn, t.bk, t.tm, t.tn, 0, 0, 2};
  }
  for (const Tile &t : tiles) {
    int64_t count = ((mm.M + t.bm - 1) / t.bm) * ((mm.N + t.bn - 1) / t.bn) * mm.batch;
    if (count >= dev.smCount)
      return t;
  }
  return tiles.back();
}

/// Both templates' key frag: 1 or 2 sets of fragments (2 reads the next
/// step's during this one's multiplies).
MaybeRefusal applyFragOverride(Tile &pick, const ScheduleOverrides &o) {
  if (o.frag) {
    if (*o.frag != 1 && *o.frag != 2)
      return refuse("frag must be 1 or 2");
    pick.frag = static_cast<unsigned>(*o.frag);
  }
  return std::nullopt;
}

/// The tensor-core keys: tile sizes, pipeline depth, fragment buffers, warps.
MaybeRefusal applyMmaOverrides(Tile &pick, const ScheduleOverrides &o) {
  auto oneOf = [](int64_t v, std::initializer_list<int64_t> allowed) {
    return llvm::is_contained(allowed, v);
  };
  if (o.bm) {
    if (!oneOf(*o.bm, {64, 128, 256}))
      return refuse("bm must be 64, 128 or 256");
    pick.bm = static_cast<unsigned>(*o.bm);
  }
  if (o.bn) {
    if (!oneOf(*o.bn, {64, 128, 256}))
      return refuse("bn must be 64, 128 or 256");
    pick.bn = static_cast<unsigned>(*o.bn);
  }
  if (o.bk) {
    if (!oneOf(*o.bk, {16, 32, 64}))
      return refuse("bk must be 16, 32 or 64");
    pick.bk = static_cast<unsigned>(*o.bk);
  }
  if (o.stages) {
    if (*o.stages < 2 || *o.stages > 6)
      return refuse("stages must be 2..6");
    pick.stages = static_cast<unsigned>(*o.stages);
  }
  if (MaybeRefusal no = applyFragOverride(pick, o))
    return no;
  if (o.wm)
    pick.warpsM = static_cast<unsigned>(*o.wm);
  if (o.wn)
    pick.warpsN = static_cast<unsigned>(*o.wn);
  unsigned wtm = pick.warpsM ? pick.bm / pick.warpsM : 0;
  unsigned wtn = pick.warpsN ? pick.bn / pick.warpsN : 0;
  if (!pick.warpsM || !pick.warpsN || pick.bm % pick.warpsM || pick.bn % pick.warpsN ||
      wtm % 16 || wtn % 16 || pick.warpsM * pick.warpsN > 16)
    return refuse("wm and wn must split the tile into at most 16 warps of a multiple of 16x16");
  return std::nullopt;
}

/// The grid and the load widths of a tile: 16-byte copies need rows of whole
/// 16-byte chunks, aligned, and a whole number of them per thread.
void tileGeometry(const LoweredKernel &k, bool tensorCores, MatmulTile &s) {
  const KMatmul &mm = *k.matmul;
  s.tilesM = (mm.M + s.bm - 1) / s.bm;
  s.tilesN = (mm.N + s.bn - 1) / s.bn;
  s.grid = s.tilesM * s.tilesN * mm.batch;
  IndexContext ctx = k.ctx;
  int64_t da = ctx.divisibility(mm.aBase), db = ctx.divisibility(mm.bBase);
  int64_t per16 = tensorCores ? 8 : 4;
  auto divides = [&](int64_t d) { return d == 0 || d % per16 == 0; };
  // The tensor cores' templates copy a tile in whole rounds of the block;
  // the CUDA cores' leave threads idle past the last copy (a 256x32 tile's
  // B: 64 float4s on 128 threads).
  auto whole = [&](int64_t elements) { return !tensorCores || (elements / per16) % s.block == 0; };
  s.vecA = mm.aStrideK == 1 && mm.aStrideM % per16 == 0 && mm.K % per16 == 0 && divides(da) &&
           whole(s.bm * s.bk);
  // On the CUDA cores a row of B (along n) may end mid-vector where its
  // stride is whole vectors and the vector past the end stays inside the
  // buffer (a row padded to whole float4s, MatmulRewrites' float4Operands):
  // its lanes past n feed accumulators of columns no one stores.
  int64_t lastB = ctx.range(mm.bBase).second + (mm.K - 1) * mm.bStrideK +
                  (mm.N + per16 - 1) / per16 * per16;
  bool nEndsInside = mm.N % per16 == 0 || (!tensorCores && !k.symbolic && mm.bStrideK >= mm.N &&
                                           lastB <= k.params[mm.bParam].numel);
  s.vecB = mm.bStrideN == 1 && mm.bStrideK % per16 == 0 && nEndsInside && divides(db) &&
           whole(s.bk * s.bn);
  // A transposed operand: 16-byte loads along the other axis of the tile.
  // The same for A stored transposed (along m), where m is known.
  int64_t lastA = ctx.range(mm.aBase).second + (mm.K - 1) * mm.aStrideK +
                  (mm.M + per16 - 1) / per16 * per16;
  bool mEndsInside = mm.M % per16 == 0 || (!tensorCores && !k.symbolic && mm.aStrideK >= mm.M &&
                                           lastA <= k.params[mm.aParam].numel);
  s.vecAT = !s.vecA && mm.aStrideM == 1 && mm.aStrideK % per16 == 0 && mEndsInside && divides(da) &&
            whole(s.bm * s.bk);
  s.vecBT = !s.vecB && mm.bStrideK == 1 && mm.bStrideN % per16 == 0 && mm.K % per16 == 0 &&
            divides(db) && whole(s.bk * s.bn);
}

/// Key krows, after tileGeometry: 1 keeps the tiles of an operand read by
/// float4s along k k-contiguous in shared memory, read four k-steps at a
/// time: 4 (tm + tn) fragment registers, which threads of 8x16 outputs
/// have room for (tile=256, or tn=16 on the 128x128 tile) and threads of
/// 8x8 under two blocks an SM do not (they spill). Not a rule: it lost to
/// the 128x128 default where measured (docs/PERFORMANCE.md). The keys
/// apply to every kernel: one with no such operand, or whose tile the rule
/// picked without threads of 8x16 (a graph's other products), is left as
/// it is; a tile or frag=2 asked for by hand that cannot keep them is
/// refused.
MaybeRefusal applyKRows(MatmulSimtSchedule &s, const ScheduleOverrides &o) {
  if (!o.krows || *o.krows == 0)
    return std::nullopt;
  if (*o.krows != 1)
    return refuse("krows must be 0 or 1");
  if (s.tm != 8 || s.tn != 16 || s.fragBuffers != 1) {
    if (o.tile || o.frag.value_or(1) == 2)
      return refuse(llvm::formatv("krows=1 needs threads of 8x16 outputs (tile=256, or tn=16 on "
                                  "the 128x128 tile) and frag=1; this tile's threads have {0}x{1} "
                                  "and frag={2}",
                                  s.tm, s.tn, s.fragBuffers)
                        .str());
    return std::nullopt;
  }
  s.kRowsA = s.vecA;
  s.kRowsB = s.vecBT;
  return std::nullopt;
}

/// The rule's cp.async pipeline on the 128x128 tile (cpasync=4, frag=2:
/// three k-slices in flight, the next step's fragments read during this
/// one's multiply-adds) where one matrix's tiles fill a wave of two blocks
/// an SM and either an operand read by float4s has rows that are not whole
/// 128-byte lines, or both operands go into shared memory as they are
/// stored (A stored [k, m] and B [k, n], the weight gradient's X^T @ dY:
/// 16-byte copies, no transpose on the way). Why: the deeper pipeline hides
/// the longer latency of loads whose rows start mid-line, and pays on this
/// tile where both operands are copied by 16 bytes; whole lines read along
/// k and transposed into shared memory keep the loop through registers,
/// which was faster for them (docs/PERFORMANCE_LOG.md, "The 256x128 tile, tiles
/// kept along k, cp.async with pipelined fragments" and "The weight
/// gradient's layout by cp.async"). Not where `cpasync` or `frag` is set by
/// hand, nor tiles kept along k (krows), nor a kernel that serves every
/// size of a named dimension (its tile count is not known when it is
/// compiled).
bool deeperPipelinePays(const LoweredKernel &k, const DeviceProperties &dev,
                        const MatmulSimtSchedule &s, const ScheduleOverrides &o) {
  if (o.cpasync || o.frag || s.kRowsA || s.kRowsB || k.symbolic)
    return false;
  // (one matrix's tiles: a product split along k, MatmulRewrites' split-K,
  // runs as a batch of slices, and was slower so, docs/PERFORMANCE.md)
  if (s.bm != 128 || s.bn != 128 || s.tn != 8 || s.tilesM * s.tilesN < 2 * int64_t(dev.smCount))
    return false;
  const KMatmul &mm = *k.matmul;
  if (s.vecAT && s.vecB) // both copied as stored, 16 bytes a copy
    return true;
  auto offLines = [](int64_t rowStride) { return rowStride * 4 % 128 != 0; };
  return (s.vecA && offLines(mm.aStrideM)) || (s.vecAT && offLines(mm.aStrideK)) ||
         (s.vecB && offLines(mm.bStrideK)) || (s.vecBT && offLines(mm.bStrideN));
}

/// The registers a thread of the two-stage form holds the next k-slice of
/// both operands' tiles in.
unsigned nextSliceRegisters(const MatmulSimtSchedule &s) {
  auto perThread = [&](unsigned elements, bool vec) {
    unsigned loads = vec ? elements / 4 : elements;
    return (loads + s.block - 1) / s.block * (vec ? 4 : 1);
  };
  return perThread(s.bm * s.bk, s.vecA || s.vecAT) + perThread(s.bk * s.bn, s.vecB || s.vecBT);
}

/// How TMA reads one operand, or why it cannot: a unit stride along k or
/// along m (n), 16-byte aligned rows and batches, and batches at a fixed
/// stride (or one matrix for all).
std::variant<WgmmaOperand, std::string> wgmmaOperand(const LoweredKernel &k, bool isA) {
  const KMatmul &mm = *k.matmul;
  int64_t outer = isA ? mm.M : mm.N;
  int64_t strideK = isA ? mm.aStrideK : mm.bStrideK;
  int64_t strideOuter = isA ? mm.aStrideM : mm.bStrideN;
  const IndexExpr &base = isA ? mm.aBase : mm.bBase;
  const char *name = isA ? "A" : "B";
  // k-major where k has the unit stride, m/n-major where m (n) has it; a
  // size-1 axis has no stride to speak of (any 16-byte multiple describes
  // it), so with k = 1 or one row either may apply: the first with aligned
  // rows is taken.
  int64_t per16 = 16 / dtypeSize(mm.dtype);
  auto anyStride = [&](int64_t extent) { return (extent + per16 - 1) / per16 * per16; };
  std::vector<WgmmaOperand> layouts;
  if (strideK == 1 || mm.K == 1)
    layouts.push_back({true, outer == 1 ? anyStride(mm.K) : strideOuter});
  if (strideOuter == 1 || outer == 1)
    layouts.push_back({false, mm.K == 1 ? anyStride(outer) : strideK});
  if (layouts.empty())
    return llvm::formatv("{0} has no unit stride along k or {1}", name, isA ? "m" : "n").str();
  WgmmaOperand w = layouts.front();
  for (const WgmmaOperand &l : layouts)
    if (l.outerStride % per16 == 0) {
      w = l;
      break;
    }
  IndexContext ctx = k.ctx;
  if (!ctx.isAffine(base) || (!base.isConstant() && ctx.coefficient(base, k.b) == 0))
    return llvm::formatv("{0}'s batches are not at a fixed stride", name).str();
  w.batchStride = mm.batch == 1 ? 0 : ctx.coefficient(base, k.b);
  w.offset = base.constantTerm();
  if (w.outerStride % per16 || w.batchStride % per16 || w.offset % per16)
    return llvm::formatv("{0}'s rows or batches are not 16-byte aligned (TMA needs strides of a "
                         "multiple of {1} elements)",
                         name, per16)
        .str();
  // TF32's wgmma has no transposed form: both operands k-major.
  if (mm.dtype == DType::F32 && !w.kMajor)
    return llvm::formatv("{0} is {1}-major, and TF32's wgmma reads only k-major operands", name,
                         isA ? "m" : "n")
        .str();
  return w;
}

/// The time of a Hopper product in tiles `bn` wide, in units of a tile
/// column's: whole rounds of the persistent grid (one tile per SM each, the
/// last round as long as a full one) times a tile's time, its width plus an
/// allowance for what a tile costs whatever its width (the epilogue, the
/// pipeline's fill). A 2047 x 3071 product in 128 x 256 tiles is 192 tiles,
/// 1.45 rounds (2 x 288); in 128 x 128 tiles 384, 2.91 rounds (3 x 160).
int64_t wgmmaRoundsCost(int64_t tiles, unsigned bn, int smCount) {
  int64_t rounds = (tiles + smCount - 1) / smCount;
  return rounds * (bn + 32);
}

/// Whether the Hopper matmul's epilogue goes through shared memory
/// (MatmulWgmmaSchedule::stagedEpilogue): for every f16 and bf16 product,
/// and for TF32 ones of a k of at most 128 (512 bytes a row), whose stores
/// are most of their work; TF32's deeper products lose more to the stage
/// the buffers take than the stores gain (docs/PERFORMANCE_LOG.md, "The Hopper
/// epilogue through shared memory").
/// Only where every store runs along a row (matmulStoreRun): where n is not
/// a multiple of 4 the buffer is read back in pairs (n even) or single
/// columns (n odd), a warp's threads on consecutive ones of one row, in
/// place of 8 rows of scattered pairs from the accumulators. That readback
/// is two or four times the vector one's work, and the buffers take a
/// stage, so past a k of 2 KiB a row (where the stores are a small part of
/// the work) it is taken only where the buffers leave the pipeline four
/// stages or more (a tile 128 wide); docs/PERFORMANCE.md has the products
/// that drew the line.
bool stagesEpilogue(const LoweredKernel &k, const MatmulWgmmaSchedule &s, unsigned stagesLeft) {
  unsigned run = matmulStoreRun(k);
  int64_t rowBytes = k.matmul->K * s.elementBytes;
  if (run == 0 || (s.elementBytes == 4 && rowBytes > 512))
    return false;
  return run == 4 || rowBytes <= 2048 || stagesLeft >= 4;
}

/// The stages of `s`'s tile that fit the device's shared memory beside the
/// epilogue's buffers (with `staged`), at most 6; alignment and barriers
/// take 2 KiB.
unsigned stagesThatFit(MatmulWgmmaSchedule s, const DeviceProperties &dev, bool staged) {
  s.stagedEpilogue = staged;
  return std::min((static_cast<unsigned>(dev.sharedPerBlockOptin) - 2048 - s.epilogueBytes()) /
                      s.stageBytes(),
                  6u);
}

/// The Hopper template, or why it does not apply to the kernel.
using WgmmaFit = std::variant<MatmulWgmmaSchedule, std::string>;

/// A block of a producer and two consumer warpgroups an SM, and the tiles
/// of `s`'s bm x bn that cover the product.
void countTiles(MatmulWgmmaSchedule &s, const KMatmul &mm) {
  s.block = 384;
  s.minBlocksPerSM = 1;
  s.tilesM = (mm.M + s.bm - 1) / s.bm;
  s.tilesN = (mm.N + s.bn - 1) / s.bn;
  s.tiles = s.tilesM * s.tilesN * mm.batch;
}

/// Both operands' layouts as TMA reads them into `s`, or why one cannot be.
std::optional<std::string> readOperands(const LoweredKernel &k, MatmulWgmmaSchedule &s) {
  for (bool isA : {true, false}) {
    std::variant<WgmmaOperand, std::string> w = wgmmaOperand(k, isA);
    if (const std::string *why = std::get_if<std::string>(&w))
      return *why;
    (isA ? s.a : s.b) = std::get<WgmmaOperand>(w);
  }
  return std::nullopt;
}

/// The Hopper template where it applies, else why not; refused where an
/// override does not fit it.
Expected<WgmmaFit> wgmmaSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                 const ScheduleOverrides &o) {
  const KMatmul &mm = *k.matmul;
  MatmulWgmmaSchedule s;
  if (std::optional<std::string> why = readOperands(k, s))
    return *why;
  s.bm = 128;
  s.elementBytes = static_cast<unsigned>(dtypeSize(mm.dtype));
  s.bk = 128 / s.elementBytes; // rows of 128 bytes, the swizzle's width
  s.pingpong = o.pingpong.value_or(0) != 0;
  if (o.cluster) {
    if (*o.cluster != 1 && *o.cluster != 2)
      return refuse("cluster must be 1 or 2");
    if (*o.cluster == 2 && s.pingpong)
      return refuse("cluster=2 needs the cooperative form (pingpong=0)");
    s.cluster = static_cast<unsigned>(*o.cluster);
  }
  // The widest tile whose count still fills the SMs (ping-pong: whose
  // accumulators fit one warpgroup), unless a narrower one takes less time
  // in whole rounds of the persistent grid (wgmmaRoundsCost).
  // In a cluster each block loads half of B's tile: an n-major B in whole
  // 64 x 64 boxes, so at least two.
  bool halfBoxes = s.cluster == 2 && !s.b.kMajor;
  s.bn = halfBoxes ? 128 : 64;
  auto tilesOf = [&](unsigned bn) { return ((mm.M + 127) / 128) * ((mm.N + bn - 1) / bn) * mm.batch; };
  for (unsigned bn : {256u, 128u})
    if ((!s.pingpong || bn <= 128) && tilesOf(bn) >= dev.smCount) {
      s.bn = bn;
      break;
    }
  if (s.bn == 256 && wgmmaRoundsCost(tilesOf(128), 128, dev.smCount) <
                         wgmmaRoundsCost(tilesOf(256), 256, dev.smCount))
    s.bn = 128;
  if (o.bn) {
    if (*o.bn != 64 && *o.bn != 128 && (*o.bn != 256 || s.pingpong))
      return refuse(s.pingpong ? "bn must be 64 or 128 with pingpong=1"
                               : "bn must be 64, 128 or 256");
    s.bn = static_cast<unsigned>(*o.bn);
  }
  if (halfBoxes && s.bn < 128)
    return refuse("cluster=2 with an n-major B needs bn of 128 or 256");
  // Three TF32 products add each k-slice's sum on the CUDA cores unless told
  // otherwise: the tensor cores' own sums round more coarsely than an f32
  // add, and over all of k their error grows to 200 times cuBLAS's SGEMM's
  // (docs/PERFORMANCE_LOG.md, "The error of three TF32 products, and the
  // default"). Where the tile allows it: cooperative, at most 128 wide.
  s.promote = mm.threeParts && !s.pingpong && (!o.bn || *o.bn <= 128);
  if (o.promote) {
    if (*o.promote > 1)
      return refuse("promote must be 0 or 1");
    s.promote = *o.promote == 1;
  }
  if (s.promote) {
    if (s.elementBytes != 4)
      return refuse("promote=1 is for f32 products read as TF32 (--allow-tf32, --tf32x3)");
    if (s.pingpong)
      return refuse("promote=1 needs the cooperative form (pingpong=0)");
    if (o.bn && *o.bn > 128)
      return refuse("promote=1 needs bn of 64 or 128 (three sets of accumulators a thread)");
    s.bn = std::min(s.bn, 128u);
  }
  s.stagedEpilogue = stagesEpilogue(k, s, stagesThatFit(s, dev, true));
  if (o.staged) {
    if (*o.staged > 1)
      return refuse("staged must be 0 or 1");
    if (*o.staged == 1 && matmulStoreRun(k) == 0)
      return refuse("staged=1 needs stores that run along the output's rows (consecutive "
                    "columns at consecutive addresses)");
    s.stagedEpilogue = *o.staged == 1;
  }
  s.stages = stagesThatFit(s, dev, s.stagedEpilogue);
  if (s.stages < 2)
    return llvm::formatv("two stages of a 128x{0}x{2} tile need more shared memory than the "
                         "device's {1} bytes",
                         s.bn, dev.sharedPerBlockOptin, s.bk)
        .str();
  if (o.stages) {
    if (*o.stages < 2 || *o.stages > 8)
      return refuse("stages must be 2..8");
    s.stages = static_cast<unsigned>(*o.stages);
    // stages asked for that leave no room for the rule's staged epilogue:
    // the stores go from the accumulators
    if (!o.staged && s.stagedEpilogue &&
        s.stages * s.stageBytes() + s.epilogueBytes() + 2048 > dev.sharedPerBlockOptin)
      s.stagedEpilogue = false;
  }
  s.sharedBytes = s.stages * s.stageBytes() + s.epilogueBytes() + 1024;
  if (s.sharedBytes + 1024 > dev.sharedPerBlockOptin)
    return refuse(llvm::formatv("a 128x{0}x{4} wgmma tile in {1} stages needs {2} bytes of "
                                "shared memory; the device allows {3}",
                                s.bn, s.stages, s.sharedBytes, dev.sharedPerBlockOptin, s.bk)
                      .str());
  countTiles(s, mm);
  // Clusters of two where the product is large (two waves of tiles or more)
  // and its tile rows pair up: the shared B tile halves the bytes of B each
  // block reads from the L2 (docs/PERFORMANCE_LOG.md, "Hopper matmul: the
  // epilogue in pairs, clusters of two", measured with f16 and bf16). TF32
  // was not measured so, and keeps single blocks unless asked.
  if (!o.cluster && !s.pingpong && s.elementBytes == 2 && s.tilesM % 2 == 0 &&
      s.tiles >= 2 * int64_t(dev.smCount) && (s.b.kMajor || s.bn >= 128))
    s.cluster = 2;
  s.grid = s.launchGrid(dev.smCount);
  return s;
}

/// The Hopper template for an exact f32 product as three TF32 products
/// whose parts the kernel splits (MatmulWgmmaSchedule::splitInKernel), or
/// why it does not apply: both operands k-major (x and nn.Linear's W), a
/// tile of 128 rows of B by A's rows rounded up to 8 (at most 128), the
/// TMA ring as deep as fits beside the parts' two stages, at most 4.
/// Keys: split3, stages.
Expected<WgmmaFit> splitSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                 const ScheduleOverrides &o, bool symbolicM) {
  const KMatmul &mm = *k.matmul;
  MatmulWgmmaSchedule s;
  if (std::optional<std::string> why = readOperands(k, s))
    return *why;
  // (set for the graph's other products, they leave this one to the CUDA
  // cores unless split3=1 asks for it)
  if (o.pingpong || o.cluster.value_or(1) != 1 || o.staged.value_or(0) != 0 || o.promote)
    return std::string("its tile takes no pingpong, cluster, staged or promote (cooperative, "
                       "single blocks, each k-slice promoted)");
  s.splitInKernel = true;
  s.elementBytes = 4;
  s.bk = 32;
  // wgmma's n is A's rows: 8 to 128 in steps of 8, so that a product of few
  // rows does not multiply rows of zeros (a launch's own m: 128)
  s.bm = symbolicM ? 128 : static_cast<unsigned>(std::min<int64_t>(128, (mm.M + 7) / 8 * 8));
  s.bn = o.bn.value_or(128);
  if (s.bn != 128)
    return refuse("split3=1 takes bn=128 only (64 rows of B a consumer)");
  s.promote = true;
  unsigned fit = (static_cast<unsigned>(dev.sharedPerBlockOptin) - 2048 -
                  MatmulWgmmaSchedule::kSplitPartStages * s.splitPartBytes()) /
                 s.stageBytes();
  s.stages = std::min(fit, 4u);
  if (o.stages) {
    if (*o.stages < 2 || *o.stages > 8)
      return refuse("stages must be 2..8");
    s.stages = static_cast<unsigned>(*o.stages);
  }
  if (s.stages < 2)
    return std::string("the split's two rings need more shared memory than the device has");
  s.sharedBytes = s.ringBytes() + 1024;
  if (s.sharedBytes + 1024 > dev.sharedPerBlockOptin)
    return refuse(llvm::formatv("split3=1 in {0} stages needs {1} bytes of shared memory; the "
                                "device allows {2}",
                                s.stages, s.sharedBytes, dev.sharedPerBlockOptin)
                      .str());
  countTiles(s, mm);
  s.grid = s.launchGrid(dev.smCount); // a block a tile (MatmulWgmmaSchedule::launchGrid)
  return s;
}

/// Whether an exact f32 product runs as three TF32 products split in the
/// kernel by the rule: where the copies of tf32x3 do not pay (below
/// tf32x3Pays's line, so its operands were left alone), the CUDA cores
/// would run it and splitInKernelFills says so (a last round of the grid
/// mostly empty is no reason to stay on the CUDA cores: 97 x 17001 x 1004,
/// 133 tiles, ran 1.6 times as fast split, docs/PERFORMANCE.md, "Matmul in
/// f32"). A product of tiles too few, which the CUDA cores' rule splits
/// along k as cuBLAS's SGEMM splits it, was split in the graph before: its
/// slices are the batch here, and its sums are as accurate.
bool splitInKernelPays(const KMatmul &mm, const DeviceProperties &dev, bool symbolicM) {
  return !symbolicM && splitInKernelFills(mm.M, mm.N, mm.K, mm.batch, dev);
}

/// f32 on the CUDA cores: the tile `pick`, and the keys frag, tn,
/// cpasync and krows.
Expected<Schedule> simtSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                const ScheduleOverrides &o, Tile pick) {
  if (MaybeRefusal no = applyFragOverride(pick, o))
    return *no;
  // tn is the 128x128 tile's: a tile asked for by hand must be that one;
  // a narrower tile the rule picks (a graph's small product) keeps its own
  if (o.tn) {
    if (*o.tn != 8 && *o.tn != 16)
      return refuse("tn must be 8 or 16");
    if (o.tile && *o.tile != 128)
      return refuse("tn applies to the 128x128 tile only (tile=128)");
    if (pick.bm == 128 && pick.bn == 128)
      pick.tn = static_cast<unsigned>(*o.tn);
  }
  MatmulSimtSchedule s;
  s.bm = pick.bm;
  s.bn = pick.bn;
  s.bk = pick.bk;
  s.tm = pick.tm;
  s.tn = pick.tn;
  s.fragBuffers = pick.frag;
  if (o.cpasync && *o.cpasync != 0) {
    if (*o.cpasync != 3 && *o.cpasync != 4)
      return refuse("cpasync must be 0, 3 or 4");
    s.stages = static_cast<unsigned>(*o.cpasync);
  }
  s.block = (s.bm / s.tm) * (s.bn / s.tn);
  // Two blocks an SM where a block holds at most 16384 accumulators: 256
  // threads of up to 8x8 outputs get 128 registers a thread (the
  // fragments and the vector epilogue fit), 128 threads of 8x16 get 255;
  // the 256x128 tile's 256 threads of 8x16, one block (255 registers).
  // The wave tiles' smaller blocks of 8x8 outputs, as many more as keep
  // their threads at 128 registers (SimtTileShape::minBlocksPerSM).
  s.minBlocksPerSM = SimtTileShape{s.bm, s.bn, s.bk, s.tm, s.tn}.minBlocksPerSM();
  tileGeometry(k, false, s);
  if (MaybeRefusal no = applyKRows(s, o))
    return *no;
  if (deeperPipelinePays(k, dev, s, o)) {
    s.stages = 4;
    s.fragBuffers = 2;
  } else if (!o.cpasync && !o.frag && !s.kRowsA && !s.kRowsB && nextSliceRegisters(s) > 16) {
    // The narrow tiles' threads copy more of each slice (256x32: four
    // float4s of A a thread, against one of the 128x128 tile): held in
    // registers for the next step, they spill; cp.async holds none.
    s.stages = 3;
  }
  if (s.staticSharedBytes() > 48 * 1024)
    return refuse(llvm::formatv("cpasync={0}: {0} stages of a {1}x{2}x{3} tile need {4} bytes "
                                "of static shared memory, more than 48 KiB",
                                s.stages, s.bm, s.bn, s.bk, s.staticSharedBytes())
                      .str());
  return Schedule{s};
}

/// f16/bf16 on the tensor cores by mma.sync: the tile `pick`, and the keys
/// bm, bn, bk, stages, frag, wm and wn.
Expected<Schedule> mmaSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                               const ScheduleOverrides &o, Tile pick) {
  if (MaybeRefusal no = applyMmaOverrides(pick, o))
    return *no;
  MatmulMmaSchedule s;
  s.bm = pick.bm;
  s.bn = pick.bn;
  s.bk = pick.bk;
  s.warpsM = pick.warpsM;
  s.warpsN = pick.warpsN;
  s.stages = pick.stages;
  s.fragBuffers = pick.frag;
  s.block = 32 * s.warpsM * s.warpsN;
  tileGeometry(k, true, s);
  s.sharedBytes = s.stages * (mmaTileHalves(s, true) + mmaTileHalves(s, false)) * 2;
  if (s.sharedBytes > dev.sharedPerBlockOptin)
    return refuse(llvm::formatv("a {0}x{1}x{2} tile in {3} stages needs {4} bytes of shared "
                                "memory; the device allows {5}",
                                s.bm, s.bn, s.bk, s.stages, s.sharedBytes,
                                dev.sharedPerBlockOptin)
                      .str());
  return Schedule{s};
}

} // namespace

Expected<Schedule> matmulSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                  const ScheduleOverrides &o, bool wgmma) {
  const KMatmul &mm = *k.matmul;
  bool tensorCores = mm.dtype != DType::F32;
  // f32 on tensor cores as TF32 where allowed: the Hopper template only
  // (both operands k-major), else the CUDA cores.
  bool tf32 = mm.dtype == DType::F32 && mm.tf32;
  // exact f32 as three TF32 products split in the kernel, by the rule or
  // asked for (split3=1); split3=0 keeps the CUDA cores
  bool symbolicM = k.symbolic.has_value();
  bool exactF32 = mm.dtype == DType::F32 && !tf32;
  bool askedSplit = o.split3.value_or(0) != 0;
  bool ruleSplit = !o.split3 && mm.splitAllowed && wgmma && splitInKernelPays(mm, dev, symbolicM);
  if (exactF32 && (askedSplit || ruleSplit)) {
    if (!wgmma)
      return refuse("split3=1 needs a Hopper target (sm_90 or sm_90a)");
    if (o.split3.value_or(0) > 1)
      return refuse("split3 must be 0 or 1");
    Expected<WgmmaFit> w = splitSchedule(k, dev, o, symbolicM);
    if (!w)
      return w.refusal();
    if (MatmulWgmmaSchedule *s = std::get_if<MatmulWgmmaSchedule>(&*w))
      return Schedule{*s};
    if (o.split3)
      return refuse("split3=1: " + std::get<std::string>(*w));
  }
  if ((tensorCores || tf32) && wgmma && o.wgmma.value_or(1) != 0) {
    Expected<WgmmaFit> w = wgmmaSchedule(k, dev, o);
    if (!w)
      return w.refusal();
    // (mma.sync's keys, tile, bm, bk, frag, wm and wn, are ignored here, as
    // every template ignores the keys of others; wgmma=0 makes them apply)
    if (MatmulWgmmaSchedule *s = std::get_if<MatmulWgmmaSchedule>(&*w))
      return Schedule{*s};
    if (o.wgmma)
      return refuse("wgmma=1: " + std::get<std::string>(*w));
  } else if (tensorCores && o.wgmma.value_or(0) != 0) {
    return refuse("wgmma=1 needs a Hopper target (sm_90 or sm_90a)");
  }
  Expected<Tile> pick = pickTile(mm, dev, tensorCores, o);
  if (!pick)
    return pick.refusal();
  return tensorCores ? mmaSchedule(k, dev, o, *pick) : simtSchedule(k, dev, o, *pick);
}
} // namespace minijit::detail

namespace minijit {

bool matmulStoresVectorize(const LoweredKernel &k, unsigned vec) {
  if (k.matmul->N % vec != 0)
    return false;
  IndexContext ctx = k.ctx;
  for (const KStore &st : k.stores)
    if (analyzeLanes(ctx, st.offset, k.n, k.matmul->N, vec, "nv").kind !=
        LaneAccess::Kind::Contiguous)
      return false;
  return true;
}

unsigned matmulStoreRun(const LoweredKernel &k) {
  for (unsigned vec : {4u, 2u})
    if (matmulStoresVectorize(k, vec))
      return vec;
  IndexContext ctx = k.ctx;
  std::string n = ctx.str(k.n);
  for (const KStore &st : k.stores) {
    IndexExpr next = ctx.substitute(st.offset, [&](const std::string &v) -> std::optional<IndexExpr> {
      if (v == n)
        return ctx.add(k.n, IndexExpr::constant(1));
      return std::nullopt;
    });
    if (next.key() != ctx.add(st.offset, IndexExpr::constant(1)).key())
      return 0;
  }
  return 1;
}

std::vector<TensorMapSpec> wgmmaTensorMaps(const LoweredKernel &k, const MatmulWgmmaSchedule &s) {
  const KMatmul &mm = *k.matmul;
  std::vector<TensorMapSpec> maps;
  for (bool isA : {true, false}) {
    const WgmmaOperand &w = isA ? s.a : s.b;
    int64_t outer = isA ? mm.M : mm.N;
    unsigned rows = isA ? s.bm : s.bn;
    TensorMapSpec t;
    t.buffer = isA ? mm.aParam : mm.bParam;
    t.dtype = mm.dtype;
    t.offset = w.offset;
    if (w.kMajor) {
      t.dims = {mm.K, outer};
      // in clusters of two each block loads half of B's rows for both
      t.box = {s.bk, isA ? rows : rows / s.cluster};
    } else {
      t.dims = {outer, mm.K};
      t.box = {64, s.bk};
    }
    t.strides = {w.outerStride};
    if (w.batchStride) {
      t.dims.push_back(mm.batch);
      t.strides.push_back(w.batchStride);
      t.box.push_back(1);
    }
    maps.push_back(std::move(t));
  }
  return maps;
}

} // namespace minijit
