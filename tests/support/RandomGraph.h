//===- tests/support/RandomGraph.h - random graphs from a seed -*- C++ -*-===//
// Builds random but well-conditioned graphs (elementwise chains, reductions,
// broadcasts back over rows, views, several outputs) for differential tests:
// fused and unfused GPU runs must agree with the CPU reference. The same seed
// always gives the same graph, so a failure is reproduced by its seed.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>

namespace minijit {

struct RandomGraphOptions {
  int ops = 12;          ///< operations to add
  bool allowHalf = true; ///< some graphs in f16/bf16
  int64_t maxElements = 1 << 16;
};

/// A random graph named `rg<seed>`. Values stay bounded (tanh, sigmoid, sin
/// and cos keep them in range; no exp, log or division), so a mismatch means
/// a wrong kernel, not an ill-conditioned one.
Graph randomGraph(uint64_t seed, const RandomGraphOptions &options = {});

} // namespace minijit
