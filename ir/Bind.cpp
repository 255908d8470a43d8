//===- ir/Bind.cpp - giving named dimensions their sizes ------------------===//
#include "ir/Bind.h"

#include "ir/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace minijit {

namespace {

/// The node's shape attribute, if its op has one (arguments, reshapes,
/// broadcasts and iotas); the other ops infer their shapes from operands.
bool hasShapeAttribute(const Node &n) {
  return n.op == OpKind::Input || n.op == OpKind::Reshape || n.op == OpKind::Broadcast ||
         n.cls() == OpClass::Iota;
}

} // namespace

std::vector<std::string> dimNames(const Graph &g) {
  std::vector<std::string> out;
  for (const Node &n : g.nodes())
    if (hasShapeAttribute(n))
      for (const std::string &name : n.shape.names())
        if (!llvm::is_contained(out, name))
          out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

bool hasUnboundDims(const Graph &g) {
  return llvm::any_of(g.nodes(), [](const Node &n) { return !n.shape.isBound(); });
}

Graph bindDims(const Graph &g, const DimBindings &sizes) {
  for (const auto &[name, size] : sizes)
    if (size < 0)
      throw GraphError(llvm::formatv("the named dimension {0} is given the size {1}; sizes are "
                                     "at least 0",
                                     name, size)
                           .str());
  Graph out(g.name());
  for (const Node &n : g.nodes()) {
    NodeSpec s = specOf(n);
    if (hasShapeAttribute(n))
      s.shape = bindShape(n.shape, sizes, n.name.empty() ? opName(n.op) : "%" + n.name);
    // A node valid for every size may not be for these (a max over a
    // dimension bound to 0): the message says which node and which sizes.
    try {
      out.add(s);
    } catch (const GraphError &e) {
      throw GraphError(llvm::formatv("%{0} with {1}: {2}", n.name, bindingsText(sizes), e.what())
                           .str());
    }
  }
  out.copyResults(g);
  return out;
}

DimBindings bindingsFromInputs(const Graph &g, std::span<const Shape> shapes) {
  if (shapes.size() != g.inputs().size())
    throw GraphError(llvm::formatv("graph '{0}' takes {1} input{2}, got {3}", g.name(),
                                   g.inputs().size(), g.inputs().size() == 1 ? "" : "s",
                                   shapes.size())
                         .str());
  DimBindings sizes;
  std::map<std::string, std::string> from;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Node &in = g.node(g.inputs()[i]);
    matchShape(in.shape, shapes[i], "input %" + in.name, sizes, from);
  }
  return sizes;
}

std::string parseDimBinding(std::string_view text, DimBindings &sizes) {
  llvm::StringRef t(text.data(), text.size());
  auto [name, value] = t.split('=');
  long long v = 0;
  if (!t.contains('=') || !isDimName(std::string_view(name.data(), name.size())) ||
      value.getAsInteger(10, v))
    return llvm::formatv("--dim {0}: expected NAME=SIZE, e.g. B=4096", t).str();
  if (v < 0)
    return llvm::formatv("--dim {0}: the size must be at least 0 (0: an empty dimension)", t).str();
  sizes[name.str()] = v;
  return "";
}

} // namespace minijit
