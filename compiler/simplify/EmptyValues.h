//===- compiler/simplify/EmptyValues.h - values of no elements ---*- C++ -*-===//
// A value with a dimension of 0 has no element for a kernel to compute, and
// a value computed from such values alone (a sum over an empty axis, a matmul
// with K = 0, a pad of an empty tensor) is a constant. The first step of
// simplify makes both `full` literals, so that fusion gives an empty value no
// kernel and no kernel reads one.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <optional>

namespace minijit {

/// `g` with every value of no element (not an argument) replaced by a
/// `full` of its shape and dtype, whose elements no one reads; every value
/// that has elements but reads empty operands replaced by the `full` of its
/// value there, as PyTorch defines it (sum 0, prod 1, mean NaN, matmul 0, a
/// pad its pad value); and each concat without its empty operands. The
/// values keep their names. nullopt when `g` has no empty value (nothing to
/// change); `g` is not modified.
std::optional<Graph> replaceEmptyValues(const Graph &g);

} // namespace minijit
