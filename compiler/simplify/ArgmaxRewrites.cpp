//===- compiler/simplify/ArgmaxRewrites.cpp - argmax of an increasing map --------===//
// One walk in graph order copies the graph node by node (so every value keeps
// its id and name); an argmax or argmin whose operand is a chain of strictly
// monotone steps reads the chain's start instead.
//===----------------------------------------------------------------------===//
#include "compiler/simplify/ArgmaxRewrites.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <optional>

namespace minijit {

namespace {

/// Whether `c`, an operand of a value of shape `full` (numpy broadcasting:
/// aligned at the last axis), has one value along `axis` of `full`: its size
/// there is 1, or it lacks the axis, or it is a broadcast of such a value.
bool constantAlong(const Graph &g, ValueId c, const Shape &full, int64_t axis) {
  const Node &n = g.node(c);
  int64_t lead = static_cast<int64_t>(full.rank()) - static_cast<int64_t>(n.shape.rank());
  if (lead < 0)
    return false;
  int64_t a = axis - lead;
  if (a < 0 || n.shape[static_cast<unsigned>(a)] == 1)
    return true;
  if (n.op == OpKind::Broadcast)
    return constantAlong(g, n.operands[0], n.shape, a);
  return false;
}

/// The finite, nonzero literal `c` is (through broadcasts of it), if it is one.
std::optional<double> literal(const Graph &g, ValueId c) {
  const Node *n = &g.node(c);
  while (n->op == OpKind::Broadcast)
    n = &g.node(n->operands[0]);
  if (n->op != OpKind::Constant || !std::isfinite(n->value) || n->value == 0)
    return std::nullopt;
  return n->value;
}

/// Whether `c` is > 0 in exact arithmetic, as far as this pass can tell: a
/// positive literal, or a sum of exp or exp2 (views of either taken through).
/// Conservative: everything else is taken as possibly 0 or negative.
bool provablyPositive(const Graph &g, ValueId c) {
  const Node *n = &g.node(c);
  while (n->op == OpKind::Broadcast || n->op == OpKind::Reshape)
    n = &g.node(n->operands[0]);
  if (n->op == OpKind::Constant)
    return std::isfinite(n->value) && n->value > 0;
  if (n->op != OpKind::Sum)
    return false;
  OpKind term = g.node(n->operands[0]).op;
  return term == OpKind::Exp || term == OpKind::Exp2;
}

/// One step of a chain: the operand the value is strictly monotone in along
/// the axis, and whether it decreases.
struct Step {
  ValueId operand;
  bool decreasing;
};

/// The step value `v` is along `axis`, if it is one this pass accepts
/// (ArgmaxRewrites.h lists them).
std::optional<Step> monotoneStep(const Graph &g, ValueId v, int64_t axis) {
  const Node &n = g.node(v);
  // The operand that varies must have the value's own shape.
  auto full = [&](ValueId o) { return g.node(o).shape == n.shape; };
  auto constant = [&](ValueId o) { return constantAlong(g, o, n.shape, axis); };
  // A unary op strictly monotone over all of its operand's values (Ops.def's
  // Rising and Falling; log, sqrt, recip are not: NaN or a jump outside their
  // domain; relu, floor, abs: ties); a cast is not (its rounding makes ties).
  if (n.cls() == OpClass::Unary) {
    const OpInfo &info = opInfo(n.op);
    if (info.isRising() || info.isFalling())
      return Step{n.operands[0], info.isFalling()};
    return std::nullopt;
  }
  switch (n.op) {
  case OpKind::Add:
  case OpKind::Sub: {
    ValueId a = n.operands[0], b = n.operands[1];
    if (full(a) && constant(b))
      return Step{a, false};
    if (full(b) && constant(a))
      return Step{b, n.op == OpKind::Sub};
    return std::nullopt;
  }
  case OpKind::Mul:
    for (int side = 0; side < 2; ++side) {
      ValueId x = n.operands[side], c = n.operands[1 - side];
      if (!full(x))
        continue;
      if (std::optional<double> k = literal(g, c))
        return Step{x, *k < 0};
    }
    return std::nullopt;
  case OpKind::Div: {
    ValueId x = n.operands[0], c = n.operands[1];
    if (!full(x))
      return std::nullopt;
    if (std::optional<double> k = literal(g, c))
      return Step{x, *k < 0};
    if (constant(c) && provablyPositive(g, c))
      return Step{x, false};
    return std::nullopt;
  }
  default: return std::nullopt; // another binary op, or not elementwise
  }
}

/// Where the chain under an argmax or argmin ends, whether it decreases, and
/// the ops it went through (outermost first).
struct Chain {
  ValueId source;
  bool decreasing = false;
  std::vector<std::string> ops;
};

std::optional<Chain> monotoneChain(const Graph &g, const Node &arg) {
  ValueId v = arg.operands[0];
  if (!isFloat(g.node(v).dtype))
    return std::nullopt; // i32 arithmetic wraps
  Chain c{v, false, {}};
  int64_t axis = arg.axes[0];
  while (std::optional<Step> s = monotoneStep(g, c.source, axis)) {
    c.ops.push_back(std::string(opName(g.node(c.source).op)));
    c.decreasing ^= s->decreasing;
    c.source = s->operand;
  }
  if (c.source == v)
    return std::nullopt;
  return c;
}

std::string describe(const Graph &g, const Node &arg, const Chain &c, OpKind now) {
  std::vector<std::string> ops(c.ops.rbegin(), c.ops.rend()); // in the order they apply
  const std::string &x = g.node(c.source).name;
  return std::string(opName(arg.op)) + " over axis " + std::to_string(arg.axes[0]) +
         " of a value strictly " + (c.decreasing ? "decreasing" : "increasing") + " in %" + x +
         " along it (" + llvm::join(ops, ", ") + "), as the " + std::string(opName(now)) +
         " of %" + x +
         " (reassociates: no ties made by rounding, and a NaN no longer spreads over the row)";
}

} // namespace

MatmulRewriteResult rewriteMonotoneArgs(const Graph &g) {
  MatmulRewriteResult r{Graph(g.name()), {}};
  Graph &out = r.graph;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.node(static_cast<ValueId>(i));
    if (n.op == OpKind::Input) {
      out.input(n.name, n.dtype, n.shape);
      continue;
    }
    NodeSpec s = specOf(n); // the same ids: nodes are copied one for one
    if (n.op == OpKind::Argmax || n.op == OpKind::Argmin) {
      if (std::optional<Chain> c = monotoneChain(g, n)) {
        if (c->decreasing)
          s.op = n.op == OpKind::Argmax ? OpKind::Argmin : OpKind::Argmax;
        s.operands = {c->source};
        r.applied.push_back({MatmulRewriteKind::MonotoneArg, n.name, describe(g, n, *c, s.op)});
      }
    }
    ValueId id = out.add(s);
    (void)id;
    assert(id == static_cast<ValueId>(i) && "the copy keeps every id");
  }
  out.copyResults(g);
  return r;
}

} // namespace minijit
