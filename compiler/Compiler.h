//===- compiler/Compiler.h - graph in, compiled kernels out ----*- C++ -*-===//
// The pipeline in one call: simplify, fuse, lower, schedule, emit CUDA,
// compile with NVRTC (through the kernel cache, kernels in parallel) and
// assemble a runtime Program. Every stage's text is kept for inspection.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/CudaEmitter.h"
#include "compiler/Fusion.h"
#include "compiler/KernelCache.h"
#include "compiler/Lowering.h"
#include "compiler/Schedule.h"
#include "runtime/DeviceProperties.h"
#include "runtime/Program.h"

#include <string>
#include <vector>

namespace minijit {

struct CompileOptions {
  bool fusion = true;
  /// Schedules are sized for this device; without a GPU, an H200.
  DeviceProperties device = DeviceProperties::assumedH200();
  /// NVRTC target; empty: the device's (sm_90 for the H200).
  std::string arch;
  /// False: stop after emitting CUDA (no NVRTC), for graph/fused/cuda dumps.
  bool compileKernels = true;
  /// Where compiled kernels are kept; null: KernelCache::global().
  KernelCache *cache = nullptr;
  /// NVRTC compiles in parallel; 0: one thread per core.
  unsigned threads = 0;
  /// Hand-set schedule parameters for experiments ("tpr=64,vec=4"; see
  /// chooseSchedule). Empty: $MINIJIT_SCHEDULE, if set.
  std::string scheduleOverrides;
  /// Extra NVRTC options (-lineinfo keeps source lines for Nsight Compute).
  std::vector<std::string> nvrtcOptions = {"-lineinfo"};
};

struct StageTime {
  std::string stage;
  double ms;
};

/// Everything the compiler produced for one graph.
struct CompiledGraph {
  Graph graph{"main"};           ///< the graph after simplification
  FusionPlan plan;
  std::vector<LoweredKernel> lowered;
  std::vector<Schedule> schedules;
  std::vector<std::string> names;  ///< kernel entry points
  std::vector<std::string> cuda;   ///< each kernel's source, without the preamble
  std::vector<CachedKernel::From> origin; ///< where each CUBIN came from
  Program program;               ///< empty kernels' cubin when compileKernels is false
  std::vector<StageTime> timings;

  /// --emit=graph: the simplified graph in the text format.
  std::string graphText() const;
  /// --emit=fused: kernels, their ops, schedules and boundary reasons.
  std::string fusedText() const;
  /// --emit=cuda: the preamble once, then every kernel.
  std::string cudaText() const;
  /// --emit=ptx.
  std::string ptxText() const;
  /// --emit=resources: registers, spills, shared memory, launch geometry.
  std::string resourcesText() const;
  /// --emit=dot: the graph with one colour per kernel (render with Graphviz).
  std::string dotText() const;
  /// Per-stage times and where each kernel came from.
  std::string timingText() const;
};

/// Compiles `g`. Throws GraphError for a graph that does not verify and
/// CompileError for what the code generator or NVRTC rejects.
CompiledGraph compileGraph(const Graph &g, const CompileOptions &options = {});

} // namespace minijit
