//===- ir/Verifier.h - whole-graph checks ----------------------*- C++ -*-===//
// Graph::add checks each node as it is added; the verifier re-checks a whole
// graph (after a pass rewrote it, say): operands before uses, types that match
// what inference gives, at least one output.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

namespace minijit {

/// Throws GraphError naming the first problem found.
void verifyGraph(const Graph &g);

} // namespace minijit
