//===- ir/Builder.cpp - build graphs that read like the math --------------===//
#include "ir/Builder.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <cassert>

namespace minijit {

namespace {

const char *ordinal(size_t i) {
  static const char *const Words[] = {"first", "second", "third"};
  return i < 3 ? Words[i] : "next";
}

/// The graph of `operands`, checked: none is empty and all belong to one
/// graph. `what` names the op in the message; a null operand stands for a
/// literal (a number next to a tensor), which is not checked.
Graph &graphOf(llvm::StringRef what, std::initializer_list<const Tensor *> operands) {
  Graph *g = nullptr;
  size_t i = 0;
  for (const Tensor *t : operands) {
    if (!t) {
      ++i;
      continue;
    }
    if (t->empty())
      throw GraphError(llvm::formatv("{0}: the {1} operand is an empty Tensor (default-constructed, "
                                     "it belongs to no graph)",
                                     what, ordinal(i))
                           .str());
    Graph *tg = &t->graph();
    if (g && tg != g)
      throw GraphError(llvm::formatv("{0}: the {1} operand belongs to graph '{2}' but the first "
                                     "to graph '{3}'; a graph's values are built from its own "
                                     "inputs",
                                     what, ordinal(i), tg->name(), g->name())
                           .str());
    g = tg;
    ++i;
  }
  assert(g && "an op has a tensor operand");
  return *g;
}

/// `a op b` where one side is the number `v`, which becomes a literal of t's dtype.
Tensor withScalar(OpKind op, const Tensor &t, double v, bool scalarFirst) {
  graphOf(opName(op), {scalarFirst ? nullptr : &t, scalarFirst ? &t : nullptr});
  Tensor c = scalarLike(t, v);
  return scalarFirst ? binary(op, c, t) : binary(op, t, c);
}

Tensor addNode(Graph &g, const NodeSpec &s) { return Tensor(&g, g.add(s, Spelling::Cpp)); }

Tensor view(OpKind op, const Tensor &x, const Shape &shape) {
  Graph &g = graphOf(opName(op), {&x});
  NodeSpec s;
  s.op = op;
  s.operands = {x.id()};
  s.shape = shape;
  return addNode(g, s);
}

} // namespace

Tensor scalarLike(const Tensor &t, double v) {
  Graph &g = graphOf("literal", {&t});
  return Tensor(&g, g.constant(v, t.dtype()));
}

Tensor unary(OpKind op, const Tensor &x) {
  Graph &g = graphOf(opName(op), {&x});
  NodeSpec s;
  s.op = op;
  s.operands = {x.id()};
  return addNode(g, s);
}

Tensor binary(OpKind op, const Tensor &a, const Tensor &b) {
  Graph &g = graphOf(opName(op), {&a, &b});
  NodeSpec s;
  s.op = op;
  s.operands = {a.id(), b.id()};
  return addNode(g, s);
}

Tensor operator+(const Tensor &a, const Tensor &b) { return binary(OpKind::Add, a, b); }
Tensor operator-(const Tensor &a, const Tensor &b) { return binary(OpKind::Sub, a, b); }
Tensor operator*(const Tensor &a, const Tensor &b) { return binary(OpKind::Mul, a, b); }
Tensor operator/(const Tensor &a, const Tensor &b) { return binary(OpKind::Div, a, b); }
Tensor operator+(const Tensor &a, double b) { return withScalar(OpKind::Add, a, b, false); }
Tensor operator-(const Tensor &a, double b) { return withScalar(OpKind::Sub, a, b, false); }
Tensor operator*(const Tensor &a, double b) { return withScalar(OpKind::Mul, a, b, false); }
Tensor operator/(const Tensor &a, double b) { return withScalar(OpKind::Div, a, b, false); }
Tensor operator+(double a, const Tensor &b) { return withScalar(OpKind::Add, b, a, true); }
Tensor operator-(double a, const Tensor &b) { return withScalar(OpKind::Sub, b, a, true); }
Tensor operator*(double a, const Tensor &b) { return withScalar(OpKind::Mul, b, a, true); }
Tensor operator/(double a, const Tensor &b) { return withScalar(OpKind::Div, b, a, true); }
Tensor operator-(const Tensor &x) { return unary(OpKind::Neg, x); }

Tensor neg(const Tensor &x) { return unary(OpKind::Neg, x); }
Tensor abs(const Tensor &x) { return unary(OpKind::Abs, x); }
Tensor exp(const Tensor &x) { return unary(OpKind::Exp, x); }
Tensor exp2(const Tensor &x) { return unary(OpKind::Exp2, x); }
Tensor expm1(const Tensor &x) { return unary(OpKind::Expm1, x); }
Tensor log1p(const Tensor &x) { return unary(OpKind::Log1p, x); }
Tensor log(const Tensor &x) { return unary(OpKind::Log, x); }
Tensor log2(const Tensor &x) { return unary(OpKind::Log2, x); }
Tensor sqrt(const Tensor &x) { return unary(OpKind::Sqrt, x); }
Tensor rsqrt(const Tensor &x) { return unary(OpKind::Rsqrt, x); }
Tensor sin(const Tensor &x) { return unary(OpKind::Sin, x); }
Tensor cos(const Tensor &x) { return unary(OpKind::Cos, x); }
Tensor tanh(const Tensor &x) { return unary(OpKind::Tanh, x); }
Tensor sigmoid(const Tensor &x) { return unary(OpKind::Sigmoid, x); }
Tensor erf(const Tensor &x) { return unary(OpKind::Erf, x); }
Tensor relu(const Tensor &x) { return unary(OpKind::Relu, x); }
Tensor recip(const Tensor &x) { return unary(OpKind::Recip, x); }
Tensor floor(const Tensor &x) { return unary(OpKind::Floor, x); }
Tensor ceil(const Tensor &x) { return unary(OpKind::Ceil, x); }
Tensor roundTf32(const Tensor &x) { return unary(OpKind::RoundTf32, x); }
Tensor logicalNot(const Tensor &x) { return unary(OpKind::Not, x); }

Tensor pow(const Tensor &a, const Tensor &b) { return binary(OpKind::Pow, a, b); }
Tensor pow(const Tensor &a, double b) { return withScalar(OpKind::Pow, a, b, false); }
Tensor maximum(const Tensor &a, const Tensor &b) { return binary(OpKind::Maximum, a, b); }
Tensor maximum(const Tensor &a, double b) { return withScalar(OpKind::Maximum, a, b, false); }
Tensor minimum(const Tensor &a, const Tensor &b) { return binary(OpKind::Minimum, a, b); }
Tensor minimum(const Tensor &a, double b) { return withScalar(OpKind::Minimum, a, b, false); }
Tensor eq(const Tensor &a, const Tensor &b) { return binary(OpKind::Eq, a, b); }
Tensor ne(const Tensor &a, const Tensor &b) { return binary(OpKind::Ne, a, b); }
Tensor lt(const Tensor &a, const Tensor &b) { return binary(OpKind::Lt, a, b); }
Tensor le(const Tensor &a, const Tensor &b) { return binary(OpKind::Le, a, b); }
Tensor gt(const Tensor &a, const Tensor &b) { return binary(OpKind::Gt, a, b); }
Tensor ge(const Tensor &a, const Tensor &b) { return binary(OpKind::Ge, a, b); }
Tensor eq(const Tensor &a, double b) { return withScalar(OpKind::Eq, a, b, false); }
Tensor ne(const Tensor &a, double b) { return withScalar(OpKind::Ne, a, b, false); }
Tensor lt(const Tensor &a, double b) { return withScalar(OpKind::Lt, a, b, false); }
Tensor le(const Tensor &a, double b) { return withScalar(OpKind::Le, a, b, false); }
Tensor gt(const Tensor &a, double b) { return withScalar(OpKind::Gt, a, b, false); }
Tensor ge(const Tensor &a, double b) { return withScalar(OpKind::Ge, a, b, false); }
Tensor logicalAnd(const Tensor &a, const Tensor &b) { return binary(OpKind::And, a, b); }
Tensor logicalOr(const Tensor &a, const Tensor &b) { return binary(OpKind::Or, a, b); }

Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b) {
  Graph &g = graphOf("where", {&cond, &a, &b});
  NodeSpec s;
  s.op = OpKind::Where;
  s.operands = {cond.id(), a.id(), b.id()};
  return addNode(g, s);
}
Tensor where(const Tensor &cond, const Tensor &a, double b) {
  graphOf("where", {&cond, &a, nullptr});
  return where(cond, a, scalarLike(a, b));
}
Tensor where(const Tensor &cond, double a, const Tensor &b) {
  graphOf("where", {&cond, nullptr, &b});
  return where(cond, scalarLike(b, a), b);
}

