//===- compiler/simplify/SumThroughLinear.cpp - sums moved onto products -------===//
// One walk in graph order copies the graph; a sum or mean that reaches a
// product through linear elementwise ops is built anew from a sum of the
// product, the ops applied to it in the same order. The ops it replaces are
// left without a use and dropped at the end.
//===----------------------------------------------------------------------===//
#include "compiler/simplify/SumThroughLinear.h"
#include "compiler/simplify/Simplify.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace minijit {

namespace {

/// One linear op between a sum and the product it reaches: the op and
/// which of its operands leads to the product (the other is the term or the
/// factor).
struct Step {
  ValueId op;
  int side;
};

class Mover {
public:
  explicit Mover(const Graph &g) : G(g), Out(g.name()), Map(g.size(), -1), Uses(g.size(), 0) {
    Out.reserveNamesOf(g);
    for (const Node &n : g.nodes())
      for (ValueId o : n.operands)
        ++Uses[o];
    for (ValueId o : g.outputs())
      ++Uses[o];
  }

  SumThroughLinearResult run() {
    for (size_t i = 0; i < G.size(); ++i)
      Map[i] = copy(static_cast<ValueId>(i));
    copyOutputs(G, Map, Out);
    if (Moved.empty())
      return {std::move(Out), {}};
    return {withoutDeadValues(Out), std::move(Moved)};
  }

private:
  ValueId copy(ValueId id) {
    const Node &n = G.node(id);
    if (n.op == OpKind::Input)
      return Out.input(n.name, n.dtype, n.shape).id();
    if ((n.op == OpKind::Sum || n.op == OpKind::Mean) && n.dtype == DType::F32)
      if (std::optional<ValueId> v = moveOntoProduct(n))
        return *v;
    NodeSpec s = specOf(n);
    for (ValueId &o : s.operands)
      o = Map[o];
    return add(s);
  }

  /// The steps from the sum `n`'s operand down to a product it may be moved
  /// onto, and that product; nullopt where there is none.
  std::optional<std::pair<std::vector<Step>, ValueId>> pathToProduct(const Node &n) const {
    const Shape &full = G.node(n.operands[0]).shape;
    std::vector<Step> steps;
    ValueId v = n.operands[0];
    // Each step leaves one full-shaped operand to follow; at an add of two,
    // the first one whose node could lead on is taken.
    auto leadsOn = [&](ValueId o) {
      const Node &m = G.node(o);
      return Uses[o] == 1 && m.dtype == DType::F32 && m.shape == full &&
             (m.op == OpKind::Matmul || opInfo(m.op).isLinear());
    };
    while (true) {
      const Node &m = G.node(v);
      if (!leadsOn(v))
        return std::nullopt;
      if (m.op == OpKind::Matmul)
        return std::make_pair(std::move(steps), v);
      const OpInfo &info = opInfo(m.op);
      int side = -1;
      if (m.operands.size() == 1) // neg
        side = 0;
      else if (info.isAdditive()) // add, sub: either term
        side = leadsOn(m.operands[0]) ? 0 : leadsOn(m.operands[1]) ? 1 : -1;
      else if (leadsOn(m.operands[0]) && constantAlong(m.operands[1], n)) // mul, div
        side = 0;
      else if (info.isCommutative() && leadsOn(m.operands[1]) && constantAlong(m.operands[0], n))
        side = 1;
      if (side < 0)
        return std::nullopt;
      steps.push_back({v, side});
      v = m.operands[side];
    }
  }


  /// Whether `v`, broadcast to the shape the sum `n` reads, has the same
  /// value all along the summed axes (size 1 there, or no such axis).
  bool constantAlong(ValueId v, const Node &n) const {
    const Shape &s = G.node(v).shape;
    size_t rank = G.node(n.operands[0]).shape.rank(), lead = rank - s.rank();
    for (int64_t a : n.axes)
      if (static_cast<size_t>(a) >= lead && s[a - lead] != 1)
        return false;
    return true;
  }

