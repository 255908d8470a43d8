//===- compiler/lower/CudaNames.h - IR names as C++ identifiers -*- C++ -*-===//
// The generated CUDA names values after the IR: these are the rules that make
// an IR name a valid identifier that clashes with nothing the kernel declares.
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>

namespace minijit {

/// A C++ identifier for an IR name: '.' becomes '_', a leading digit gets a
/// 'v', and names the preamble owns (mj_*, MJ_*) or reserved ones (__*) get
/// 'v_' in front. The result may still be a keyword; see isReservedName.
std::string cudaIdentifier(llvm::StringRef irName);
/// C++ and CUDA keywords, CUDA built-ins, and the emitter's own locals.
bool isReservedName(llvm::StringRef name);

} // namespace minijit
