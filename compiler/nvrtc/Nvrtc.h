//===- compiler/nvrtc/Nvrtc.h - compile CUDA C++ with NVRTC ----------*- C++ -*-===//
// libnvrtc is loaded with dlopen on first use, not linked: a process that links
// it pays for its start-up (docs/PERFORMANCE_LOG.md, "Figures once quoted in
// code comments"), and cache hits and CPU-only tools should not.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Program.h"
#include "runtime/Target.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace minijit {

struct NvrtcOutput {
  std::string cubin, ptx, log;
  KernelResources resources;
};

/// Compiles `source` (one translation unit) for `target` (--gpu-architecture
/// with its name(), e.g. sm_90a) with the ptxas resource report and
/// `options`. Throws CompileError naming `kernel`, with NVRTC's log and the
/// numbered source.
NvrtcOutput compileWithNvrtc(const std::string &source, const std::string &kernel,
                             const Target &target, llvm::ArrayRef<std::string> options);

/// "13.0"; throws CompileError when libnvrtc cannot be loaded.
std::string nvrtcVersion();

/// The real architectures this NVRTC compiles for, e.g. {75, 80, 86, 89, 90, ...}.
std::vector<int> nvrtcSupportedArchs();

/// Checks that this NVRTC compiles for `target` and that minijit's kernels
/// run there (sm_80 or newer); throws CompileError ("--arch=sm_75 is not a
/// target minijit can compile for (...)") naming the supported ones
/// otherwise.
void checkTarget(const Target &target);

/// True once libnvrtc has been loaded by this process.
bool nvrtcLoaded();

/// The file libnvrtc was loaded from (loads it if needed).
std::string nvrtcLibraryPath();

/// Reads registers, static shared memory, stack and spills from ptxas's
/// verbose log (the first kernel in it).
KernelResources parsePtxasReport(const std::string &log);

/// `source` with line numbers, for error messages.
std::string numberedSource(const std::string &source);

} // namespace minijit
