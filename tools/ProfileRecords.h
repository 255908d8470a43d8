//===- tools/ProfileRecords.h - a compiled graph's kernels, described -*- C++ -*-===//
// The one place that reads the compiler's per-kernel data (schedules, the
// matmul of a kernel, the fusion plan's reasons) for the profile JSON:
// `minijit run|compare --profile-json` and the benchmark suite write what
// describeKernels returns beside what the profiler measured.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Compiler.h"
#include "runtime/ProfileJson.h"
#include "runtime/ProfileJsonValues.h"

#include <string>
#include <vector>

namespace minijit {

/// Per kernel of `c`, in launch order: its template, its schedule's line,
/// its FLOPs by unit and dtype (a tensor-core matmul's 2*M*N*K on the tensor
/// cores in its operands' dtype, everything else on the CUDA cores in f32,
/// where f16/bf16 arithmetic happens too) and its fusion reasons.
std::vector<KernelDescription> describeKernels(const CompiledGraph &c);

/// `profile` of `c` as a run labelled "fused" or "unfused" by `c`'s plan.
ProfiledRun profiledRun(const CompiledGraph &c, Profile profile);

} // namespace minijit
