//===- ir/InferViewType.cpp - the type rules of views, concat and gathers ===//
// The shapes of the ops that move elements (ir/InferType.cpp has the rest):
// permute, slice, flip, pad, reshape, broadcast, concat, take and
// take_along_axis, each op's attributes checked against its operand.
//===----------------------------------------------------------------------===//
#include "ir/InferTypeInternal.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace minijit::detail {

namespace {

/// reshape's target with its one -1 (if any) replaced by the dimension that
/// keeps `from`'s element count (numpy's and PyTorch's meaning). A symbolic
/// count divides when its number and names hold the others' (`B*S*64` by
/// `[B, -1]` gives `64*S`). Throws GraphError for two -1s, another negative
/// or a zero beside a -1 (any size would do), and a count the others do not
/// divide.
Shape inferReshapeTarget(const Shape &target, const Shape &from) {
  std::vector<Dim> dims = target.allDims();
  int inferred = -1;
  for (unsigned d = 0; d < dims.size(); ++d) {
    const DimExpr &e = dims[d].expr();
    if (!e.isNumber() || e.coef >= 0)
      continue;
    if (e.coef != -1)
      throw GraphError(llvm::formatv("reshape: shape={0} has {1} at dim {2}; a dimension is at "
                                     "least 1, or -1 for the one inferred from the element count",
                                     target.str(), e.coef, d)
                           .str());
    if (inferred >= 0)
      throw GraphError(llvm::formatv("reshape: shape={0} has -1 at dims {1} and {2}; only one "
                                     "dimension can be inferred",
                                     target.str(), inferred, d)
                           .str());
    inferred = static_cast<int>(d);
  }
  if (inferred < 0)
    return target;
  DimExpr known;
  int64_t knownSize = 1;
  bool bound = true;
  for (unsigned d = 0; d < dims.size(); ++d) {
    if (static_cast<int>(d) == inferred)
      continue;
    const DimExpr &e = dims[d].expr();
    if (e.coef == 0 || (dims[d].isBound() && dims[d].size() == 0))
      throw GraphError(llvm::formatv("reshape: cannot infer the -1 of shape={0}: dim {1} is 0, so "
                                     "every size would do (PyTorch refuses it too); give that "
                                     "dimension instead of -1",
                                     target.str(), d)
                           .str());
    if (e.coef < 0)
      throw GraphError(llvm::formatv("reshape: shape={0} has {1} at dim {2} beside the -1 at dim "
                                     "{3}; the other dimensions must be at least 1 to infer it",
                                     target.str(), e.coef, d, inferred)
                           .str());
    known = known * e;
    bound = bound && dims[d].isBound();
    knownSize = bound ? knownSize * dims[d].size() : 0;
  }
  Dim count = from.numelDim();
  DimExpr rest = count.expr();
  bool divides = known.coef != 0 && rest.coef % known.coef == 0;
  for (const std::string &name : known.names) {
    auto it = std::find(rest.names.begin(), rest.names.end(), name);
    if (it == rest.names.end()) {
      divides = false;
      break;
    }
    rest.names.erase(it);
  }
  if (!divides)
    throw GraphError(llvm::formatv("reshape: cannot infer the -1 of shape={0}: {1} has {2} "
                                   "elements, which the other dimensions ({3} elements) do not "
                                   "divide",
                                   target.str(), from.str(), count.str(), known.str())
                         .str());
  rest.coef /= known.coef;
  int64_t size = rest.isNumber() ? rest.coef
                 : count.isBound() && bound && knownSize > 0 ? count.size() / knownSize
                                                            : kUnboundSize;
  dims[inferred] = Dim(rest, size);
  return Shape(std::span<const Dim>(dims));
}

} // namespace

