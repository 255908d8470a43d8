//===- compiler/lower/LoweredPrinter.h - the lowered kernel as text -*- C++ -*-===//
// Prints a LoweredKernel, the middle of the pipeline where views have become
// index arithmetic: its parameters, each value (a load at its offset, a
// literal, an op of earlier values, a reduction's or the product's result),
// the reductions, the product's operand strides and the stores. What
// `minijit compile --emit=lowered` shows, so FileCheck tests can look at it.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/Lowering.h"

#include "llvm/Support/raw_ostream.h"

#include <string_view>

namespace minijit {

/// Writes `k`, the kernel named `name`, as text. Values are numbered `vN` in
/// the order the kernel computes them, offsets in the kernel's index
/// variables (`i` pointwise; `row` and `k` for rows; `b`, `m`, `n`, `kk` for
/// a product).
void printLoweredKernel(llvm::raw_ostream &os, const LoweredKernel &k, std::string_view name);

} // namespace minijit
