//===- ir/Graph.cpp - the tensor graph IR ---------------------------------===//
// Node construction: every check a graph must pass, and type inference.
//===----------------------------------------------------------------------===//
#include "ir/Graph.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace minijit {

namespace {

std::string dimsStr(llvm::ArrayRef<int64_t> v) { return Shape(v).str(); }

[[noreturn]] void fail(const std::string &msg) { throw GraphError(msg); }

llvm::StringRef operandTypesText(OperandTypes t) {
  switch (t) {
  case OperandTypes::Any: return "any type";
  case OperandTypes::Numeric: return "a numeric type (f32, f16, bf16, i32 or i64)";
  case OperandTypes::Float: return "a floating-point type (f32, f16 or bf16)";
  case OperandTypes::Bool: return "bool";
  }
  return "";
}

bool accepts(OperandTypes t, DType d) {
  switch (t) {
  case OperandTypes::Any: return true;
  case OperandTypes::Numeric: return d != DType::Bool;
  case OperandTypes::Float: return isFloat(d);
  case OperandTypes::Bool: return d == DType::Bool;
  }
  return false;
}

/// `%x`, or "a literal" for a constant (which has no name).
std::string refOf(const Node &n) { return n.name.empty() ? "a literal" : "%" + n.name; }

/// `x.cast(DType::F32)` or `cast %x to=f32`: how the user would write a
/// cast of value `name`, in the language the graph is being built in.
std::string castHint(llvm::StringRef name, DType to, Spelling spelling) {
  if (spelling == Spelling::Cpp)
    return llvm::formatv("`{0}.cast({1})`", name, dtypeCppName(to)).str();
  return llvm::formatv("`cast %{0} to={1}`", name, dtypeName(to)).str();
}

/// `ne(x, 0)` or `ne %x, 0`.
std::string compareHint(llvm::StringRef name, Spelling spelling) {
  if (spelling == Spelling::Cpp)
    return llvm::formatv("`ne({0}, 0)`", name).str();
  return llvm::formatv("`ne %{0}, 0`", name).str();
}

void checkOperandType(OpKind op, const Node &x, Spelling spelling) {
  OperandTypes t = opInfo(op).operands;
  if (accepts(t, x.dtype))
    return;
  std::string hint;
  if (t == OperandTypes::Float)
    hint = "; cast it first (e.g. " + castHint(x.name, DType::F32, spelling) + ")";
  else if (t == OperandTypes::Numeric && x.dtype == DType::Bool)
    hint = "; cast it first (e.g. " + castHint(x.name, DType::I32, spelling) + ")";
  else if (t == OperandTypes::Bool)
    hint = "; compare first (e.g. " + compareHint(x.name, spelling) + ")";
  fail(llvm::formatv("{0}: operand {1} has dtype {2} but needs {3}{4}", opName(op), refOf(x),
                     dtypeName(x.dtype), operandTypesText(t), hint)
           .str());
}

void checkSameDType(OpKind op, const Node &a, const Node &b, Spelling spelling) {
  if (a.dtype == b.dtype)
    return;
  fail(llvm::formatv("{0}: operands have different dtypes {1} ({2}) and {3} ({4}); insert a "
                     "cast (e.g. {5})",
                     opName(op), dtypeName(a.dtype), refOf(a), dtypeName(b.dtype), refOf(b),
                     castHint(b.name, a.dtype, spelling))
           .str());
}

void checkArity(OpKind op, size_t got, size_t want) {
  if (got != want)
    fail(llvm::formatv("{0}: expects {1} operand{2}, got {3}", opName(op), want,
                       want == 1 ? "" : "s", got)
             .str());
}

/// `axis` of an op over a rank-`rank` operand, negatives counted from the end.
int64_t normalizedAxis(llvm::StringRef op, int64_t axis, unsigned rank) {
  auto r = static_cast<int64_t>(rank);
  if (rank == 0)
    fail(llvm::formatv("{0}: the operand is a scalar (rank 0), which has no axis {1}", op, axis)
             .str());
  if (axis < -r || axis >= r)
    fail(llvm::formatv("{0}: axis {1} is out of range for rank {2} (valid: {3}..{4})", op, axis, r,
                       -r, r - 1)
             .str());
  return axis < 0 ? axis + r : axis;
}

/// Refuses an op that needs a number of elements along `axis` where the
/// operand has a named size there (its value is known only at run time).
void refuseNamedAxis(llvm::StringRef op, const Shape &s, int64_t axis, llvm::StringRef doing) {
  Dim d = s.dim(static_cast<unsigned>(axis));
  if (!d.isNamed() || d.isBound())
    return;
  fail(llvm::formatv("{0}: axis {1} of {2} is the named dimension {3}; {4} a named dimension is "
                     "not supported (its size is known only when the graph runs)",
                     op, axis, s.str(), d.str(), doing)
           .str());
}

/// Literals are held as doubles: an i64 one is an integer that a double holds
/// exactly, so of at most 2^53 in magnitude.
bool isI64Literal(double v) {
  return std::isfinite(v) && v == std::trunc(v) && std::fabs(v) <= 9007199254740992.0;
}

/// Checks the literal value= of pad or full (`op`) against the dtype it
/// takes (exact for i32 and bool).
void checkPadValue(double v, DType t, llvm::StringRef op = "pad") {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  if (t == DType::I32 &&
      (!std::isfinite(v) || v != std::trunc(v) || v < -2147483648.0 || v > 2147483647.0))
    fail(llvm::formatv("{0}: value={1} is not an i32 value", op, text).str());
  if (t == DType::I64 && !isI64Literal(v))
    fail(llvm::formatv("{0}: value={1} is not an i64 value a literal can hold (an integer of at "
                       "most 2^53 = 9007199254740992 in magnitude)",
                       op, text)
             .str());
  if (t == DType::Bool && v != 0 && v != 1)
    fail(llvm::formatv("{0}: value={1} is not a bool value (use 0 or 1)", op, text).str());
  if (isFloat(t) && std::isfinite(v) && std::isinf(static_cast<float>(v)))
    fail(llvm::formatv("{0}: value={1} overflows f32", op, text).str());
}

/// reshape's target with its one -1 (if any) replaced by the dimension that
/// keeps `from`'s element count (numpy's and PyTorch's meaning). A symbolic
/// count divides when its number and names hold the others' (`B*S*64` by
/// `[B, -1]` gives `64*S`). Throws GraphError for two -1s, another negative
/// or zero beside a -1, and a count the others do not divide.
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
    if (e.coef <= 0)
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
                                                            : 0;
  dims[inferred] = Dim(rest, size);
  return Shape(std::span<const Dim>(dims));
}

} // namespace

