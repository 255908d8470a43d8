//===- capi/lib/Graph.cpp - graphs: parsing, building, inspecting ---------===//
// The C API's graph handle: parsed from text or a file, or built op by op
// through Graph::add (the text format's op spellings and rules), printed in
// the text format, and asked for the output shapes a set of inputs gives.
//===----------------------------------------------------------------------===//
#include "capi/lib/CApiInternal.h"

using namespace minijit;
using namespace minijit::capi;

namespace {

mjGraph pickGraph(std::vector<Graph> graphs, const char *name, const char *call) {
  if (graphs.empty())
    throw GraphError(std::string(call) + ": the text holds no graph");
  if (!name)
    return new mjGraph_{std::move(graphs.front()), {}};
  std::string names;
  for (Graph &g : graphs) {
    if (g.name() == name)
      return new mjGraph_{std::move(g), {}};
    names += (names.empty() ? "" : ", ") + g.name();
  }
  throw InvalidArgument{std::string(call) + ": the text holds no graph named '" + name +
                        "' (it holds " + names + ")"};
}

void checkValue(mjGraph g, mjValue v, const char *call) {
  require(g, call, "the graph");
  if (v < 0 || static_cast<size_t>(v) >= g->graph.size())
    throw InvalidArgument{std::string(call) + ": value " + std::to_string(v) +
                          " is not in graph '" + g->graph.name() + "' (" +
                          std::to_string(g->graph.size()) + " values)"};
}

OpKind opByName(const char *op, const char *call) {
  require(op, call, "the op name");
  std::optional<OpKind> k = parseOpName(op);
  if (!k) {
    std::string msg = std::string(call) + ": unknown op '" + op + "'";
    std::string_view hint = suggestOpName(op);
    if (!hint.empty())
      msg += "; did you mean '" + std::string(hint) + "'?";
    throw InvalidArgument{msg};
  }
  return *k;
}

DimVector toDims(int32_t n, const int64_t *v, const char *call, const char *what) {
  if (n < 0)
    return {};
  if (n > 0 && !v)
    throw InvalidArgument{std::string(call) + ": " + what + " is null"};
  return DimVector(v, v + n);
}

} // namespace

