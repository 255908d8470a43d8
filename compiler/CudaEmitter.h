//===- compiler/CudaEmitter.h - readable CUDA C++ from a kernel -*- C++ -*-===//
// Turns a lowered kernel and its schedule into CUDA C++: one assignment per
// value, named after the IR value, with a comment naming the op; a header
// comment with what the kernel holds, reads, writes and how it is scheduled.
// The output is deterministic and needs no headers (NVRTC compiles it fast).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Fusion.h"
#include "compiler/Lowering.h"
#include "compiler/Schedule.h"

#include <string>

namespace minijit {

struct EmittedKernel {
  std::string name;   ///< the extern "C" entry point
  std::string source; ///< the kernel alone; compile it after cudaPreamble()
};

/// Helpers every kernel uses (16-bit conversions, NaN-aware min/max, vector
/// loads, warp and block reductions). Plain CUDA, no includes.
const std::string &cudaPreamble();

/// A name that says the schedule and the ops: poi_mul_tanh_add_k1,
/// softmax_row_k0, red_sum_col_k2.
std::string kernelName(const Graph &g, const FusionPlan &plan, const LoweredKernel &k,
                       const Schedule &s);

EmittedKernel emitKernel(const Graph &g, const FusionPlan &plan, const LoweredKernel &k,
                         const Schedule &s, const std::string &name);

} // namespace minijit
