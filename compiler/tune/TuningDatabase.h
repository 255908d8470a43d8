//===- compiler/tune/TuningDatabase.h - tuned schedules, kept -*- C++ -*-===//
// What a search found for one kernel: the schedule overrides that ran
// fastest (for that kernel alone; text only in the files), the times of the
// tuned and the default schedule, and how many candidates were tried. Kept
// beside the kernel cache (DIR/tuning/), one checksummed file per kernel
// (cache/EntryFile.h): written atomically, safe with several processes and
// threads; a corrupt entry is reported and ignored (the kernel keeps its
// default schedule).
//
// The key is the kernel's source under its default schedule (its structure,
// shapes, dtypes and the default's parameters: a change of the rules makes
// it a new kernel), with its place in the graph taken out but the names of
// its values kept (the same kernel in another graph hits when its values are
// named alike); the NVRTC target and identity and minijit's version, as the
// kernel cache keys them; and the device: its name, SM count and driver.
// The search that fills the database is `minijit tune` (tools/Tuner.h:
// tuneGraph; the candidates per template in compiler/tune/CandidateSpace.h).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/Lowering.h"
#include "compiler/schedule/Schedule.h"
#include "runtime/DeviceProperties.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace minijit {

class KernelCache;

struct TuningEntry {
  ScheduleOverrides overrides; ///< e.g. tpr=128,vec=4; none set: the default won
  double tunedUs = 0;     ///< the winner's median time
  double defaultUs = 0;   ///< the default schedule's, measured in the same search
  int64_t candidates = 0; ///< schedules timed
  std::string driver;     ///< the driver the times were measured with (informational)
};

struct TuningStats {
  uint64_t lookups = 0, hits = 0, corruptEntries = 0, writeFailures = 0;
};

/// The text a kernel is known by in the database: its CUDA under schedule
/// `s`, with its place in the graph taken out (named "k", index 0), after the
/// preamble it is compiled with. A search keys what it finds by the default
/// schedule's text; so does a compile that looks it up.
std::string tuningSource(const LoweredKernel &k, const Schedule &s);

class TuningDatabase {
public:
  /// Entries live in `dir` (created on the first store); empty: none are
  /// kept (lookups miss, stores fail).
  explicit TuningDatabase(std::string dir);

  /// The process-wide database: the kernel cache's directory + "/tuning"
  /// ($MINIJIT_CACHE_DIR, else $XDG_CACHE_HOME/minijit, else
  /// ~/.cache/minijit); none with MINIJIT_DISABLE_CACHE=1.
  static TuningDatabase &global();

  /// The key of a kernel whose source under its default schedule is
  /// `defaultSource` (preamble included), compiled for `target` through `cache`
  /// (which knows the NVRTC identity without loading NVRTC) and run on `dev`.
  static std::string keyFor(KernelCache &cache, const std::string &defaultSource,
                            const Target &target, const DeviceProperties &dev);

  /// The entry for `key`, or nullopt (absent, or corrupt: reported on
  /// stderr once per entry and counted). Its overrides are parsed here;
  /// text that does not parse makes the entry corrupt.
  std::optional<TuningEntry> lookup(const std::string &key);
  /// Keeps `e` for `key`, replacing what was there. Returns false with the
  /// reason in `error` when it cannot be written.
  bool store(const std::string &key, const TuningEntry &e, std::string &error);

  std::string pathFor(const std::string &key) const;
  const std::string &directory() const { return Dir; }
  TuningStats stats() const;

private:
  std::string Dir;
  mutable std::mutex Mutex;
  TuningStats Stats;
};

} // namespace minijit
