//===- ir/Autodiff.h - reverse-mode autodiff, graph to graph ---*- C++ -*-===//
// The first stage of the pipeline: every `grad` and `vjp` of a graph becomes
// ordinary nodes, built by one reverse sweep per loss from the gradient rule
// of each op (Ops.def's Gradient column says which ops have one). The result
// is a graph like any other, which the compiler simplifies, fuses and
// compiles, and the CPU reference evaluates.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Error.h"
#include "ir/Graph.h"

namespace minijit {

/// A GraphError met while expanding one grad or vjp (the expanded graph
/// would pass a limit of ir/Limits.h, say its depth): the message names the
/// derivative, and derivative() is its node in the graph given, so that the
/// parser can point at its statement.
class ExpansionError : public GraphError {
public:
  ExpansionError(ValueId derivative, const std::string &msg)
      : GraphError(msg), Derivative(derivative) {}
  ValueId derivative() const { return Derivative; }

private:
  ValueId Derivative;
};

/// True when `g` holds a grad or vjp node.
bool hasDerivatives(const Graph &g);

/// A copy of `g` in which every grad and vjp is replaced by the nodes that
/// compute it. All grads of one loss (and all vjps of one output and
/// cotangent) share one reverse sweep. Forward values keep their names; the
/// accumulated gradient of a value %v is named %v.grad where that name is
/// free, and each grad's result keeps the grad's own name. A value the loss
/// does not depend on has a zero gradient. Derivatives of derivatives work:
/// the sweep differentiates the nodes an earlier sweep made. Returns a plain
/// copy when `g` has no derivatives; throws ExpansionError when the result
/// would exceed the limits of ir/Limits.h.
Graph expandAutodiff(const Graph &g);

} // namespace minijit
