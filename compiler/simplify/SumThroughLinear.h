//===- compiler/simplify/SumThroughLinear.h - sums moved onto products -*- C++ -*-===//
// A reassociating rewrite that runs ahead of the matmul rewrites: a sum (or
// mean) over a product's last or second-to-last axis, reached through
// linear elementwise ops, is moved onto the product, and the ops are applied
// to the sum instead:
//   sum(P / c + b - s, -1) = sum(P, -1) / c + sum(b, -1) - sum(s, -1)
// where c is constant along the summed axes (a scalar, a per-row factor) and
// b, s are any terms (a term constant along them is its value times the
// count). The sum of the product then meets MatmulRewrites' sum-of-product
// rewrite, which turns it into a matrix-vector product: a 1024 x 8192 x 8192
// product divided, summed and scaled (KernelBench level 2, problem 14) reads
// its operands once instead of running the whole product.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <string>
#include <vector>

namespace minijit {

struct SumThroughLinearResult {
  Graph graph;
  /// The IR names of the sums moved onto a product (for --emit=fused).
  std::vector<std::string> moved;
};

/// Moves each f32 sum or mean whose operand is a product reached through
/// single-use linear elementwise ops (add, sub, neg, and mul or div by a
/// factor constant along the summed axes) onto the product, as the file
/// comment says. Only sums over the product's last or second-to-last axis
/// (possibly with other axes) are moved: elsewhere nothing is gained. The
/// graph keeps its values' names (the sum's on its new last node); the ops
/// left without a use are dropped.
SumThroughLinearResult moveSumsOntoProducts(const Graph &g);

} // namespace minijit
