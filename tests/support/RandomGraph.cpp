//===- tests/support/RandomGraph.cpp - random graphs from a seed ----------===//
#include "tests/support/RandomGraph.h"

#include "ir/Builder.h"

#include <random>

namespace minijit {

namespace {

class Generator {
public:
  Generator(uint64_t seed, const RandomGraphOptions &o)
      : Rng(seed * 0x9E3779B97F4A7C15ull + 17), Opt(o), G("rg" + std::to_string(seed)) {}

  Graph run() {
    // A base shape of rank 1..3 with odd sizes, and inputs over it and over
    // broadcastable sub-shapes.
    int rank = 1 + pick(3);
    static const int64_t sizes[] = {1, 3, 5, 7, 17, 33, 64, 100, 129};
    int64_t budget = Opt.maxElements;
    for (int d = 0; d < rank; ++d) {
      int64_t s = sizes[pick(9)];
      if (s > budget)
        s = 1;
      Base.push_back(s);
      budget = std::max<int64_t>(1, budget / s);
    }
    DType t = DType::F32;
    if (Opt.allowHalf && pick(4) == 0)
      t = pick(2) ? DType::F16 : DType::BF16;
    Pool.push_back(G.input("x", t, Shape(Base)));
    Pool.push_back(G.input("y", t, Shape(Base)));
    if (rank > 1) {
      DimVector row(Base.begin() + 1, Base.end());
      Pool.push_back(G.input("b", t, Shape(row)));
    }
    for (int i = 0; i < Opt.ops; ++i)
      step();
    // Up to three outputs, the last value always among them.
    G.output(Pool.back());
    for (int i = 0; i < 2; ++i) {
      Tensor o = Pool[pick(Pool.size())];
      if (o.node().op != OpKind::Input && !llvm::is_contained(G.outputs(), o.id()) && pick(2))
        G.output(o);
    }
    return std::move(G);
  }

private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(Rng); }
  Tensor any() { return Pool[pick(Pool.size())]; }
  /// A value of the base shape (broadcast if needed).
  Tensor full() {
    for (int tries = 0; tries < 8; ++tries) {
      Tensor t = any();
      if (t.shape() == Shape(Base))
        return t;
      if (broadcastsTo(t.shape(), Shape(Base)))
        return t.broadcast(Shape(Base));
    }
    return Pool[0];
  }

  void step() {
    Tensor a = full();
    switch (pick(10)) {
    case 0: {
      static const OpKind ops[] = {OpKind::Tanh, OpKind::Sigmoid, OpKind::Sin, OpKind::Cos,
                                   OpKind::Abs,  OpKind::Neg,     OpKind::Relu};
      Pool.push_back(unary(ops[pick(7)], a));
      break;
    }
    case 1:
    case 2: {
      static const OpKind ops[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Maximum,
                                   OpKind::Minimum};
      Tensor b = any();
      if (!broadcastsTo(b.shape(), a.shape()))
        b = full();
      Pool.push_back(binary(ops[pick(5)], a, b));
      break;
    }
    case 3: { // |a - b| through where: continuous, so rounding cannot flip it far
      Tensor b = full();
      Pool.push_back(where(gt(a, b), a - b, b - a));
      break;
    }
    case 4:
    case 5: { // a reduction, maybe broadcast back and combined (softmax-like)
      if (Base.size() < 1)
        break;
      DimVector axes;
      for (size_t d = 0; d < Base.size(); ++d)
        if (pick(2))
          axes.push_back(static_cast<int64_t>(d));
      if (axes.empty())
        axes.push_back(static_cast<int64_t>(Base.size() - 1));
      static const OpKind ops[] = {OpKind::Sum, OpKind::Max, OpKind::Min, OpKind::Mean};
      Tensor r = reduce(ops[pick(4)], tanh(a), axes, /*keepdim=*/true);
      Pool.push_back(r);
      if (pick(2))
        Pool.push_back(tanh(a - r));
      break;
    }
    case 6: { // a permute of the base shape, used in the base order again
      if (Base.size() < 2)
        break;
      DimVector perm;
      for (size_t d = Base.size(); d-- > 0;)
        perm.push_back(static_cast<int64_t>(d));
      Tensor p = a.permute(perm);
      Pool.push_back(p.permute(perm) * 0.75);
      break;
    }
    case 7: { // a reshape to a flat vector and back
      Tensor f = a.reshape(Shape{Shape(Base).numel()});
      Pool.push_back(sin(f).reshape(Shape(Base)));
      break;
    }
    case 8: {
      Pool.push_back(a * 1.25 + 0.5);
      break;
    }
    default:
      Pool.push_back(cos(a) * a);
      break;
    }
  }

  std::mt19937_64 Rng;
  RandomGraphOptions Opt;
  Graph G;
  DimVector Base;
  std::vector<Tensor> Pool;
};

} // namespace

Graph randomGraph(uint64_t seed, const RandomGraphOptions &options) {
  Generator g(seed, options);
  return g.run();
}

} // namespace minijit