void TypeRules::inferView(Node &n) {
  checkArity(spec.op, spec.operands.size(), 1);
  const Node &x = operand(0);
  n.dtype = x.dtype;
  if (spec.op == OpKind::Permute)
    return inferPermute(n, x);
  if (spec.op == OpKind::Slice)
    return inferSlice(n, x);
  if (spec.op == OpKind::Flip)
    return inferFlip(n, x);
  if (spec.op == OpKind::Pad)
    return inferPad(n, x);
  inferReshapeOrBroadcast(n, x);
}

void TypeRules::inferPermute(Node &n, const Node &x) {
  unsigned rank = x.shape.rank();
  DimVector seen(rank, 0);
  bool ok = spec.perm.size() == rank;
  for (int64_t p : spec.perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
      ok = false;
      break;
    }
    seen[p] = 1;
  }
  if (!ok)
    fail(llvm::formatv("permute: perm={0} is not a permutation of 0..{1} (operand shape {2})",
                       dimsStr(spec.perm), static_cast<int>(rank) - 1, x.shape.str())
             .str());
  std::vector<Dim> out;
  for (int64_t p : spec.perm)
    out.push_back(x.shape.dim(static_cast<unsigned>(p)));
  n.perm = spec.perm;
  n.shape = Shape(std::span<const Dim>(out));
}

void TypeRules::inferSlice(Node &n, const Node &x) {
  unsigned rank = x.shape.rank();
  n.axis = normalizedAxis(op, spec.axis, rank);
  refuseNamedAxis(op, x.shape, n.axis, "slicing");
  int64_t size = x.shape[n.axis];
  int64_t start = spec.start < 0 ? spec.start + size : spec.start;
  int64_t end = spec.end < 0 ? spec.end + size : spec.end;
  if (spec.step < 1)
    fail(llvm::formatv("slice: step={0} must be at least 1", spec.step).str());
  if (start < 0 || start > size)
    fail(llvm::formatv("slice: start={0} is out of range for axis {1} of size {2} (valid: "
                       "{3}..{2})",
                       spec.start, n.axis, size, -size)
             .str());
  if (end < 0 || end > size)
    fail(llvm::formatv("slice: end={0} is out of range for axis {1} of size {2} (valid: "
                       "{3}..{2})",
                       spec.end, n.axis, size, -size)
             .str());
  // start == end is an empty slice, as x[3:3] is in numpy and PyTorch; an
  // end before the start (which they also take as empty) is refused, as
  // out-of-range bounds are, for it is most often a mistake.
  if (end < start)
    fail(llvm::formatv("slice: start={0} end={1} has its end before its start on axis {2} (size "
                       "{3}); end == start selects no element (an empty slice)",
                       spec.start, spec.end, n.axis, size)
             .str());
  n.start = start;
  n.end = end;
  n.step = spec.step;
  n.shape = x.shape;
  n.shape.setDim(n.axis, Dim((end - start + spec.step - 1) / spec.step));
}

void TypeRules::inferFlip(Node &n, const Node &x) {
  int rank = static_cast<int>(x.shape.rank());
  if (!spec.axes || spec.axes->empty())
    fail("flip: needs axes=[...], the axes to reverse (at least one)");
  DimVector axes;
  for (int64_t a : *spec.axes) {
    if (a < -rank || a >= rank)
      fail(llvm::formatv("flip: axis {0} is out of range for rank {1} (valid: {2}..{3})", a,
                         rank, -rank, rank - 1)
               .str());
    int64_t norm = a < 0 ? a + rank : a;
    if (llvm::is_contained(axes, norm))
      fail(llvm::formatv("flip: axis {0} appears twice in axes={1}", norm,
                         dimsStr(*spec.axes))
               .str());
    refuseNamedAxis(op, x.shape, norm, "flipping");
    axes.push_back(norm);
  }
  std::sort(axes.begin(), axes.end());
  n.axes = axes;
  n.shape = x.shape;
}

