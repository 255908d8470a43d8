//===- compiler/tune/CandidateSpace.h - the schedules a search tries -*- C++ -*-===//
// For one lowered kernel, the schedules `minijit tune` times: its template's
// parameters (typed ScheduleOverrides) around the rules' choice, each
// scheduled as a compile would schedule it (scheduleKernel), those the
// schedule code refuses or a device limit excludes dropped before any
// compile, and those that give the same kernel (source and launch) as an
// earlier one dropped as duplicates. Pure: no device, no NVRTC.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/schedule/Schedule.h"

#include <string>
#include <vector>

namespace minijit {

/// One schedule to try.
struct Candidate {
  ScheduleOverrides overrides; ///< for this kernel alone; none set: the default
  ScheduledKernel kernel; ///< the body as scheduled, and its schedule
  /// The kernel's text under the schedule (tuningSource) and its launch
  /// (block, grid, dynamic shared memory): equal texts are one candidate.
  std::string identity;
};

/// A schedule dropped before compiling, and why ("same kernel as tpr=64",
/// "1536 threads a block; the device allows 1024", the schedule code's
/// refusal).
struct DroppedCandidate {
  ScheduleOverrides overrides;
  std::string why;
};

struct CandidateSpace {
  std::vector<Candidate> candidates;     ///< the default first
  std::vector<DroppedCandidate> dropped; ///< in the order they were tried
};

/// The overrides a search tries for a kernel whose default schedule is
/// `def` (the default itself not among them), most promising first: the
/// template's geometry (threads per row and block, vector width, values per
/// thread, tiles, parts and splits, stages), then the variants of each
/// (loads ahead, registers or a loop, the online sum). Only the keys of
/// `def`'s template, with values that template accepts in principle; the
/// kernel may still refuse some (candidateSpace drops them).
std::vector<ScheduleOverrides> candidateOverrides(const LoweredKernel &body,
                                                  const ScheduledKernel &def,
                                                  const DeviceProperties &dev);

/// Why a kernel scheduled `s` cannot launch on `dev` (threads a block,
/// shared memory a block, no block resident on an SM with the registers
/// the template is estimated to take), or empty when it can.
std::string exceedsLimits(const Schedule &s, const DeviceProperties &dev);

/// The candidates for `body` (a kernel as lowering made it: CompiledKernel::
/// body): the default, then each of candidateOverrides scheduled, dropped
/// where the schedule code refuses it (a returned refusal, its message the
/// reason), exceedsLimits, or it is the same kernel as an earlier one; at
/// most `limit` candidates (the rest dropped as over the limit). Throws
/// CompileError only when the default itself fails. `target`: what the
/// kernel compiles for (its features decide the templates, as in a compile).
CandidateSpace candidateSpace(const LoweredKernel &body, const DeviceProperties &dev,
                              const Target &target, size_t limit = 48);

} // namespace minijit
