//===- compiler/tune/CandidateSpace.cpp - the schedules a search tries -----===//
// Per template, a few tens of typed overrides around the rules' choice (its
// KernelTemplate::candidates), each realized through scheduleKernel (the
// compile's own path), checked against the device's limits and made unique
// by the kernel it gives.
//===----------------------------------------------------------------------===//
#include "compiler/tune/CandidateSpace.h"

#include "compiler/templates/KernelTemplate.h"
#include "compiler/tune/TuningDatabase.h"
#include "ir/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>

namespace minijit {

namespace {

/// The schedule's launch, which its text does not show.
std::string launchText(const Schedule &s) {
  const LaunchGeometry &g = s.geometry();
  return llvm::formatv("\n// launch: block {0}, grid {1}, dynamic shared {2}\n", g.block, g.grid,
                       s.dynamicSharedBytes())
      .str();
}

} // namespace

std::vector<ScheduleOverrides> candidateOverrides(const LoweredKernel &body,
                                                  const ScheduledKernel &def,
                                                  const DeviceProperties &dev) {
  return kernelTemplate(def.schedule.kind()).candidates(body, def, dev);
}

std::string exceedsLimits(const Schedule &s, const DeviceProperties &dev) {
  const LaunchGeometry &g = s.geometry();
  if (int64_t(g.block) > dev.maxThreadsPerBlock)
    return llvm::formatv("{0} threads a block; the device allows {1}", g.block,
                         dev.maxThreadsPerBlock)
        .str();
  if (int64_t(s.dynamicSharedBytes()) > dev.sharedPerBlockOptin)
    return llvm::formatv("{0} bytes of shared memory a block; the device allows {1}",
                         s.dynamicSharedBytes(), dev.sharedPerBlockOptin)
        .str();
  if (const TransposeSchedule *t = s.getIf<TransposeSchedule>()) {
    int64_t tiles = int64_t(t->tiled.size()) * t->tile * (t->tile + 1) * 4;
    if (tiles > dev.sharedPerBlock)
      return llvm::formatv("{0} bytes of tiles in shared memory; the device allows {1}", tiles,
                           dev.sharedPerBlock)
          .str();
  }
  if (blocksPerSM(s, dev, 0) < 1)
    return "no block of it fits an SM (threads, registers or shared memory)";
  if (const RowSchedule *r = s.getIf<RowSchedule>();
      r && r->waits && r->cluster == 1 &&
      g.grid > int64_t(std::max(1u, g.minBlocksPerSM)) * dev.smCount)
    return llvm::formatv("its {0} blocks wait for each other but cannot all be resident", g.grid)
        .str();
  return "";
}

CandidateSpace candidateSpace(const LoweredKernel &body, const DeviceProperties &dev,
                              const Target &target, size_t limit) {
  CandidateSpace space;
  std::map<std::string, ScheduleOverrides> seen; // identity -> the first overrides giving it
  auto add = [&](const ScheduleOverrides &overrides, ScheduledKernel k) {
    std::string identity = tuningSource(k.lowered, k.schedule) + launchText(k.schedule);
    auto [it, fresh] = seen.emplace(identity, overrides);
    if (!fresh) {
      space.dropped.push_back(
          {overrides, "same kernel as " + (it->second.empty() ? "the default" : it->second.str())});
      return;
    }
    if (space.candidates.size() >= limit) {
      space.dropped.push_back(
          {overrides, llvm::formatv("over the limit of {0} candidates", limit).str()});
      return;
    }
    space.candidates.push_back({overrides, std::move(k), std::move(identity)});
  };
  Expected<ScheduledKernel> def = scheduleKernel(body, dev, {}, target);
  if (!def)
    throw CompileError(def.error()); // not an override's: a kernel no template takes
  std::vector<ScheduleOverrides> tries = candidateOverrides(body, *def, dev);
  add({}, *def);
  std::vector<ScheduleOverrides> done;
  for (const ScheduleOverrides &o : tries) {
    if (llvm::is_contained(done, o))
      continue;
    done.push_back(o);
    Expected<ScheduledKernel> k = scheduleKernel(body, dev, o, target);
    if (!k) {
      space.dropped.push_back({o, k.error()});
      continue;
    }
    if (std::string why = exceedsLimits(k->schedule, dev); !why.empty()) {
      space.dropped.push_back({o, why});
      continue;
    }
    add(o, std::move(*k));
  }
  return space;
}

} // namespace minijit
