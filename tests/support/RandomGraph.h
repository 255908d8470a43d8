//===- tests/support/RandomGraph.h - random graphs from a seed -*- C++ -*-===//
// Builds random graphs for differential tests (fused and unfused GPU runs must
// agree with the CPU reference within its error bounds): elementwise chains
// with broadcasts in every position, reductions over any axes with keepdim
// either way, permutes of every rank, reshapes that split and merge axes,
// matmuls with epilogues, casts through f16/bf16, integer and boolean steps,
// several outputs; f32, f16 or bf16 graphs. The same seed always gives the
// same graph, so a failure is reproduced by its seed. RandomGraph.cpp says
// how to add an op.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <optional>
#include <string>

namespace minijit {

struct RandomGraphOptions {
  int ops = 12;          ///< steps to take (a step adds one to a few ops)
  /// A quarter of the graphs in f16 or bf16 (the error bounds of
  /// ir/ErrorBound.h judge their cancellations; the old tolerance could not).
  bool allowHalf = true;
  /// Steps with slice, pad, concat, take, take_along_axis, argmax/argmin,
  /// cumsum/cumprod and iota (minijit_random_run --movement). The compiler
  /// bugs they found are fixed (tests/lit/regression_*.mj), but off by
  /// default: with them, the error bounds of a 16-bit graph took a rounding
  /// as certain that was not (seed 1052 of ErrorBoundRandom's half graphs).
  bool dataMovement = false;
  int64_t maxElements = 1 << 16;
};

/// A random graph named `rg<seed>`. Values stay bounded (tanh, sigmoid, sin
/// and cos keep them in range; exp of a tanh, divisions and square roots
/// away from their poles), so a mismatch means a wrong kernel, not an
/// ill-conditioned one.
Graph randomGraph(uint64_t seed, const RandomGraphOptions &options = {});

/// `g` with each dimension of `size` in its arguments' types and in its
/// shape attributes (reshapes, broadcasts, iotas) made the named size
/// `name`, and each multiple k * size made `k*name`: one graph for every
/// size of `name` (issue 17). nullopt when that graph does not build: a
/// dimension equal to `size` only by chance, an axis sliced, padded or
/// concatenated along, or no dimension of that size in the arguments.
std::optional<Graph> nameDimension(const Graph &g, int64_t size, const std::string &name);

} // namespace minijit
