//===- compiler/fusion/Fusion.h - group the graph into kernels --------*- C++ -*-===//
// Decides which values are stored in memory and which kernel computes what.
// With fusion off every compute op is its own kernel (views stay free); with
// fusion on, elementwise chains, reduction prologues and epilogues (broadcast
// back over the row too) and several reductions over the same rows share one
// kernel, and cheap producers are recomputed rather than stored.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/fusion/Kernel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace minijit {

/// Checks a plan that fusion formed: nullopt when every kernel can be built as
/// planned, or the value one of them needs stored first. Lowering is the check
/// the compiler passes (compiler/lower/FuseAndLower.h): fusion depends on no
/// later stage.
using PlanCheck = llvm::function_ref<std::optional<StoreRequest>(const FusionPlan &)>;

/// Groups `g` into kernels, storing values until fusion's own rules and
/// `check` accept the plan. Does not modify `g`. Throws CompileError for an op
/// no kernel template handles yet.
FusionPlan formPlan(const Graph &g, bool fusion, PlanCheck check);

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
