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
  /// Some graphs in f16/bf16. Off by default: a bf16 graph that subtracts
  /// nearly equal values (x - mean, say) differs from the reference by a
  /// bf16 rounding of its inputs, which no tolerance on the result captures.
  bool allowHalf = false;
  int64_t maxElements = 1 << 16;
};

/// A random graph named `rg<seed>`. Values stay bounded (tanh, sigmoid, sin
/// and cos keep them in range; no exp, log or division), so a mismatch means
/// a wrong kernel, not an ill-conditioned one.
Graph randomGraph(uint64_t seed, const RandomGraphOptions &options = {});

} // namespace minijit