NodeSpec specOf(const Node &n) {
  NodeSpec s;
  s.op = n.op;
  s.operands = n.operands;
  if (n.cls() == OpClass::Reduce && !n.axes.empty())
    s.axes = n.axes; // empty only for a scalar's reduction: "every axis" again
  if (n.op == OpKind::Flip)
    s.axes = n.axes;
  s.keepdim = n.keepdim;
  s.perm = n.perm;
  s.shape = n.shape;
  s.dtype = n.dtype;
  s.value = n.value;
  s.axis = n.axis;
  s.start = n.start;
  s.end = n.end;
  s.step = n.step;
  s.before = n.before;
  s.after = n.after;
  s.name = n.name;
  return s;
}

Graph::Graph(std::string name) : Name(std::move(name)) {
  bool ok = !Name.empty() && !(Name[0] >= '0' && Name[0] <= '9') && Name[0] != '.' &&
            isValidName(Name);
  if (!ok)
    fail(llvm::formatv("'{0}' is not a valid graph name (a letter or '_', then letters, digits, "
                       "'_' and '.')",
                       Name)
             .str());
}

bool Graph::isValidName(std::string_view name) {
  if (name.empty())
    return false;
  return llvm::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.';
  });
}

void Graph::reserveNamesOf(const Graph &g) {
  for (const Node &n : g.nodes())
    if (!n.name.empty())
      Reserved.insert(n.name);
}

std::string Graph::freshName() {
  for (;;) {
    std::string n = "t" + std::to_string(NextTemp++);
    if (!Names.count(n) && !Reserved.count(n))
      return n;
  }
}

