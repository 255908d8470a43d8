//===- ir/Bind.h - giving named dimensions their sizes ----------*- C++ -*-===//
// A graph whose arguments have named dimensions (`%x: f32[B, 1024]`) is
// bound to sizes before it is evaluated or compiled: from the shapes of the
// inputs of a run, or from sizes given by name (`--dim B=4096`). The bound
// graph keeps the names beside the sizes, so the compiler can make them
// kernel parameters and compile one kernel for many sizes.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <span>
#include <string>
#include <vector>

namespace minijit {

/// The names of named dimensions anywhere in `g` (its arguments' types and
/// the shapes of its reshapes, broadcasts and iotas), sorted.
std::vector<std::string> dimNames(const Graph &g);

/// True when some named dimension of `g` has no size yet.
bool hasUnboundDims(const Graph &g);

/// `g` with every named dimension given its size from `sizes` (names the
/// graph does not use are ignored). Throws GraphError naming a dimension
/// `sizes` lacks, a size below 1, or a shape that grows past the limits.
Graph bindDims(const Graph &g, const DimBindings &sizes);

/// The sizes the inputs' shapes give the named dimensions of `g`'s
/// arguments, one shape per argument in order. Throws GraphError for a
/// wrong count or rank, a number that differs, and a name two inputs give
/// different sizes ("input %y: dimension 0 is B, which is 4096 (from input
/// %x), but input %y has 4095").
DimBindings bindingsFromInputs(const Graph &g, std::span<const Shape> shapes);

/// Parses "B=4096" (a --dim argument) into `sizes`; returns an error
/// message, empty on success.
std::string parseDimBinding(std::string_view text, DimBindings &sizes);

} // namespace minijit