extern "C" {

mjStatus mjGraphParse(const char *text, const char *file, const char *name, mjGraph *out) {
  return guarded([&] {
    require(text, "mjGraphParse", "text");
    require(out, "mjGraphParse", "out");
    *out = pickGraph(parseGraphs(text, file ? file : "<input>"), name, "mjGraphParse");
  });
}

mjStatus mjGraphParseFile(const char *path, const char *name, mjGraph *out) {
  return guarded([&] {
    require(path, "mjGraphParseFile", "path");
    require(out, "mjGraphParseFile", "out");
    *out = pickGraph(parseFile(path), name, "mjGraphParseFile");
  });
}

mjStatus mjGraphCount(const char *text, const char *file, size_t *count) {
  return guarded([&] {
    require(text, "mjGraphCount", "text");
    require(count, "mjGraphCount", "count");
    *count = parseGraphs(text, file ? file : "<input>").size();
  });
}

void mjGraphDestroy(mjGraph g) { delete g; }

mjStatus mjGraphPrint(mjGraph g, const char **text) {
  return guarded([&] {
    require(g, "mjGraphPrint", "the graph");
    require(text, "mjGraphPrint", "text");
    g->printed = printGraph(g->graph);
    *text = g->printed.c_str();
  });
}

const char *mjGraphName(mjGraph g) { return g ? g->graph.name().c_str() : ""; }
size_t mjGraphNumInputs(mjGraph g) { return g ? g->graph.inputs().size() : 0; }
size_t mjGraphNumOutputs(mjGraph g) { return g ? g->graph.outputs().size() : 0; }
mjValue mjGraphInput(mjGraph g, size_t i) {
  return g && i < g->graph.inputs().size() ? g->graph.inputs()[i] : -1;
}
mjValue mjGraphOutput(mjGraph g, size_t i) {
  return g && i < g->graph.outputs().size() ? g->graph.outputs()[i] : -1;
}

mjStatus mjGraphValueInfo(mjGraph g, mjValue v, const char **name, mjDType *dtype, int32_t *rank,
                          int64_t *dims) {
  return guarded([&] {
    checkValue(g, v, "mjGraphValueInfo");
    const Node &n = g->graph.node(v);
    if (name)
      *name = n.name.c_str();
    if (dtype)
      *dtype = fromDType(n.dtype);
    if (rank)
      *rank = static_cast<int32_t>(n.shape.rank());
    if (dims)
      for (unsigned d = 0; d < n.shape.rank(); ++d)
        dims[d] = n.shape[d];
  });
}

mjStatus mjGraphValueDimName(mjGraph g, mjValue v, int32_t d, const char **name) {
  return guarded([&] {
    checkValue(g, v, "mjGraphValueDimName");
    require(name, "mjGraphValueDimName", "name");
    const Shape &s = g->graph.node(v).shape;
    if (d < 0 || static_cast<unsigned>(d) >= s.rank())
      throw InvalidArgument{"mjGraphValueDimName: dimension " + std::to_string(d) +
                            " is outside the value's rank " + std::to_string(s.rank())};
    static thread_local std::string text;
    Dim dim = s.dim(static_cast<unsigned>(d));
    text = dim.isNamed() ? dim.str() : "";
    *name = text.c_str();
  });
}

int mjGraphHasNamedDims(mjGraph g) {
  try {
    return g && hasUnboundDims(g->graph);
  } catch (...) {
    return 0;
  }
}

mjStatus mjGraphOutputShapes(mjGraph g, size_t numInputs, const mjTensorRef *inputs,
                             const mjDimBindings *dims, size_t numOutputs, int32_t *outRanks,
                             int64_t *outDims, mjDType *outDTypes) {
  return guarded([&] {
    const char *call = "mjGraphOutputShapes";
    require(g, call, "the graph");
    if (numInputs)
      require(inputs, call, "inputs");
    require(outRanks, call, "outRanks");
    require(outDims, call, "outDims");
    const Graph &graph = g->graph;
    if (numOutputs != graph.outputs().size())
      throw InvalidArgument{std::string(call) + ": graph '" + graph.name() + "' has " +
                            std::to_string(graph.outputs().size()) + " outputs, room was given for " +
                            std::to_string(numOutputs)};
    std::vector<Shape> shapes;
    for (size_t i = 0; i < numInputs; ++i)
      shapes.push_back(toShape(inputs[i].rank, inputs[i].dims, call));
    Graph bound = bindGraph(graph, shapes, toBindings(dims, call));
    for (size_t o = 0; o < numOutputs; ++o) {
      const Node &n = bound.node(bound.outputs()[o]);
      outRanks[o] = static_cast<int32_t>(n.shape.rank());
      for (unsigned d = 0; d < n.shape.rank(); ++d)
        outDims[o * MJ_MAX_RANK + d] = n.shape[d];
      if (outDTypes)
        outDTypes[o] = fromDType(n.dtype);
    }
  });
}

mjStatus mjGraphCreate(const char *name, mjGraph *out) {
  return guarded([&] {
    require(out, "mjGraphCreate", "out");
    std::string n = name ? name : "main";
    if (!Graph::isValidName(n))
      throw InvalidArgument{"mjGraphCreate: '" + n +
                            "' is not a graph name (letters, digits, '_' and '.')"};
    *out = new mjGraph_{Graph(n), {}};
  });
}

mjStatus mjGraphAddInput(mjGraph g, const char *name, mjDType dtype, int32_t rank,
                         const int64_t *dims, const char *const *dimNames, mjValue *out) {
  return guarded([&] {
    const char *call = "mjGraphAddInput";
    require(g, call, "the graph");
    require(name, call, "name");
    require(out, call, "out");
    if (rank < 0 || rank > MJ_MAX_RANK)
      throw InvalidArgument{std::string(call) + ": rank " + std::to_string(rank) +
                            " is outside 0 to " + std::to_string(MJ_MAX_RANK)};
    std::vector<Dim> ds;
    for (int32_t d = 0; d < rank; ++d) {
      if (dimNames && dimNames[d]) {
        ds.emplace_back(std::string_view(dimNames[d]));
        continue;
      }
      require(dims, call, "dims");
      ds.emplace_back(dims[d]);
    }
    *out = g->graph.input(name, toDType(dtype, call), Shape(std::span<const Dim>(ds))).id();
  });
}

mjStatus mjGraphAddConstant(mjGraph g, double value, mjDType dtype, mjValue *out) {
  return guarded([&] {
    require(g, "mjGraphAddConstant", "the graph");
    require(out, "mjGraphAddConstant", "out");
    *out = g->graph.constant(value, toDType(dtype, "mjGraphAddConstant"));
  });
}

void mjOpAttributesInit(mjOpAttributes *a) {
  if (!a)
    return;
  *a = mjOpAttributes{};
  a->numAxes = -1;
  a->rank = -1;
  a->dtype = MJ_F32;
  a->step = 1;
}

mjStatus mjGraphAddOp(mjGraph g, const char *op, size_t numOperands, const mjValue *operands,
                      const mjOpAttributes *attrs, const char *name, mjValue *out) {
  return guarded([&] {
    const char *call = "mjGraphAddOp";
    require(g, call, "the graph");
    require(out, call, "out");
    OpKind kind = opByName(op, call);
    if (numOperands)
      require(operands, call, "operands");
    mjOpAttributes defaults;
    mjOpAttributesInit(&defaults);
    const mjOpAttributes &a = attrs ? *attrs : defaults;
    NodeSpec s;
    s.op = kind;
    for (size_t i = 0; i < numOperands; ++i) {
      checkValue(g, operands[i], call);
      s.operands.push_back(operands[i]);
    }
    if (a.numAxes >= 0) {
      DimVector axes = toDims(a.numAxes, a.axes, call, "axes");
      if (kind == OpKind::Permute)
        s.perm = axes;
      else if (!axes.empty())
        s.axes = axes;
    }
    // argmax and argmin take their one axis as `axis`, as the text format
    // spells it; the node holds it as its reduced axes.
    if (isArgReduction(kind) && a.numAxes < 0)
      s.axes = DimVector{a.axis};
    s.keepdim = a.keepdim != 0;
    s.reverse = a.reverse != 0;
    s.axis = a.axis;
    if (a.rank >= 0)
      s.shape = toShape(a.rank, a.shape, call);
    s.dtype = toDType(a.dtype, call);
    s.value = a.value;
    s.start = a.start;
    s.end = a.end;
    s.step = a.step;
    if (a.numPad > 0) {
      s.before = toDims(a.numPad, a.before, call, "before");
      s.after = toDims(a.numPad, a.after, call, "after");
    }
    if (name)
      s.name = name;
    *out = g->graph.add(s);
  });
}

mjStatus mjGraphAddUnary(mjGraph g, const char *op, mjValue x, mjValue *out) {
  return mjGraphAddOp(g, op, 1, &x, nullptr, nullptr, out);
}

mjStatus mjGraphAddBinary(mjGraph g, const char *op, mjValue a, mjValue b, mjValue *out) {
  mjValue operands[2] = {a, b};
  return mjGraphAddOp(g, op, 2, operands, nullptr, nullptr, out);
}

mjStatus mjGraphAddReduce(mjGraph g, const char *op, mjValue x, int32_t numAxes,
                          const int64_t *axes, int keepdim, mjValue *out) {
  mjOpAttributes a;
  mjOpAttributesInit(&a);
  a.numAxes = numAxes;
  a.axes = axes;
  a.keepdim = keepdim;
  return mjGraphAddOp(g, op, 1, &x, &a, nullptr, out);
}

mjStatus mjGraphAddMatmul(mjGraph g, mjValue a, mjValue b, mjValue *out) {
  return mjGraphAddBinary(g, "matmul", a, b, out);
}

namespace {

/// reshape or broadcast: an op of one operand and a shape.
mjStatus addShapeOp(mjGraph g, const char *op, mjValue x, int32_t rank, const int64_t *dims,
                    mjValue *out) {
  mjOpAttributes a;
  mjOpAttributesInit(&a);
  a.rank = rank;
  a.shape = dims;
  return mjGraphAddOp(g, op, 1, &x, &a, nullptr, out);
}

} // namespace

mjStatus mjGraphAddReshape(mjGraph g, mjValue x, int32_t rank, const int64_t *dims,
                           mjValue *out) {
  return addShapeOp(g, "reshape", x, rank, dims, out);
}

mjStatus mjGraphAddPermute(mjGraph g, mjValue x, int32_t rank, const int64_t *perm,
                           mjValue *out) {
  mjOpAttributes a;
  mjOpAttributesInit(&a);
  a.numAxes = rank;
  a.axes = perm;
  return mjGraphAddOp(g, "permute", 1, &x, &a, nullptr, out);
}

mjStatus mjGraphAddBroadcast(mjGraph g, mjValue x, int32_t rank, const int64_t *dims,
                             mjValue *out) {
  return addShapeOp(g, "broadcast", x, rank, dims, out);
}

mjStatus mjGraphAddCast(mjGraph g, mjValue x, mjDType to, mjValue *out) {
  mjOpAttributes a;
  mjOpAttributesInit(&a);
  a.dtype = to;
  return mjGraphAddOp(g, "cast", 1, &x, &a, nullptr, out);
}

mjStatus mjGraphSetOutput(mjGraph g, mjValue v, const char *name) {
  return guarded([&] {
    checkValue(g, v, "mjGraphSetOutput");
    g->graph.output(v, name ? name : "");
  });
}

mjStatus mjGraphSetUpdate(mjGraph g, mjValue input, mjValue v) {
  return guarded([&] {
    checkValue(g, input, "mjGraphSetUpdate");
    checkValue(g, v, "mjGraphSetUpdate");
    g->graph.update(input, v);
  });
}

} // extern "C"
