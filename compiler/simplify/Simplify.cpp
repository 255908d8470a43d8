//===- compiler/simplify/Simplify.cpp - graph clean-up before fusion ---------------===//
// One walk in graph order rebuilds the live values into a new graph, folding,
// rewriting and reusing as it goes.
//===----------------------------------------------------------------------===//
#include "compiler/simplify/Simplify.h"
#include "compiler/simplify/SliceSinking.h"

#include "compiler/simplify/EmptyValues.h"
#include "ir/Evaluator.h"
#include "ir/Limits.h"
#include "ir/Printer.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>

namespace minijit {

void copyOutputs(const Graph &from, llvm::ArrayRef<ValueId> map, Graph &to) {
  for (size_t i = 0; i < from.outputs().size(); ++i) {
    ValueId v = map[from.outputs()[i]], in = from.updates()[i];
    if (in >= 0 && map[in] != v)
      to.update(map[in], v);
    else
      to.output(v);
  }
}

namespace {

class Simplifier {
public:
  explicit Simplifier(const Graph &g) : G(g), Out(g.name()), Map(g.size(), -1) {
    Out.reserveNamesOf(g);
  }

  Graph run() {
    std::vector<bool> live(G.size(), false);
    for (ValueId o : G.outputs())
      live[o] = true;
    for (size_t i = G.size(); i-- > 0;)
      if (live[i])
        for (ValueId o : G.nodes()[i].operands)
          live[o] = true;
    std::vector<bool> isOutput(G.size(), false);
    for (ValueId o : G.outputs())
      isOutput[o] = true;
    Uses.assign(G.size(), 0);
    for (size_t i = 0; i < G.size(); ++i) {
      if (live[i])
        for (ValueId o : G.nodes()[i].operands)
          ++Uses[o];
      Uses[i] += isOutput[i];
    }
    // The chains below each value, for rewrites that lengthen its own: a
    // view or a value this walk may make one (a concat as a pad, a reduction
    // over size-1 axes as a reshape, a short sum as a slice's adds and a
    // reshape) continues a chain; a product starts its own, though its
    // operands may gain a transpose (transposedProduct).
    ViewsBelow.assign(G.size(), 0);
    OpsBelow.assign(G.size(), 0);
    ReductionReaders.assign(G.size(), 0);
    for (size_t j = G.size(); j-- > 0;) {
      const Node &n = G.nodes()[j];
      unsigned views = ViewsBelow[j] + 1;
      if (n.cls() == OpClass::Matmul)
        views = 1;
      else if (n.cls() == OpClass::Reduce && !mayBeAView(n))
        views = 0;
      else if (n.cls() == OpClass::Reduce)
        views = ViewsBelow[j] + 2;
      else if (n.cls() != OpClass::View && n.cls() != OpClass::Concat)
        views = ViewsBelow[j];
      for (ValueId o : n.operands) {
        ViewsBelow[o] = std::max(ViewsBelow[o], views);
        OpsBelow[o] = std::max(OpsBelow[o], OpsBelow[j] + 1);
        if (live[j] && n.cls() == OpClass::Reduce)
          ++ReductionReaders[o];
      }
    }
    for (size_t i = 0; i < G.size(); ++i) {
      const Node &n = G.nodes()[i];
      if (n.op == OpKind::Input) {
        Map[i] = Out.input(n.name, n.dtype, n.shape).id();
        continue;
      }
      if (!live[i])
        continue;
      Map[i] = simplify(n);
      // A result must be computed by a kernel: an output that folded to a
      // literal is kept as the op that makes it.
      if (isOutput[i] && out(Map[i]).op == OpKind::Constant)
        Map[i] = Out.add(mappedSpec(n));
    }
    copyOutputs(G, Map, Out);
    return std::move(Out);
  }

private:
  const Node &out(ValueId v) const { return Out.node(v); }
  bool isConst(ValueId v, double c) const {
    return out(v).op == OpKind::Constant && out(v).value == c;
  }

