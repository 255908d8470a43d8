//===- compiler/lower/FuseAndLower.h - fusion with lowering as its check -*- C++ -*-===//
// Fusion forms a plan; lowering each kernel may find a value that must be
// stored first (a reduction read at another row's index, ...); fusion stores it
// and forms the plan again. This file runs that loop and keeps the kernels
// lowered in the round that settled the plan.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/fusion/Fusion.h"
#include "compiler/lower/Lowering.h"

#include <vector>

namespace minijit {

/// The plan and its kernels, lowered in the round that settled the plan.
struct FusedGraph {
  FusionPlan plan;
  std::vector<LoweredKernel> kernels; ///< kernels[k] is plan.kernels[k] lowered
};

/// Groups `g` into kernels and lowers them. Does not modify `g`. Throws
/// CompileError for an op no kernel template handles yet.
FusedGraph fuseAndLower(const Graph &g, bool fusion, const LoweringOptions &options = {});

/// fuseAndLower's plan alone.
FusionPlan fuseGraph(const Graph &g, bool fusion);

} // namespace minijit