ValueId Graph::add(const NodeSpec &spec, Spelling spelling) {
  Node n;
  n.op = spec.op;
  n.operands = spec.operands;
  llvm::StringRef op = opName(spec.op);
  if (Nodes.size() >= kMaxNodes)
    fail(llvm::formatv("graph '{0}' already has {1} nodes (arguments, literals and ops), the most "
                       "a graph may have",
                       Name, kMaxNodes)
             .str());
  Depth depth;
  for (ValueId v : spec.operands) {
    if (v < 0 || static_cast<size_t>(v) >= Nodes.size())
      fail(llvm::formatv("{0}: operand {1} is not a value of graph '{2}'", op, v, Name).str());
    depth.ops = std::max(depth.ops, Depths[v].ops + 1);
    depth.views = std::max(depth.views, Depths[v].views);
  }
  OpClass cls = opClass(spec.op);
  if (cls == OpClass::Reduce || cls == OpClass::Matmul)
    depth.views = 0; // computed at a fresh index
  else if (cls == OpClass::View)
    ++depth.views;
  // Later stages walk chains of ops recursively, and compose the index
  // arithmetic of chained views (see ir/Limits.h).
  if (depth.ops > kMaxDepth)
    fail(llvm::formatv("{0}: a chain of {1} ops ends here; a graph may be at most {2} ops deep",
                       op, depth.ops, kMaxDepth)
             .str());
  if (depth.views > kMaxViewChain)
    fail(llvm::formatv("{0}: a chain of {1} views (reshape, permute, broadcast) with no reduction "
                       "or matmul between them ends here; at most {2} are allowed",
                       op, depth.views, kMaxViewChain)
             .str());
  auto operand = [&](unsigned i) -> const Node & { return Nodes[spec.operands[i]]; };

  switch (cls) {
  case OpClass::Input:
    checkArity(spec.op, spec.operands.size(), 0);
    if (spec.name.empty())
      fail("input: a graph argument needs a name");
    checkShape(spec.shape, "input %" + spec.name);
    for (unsigned d = 0; d < spec.shape.rank(); ++d) {
      DimExpr e = spec.shape.dim(d).expr();
      if (e.names.size() > 1 || (!e.isNumber() && e.coef != 1))
        fail(llvm::formatv("input %{0}: dimension {1} is {2}; an argument's dimensions are numbers "
                           "or single names (reshape inside the graph to a product)",
                           spec.name, d, e.str())
                 .str());
    }
    n.dtype = spec.dtype;
    n.shape = spec.shape;
    break;
  case OpClass::Constant: {
    checkArity(spec.op, spec.operands.size(), 0);
    double v = spec.value;
    n.dtype = spec.dtype;
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", v);
    if (spec.dtype == DType::I32) {
      if (!std::isfinite(v) || v != std::trunc(v) || v < -2147483648.0 || v > 2147483647.0)
        fail(llvm::formatv("literal {0} is not an i32 value", text).str());
    } else if (spec.dtype == DType::I64) {
      if (!isI64Literal(v))
        fail(llvm::formatv("literal {0} is not an i64 value a literal can hold (an integer of at "
                           "most 2^53 = 9007199254740992 in magnitude)",
                           text)
                 .str());
    } else if (spec.dtype == DType::Bool) {
      if (v != 0 && v != 1)
        fail(llvm::formatv("literal {0} is not a bool value (use true, false, 1 or 0)", text).str());
    } else if (std::isfinite(v) && std::isinf(static_cast<float>(v))) {
      // beyond what rounds to FLT_MAX (3.4028235e+38 still rounds to it)
      fail(llvm::formatv("literal {0} overflows f32", text).str());
    }
    // Float literals keep f32 precision: f16/bf16 arithmetic happens in f32.
    n.value = isFloat(spec.dtype) ? static_cast<double>(static_cast<float>(v)) : v;
    break;
  }
  case OpClass::Iota: {
    checkArity(spec.op, spec.operands.size(), 0);
    checkShape(spec.shape, op);
    if (spec.op == OpKind::Full) {
      n.dtype = spec.dtype;
      n.shape = spec.shape;
      checkPadValue(spec.value, spec.dtype, "full");
      n.value = isFloat(spec.dtype) ? static_cast<double>(static_cast<float>(spec.value))
                                    : spec.value;
      break;
    }
    if (spec.dtype == DType::Bool)
      fail("iota: dtype bool cannot hold an index; use i32, f32, f16 or bf16");
    n.axis = normalizedAxis(op, spec.axis, spec.shape.rank());
    n.dtype = spec.dtype;
    n.shape = spec.shape;
    break;
  }
  case OpClass::Concat: {
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
    break;
  }
  case OpClass::Gather: {
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
    break;
  }
  case OpClass::Scan:
    checkArity(spec.op, spec.operands.size(), 1);
    checkOperandType(spec.op, operand(0), spelling);
    n.axis = normalizedAxis(op, spec.axis, operand(0).shape.rank());
    n.dtype = operand(0).dtype;
    n.shape = operand(0).shape;
    break;
  case OpClass::Unary:
    checkArity(spec.op, spec.operands.size(), 1);
    checkOperandType(spec.op, operand(0), spelling);
    n.dtype = operand(0).dtype;
    n.shape = operand(0).shape;
    break;
  case OpClass::Binary: {
    checkArity(spec.op, spec.operands.size(), 2);
    checkSameDType(spec.op, operand(0), operand(1), spelling);
    checkOperandType(spec.op, operand(0), spelling);
    n.shape = broadcastShapes(operand(0).shape, operand(1).shape, op);
    n.dtype = opInfo(spec.op).boolResult ? DType::Bool : operand(0).dtype;
    break;
  }
  case OpClass::Select: {
    checkArity(spec.op, spec.operands.size(), 3);
    if (operand(0).dtype != DType::Bool)
      fail(llvm::formatv("where: condition %{0} has dtype {1} but must be bool; compare first "
                         "(e.g. {2})",
                         operand(0).name, dtypeName(operand(0).dtype),
                         compareHint(operand(0).name, spelling))
               .str());
    checkSameDType(spec.op, operand(1), operand(2), spelling);
    Shape s = broadcastShapes(operand(0).shape, operand(1).shape, op);
    n.shape = broadcastShapes(s, operand(2).shape, op);
    n.dtype = operand(1).dtype;
    break;
  }
  case OpClass::Cast:
    checkArity(spec.op, spec.operands.size(), 1);
    n.dtype = spec.dtype;
    n.shape = operand(0).shape;
    break;
  case OpClass::Reduce: {
    checkArity(spec.op, spec.operands.size(), 1);
    const Node &x = operand(0);
    checkOperandType(spec.op, x, spelling);
    int rank = static_cast<int>(x.shape.rank());
    DimVector axes;
    if (!spec.axes) {
      for (int i = 0; i < rank; ++i)
        axes.push_back(i);
    } else {
      if (spec.axes->empty())
        fail(llvm::formatv("{0}: axes=[] reduces nothing; leave axes out to reduce every axis", op)
                 .str());
      for (int64_t a : *spec.axes) {
        if (a < -rank || a >= rank)
          fail(llvm::formatv("{0}: axis {1} is out of range for rank {2} (valid: {3}..{4})", op, a,
                             rank, -rank, rank - 1)
                   .str());
        int64_t norm = a < 0 ? a + rank : a;
        if (llvm::is_contained(axes, norm))
          fail(llvm::formatv("{0}: axis {1} appears twice in axes={2}", op, norm,
                             dimsStr(*spec.axes))
                   .str());
        axes.push_back(norm);
      }
      std::sort(axes.begin(), axes.end());
    }
    std::vector<Dim> out;
    for (int i = 0; i < rank; ++i) {
      bool reduced = llvm::is_contained(axes, i);
      if (!reduced)
        out.push_back(x.shape.dim(i));
      else if (spec.keepdim)
        out.push_back(Dim(int64_t(1)));
    }
    if (isArgReduction(spec.op) && axes.size() != 1)
      fail(llvm::formatv("{0}: takes one axis, got {1}", op,
                         spec.axes ? "axes=" + dimsStr(*spec.axes) : std::string("none"))
               .str());
    n.axes = axes;
    n.keepdim = spec.keepdim;
    n.dtype = isArgReduction(spec.op) ? DType::I32 : x.dtype;
    n.shape = Shape(std::span<const Dim>(out));
    break;
  }
  case OpClass::View: {
    checkArity(spec.op, spec.operands.size(), 1);
    const Node &x = operand(0);
    n.dtype = x.dtype;
    if (spec.op == OpKind::Permute) {
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
      break;
    }
    if (spec.op == OpKind::Slice) {
      unsigned rank = x.shape.rank();
      n.axis = normalizedAxis(op, spec.axis, rank);
      refuseNamedAxis(op, x.shape, n.axis, "slicing");
      int64_t size = x.shape[n.axis];
      int64_t start = spec.start < 0 ? spec.start + size : spec.start;
      int64_t end = spec.end < 0 ? spec.end + size : spec.end;
      if (spec.step < 1)
        fail(llvm::formatv("slice: step={0} must be at least 1", spec.step).str());
      if (start < 0 || start >= size)
        fail(llvm::formatv("slice: start={0} is out of range for axis {1} of size {2} (valid: "
                           "{3}..{4})",
                           spec.start, n.axis, size, -size, size - 1)
                 .str());
      if (end < 0 || end > size)
        fail(llvm::formatv("slice: end={0} is out of range for axis {1} of size {2} (valid: "
                           "{3}..{2})",
                           spec.end, n.axis, size, -size)
                 .str());
      if (end <= start)
        fail(llvm::formatv("slice: start={0} end={1} selects no element of axis {2} (size {3}); "
                           "end must be past start",
                           spec.start, spec.end, n.axis, size)
                 .str());
      n.start = start;
      n.end = end;
      n.step = spec.step;
      n.shape = x.shape;
      n.shape.setDim(n.axis, Dim((end - start + spec.step - 1) / spec.step));
      break;
    }
    if (spec.op == OpKind::Flip) {
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
      break;
    }
    if (spec.op == OpKind::Pad) {
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
      break;
    }
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
    break;
  }
  case OpClass::Matmul: {
    checkArity(spec.op, spec.operands.size(), 2);
    const Node &a = operand(0), &b = operand(1);
    checkSameDType(spec.op, a, b, spelling);
    checkOperandType(spec.op, a, spelling);
    if (a.shape.rank() < 2 || b.shape.rank() < 2)
      fail(llvm::formatv("matmul: operands must have rank >= 2, got {0} and {1}; reshape a "
                         "vector to [1, n] or [n, 1]",
                         a.shape.str(), b.shape.str())
               .str());
    unsigned ra = a.shape.rank(), rb = b.shape.rank();
    if (!sameDim(a.shape.dim(ra - 1), b.shape.dim(rb - 2)))
      fail(llvm::formatv("matmul: inner dimensions do not match: {0} @ {1} ({2} vs {3})",
                         a.shape.str(), b.shape.str(), a.shape.dim(ra - 1).str(),
                         b.shape.dim(rb - 2).str())
               .str());
    std::vector<Dim> dimsA = a.shape.allDims(), dimsB = b.shape.allDims();
    Shape batchA(std::span<const Dim>(dimsA).first(ra - 2));
    Shape batchB(std::span<const Dim>(dimsB).first(rb - 2));
    std::vector<Dim> out = broadcastShapes(batchA, batchB, "matmul (batch dimensions)").allDims();
    out.push_back(dimsA[ra - 2]);
    out.push_back(dimsB[rb - 1]);
    n.dtype = a.dtype;
    n.shape = Shape(std::span<const Dim>(out));
    checkShape(n.shape, "matmul result");
    break;
  }
  case OpClass::Random: {
    bool drop = spec.op == OpKind::Dropout;
    checkArity(spec.op, spec.operands.size(), drop ? 3 : 2);
    unsigned first = drop ? 1 : 0;
    for (unsigned k = 0; k < 2; ++k) {
      const Node &s = operand(first + k);
      if (s.dtype != DType::I32 || s.shape.rank() != 0)
        fail(llvm::formatv("{0}: the {1} {2} is {3}{4} but must be an i32 scalar (i32[])", op,
                           k == 0 ? "seed" : "offset", refOf(s), dtypeName(s.dtype),
                           s.shape.str())
                 .str());
    }
    if (drop) {
      const Node &x = operand(0);
      checkOperandType(spec.op, x, spelling);
      if (!(spec.value >= 0 && spec.value < 1)) {
        char text[32];
        std::snprintf(text, sizeof text, "%.9g", spec.value);
        fail(llvm::formatv("dropout: p={0} is outside [0, 1) (the probability of dropping an "
                           "element)",
                           text)
                 .str());
      }
      n.dtype = x.dtype;
      n.shape = x.shape;
      n.value = static_cast<double>(static_cast<float>(spec.value));
    } else {
      checkShape(spec.shape, op);
      if (!isFloat(spec.dtype))
        fail(llvm::formatv("{0}: dtype {1}; random numbers are f32, f16 or bf16 (cast them)", op,
                           dtypeName(spec.dtype))
                 .str());
      n.dtype = spec.dtype;
      n.shape = spec.shape;
    }
    // The kernels count elements in 32 bits (ir/Philox.h's counter has room for more).
    if (n.shape.isBound() && n.shape.numel() > 2147483647)
      fail(llvm::formatv("{0}: {1} has {2} elements; random ops take at most 2^31 - 1", op,
                         n.shape.str(), n.shape.numel())
               .str());
    break;
  }
  case OpClass::Derivative: {
    bool isVjp = spec.op == OpKind::Vjp;
    checkArity(spec.op, spec.operands.size(), isVjp ? 3 : 2);
    const Node &y = operand(0), &x = operand(1);
    auto floatOnly = [&](const Node &v, llvm::StringRef role) {
      if (!isFloat(v.dtype))
        fail(llvm::formatv("{0}: {1} %{2} has dtype {3}; only floating-point values (f32, f16, "
                           "bf16) have gradients",
                           op, role, v.name, dtypeName(v.dtype))
                 .str());
    };
    floatOnly(y, isVjp ? "the output" : "the loss");
    floatOnly(x, isVjp ? "the input" : "the value");
    if (!isVjp && (y.shape.numel() != 1 || y.shape.hasNames()))
      fail(llvm::formatv("grad: the loss %{0} has shape {1} ({2} elements) but must have one "
                         "element; reduce it first (e.g. {3}) or use vjp",
                         y.name, y.shape.str(), y.shape.numelDim().str(),
                         spelling == Spelling::Cpp ? llvm::formatv("`mean({0})`", y.name).str()
                                                   : llvm::formatv("`mean %{0}`", y.name).str())
               .str());
    if (isVjp) {
      const Node &dy = operand(2);
      if (dy.dtype != y.dtype || dy.shape != y.shape)
        fail(llvm::formatv("vjp: the cotangent is {0} but must have the output %{1}'s type {2}",
                           std::string(dtypeName(dy.dtype)) + dy.shape.str(), y.name,
                           std::string(dtypeName(y.dtype)) + y.shape.str())
                 .str());
    }
    n.dtype = x.dtype;
    n.shape = x.shape;
    break;
  }
  }
  checkShape(n.shape, op);

  if (spec.op != OpKind::Constant) {
    std::string name = spec.name.empty() ? freshName() : spec.name;
    if (!isValidName(name))
      fail(llvm::formatv("'{0}' is not a valid value name (letters, digits, '_' and '.')", name)
               .str());
    if (Names.count(name))
      fail(llvm::formatv("%{0} is already defined in graph '{1}'", name, Name).str());
    n.name = name;
  }
  auto id = static_cast<ValueId>(Nodes.size());
  if (!n.name.empty())
    Names[n.name] = id;
  if (spec.op == OpKind::Input)
    Inputs.push_back(id);
  Nodes.push_back(std::move(n));
  Depths.push_back(depth);
  return id;
}

