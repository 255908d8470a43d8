//===- compiler/schedule/MatmulSchedule.cpp - matmul tiles ----------------===//
// The largest tile whose tile count fills the SMs (a grid smaller than the
// machine leaves SMs idle; smaller tiles cost reuse). f32 runs on the CUDA
// cores (MatmulSimtSchedule), f16/bf16 on the tensor cores
// (MatmulMmaSchedule). Overrides (tile, bm, bn, bk, stages, frag, wm, wn) set
// the parameters by hand for tuning.
//===----------------------------------------------------------------------===//
#include "compiler/schedule/ScheduleInternal.h"

#include "llvm/Support/FormatVariadic.h"

#include <vector>

namespace minijit::detail {

namespace {

struct Tile {
  unsigned bm, bn, bk, tm, tn, warpsM, warpsN, stages, frag = 1;
};

/// f32: a thread computes tm x tn outputs from registers; the last tile,
/// for small products (the lecture's 128-wide MLP), takes a 64-deep slice of
/// k per step so few steps remain. f16/bf16: each warp a 64x64 (or 32x32)
/// part of the tile, `stages` k-slices in flight.
std::vector<Tile> candidateTiles(bool tensorCores) {
  if (tensorCores)
    return {{128, 128, 32, 0, 0, 2, 2, 4}, {64, 64, 32, 0, 0, 2, 2, 3}};
  return {{128, 128, 8, 8, 8, 0, 0, 2},
          {64, 64, 16, 4, 4, 0, 0, 2},
          {32, 32, 32, 2, 2, 0, 0, 2},
          {16, 16, 64, 1, 1, 0, 0, 2}};
}

Tile pickTile(const KMatmul &mm, const DeviceProperties &dev, const std::vector<Tile> &tiles,
              const ScheduleOverrides &o) {
  if (o.tile) {
    auto it = llvm::find_if(tiles, [&](const Tile &t) { return t.bm == *o.tile; });
    if (it != tiles.end())
      return *it;
    std::string known;
    for (const Tile &t : tiles)
      known += (known.empty() ? "" : ", ") + std::to_string(t.bm);
    badOverride("tile must be one of " + known + " for this matmul");
  }
  for (const Tile &t : tiles) {
    int64_t count = ((mm.M + t.bm - 1) / t.bm) * ((mm.N + t.bn - 1) / t.bn) * mm.batch;
    if (count >= dev.smCount)
      return t;
  }
  return tiles.back();
}

/// The tensor-core keys: tile sizes, pipeline depth, fragment buffers, warps.
void applyMmaOverrides(Tile &pick, const ScheduleOverrides &o) {
  auto oneOf = [](int64_t v, std::initializer_list<int64_t> allowed) {
    return llvm::is_contained(allowed, v);
  };
  if (o.bm) {
    if (!oneOf(*o.bm, {64, 128, 256}))
      badOverride("bm must be 64, 128 or 256");
    pick.bm = static_cast<unsigned>(*o.bm);
  }
  if (o.bn) {
    if (!oneOf(*o.bn, {64, 128, 256}))
      badOverride("bn must be 64, 128 or 256");
    pick.bn = static_cast<unsigned>(*o.bn);
  }
  if (o.bk) {
    if (!oneOf(*o.bk, {16, 32, 64}))
      badOverride("bk must be 16, 32 or 64");
    pick.bk = static_cast<unsigned>(*o.bk);
  }
  if (o.stages) {
    if (*o.stages < 2 || *o.stages > 6)
      badOverride("stages must be 2..6");
    pick.stages = static_cast<unsigned>(*o.stages);
  }
  if (o.frag) {
    if (*o.frag != 1 && *o.frag != 2)
      badOverride("frag must be 1 or 2");
    pick.frag = static_cast<unsigned>(*o.frag);
  }
  if (o.wm)
    pick.warpsM = static_cast<unsigned>(*o.wm);
  if (o.wn)
    pick.warpsN = static_cast<unsigned>(*o.wn);
  unsigned wtm = pick.warpsM ? pick.bm / pick.warpsM : 0;
  unsigned wtn = pick.warpsN ? pick.bn / pick.warpsN : 0;
  if (!pick.warpsM || !pick.warpsN || pick.bm % pick.warpsM || pick.bn % pick.warpsN ||
      wtm % 16 || wtn % 16 || pick.warpsM * pick.warpsN > 16)
    badOverride("wm and wn must split the tile into at most 16 warps of a multiple of 16x16");
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
  s.vecA = mm.aStrideK == 1 && mm.aStrideM % per16 == 0 && mm.K % per16 == 0 && divides(da) &&
           (s.bm * s.bk / per16) % s.block == 0;
  s.vecB = mm.bStrideN == 1 && mm.bStrideK % per16 == 0 && mm.N % per16 == 0 && divides(db) &&
           (s.bk * s.bn / per16) % s.block == 0;
  // A transposed operand: 16-byte loads along the other axis of the tile.
  s.vecAT = !s.vecA && mm.aStrideM == 1 && mm.aStrideK % per16 == 0 && mm.M % per16 == 0 &&
            divides(da) && (s.bm * s.bk / per16) % s.block == 0;
  s.vecBT = !s.vecB && mm.bStrideK == 1 && mm.bStrideN % per16 == 0 && mm.K % per16 == 0 &&
            divides(db) && (s.bk * s.bn / per16) % s.block == 0;
}

} // namespace

Schedule matmulSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                        const ScheduleOverrides &o) {
  const KMatmul &mm = *k.matmul;
  bool tensorCores = mm.dtype != DType::F32;
  Tile pick = pickTile(mm, dev, candidateTiles(tensorCores), o);
  if (!tensorCores) {
    MatmulSimtSchedule s;
    s.bm = pick.bm;
    s.bn = pick.bn;
    s.bk = pick.bk;
    s.tm = pick.tm;
    s.tn = pick.tn;
    s.block = (s.bm / s.tm) * (s.bn / s.tn);
    // Two blocks of 256 threads per SM: at most 128 registers a thread
    // (64 accumulators, the fragments and the vector epilogue fit).
    if (s.block == 256)
      s.minBlocksPerSM = 2;
    tileGeometry(k, false, s);
    return Schedule{s};
  }
  applyMmaOverrides(pick, o);
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
    badOverride(llvm::formatv("a {0}x{1}x{2} tile in {3} stages needs {4} bytes of shared memory; "
                              "the device allows {5}",
                              s.bm, s.bn, s.bk, s.stages, s.sharedBytes, dev.sharedPerBlockOptin)
                    .str());
  return Schedule{s};
}

} // namespace minijit::detail
