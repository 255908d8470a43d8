//===- tests/support/RandomGraph.cpp - random graphs from a seed ----------===//
// A graph grows from a base shape (rank 1 to 5, odd sizes) one step at a
// time; each step takes values from the pool and pushes new ones. Values of
// the base shape in the graph's float type feed most steps; others (kept
// reductions, permuted values) may become outputs.
//
// To add an op: write
// a step that reads values with full() or any(), pushes what it makes with
// push(), and list it in Generator::steps() with a weight. A step that
// cannot apply to the current graph (a rank it needs, a shape) returns
// without pushing.
//===----------------------------------------------------------------------===//
#include "tests/support/RandomGraph.h"

#include "ir/Builder.h"
#include "ir/Error.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace minijit {

namespace {

class Generator {
public:
  Generator(uint64_t seed, const RandomGraphOptions &o)
      : Rng(seed * 0x9E3779B97F4A7C15ull + 17), Opt(o), G("rg" + std::to_string(seed)) {}

  Graph run() {
    makeBase();
    T = DType::F32;
    if (Opt.allowHalf && pick(4) == 0)
      T = pick(2) ? DType::F16 : DType::BF16;
    push(G.input("x", T, Shape(Base)));
    push(G.input("y", T, Shape(Base)));
    // Broadcast operands: leading dims dropped, or 1 in random positions.
    if (Base.size() > 1 || pick(2))
      push(G.input("b", T, broadcastShape()));
    if (pick(2))
      push(G.input("c", T, broadcastShape()));
    const auto &table = steps();
    int total = 0;
    for (const StepKind &s : table)
      total += s.weight;
    for (int i = 0; i < Opt.ops; ++i) {
      int r = static_cast<int>(pick(static_cast<size_t>(total)));
      for (const StepKind &s : table) {
        if (r < s.weight) {
          (this->*s.step)();
          break;
        }
        r -= s.weight;
      }
    }
    chooseOutputs();
    return std::move(G);
  }

private:
  using Step = void (Generator::*)();
  struct StepKind {
    Step step;
    int weight;
  };

  /// Every step and how often it is taken (the extension point).
  static const std::vector<StepKind> &steps() {
    static const std::vector<StepKind> table = {
        {&Generator::unaryStep, 4},     {&Generator::binaryStep, 4},
        {&Generator::selectStep, 2},    {&Generator::reduceStep, 4},
        {&Generator::permuteStep, 2},   {&Generator::reshapeStep, 2},
        {&Generator::broadcastStep, 1}, {&Generator::matmulStep, 1},
        {&Generator::castStep, 1},      {&Generator::integerStep, 1},
        {&Generator::affineStep, 1},    {&Generator::movementStep, 3},
    };
    return table;
  }

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(Rng); }
  Shape base() const { return Shape(Base); }
  void push(const Tensor &t) { Pool.push_back(t); }
  Tensor any() { return Pool[pick(Pool.size())]; }

  /// A value of the base shape and the graph's type (broadcast if needed).
  Tensor full() {
    for (int tries = 0; tries < 8; ++tries) {
      Tensor t = any();
      if (t.dtype() != T)
        continue;
      if (t.shape() == base())
        return t;
      if (broadcastsTo(t.shape(), base()))
        return t.broadcast(base());
    }
    return Pool[0];
  }

