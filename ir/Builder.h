//===- ir/Builder.h - build graphs that read like the math -----*- C++ -*-===//
// Operators and functions over Tensor handles, so a GeLU is written
//   auto y = 0.5f * x * (1.0f + tanh(0.79788456f * (x + 0.044715f * x * x * x)));
// A plain number next to a tensor becomes a literal of the tensor's dtype.
// Every op is a free function; the views, the cast and the reductions are
// members too.
// Every function throws GraphError for operands that do not fit (see Ops.def
// and docs/FORMAT.md), for an empty (default-constructed) Tensor and for
// tensors of two graphs; the hints in its messages are C++ (`x.cast(DType::F32)`).
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <initializer_list>
#include <span>
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
/// e^x - 1 and log(1 + x), precise near 0 (softplus, ELU, log-sigmoid).
Tensor expm1(const Tensor &x);
Tensor log1p(const Tensor &x);
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
/// x rounded to TF32's 10 bits of fraction (to nearest, ties away from zero).
Tensor roundTf32(const Tensor &x);
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

/// Comparisons with a number, which takes x's dtype: `ne(x, 0)`.
Tensor eq(const Tensor &a, double b);
Tensor ne(const Tensor &a, double b);
Tensor lt(const Tensor &a, double b);
Tensor le(const Tensor &a, double b);
Tensor gt(const Tensor &a, double b);
Tensor ge(const Tensor &a, double b);

/// Reductions. An empty `axes` reduces every axis; negative axes count from
/// the end. `axes` is any integer range (AxisList): `sum(x, {1}, true)`,
/// `sum(x, std::vector<int>{0, 2})`.
Tensor reduce(OpKind op, const Tensor &x, const AxisList &axes = {}, bool keepdim = false);
Tensor sum(const Tensor &x, const AxisList &axes = {}, bool keepdim = false);
Tensor mean(const Tensor &x, const AxisList &axes = {}, bool keepdim = false);
Tensor max(const Tensor &x, const AxisList &axes = {}, bool keepdim = false);
Tensor min(const Tensor &x, const AxisList &axes = {}, bool keepdim = false);
Tensor prod(const Tensor &x, const AxisList &axes = {}, bool keepdim = false);
/// Running sums (products) along `axis`: element i is the sum (product) of
/// elements 0..i (numpy's cumsum, cumprod); with `reverse`, of elements
/// i..n-1 (jax.lax.cumsum's reverse=True: flip, scan, flip in one).
Tensor cumsum(const Tensor &x, int64_t axis, bool reverse = false);
Tensor cumprod(const Tensor &x, int64_t axis, bool reverse = false);
/// The i32 position of the largest (smallest) element along `axis`: ties to
/// the lowest position, a NaN wins (numpy's argmax, argmin).
Tensor argmax(const Tensor &x, int64_t axis, bool keepdim = false);
Tensor argmin(const Tensor &x, int64_t axis, bool keepdim = false);

/// Views and the cast; each is also a member of Tensor (x.reshape(...)).
/// reshape keeps the row-major order and the element count; one dimension
/// may be -1, inferred from the count (`reshape(x, {B, -1})`).
Tensor reshape(const Tensor &x, const Shape &shape);
/// Output dim i is input dim perm[i].
Tensor permute(const Tensor &x, const AxisList &perm);
/// Stretches size-1 dims and adds leading dims (numpy style).
Tensor broadcast(const Tensor &x, const Shape &shape);
/// Converts to `to` (see Ops.def for rounding and saturation).
Tensor cast(const Tensor &x, DType to);
/// Swaps axes a and b (negative counts from the end): a permute.
Tensor transpose(const Tensor &x, int64_t a, int64_t b);
/// Swaps the last two axes (a matrix's transpose); throws GraphError below rank 2.
Tensor transpose(const Tensor &x);

Tensor matmul(const Tensor &a, const Tensor &b);

