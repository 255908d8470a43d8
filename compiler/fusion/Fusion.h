//===- compiler/fusion/Fusion.h - group the graph into kernels --------*- C++ -*-===//
// Decides which values are stored in memory and which kernel computes what.
// With fusion off every compute op is its own kernel (views stay free); with
// fusion on, elementwise chains, reduction prologues and epilogues (broadcast
// back over the row too) and several reductions over the same rows share one
// kernel, and cheap producers are recomputed rather than stored.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/fusion/Kernel.h"
#include "compiler/lower/Lowering.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace minijit {

/// The plan and its kernels, lowered in the round that settled the plan.
struct FusedGraph {
  FusionPlan plan;
  std::vector<LoweredKernel> kernels; ///< kernels[k] is plan.kernels[k] lowered
};

/// Groups `g` into kernels and lowers them. Does not modify `g`. Throws
/// CompileError for an op no kernel template handles yet.
FusedGraph fuseAndLower(const Graph &g, bool fusion);

/// fuseAndLower's plan alone.
FusionPlan fuseGraph(const Graph &g, bool fusion);

/// Extra lines the compiler adds under each kernel when printing (its name,
/// schedule). Empty entries print nothing.
struct KernelNotes {
  std::string name;
  std::string schedule;
};

/// The `--emit=fused` text: per kernel the ops it holds, what it reads and
/// writes, and why each value it reads from another kernel is stored.
void printFusionPlan(llvm::raw_ostream &os, const Graph &g, const FusionPlan &plan,
                     llvm::ArrayRef<KernelNotes> notes = {});

} // namespace minijit
