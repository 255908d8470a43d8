//===- compiler/simplify/SliceSinking.cpp - slices moved toward the inputs ------===//
// One walk in graph order copies the graph. A slice whose operand only it
// reads is built anew as that operand's op over sliced operands, each of
// which may move further the same way; the full-sized op is left without a
// use and dropped by the caller.
//===----------------------------------------------------------------------===//
#include "compiler/simplify/SliceSinking.h"
#include "compiler/simplify/Simplify.h"
#include "ir/Limits.h"

#include "llvm/ADT/STLExtras.h"

namespace minijit {

namespace {

/// A slice's window on one axis: [start, end) every step-th element.
struct Window {
  int64_t axis, start, end, step;
  int64_t size() const { return end <= start ? 0 : (end - start - 1) / step + 1; }
};

class Sinker {
public:
  explicit Sinker(const Graph &g) : G(g), Out(g.name()), Map(g.size(), -1), Uses(g.size(), 0) {
    Out.reserveNamesOf(g);
    for (const Node &n : g.nodes())
      for (ValueId o : n.operands)
        ++Uses[o];
    for (ValueId o : g.outputs())
      ++Uses[o];
  }

  std::optional<Graph> run() {
    for (size_t i = 0; i < G.size(); ++i) {
      Left = G.size() - i;
      Map[i] = copy(G.node(static_cast<ValueId>(i)));
    }
    if (!Moved)
      return std::nullopt;
    copyOutputs(G, Map, Out);
    return std::move(Out);
  }

private:
  ValueId copy(const Node &n) {
    if (n.op == OpKind::Input)
      return Out.input(n.name, n.dtype, n.shape).id();
    if (n.op == OpKind::Slice) {
      Window w{n.axis, n.start, n.end, n.step};
      if (std::optional<ValueId> v = sunk(n.operands[0], w, n.name))
        return *v;
    }
    NodeSpec s = specOf(n);
    for (ValueId &o : s.operands)
      o = Map[o];
    return add(s);
  }

  /// Slice `w` of the value `v` of G, in Out, named `name`: the op that makes
  /// `v` over sliced operands where the slice alone reads `v` and the op
  /// allows it; else nullopt.
  std::optional<ValueId> sunk(ValueId v, const Window &w, const std::string &name) {
    // (the nodes G has left to copy fit beside the ones the move adds:
    // ir/Limits.h's kMaxNodes)
    std::optional<size_t> added = movedNodes(v, w);
    if (!added || Out.size() + Left + *added > kMaxNodes)
      return std::nullopt;
    NodeSpec s = movedOnto(G.node(v), w);
    Moved = true;
    s.name = name;
    return add(s);
  }

  /// The nodes moving slice `w` of `v` onto `v`'s operands adds (the op,
  /// and the moves or slices of its operands), where it may move: the slice
  /// alone reads `v`, its op can compute a part of it, and each slice left
  /// behind on the way reads a value that a kernel stores anyway (an input,
  /// a product, a scan, a gather, a random op) or makes from nothing (a
  /// literal, an iota). A slice of elementwise work that others read whole
  /// would split a kernel: a softmax's `exp(x - max)` read whole by its sum
  /// and in part by a sliced division would take a second kernel for the
  /// part. Each moved slice adds a view to its operand's chain (below a
  /// reduction or a product, which start their own, the chain grows):
  /// within ir/Limits.h's kMaxViewChain. nullopt where it may not move.
  std::optional<size_t> movedNodes(ValueId v, const Window &w) const {
    const Node &n = G.node(v);
    if (Uses[v] != 1 || n.shape.hasNames() || w.size() == 0)
      return std::nullopt;
    for (ValueId o : n.operands)
      if (G.node(o).shape.hasNames())
        return std::nullopt;
    std::optional<std::vector<std::optional<Window>>> windows = operandWindows(n, w);
    if (!windows)
      return std::nullopt;
    size_t added = 1;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      ValueId o = n.operands[i];
      if (!(*windows)[i])
        continue;
      if (G.viewChain(o) + 1 > kMaxViewChain)
        return std::nullopt;
      if (std::optional<size_t> below = movedNodes(o, *(*windows)[i]))
        added += *below;
      else if (stored(G.node(o)))
        added += 1;
      else
        return std::nullopt;
    }
    return added;
  }