  /// Adds `s` unless an equal node exists (CSE); keeps the name when free.
  ValueId emit(NodeSpec s) {
    std::string key = cseKey(s);
    auto it = Seen.find(key);
    if (it != Seen.end())
      return it->second;
    if (!s.name.empty() && Out.lookup(s.name))
      s.name.clear();
    ValueId id = Out.add(s);
    Seen[key] = id;
    return id;
  }

  std::string cseKey(const NodeSpec &s) const {
    std::string k = std::to_string(static_cast<int>(s.op)) + ":";
    for (ValueId o : s.operands)
      k += std::to_string(o) + ",";
    switch (opClass(s.op)) {
    case OpClass::Constant: {
      uint64_t bits;
      std::memcpy(&bits, &s.value, 8);
      k += std::string(dtypeName(s.dtype)) + "=" + std::to_string(bits);
      break;
    }
    case OpClass::Reduce:
      k += "axes" + (s.axes ? Shape(*s.axes).str() : std::string("all")) +
           (s.keepdim ? "k" : "");
      break;
    case OpClass::View:
      k += s.shape.str() + Shape(s.perm).str();
      if (s.op == OpKind::Slice)
        k += llvm::formatv("a{0}s{1}e{2}k{3}", s.axis, s.start, s.end, s.step).str();
      if (s.op == OpKind::Pad) { // the value's bits: an i32 pad of 1e9 is not one of 1e9 + 1
        uint64_t bits;
        std::memcpy(&bits, &s.value, 8);
        k += Shape(s.before).str() + Shape(s.after).str() + "=" + std::to_string(bits);
      }
      if (s.op == OpKind::Flip)
        k += "flip" + Shape(*s.axes).str();
      break;
    case OpClass::Cast: k += std::string(dtypeName(s.dtype)); break;
    case OpClass::Iota:
      k += s.shape.str() + std::string(dtypeName(s.dtype)) + "a" + std::to_string(s.axis);
      if (s.op == OpKind::Full)
        k += "=" + literalText(s.value, s.dtype);
      break;
    case OpClass::Concat:
    case OpClass::Gather: k += "a" + std::to_string(s.axis); break;
    case OpClass::Scan: k += "a" + std::to_string(s.axis) + (s.reverse ? "r" : ""); break;
    // A random op's numbers are a function of its operands and attributes:
    // two with the same seed, offset, shape and dtype (or x and p) are the
    // same numbers, and one serves both.
    case OpClass::Random:
      k += s.shape.str() + std::string(dtypeName(s.dtype)) + "p" + literalText(s.value, DType::F32);
      break;
    case OpClass::Input:
    case OpClass::Unary:
    case OpClass::Binary:
    case OpClass::Select:
    case OpClass::Matmul:
      break;
    case OpClass::Derivative: llvm_unreachable("autodiff runs before simplify");
    }
    return k;
  }

  /// `n` with its operands mapped into the new graph.
  NodeSpec mappedSpec(const Node &n) {
    NodeSpec s = specOf(n);
    for (ValueId &o : s.operands)
      o = Map[o];
    return s;
  }

  ValueId reshapeTo(ValueId v, const Shape &shape, const std::string &name) {
    if (out(v).shape == shape)
      return v;
    // reshape of a reshape reads the original
    if (out(v).op == OpKind::Reshape)
      v = out(v).operands[0];
    if (out(v).shape == shape)
      return v;
    if (out(v).op == OpKind::Full) { // a reshaped block of one value is one of the new shape
      NodeSpec full = specOf(out(v));
      full.shape = shape;
      full.name = name;
      return emit(full);
    }
    NodeSpec s;
    s.op = OpKind::Reshape;
    s.operands = {v};
    s.shape = shape;
    s.name = name;
    return emit(s);
  }

