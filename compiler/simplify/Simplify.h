//===- compiler/simplify/Simplify.h - graph clean-up before fusion ------*- C++ -*-===//
// Values of no elements first (compiler/simplify/EmptyValues.h), then
// constant folding, common subexpressions, dead values, algebraic identities
// (x*1, x+0, x/1, casts and views that change nothing, reductions over size-1
// axes). `mean` stays one reduction: kernels compute it as the sum times 1/n
// when they finish it, so an f16 mean never stores an f16 sum (which would
// overflow) and an eager run spends one kernel on it, as PyTorch does. An f32
// sum or mean over an outer axis of 2 to 8 elements is the adds of its slices
// (a pointwise kernel reads them in whole vectors). Then slices move onto what
// they read (compiler/simplify/SliceSinking.h) and the result is simplified
// once more.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"

namespace minijit {

/// Returns the simplified graph; `g` is not modified. `changed` (if given) is
/// set to whether the result differs from `g`.
Graph simplifyGraph(const Graph &g, bool *changed = nullptr);

/// The outputs and in-place updates of `from`, mapped into `to` by `map`
/// (a value of `from` to its copy in `to`): what every pass that copies a
/// graph node by node ends with. An update whose value became the argument
/// itself changes nothing and becomes a plain output.
void copyOutputs(const Graph &from, llvm::ArrayRef<ValueId> map, Graph &to);

/// A copy of `g` without the values no output needs (its inputs stay), and
/// no other change (rewrites can leave some behind: x*1 makes the 1 and the
/// mul dead).
Graph withoutDeadValues(const Graph &g);

} // namespace minijit