  /// Whether a kernel stores `n`'s value whatever reads it, or makes it from
  /// nothing: a slice of it reads memory (or an index). Not a reduction: a
  /// row kernel computes its elementwise readers of the reduction's domain,
  /// and a part of them would take a kernel of its own.
  bool stored(const Node &n) const {
    if (n.op == OpKind::Slice) // a slice of a slice is one slice (Simplify joins them)
      return stored(G.node(n.operands[0]));
    switch (n.cls()) {
    case OpClass::Input:
    case OpClass::Constant:
    case OpClass::Iota:
    case OpClass::Matmul:
    case OpClass::Scan:
    case OpClass::Gather:
    case OpClass::Random:
      return true;
    default:
      return false;
    }
  }

  /// `n` computing only window `w` of its value, over its operands sliced
  /// (in Out).
  NodeSpec movedOnto(const Node &n, const Window &w) {
    std::vector<std::optional<Window>> windows = *operandWindows(n, w);
    NodeSpec s = specOf(n);
    s.name.clear();
    for (size_t i = 0; i < n.operands.size(); ++i)
      s.operands[i] = windows[i] ? slice(n.operands[i], *windows[i]) : Map[n.operands[i]];
    if (n.op == OpKind::Full || n.op == OpKind::Broadcast || n.op == OpKind::Reshape)
      s.shape = slicedShape(n.shape, w);
    return s;
  }

  /// How `n` computes window `w` of its value: the window of each operand it
  /// then reads (none: the operand whole, broadcast along the axis); nullopt
  /// where `n`'s op cannot compute a part.
  std::optional<std::vector<std::optional<Window>>> operandWindows(const Node &n,
                                                                   const Window &w) const {
    std::vector<std::optional<Window>> out(n.operands.size());
    auto along = [&](int64_t axis) { return Window{axis, w.start, w.end, w.step}; };
    switch (n.cls()) {
    case OpClass::Unary:
    case OpClass::Binary:
    case OpClass::Select:
    case OpClass::Cast:
      for (size_t i = 0; i < n.operands.size(); ++i)
        out[i] = broadcastWindow(n.operands[i], n.shape.rank(), w);
      return out;
    case OpClass::Reduce: {
      int64_t axis = w.axis;
      if (!n.keepdim) // the w.axis-th kept axis of the operand
        for (int64_t a : n.axes)
          if (a <= axis)
            ++axis;
      if (llvm::is_contained(n.axes, axis))
        return std::nullopt; // keepdim: a reduced axis of size 1
      out[0] = along(axis);
      return out;
    }
    case OpClass::Scan: {
      bool prefix = !n.reverse && w.start == 0, suffix = n.reverse && w.end == n.shape[n.axis];
      if (w.axis == n.axis && (w.step != 1 || !(prefix || suffix)))
        return std::nullopt;
      out[0] = w;
      return out;
    }
    case OpClass::Concat:
      if (w.axis == n.axis)
        return std::nullopt; // Simplify takes a slice within one operand
      for (auto &o : out)
        o = w;
      return out;
    case OpClass::Iota:
      if (n.op != OpKind::Full)
        return std::nullopt;
      return out;
    case OpClass::View:
      if (n.op == OpKind::Permute) {
        out[0] = along(n.perm[w.axis]);
        return out;
      }
      if (n.op == OpKind::Broadcast) {
        out[0] = broadcastWindow(n.operands[0], n.shape.rank(), w);
        return out;
      }
      if (n.op == OpKind::Reshape) {
        std::optional<int64_t> axis = reshapedAxis(G.node(n.operands[0]).shape, n.shape, w.axis);
        if (!axis)
          return std::nullopt;
        out[0] = along(*axis);
        return out;
      }
      return std::nullopt; // slices (a slice of stored memory is stored), pads, flips
    case OpClass::Matmul: {
      // [..., m, k] @ [..., k, n] along a batch axis (each operand that has
      // it), the rows (A's) or the columns (B's), with step 1: a strided
      // operand would be copied first.
      const Shape &a = G.node(n.operands[0]).shape, &b = G.node(n.operands[1]).shape;
      int64_t rank = n.shape.rank();
      if (w.step != 1 || a.rank() < 2 || b.rank() < 2)
        return std::nullopt;
      if (w.axis == rank - 2)
        out[0] = along(a.rank() - 2);
      else if (w.axis == rank - 1)
        out[1] = along(b.rank() - 1);
      else
        for (size_t i = 0; i < 2; ++i)
          out[i] = broadcastWindow(n.operands[i], rank, w);
      return out;
    }
    case OpClass::Input:
    case OpClass::Constant:
    case OpClass::Gather:
    case OpClass::Random:
    case OpClass::Derivative:
      return std::nullopt;
    }
    return std::nullopt;
  }