  ValueId simplify(const Node &n) {
    NodeSpec s = mappedSpec(n);
    switch (n.cls()) {
    case OpClass::Input: llvm_unreachable("inputs are copied");
    case OpClass::Constant: return emit(s);
    case OpClass::Unary:
    case OpClass::Binary:
    case OpClass::Select:
    case OpClass::Cast: return elementwise(n, s);
    case OpClass::Reduce: return reduce(n, s);
    case OpClass::Iota:
    case OpClass::Gather: return emit(s);
    case OpClass::Scan:
      // A scan along an axis of one element is its operand (and a scan
      // kernel would have nothing to scan: the row is one value).
      if (out(s.operands[0]).shape[n.axis] == 1)
        return s.operands[0];
      return emit(s);
    case OpClass::Concat: return concatOf(s);
    case OpClass::View:
      if (n.op == OpKind::Slice)
        return sliceOf(s);
      if (n.op == OpKind::Pad)
        return padOf(s);
      if (n.op == OpKind::Reshape)
        return reshapeTo(s.operands[0], n.shape, n.name);
      if (n.op == OpKind::Flip) {
        if (std::optional<ValueId> v = flippedScan(n, s))
          return *v;
        return flipOf(s);
      }
      if (out(s.operands[0]).shape == n.shape &&
          (n.op == OpKind::Broadcast || isIdentityPerm(n.perm)))
        return s.operands[0];
      if (n.op == OpKind::Permute) {
        if (std::optional<ValueId> v = transposedProduct(n, s))
          return *v;
        return permuteOf(s);
      }
      return emit(s);
    case OpClass::Matmul:
      return productOf(n, s);
    // Never folded: no literal holds the numbers. dropout with p = 0 keeps
    // every element at scale 1.
    case OpClass::Random:
      if (n.op == OpKind::Dropout && n.value == 0)
        return s.operands[0];
      return emit(s);
    case OpClass::Derivative: llvm_unreachable("autodiff runs before simplify");
    }
    llvm_unreachable("bad op class");
  }

  /// A permute of a permute is one permute (a transpose of a transpose
  /// none, as a matmul's gradient makes of nn.Linear's W.T). A permute that
  /// moves only axes of size 1 (its larger axes stay in order) keeps every
  /// element where it is: a reshape, which a kernel's result is stored
  /// through where a permute needs a copy.
  ValueId permuteOf(NodeSpec s) {
    const Node &inner = out(s.operands[0]);
    if (!inner.shape.hasNames()) {
      DimVector larger;
      for (int64_t p : s.perm)
        if (inner.shape[p] != 1)
          larger.push_back(p);
      if (llvm::is_sorted(larger)) {
        DimVector dims;
        for (int64_t p : s.perm)
          dims.push_back(inner.shape[p]);
        return reshapeTo(s.operands[0], Shape(dims), s.name);
      }
    }
    if (inner.op != OpKind::Permute)
      return emit(s);
    DimVector perm;
    for (int64_t p : s.perm)
      perm.push_back(inner.perm[p]);
    if (isIdentityPerm(perm))
      return inner.operands[0];
    s.operands[0] = inner.operands[0];
    s.perm = perm;
    return emit(s);
  }

  /// `v` with the last two axes swapped (each matrix of a batch
  /// transposed), folded with a permute `v` is.
  ValueId transposed(ValueId v) {
    int64_t rank = out(v).shape.rank();
    NodeSpec t;
    t.op = OpKind::Permute;
    t.operands = {v};
    for (int64_t d = 0; d < rank; ++d)
      t.perm.push_back(d < rank - 2 ? d : 2 * rank - 3 - d);
    return permuteOf(t);
  }