Tensor Graph::input(std::string_view name, DType dtype, const Shape &shape) {
  NodeSpec s;
  s.op = OpKind::Input;
  s.name = std::string(name);
  s.dtype = dtype;
  s.shape = shape;
  return Tensor(this, add(s));
}

ValueId Graph::constant(double value, DType dtype) {
  NodeSpec s;
  s.op = OpKind::Constant;
  s.value = value;
  s.dtype = dtype;
  return add(s);
}

void Graph::output(ValueId id, std::string_view name) {
  if (id < 0 || static_cast<size_t>(id) >= Nodes.size())
    fail(llvm::formatv("output: {0} is not a value of graph '{1}'", id, Name).str());
  if (Nodes[id].op == OpKind::Constant)
    fail("output: a literal cannot be a graph result; compute it from an input");
  if (!name.empty() && name != Nodes[id].name) {
    if (Nodes[id].op == OpKind::Input)
      fail(llvm::formatv("output: %{0} is an argument of graph '{1}'; returning it as %{2} would "
                         "rename the argument, so it is returned as %{0} or not at all",
                         Nodes[id].name, Name, name)
               .str());
    rename(id, name);
  }
  Outputs.push_back(id);
  Updates.push_back(-1);
}

void Graph::update(ValueId input, ValueId value) {
  for (ValueId v : {input, value})
    if (v < 0 || static_cast<size_t>(v) >= Nodes.size())
      fail(llvm::formatv("update: {0} is not a value of graph '{1}'", v, Name).str());
  const Node &in = Nodes[input], &val = Nodes[value];
  if (in.op != OpKind::Input)
    fail(llvm::formatv("update: %{0} is not an argument of graph '{1}'; only arguments can be "
                       "updated in place",
                       in.name, Name)
             .str());
  if (value == input)
    fail(llvm::formatv("update: %{0} would update itself", in.name).str());
  if (val.op == OpKind::Constant)
    fail("update: a literal cannot be a graph result; compute it from an input");
  if (val.dtype != in.dtype || val.shape != in.shape)
    fail(llvm::formatv("update: %{0} is {1}{2} but the argument %{3} it updates is {4}{5}",
                       val.name, dtypeName(val.dtype), val.shape.str(), in.name,
                       dtypeName(in.dtype), in.shape.str())
             .str());
  for (size_t i = 0; i < Outputs.size(); ++i)
    if (Updates[i] == input)
      fail(llvm::formatv("update: %{0} is already updated by %{1}", in.name,
                         Nodes[Outputs[i]].name)
               .str());
  Outputs.push_back(value);
  Updates.push_back(input);
}

