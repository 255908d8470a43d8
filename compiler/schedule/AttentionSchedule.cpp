//===- compiler/schedule/AttentionSchedule.cpp - the attention template's rules -===//
// Tiles of 32 query rows and 32 keys, four threads a row; tiles of 16 rows
// where 32 would leave SMs idle (fewer blocks than two per SM). `bm` sets
// the rows by hand (16, 32 or 64).
//===----------------------------------------------------------------------===//
#include "compiler/schedule/ScheduleInternal.h"

#include <algorithm>

namespace minijit::detail {

Expected<Schedule> attentionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o) {
  const KMatmul &mm = *k.matmul;
  const KAttention &a = *k.attention;
  AttentionSchedule s;
  auto tiles = [&](unsigned br) { return (mm.M + br - 1) / br; };
  if (mm.batch * tiles(s.br) < 2 * int64_t(dev.smCount))
    s.br = 16;
  if (o.bm) {
    if (*o.bm != 16 && *o.bm != 32 && *o.bm != 64)
      return refuse("bm (query rows of an attention tile) must be 16, 32 or 64");
    s.br = static_cast<unsigned>(*o.bm);
  }
  s.block = s.br * s.threadsPerRow;
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
