//===- ir/Builder.cpp - build graphs that read like the math --------------===//
#include "ir/Builder.h"

#include "ir/Error.h"

namespace minijit {

namespace {
Graph &graphOf(const Tensor &a, const Tensor &b) {
  if (&a.graph() != &b.graph())
    throw GraphError("operands belong to different graphs");
  return a.graph();
}
} // namespace

Tensor scalarLike(const Tensor &t, double v) {
  return Tensor(&t.graph(), t.graph().constant(v, t.dtype()));
}

Tensor unary(OpKind op, const Tensor &x) {
  NodeSpec s;
  s.op = op;
  s.operands = {x.id()};
  return Tensor(&x.graph(), x.graph().add(s));
}

Tensor binary(OpKind op, const Tensor &a, const Tensor &b) {
  Graph &g = graphOf(a, b);
  NodeSpec s;
  s.op = op;
  s.operands = {a.id(), b.id()};
  return Tensor(&g, g.add(s));
}

Tensor operator+(const Tensor &a, const Tensor &b) { return binary(OpKind::Add, a, b); }
Tensor operator-(const Tensor &a, const Tensor &b) { return binary(OpKind::Sub, a, b); }
Tensor operator*(const Tensor &a, const Tensor &b) { return binary(OpKind::Mul, a, b); }
Tensor operator/(const Tensor &a, const Tensor &b) { return binary(OpKind::Div, a, b); }
Tensor operator+(const Tensor &a, double b) { return a + scalarLike(a, b); }
Tensor operator-(const Tensor &a, double b) { return a - scalarLike(a, b); }
Tensor operator*(const Tensor &a, double b) { return a * scalarLike(a, b); }
Tensor operator/(const Tensor &a, double b) { return a / scalarLike(a, b); }
Tensor operator+(double a, const Tensor &b) { return scalarLike(b, a) + b; }
Tensor operator-(double a, const Tensor &b) { return scalarLike(b, a) - b; }
Tensor operator*(double a, const Tensor &b) { return scalarLike(b, a) * b; }
Tensor operator/(double a, const Tensor &b) { return scalarLike(b, a) / b; }
Tensor operator-(const Tensor &x) { return unary(OpKind::Neg, x); }

Tensor neg(const Tensor &x) { return unary(OpKind::Neg, x); }
Tensor abs(const Tensor &x) { return unary(OpKind::Abs, x); }
Tensor exp(const Tensor &x) { return unary(OpKind::Exp, x); }
Tensor exp2(const Tensor &x) { return unary(OpKind::Exp2, x); }
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
Tensor logicalNot(const Tensor &x) { return unary(OpKind::Not, x); }

Tensor pow(const Tensor &a, const Tensor &b) { return binary(OpKind::Pow, a, b); }
Tensor pow(const Tensor &a, double b) { return pow(a, scalarLike(a, b)); }
Tensor maximum(const Tensor &a, const Tensor &b) { return binary(OpKind::Maximum, a, b); }
Tensor maximum(const Tensor &a, double b) { return maximum(a, scalarLike(a, b)); }
Tensor minimum(const Tensor &a, const Tensor &b) { return binary(OpKind::Minimum, a, b); }
Tensor minimum(const Tensor &a, double b) { return minimum(a, scalarLike(a, b)); }
Tensor eq(const Tensor &a, const Tensor &b) { return binary(OpKind::Eq, a, b); }
Tensor ne(const Tensor &a, const Tensor &b) { return binary(OpKind::Ne, a, b); }
Tensor lt(const Tensor &a, const Tensor &b) { return binary(OpKind::Lt, a, b); }
Tensor le(const Tensor &a, const Tensor &b) { return binary(OpKind::Le, a, b); }
Tensor gt(const Tensor &a, const Tensor &b) { return binary(OpKind::Gt, a, b); }
Tensor ge(const Tensor &a, const Tensor &b) { return binary(OpKind::Ge, a, b); }
Tensor logicalAnd(const Tensor &a, const Tensor &b) { return binary(OpKind::And, a, b); }
Tensor logicalOr(const Tensor &a, const Tensor &b) { return binary(OpKind::Or, a, b); }

Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b) {
  Graph &g = graphOf(cond, a);
  graphOf(a, b);
  NodeSpec s;
  s.op = OpKind::Where;
  s.operands = {cond.id(), a.id(), b.id()};
  return Tensor(&g, g.add(s));
}
Tensor where(const Tensor &cond, const Tensor &a, double b) {
  return where(cond, a, scalarLike(a, b));
}
Tensor where(const Tensor &cond, double a, const Tensor &b) {
  return where(cond, scalarLike(b, a), b);
}

Tensor reduce(OpKind op, const Tensor &x, llvm::ArrayRef<int64_t> axes, bool keepdim) {
  NodeSpec s;
  s.op = op;
  s.operands = {x.id()};
  if (!axes.empty())
    s.axes = DimVector(axes.begin(), axes.end());
  s.keepdim = keepdim;
  return Tensor(&x.graph(), x.graph().add(s));
}
Tensor sum(const Tensor &x, llvm::ArrayRef<int64_t> axes, bool keepdim) {
  return reduce(OpKind::Sum, x, axes, keepdim);
}
Tensor mean(const Tensor &x, llvm::ArrayRef<int64_t> axes, bool keepdim) {
  return reduce(OpKind::Mean, x, axes, keepdim);
}
Tensor max(const Tensor &x, llvm::ArrayRef<int64_t> axes, bool keepdim) {
  return reduce(OpKind::Max, x, axes, keepdim);
}
Tensor min(const Tensor &x, llvm::ArrayRef<int64_t> axes, bool keepdim) {
  return reduce(OpKind::Min, x, axes, keepdim);
}
Tensor prod(const Tensor &x, llvm::ArrayRef<int64_t> axes, bool keepdim) {
  return reduce(OpKind::Prod, x, axes, keepdim);
}

Tensor matmul(const Tensor &a, const Tensor &b) { return binary(OpKind::Matmul, a, b); }

Tensor grad(const Tensor &loss, const Tensor &w) {
  Graph &g = graphOf(loss, w);
  NodeSpec s;
  s.op = OpKind::Grad;
  s.operands = {loss.id(), w.id()};
  return Tensor(&g, g.add(s));
}

std::vector<Tensor> grad(const Tensor &loss, llvm::ArrayRef<Tensor> ws) {
  std::vector<Tensor> out;
  for (const Tensor &w : ws)
    out.push_back(grad(loss, w));
  return out;
}

Tensor vjp(const Tensor &y, const Tensor &x, const Tensor &dy) {
  Graph &g = graphOf(y, x);
  graphOf(y, dy);
  NodeSpec s;
  s.op = OpKind::Vjp;
  s.operands = {y.id(), x.id(), dy.id()};
  return Tensor(&g, g.add(s));
}

} // namespace minijit