Tensor reduce(OpKind op, const Tensor &x, const AxisList &axes, bool keepdim) {
  Graph &g = graphOf(opName(op), {&x});
  NodeSpec s;
  s.op = op;
  s.operands = {x.id()};
  if (!axes.empty())
    s.axes = DimVector(axes.begin(), axes.end());
  s.keepdim = keepdim;
  return addNode(g, s);
}
Tensor sum(const Tensor &x, const AxisList &axes, bool keepdim) {
  return reduce(OpKind::Sum, x, axes, keepdim);
}
Tensor mean(const Tensor &x, const AxisList &axes, bool keepdim) {
  return reduce(OpKind::Mean, x, axes, keepdim);
}
Tensor max(const Tensor &x, const AxisList &axes, bool keepdim) {
  return reduce(OpKind::Max, x, axes, keepdim);
}
Tensor min(const Tensor &x, const AxisList &axes, bool keepdim) {
  return reduce(OpKind::Min, x, axes, keepdim);
}
Tensor prod(const Tensor &x, const AxisList &axes, bool keepdim) {
  return reduce(OpKind::Prod, x, axes, keepdim);
}

namespace {
Tensor scan(OpKind op, const Tensor &x, int64_t axis, bool reverse) {
  Graph &g = graphOf(opName(op), {&x});
  NodeSpec s;
  s.op = op;
  s.operands = {x.id()};
  s.axis = axis;
  s.reverse = reverse;
  return addNode(g, s);
}
} // namespace

