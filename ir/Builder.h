//===- ir/Builder.h - build graphs that read like the math -----*- C++ -*-===//
// Operators and functions over Tensor handles, so a GeLU is written
//   auto y = 0.5f * x * (1.0f + tanh(0.79788456f * (x + 0.044715f * x * x * x)));
// A plain number next to a tensor becomes a literal of the tensor's dtype.
// Every function throws GraphError for operands that do not fit (see Ops.def).
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <initializer_list>
#include <vector>

namespace minijit {

/// The value `v` as a literal of t's dtype, in t's graph.
Tensor scalarLike(const Tensor &t, double v);

Tensor unary(OpKind op, const Tensor &x);
Tensor binary(OpKind op, const Tensor &a, const Tensor &b);

Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator+(const Tensor &a, double b);
Tensor operator-(const Tensor &a, double b);
Tensor operator*(const Tensor &a, double b);
Tensor operator/(const Tensor &a, double b);
Tensor operator+(double a, const Tensor &b);
Tensor operator-(double a, const Tensor &b);
Tensor operator*(double a, const Tensor &b);
Tensor operator/(double a, const Tensor &b);
Tensor operator-(const Tensor &x);

Tensor neg(const Tensor &x);
Tensor abs(const Tensor &x);
Tensor exp(const Tensor &x);
Tensor exp2(const Tensor &x);
Tensor log(const Tensor &x);
Tensor log2(const Tensor &x);
Tensor sqrt(const Tensor &x);
Tensor rsqrt(const Tensor &x);
Tensor sin(const Tensor &x);
Tensor cos(const Tensor &x);
Tensor tanh(const Tensor &x);
Tensor sigmoid(const Tensor &x);
Tensor erf(const Tensor &x);
Tensor relu(const Tensor &x);
Tensor recip(const Tensor &x);
Tensor floor(const Tensor &x);
Tensor ceil(const Tensor &x);
Tensor logicalNot(const Tensor &x);

Tensor pow(const Tensor &a, const Tensor &b);
Tensor pow(const Tensor &a, double b);
Tensor maximum(const Tensor &a, const Tensor &b);
Tensor maximum(const Tensor &a, double b);
Tensor minimum(const Tensor &a, const Tensor &b);
Tensor minimum(const Tensor &a, double b);
Tensor eq(const Tensor &a, const Tensor &b);
Tensor ne(const Tensor &a, const Tensor &b);
Tensor lt(const Tensor &a, const Tensor &b);
Tensor le(const Tensor &a, const Tensor &b);
Tensor gt(const Tensor &a, const Tensor &b);
Tensor ge(const Tensor &a, const Tensor &b);
Tensor logicalAnd(const Tensor &a, const Tensor &b);
Tensor logicalOr(const Tensor &a, const Tensor &b);

/// where(cond, a, b); a number in place of a or b takes the other's dtype.
Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b);
Tensor where(const Tensor &cond, const Tensor &a, double b);
Tensor where(const Tensor &cond, double a, const Tensor &b);

/// Reductions. An empty `axes` reduces every axis; negative axes count from the end.
Tensor reduce(OpKind op, const Tensor &x, llvm::ArrayRef<int64_t> axes = {}, bool keepdim = false);
Tensor sum(const Tensor &x, llvm::ArrayRef<int64_t> axes = {}, bool keepdim = false);
Tensor mean(const Tensor &x, llvm::ArrayRef<int64_t> axes = {}, bool keepdim = false);
Tensor max(const Tensor &x, llvm::ArrayRef<int64_t> axes = {}, bool keepdim = false);
Tensor min(const Tensor &x, llvm::ArrayRef<int64_t> axes = {}, bool keepdim = false);
Tensor prod(const Tensor &x, llvm::ArrayRef<int64_t> axes = {}, bool keepdim = false);
inline Tensor sum(const Tensor &x, std::initializer_list<int64_t> axes, bool keepdim = false) {
  return sum(x, llvm::ArrayRef<int64_t>(axes), keepdim);
}
inline Tensor mean(const Tensor &x, std::initializer_list<int64_t> axes, bool keepdim = false) {
  return mean(x, llvm::ArrayRef<int64_t>(axes), keepdim);
}
inline Tensor max(const Tensor &x, std::initializer_list<int64_t> axes, bool keepdim = false) {
  return max(x, llvm::ArrayRef<int64_t>(axes), keepdim);
}
inline Tensor min(const Tensor &x, std::initializer_list<int64_t> axes, bool keepdim = false) {
  return min(x, llvm::ArrayRef<int64_t>(axes), keepdim);
}
inline Tensor prod(const Tensor &x, std::initializer_list<int64_t> axes, bool keepdim = false) {
  return prod(x, llvm::ArrayRef<int64_t>(axes), keepdim);
}

Tensor matmul(const Tensor &a, const Tensor &b);

/// d loss / d w (a grad node, expanded by ir/Autodiff.h when the graph is
/// compiled or evaluated): loss has one element, w is any float value of the
/// same graph; the result has w's shape and dtype.
Tensor grad(const Tensor &loss, const Tensor &w);
/// The gradients of `loss` with respect to each of `ws`, in order (one
/// reverse sweep computes them all).
std::vector<Tensor> grad(const Tensor &loss, llvm::ArrayRef<Tensor> ws);
/// The vector-Jacobian product dy . (d y / d x): the gradient of
/// sum(y * dy) with respect to x, for a y of any shape.
Tensor vjp(const Tensor &y, const Tensor &x, const Tensor &dy);

} // namespace minijit
