//===- ir/Graph.cpp - the tensor graph IR ---------------------------------===//
// The graph: its nodes, names, outputs and updates. Graph::add checks each
// node and infers its type by its op class's rule (ir/InferType.cpp).
//===----------------------------------------------------------------------===//
#include "ir/Graph.h"

#include "ir/Error.h"
#include "ir/InferTypeInternal.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace minijit {

using detail::fail;

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
  s.reverse = n.reverse;
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
  Node n = detail::TypeRules(spec, Nodes, spelling).infer();
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