  /// A transpose of a product it alone reads, (A @ B)^T with the last two
  /// axes swapped and the batch axes in place, is the product of the
  /// transposed operands the other way round, B^T @ A^T: the same sums, in
  /// the same order. The product then stores its result in the order its
  /// readers take it: NetVLAD's `matmul(assignment, x).transpose(1, 2)`,
  /// read whole by the norms after it, was read 512 floats apart (a 32-byte
  /// sector for each 4 bytes), and the work after the transpose becomes the
  /// product's epilogue. Other forms: nullopt.
  std::optional<ValueId> transposedProduct(const Node &n, const NodeSpec &perm) {
    if (G.node(n.operands[0]).cls() != OpClass::Matmul || Uses[n.operands[0]] != 1)
      return std::nullopt;
    int64_t rank = static_cast<int64_t>(n.perm.size());
    if (rank < 2 || n.perm[rank - 1] != rank - 2 || n.perm[rank - 2] != rank - 1)
      return std::nullopt;
    for (int64_t d = 0; d < rank - 2; ++d)
      if (n.perm[d] != d)
        return std::nullopt;
    const Node &mm = out(perm.operands[0]);
    if (mm.cls() != OpClass::Matmul || out(mm.operands[0]).shape.rank() < 2 ||
        out(mm.operands[1]).shape.rank() < 2)
      return std::nullopt;
    // The specs first: emit adds nodes, which may move `mm`.
    NodeSpec product = specOf(mm);
    ValueId a = mm.operands[0], b = mm.operands[1];
    product.name = perm.name;
    product.operands = {transposed(b), transposed(a)};
    return emit(product);
  }

  /// A flip of size-1 axes only is its operand; a flip of a flip of the same
  /// axes is the flipped value.
  ValueId flipOf(const NodeSpec &s) {
    const Node &x = out(s.operands[0]);
    const DimVector &axes = *s.axes;
    if (llvm::all_of(axes, [&](int64_t a) { return x.shape[a] == 1; }))
      return s.operands[0];
    if (x.op == OpKind::Flip && x.axes == axes)
      return x.operands[0];
    return emit(s);
  }

  /// A flip of a scan it alone reads, flip_A(scan(w)), is the scan of the
  /// flipped operand, scan(flip_A(w)), the other way along the scan's axis
  /// when A holds it (a reversed scan is flip, scan, flip in one). The flip
  /// is then a view in the scan kernel's loads, where the flipped result took
  /// a copy kernel of its own: flip(cumsum(flip(x))), the reversed cumsum as
  /// PyTorch code writes it, becomes one reversed scan of x. The sums and
  /// products are the same, in the same order. Other forms: nullopt.
  std::optional<ValueId> flippedScan(const Node &n, const NodeSpec &flip) {
    if (G.node(n.operands[0]).cls() != OpClass::Scan || Uses[n.operands[0]] != 1)
      return std::nullopt;
    const Node &scan = out(flip.operands[0]);
    if (scan.cls() != OpClass::Scan)
      return std::nullopt;
    // The specs first: emit adds nodes, which may move `scan`.
    NodeSpec s = specOf(scan), inner = flip;
    s.reverse = scan.reverse != llvm::is_contained(*flip.axes, scan.axis);
    s.name = flip.name;
    inner.operands = {scan.operands[0]};
    inner.name.clear();
    s.operands = {flipOf(inner)};
    return emit(s);
  }

  /// A slice of the whole axis is its operand; a slice of a slice is one
  /// slice; a slice within one operand of a concat slices that operand.
  ValueId sliceOf(NodeSpec s) {
    const Node &x = out(s.operands[0]);
    if (s.start == 0 && s.step == 1 && s.end == x.shape[s.axis])
      return s.operands[0];
    if (x.op == OpKind::Slice && x.axis == s.axis) {
      s.operands[0] = x.operands[0];
      s.end = x.start + x.step * (s.start + (s.end - s.start - 1) / s.step * s.step) + 1;
      s.start = x.start + x.step * s.start;
      s.step *= x.step;
      return sliceOf(s);
    }
    if (x.op == OpKind::Concat && x.axis == s.axis) {
      int64_t at = 0;
      for (ValueId o : x.operands) {
        int64_t size = out(o).shape[s.axis];
        if (s.start >= at && s.end <= at + size) {
          s.operands[0] = o;
          s.start -= at;
          s.end -= at;
          return sliceOf(s);
        }
        at += size;
      }
    }
    return emit(s);
  }