  void makeBase() {
    static const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 17, 33, 64, 100, 129};
    int rank = 1 + static_cast<int>(pick(4));
    if (rank == 4 && pick(3) == 0)
      rank = 5;
    int64_t budget = Opt.maxElements;
    for (int d = 0; d < rank; ++d) {
      int64_t s = sizes[pick(rank > 3 ? 8 : 11)];
      if (s > budget)
        s = 1;
      Base.push_back(s);
      budget = std::max<int64_t>(1, budget / s);
    }
  }

  /// A shape that broadcasts to the base: some leading dims dropped, then
  /// some of the rest set to 1.
  Shape broadcastShape() {
    size_t drop = pick(Base.size());
    DimVector s(Base.begin() + drop, Base.end());
    for (int64_t &d : s)
      if (pick(3) == 0)
        d = 1;
    return Shape(llvm::ArrayRef<int64_t>(s));
  }

  // ---- the steps

  void unaryStep() {
    Tensor a = full();
    switch (pick(10)) {
    case 0: push(tanh(a)); return;
    case 1: push(sigmoid(a)); return;
    case 2: push(sin(a)); return;
    case 3: push(cos(a) * a); return;
    case 4: push(abs(a)); return;
    case 5: push(-relu(a)); return;
    case 6: push(erf(a)); return;
    case 7: push(exp(tanh(a))); return;          // bounded exp
    case 8: push(sqrt(abs(a) + 0.5)); return;    // away from the pole of its slope
    default: push(rsqrt(a * a + 1.0)); return;
    }
  }

  void binaryStep() {
    Tensor a = full();
    Tensor b = any();
    if (b.dtype() != T || !broadcastsTo(b.shape(), a.shape()))
      b = full();
    switch (pick(6)) {
    case 0: push(a + b); return;
    case 1: push(a - b); return;
    case 2: push(a * b); return;
    case 3: push(maximum(a, b)); return;
    case 4: push(minimum(a, b)); return;
    default: push(a / (abs(b) + 1.5)); return; // a division kept away from 0
    }
  }

  void selectStep() {
    Tensor a = full(), b = full();
    switch (pick(3)) {
    case 0: push(where(gt(a, b), a - b, b - a)); return; // |a - b|: continuous
    case 1: push(where(lt(a, 0.25), a, b * 0.5)); return;
    default: push(where(logicalAnd(gt(a, 0.0), lt(b, 0.5)), a, b)); return;
    }
  }

  /// A reduction over any set of axes, keepdim either way; kept dims may be
  /// combined with the row again (softmax-like).
  void reduceStep() {
    Tensor a = full();
    DimVector axes;
    for (size_t d = 0; d < Base.size(); ++d)
      if (pick(2))
        axes.push_back(static_cast<int64_t>(d));
    if (axes.empty())
      axes.push_back(static_cast<int64_t>(pick(Base.size())));
    bool keep = pick(3) != 0;
    static const OpKind ops[] = {OpKind::Sum, OpKind::Max, OpKind::Min, OpKind::Mean, OpKind::Prod};
    OpKind op = ops[pick(5)];
    int64_t k = 1;
    for (int64_t ax : axes)
      k *= Base[ax];
    if (op == OpKind::Prod && k > 64)
      op = OpKind::Sum;
    // Products of values near 1 stay near 1.
    Tensor in = op == OpKind::Prod ? tanh(a) * 0.25 + 1.0 : tanh(a);
    Tensor r = reduce(op, in, axes, keep);
    push(r);
    if (keep && pick(2))
      push(tanh(a - r));
    // The result squeezed (its unit axes dropped, one put in front), as
    // PyTorch's 1-D pooling leaves it: it stays in the row kernel.
    if (pick(4) == 0) {
      DimVector squeezed{1};
      for (int64_t d : r.shape().dims())
        if (d != 1)
          squeezed.push_back(d);
      if (squeezed.size() <= kMaxRank)
        push(sin(r.reshape(Shape(llvm::ArrayRef<int64_t>(squeezed)))));
    }
  }

  /// A permute of any rank, an op on the permuted value, the inverse permute.
  void permuteStep() {
    if (Base.size() < 2)
      return;
    DimVector perm(Base.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), Rng);
    DimVector inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[perm[i]] = static_cast<int64_t>(i);
    Tensor p = tanh(full().permute(perm));
    if (pick(3) == 0)
      push(p); // another shape: may become an output
    push(p.permute(inverse) * 0.75);
  }

  /// A reshape that merges two neighbouring axes, splits one into factors
  /// or flattens; an op there; the reshape back.
  void reshapeStep() {
    DimVector to;
    size_t d = pick(Base.size());
    switch (pick(3)) {
    case 0: // merge d and d + 1
      if (d + 1 >= Base.size())
        return;
      to.assign(Base.begin(), Base.begin() + d);
      to.push_back(Base[d] * Base[d + 1]);
      to.insert(to.end(), Base.begin() + d + 2, Base.end());
      break;
    case 1: { // split d by its smallest factor
      int64_t f = 2;
      while (f < Base[d] && Base[d] % f)
        ++f;
      if (f >= Base[d] || Base.size() >= kMaxRank)
        return;
      to.assign(Base.begin(), Base.begin() + d);
      to.push_back(f);
      to.push_back(Base[d] / f);
      to.insert(to.end(), Base.begin() + d + 1, Base.end());
      break;
    }
    default: to.push_back(base().numel()); break;
    }
    Tensor r = sin(full().reshape(Shape(llvm::ArrayRef<int64_t>(to))));
    if (pick(3) == 0)
      push(r);
    push(r.reshape(base()));
  }

  /// An explicit broadcast of a smaller value to the base shape.
  void broadcastStep() {
    Tensor a = any();
    if (a.dtype() != T || a.shape() == base() || !broadcastsTo(a.shape(), base()))
      return;
    push(a.broadcast(base()) * 1.5 - full());
  }

  /// A matmul over the last axis with a fused epilogue (a bias, an activation).
  void matmulStep() {
    if (Base.size() < 2 || Matmuls >= 2)
      return;
    int64_t k = Base.back();
    std::string n = std::to_string(Matmuls++);
    Tensor w = G.input("w" + n, T, {k, k});
    Tensor m = matmul(full(), w) * (1.0 / std::sqrt(static_cast<double>(k)));
    switch (pick(3)) {
    case 0: push(m); return;
    case 1: push(tanh(m + G.input("bias" + n, T, {k}))); return;
    default: push(relu(m) - full()); return;
    }
  }

  /// A rounding point: to a 16-bit type and back (f32 graphs), or through
  /// f32 (16-bit graphs).
  void castStep() {
    if (!Opt.allowHalf)
      return;
    Tensor a = full();
    if (T != DType::F32) {
      push(cast(tanh(cast(a, DType::F32)) * 3.0, T));
      return;
    }
    DType narrow = pick(2) ? DType::F16 : DType::BF16;
    push(cast(cast(a, narrow) * 2.0, DType::F32));
  }

  /// Integers: a value quantised to i32, integer arithmetic, an integer sum
  /// maybe, back to the float type.
  void integerStep() {
    Tensor q = cast(floor(full() * 4.0), DType::I32);
    Tensor r = pick(2) ? maximum(q * 3, q + 5) : q * q - q;
    if (pick(2) && Base.size() > 0) {
      int64_t ax = static_cast<int64_t>(pick(Base.size()));
      push(cast(sum(r, {ax}, true), T) * 0.01);
      return;
    }
    push(cast(r, T) * 0.125);
  }

  void affineStep() { push(full() * 1.25 + 0.5); }

  /// The data-movement ops along a random axis, each ending in the base
  /// shape: a slice padded back, two slices concatenated, a take of the
  /// reversed positions, a gather of each row's argmax, running sums and
  /// products, an argmax as a value, an iota.
  void movementStep() {
    if (!Opt.dataMovement)
      return;
    int64_t d = static_cast<int64_t>(pick(Base.size()));
    int64_t size = Base[d];
    Tensor a = full();
    auto onAxis = [&](int64_t before, int64_t after) {
      DimVector b(Base.size(), 0), e(Base.size(), 0);
      b[d] = before;
      e[d] = after;
      return std::make_pair(b, e);
    };
    switch (pick(8)) {
    case 0: { // drop the first element, pad it back with 0.5
      if (size < 2)
        return;
      auto [b, e] = onAxis(1, 0);
      push(pad(tanh(slice(a, d, 1, size)), b, e, 0.5));
      return;
    }
    case 1: { // two halves, different ops, side by side again
      if (size < 2)
        return;
      int64_t h = 1 + static_cast<int64_t>(pick(static_cast<size_t>(size - 1)));
      push(concat({sin(slice(a, d, 0, h)), slice(a, d, h, size) * 0.5}, d));
      return;
    }
    case 2: { // the axis reversed through take
      Tensor idx = (size - 1) - iota(G, Shape{size}, 0);
      push(take(a, idx, d) - a);
      return;
    }
    case 3: { // each row's largest element, gathered at its argmax
      Tensor t = tanh(a);
      push(takeAlongAxis(t, argmax(t, d, true), d) - t);
      return;
    }
    case 4: // reversed along odd axes (no draw: the stream of graphs stays as it was)
      push(cumsum(tanh(a), d, /*reverse=*/size % 2 == 1) * (1.0 / static_cast<double>(size)));
      return;
    case 5:
      if (size > 64)
        return;
      push(cumprod(tanh(a) * 0.1 + 1.0, d));
      return;
    case 6: push(cast(argmin(a, d, true), T) * 0.25 + a); return;
    default: push(iota(G, base(), d, T) * 0.125 - a); return;
    }
  }

  /// The last value and up to three more (not arguments), each once.
  void chooseOutputs() {
    G.output(Pool.back());
    for (int i = 0; i < 3; ++i) {
      Tensor o = any();
      if (o.node().op != OpKind::Input && !llvm::is_contained(G.outputs(), o.id()) && pick(2))
        G.output(o);
    }
  }

  std::mt19937_64 Rng;
  RandomGraphOptions Opt;
  Graph G;
  DimVector Base;
  DType T = DType::F32;
  std::vector<Tensor> Pool;
  int Matmuls = 0;
};

} // namespace

