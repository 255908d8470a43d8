//===- tools/FusionComparison.h - one graph fused and unfused -------*- C++ -*-===//
// What `minijit compare` and the C API's mjCompare measure: the graph run
// with fusion on and off on the same inputs, each checked against the CPU
// reference, timed and, where asked, profiled.
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/Harness.h"
#include "tools/ProfileRecords.h"

#include <optional>
#include <vector>

namespace minijit {

/// One side of the comparison.
struct ComparedRun {
  bool fused = true;
  CheckedRun run;                    ///< the outputs and their check
  RunTiming timing;                  ///< median of 100 timed runs after 10 warm-ups
  std::optional<ProfiledRun> profile; ///< per kernel, when asked
};

/// Runs `g` with fusion on, then off, on `inputs` (the same for both), each
/// checked against the CPU reference (seeded by `seed`), timed, and profiled
/// against `copyBandwidth` (GB/s) when `profile` is set. Large f32 products
/// are three TF32 products in the fused run (the matmul rewrites run with
/// fusion only) unless `exactF32`, which keeps both on the CUDA cores.
std::vector<ComparedRun> compareFusion(const Graph &g, const Device &gpu, uint64_t seed,
                                       std::vector<HostTensor> &inputs, double copyBandwidth,
                                       bool profile, bool exactF32 = false);

} // namespace minijit