  /// A pad of nothing is its operand; a pad of a pad with the same value is
  /// one pad.
  ValueId padOf(NodeSpec s) {
    auto zero = [](int64_t c) { return c == 0; };
    if (llvm::all_of(s.before, zero) && llvm::all_of(s.after, zero))
      return s.operands[0];
    if (std::optional<ValueId> v = shiftedScan(s))
      return *v;
    const Node &x = out(s.operands[0]);
    if (x.op == OpKind::Pad && x.value == s.value && std::signbit(x.value) == std::signbit(s.value)) {
      s.operands[0] = x.operands[0];
      for (size_t d = 0; d < s.before.size(); ++d) {
        s.before[d] += x.before[d];
        s.after[d] += x.after[d];
      }
    }
    return emit(s);
  }

  /// A concat of one operand is that operand; a `full` at either end along
  /// the axis (a block of one value) is a pad of the rest by that value, a
  /// view its readers fold into their loads: torch.cat((zeros, y)), the
  /// exclusive scan's shift as PyTorch code often writes it, included.
  ValueId concatOf(const NodeSpec &s) {
    if (s.operands.size() == 1)
      return s.operands[0];
    bool front = out(s.operands.front()).op == OpKind::Full;
    if (!front && out(s.operands.back()).op != OpKind::Full)
      return emit(s);
    const Node &full = out(front ? s.operands.front() : s.operands.back());
    NodeSpec pad;
    pad.op = OpKind::Pad;
    pad.before = pad.after = DimVector(full.shape.rank(), 0);
    (front ? pad.before : pad.after)[s.axis] = full.shape[s.axis];
    pad.value = full.value;
    pad.name = s.name;
    NodeSpec rest = s;
    rest.operands.erase(front ? rest.operands.begin() : rest.operands.end() - 1);
    rest.name.clear();
    pad.operands = {concatOf(rest)};
    return padOf(pad);
  }

  /// An exclusive scan written as the inclusive one shifted along its axis,
  /// pad(slice(scan(x), 0 .. e), before = k) or pad(scan(slice(x, 0 .. e)),
  /// before = k) (the same values: a scan's first e elements are those of
  /// the first e) with the scan's identity (0 for cumsum, 1 for cumprod), is
  /// the scan of x shifted the same way: scan(pad(slice(x, 0 .. e), before =
  /// k)). The shift is then views in the scan kernel's loads, one kernel
  /// where the shifted result took a copy kernel of its own. The products
  /// and sums are the same, the identity first (exact). Other forms: nullopt.
  std::optional<ValueId> shiftedScan(const NodeSpec &pad) {
    const Node &operand = out(pad.operands[0]);
    bool scanFirst = operand.cls() == OpClass::Scan; // pad(scan(slice(x)))
    const Node &slice = scanFirst ? out(operand.operands[0]) : operand;
    if (slice.op != OpKind::Slice || slice.start != 0 || slice.step != 1)
      return std::nullopt;
    const Node &scan = scanFirst ? operand : out(slice.operands[0]);
    if (scan.cls() != OpClass::Scan || scan.axis != slice.axis || scan.reverse)
      return std::nullopt;
    for (size_t d = 0; d < pad.before.size(); ++d)
      if (pad.after[d] != 0 || (static_cast<int64_t>(d) != scan.axis && pad.before[d] != 0))
        return std::nullopt;
    if (pad.value != (scan.op == OpKind::Cumsum ? 0.0 : 1.0))
      return std::nullopt;
    // The specs first: emit adds nodes, which may move `slice` and `scan`.
    NodeSpec x = specOf(slice), s = specOf(scan);
    ValueId sliced = scan.operands[0];
    if (!scanFirst) {
      x.operands = {scan.operands[0]};
      x.name.clear();
      sliced = emit(x);
    }
    NodeSpec shifted = pad;
    shifted.operands = {sliced};
    shifted.name.clear();
    s.operands = {emit(shifted)};
    s.name = pad.name;
    return emit(s);
  }