  std::optional<ValueId> moveOntoProduct(const Node &n) {
    const Shape &full = G.node(n.operands[0]).shape;
    int64_t rank = static_cast<int64_t>(full.rank());
    if (rank < 2 || full.hasNames())
      return std::nullopt;
    bool lastAxis = llvm::is_contained(n.axes, rank - 1);
    if (!lastAxis && !llvm::is_contained(n.axes, rank - 2))
      return std::nullopt; // a sum over batch axes gains nothing
    std::optional<std::pair<std::vector<Step>, ValueId>> path = pathToProduct(n);
    if (!path || path->first.empty())
      return std::nullopt; // a sum right on the product is MatmulRewrites' own case
    Building = n.name;
    Made = 0;
    // The sum of the product over one of its last two axes first (the form
    // the sum-of-product rewrite takes), then over the other summed axes.
    int64_t first = lastAxis ? rank - 1 : rank - 2;
    ValueId v = reduce(n.op, Map[path->second], DimVector{first});
    DimVector rest;
    for (int64_t a : n.axes)
      if (a != first)
        rest.push_back(a);
    if (!rest.empty())
      v = reduce(n.op, v, rest);
    for (auto it = path->first.rbegin(); it != path->first.rend(); ++it) {
      const Node &m = G.node(it->op);
      if (m.operands.size() == 1) { // neg
        v = apply(m.op, {v});
        continue;
      }
      // An additive op's other term is summed as the sum sums it; a scaling
      // op's factor is constant along the summed axes.
      ValueId other = m.operands[1 - it->side];
      ValueId term = opInfo(m.op).isAdditive() ? reducedTerm(other, n) : Map[other];
      v = it->side == 0 ? apply(m.op, {v, term}) : apply(m.op, {term, v});
    }
    Moved.push_back(n.name);
    if (Out.node(v).shape == n.shape && !Out.lookup(n.name)) {
      Out.rename(v, n.name); // keepdim: the last op is the sum's value
      return v;
    }
    NodeSpec named;
    named.op = OpKind::Reshape;
    named.operands = {v};
    named.shape = n.shape;
    named.name = n.name;
    return add(named);
  }

  /// The term `t` of an add or sub, reduced as the sum `n` reduces it, with
  /// keepdim: summed over the summed axes along which it varies, and a sum
  /// times the count of those along which it is broadcast (a mean takes its
  /// value there).
  ValueId reducedTerm(ValueId t, const Node &n) {
    const Shape &s = G.node(t).shape, &full = G.node(n.operands[0]).shape;
    size_t lead = full.rank() - s.rank();
    DimVector varying;
    int64_t count = 1;
    for (int64_t a : n.axes) {
      if (static_cast<size_t>(a) >= lead && s[a - lead] != 1)
        varying.push_back(a - static_cast<int64_t>(lead));
      else
        count *= full[a];
    }
    ValueId v = Map[t];
    if (!varying.empty())
      v = reduce(n.op, v, varying);
    if (n.op == OpKind::Sum && count > 1)
      v = apply(OpKind::Mul, {v, Out.constant(static_cast<double>(count), DType::F32)});
    return v;
  }

  ValueId reduce(OpKind op, ValueId v, DimVector axes) {
    NodeSpec s;
    s.name = newName();
    s.op = op;
    s.operands = {v};
    s.axes = std::move(axes);
    s.keepdim = true;
    return add(s);
  }
  ValueId apply(OpKind op, std::vector<ValueId> operands) {
    NodeSpec s;
    s.name = newName();
    s.op = op;
    s.operands = std::move(operands);
    return add(s);
  }
  /// A name for a node this pass makes: after the sum it rebuilds (`%s.1`,
  /// `%s.2`, ...), so a fresh `tN` never takes the name of a value of G
  /// copied later (an output's, whose name must stay).
  std::string newName() { return Building + "." + std::to_string(++Made); }
  /// Adds `s`; a name already taken is left for the graph to choose.
  ValueId add(NodeSpec s) {
    if (!s.name.empty() && Out.lookup(s.name))
      s.name.clear();
    return Out.add(s);
  }

  const Graph &G;
  Graph Out;
  std::vector<ValueId> Map;
  std::vector<int> Uses; ///< of each value of G, outputs counted
  std::vector<std::string> Moved;
  std::string Building; ///< the name of the sum being rebuilt
  int Made = 0;         ///< the nodes made for it so far
};

} // namespace

SumThroughLinearResult moveSumsOntoProducts(const Graph &g) { return Mover(g).run(); }

} // namespace minijit