Graph randomGraph(uint64_t seed, const RandomGraphOptions &options) {
  Generator g(seed, options);
  return g.run();
}

namespace {

/// `s` with each dimension that is a multiple k of `size` named k * `name`.
Shape namedSizes(const Shape &s, int64_t size, const std::string &name) {
  std::vector<Dim> dims;
  for (unsigned d = 0; d < s.rank(); ++d) {
    int64_t v = s[d];
    bool multiple = size > 1 && v % size == 0;
    dims.push_back(multiple ? Dim(v / size) * Dim(name) : Dim(v));
  }
  return Shape(std::span<const Dim>(dims));
}

} // namespace

std::optional<Graph> nameDimension(const Graph &g, int64_t size, const std::string &name) {
  Graph out(g.name());
  try {
    for (const Node &n : g.nodes()) {
      NodeSpec spec = specOf(n);
      bool attribute = n.op == OpKind::Input || n.op == OpKind::Reshape ||
                       n.op == OpKind::Broadcast || n.cls() == OpClass::Iota;
      if (attribute) {
        spec.shape = namedSizes(n.shape, size, name);
        // An argument takes single names (a multiple stays a number there).
        if (n.op == OpKind::Input)
          for (unsigned d = 0; d < n.shape.rank(); ++d)
            if (spec.shape.dim(d).isNamed() && spec.shape.dim(d).expr().coef != 1)
              spec.shape.setDim(d, Dim(n.shape[d]));
      }
      out.add(spec);
    }
    out.copyResults(g);
  } catch (const GraphError &) {
    return std::nullopt;
  }
  bool named = false;
  for (ValueId in : out.inputs())
    named = named || out.node(in).shape.hasNames();
  if (!named)
    return std::nullopt;
  return out;
}

} // namespace minijit