  static bool isIdentityPerm(llvm::ArrayRef<int64_t> p) {
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] != static_cast<int64_t>(i))
        return false;
    return true;
  }

  ValueId elementwise(const Node &n, NodeSpec &s) {
    // A `full` of one element beside an operand of the result's shape is a
    // literal (torch.where(c, x, -inf) traced by PyTorch: a scalar tensor).
    for (ValueId &o : s.operands)
      if (out(o).op == OpKind::Full && !out(o).shape.hasNames() && out(o).shape.numel() == 1 &&
          llvm::any_of(s.operands, [&](ValueId x) { return out(x).shape == n.shape; }))
        o = Out.constant(out(o).value, out(o).dtype);
    // Fold when every operand is a literal.
    bool allConst = llvm::all_of(s.operands, [&](ValueId o) {
      return out(o).op == OpKind::Constant;
    });
    if (allConst) {
      llvm::SmallVector<double, 3> args;
      for (ValueId o : s.operands)
        args.push_back(out(o).value);
      double v = applyElementwise(n, out(s.operands.back()).dtype, args);
      // an i64 literal is at most 2^53 (a double holds it exactly): a fold
      // past that stays an op, computed in 64 bits by the kernel
      if (n.dtype != DType::I64 || std::fabs(v) <= 9007199254740992.0)
        return Out.constant(roundToDType(v, isFloat(n.dtype) ? DType::F32 : n.dtype), n.dtype);
    }
    // Identities that return an operand unchanged (same type and shape): an
    // arithmetic op's identity (Ops.def: add, sub, mul, div) on the right,
    // or on either side of a commutative op; a cast to the operand's own
    // dtype. The identities of maximum, minimum, and and or are not dropped:
    // their literals stay as written.
    auto same = [&](ValueId v) { return out(v).shape == n.shape && out(v).dtype == n.dtype; };
    ValueId a = s.operands[0];
    const OpInfo &info = opInfo(n.op);
    if (n.cls() == OpClass::Binary && info.isLinear() && info.identity) {
      ValueId b = s.operands[1];
      if (isConst(b, *info.identity) && same(a))
        return a;
      if (info.isCommutative() && isConst(a, *info.identity) && same(b))
        return b;
    }
    if (n.op == OpKind::Cast && out(a).dtype == n.dtype)
      return a;
    return emit(s);
  }

  /// A product of operands reshaped from the same leading axes, flattened
  /// into one batch axis ([B * H, M, K] @ [B * H, K, N], as torch.matmul
  /// runs a 4-D product through bmm), is the product of the operands with
  /// those axes ([B, H, M, K] @ [B, H, K, N]) reshaped to the batch axis: the
  /// same sums. A reshape of the result back to the leading axes then reads
  /// the product itself, so that the product and what reads it (a bias, a
  /// softmax, an attention's second product) meet in its own shape.
  ValueId productOf(const Node &n, NodeSpec s) {
    const Node &a = out(s.operands[0]), &b = out(s.operands[1]);
    if (a.op != OpKind::Reshape || b.op != OpKind::Reshape || a.shape.rank() != 3 ||
        b.shape.rank() != 3 || a.shape[0] != b.shape[0])
      return emit(s);
    const Node &ia = out(a.operands[0]), &ib = out(b.operands[0]);
    if (ia.shape.hasNames() || ib.shape.hasNames() || a.shape.hasNames() || b.shape.hasNames())
      return emit(s); // sizes known at run time: left as written
    unsigned r = ia.shape.rank();
    auto last2 = [](const Shape &x, unsigned at) { return std::pair{x[at - 2], x[at - 1]}; };
    if (r < 4 || ib.shape.rank() < 3 || last2(ia.shape, r) != last2(a.shape, 3) ||
        last2(ib.shape, ib.shape.rank()) != last2(b.shape, 3))
      return emit(s);
    // the leading axes of a's operand; b's operand reshaped to them where it
    // has others (the same count: both reshapes made them one axis of a.shape[0])
    DimVector lead(ia.shape.dims().begin(), ia.shape.dims().end() - 2);
    DimVector bShape = lead;
    bShape.push_back(b.shape[1]);
    bShape.push_back(b.shape[2]);
    ValueId x = a.operands[0], y = reshapeTo(b.operands[0], Shape(bShape), "");
    s.operands = {x, y};
    std::string name = s.name;
    s.name.clear();
    return reshapeTo(emit(s), n.shape, name);
  }

