//===- tests/support/BatchCompile.h - many programs' kernels in one NVRTC call -*- C++ -*-===//
// NVRTC spends about 24 ms of a 32 ms kernel compile on fixed work (the
// preamble, ptxas start-up; measured on the development machine), so the
// long random run compiles the kernels of several programs as one
// translation unit: each kernel renamed to be unique, all sharing one CUBIN.
// This bypasses the kernel cache (whose entries hold one kernel each) and is
// for test runs only; the product compiles kernel by kernel.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Compiler.h"

#include <string>
#include <vector>

namespace minijit {

/// Compiles the kernels of `programs` (compiled with compileKernels = false,
/// all for one arch) in one NVRTC call, renaming kernel k of program p to
/// NAME_pP so names are unique, and gives every kernel the shared CUBIN and
/// PTX. Throws CompileError as compileWithNvrtc does (the caller can then
/// compile the programs one by one to find the culprit).
void compileTogether(const std::vector<CompiledGraph *> &programs,
                     const std::vector<std::string> &nvrtcOptions = {"-lineinfo"});

/// `text` with every whole-identifier occurrence of `from` replaced by `to`.
std::string renameIdentifier(const std::string &text, const std::string &from,
                             const std::string &to);

} // namespace minijit
