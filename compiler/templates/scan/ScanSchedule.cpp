//===- compiler/templates/scan/ScanSchedule.cpp - cumsum/cumprod along rows ---===//
// A block per row: as many threads as a tile of the row needs, up to 512,
// and four consecutive elements per thread once the row is long enough to
// keep them busy (fewer warps to combine per tile).
//===----------------------------------------------------------------------===//
#include "compiler/templates/scan/ScanInternal.h"

#include "compiler/schedule/ScheduleInternal.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace minijit::detail {

Expected<Schedule> scanSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                const ScheduleOverrides &o) {
  ScanSchedule s;
  s.items = k.K >= 2048 ? 4 : 1;
  if (o.items) {
    if (*o.items < 1 || *o.items > 16)
      return refuse("items must be 1..16");
    s.items = static_cast<unsigned>(*o.items);
  }
  int64_t threads = (k.K + s.items - 1) / s.items;
  s.block = static_cast<unsigned>(
      std::clamp<uint64_t>(llvm::PowerOf2Ceil(static_cast<uint64_t>(threads)), 32, 512));
  if (o.block) {
    if (*o.block < 32 || *o.block > 1024 || *o.block % 32)
      return refuse("block must be a multiple of 32 up to 1024");
    s.block = static_cast<unsigned>(*o.block);
  }
  s.grid = k.rows;
  return Schedule{s};
}

} // namespace minijit::detail
