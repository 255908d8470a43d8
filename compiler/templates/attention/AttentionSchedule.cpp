//===- compiler/templates/attention/AttentionSchedule.cpp - the attention template's rules ---===//
// f16 and bf16 with head dims of 64 or 128 on sm_90: Hopper's kernel on
// wgmma (128 query rows a block, 128 keys a tile, rings of 3 tiles where the
// shared memory holds them). Other f16 and bf16 head dims of whole 16s up
// to 128: mma.sync's kernel, 128 query rows (32 a warp) x 64 keys a tile
// (64, 32 or 16 rows, 16 a warp, where 128 would leave SMs idle). Otherwise the CUDA cores: tiles
// of 128 query rows (64 with a causal mask or a window) and 32 keys, four
// rows a thread and eight threads a row (four for head dims under 64);
// smaller tiles where those would leave SMs without a block. `bm` sets the
// rows by hand (16, 32, 64 or 128; 16 and 32 keep f16 on the CUDA cores),
// `rpt` the CUDA cores' rows a thread and `tpr` their threads a row,
// `wm` the tensor cores' rows a warp (16 or 32), `bn` their keys a tile
// (32 or 64); these keys of mma.sync's kernel, or `wgmma=0`, keep it where
// Hopper's would take the attention. In Hopper's kernel `bn` sets its keys
// a tile (64 or 128),
// `stages` its rings of K and V (2 to 4), `overlap` (0 or 1) whether a
// tile's softmax runs beside the tile before's product with V and
// `pingpong` (0 or 1) whether the two consumers take turns issuing.
//===----------------------------------------------------------------------===//
#include "compiler/templates/attention/AttentionInternal.h"

#include "compiler/schedule/ScheduleInternal.h"

#include <algorithm>

namespace minijit::detail {

namespace {

/// Whether Hopper's kernel (AttentionWgmma.cpp) takes the attention: wgmma
/// on the target, Q, K and V of one 16-bit dtype, head dims of 64 or 128
/// (whole 128-byte rows of the swizzle, the accumulators within the
/// registers), and no row statistics written for a backward.
bool wgmmaTakes(const LoweredKernel &k, const Target &target) {
  const KMatmul &mm = *k.matmul;
  const KAttention &a = *k.attention;
  auto headDim = [](int64_t d) { return d == 64 || d == 128; };
  return target.hasWgmma() && (mm.dtype == DType::F16 || mm.dtype == DType::BF16) &&
         a.vDtype == mm.dtype && headDim(mm.K) && headDim(a.valueDim) && a.max.param < 0 &&
         a.sum.param < 0;
}

/// Whether the overrides leave an attention Hopper's kernel where it takes
/// it: `wgmma=1` asks for it; unset, it is the rule unless a key of
/// mma.sync's kernel (`bm`, `wm`, `bn=32`) asks for that one. Fewer blocks of
/// 128 query rows than SMs too: mma.sync's kernel, its tiles shrunk to fill
/// them, still takes longer (docs/PERFORMANCE_LOG.md, "Attention on wgmma,
/// run").
bool wgmmaWanted(const ScheduleOverrides &o) {
  if (o.wgmma)
    return *o.wgmma == 1;
  return !o.bm && !o.wm && (!o.bn || *o.bn == 64 || *o.bn == 128);
}

/// Hopper's kernel: 128 query rows a block (two consumer warpgroups of 64),
/// `bn` keys a tile (128 by default; 64), rings of `stages` tiles of K and
/// of V (by default 3 where the shared memory holds them, else 2).
Expected<Schedule> wgmmaSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                 const ScheduleOverrides &o) {
  const KMatmul &mm = *k.matmul;
  const KAttention &a = *k.attention;
  AttentionWgmmaSchedule w;
  w.br = 128;
  w.bc = 128;
  if (o.bn) {
    if (*o.bn != 64 && *o.bn != 128)
      return refuse("bn (keys a tile of attention on wgmma) must be 64 or 128");
    w.bc = static_cast<unsigned>(*o.bn);
  }
  w.qBytes = int64_t(w.br) * mm.K * 2;
  w.kBytes = int64_t(w.bc) * mm.K * 2;
  w.vBytes = int64_t(w.bc) * a.valueDim * 2;
  // 1024 bytes to align the tiles on the swizzle's period
  auto sharedBytes = [&](unsigned stages) {
    return 1024 + w.qBytes + int64_t(stages) * (w.kBytes + w.vBytes);
  };
  w.stages = sharedBytes(3) <= int64_t(dev.sharedPerBlockOptin) ? 3 : 2;
  if (o.stages) {
    if (*o.stages < 2 || *o.stages > 4)
      return refuse("stages (K's and V's tiles in flight in attention on wgmma) must be 2, 3 or 4");
    w.stages = static_cast<unsigned>(*o.stages);
  }
  if (o.overlap) {
    if (*o.overlap > 1)
      return refuse("overlap (attention on wgmma: the next tile's S before this tile's P V) must "
                    "be 0 or 1");
    w.overlap = *o.overlap == 1;
  }
  if (o.pingpong) {
    if (*o.pingpong > 1)
      return refuse("pingpong (attention on wgmma: the consumers take turns issuing) must be 0 "
                    "or 1");
    if (*o.pingpong == 1 && !w.overlap)
      return refuse("pingpong=1 (attention on wgmma) needs overlap=1");
    w.pingpong = *o.pingpong == 1;
  }
  w.block = 384;        // a producer warpgroup, two consumers
  w.minBlocksPerSM = 1; // 168 registers a thread at launch, split by setmaxnreg
  w.threadsPerRow = 4;  // (a row's four threads: wgmma's accumulator layout)
  w.tilesM = (mm.M + w.br - 1) / w.br;
  w.grid = mm.batch * w.tilesM;
  int64_t bytes = sharedBytes(w.stages);
  if (bytes > int64_t(dev.sharedPerBlockOptin))
    return refuse("attention on wgmma: " + std::to_string(w.stages) + " stages of " +
                  std::to_string(w.bc) + " keys need " + std::to_string(bytes) +
                  " bytes of shared memory, more than a block has");
  w.sharedBytes = static_cast<unsigned>(bytes);
  return Schedule{w};
}

} // namespace