void TypeRules::inferPad(Node &n, const Node &x) {
  unsigned rank = x.shape.rank();
  if (spec.before.size() != rank || spec.after.size() != rank)
    fail(llvm::formatv("pad: before={0} and after={1} need one entry per axis of {2} (rank "
                       "{3})",
                       dimsStr(spec.before), dimsStr(spec.after), x.shape.str(), rank)
             .str());
  std::vector<Dim> out;
  for (unsigned d = 0; d < rank; ++d) {
    if (spec.before[d] < 0 || spec.after[d] < 0)
      fail(llvm::formatv("pad: before={0} after={1} has a negative count at axis {2}; pads "
                         "add elements (drop them with slice)",
                         dimsStr(spec.before), dimsStr(spec.after), d)
               .str());
    if (spec.before[d] == 0 && spec.after[d] == 0) {
      out.push_back(x.shape.dim(d));
      continue;
    }
    refuseNamedAxis(op, x.shape, d, "padding");
    out.push_back(Dim(spec.before[d] + x.shape[d] + spec.after[d]));
  }
  checkPadValue(spec.value, x.dtype);
  n.before = spec.before;
  n.after = spec.after;
  n.value = isFloat(x.dtype) ? static_cast<double>(static_cast<float>(spec.value)) : spec.value;
  n.shape = Shape(std::span<const Dim>(out));
}

void TypeRules::inferReshapeOrBroadcast(Node &n, const Node &x) {
  Shape target = spec.shape;
  if (spec.op == OpKind::Reshape)
    target = inferReshapeTarget(spec.shape, x.shape);
  checkShape(target, op);
  if (spec.op == OpKind::Reshape) {
    Dim from = x.shape.numelDim(), to = target.numelDim();
    if (!sameDim(from, to))
      fail(llvm::formatv("reshape: cannot reshape {0} ({1} elements) to {2} ({3} elements)",
                         x.shape.str(), from.str(), target.str(), to.str())
               .str());
  } else {
    assert(spec.op == OpKind::Broadcast && "views are reshape, permute, broadcast");
    if (x.shape.rank() > spec.shape.rank())
      fail(llvm::formatv("broadcast: {0} has more dimensions than the target {1}", x.shape.str(),
                         spec.shape.str())
               .str());
    unsigned off = spec.shape.rank() - x.shape.rank();
    for (unsigned i = 0; i < x.shape.rank(); ++i) {
      Dim from = x.shape.dim(i), to = spec.shape.dim(off + i);
      bool one = from.isBound() && from.size() == 1 && (!from.isNamed() || to.isBound());
      if (!one && !sameDim(from, to))
        fail(llvm::formatv("broadcast: {0} does not broadcast to {1} (dim {2}: {3} vs {4})",
                           x.shape.str(), spec.shape.str(), off + i, from.str(), to.str())
                 .str());
    }
  }
  n.shape = target;
}

void TypeRules::inferConcat(Node &n) {
  if (spec.operands.empty())
    fail("concat: expects at least one operand, got 0");
  if (spec.operands.size() > kMaxConcatOperands)
    fail(llvm::formatv("concat: {0} operands; at most {1} are allowed (concat groups of them, "
                       "then the groups)",
                       spec.operands.size(), kMaxConcatOperands)
             .str());
  const Node &first = operand(0);
  n.axis = normalizedAxis(op, spec.axis, first.shape.rank());
  std::vector<Dim> out = first.shape.allDims();
  int64_t total = 0;
  for (unsigned i = 0; i < spec.operands.size(); ++i) {
    const Node &x = operand(i);
    checkSameDType(spec.op, first, x, spelling);
    if (x.shape.rank() != first.shape.rank())
      fail(llvm::formatv("concat: operand {0} ({1}) has rank {2} but operand 0 ({3}) has rank "
                         "{4}; all operands need one rank",
                         i, refOf(x), x.shape.rank(), refOf(first), first.shape.rank())
               .str());
    for (unsigned d = 0; d < x.shape.rank(); ++d)
      if (d != n.axis && !sameDim(x.shape.dim(d), first.shape.dim(d)))
        fail(llvm::formatv("concat: shapes {0} and {1} differ in dim {2} ({3} vs {4}); only "
                           "the concatenated axis {5} may differ",
                           first.shape.str(), x.shape.str(), d, first.shape.dim(d).str(),
                           x.shape.dim(d).str(), n.axis)
                 .str());
    refuseNamedAxis(op, x.shape, n.axis, "concatenating along");
    total += x.shape[n.axis];
  }
  out[n.axis] = Dim(total);
  n.dtype = first.dtype;
  n.shape = Shape(std::span<const Dim>(out));
}

