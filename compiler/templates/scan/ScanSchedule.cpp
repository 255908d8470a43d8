//===- compiler/templates/scan/ScanSchedule.cpp - cumsum/cumprod along rows ---===//
// A block per row: as many threads as a tile of the row needs, up to 512,
// and four consecutive elements per thread once the row is long enough to
// keep them busy (fewer warps to combine per tile). The tile goes through
// shared memory (emit/Scan.cpp), which bounds block * items.
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
  // The tiles in shared memory, one a scan (4 bytes an element, 8 for i64; one
  // in 32 left out), take at most 40 KiB together, under the 48 KiB of static
  // memory: the scans of one kernel share it, fewer elements a tile each.
  int64_t elementBytes = 0;
  for (const KReduction &r : k.reductions)
    elementBytes += r.dtype == DType::I64 ? 8 : 4;
  auto tileBytes = [&] { return int64_t(s.block) * s.items * 33 / 32 * elementBytes; };
  const int64_t most = 40 * 1024;
  if (tileBytes() > most && (o.items || o.block))
    return refuse("block * items elements a scan, for " + std::to_string(k.reductions.size()) +
                " scans, take " + std::to_string(tileBytes()) +
                " bytes of shared memory; at most 40960");
  while (tileBytes() > most && (s.items > 1 || s.block > 32)) {
    if (s.items > 1)
      s.items /= 2;
    else
      s.block /= 2;
  }
  if (tileBytes() > most)
    return refuse("a kernel of " + std::to_string(k.reductions.size()) +
                  " scans needs more shared memory than a block has");
  s.grid = k.rows;
  return Schedule{s};
}

} // namespace minijit::detail
