//===- tests/support/RandomRun.h - many random graphs, every mismatch counted -*- C++ -*-===//
// The long differential run: random graphs from a range of seeds, each run
// fused and unfused on the GPU and checked against the CPU reference (with
// its error bounds). A mismatch or an error is recorded with its seed and the
// run goes on; the summary names the seeds. Without a GPU every graph is
// still compiled through NVRTC, which measures compile throughput.
//===----------------------------------------------------------------------===//
#pragma once

#include "tests/support/RandomGraph.h"
#include "tools/Harness.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace minijit {

struct RandomRunOptions {
  uint64_t first = 1;        ///< the first seed
  uint64_t count = 100;      ///< graphs to try
  uint64_t stride = 1;       ///< seeds first, first + stride, ... (P processes: stride P)
  double budgetSeconds = 0;  ///< stop starting graphs after this long; 0: no limit
  unsigned threads = 0;      ///< NVRTC threads per compile (CompileOptions::threads)
  /// Graphs whose kernels (fused and unfused) go through NVRTC in one call
  /// (BatchCompile.h); 0: kernel by kernel through the kernel cache, as the
  /// product compiles.
  unsigned batch = 4;
  bool verbose = false;      ///< print each mismatch's graph and kernels
  bool printGraphs = false;  ///< print each graph as text before checking it
  bool stopAtFirst = false;  ///< stop after the batch with the first finding (mutation runs)
  /// When set, each flagged graph is written there as rg<seed>.mj, to reproduce
  /// (`minijit run FILE --check --seed SEED`) and reduce (`minijit reduce`).
  std::string dumpDir;
  RandomGraphOptions graph;  ///< the generator's
  /// Named sizes (issue 17): each graph's first argument's leading size is
  /// named B (nameDimension) and the graph is checked bound at three sizes,
  /// its own, twice it plus one and 1, each a graph of the run; a graph
  /// that cannot be named is checked as it is.
  bool namedSizes = false;
  /// Without a GPU: also evaluate each program's CPU reference (with its
  /// bounds), to measure what the check costs besides compiling.
  bool referenceWithoutGpu = false;
  /// Threads in this process, each checking every `workers`-th graph of the
  /// range on the one device (one CUDA context, where processes would each
  /// have their own); 1: the calling thread alone.
  unsigned workers = 1;
};

/// One graph that did not pass.
struct RandomFinding {
  uint64_t seed = 0;
  bool fused = true;
  std::string what; ///< the failed comparisons, or the error's message
  bool error = false; ///< compile or run threw, rather than a wrong value
};

struct RandomRunSummary {
  uint64_t graphs = 0;      ///< graphs tried (each fused and unfused)
  uint64_t nextSeed = 0;    ///< the next seed it would have tried (where a run stopped by its budget resumes)
  std::vector<RandomFinding> findings;
  uint64_t kernelsCompiled = 0, kernelsCached = 0;
  double seconds = 0;
  /// Where the seconds went: generating and compiling (NVRTC), the runs on
  /// the device (loading, copies, kernels), the CPU reference with its bounds.
  double compileSeconds = 0, runSeconds = 0, referenceSeconds = 0;
  bool ranOnGpu = false;

  /// The distinct seeds of the findings, in order.
  std::vector<uint64_t> seeds() const;
  /// One line, the script's to parse: "summary first=1 next=501 graphs=500 ...".
  std::string line(uint64_t first) const;
};

/// Runs the graphs of `options` on `gpu` (null: compile only), writing one
/// line per finding to `log` as it happens.
RandomRunSummary runRandomGraphs(const RandomRunOptions &options, const Device *gpu,
                                 llvm::raw_ostream &log);

} // namespace minijit
