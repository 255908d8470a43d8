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
  // cross-entropy). Where a pass still follows (a softmax's stores), the
  // update's extra exps cost about what the saved read does, or more
  // (docs/PERFORMANCE.md); online=1 asks for it anyway.
  bool never = overrides.online == 0, always = overrides.online.value_or(0) != 0;
  if (r.schedule.kind() != ScheduleKind::InnerRow || never)
    return r;
  std::optional<LoweredKernel> online = sumExpsOnline(r.lowered);
  if (!online || (online->passes != 1 && !always))
    return r;
  r.lowered = std::move(*online);
  Expected<Schedule> again = chooseScheduleForSizes(r.lowered, dev, overrides, target);
  if (!again)
    return again.refusal();
  r.schedule = std::move(*again);
  return r;
}

} // namespace minijit
