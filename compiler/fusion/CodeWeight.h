//===- compiler/fusion/CodeWeight.h - what a kernel costs NVRTC --*- C++ -*-===//
// NVRTC's time grows with a kernel's body, and faster than linearly. Each op
// has a weight, its share of NVRTC's time (a libm-style sin or cos expands to
// far more code than an add), and fusion splits a kernel whose weight passes
// kMaxKernelWeight (FusionReasonKind::KernelTooLarge). docs/HARDENING.md
// ("The kernel weight limit") gives the measurements behind the figures.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Op.h"

#include <cstdint>

namespace minijit {

/// The most weight one kernel's ops may have (16 chained sin, 128 tanh, 4096
/// adds): a kernel NVRTC compiles in about a second.
constexpr int64_t kMaxKernelWeight = 4096;

/// The weight of one op of kind `op` in a kernel body: about its NVRTC time
/// in quarter milliseconds (an add or a view 1, exp 8, tanh 32, sin 256), the
/// Weight column of ir/Ops.def.
int64_t codeWeight(OpKind op);

} // namespace minijit