Tensor cumsum(const Tensor &x, int64_t axis, bool reverse) {
  return scan(OpKind::Cumsum, x, axis, reverse);
}
Tensor cumprod(const Tensor &x, int64_t axis, bool reverse) {
  return scan(OpKind::Cumprod, x, axis, reverse);
}

Tensor argmax(const Tensor &x, int64_t axis, bool keepdim) {
  return reduce(OpKind::Argmax, x, {axis}, keepdim);
}
Tensor argmin(const Tensor &x, int64_t axis, bool keepdim) {
  return reduce(OpKind::Argmin, x, {axis}, keepdim);
}

Tensor reshape(const Tensor &x, const Shape &shape) { return view(OpKind::Reshape, x, shape); }
Tensor broadcast(const Tensor &x, const Shape &shape) { return view(OpKind::Broadcast, x, shape); }

Tensor permute(const Tensor &x, const AxisList &perm) {
  Graph &g = graphOf("permute", {&x});
  NodeSpec s;
  s.op = OpKind::Permute;
  s.operands = {x.id()};
  s.perm.assign(perm.begin(), perm.end());
  return addNode(g, s);
}

Tensor cast(const Tensor &x, DType to) {
  Graph &g = graphOf("cast", {&x});
  NodeSpec s;
  s.op = OpKind::Cast;
  s.operands = {x.id()};
  s.dtype = to;
  return addNode(g, s);
}

Tensor transpose(const Tensor &x, int64_t a, int64_t b) {
  graphOf("transpose", {&x});
  auto rank = static_cast<int64_t>(x.shape().rank());
  for (int64_t axis : {a, b})
    if (axis < -rank || axis >= rank)
      throw GraphError(llvm::formatv("transpose: axis {0} is out of range for rank {1} (valid: "
                                     "{2}..{3})",
                                     axis, rank, -rank, rank - 1)
                           .str());
  DimVector perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[a < 0 ? a + rank : a], perm[b < 0 ? b + rank : b]);
  return permute(x, perm);
}

