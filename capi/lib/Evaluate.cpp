//===- capi/lib/Evaluate.cpp - the CPU reference on host buffers ----------===//
// The C API over ir/Evaluator.h: a graph evaluated on the caller's host
// buffers (copied in), its outputs held by an mjHostTensors handle, and the
// seeded random inputs minijit's tools use.
//===----------------------------------------------------------------------===//
#include "capi/lib/CApiInternal.h"

#include <cstring>

using namespace minijit;
using namespace minijit::capi;

namespace {

mjHostTensors holdTensors(std::vector<HostTensor> ts) {
  auto h = std::make_unique<mjHostTensors_>();
  for (const HostTensor &t : ts)
    h->dims.push_back(t.shape().dims());
  h->tensors = std::move(ts);
  return h.release();
}

/// The CPU reference of `g` on the caller's host buffers, named
/// dimensions bound from their shapes and `dims`.
std::vector<HostTensor> evaluateRefs(mjGraph g, size_t numInputs, const mjTensorRef *inputs,
                                     const mjDimBindings *dims, const char *call) {
  require(g, call, "the graph");
  if (numInputs)
    require(inputs, call, "inputs");
  const Graph &graph = g->graph;
  if (numInputs != graph.inputs().size())
    throw GraphError(std::string(call) + ": graph '" + graph.name() + "' has " +
                     std::to_string(graph.inputs().size()) + " inputs, " +
                     std::to_string(numInputs) + " were given");
  std::vector<HostTensor> ins;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < numInputs; ++i) {
    const mjTensorRef &r = inputs[i];
    HostTensor t(toDType(r.dtype, call), toShape(r.rank, r.dims, call));
    if (t.bytes()) {
      require(r.data, call, "an input's data");
      std::memcpy(t.data(), r.data, t.bytes());
    }
    shapes.push_back(t.shape());
    ins.push_back(std::move(t));
  }
  Graph bound = bindGraph(graph, shapes, toBindings(dims, call));
  return evaluate(bound, ins);
}

} // namespace

extern "C" {

mjStatus mjEvaluate(mjGraph g, size_t numInputs, const mjTensorRef *inputs,
                    const mjDimBindings *dims, mjHostTensors *out) {
  return guarded([&] {
    require(out, "mjEvaluate", "out");
    *out = holdTensors(evaluateRefs(g, numInputs, inputs, dims, "mjEvaluate"));
  });
}

mjStatus mjEvaluateInto(mjGraph g, size_t numInputs, const mjTensorRef *inputs,
                        const mjDimBindings *dims, size_t numOutputs,
                        const mjTensorRef *outputs) {
  return guarded([&] {
    const char *call = "mjEvaluateInto";
    require(g, call, "the graph");
    if (numOutputs != g->graph.outputs().size())
      throw GraphError(std::string(call) + ": graph '" + g->graph.name() + "' has " +
                       std::to_string(g->graph.outputs().size()) + " outputs, " +
                       std::to_string(numOutputs) + " buffers were given");
    if (numOutputs)
      require(outputs, call, "outputs");
    std::vector<HostTensor> outs = evaluateRefs(g, numInputs, inputs, dims, call);
    for (size_t o = 0; o < numOutputs; ++o) {
      const HostTensor &t = outs[o];
      Shape want = toShape(outputs[o].rank, outputs[o].dims, call);
      DType wantType = toDType(outputs[o].dtype, call);
      if (want != t.shape() || wantType != t.dtype())
        throw GraphError(std::string(call) + ": output " + std::to_string(o) + " is " +
                         std::string(dtypeName(t.dtype())) + t.shape().str() +
                         ", the buffer given is " + std::string(dtypeName(wantType)) +
                         want.str());
      if (t.bytes()) {
        require(outputs[o].data, call, "an output's data");
        std::memcpy(outputs[o].data, t.data(), t.bytes());
      }
    }
  });
}

mjStatus mjRandomInputs(mjGraph g, uint64_t seed, const mjDimBindings *dims, mjHostTensors *out) {
  return guarded([&] {
    require(g, "mjRandomInputs", "the graph");
    require(out, "mjRandomInputs", "out");
    DimBindings sizes = toBindings(dims, "mjRandomInputs");
    const Graph &graph = g->graph;
    *out = holdTensors(randomInputs(sizes.empty() ? graph : bindDims(graph, sizes), seed));
  });
}

size_t mjHostTensorsCount(mjHostTensors t) { return t ? t->tensors.size() : 0; }

mjStatus mjHostTensorsGet(mjHostTensors t, size_t i, mjTensorRef *out) {
  return guarded([&] {
    require(t, "mjHostTensorsGet", "the tensors");
    require(out, "mjHostTensorsGet", "out");
    if (i >= t->tensors.size())
      throw InvalidArgument{"mjHostTensorsGet: tensor " + std::to_string(i) + " of " +
                            std::to_string(t->tensors.size())};
    HostTensor &h = t->tensors[i];
    out->data = h.data();
    out->dtype = fromDType(h.dtype());
    out->rank = static_cast<int32_t>(t->dims[i].size());
    out->dims = t->dims[i].data();
  });
}

void mjHostTensorsDestroy(mjHostTensors t) { delete t; }

} // extern "C"
