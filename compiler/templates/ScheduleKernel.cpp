//===- compiler/templates/ScheduleKernel.cpp - the scheduling stage of one kernel ---===//
// What the pipeline does to each lowered kernel before it is named and
// emitted: pick the schedule (for a kernel that serves many sizes, the one
// of its bucket, schedule/SizeBuckets.cpp), and for inner rows decide the
// online sum (a rewrite of the body, scheduled anew). The pipeline, the
// tuning database's schedules and the search's candidates all go through
// it, so a schedule a search timed is the one a later compile rebuilds from
// its overrides.
//===----------------------------------------------------------------------===//
#include "compiler/templates/KernelTemplate.h"

#include <algorithm>

namespace minijit {

Expected<Schedule> chooseScheduleForSizes(LoweredKernel &k, const DeviceProperties &dev,
                                          const ScheduleOverrides &overrides,
                                          const Target &target) {
  if (!k.symbolic)
    return chooseSchedule(k, dev, overrides, target);
  Expected<Schedule> s = chooseSchedule(atBucketExtent(k), dev, overrides, target);
  if (!s || kernelTemplate(s->kind()).sizeGridForExtent(*s, k, dev))
    return s;
  k.symbolic.reset();
  return chooseSchedule(k, dev, overrides, target);
}

namespace {

/// Whether the passes of a row kernel scheduled as `s` that read their rows
/// again (rows too long to hold in registers) find them in DRAM: the rows
/// the resident blocks work on at once hold more than twice the L2. Rows of
/// a softmax over a vocabulary fit; rows of a million elements, many at
/// once, do not, and there a pass saved is a read of the row from DRAM.
bool rereadsFromDram(const LoweredKernel &k, const Schedule &s, const DeviceProperties &dev) {
  const RowSchedule *row = s.getIf<RowSchedule>();
  if (!row || row->cached || k.rows == 0)
    return false;
  int64_t read = 0; // bytes the kernel reads in one pass over its rows
  for (const KParam &p : k.params)
    if (!p.written)
      read += p.numel * int64_t(dtypeSize(p.dtype));
  int64_t perBlock = read / k.rows * row->rowsPerBlock / row->splits;
  int64_t resident = int64_t(dev.smCount) * std::max(1, blocksPerSM(s, dev, 0));
  return std::min(read, resident * perBlock) > 2 * dev.l2Bytes;
}

} // namespace

Expected<ScheduledKernel> scheduleKernel(const LoweredKernel &body, const DeviceProperties &dev,
                                         const ScheduleOverrides &overrides,
                                         const Target &target) {
  ScheduledKernel r{body, Schedule{}};
  Expected<Schedule> first = chooseScheduleForSizes(r.lowered, dev, overrides, target);
  if (!first)
    return first.refusal();
  r.schedule = std::move(*first);
  // Rows sum exp(x - max) in the pass of their max (online softmax) where
  // the kernel then reads its rows once in all (a logsumexp, a
  // cross-entropy), or where each pass reads its rows from DRAM (a softmax
  // over rows far longer than a block holds, too many at once for the L2):
  // one read of every row fewer. Where a pass still follows and reads its
  // rows from the L2, the update's extra work costs about what the saved
  // read does, or more (docs/PERFORMANCE_LOG.md); online=1 asks for it
  // anyway.
  //
  // A variance's sum of squared deviations moves into its mean's pass
  // (Welford) only where the passes read the rows from DRAM: where they
  // come again from the L2 or registers, the update costs more than the
  // read it saves, even where the kernel then reads its rows once.
  bool never = overrides.online == 0, always = overrides.online.value_or(0) != 0;
  if (r.schedule.kind() != ScheduleKind::InnerRow || never)
    return r;
  bool rereads = rereadsFromDram(r.lowered, r.schedule, dev);
  std::optional<LoweredKernel> online = sumExpsOnline(r.lowered);
  if (online && online->passes != 1 && !always && !rereads)
    online.reset();
  if (always || rereads)
    if (std::optional<LoweredKernel> squares = sumSquaresOnline(online ? *online : r.lowered))
      online = std::move(squares);
  if (!online)
    return r;
  Expected<Schedule> again = chooseScheduleForSizes(*online, dev, overrides, target);
  if (!again)
    return again.refusal();
  r.lowered = std::move(*online);
  r.schedule = std::move(*again);
  return r;
}

} // namespace minijit
