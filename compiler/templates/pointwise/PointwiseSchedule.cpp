//===- compiler/templates/pointwise/PointwiseSchedule.cpp - one element per lane ---===//
// 16-byte vector accesses when every store is contiguous and aligned, a
// scalar tail for what is left, and a grid as large as the data.
//===----------------------------------------------------------------------===//
#include "compiler/templates/pointwise/PointwiseInternal.h"

#include "compiler/schedule/ScheduleInternal.h"

#include <algorithm>

namespace minijit::detail {

Expected<Schedule> pointwiseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o) {
  // Operands read across the innermost axis go through shared-memory tiles,
  // unless the vector width or items are set by hand (or transpose=0).
  if (!o.vec && !o.items && o.transpose.value_or(1) != 0) {
    Expected<std::optional<Schedule>> t = transposeSchedule(k, dev, o);
    if (!t)
      return t.refusal();
    if (*t)
      return **t;
  }
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
  Expected<std::optional<unsigned>> vec = vecOverride(k, o);
  if (!vec)
    return vec.refusal();
  if (*vec)
    s.vec = **vec;
  s.block = 256;
  if (o.block) {
    if (*o.block < 32 || *o.block > 1024 || *o.block % 32)
      return refuse("block must be a multiple of 32 up to 1024");
    s.block = static_cast<unsigned>(*o.block);
  }
  // One vector per thread and a grid as large as the data: closer to the
  // copy bandwidth than several vectors a thread (docs/PERFORMANCE.md).
  s.items = 1;
  if (o.items) {
    if (*o.items < 1 || *o.items > 16)
      return refuse("items must be 1..16");
    s.items = static_cast<unsigned>(*o.items);
  }
  s.numVec = k.numel / s.vec;
  s.tail = k.numel % s.vec != 0;
  int64_t perBlock = int64_t(s.block) * s.items;
  s.grid = std::max<int64_t>(1, (s.numVec + perBlock - 1) / perBlock);
  return Schedule{s};
}

} // namespace minijit::detail
