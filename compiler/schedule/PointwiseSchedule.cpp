//===- compiler/schedule/PointwiseSchedule.cpp - one element per lane -----===//
// 16-byte vector accesses when every store is contiguous and aligned, a
// scalar tail for what is left, and a grid as large as the data.
//===----------------------------------------------------------------------===//
#include "compiler/schedule/ScheduleInternal.h"

#include <algorithm>

namespace minijit::detail {

Schedule pointwiseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                           const ScheduleOverrides &o) {
  // Operands read across the innermost axis go through shared-memory tiles,
  // unless the vector width or items are set by hand (or transpose=0).
  if (!o.vec && !o.items && o.transpose.value_or(1) != 0)
    if (std::optional<Schedule> t = transposeSchedule(k, dev, o))
      return *t;
  PointwiseSchedule s;
  IndexContext ctx = k.ctx;
  for (unsigned vec = maxVecFor(k); vec >= 2; vec /= 2) {
    int64_t numVec = k.numel / vec;
    if (numVec == 0)
      continue;
    bool ok = true, anyContiguous = false;
    for (const KStore &st : k.stores) {
      LaneAccess a = analyzeLanes(ctx, st.offset, k.elem, numVec * vec, vec, "v");
      ok = ok && a.kind == LaneAccess::Kind::Contiguous;
      anyContiguous = true;
    }
    if (ok && anyContiguous) {
      s.vec = vec;
      break;
    }
  }
  if (std::optional<unsigned> vec = vecOverride(k, o))
    s.vec = *vec;
  s.block = 256;
  if (o.block) {
    if (*o.block < 32 || *o.block > 1024 || *o.block % 32)
      badOverride("block must be a multiple of 32 up to 1024");
    s.block = static_cast<unsigned>(*o.block);
  }
  // One vector per thread and a grid as large as the data: measured on the
  // H200 (2026-11-29, GeLU over 2^26 f32), 256 threads x 1 vector reached 97%
  // of the copy bandwidth, against 93% with 4 vectors per thread.
  s.items = 1;
  if (o.items) {
    if (*o.items < 1 || *o.items > 16)
      badOverride("items must be 1..16");
    s.items = static_cast<unsigned>(*o.items);
  }
  s.numVec = k.numel / s.vec;
  s.tail = k.numel % s.vec != 0;
  int64_t perBlock = int64_t(s.block) * s.items;
  s.grid = std::max<int64_t>(1, (s.numVec + perBlock - 1) / perBlock);
  return Schedule{s};
}

} // namespace minijit::detail