void Graph::copyResults(const Graph &from) {
  for (size_t o = 0; o < from.outputs().size(); ++o) {
    if (from.updates()[o] >= 0)
      update(from.updates()[o], from.outputs()[o]);
    else
      output(from.outputs()[o]);
  }
}

int Graph::updatedInput(size_t o) const {
  if (Updates[o] < 0)
    return -1;
  return static_cast<int>(llvm::find(Inputs, Updates[o]) - Inputs.begin());
}

void Graph::update(const Tensor &input, const Tensor &value) {
  if (input.empty() || value.empty())
    fail("update: the tensor is empty (default-constructed)");
  if (&input.graph() != this || &value.graph() != this)
    fail("update: the tensor belongs to another graph");
  update(input.id(), value.id());
}

void Graph::output(const Tensor &t, std::string_view name) {
  if (t.empty())
    fail("output: the tensor is empty (default-constructed)");
  if (&t.graph() != this)
    fail("output: the tensor belongs to another graph");
  output(t.id(), name);
}

std::optional<ValueId> Graph::lookup(std::string_view name) const {
  auto it = Names.find(std::string(name));
  if (it == Names.end())
    return std::nullopt;
  return it->second;
}

void Graph::rename(ValueId id, std::string_view name) {
  if (!isValidName(name))
    fail(llvm::formatv("'{0}' is not a valid value name (letters, digits, '_' and '.')", name)
             .str());
  if (Nodes[id].op == OpKind::Constant)
    fail("a literal has no name");
  auto it = Names.find(std::string(name));
  if (it != Names.end()) {
    if (it->second == id)
      return;
    fail(llvm::formatv("%{0} is already defined in graph '{1}'", name, Name).str());
  }
  Names.erase(Nodes[id].name);
  Nodes[id].name = std::string(name);
  Names[std::string(name)] = id;
}

void Tensor::failEmpty() {
  fail("an empty Tensor (default-constructed) belongs to no graph; make tensors with "
       "Graph::input or an op on another tensor");
}

Tensor Tensor::named(std::string_view name) const {
  graph().rename(Id, name);
  return *this;
}

} // namespace minijit
