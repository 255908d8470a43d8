//===- ir/Graph.h - the tensor graph IR ------------------------*- C++ -*-===//
// A Graph is a list of nodes in SSA form and topological order: every node's
// operands come before it. Nodes are checked and their types inferred when
// they are added, so a Graph that exists is valid.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/Op.h"
#include "ir/Shape.h"

#include <concepts>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace minijit {

/// A node's position in its graph.
using ValueId = int32_t;

using DimVector = std::vector<int64_t>;

/// One value of the graph: the op that makes it, its result type, operands and
/// attributes. Which attributes matter depends on the op; the target shape of
/// reshape/broadcast is `shape`, the target of cast is `dtype`.
struct Node {
  OpKind op = OpKind::Input;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<ValueId> operands;
  std::string name;  ///< without the '%'; empty for constants
  DimVector axes;    ///< Reduce: the reduced axes, sorted and distinct
  bool keepdim = false; ///< Reduce: keep reduced axes as size 1
  DimVector perm;    ///< Permute: output dim i is input dim perm[i]
  double value = 0;  ///< Constant: the value, already rounded to dtype; Pad: the pad value
  int64_t axis = 0;  ///< Slice, Concat, Iota: the axis (0..rank-1)
  /// Slice: the first element, the bound (both 0..size, start <= end) and the
  /// step (>= 1), as given with negative bounds resolved.
  int64_t start = 0, end = 0, step = 1;
  DimVector before, after; ///< Pad: elements added ahead of and behind each axis
  bool reverse = false; ///< Scan: from the axis's last element to its first

  bool is(OpKind k) const { return op == k; }
  OpClass cls() const { return opClass(op); }
};

/// What a caller asks for; Graph::add checks it and infers the result type.
struct NodeSpec {
  OpKind op = OpKind::Input;
  std::vector<ValueId> operands;
  std::optional<DimVector> axes; ///< Reduce: nullopt reduces every axis; negatives count from the end
  bool keepdim = false;
  DimVector perm;
  Shape shape;               ///< Input, Reshape, Broadcast, Iota
  DType dtype = DType::F32;  ///< Input, Constant, Cast, Iota
  double value = 0;          ///< Constant; Pad: the pad value
  int64_t axis = 0;          ///< Slice, Concat, Iota; negative counts from the end
  int64_t start = 0, end = 0, step = 1; ///< Slice; negative start/end count from the end
  DimVector before, after;   ///< Pad
  bool reverse = false;      ///< Scan: from the last element to the first
  std::string name;          ///< empty: a fresh name is chosen (none for constants)
};

/// The spec that rebuilds node `n` (with the same operand ids); passes map
/// the operands when they copy a node into another graph.
NodeSpec specOf(const Node &n);

class Tensor;

/// An integer type an axis may be given in: not bool, not a character type
/// (so a string is not a list of axes).
template <typename I>
concept AxisInteger = std::integral<I> && !std::same_as<std::remove_cv_t<I>, bool> &&
                      !std::same_as<std::remove_cv_t<I>, char> &&
                      !std::same_as<std::remove_cv_t<I>, char8_t> &&
                      !std::same_as<std::remove_cv_t<I>, char16_t> &&
                      !std::same_as<std::remove_cv_t<I>, char32_t> &&
                      !std::same_as<std::remove_cv_t<I>, wchar_t>;

/// A range of AxisIntegers: what std::ranges::begin and end accept (a
/// container, a span, an array). Spelled with <iterator> alone, which costs a
/// user's translation unit much less to compile than <ranges>.
template <typename R>
concept AxisRange =
    requires(const R &r) {
      { std::ranges::begin(r) } -> std::input_iterator;
      { std::ranges::end(r) } -> std::sentinel_for<decltype(std::ranges::begin(r))>;
    } && AxisInteger<std::iter_value_t<decltype(std::ranges::begin(std::declval<const R &>()))>>;

/// A list of axes (or a permutation) from any range of integers: a braced
/// list `{0, 1}`, std::vector<int>, std::span<const int64_t>, std::array ...
/// An empty list means "not given" where an op has a default (a reduction of
/// every axis).
class AxisList {
public:
  AxisList() = default;
  template <AxisInteger I>
  AxisList(std::initializer_list<I> axes) : Axes(axes.begin(), axes.end()) {}
  template <AxisRange R> AxisList(const R &axes) {
    for (auto it = std::ranges::begin(axes); it != std::ranges::end(axes); ++it)
      Axes.push_back(*it);
  }

  bool empty() const { return Axes.empty(); }
  size_t size() const { return Axes.size(); }
  const int64_t *begin() const { return Axes.data(); }
  const int64_t *end() const { return Axes.data() + Axes.size(); }
  int64_t operator[](size_t i) const { return Axes[i]; }

private:
  std::vector<int64_t> Axes;
};

/// The language a graph is being built in, which the hints of Graph::add's
/// errors are written in: the text format (`cast %x to=f32`, the parser's) or
/// the C++ API (`x.cast(DType::F32)`, ir/Builder.h's).
enum class Spelling { Text, Cpp };

class Graph {
public:
  explicit Graph(std::string name = "main");

