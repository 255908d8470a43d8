//===- compiler/templates/pointwise/PointwiseSchedule.cpp - one element per lane ---===//
// 16-byte vector accesses when every store is contiguous and aligned and the
// loads that are not whole vectors leave L1 room (l1PerDramByte), a scalar
// tail for what is left, and a grid as large as the data.
//===----------------------------------------------------------------------===//
#include "compiler/templates/pointwise/PointwiseInternal.h"

#include "compiler/schedule/ScheduleInternal.h"

#include <algorithm>

namespace minijit::detail {

namespace {

/// Bytes through L1 for each byte through DRAM, at `vec` elements a thread.
/// A load whose lanes are not one aligned vector (a slice shifted by an
/// element, a padded window, a strided slice) is read a scalar a lane, so a
/// warp's scalar load spans vec times the lines its 32 elements need; an
/// aligned vector or a scalar a thread reads its lines once, and an element
/// the whole vector shares (a broadcast) costs nothing. DRAM sees each buffer
/// once an element however many windows read it. Gathers through an index
/// value read where the indices say, at any vec, and are left out.
double l1PerDramByte(const LoweredKernel &k, unsigned vec, int64_t numVec) {
  IndexContext ctx = k.ctx;
  double l1 = 0, dram = 0;
  std::vector<bool> streamed(k.params.size(), false);
  for (const KValue &v : k.values) {
    if (v.kind != KValue::Kind::Load || !v.args.empty())
      continue;
    LaneAccess a = analyzeLanes(ctx, v.offset, k.elem, numVec * vec, vec, "v");
    if (a.kind == LaneAccess::Kind::Same)
      continue;
    double bytes = dtypeSize(k.params[v.param].dtype);
    l1 += a.kind == LaneAccess::Kind::Gather ? bytes * vec : bytes;
    if (!streamed[v.param])
      dram += bytes;
    streamed[v.param] = true;
  }
  for (const KStore &st : k.stores) {
    double bytes = dtypeSize(k.params[st.param].dtype);
    l1 += bytes;
    dram += bytes;
  }
  return dram > 0 ? l1 / dram : 0;
}

/// L1 moves about 11 times what DRAM does on an H100 (128 bytes a clock an
/// SM against a copy's 3 TB/s): a kernel whose loads need more runs at L1's
/// pace, not DRAM's (docs/PERFORMANCE_LOG.md, "The masked cumsum and
/// overlapping windows": eight shifted windows at 4-wide vectors, 16.5 bytes
/// of L1 a byte, ran at 62 % of copy; five, 10.5 bytes, at 95 %).
constexpr double kL1BytesPerDramByte = 11;

} // namespace

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
  // Narrower vectors where the loads that are not whole vectors would make L1
  // the bound, with as many of them a thread (items) as keep its 16 bytes of
  // stores: the same bytes in flight, a warp's scalar loads on fewer lines.
  const unsigned storesVec = s.vec;
  while (s.vec > 1 && l1PerDramByte(k, s.vec, k.numel / s.vec) > kL1BytesPerDramByte)
    s.vec /= 2;
  unsigned items = storesVec / s.vec;
  Expected<std::optional<unsigned>> vec = vecOverride(k, o);
  if (!vec)
    return vec.refusal();
  if (*vec) {
    s.vec = **vec;
    items = 1;
  }
  s.block = 256;
  if (o.block) {
    if (*o.block < 32 || *o.block > 1024 || *o.block % 32)
      return refuse("block must be a multiple of 32 up to 1024");
    s.block = static_cast<unsigned>(*o.block);
  }
  // One vector per thread and a grid as large as the data: closer to the
  // copy bandwidth than several vectors a thread (docs/PERFORMANCE.md);
  // several where the vectors were narrowed for L1.
  s.items = items;
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