Expected<Schedule> attentionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o, const Target &target) {
  const KMatmul &mm = *k.matmul;
  const KAttention &a = *k.attention;
  // Hopper's kernel where it takes the attention, unless wgmma=0 or
  // mma.sync's keys keep mma.sync's.
  if (wgmmaWanted(o) && wgmmaTakes(k, target))
    return wgmmaSchedule(k, dev, o);
  // f16 and bf16 on the tensor cores where the head dims are whole 16s and
  // the fragments fit the registers (bm=16 or 32 asks for the CUDA cores).
  bool mma = mm.dtype != DType::F32 && mm.K % 16 == 0 && a.valueDim % 16 == 0 && mm.K <= 128 &&
             a.valueDim <= 128 && (!o.bm || *o.bm == 64 || *o.bm == 128);
  if (mma) {
    AttentionMmaSchedule m;
    // 128 query rows a block, 32 a warp (FlashAttention-2's tile: each
    // fragment of K and V read from shared memory feeds two row tiles);
    // fewer rows a block, 16 a warp, where 128 would leave SMs idle (fewer
    // blocks than two per SM); `wm` alone keeps at least its rows a block.
    if (o.wm && *o.wm != 16 && *o.wm != 32)
      return refuse("wm (query rows a warp of attention on the tensor cores) must be 16 or 32");
    unsigned fewest = o.wm ? static_cast<unsigned>(*o.wm) : 16;
    m.br = 128;
    while (!o.bm && m.br > fewest &&
           mm.batch * ((mm.M + m.br - 1) / m.br) < 2 * int64_t(dev.smCount))
      m.br /= 2;
    if (o.bm)
      m.br = static_cast<unsigned>(*o.bm); // 64 or 128, at least any wm
    m.rowTiles = o.wm ? static_cast<unsigned>(*o.wm / 16) : m.br == 128 ? 2 : 1;
    m.bc = 64;
    if (o.bn) {
      if (*o.bn != 32 && *o.bn != 64)
        return refuse("bn (keys a tile of attention on the tensor cores) must be 32 or 64");
      m.bc = static_cast<unsigned>(*o.bn);
    }
    m.block = 32 * m.br / (16 * m.rowTiles);
    m.threadsPerRow = 4;
    m.tilesM = (mm.M + m.br - 1) / m.br;
    m.grid = mm.batch * m.tilesM;
    // 16-bit tiles of Q, K and V, rows padded by 8 (ldmatrix's rows in
    // different banks)
    m.sharedBytes =
        static_cast<unsigned>(2 * (int64_t(m.br) * (mm.K + 8) + int64_t(m.bc) * (mm.K + 8) +
                                   int64_t(m.bc) * (a.valueDim + 8)));
    if (m.sharedBytes > dev.sharedPerBlockOptin)
      return refuse("attention tiles need more shared memory than a block has");
    return Schedule{m};
  }
  // The CUDA cores: four query rows a thread, so that each float4 of K's
  // and V's tiles read from shared memory feeds four rows (two where a
  // thread's columns of O, four rows of them, would pass 96 registers); 8
  // threads a row for value head dims of 64 and more that 8 divides, else 4;
  // 128 rows a block where every query tile walks every key (K's and V's
  // tiles shared by more rows), 64 where a causal mask or a window ends the
  // walks unevenly; half as many while twice the blocks would still leave
  // an SM without one, and at most a row a thread for each 16 rows of the
  // block (a block of 32 rows: 2 a thread), so that a small grid keeps
  // blocks of 128 threads. On the H100 the grids of about one block an SM
  // ran fastest; twice the blocks of half the rows, or half the blocks,
  // 1.2-1.5x slower (docs/PERFORMANCE.md, Attention, f32).
  AttentionSchedule s;
  auto tiles = [&](unsigned br) { return (mm.M + br - 1) / br; };
  s.threadsPerRow = a.valueDim >= 64 && a.valueDim % 8 == 0 ? 8 : 4;
  s.rowsPerThread = a.valueDim / s.threadsPerRow <= 24 ? 4 : 2;
  s.br = a.causal || a.window > 0 ? 64 : 128;
  while (s.br > 16 && 2 * mm.batch * tiles(s.br) <= int64_t(dev.smCount))
    s.br /= 2;
  s.rowsPerThread = std::max(1u, std::min(s.rowsPerThread, s.br / 16));
  if (o.bm) {
    if (*o.bm != 16 && *o.bm != 32 && *o.bm != 64 && *o.bm != 128)
      return refuse("bm (query rows of an attention tile) must be 16, 32, 64 or 128 on the CUDA "
                    "cores, 64 or 128 on the tensor cores (f16 and bf16 with head dims of whole "
                    "16s up to 128)");
    s.br = static_cast<unsigned>(*o.bm);
  }
  if (o.tpr) {
    if (*o.tpr != 2 && *o.tpr != 4 && *o.tpr != 8 && *o.tpr != 16)
      return refuse(
          "tpr (threads a query row of attention on the CUDA cores) must be 2, 4, 8 or 16");
    s.threadsPerRow = static_cast<unsigned>(*o.tpr);
  }
  if (o.rpt) {
    if (*o.rpt != 1 && *o.rpt != 2 && *o.rpt != 4 && *o.rpt != 8)
      return refuse(
          "rpt (query rows a thread of attention on the CUDA cores) must be 1, 2, 4 or 8");
    s.rowsPerThread = static_cast<unsigned>(*o.rpt);
  }
  if (s.rowsPerThread > s.br)
    return refuse("rpt (query rows a thread of attention) must be at most bm");
  if (a.valueDim % s.threadsPerRow != 0)
    return refuse("tpr (threads a query row of attention) must divide the head dim " +
                  std::to_string(a.valueDim));
  s.block = s.br / s.rowsPerThread * s.threadsPerRow;
  s.tilesM = tiles(s.br);
  s.grid = mm.batch * s.tilesM;
  // Rows of Q and K/V padded by a float4 (aligned float4 reads, other
  // banks), the probabilities' by a float.
  int64_t kv = std::max(mm.K, a.valueDim) + 4;
  s.sharedBytes = static_cast<unsigned>(
      4 * (int64_t(s.br) * (mm.K + 4) + int64_t(s.bc) * kv + int64_t(s.br) * (s.bc + 1)));
  if (s.sharedBytes > dev.sharedPerBlockOptin)
    return refuse("attention tiles need more shared memory than a block has");
  return Schedule{s};
}

} // namespace minijit::detail

