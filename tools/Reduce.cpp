//===- tools/Reduce.cpp - shrink a graph while a condition holds ----------===//
#include "tools/Reduce.h"

#include "ir/Error.h"
#include "ir/Printer.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <functional>
#include <optional>
#include <vector>

#include <sys/wait.h>

namespace minijit {

namespace {

/// One candidate: which outputs stay, and which values stand for which.
struct Edit {
  std::vector<bool> keepOutput;   ///< per output of the source graph
  std::vector<ValueId> outputAs;  ///< per output: the value returned in its place
  std::vector<ValueId> replaced;  ///< per value: the value that stands for it
  std::vector<OpKind> opAs;       ///< per value: the op it is rebuilt with
};

/// The edit that changes nothing.
Edit unchanged(const Graph &g) {
  Edit e;
  e.keepOutput.assign(g.outputs().size(), true);
  e.outputAs.assign(g.outputs().begin(), g.outputs().end());
  for (size_t i = 0; i < g.size(); ++i) {
    e.replaced.push_back(static_cast<ValueId>(i));
    e.opAs.push_back(g.node(static_cast<ValueId>(i)).op);
  }
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
    s.op = edit.opAs[i];
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

bool isComparison(OpKind op) {
  return op == OpKind::Eq || op == OpKind::Ne || op == OpKind::Lt || op == OpKind::Le ||
         op == OpKind::Gt || op == OpKind::Ge || op == OpKind::And || op == OpKind::Or;
}

/// `shape` with every dimension of size `from` made `to`.
Shape substituted(const Shape &shape, int64_t from, int64_t to) {
  DimVector dims(shape.dims().begin(), shape.dims().end());
  for (int64_t &d : dims)
    if (d == from)
      d = to;
  return Shape(llvm::ArrayRef<int64_t>(dims));
}

/// A reshape's target after its operand became `in`: the sizes substituted,
/// then one dimension (a merged one, the largest first) absorbing the
/// change in the element count; nullopt when none can.
std::optional<Shape> reshapedTo(const Shape &target, const Shape &in, int64_t from, int64_t to) {
  Shape t = substituted(target, from, to);
  if (t.numel() == in.numel())
    return t;
  DimVector dims(t.dims().begin(), t.dims().end());
  std::vector<size_t> order(dims.size());
  for (size_t j = 0; j < order.size(); ++j)
    order[j] = j;
  llvm::sort(order, [&](size_t a, size_t b) { return dims[a] > dims[b]; });
  for (size_t j : order) {
    int64_t others = 1;
    for (size_t k = 0; k < dims.size(); ++k)
      if (k != j)
        others *= dims[k];
    if (others > 0 && in.numel() % others == 0 && in.numel() / others >= 1) {
      dims[j] = in.numel() / others;
      return Shape(llvm::ArrayRef<int64_t>(dims));
    }
  }
  return std::nullopt;
}

/// `g` with the size `from` made `to` in its arguments and in the shapes its
/// reshapes and broadcasts name; nullopt when the result is not a valid graph
/// (a candidate the reducer skips).
std::optional<Graph> resized(const Graph &g, int64_t from, int64_t to) {
  Graph out(g.name());
  try { // Graph::add checks each node; a failed check only rules the candidate out
    for (size_t i = 0; i < g.size(); ++i) {
      NodeSpec s = specOf(g.node(static_cast<ValueId>(i)));
      if (s.op == OpKind::Reshape) {
        std::optional<Shape> t = reshapedTo(s.shape, out.node(s.operands[0]).shape, from, to);
        if (!t)
          return std::nullopt;
        s.shape = *t;
      } else if (opInfo(s.op).hasShapeAttr()) { // arguments, iota, full, rand, broadcast
        s.shape = substituted(s.shape, from, to);
      }
      out.add(s);
    }
    out.copyResults(g);
  } catch (const GraphError &) {
    return std::nullopt;
  }
  return out;
}

/// The elements of all values of `g`: a resize must lower it (a size that
/// only a reshape's result has comes back when the reshape absorbs it).
int64_t elements(const Graph &g) {
  int64_t n = 0;
  for (const Node &v : g.nodes())
    n += v.shape.numel();
  return n;
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
        continue;
      }
      if (std::optional<Graph> smaller = shrinkASize(g)) {
        g = std::move(*smaller);
        changed = true;
        continue;
      }
      if (std::optional<Graph> simpler = simplifyAnOp(g)) {
        g = std::move(*simpler);
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

  /// The last op first: a use of it replaced by one of its operands (or
  /// what views above one read) of the same dtype and shape (which removes
  /// the op and maybe more).
  std::optional<Graph> bypassAnOp(const Graph &g) {
    for (size_t i = g.size(); i-- > 0;) {
      const Node &n = g.node(static_cast<ValueId>(i));
      if (n.op == OpKind::Input || n.op == OpKind::Constant)
        continue;
      // Its operands, and what a chain of views above an operand reads (a
      // reshape and its inverse go together this way).
      llvm::SmallVector<ValueId, 8> sources(n.operands.begin(), n.operands.end());
      for (size_t k = 0; k < sources.size() && sources.size() < 8; ++k)
        if (g.node(sources[k]).cls() == OpClass::View)
          sources.push_back(g.node(sources[k]).operands[0]);
      for (ValueId o : sources) {
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

  /// One size made smaller everywhere it occurs (the largest size first;
  /// 1, 2, half, one less).
  std::optional<Graph> shrinkASize(const Graph &g) {
    std::vector<int64_t> sizes;
    for (const Node &n : g.nodes())
      for (int64_t d : n.shape.dims())
        if (d > 1 && !llvm::is_contained(sizes, d))
          sizes.push_back(d);
    llvm::sort(sizes, std::greater<int64_t>());
    for (int64_t from : sizes) {
      std::vector<int64_t> tos;
      for (int64_t to : {int64_t(1), int64_t(2), from / 2, from - 1})
        if (to >= 1 && to < from && !llvm::is_contained(tos, to))
          tos.push_back(to);
      for (int64_t to : tos)
        if (std::optional<Graph> c = resized(g, from, to); c && elements(*c) < elements(g))
          if (std::optional<Graph> r = accept(*c))
            return r;
    }
    return std::nullopt;
  }

  /// An op replaced by a plainer one of its kind: a float unary op by neg, a
  /// float binary op by add (the last op first).
  std::optional<Graph> simplifyAnOp(const Graph &g) {
    for (size_t i = g.size(); i-- > 0;) {
      const Node &n = g.node(static_cast<ValueId>(i));
      if (!isFloat(n.dtype))
        continue;
      OpKind plain = n.cls() == OpClass::Unary ? OpKind::Neg : OpKind::Add;
      if ((n.cls() != OpClass::Unary && n.cls() != OpClass::Binary) || n.op == plain ||
          isComparison(n.op))
        continue;
      Edit e = unchanged(g);
      e.opAs[i] = plain;
      if (std::optional<Graph> r = accept(rebuild(g, e)))
        return r;
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

namespace {

/// Runs `until` on `g` written to `path`: true when it exits 0.
bool commandSucceeds(const Graph &g, const std::string &until, const std::string &path) {
  std::error_code ec;
  {
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      throw GraphError("reduce: cannot write " + path + ": " + ec.message());
    os << printGraph(g);
  }
  std::string cmd = until;
  size_t at = cmd.find("{}");
  if (at == std::string::npos)
    cmd += " " + path;
  for (; at != std::string::npos; at = cmd.find("{}", at + path.size()))
    cmd.replace(at, 2, path);
  llvm::outs().flush();
  int rc = std::system(cmd.c_str());
  return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

} // namespace

std::optional<Graph> reduceWithCommand(const Graph &g, const std::string &until,
                                       ReduceStats *stats) {
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("minijit-reduce", dir))
    throw GraphError("reduce: cannot make a scratch folder: " + ec.message());
  std::string path = (dir + "/candidate.mj").str();
  std::optional<Graph> small;
  if (commandSucceeds(g, until, path))
    small = reduceGraph(
        g, [&](const Graph &c) { return commandSucceeds(c, until, path); }, stats);
  llvm::sys::fs::remove_directories(dir);
  return small;
}

} // namespace minijit
