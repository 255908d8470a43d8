//===- samples/Sample.h - the lecture's comparison, one function -*- C++ -*-===//
// What every sample does: show the graph and the CUDA minijit generates for
// it, then (when a GPU is there) run it eagerly (one kernel per op), fused,
// and as a hand-written CUDA kernel compiled by minijit's NVRTC and launched
// by its runtime; check all three against the CPU reference and print where
// the time goes.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <string>

namespace minijit {

/// A hand-written kernel for the same function: its source, entry point and
/// launch geometry. Its parameters are the graph's inputs, then its output.
struct HandWritten {
  std::string source;
  std::string entry;
  unsigned block = 256;
  int64_t grid = 1;
};

/// Runs the sample and returns the process exit status (0, or 1 when a
/// result differs from the reference or the GPU fails).
int runSample(const std::string &title, const Graph &g, const HandWritten &hw);

} // namespace minijit