void TypeRules::inferGather(Node &n) {
  checkArity(spec.op, spec.operands.size(), 2);
  const Node &x = operand(0), &idx = operand(1);
  if (!isInteger(idx.dtype))
    fail(llvm::formatv("{0}: the indices {1} have dtype {2} but must be i32 or i64; cast them first "
                       "(e.g. {3})",
                       op, refOf(idx), dtypeName(idx.dtype), castHint(idx.name, DType::I32, spelling))
             .str());
  n.axis = normalizedAxis(op, spec.axis, x.shape.rank());
  std::vector<Dim> out;
  if (spec.op == OpKind::Take) {
    for (unsigned d = 0; d < n.axis; ++d)
      out.push_back(x.shape.dim(d));
    for (unsigned d = 0; d < idx.shape.rank(); ++d)
      out.push_back(idx.shape.dim(d));
    for (unsigned d = n.axis + 1; d < x.shape.rank(); ++d)
      out.push_back(x.shape.dim(d));
    if (out.size() > kMaxRank)
      fail(llvm::formatv("take: the result would have rank {0} ({1} before the axis, {2} of the "
                         "indices, {3} after); at most {4}",
                         out.size(), n.axis, idx.shape.rank(), x.shape.rank() - n.axis - 1,
                         kMaxRank)
               .str());
  } else {
    if (idx.shape.rank() != x.shape.rank())
      fail(llvm::formatv("take_along_axis: the indices {0} have rank {1} but {2} has rank {3}; "
                         "they need one rank (reshape the indices, e.g. to [N, 1])",
                         refOf(idx), idx.shape.rank(), refOf(x), x.shape.rank())
               .str());
    for (unsigned d = 0; d < x.shape.rank(); ++d) {
      Dim a = x.shape.dim(d), b = idx.shape.dim(d);
      if (d == n.axis) {
        out.push_back(b);
        continue;
      }
      if (sameDim(a, b) || (b.isBound() && b.size() == 1 && !b.isNamed())) {
        out.push_back(a);
        continue;
      }
      if (a.isBound() && a.size() == 1 && !a.isNamed()) {
        out.push_back(b);
        continue;
      }
      fail(llvm::formatv("take_along_axis: {0} and the indices {1} do not broadcast (dim {2}: "
                         "{3} vs {4}); only the axis {5} may differ",
                         x.shape.str(), idx.shape.str(), d, a.str(), b.str(), n.axis)
               .str());
    }
  }
  n.dtype = x.dtype;
  n.shape = Shape(std::span<const Dim>(out));
  // An index into an empty axis has no element to read, not even one to
  // clamp to: refused as PyTorch refuses it ("index out of range"). An
  // empty result reads nothing and is fine.
  Dim along = x.shape.dim(static_cast<unsigned>(n.axis));
  if (along.isBound() && along.size() == 0 && n.shape.isBound() && n.shape.numel() > 0)
    fail(llvm::formatv("{0}: axis {1} of {2} ({3}{4}) has size 0, so no index into it is valid, "
                       "but the result {5} has {6} elements to read; indices into an empty axis "
                       "must be empty too",
                       op, n.axis, refOf(x), dtypeName(x.dtype), x.shape.boundStr(),
                       n.shape.boundStr(), n.shape.numel())
             .str());
}

} // namespace minijit::detail