Tensor transpose(const Tensor &x) {
  graphOf("transpose", {&x});
  if (x.shape().rank() < 2)
    throw GraphError(llvm::formatv("transpose: %{0} has shape {1}; swapping the last two axes "
                                   "needs rank >= 2 (reshape a vector to [1, n] or [n, 1])",
                                   x.node().name, x.shape().str())
                         .str());
  return transpose(x, -2, -1);
}

Tensor matmul(const Tensor &a, const Tensor &b) { return binary(OpKind::Matmul, a, b); }

Tensor slice(const Tensor &x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  Graph &g = graphOf("slice", {&x});
  NodeSpec s;
  s.op = OpKind::Slice;
  s.operands = {x.id()};
  s.axis = axis;
  s.start = start;
  s.end = end;
  s.step = step;
  return addNode(g, s);
}

Tensor pad(const Tensor &x, const AxisList &before, const AxisList &after, double value) {
  Graph &g = graphOf("pad", {&x});
  NodeSpec s;
  s.op = OpKind::Pad;
  s.operands = {x.id()};
  s.before.assign(before.begin(), before.end());
  s.after.assign(after.begin(), after.end());
  s.value = value;
  return addNode(g, s);
}

Tensor flip(const Tensor &x, const AxisList &axes) {
  Graph &g = graphOf("flip", {&x});
  NodeSpec s;
  s.op = OpKind::Flip;
  s.operands = {x.id()};
  s.axes = DimVector(axes.begin(), axes.end());
  return addNode(g, s);
}

Tensor concat(std::span<const Tensor> xs, int64_t axis) {
  if (xs.empty())
    throw GraphError("concat: expects at least one tensor, got none");
  NodeSpec s;
  s.op = OpKind::Concat;
  s.axis = axis;
  for (const Tensor &x : xs) {
    graphOf("concat", {&xs[0], &x});
    s.operands.push_back(x.id());
  }
  return addNode(xs[0].graph(), s);
}

Tensor concat(std::initializer_list<Tensor> xs, int64_t axis) {
  return concat(std::span<const Tensor>(xs.begin(), xs.size()), axis);
}

namespace {
Tensor gather(OpKind op, const Tensor &x, const Tensor &indices, int64_t axis) {
  Graph &g = graphOf(opName(op), {&x, &indices});
  NodeSpec s;
  s.op = op;
  s.operands = {x.id(), indices.id()};
  s.axis = axis;
  return addNode(g, s);
}
} // namespace

Tensor take(const Tensor &table, const Tensor &indices, int64_t axis) {
  return gather(OpKind::Take, table, indices, axis);
}

Tensor takeAlongAxis(const Tensor &x, const Tensor &indices, int64_t axis) {
  return gather(OpKind::TakeAlongAxis, x, indices, axis);
}

Tensor iota(Graph &g, const Shape &shape, int64_t axis, DType dtype) {
  NodeSpec s;
  s.op = OpKind::Iota;
  s.shape = shape;
  s.axis = axis;
  s.dtype = dtype;
  return addNode(g, s);
}

Tensor full(Graph &g, const Shape &shape, double value, DType dtype) {
  NodeSpec s;
  s.op = OpKind::Full;
  s.shape = shape;
  s.value = value;
  s.dtype = dtype;
  return addNode(g, s);
}

namespace {
Tensor random(OpKind op, const Tensor &seed, const Tensor &offset, const Shape &shape,
              DType dtype) {
  Graph &g = graphOf(opName(op), {&seed, &offset});
  NodeSpec s;
  s.op = op;
  s.operands = {seed.id(), offset.id()};
  s.shape = shape;
  s.dtype = dtype;
  return addNode(g, s);
}
} // namespace

