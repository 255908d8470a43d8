//===- tools/Reduce.cpp - shrink a graph while a condition holds ----------===//
#include "tools/Reduce.h"

#include <optional>
#include <vector>

namespace minijit {

namespace {

/// One candidate: which outputs stay, and which values stand for which.
struct Edit {
  std::vector<bool> keepOutput;   ///< per output of the source graph
  std::vector<ValueId> outputAs;  ///< per output: the value returned in its place
  std::vector<ValueId> replaced;  ///< per value: the value that stands for it
};

/// The edit that changes nothing.
Edit unchanged(const Graph &g) {
  Edit e;
  e.keepOutput.assign(g.outputs().size(), true);
  e.outputAs.assign(g.outputs().begin(), g.outputs().end());
  for (size_t i = 0; i < g.size(); ++i)
    e.replaced.push_back(static_cast<ValueId>(i));
  return e;
}

/// The graph `edit` describes: live values only, arguments that nothing reads
/// dropped, names kept.
Graph rebuild(const Graph &g, const Edit &edit) {
  auto resolve = [&](ValueId v) {
    while (edit.replaced[v] != v)
      v = edit.replaced[v];
    return v;
  };
  std::vector<bool> live(g.size(), false);
  for (size_t i = 0; i < g.outputs().size(); ++i)
    if (edit.keepOutput[i]) {
      live[resolve(edit.outputAs[i])] = true;
      if (g.updates()[i] >= 0)
        live[g.updates()[i]] = true;
    }
  for (size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (ValueId o : g.node(static_cast<ValueId>(i)).operands)
        live[resolve(o)] = true;
  Graph out(g.name());
  std::vector<ValueId> map(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    if (!live[i])
      continue;
    NodeSpec s = specOf(g.node(static_cast<ValueId>(i)));
    for (ValueId &o : s.operands)
      o = map[resolve(o)];
    map[i] = out.add(s);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    if (!edit.keepOutput[i])
      continue;
    ValueId v = map[resolve(edit.outputAs[i])], in = g.updates()[i];
    if (in >= 0 && map[in] != v && out.node(v).dtype == out.node(map[in]).dtype &&
        out.node(v).shape == out.node(map[in]).shape)
      out.update(map[in], v);
    else if (!llvm::is_contained(out.outputs(), v) && out.node(v).op != OpKind::Constant)
      out.output(v);
  }
  return out;
}

class Reducer {
public:
  Reducer(const std::function<bool(const Graph &)> &interesting, ReduceStats *stats)
      : Interesting(interesting), Stats(stats) {}

  Graph run(Graph g) {
    for (bool changed = true; changed;) {
      changed = false;
      if (std::optional<Graph> smaller = dropAnOutput(g)) {
        g = std::move(*smaller);
        changed = true;
        continue;
      }
      if (std::optional<Graph> smaller = bypassAnOp(g)) {
        g = std::move(*smaller);
        changed = true;
        continue;
      }
      if (std::optional<Graph> smaller = returnAnOperand(g)) {
        g = std::move(*smaller);
        changed = true;
      }
    }
    return g;
  }

private:
  std::optional<Graph> accept(const Graph &candidate) {
    if (Stats)
      ++Stats->tries;
    if (candidate.outputs().empty() || !Interesting(candidate))
      return std::nullopt;
    if (Stats)
      ++Stats->accepted;
    return candidate;
  }

  std::optional<Graph> dropAnOutput(const Graph &g) {
    if (g.outputs().size() < 2)
      return std::nullopt;
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      Edit e = unchanged(g);
      e.keepOutput[i] = false;
      if (std::optional<Graph> r = accept(rebuild(g, e)))
        return r;
    }
    return std::nullopt;
  }

  /// The last op first: a use of it replaced by one of its operands of the
  /// same dtype and shape (which removes the op and maybe more).
  std::optional<Graph> bypassAnOp(const Graph &g) {
    for (size_t i = g.size(); i-- > 0;) {
      const Node &n = g.node(static_cast<ValueId>(i));
      if (n.op == OpKind::Input || n.op == OpKind::Constant)
        continue;
      for (ValueId o : n.operands) {
        const Node &on = g.node(o);
        if (on.op == OpKind::Constant || on.dtype != n.dtype || on.shape != n.shape)
          continue;
        Edit e = unchanged(g);
        e.replaced[i] = o;
        if (std::optional<Graph> r = accept(rebuild(g, e)))
          return r;
      }
    }
    return std::nullopt;
  }

  /// An output replaced by one of its operands, of any shape (a reduction or
  /// a view at the end of a graph goes this way).
  std::optional<Graph> returnAnOperand(const Graph &g) {
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      if (g.updates()[i] >= 0)
        continue;
      for (ValueId o : g.node(g.outputs()[i]).operands) {
        if (g.node(o).op == OpKind::Constant)
          continue;
        Edit e = unchanged(g);
        e.outputAs[i] = o;
        if (std::optional<Graph> r = accept(rebuild(g, e)))
          return r;
      }
    }
    return std::nullopt;
  }

  const std::function<bool(const Graph &)> &Interesting;
  ReduceStats *Stats;
};

} // namespace

unsigned countOps(const Graph &g) {
  return static_cast<unsigned>(llvm::count_if(g.nodes(), [](const Node &n) {
    return n.op != OpKind::Input && n.op != OpKind::Constant;
  }));
}

Graph reduceGraph(const Graph &g, const std::function<bool(const Graph &)> &interesting,
                  ReduceStats *stats) {
  return Reducer(interesting, stats).run(rebuild(g, unchanged(g)));
}

} // namespace minijit
