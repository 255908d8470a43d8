//===- tools/Reduce.h - shrink a graph while a condition holds --*- C++ -*-===//
// The reducer behind `minijit reduce`: given a graph that shows a problem (a
// mismatch, an error) and a test that says whether a candidate still shows
// it, greedily removes outputs, bypasses ops (a use of an op is replaced by
// one of its operands of the same type), returns an output's operand in its
// place, makes a size smaller wherever it occurs (reshapes follow), replaces
// an op by a plainer one (a float unary op by neg, a binary one by add), and
// drops what no output needs, until no step keeps the condition. What
// remains is a small regression test.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <functional>
#include <optional>
#include <string>

namespace minijit {

struct ReduceStats {
  unsigned tries = 0;    ///< candidates tested
  unsigned accepted = 0; ///< candidates that kept the condition
};

/// The smallest graph the greedy steps reach from `g` for which `interesting`
/// stays true; `g` itself must be interesting (the caller checks). Every
/// candidate is a valid graph: a bypassed op is replaced by an operand of its
/// own dtype and shape, and a resize that would not verify is not tried.
/// Names of the values that remain are kept.
Graph reduceGraph(const Graph &g, const std::function<bool(const Graph &)> &interesting,
                  ReduceStats *stats = nullptr);

/// reduceGraph with the test a shell command: `until`, with each `{}` replaced
/// by the path of the candidate written as text (appended when there is no
/// `{}`), keeps a candidate when it exits 0. nullopt when it does not exit 0
/// on `g` itself. Throws GraphError when the scratch file cannot be written.
std::optional<Graph> reduceWithCommand(const Graph &g, const std::string &until,
                                       ReduceStats *stats = nullptr);

/// The number of ops of `g` (values other than arguments and literals).
unsigned countOps(const Graph &g);

} // namespace minijit