  /// The window of operand `o` of an op whose result has rank `rank`,
  /// aligned on the right: `w` along the same axis where `o` has it at full
  /// size, none where `o` is broadcast along it.
  std::optional<Window> broadcastWindow(ValueId o, int64_t rank, const Window &w) const {
    const Shape &s = G.node(o).shape;
    int64_t axis = w.axis - (rank - static_cast<int64_t>(s.rank()));
    if (axis < 0 || s[axis] == 1)
      return std::nullopt;
    return Window{axis, w.start, w.end, w.step};
  }

  /// Slice `w` of the value `o` of G, in Out: moved further where it can
  /// be, else a slice of `o`'s copy.
  ValueId slice(ValueId o, const Window &w) {
    if (std::optional<ValueId> v = sunk(o, w, ""))
      return *v;
    NodeSpec s;
    s.op = OpKind::Slice;
    s.operands = {Map[o]};
    s.axis = w.axis;
    s.start = w.start;
    s.end = w.end;
    s.step = w.step;
    return add(s);
  }

  static Shape slicedShape(const Shape &s, const Window &w) {
    DimVector dims(s.dims().begin(), s.dims().end());
    dims[w.axis] = w.size();
    return Shape(dims);
  }

  /// The axis of `from` that a reshape to `to` keeps whole as `to`'s axis
  /// `axis`: the axes of the two shapes fall into groups of equal products;
  /// where the group of `axis` has no other axis larger than 1 on either
  /// side, its one axis of `from` larger than 1 is the same axis. nullopt
  /// where the reshape merges or splits it.
  static std::optional<int64_t> reshapedAxis(const Shape &from, const Shape &to, int64_t axis) {
    int64_t i = 0, o = 0, fr = from.rank(), tr = to.rank();
    while (i < fr && o < tr) {
      int64_t i0 = i, o0 = o, pi = from[i++], po = to[o++];
      while (pi != po) {
        if (pi < po && i < fr)
          pi *= from[i++];
        else if (po < pi && o < tr)
          po *= to[o++];
        else
          return std::nullopt;
      }
      if (axis < o0 || axis >= o)
        continue;
      for (int64_t k = o0; k < o; ++k)
        if (k != axis && to[k] != 1)
          return std::nullopt;
      std::optional<int64_t> kept;
      for (int64_t k = i0; k < i; ++k)
        if (from[k] != 1) {
          if (kept)
            return std::nullopt;
          kept = k;
        }
      return kept;
    }
    return std::nullopt;
  }

  ValueId add(NodeSpec s) {
    if (!s.name.empty() && Out.lookup(s.name))
      s.name.clear();
    return Out.add(s);
  }

  const Graph &G;
  Graph Out;
  std::vector<ValueId> Map;
  std::vector<int> Uses; ///< of each value of G, outputs counted
  bool Moved = false;
  size_t Left = 0; ///< the nodes of G not yet copied, the one being copied among them
};

} // namespace

std::optional<Graph> sinkSlices(const Graph &g) { return Sinker(g).run(); }

} // namespace minijit
