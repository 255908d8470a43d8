//===- ir/Autodiff.cpp - reverse-mode autodiff, graph to graph ------------===//
// The graph is copied node by node. At the first grad (or vjp) of a loss, one
// reverse sweep walks the copied nodes from the loss back to the values any
// grad of that loss asks for, and appends, for each node on the way, the
// nodes of its gradient rule. Rules are written with the builder, so they
// read like the math and get the graph's checks for free.
//===----------------------------------------------------------------------===//
#include "ir/Autodiff.h"

#include "ir/Bind.h"
#include "ir/Builder.h"
#include "ir/Error.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <map>
#include <memory>

namespace minijit {

namespace {

/// The axes of `to` that broadcasting stretched to reach `from`: the leading
/// axes `to` lacks, and axes where `to` has 1 and `from` does not.
DimVector stretchedAxes(const Shape &from, const Shape &to) {
  DimVector axes;
  unsigned lead = from.rank() - to.rank();
  for (unsigned i = 0; i < from.rank(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  return axes;
}

/// The gradient of a broadcast: `g` summed over the stretched axes, back in
/// the shape `to` (a copy: a shape of a node in the graph would move when
/// the graph grows).
Tensor unbroadcast(const Tensor &g, Shape to) {
  if (g.shape() == to)
    return g;
  DimVector axes = stretchedAxes(g.shape(), to);
  Tensor s = axes.empty() ? g : sum(g, axes, /*keepdim=*/false);
  return s.shape() == to ? s : s.reshape(to);
}

/// The shape of a reduction's result with its reduced axes kept as 1.
Shape keptShape(const Node &red, const Shape &in) {
  DimVector dims(in.dims().begin(), in.dims().end());
  for (int64_t a : red.axes)
    dims[a] = 1;
  return Shape(llvm::ArrayRef<int64_t>(dims));
}

/// Swaps the last two axes (a matmul operand's transpose).
Tensor transposed(const Tensor &t) {
  DimVector perm;
  for (unsigned i = 0; i < t.shape().rank(); ++i)
    perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return t.permute(perm);
}

/// One reverse sweep: the gradients of one loss (or of one vjp's output and
/// cotangent) with respect to a set of values, appended to G.
class Sweep {
public:
  Sweep(Graph &g, ValueId loss, Tensor seed, llvm::ArrayRef<ValueId> wrt)
      : G(g), Loss(loss), FirstMade(static_cast<ValueId>(g.size())), Adjoint(loss + 1, -1),
        Active(loss + 1, false), Wrt(wrt.begin(), wrt.end()) {
    markActive(wrt);
    if (Active[loss])
      Adjoint[loss] = seed.id();
    for (ValueId v = loss; v >= 0; --v) {
      if (!Active[v] || Adjoint[v] < 0)
        continue;
      nameAdjoint(v);
      backprop(v, Tensor(&G, Adjoint[v]));
    }
  }

  /// The gradient with respect to `v`, or -1 where the loss does not depend on
  /// it.
  ValueId gradientOf(ValueId v) const { return v <= Loss ? Adjoint[v] : -1; }
  /// True when `id` was made by this sweep and still has a temporary name.
  bool madeHere(ValueId id) const { return Made.count(id) && !Renamed.count(id); }
  void claim(ValueId id) { Renamed.insert(id); }

private:
  /// Active: float values on a path from one of `wrt` to the loss.
  void markActive(llvm::ArrayRef<ValueId> wrt) {
    std::vector<bool> reaches(Loss + 1, false), fromWrt(Loss + 1, false);
    reaches[Loss] = true;
    for (ValueId v = Loss; v >= 0; --v)
      if (reaches[v])
        for (ValueId o : G.node(v).operands)
          reaches[o] = true;
    for (ValueId w : wrt)
      if (w <= Loss)
        fromWrt[w] = true;
    for (ValueId v = 0; v <= Loss; ++v) {
      for (ValueId o : G.node(v).operands)
        if (fromWrt[o])
          fromWrt[v] = true;
      Active[v] = reaches[v] && fromWrt[v] && isFloat(G.node(v).dtype);
    }
  }

  /// Adds `c` to the gradient of operand `o`, summing over broadcast axes.
  void give(ValueId o, const Tensor &c) {
    if (!Active[o])
      return;
    Tensor contribution = unbroadcast(c, G.node(o).shape);
    assert(contribution.dtype() == G.node(o).dtype && "a rule changed the dtype");
    track(contribution.id());
    if (Adjoint[o] < 0) {
      Adjoint[o] = contribution.id();
      return;
    }
    Tensor total = Tensor(&G, Adjoint[o]) + contribution;
    track(total.id());
    Adjoint[o] = total.id();
  }

  /// Remembers a gradient node this sweep made (not the seed, not a literal),
  /// which may take a name.
  void track(ValueId id) {
    if (id >= FirstMade && G.node(id).op != OpKind::Constant)
      Made.insert(id);
  }

  /// A gradient complete (all its contributions added) is named after its
  /// value; those a grad asks for get the grad's name instead.
  void nameAdjoint(ValueId v) {
    ValueId a = Adjoint[v];
    if (!madeHere(a) || G.node(v).name.empty() || Wrt.count(v))
      return;
    std::string name = G.node(v).name + ".grad";
    if (G.lookup(name))
      return;
    G.rename(a, name);
    claim(a);
  }

  /// Builds operand i's contribution only when the sweep needs it.
  template <typename F> void giveToOperand(const Node &n, unsigned i, F contribution) {
    if (Active[n.operands[i]])
      give(n.operands[i], contribution());
  }

  Tensor operand(const Node &n, unsigned i) { return Tensor(&G, n.operands[i]); }

  /// maximum, minimum: ties split the gradient evenly, as PyTorch's do.
  void extremeRule(const Node &n, const Tensor &g) {
    Tensor a = operand(n, 0), b = operand(n, 1);
    bool isMax = n.op == OpKind::Maximum;
    Tensor aWins = isMax ? gt(a, b) : lt(a, b), bWins = isMax ? lt(a, b) : gt(a, b);
    Tensor half = where(eq(a, b), g * 0.5, scalarLike(g, 0));
    giveToOperand(n, 0, [&] { return where(aWins, g, half); });
    giveToOperand(n, 1, [&] { return where(bWins, g, half); });
  }

  void meanRule(const Node &n, const Tensor &g) {
    Tensor x = operand(n, 0);
    // The elements each mean averages (over an empty axis x has none to
    // give a gradient to, and any factor will do).
    int64_t count = 1;
    for (int64_t a : n.axes)
      count *= x.shape()[a];
    double scale = 1.0 / static_cast<double>(std::max<int64_t>(count, 1));
    giveToOperand(n, 0, [&] { return spread(n, g, x.shape()) * scale; });
  }

  /// max, min: ties split the gradient evenly among the elements that equal
  /// the extreme.
  void reducedExtremeRule(const Node &n, const Tensor &y, const Tensor &g) {
    Tensor x = operand(n, 0);
    Shape in = x.shape(), kept = keptShape(n, in);
    Tensor hit = eq(x, y.reshape(kept));
    Tensor count = sum(hit.cast(y.dtype()), n.axes, /*keepdim=*/true);
    giveToOperand(n, 0, [&] {
      return where(hit, (g.reshape(kept) / count).broadcast(in), scalarLike(y, 0));
    });
  }

  void permuteRule(const Node &n, const Tensor &g) {
    DimVector inverse(n.perm.size());
    for (size_t i = 0; i < n.perm.size(); ++i)
      inverse[n.perm[i]] = static_cast<int64_t>(i);
    giveToOperand(n, 0, [&] { return g.permute(inverse); });
  }

  /// The pad's border is a literal: the gradient is the slice that drops it.
  void padRule(const Node &n, const Tensor &g) {
    giveToOperand(n, 0, [&] {
      Tensor r = g;
      for (unsigned d = 0; d < n.before.size(); ++d)
        if (n.before[d] != 0 || n.after[d] != 0)
          r = slice(r, d, n.before[d], n.before[d] + operand(n, 0).shape()[d]);
      return r;
    });
  }

  /// Each operand's stretch of the axis.
  void concatRule(const Node &n, const Tensor &g) {
    int64_t at = 0;
    for (unsigned i = 0; i < n.operands.size(); ++i) {
      int64_t size = operand(n, i).shape()[n.axis];
      giveToOperand(n, i, [&] { return slice(g, n.axis, at, at + size); });
      at += size;
    }
  }

  /// Appends the gradient rule of node `v`, whose gradient is `g`.
  void backprop(ValueId v, Tensor g) {
    const Node n = G.node(v); // a copy: the rule appends to G

    Tensor y(&G, v);
    auto x = [&](unsigned i) { return Tensor(&G, n.operands[i]); };
    auto lit = [&](double c) { return scalarLike(y, c); };
    auto zero = [&]() { return lit(0); };
    auto giveTo = [&](unsigned i, auto contribution) { giveToOperand(n, i, contribution); };
    switch (n.op) {
    // Leaves: the sweep ends here.
    case OpKind::Input:
    case OpKind::Constant: return;
    // Not differentiable: bool results, or piecewise constant (floor and ceil
    // have a zero gradient almost everywhere, as in PyTorch).
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::RoundTf32:
    case OpKind::Not:
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Argmax: // i32 positions
    case OpKind::Argmin: return;
    case OpKind::Neg: return giveTo(0, [&] { return -g; });
    // abs'(0) = 0, as PyTorch's sign(0) = 0.
    case OpKind::Abs:
      return giveTo(
          0, [&] { return where(gt(x(0), zero()), g, where(lt(x(0), zero()), -g, zero())); });
    case OpKind::Exp: return giveTo(0, [&] { return g * y; });
    case OpKind::Exp2: return giveTo(0, [&] { return g * y * M_LN2; });
    case OpKind::Expm1: return giveTo(0, [&] { return g * (y + 1.0); }); // e^x = y + 1
    case OpKind::Log: return giveTo(0, [&] { return g / x(0); });
    case OpKind::Log2: return giveTo(0, [&] { return g / (x(0) * M_LN2); });
    case OpKind::Log1p: return giveTo(0, [&] { return g / (x(0) + 1.0); });
    // sqrt'(0) = inf, as PyTorch's grad / (2 * sqrt(x)).
    case OpKind::Sqrt: return giveTo(0, [&] { return g / (y * 2.0); });
    case OpKind::Rsqrt: return giveTo(0, [&] { return g * y * y * y * -0.5; });
    case OpKind::Sin: return giveTo(0, [&] { return g * cos(x(0)); });
    case OpKind::Cos: return giveTo(0, [&] { return -(g * sin(x(0))); });
    case OpKind::Tanh: return giveTo(0, [&] { return g * (1.0 - y * y); });
    case OpKind::Sigmoid: return giveTo(0, [&] { return g * y * (1.0 - y); });
    case OpKind::Erf:
      return giveTo(0, [&] { return g * exp(-(x(0) * x(0))) * (2.0 / std::sqrt(M_PI)); });
    // relu'(0) = 0.
    case OpKind::Relu: return giveTo(0, [&] { return where(gt(x(0), zero()), g, zero()); });
    case OpKind::Recip: return giveTo(0, [&] { return -(g * y * y); });
#ifdef MINIJIT_TEST_FAKE_OP
    case OpKind::FakeCbrt: return giveTo(0, [&] { return g / (y * y * 3.0); });
#endif
    case OpKind::Add: giveTo(0, [&] { return g; }); return giveTo(1, [&] { return g; });
    case OpKind::Sub: giveTo(0, [&] { return g; }); return giveTo(1, [&] { return -g; });
    case OpKind::Mul:
      giveTo(0, [&] { return g * x(1); });
      return giveTo(1, [&] { return g * x(0); });
    case OpKind::Div:
      giveTo(0, [&] { return g / x(1); });
      return giveTo(1, [&] { return -(g * y / x(1)); });
    case OpKind::Pow: return powRule(n, y, g);
    case OpKind::Maximum:
    case OpKind::Minimum: return extremeRule(n, g);
    case OpKind::Where:
      giveTo(1, [&] { return where(x(0), g, zero()); });
      return giveTo(2, [&] { return where(x(0), zero(), g); });
    case OpKind::Cast: return giveTo(0, [&] { return g.cast(x(0).dtype()); });
    case OpKind::Sum: return giveTo(0, [&] { return spread(n, g, x(0).shape()); });
    case OpKind::Mean: return meanRule(n, g);
    case OpKind::Max:
    case OpKind::Min: return reducedExtremeRule(n, y, g);
    case OpKind::Prod: return prodRule(n, y, g);
    case OpKind::Reshape: return giveTo(0, [&] { return g.reshape(x(0).shape()); });
    case OpKind::Permute: return permuteRule(n, g);
    case OpKind::Broadcast:
      return giveTo(0, [&] { return g; }); // give() sums over the stretched axes
    case OpKind::Slice: return giveTo(0, [&] { return unslice(n, g, x(0).shape()); });
    case OpKind::Pad: return padRule(n, g);
    case OpKind::Concat: return concatRule(n, g);
    case OpKind::Iota:
    case OpKind::Full: return; // no operands
    // random numbers: their operands are the i32 seed and offset
    case OpKind::Rand:
    case OpKind::Randn: return;
    // The same mask, recomputed from the seed, offset and index: the dropout of g.
    case OpKind::Dropout:
      return giveTo(0, [&] { return dropout(g, x(1), x(2), n.value); });
    // A flip is its own inverse.
    case OpKind::Flip: return giveTo(0, [&] { return flip(g, AxisList(n.axes)); });
    // The sums of g from each element to the end (to the start, for a
    // reversed scan): the scan of g the other way.
    case OpKind::Cumsum: return giveTo(0, [&] { return cumsum(g, n.axis, !n.reverse); });
    // sum over j >= i of g_j y_j / x_i (j <= i reversed): inf or NaN where x holds a zero.
    case OpKind::Cumprod:
      return giveTo(0, [&] { return cumsum(g * y, n.axis, !n.reverse) / x(0); });
    // The indices are i32: only the table gets a gradient.
    case OpKind::Take:
    case OpKind::TakeAlongAxis: return giveTo(0, [&] { return ungather(n, g); });
    case OpKind::Matmul: return matmulRule(n, g);
    case OpKind::Grad:
    case OpKind::Vjp: llvm_unreachable("derivatives are expanded before a sweep reaches them");
    }
  }

  /// The value a transpose of the last two axes reads, or -1 for any other
  /// value.
  ValueId transposeSource(ValueId v) const {
    const Node &n = G.node(v);
    if (n.op != OpKind::Permute)
      return -1;
    unsigned r = n.perm.size();
    for (unsigned i = 0; i + 2 < r; ++i)
      if (n.perm[i] != i)
        return -1;
    return n.perm[r - 2] == r - 1 && n.perm[r - 1] == r - 2 ? n.operands[0] : -1;
  }

  /// C = A @ B: dA = dC @ B^T and dB = A^T @ dC. Where an operand is itself
  /// a transpose of a value (nn.Linear's x @ W.T), the gradient goes to that
  /// value as one matmul, dW = dC^T @ x, rather than as a transpose of dW.T.
  void matmulRule(const Node &n, const Tensor &g) {
    Tensor a(&G, n.operands[0]), b(&G, n.operands[1]);
    ValueId aSource = transposeSource(a.id()), bSource = transposeSource(b.id());
    if (aSource >= 0 && Active[aSource])
      give(aSource, matmul(b, transposed(g)));
    else if (Active[a.id()])
      give(a.id(), matmul(g, transposed(b)));
    if (bSource >= 0 && Active[bSource])
      give(bSource, matmul(transposed(g), a));
    else if (Active[b.id()])
      give(b.id(), matmul(transposed(a), g));
  }

  /// The gradient of a slice: `g` placed back at the elements the slice
  /// read, zeros elsewhere, with views only. A step k spreads each element
  /// over k (pad a new axis of 1 to k, then merge it), and a pad restores
  /// the elements before and after.
  Tensor unslice(const Node &n, Tensor g, Shape in) {
    int64_t a = n.axis, count = g.shape()[a], size = in[a];
    int64_t span = count;
    if (n.step > 1) {
      DimVector split(g.shape().dims().begin(), g.shape().dims().end());
      split.insert(split.begin() + a + 1, 1);
      DimVector before(split.size(), 0), after(split.size(), 0);
      after[a + 1] = n.step - 1;
      g = pad(g.reshape(Shape(llvm::ArrayRef<int64_t>(split))), before, after);
      DimVector merged(g.shape().dims().begin(), g.shape().dims().end());
      merged[a] *= n.step;
      merged.erase(merged.begin() + a + 1);
      g = g.reshape(Shape(llvm::ArrayRef<int64_t>(merged)));
      span = std::min(count * n.step, size - n.start);
      if (span != count * n.step)
        g = slice(g, a, 0, span);
    }
    DimVector before(in.rank(), 0), after(in.rank(), 0);
    before[a] = n.start;
    after[a] = size - n.start - span;
    return pad(g, before, after);
  }

  /// The gradient of a gather without a scatter: each table element sums the
  /// elements of g whose (clamped) index names it, a reduction over the
  /// indices' axes of where(index == position, g, 0). Fused, the one-hot
  /// is never stored; the work is (indices) x (table's axis) x (the rest).
  Tensor ungather(const Node &n, const Tensor &g) {
    Tensor idx(&G, n.operands[1]);
    Shape in = G.node(n.operands[0]).shape, is = idx.shape(), out = g.shape();
    int64_t a = n.axis, size = in[a];
    Tensor ci = minimum(maximum(idx, 0), static_cast<double>(size - 1));
    // Dims of g before the new position axis, and after it.
    unsigned lead = n.op == OpKind::Take ? a + is.rank() : a + 1;
    unsigned trail = out.rank() - lead;
    auto withOne = [](const Shape &s, unsigned at) {
      DimVector d(s.dims().begin(), s.dims().end());
      d.insert(d.begin() + at, 1);
      return Shape(llvm::ArrayRef<int64_t>(d));
    };
    Tensor gx = g.reshape(withOne(out, lead));
    // The indices aligned with g's dims before the new axis (broadcasting adds
    // the leading ones), then 1 for the new axis and the trailing dims.
    DimVector ciDims(is.dims().begin(), is.dims().end());
    if (n.op == OpKind::TakeAlongAxis)
      ciDims.resize(a + 1); // idx's dims after the axis are g's trailing dims
    ciDims.push_back(1);
    for (unsigned d = 0; d < trail; ++d)
      ciDims.push_back(n.op == OpKind::TakeAlongAxis ? is[a + 1 + d] : 1);
    DimVector posDims{size};
    posDims.insert(posDims.end(), trail, 1);
    Tensor pos = iota(G, Shape(llvm::ArrayRef<int64_t>(posDims)), 0, DType::I32);
    Tensor hit = eq(ci.reshape(Shape(llvm::ArrayRef<int64_t>(ciDims))), pos);
    Tensor spread = where(hit, gx, 0.0);
    DimVector axes;
    if (n.op == OpKind::Take)
      for (unsigned d = 0; d < is.rank(); ++d)
        axes.push_back(a + d);
    else
      axes.push_back(a);
    if (axes.empty()) // a scalar index: one element per position
      return spread.reshape(in);
    return sum(spread, axes);
  }

  /// A reduction's gradient `g` broadcast back over the reduced axes.
  Tensor spread(const Node &red, const Tensor &g, Shape in) {
    return g.reshape(keptShape(red, in)).broadcast(in);
  }

  /// pow(a, b): d/da = b a^(b-1), zero where b = 0; d/db = a^b log(a), zero
  /// where a = 0 and b >= 0 (PyTorch's conventions).
  void powRule(const Node &n, const Tensor &y, const Tensor &g) {
    Tensor a(&G, n.operands[0]), b(&G, n.operands[1]);
    Tensor zero = scalarLike(a, 0);
    if (Active[a.id()]) {
      const Node bn = b.node();
      if (bn.op == OpKind::Constant) // pow(x, 3): 3 x^2, folded
        give(a.id(), bn.value == 0 ? g * 0.0 : g * pow(a, bn.value - 1) * bn.value);
      else
        give(a.id(), where(eq(b, zero), zero, g * b * pow(a, b - 1.0)));
    }
    if (Active[b.id()])
      give(b.id(), g * where(logicalAnd(eq(a, zero), ge(b, zero)), zero, y * log(a)));
  }

  /// prod: d/dx_i = the product of the other elements, written so a row
  /// with zeros is exact: prod/x where the row has none, the product of the
  /// nonzero elements at a row's only zero, and 0 elsewhere.
  void prodRule(const Node &n, const Tensor &y, const Tensor &g) {
    Tensor x(&G, n.operands[0]);
    Shape kept = keptShape(n, x.shape());
    Tensor zero = scalarLike(x, 0), one = scalarLike(x, 1);
    Tensor isZero = eq(x, zero);
    Tensor zeros = sum(isZero.cast(x.dtype()), n.axes, /*keepdim=*/true);
    Tensor others = prod(where(isZero, one, x), n.axes, /*keepdim=*/true);
    Tensor gk = g.reshape(kept), yk = y.reshape(kept);
    Tensor noZero = gk * yk / x;
    Tensor atOnlyZero = where(logicalAnd(isZero, eq(zeros, one)), gk * others, zero);
    give(x.id(), where(eq(zeros, zero), noZero, atOnlyZero));
  }

  Graph &G;
  ValueId Loss;
  ValueId FirstMade;            ///< the first node the sweep appended
  std::vector<ValueId> Adjoint; ///< per value up to the loss: its gradient so far, or -1
  std::vector<bool> Active;
  llvm::DenseSet<ValueId> Made, Renamed, Wrt;
};

/// Copies a graph, expanding its derivatives on the way.
class Expander {
public:
  explicit Expander(const Graph &src) : Src(src), Dst(src.name()), Map(src.size(), -1) {}

  Graph run() {
    for (ValueId id = 0; id < static_cast<ValueId>(Src.size()); ++id) {
      const Node &n = Src.node(id);
      if (n.cls() == OpClass::Derivative) {
        try {
          Map[id] = derivative(id);
        } catch (const ExpansionError &) {
          throw;
        } catch (const GraphError &e) {
          throw ExpansionError(id, std::string(opName(n.op)) + " %" + n.name +
                                       ": its expansion passes a limit of the graph: " + e.what());
        }
        continue;
      }
      NodeSpec s = specOf(n);
      for (ValueId &o : s.operands)
        o = Map[o];
      // A sweep's temporary may have taken a name a later value has.
      if (std::optional<ValueId> taken = Dst.lookup(s.name))
        Dst.rename(*taken, freeName(s.name));
      Map[id] = Dst.add(s);
    }
    for (size_t i = 0; i < Src.outputs().size(); ++i) {
      ValueId in = Src.updates()[i];
      if (in >= 0)
        Dst.update(Map[in], Map[Src.outputs()[i]]);
      else
        Dst.output(Map[Src.outputs()[i]]);
    }
    return std::move(Dst);
  }

private:
  /// The sweep a derivative belongs to: grads by their loss, vjps by output
  /// and cotangent.
  using SweepKey = std::pair<ValueId, ValueId>;
  static SweepKey keyOf(const Node &n) {
    return {n.operands[0], n.op == OpKind::Vjp ? n.operands[2] : -1};
  }

  ValueId derivative(ValueId id) {
    const Node &n = Src.node(id);
    SweepKey key = keyOf(n);
    auto it = Sweeps.find(key);
    if (it == Sweeps.end())
      it = Sweeps.try_emplace(key, startSweep(key)).first;
    Sweep &sweep = *it->second;
    ValueId wrt = Src.node(id).operands[1];
    // A value defined after the loss cannot be among its ancestors.
    ValueId grad = wrt < key.first ? sweep.gradientOf(Map[wrt]) : -1;
    if (std::optional<ValueId> taken = Dst.lookup(n.name); taken && *taken != grad)
      Dst.rename(*taken, freeName(n.name));
    if (grad < 0)
      return zerosLike(n);
    if (sweep.madeHere(grad)) {
      Dst.rename(grad, n.name);
      sweep.claim(grad);
      return grad;
    }
    // The gradient is a value with a name of its own (another grad's, the
    // seed, an argument): the grad's name goes to a view that simplify removes.
    NodeSpec same;
    same.op = OpKind::Reshape;
    same.operands = {grad};
    same.shape = n.shape;
    same.name = n.name;
    return Dst.add(same);
  }

  std::unique_ptr<Sweep> startSweep(SweepKey key) {
    llvm::SmallVector<ValueId, 8> wrt;
    for (const Node &n : Src.nodes())
      if (n.cls() == OpClass::Derivative && keyOf(n) == key && n.operands[1] < key.first)
        wrt.push_back(Map[n.operands[1]]);
    ValueId loss = Map[key.first];
    Tensor lossT(&Dst, loss);
    Shape lossShape = lossT.shape();
    Tensor seed = key.second >= 0 ? Tensor(&Dst, Map[key.second])
                                  : scalarLike(lossT, 1).broadcast(lossShape);
    return std::make_unique<Sweep>(Dst, loss, seed, wrt);
  }

  /// A name neither graph has.
  std::string freeName(const std::string &base) {
    for (unsigned k = 1;; ++k) {
      std::string name = base + "." + std::to_string(k);
      if (!Src.lookup(name) && !Dst.lookup(name))
        return name;
    }
  }

  /// The gradient of a value the loss does not depend on.
  ValueId zerosLike(const Node &n) {
    NodeSpec s;
    s.op = OpKind::Broadcast;
    s.operands = {Dst.constant(0, n.dtype)};
    s.shape = n.shape;
    s.name = n.name;
    return Dst.add(s);
  }

  const Graph &Src;
  Graph Dst;
  std::vector<ValueId> Map; ///< source value -> its copy
  std::map<SweepKey, std::unique_ptr<Sweep>> Sweeps;
};

} // namespace

bool hasDerivatives(const Graph &g) {
  return llvm::any_of(g.nodes(), [](const Node &n) { return n.cls() == OpClass::Derivative; });
}

Graph expandAutodiff(const Graph &g) {
  // A mean's gradient divides by the number of elements it averaged.
  if (hasUnboundDims(g))
    throw GraphError("graph '" + g.name() + "' has named dimensions without sizes (" +
                     llvm::join(dimNames(g), ", ") +
                     "): bind them before expanding its gradients (bindDims)");
  return Expander(g).run();
}

} // namespace minijit