/// Data movement (docs/FORMAT.md has each op's rules).
/// Elements start, start+step, ... below end along `axis` (numpy's
/// x[start:end:step]), a view; negative axis, start and end count from the
/// end; start == end is an empty slice (size 0 along the axis). Throws
/// GraphError for an out-of-range slice, an end before the start, or step < 1.
Tensor slice(const Tensor &x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);
/// `before[d]` and `after[d]` elements of `value` around each axis d (one
/// entry per axis, each >= 0), a view: numpy's pad(x, ..., constant_values=v).
Tensor pad(const Tensor &x, const AxisList &before, const AxisList &after, double value = 0);
/// The elements in reverse order along each of `axes` (at least one;
/// negative counts from the end), a view: numpy's flip, torch.flip.
Tensor flip(const Tensor &x, const AxisList &axes);
/// The tensors side by side along `axis`: one dtype and rank, equal sizes on
/// every other axis (numpy's concatenate). At least one tensor.
Tensor concat(std::span<const Tensor> xs, int64_t axis);
Tensor concat(std::initializer_list<Tensor> xs, int64_t axis);
/// numpy's take: `table` read at `indices` (i32) along `axis`; the result
/// has table's dims before the axis, the indices' dims, then table's dims
/// after it. An index out of range is clamped into it (see Ops.def); into
/// an axis of size 0 none is valid, and a non-empty result is a GraphError.
Tensor take(const Tensor &table, const Tensor &indices, int64_t axis = 0);
/// numpy's take_along_axis (torch.gather): indices of x's rank pick along
/// `axis`; the other dims broadcast. Out-of-range indices are clamped.
Tensor takeAlongAxis(const Tensor &x, const Tensor &indices, int64_t axis);
/// The index along `axis` of each element of a `shape` tensor, as `dtype`
/// (numeric): iota(g, {4, 8}, 1) is each row 0..7. No operand, no memory read.
Tensor iota(Graph &g, const Shape &shape, int64_t axis, DType dtype = DType::I32);
/// A `shape` tensor whose every element is `value` (exact for i32 and bool),
/// torch.full; computed where it is read. full(g, x.shape(), 0, x.dtype()) is
/// zeros_like(x).
Tensor full(Graph &g, const Shape &shape, double value, DType dtype = DType::F32);
/// Random numbers (ir/Philox.h): element i is a function of (seed, offset,
/// i), both i32 scalars (`g.input("seed", DType::I32, {})`); a new offset
/// draws a new stream. rand: uniform in [0, 1); randn: standard normal;
/// dtype f32, f16 or bf16. dropout: x * 1/(1-p) where rand's number is >= p,
/// 0 elsewhere (0 <= p < 1). Throws GraphError for a seed or offset that is
/// not an i32 scalar.
Tensor rand(const Tensor &seed, const Tensor &offset, const Shape &shape,
            DType dtype = DType::F32);
Tensor randn(const Tensor &seed, const Tensor &offset, const Shape &shape,
             DType dtype = DType::F32);
Tensor dropout(const Tensor &x, const Tensor &seed, const Tensor &offset, double p);

// ---- composites: the nodes a user would write, built for them (none is an
// op of its own; the compiler sees exactly the ops spelled out below).

/// exp(x - max(x)) / sum(exp(x - max(x))) along `axis`, keepdim reductions.
Tensor softmax(const Tensor &x, int64_t axis = -1);
/// (x - max(x)) - log(sum(exp(x - max(x)))) along `axis`.
Tensor logSoftmax(const Tensor &x, int64_t axis = -1);
/// Layer normalization over the last axis, as nn.LayerNorm(x.shape[-1]):
/// d = x - mean(x); d * rsqrt(mean(d * d) + eps) * weight + bias. An empty
/// weight or bias Tensor leaves that step out.
Tensor layerNorm(const Tensor &x, const Tensor &weight = {}, const Tensor &bias = {},
                 double eps = 1e-5);
/// RMS normalization over the last axis: x * rsqrt(mean(x * x) + eps) * weight
/// (an empty weight leaves the product out).
Tensor rmsNorm(const Tensor &x, const Tensor &weight = {}, double eps = 1e-6);
/// The two forms of GeLU, as PyTorch's F.gelu(approximate=...).
enum class GeluForm {
  Erf,  ///< 0.5 * x * (1 + erf(x / sqrt(2))), approximate='none'
  Tanh, ///< 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), approximate='tanh'
};
Tensor gelu(const Tensor &x, GeluForm form = GeluForm::Erf);
/// x * sigmoid(x) (SiLU, swish).
Tensor silu(const Tensor &x);

/// d loss / d w (a grad node, expanded by ir/Autodiff.h when the graph is
/// compiled or evaluated): loss has one element, w is any float value of the
/// same graph; the result has w's shape and dtype.
Tensor grad(const Tensor &loss, const Tensor &w);
/// The gradients of `loss` with respect to each of `ws`, in order (one
/// reverse sweep computes them all).
std::vector<Tensor> grad(const Tensor &loss, std::span<const Tensor> ws);
/// The vector-Jacobian product dy . (d y / d x): the gradient of
/// sum(y * dy) with respect to x, for a y of any shape.
Tensor vjp(const Tensor &y, const Tensor &x, const Tensor &dy);

} // namespace minijit
