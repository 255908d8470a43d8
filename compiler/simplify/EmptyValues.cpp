//===- compiler/simplify/EmptyValues.cpp - values of no elements ---------===//
// One walk in graph order copies the graph, putting a `full` in place of
// each empty value and of each value computed from empty operands alone.
//===----------------------------------------------------------------------===//
#include "compiler/simplify/EmptyValues.h"

#include "compiler/simplify/Simplify.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <limits>

namespace minijit {

namespace {

/// The value every element of `n` has when an operand it reads is empty
/// and `n` is not: a reduction's identity over no element (a mean's 0/0),
/// a matmul's sum of no products, a pad's border.
double valueFromEmpty(const Node &n) {
  switch (n.op) {
  case OpKind::Sum:
  case OpKind::Matmul: return 0;
  case OpKind::Prod: return 1;
  case OpKind::Mean: return std::numeric_limits<double>::quiet_NaN();
  case OpKind::Pad: return n.value;
  default: break;
  }
  // max, min, argmax and argmin over an empty axis, and gathers into one,
  // are graph errors (ir/InferType.cpp, ir/InferViewType.cpp); the other
  // ops give an empty result from an empty operand.
  llvm_unreachable("no other op makes elements out of an empty operand");
}

NodeSpec fullLike(const Node &n, double value) {
  NodeSpec s;
  s.op = OpKind::Full;
  s.shape = n.shape;
  s.dtype = n.dtype;
  s.value = value;
  s.name = n.name;
  return s;
}

} // namespace

std::optional<Graph> replaceEmptyValues(const Graph &g) {
  if (llvm::none_of(g.nodes(), [](const Node &n) { return n.shape.isEmpty(); }))
    return std::nullopt;
  Graph out(g.name());
  out.reserveNamesOf(g);
  std::vector<ValueId> map(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.nodes()[i];
    NodeSpec s = specOf(n);
    for (ValueId &o : s.operands)
      o = map[o];
    if (n.op == OpKind::Input) {
      map[i] = out.add(s);
      continue;
    }
    if (n.shape.isEmpty()) {
      map[i] = out.add(fullLike(n, 0));
      continue;
    }
    auto emptyOperand = [&](ValueId o) { return out.node(o).shape.isEmpty(); };
    if (llvm::none_of(s.operands, emptyOperand)) {
      map[i] = out.add(s);
      continue;
    }
    if (n.op == OpKind::Concat) { // the others hold every element
      llvm::erase_if(s.operands, emptyOperand);
      assert(!s.operands.empty() && "a concat of empty operands is empty");
      map[i] = s.operands.size() == 1 ? s.operands[0] : out.add(s);
      continue;
    }
    map[i] = out.add(fullLike(n, valueFromEmpty(n)));
  }
  copyOutputs(g, map, out);
  return withoutDeadValues(out);
}

} // namespace minijit
