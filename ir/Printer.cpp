//===- ir/Printer.cpp - the canonical text form of a graph ----------------===//
#include "ir/Printer.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>

namespace minijit {

std::string typeText(DType t, const Shape &s) { return std::string(dtypeName(t)) + s.str(); }

std::string literalText(double v, DType t) {
  if (t == DType::Bool)
    return v != 0 ? "true" : "false";
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  if (isInteger(t))
    return std::to_string(static_cast<long long>(v));
  // Whole numbers as plain integers ("100", not "1e+02"), keeping -0's sign.
  if (v == 0 && std::signbit(v))
    return "-0";
  if (v == std::trunc(v) && std::fabs(v) < 1e9)
    return std::to_string(static_cast<long long>(v));
  // Otherwise the shortest %g text that reads back to the same f32.
  char buf[64];
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (static_cast<float>(std::strtod(buf, nullptr)) == static_cast<float>(v))
      break;
  }
  return buf;
}

std::string operandText(const Graph &g, ValueId id) {
  const Node &n = g.node(id);
  if (n.op == OpKind::Constant)
    return literalText(n.value, n.dtype);
  return "%" + n.name;
}

namespace {

void printDims(llvm::raw_ostream &os, llvm::ArrayRef<int64_t> dims) {
  os << Shape(dims).str();
}

void printNode(llvm::raw_ostream &os, const Graph &g, ValueId id) {
  const Node &n = g.node(id);
  os << "%" << n.name << " = " << opName(n.op);
  for (size_t i = 0; i < n.operands.size(); ++i)
    os << (i ? ", " : " ") << operandText(g, n.operands[i]);
  switch (n.cls()) {
  case OpClass::Reduce:
    if (isArgReduction(n.op)) {
      os << " axis=" << n.axes[0];
    } else if (!n.axes.empty()) { // a reduction of a scalar has no axes to name
      os << " axes=";
      printDims(os, n.axes);
    }
    if (n.keepdim)
      os << " keepdim=true";
    break;
  case OpClass::View:
    if (n.op == OpKind::Permute) {
      os << " perm=";
      printDims(os, n.perm);
    } else if (n.op == OpKind::Slice) {
      os << " axis=" << n.axis << " start=" << n.start << " end=" << n.end;
      if (n.step != 1)
        os << " step=" << n.step;
    } else if (n.op == OpKind::Flip) {
      os << " axes=";
      printDims(os, n.axes);
    } else if (n.op == OpKind::Pad) {
      os << " before=";
      printDims(os, n.before);
      os << " after=";
      printDims(os, n.after);
      os << " value=" << literalText(n.value, n.dtype);
    } else {
      os << " shape=" << n.shape.str();
    }
    break;
  case OpClass::Cast:
    os << " to=" << dtypeName(n.dtype);
    break;
  case OpClass::Iota:
    os << " shape=" << n.shape.str();
    if (n.op == OpKind::Full)
      os << " value=" << literalText(n.value, n.dtype);
    else
      os << " axis=" << n.axis;
    os << " dtype=" << dtypeName(n.dtype);
    break;
  case OpClass::Concat:
  case OpClass::Gather:
    os << " axis=" << n.axis;
    break;
  case OpClass::Scan:
    os << " axis=" << n.axis;
    if (n.reverse)
      os << " reverse=true";
    break;
  case OpClass::Random:
    if (n.op == OpKind::Dropout)
      os << " p=" << literalText(n.value, DType::F32);
    else
      os << " shape=" << n.shape.str() << " dtype=" << dtypeName(n.dtype);
    break;
  case OpClass::Input:
  case OpClass::Constant:
  case OpClass::Unary:
  case OpClass::Binary:
  case OpClass::Select:
  case OpClass::Matmul:
  case OpClass::Derivative:
    break;
  }
  os << " : " << typeText(n.dtype, n.shape);
}

void printGraph(llvm::raw_ostream &os, const Graph &g) {
  os << "graph " << g.name() << "(";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Node &n = g.node(g.inputs()[i]);
    os << (i ? ", " : "") << "%" << n.name << ": " << typeText(n.dtype, n.shape);
  }
  os << ") {\n";
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.nodes()[i];
    if (n.op == OpKind::Input || n.op == OpKind::Constant)
      continue;
    os << "  ";
    printNode(os, g, static_cast<ValueId>(i));
    os << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    os << (i ? ", " : " ") << operandText(g, g.outputs()[i]);
    if (g.updates()[i] >= 0)
      os << " -> " << operandText(g, g.updates()[i]);
  }
  os << "\n}\n";
}

} // namespace

std::string nodeText(const Graph &g, ValueId id) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printNode(os, g, id);
  return os.str();
}

std::string printGraph(const Graph &g) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printGraph(os, g);
  return os.str();
}

void printGraph(std::ostream &os, const Graph &g) { os << printGraph(g); }

} // namespace minijit
