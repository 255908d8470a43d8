//===- compiler/Simplify.h - graph clean-up before fusion ------*- C++ -*-===//
// Constant folding, common subexpressions, dead values, algebraic identities
// (x*1, x+0, x/1, casts and views that change nothing, reductions over size-1
// axes) and `mean` rewritten as sum times 1/n.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

namespace minijit {

/// Returns the simplified graph; `g` is not modified. `changed` (if given) is
/// set to whether the result differs from `g`.
Graph simplifyGraph(const Graph &g, bool *changed = nullptr);

} // namespace minijit