Tensor rand(const Tensor &seed, const Tensor &offset, const Shape &shape, DType dtype) {
  return random(OpKind::Rand, seed, offset, shape, dtype);
}

Tensor randn(const Tensor &seed, const Tensor &offset, const Shape &shape, DType dtype) {
  return random(OpKind::Randn, seed, offset, shape, dtype);
}

Tensor dropout(const Tensor &x, const Tensor &seed, const Tensor &offset, double p) {
  Graph &g = graphOf("dropout", {&x, &seed, &offset});
  NodeSpec s;
  s.op = OpKind::Dropout;
  s.operands = {x.id(), seed.id(), offset.id()};
  s.value = p;
  return addNode(g, s);
}

Tensor softmax(const Tensor &x, int64_t axis) {
  Tensor e = exp(x - max(x, {axis}, /*keepdim=*/true));
  return e / sum(e, {axis}, /*keepdim=*/true);
}

Tensor logSoftmax(const Tensor &x, int64_t axis) {
  Tensor shifted = x - max(x, {axis}, /*keepdim=*/true);
  return shifted - log(sum(exp(shifted), {axis}, /*keepdim=*/true));
}

Tensor layerNorm(const Tensor &x, const Tensor &weight, const Tensor &bias, double eps) {
  Tensor d = x - mean(x, {-1}, /*keepdim=*/true);
  Tensor y = d * rsqrt(mean(d * d, {-1}, /*keepdim=*/true) + eps);
  if (!weight.empty())
    y = y * weight;
  if (!bias.empty())
    y = y + bias;
  return y;
}

Tensor rmsNorm(const Tensor &x, const Tensor &weight, double eps) {
  Tensor y = x * rsqrt(mean(x * x, {-1}, /*keepdim=*/true) + eps);
  return weight.empty() ? y : y * weight;
}

Tensor gelu(const Tensor &x, GeluForm form) {
  switch (form) {
  case GeluForm::Erf: return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
  case GeluForm::Tanh: return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
  }
  return x;
}

Tensor silu(const Tensor &x) { return x * sigmoid(x); }

Tensor grad(const Tensor &loss, const Tensor &w) {
  Graph &g = graphOf("grad", {&loss, &w});
  NodeSpec s;
  s.op = OpKind::Grad;
  s.operands = {loss.id(), w.id()};
  return addNode(g, s);
}

std::vector<Tensor> grad(const Tensor &loss, std::span<const Tensor> ws) {
  std::vector<Tensor> out;
  for (const Tensor &w : ws)
    out.push_back(grad(loss, w));
  return out;
}

Tensor vjp(const Tensor &y, const Tensor &x, const Tensor &dy) {
  Graph &g = graphOf("vjp", {&y, &x, &dy});
  NodeSpec s;
  s.op = OpKind::Vjp;
  s.operands = {y.id(), x.id(), dy.id()};
  return addNode(g, s);
}

Tensor Tensor::reshape(const Shape &shape) const { return minijit::reshape(*this, shape); }
Tensor Tensor::permute(const AxisList &perm) const { return minijit::permute(*this, perm); }
Tensor Tensor::broadcast(const Shape &shape) const { return minijit::broadcast(*this, shape); }
Tensor Tensor::cast(DType to) const { return minijit::cast(*this, to); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return minijit::transpose(*this, a, b); }
Tensor Tensor::transpose() const { return minijit::transpose(*this); }
Tensor Tensor::sum(const AxisList &axes, bool keepdim) const {
  return minijit::sum(*this, axes, keepdim);
}
Tensor Tensor::mean(const AxisList &axes, bool keepdim) const {
  return minijit::mean(*this, axes, keepdim);
}
Tensor Tensor::max(const AxisList &axes, bool keepdim) const {
  return minijit::max(*this, axes, keepdim);
}
Tensor Tensor::min(const AxisList &axes, bool keepdim) const {
  return minijit::min(*this, axes, keepdim);
}
Tensor Tensor::prod(const AxisList &axes, bool keepdim) const {
  return minijit::prod(*this, axes, keepdim);
}

} // namespace minijit