namespace minijit::detail {

/// An attention's backward (AttentionBackward.cpp): tiles of 32 rows
/// (keys for dK and dV, queries for dQ) and 32 of the other side, four
/// threads a row, f32 on the CUDA cores; `bm` sets both to 16 or 32.
Expected<Schedule> attentionBackwardSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                             const ScheduleOverrides &o) {
  const KMatmul &mm = *k.matmul;
  const KAttention &a = *k.attention;
  AttentionBackwardSchedule s;
  if (o.bm) {
    if (*o.bm != 16 && *o.bm != 32)
      return refuse("bm (rows of an attention backward tile) must be 16 or 32");
    s.br = s.bc = static_cast<unsigned>(*o.bm);
  }
  s.block = s.bc * s.threadsPerRow;
  int64_t rows = k.kind == KernelKind::AttentionBackwardKV ? mm.N : mm.M;
  s.tilesM = (rows + s.bc - 1) / s.bc;
  s.grid = mm.batch * s.tilesM;
  // Q's and dO's tiles, K's and V's (rows padded by a float4), the tiles of
  // P and dS (padded by a float), and per query row its max, sum and D.
  int64_t floats = int64_t(s.br + s.bc) * (mm.K + 4 + a.valueDim + 4) +
                   2 * int64_t(s.bc) * (s.br + 1) + 3 * int64_t(s.br);
  s.sharedBytes = static_cast<unsigned>(4 * floats);
  if (s.sharedBytes > dev.sharedPerBlockOptin)
    return refuse("attention backward tiles need more shared memory than a block has");
  return Schedule{s};
}

} // namespace minijit::detail