  ValueId reduce(const Node &n, NodeSpec &s) {
    const Node &x = out(s.operands[0]);
    int64_t count = 1;
    for (int64_t a : n.axes)
      count *= x.shape[a];
    // Reducing only size-1 axes changes no value (argmax's is the position 0).
    if (count == 1 && !isArgReduction(n.op))
      return reshapeTo(s.operands[0], n.shape, n.name);
    if (std::optional<ValueId> v = termsOfAShortAxis(n, s))
      return *v;
    return emit(s);
  }

  /// The most terms a sum over an outer axis is written out in.
  static constexpr int64_t kShortAxisTerms = 8;

  /// Whether reduction `n` of an operand of shape `x` is an f32 sum (or
  /// mean) over one axis of 2 to kShortAxisTerms elements that is not the
  /// innermost: the form termsOfAShortAxis writes out (where its other
  /// conditions hold).
  static bool isShortAxisSum(const Node &n, const Shape &x) {
    if ((n.op != OpKind::Sum && n.op != OpKind::Mean) || n.dtype != DType::F32 ||
        n.axes.size() != 1 || x.hasNames() || n.shape.hasNames())
      return false;
    int64_t axis = n.axes[0], terms = x[axis];
    return terms >= 2 && terms <= kShortAxisTerms && axis != static_cast<int64_t>(x.rank()) - 1;
  }

  /// Whether reduction `n` of G may become views and elementwise work in
  /// this walk: one over axes of size 1, or a sum over a short outer axis.
  bool mayBeAView(const Node &n) const {
    const Shape &x = G.node(n.operands[0]).shape;
    if (x.hasNames())
      return false;
    int64_t count = 1;
    for (int64_t a : n.axes)
      count *= x[a];
    return count == 1 || isShortAxisSum(n, x);
  }

  /// Whether `v` of G is a product, or reaches one through linear
  /// elementwise ops of its shape that only their readers read (the sums
  /// SumThroughLinear moves onto the product).
  bool reachesAProduct(ValueId v, const Shape &full, bool first = true) const {
    const Node &m = G.node(v);
    if (m.shape != full)
      return false;
    if (m.cls() == OpClass::Matmul)
      return true;
    if ((!first && Uses[v] != 1) || !opInfo(m.op).isLinear())
      return false;
    return llvm::any_of(m.operands, [&](ValueId o) { return reachesAProduct(o, full, false); });
  }

