//===- compiler/CompileDetail.h - what the compiler keeps of a graph -*- C++ -*-===//
// The records behind a CompiledGraph that its public fields do not show: the
// fusion plan and, per kernel, what each back-end stage made of it. The CLI,
// the tests, the samples and the benchmarks read them; the header is not
// installed, since it needs the compiler's internal headers (and LLVM's).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Compiler.h"
#include "compiler/cache/KernelCache.h"
#include "compiler/emit/CudaEmitter.h"
#include "compiler/lower/FuseAndLower.h"
#include "compiler/lower/Lowering.h"
#include "compiler/schedule/Schedule.h"
#include "compiler/templates/KernelTemplate.h"
#include "compiler/tune/TuningDatabase.h"

#include <optional>
#include <string>
#include <vector>

namespace minijit {

/// One kernel as it passes through the back end: fusion gives its group and
/// lowered body, scheduling its schedule and name, the emitter its CUDA,
/// NVRTC (or the cache) its image and resources.
struct CompiledKernel {
  KernelGroup group;     ///< the plan's kernel (FusionPlan::kernels[lowered.index])
  /// The body as lowering made it, before scheduling rewrote it (an online
  /// sum, sumExpsOnline): what a search schedules anew (scheduleKernel).
  LoweredKernel body;
  LoweredKernel lowered; ///< the body as scheduled and emitted
  Schedule schedule;
  /// Set when the schedule came from the tuning database: what the search found.
  std::optional<TuningEntry> tuned;
  std::string name;      ///< the extern "C" entry point
  /// What its image compiles for: CompiledGraph::target, or the template's
  /// variant of it (KernelTemplate::compileTarget; ProgramKernel::arch
  /// spells it).
  Target target;
  std::string cuda;      ///< the source, without the preamble
  NvrtcOutput image;     ///< CUBIN, PTX, log and resources
  CachedKernel::From origin = CachedKernel::From::Compiled; ///< where the image came from
};

/// CompiledGraph::detail: empty before Stage::Fused ran.
struct CompileDetail {
  FusionPlan plan;
  std::vector<CompiledKernel> kernels; ///< in launch order
};

} // namespace minijit
