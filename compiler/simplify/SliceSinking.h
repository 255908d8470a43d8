//===- compiler/simplify/SliceSinking.h - slices moved toward the inputs -*- C++ -*-===//
// A slice of a value that nothing else reads asks for part of it; the op that
// makes the value can compute that part alone, from slices of its operands:
//   slice(exp(x) * y, a)       = exp(slice(x, a)) * slice(y, a)
//   slice(sum(x, b), a)        = sum(slice(x, a), b)          (a kept axis)
//   slice(A @ B, rows)         = slice(A, rows) @ B
//   slice(permute(x, p), a)    = permute(slice(x, p[a]), p)
// and on down the ops the slice reaches. The values are the same, computed the
// same way, for fewer elements: Mamba2's `new_states[:, -1]` keeps one of
// three rows of the last product, and ViT's `x[:, 0]` one token of 197.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <optional>

namespace minijit {

/// `g` with each slice moved onto the operands of the op it reads, as the
/// file comment says, where that op's value is read by the slice alone (not
/// an output) and is elementwise, a cast, a permute, a broadcast, a
/// reshape that keeps the sliced axis whole, a reduction over other axes, a
/// scan along another axis (or the prefix of a forward scan, the suffix of a
/// reversed one), a concat along another axis, a `full`, or a product sliced
/// along a batch axis, its rows or its columns with step 1. Random ops and
/// gathers keep their slices (a random number belongs to its position), and
/// so does every shape with named sizes. nullopt when no slice moved; the
/// result keeps the values it replaces, for withoutDeadValues to drop.
std::optional<Graph> sinkSlices(const Graph &g);

} // namespace minijit
