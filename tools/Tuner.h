//===- tools/Tuner.h - the search behind `minijit tune` ---------*- C++ -*-===//
// For each kernel of a compiled graph: its candidate schedules
// (compiler/tune/CandidateSpace.h), compiled in parallel through NVRTC, each
// checked against the CPU reference and timed alone on the device (rotated
// buffers, the median of several runs); the fastest correct one is kept in
// the tuning database under the kernel's key (its default schedule's text),
// where every later compile for that device finds it. A dry run compiles the
// candidates without a device. The search needs the harness (the CPU
// reference, the executable), so it lives here, beside it, rather than in
// the compiler: CompileOptions::tuning only reads what it stored.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/tune/CandidateSpace.h"
#include "tools/Harness.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace minijit {

struct TuneOptions {
  bool fusion = true;
  bool allowTf32 = false; ///< CompileOptions::allowTf32 for every candidate
  bool tf32x3 = true;     ///< CompileOptions::tf32x3 for every candidate
  /// Seconds for the whole search: once spent, the kernels not yet searched
  /// keep their default schedules and the current kernel its best so far.
  double budgetS = 60;
  /// Seconds for one kernel (compiles and timing), within budgetS.
  double kernelBudgetS = 5;
  int runs = 30;            ///< timed runs per candidate (their median), after 3 untimed
  uint64_t seed = 1;        ///< of the inputs the candidates are checked and timed on
  size_t maxCandidates = 48; ///< per kernel, the default included
  unsigned threads = 0;     ///< compiles at once; 0: one per core
  /// Where the winners are stored; null: TuningDatabase::global().
  TuningDatabase *database = nullptr;
  /// Where candidates are compiled; null: KernelCache::global() (or one in
  /// memory when that is disabled).
  KernelCache *cache = nullptr;
  /// Progress, one line at a time; `transient` lines (each candidate timed)
  /// may be overwritten by the next. Null: quiet.
  std::function<void(const std::string &line, bool transient)> progress;
};

/// One candidate of a kernel and what became of it.
struct CandidateResult {
  enum class Outcome {
    Compiled, ///< dry run: compiled through NVRTC, not run
    Timed,    ///< ran, matched the CPU reference, timed
    Rejected, ///< did not compile, exceeds a limit ptxas reported, did not load or run, or mismatched
    NotTimed, ///< the budget was spent before its turn
  };
  ScheduleOverrides overrides; ///< none set: the default
  std::string schedule;   ///< describeSchedule()
  Outcome outcome = Outcome::Compiled;
  double us = 0;          ///< Timed: the median
  std::string why;        ///< Rejected, NotTimed: why
  KernelResources resources; ///< ptxas's report, when it compiled
};

/// The search of one kernel.
struct KernelTune {
  int index = 0;          ///< launch index (kN in --emit=fused)
  std::string name;       ///< the default schedule's entry point
  std::string key;        ///< its key in the tuning database
  std::vector<CandidateResult> candidates; ///< the default first
  std::vector<DroppedCandidate> dropped;   ///< before compiling (CandidateSpace)
  int sameAs = -1;        ///< >= 0: the same kernel (key) as that earlier one, not searched again
  std::string skipped;    ///< not searched: why (the budget was spent)
  std::optional<TuningEntry> winner; ///< what was (or would be) stored
  std::string storedAt;   ///< the entry's file, when stored
  std::string storeError; ///< why it was not stored
  double seconds = 0;     ///< spent on this kernel
};

struct TuneReport {
  std::string graph;
  std::string device;     ///< the GPU's name, or the assumed one of a dry run
  bool dryRun = false;
  std::vector<KernelTune> kernels;
  double seconds = 0;
  std::string database;   ///< the tuning database's directory
  /// After storing: a compile that reads the database, run and checked.
  bool verified = false;
  size_t tunedKernels = 0; ///< kernels that compile took from the database
  bool verifyOk = true;
  std::string verifySummary;
};

/// The key kernel `k` of `c` has in the tuning database: its text under the
/// schedule it was compiled with (the default, for a compile with tuning
/// off and no overrides), its target and `c.device`, as a compile looks it
/// up.
std::string kernelTuningKey(const CompiledGraph &c, size_t k, KernelCache &cache);

/// The winner among `k.candidates`: the fastest timed one, or the default
/// (empty overrides) when none is at least 1% faster than it. Nullopt when
/// the default was not timed. `candidates` counts those timed; `driver`
/// says what measured them.
std::optional<TuningEntry> chooseWinner(const KernelTune &k, const std::string &driver);

/// Stores `k.winner` under `k.key` in `db`; sets storedAt or storeError.
/// Returns whether it was stored.
bool recordWinner(KernelTune &k, TuningDatabase &db);

/// Searches every kernel of `g` (named dimensions bound) on `gpu` and
/// stores each winner. Throws GraphError when $MINIJIT_SCHEDULE is set (the
/// search sets each kernel's parameters itself), and what compile and run
/// throw for the default schedules.
TuneReport tuneGraph(const Graph &g, const Device &gpu, const TuneOptions &options);

/// The dry run: each kernel's candidates compiled through NVRTC, none run
/// or stored. Sized for `device` (an H200 when none is given).
TuneReport listCandidates(const Graph &g, const TuneOptions &options,
                          const DeviceProperties &device = DeviceProperties::assumedH200());

/// The report as `minijit tune` prints it.
std::string formatTuneReport(const TuneReport &r);

} // namespace minijit