  /// An f32 sum (or mean) over one axis of 2 to kShortAxisTerms elements
  /// that is not the innermost, as the adds of its slices, x[0] + x[1] + ...
  /// (times 1/n for a mean): a pointwise kernel that reads each slice in
  /// whole vectors, where a column reduction gives each thread one element
  /// of each column to load (split-K's sum of two slices read 12 MB at a
  /// third of DRAM's rate). The innermost axis and a product's own last two
  /// axes (the sum-of-product rewrites' cases) keep their reduction. Other
  /// forms: nullopt.
  std::optional<ValueId> termsOfAShortAxis(const Node &n, const NodeSpec &s) {
    const Node &x = out(s.operands[0]);
    if (!isShortAxisSum(n, x.shape))
      return std::nullopt;
    int64_t axis = n.axes[0], rank = x.shape.rank(), terms = x.shape[axis];
    // A product's own rows or columns summed (through linear ops): the
    // sum-of-product rewrites' cases. An operand other reductions read too:
    // one kernel reduces it for all of them.
    ValueId id = static_cast<ValueId>(&n - G.nodes().data());
    if ((axis >= rank - 2 && reachesAProduct(n.operands[0], G.node(n.operands[0]).shape)) ||
        ReductionReaders[n.operands[0]] > 1)
      return std::nullopt;
    // The sum's index is no longer fresh: a slice and a reshape join the
    // operand's chain of views, and what reads the sum continues it; and
    // the graph gains up to 2 * terms + 2 nodes.
    if (Out.viewChain(s.operands[0]) + 2 + ViewsBelow[id] > kMaxViewChain ||
        Out.depth(s.operands[0]) + static_cast<unsigned>(terms) + 2 + OpsBelow[id] > kMaxDepth ||
        Out.size() + (G.size() - static_cast<size_t>(id)) + 2 * terms + 4 > kMaxNodes)
      return std::nullopt;
    size_t made = Out.size(); // (nodes from here on are this sum's own)
    ValueId sum = -1;
    for (int64_t t = 0; t < terms; ++t) {
      NodeSpec part;
      part.op = OpKind::Slice;
      part.operands = {s.operands[0]};
      part.axis = axis;
      part.start = t;
      part.end = t + 1;
      ValueId v = sliceOf(part);
      if (sum < 0) {
        sum = v;
        continue;
      }
      NodeSpec add;
      add.op = OpKind::Add;
      add.operands = {sum, v};
      sum = emit(add);
    }
    if (n.op == OpKind::Mean) {
      NodeSpec scale;
      scale.op = OpKind::Mul;
      scale.operands = {sum, Out.constant(1.0 / static_cast<double>(terms), DType::F32)};
      sum = emit(scale);
    }
    if (out(sum).shape == n.shape && static_cast<size_t>(sum) >= made && !n.name.empty() &&
        !Out.lookup(n.name))
      Out.rename(sum, n.name); // keepdim: the last add is the sum, by its name
    return reshapeTo(sum, n.shape, n.name);
  }

  const Graph &G;
  Graph Out;
  std::vector<ValueId> Map;
  std::map<std::string, ValueId> Seen;
  std::vector<int> Uses; ///< of each node of G: its live readers, and 1 more for an output
  /// Of each node of G: the most views on a path from it to a reduction, a
  /// product or an output, and the most ops on a path to an output (the
  /// chains ir/Limits.h bounds continue there).
  std::vector<unsigned> ViewsBelow, OpsBelow;
  std::vector<int> ReductionReaders; ///< of each node of G: the live reductions that read it
};

} // namespace

Graph withoutDeadValues(const Graph &g) {
  std::vector<bool> live(g.size(), false);
  for (ValueId o : g.outputs())
    live[o] = true;
  for (size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (ValueId o : g.nodes()[i].operands)
        live[o] = true;
  Graph out(g.name());
  std::vector<ValueId> map(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.nodes()[i];
    if (!live[i] && n.op != OpKind::Input)
      continue;
    NodeSpec s = specOf(n);
    for (ValueId &o : s.operands)
      o = map[o];
    map[i] = out.add(s);
  }
  copyOutputs(g, map, out);
  return out;
}

Graph simplifyGraph(const Graph &g, bool *changed) {
  std::optional<Graph> emptied = replaceEmptyValues(g);
  Simplifier s(emptied ? *emptied : g);
  Graph out = withoutDeadValues(s.run());
  // Slices moved onto what they read leave joins to make (a slice of a
  // slice, a full of the sliced shape): simplified once more.
  if (std::optional<Graph> sunk = sinkSlices(out))
    out = withoutDeadValues(Simplifier(*sunk).run()); // (the walk skips the values left dead)
  if (changed)
    *changed = printGraph(out) != printGraph(g);
  return out;
}

} // namespace minijit