  const std::string &name() const { return Name; }
  size_t size() const { return Nodes.size(); }
  const Node &node(ValueId id) const { return Nodes[id]; }
  /// The length of the longest chain of ops ending at `id` (0 for arguments
  /// and literals); at most kMaxDepth.
  unsigned depth(ValueId id) const { return Depths[id].ops; }
  /// The most views in a chain ending at `id` since the last reduction or
  /// matmul; at most kMaxViewChain.
  unsigned viewChain(ValueId id) const { return Depths[id].views; }
  const std::vector<Node> &nodes() const { return Nodes; }
  const std::vector<ValueId> &inputs() const { return Inputs; }
  const std::vector<ValueId> &outputs() const { return Outputs; }
  /// Parallel to outputs(): the argument each output updates in place, or
  /// -1 for a plain output.
  const std::vector<ValueId> &updates() const { return Updates; }
  /// The position in inputs() of the argument output `o` updates in place,
  /// or -1 for a plain output.
  int updatedInput(size_t o) const;

  /// Checks `spec` (operands exist, dtypes and shapes agree, attributes are in
  /// range, the graph stays within the limits of ir/Limits.h), infers the
  /// result type and appends the node. Throws GraphError with the numbers
  /// when something is wrong; its hints use `spelling`.
  ValueId add(const NodeSpec &spec, Spelling spelling = Spelling::Text);

  /// Declares a graph argument.
  Tensor input(std::string_view name, DType dtype, const Shape &shape);
  /// A scalar literal of the given dtype: i32 and bool values must be exact;
  /// float values are kept at f32 precision (f16/bf16 arithmetic is in f32).
  ValueId constant(double value, DType dtype);
  /// Marks a value as a result of the graph, optionally renaming it. An
  /// argument keeps its name (callers bind inputs by it): naming an argument
  /// returned as an output throws GraphError; return it under its own name.
  /// Throws GraphError for a literal, a value or Tensor of another graph, or
  /// an empty Tensor.
  void output(ValueId id, std::string_view name = "");
  void output(const Tensor &t, std::string_view name = "");
  /// Marks `value` as a result of the graph that is also written into the
  /// argument `input` in place: after a run on device tensors, the input's
  /// memory holds the value (a training step's new weights). The text
  /// format spells it `return %value -> %input`. Throws GraphError when
  /// `input` is not an argument, the types differ, the input is already
  /// updated by another value, or `value` is the input itself.
  void update(ValueId input, ValueId value);
  void update(const Tensor &input, const Tensor &value);

  /// Marks as this graph's results the outputs and in-place updates of
  /// `from`, whose values have the same ids here (a copy of `from` node by
  /// node, as passes and binding make).
  void copyResults(const Graph &from);

  /// The value named `name` (without '%'), if any.
  std::optional<ValueId> lookup(std::string_view name) const;
  /// Renames a value; throws GraphError if the name is taken or not a valid name.
  void rename(ValueId id, std::string_view name);

  /// A name is letters, digits, '_' and '.'.
  static bool isValidName(std::string_view name);

  /// The fresh names this graph chooses (`tN`, for nodes added without a
  /// name) avoid the names of `g` too: a pass that copies `g` into this
  /// graph, adding nodes of its own on the way, leaves the names of the
  /// values it copies later (outputs among them) to those values.
  void reserveNamesOf(const Graph &g);

private:
  std::string freshName();

  std::string Name;
  std::vector<Node> Nodes;
  struct Depth {
    unsigned ops = 0, views = 0;
  };
  std::vector<Depth> Depths; ///< parallel to Nodes
  std::vector<ValueId> Inputs, Outputs, Updates;
  std::unordered_map<std::string, ValueId> Names;
  std::unordered_set<std::string> Reserved; ///< reserveNamesOf
  unsigned NextTemp = 0;
};

/// A handle on one value of a graph, for building graphs that read like the
/// math (see ir/Builder.h). The graph must outlive its handles. A
/// default-constructed Tensor is empty: it belongs to no graph, and every
/// accessor and op on it throws GraphError.
class Tensor {
public:
  Tensor() = default;
  Tensor(Graph *g, ValueId id) : G(g), Id(id) {}

  /// True for a default-constructed Tensor.
  bool empty() const { return G == nullptr; }
  explicit operator bool() const { return !empty(); }

  /// The graph the value belongs to; throws GraphError for an empty Tensor.
  Graph &graph() const {
    if (!G)
      failEmpty();
    return *G;
  }
  ValueId id() const { return Id; }
  const Node &node() const { return graph().node(Id); }
  DType dtype() const { return node().dtype; }
  const Shape &shape() const { return node().shape; }

  /// The views and the cast, as members; each is also a free function of
  /// ir/Builder.h (reshape(x, shape), ...), which documents them.
  Tensor reshape(const Shape &shape) const;
  Tensor permute(const AxisList &perm) const;
  Tensor broadcast(const Shape &shape) const;
  Tensor cast(DType to) const;
  /// Swaps axes a and b (negative counts from the end): a permute.
  Tensor transpose(int64_t a, int64_t b) const;
  /// Swaps the last two axes (a matrix's transpose); rank >= 2.
  Tensor transpose() const;
  /// The reductions, as members (x.sum({1}, true)); each is also a free
  /// function of ir/Builder.h. No axes: every axis.
  Tensor sum(const AxisList &axes = {}, bool keepdim = false) const;
  Tensor mean(const AxisList &axes = {}, bool keepdim = false) const;
  Tensor max(const AxisList &axes = {}, bool keepdim = false) const;
  Tensor min(const AxisList &axes = {}, bool keepdim = false) const;
  Tensor prod(const AxisList &axes = {}, bool keepdim = false) const;
  /// Renames the value (its printed %name) and returns it.
  Tensor named(std::string_view name) const;

private:
  [[noreturn]] static void failEmpty();

  Graph *G = nullptr;
  ValueId Id = -1;
};

} // namespace minijit
