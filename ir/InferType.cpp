//===- ir/InferType.cpp - each op class's type rule ------------------------===//
// Node construction's checks and type inference (Graph::add), one rule per
// op class: the operands' dtypes and shapes checked against the op's
// (Ops.def's Operands and Result columns), the result's dtype, shape and
// attributes inferred. The views, concat and gathers are in
// ir/InferViewType.cpp.
//===----------------------------------------------------------------------===//
#include "ir/InferTypeInternal.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace minijit::detail {

std::string dimsStr(llvm::ArrayRef<int64_t> v) { return Shape(v).str(); }

void fail(const std::string &msg) { throw GraphError(msg); }

namespace {

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

} // namespace

std::string refOf(const Node &n) { return n.name.empty() ? "a literal" : "%" + n.name; }

std::string castHint(llvm::StringRef name, DType to, Spelling spelling) {
  if (spelling == Spelling::Cpp)
    return llvm::formatv("`{0}.cast({1})`", name, dtypeCppName(to)).str();
  return llvm::formatv("`cast %{0} to={1}`", name, dtypeName(to)).str();
}

namespace {

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

} // namespace

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

void refuseNamedAxis(llvm::StringRef op, const Shape &s, int64_t axis, llvm::StringRef doing) {
  Dim d = s.dim(static_cast<unsigned>(axis));
  if (!d.isNamed() || d.isBound())
    return;
  fail(llvm::formatv("{0}: axis {1} of {2} is the named dimension {3}; {4} a named dimension is "
                     "not supported (its size is known only when the graph runs)",
                     op, axis, s.str(), d.str(), doing)
           .str());
}

namespace {

/// Literals are held as doubles: an i64 one is an integer that a double holds
/// exactly, so of at most 2^53 in magnitude.
bool isI64Literal(double v) {
  return std::isfinite(v) && v == std::trunc(v) && std::fabs(v) <= 9007199254740992.0;
}

} // namespace

void checkPadValue(double v, DType t, llvm::StringRef op) {
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

Node TypeRules::infer() {
  Node n;
  n.op = spec.op;
  n.operands = spec.operands;
  switch (opClass(spec.op)) {
  case OpClass::Input: inferInput(n); break;
  case OpClass::Constant: inferConstant(n); break;
  case OpClass::Iota: inferIota(n); break;
  case OpClass::Unary: inferUnary(n); break;
  case OpClass::Binary: inferBinary(n); break;
  case OpClass::Select: inferSelect(n); break;
  case OpClass::Cast: inferCast(n); break;
  case OpClass::Reduce: inferReduce(n); break;
  case OpClass::Scan: inferScan(n); break;
  case OpClass::View: inferView(n); break;
  case OpClass::Concat: inferConcat(n); break;
  case OpClass::Gather: inferGather(n); break;
  case OpClass::Matmul: inferMatmul(n); break;
  case OpClass::Random: inferRandom(n); break;
  case OpClass::Derivative: inferDerivative(n); break;
  }
  return n;
}

void TypeRules::inferInput(Node &n) {
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
}

void TypeRules::inferConstant(Node &n) {
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
}

void TypeRules::inferIota(Node &n) {
  checkArity(spec.op, spec.operands.size(), 0);
  checkShape(spec.shape, op);
  if (spec.op == OpKind::Full) {
    n.dtype = spec.dtype;
    n.shape = spec.shape;
    checkPadValue(spec.value, spec.dtype, "full");
    n.value = isFloat(spec.dtype) ? static_cast<double>(static_cast<float>(spec.value))
                                  : spec.value;
    return;
  }
  if (spec.dtype == DType::Bool)
    fail("iota: dtype bool cannot hold an index; use i32, f32, f16 or bf16");
  n.axis = normalizedAxis(op, spec.axis, spec.shape.rank());
  n.dtype = spec.dtype;
  n.shape = spec.shape;
}

void TypeRules::inferUnary(Node &n) {
  checkArity(spec.op, spec.operands.size(), 1);
  checkOperandType(spec.op, operand(0), spelling);
  n.dtype = operand(0).dtype;
  n.shape = operand(0).shape;
}

void TypeRules::inferBinary(Node &n) {
  checkArity(spec.op, spec.operands.size(), 2);
  checkSameDType(spec.op, operand(0), operand(1), spelling);
  checkOperandType(spec.op, operand(0), spelling);
  n.shape = broadcastShapes(operand(0).shape, operand(1).shape, op);
  n.dtype = opInfo(spec.op).boolResult ? DType::Bool : operand(0).dtype;
}

void TypeRules::inferSelect(Node &n) {
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
}

void TypeRules::inferCast(Node &n) {
  checkArity(spec.op, spec.operands.size(), 1);
  n.dtype = spec.dtype;
  n.shape = operand(0).shape;
}

void TypeRules::inferReduce(Node &n) {
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
  // max, min, argmax and argmin (those combining by an extreme) have no
  // value over an empty axis, and PyTorch refuses them there too; sum, prod
  // and mean give 0, 1 and NaN (0/0).
  OpKind combiner = *opInfo(spec.op).combiner;
  if (combiner == OpKind::Maximum || combiner == OpKind::Minimum)
    for (int64_t a : axes)
      if (x.shape.dim(static_cast<unsigned>(a)).isBound() && x.shape[a] == 0)
        fail(llvm::formatv("{0}: axis {1} of {2} ({3}{4}) has size 0: the {0} of no elements has "
                           "no value (sum, prod and mean of none are 0, 1 and NaN)",
                           op, a, refOf(x), dtypeName(x.dtype), x.shape.boundStr())
                 .str());
  n.axes = axes;
  n.keepdim = spec.keepdim;
  n.dtype = isArgReduction(spec.op) ? DType::I32 : x.dtype;
  n.shape = Shape(std::span<const Dim>(out));
}

void TypeRules::inferScan(Node &n) {
  checkArity(spec.op, spec.operands.size(), 1);
  checkOperandType(spec.op, operand(0), spelling);
  n.axis = normalizedAxis(op, spec.axis, operand(0).shape.rank());
  n.reverse = spec.reverse;
  n.dtype = operand(0).dtype;
  n.shape = operand(0).shape;
}

void TypeRules::inferMatmul(Node &n) {
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
}

void TypeRules::inferRandom(Node &n) {
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
}

void TypeRules::inferDerivative(Node &n) {
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
}

} // namespace minijit::detail
