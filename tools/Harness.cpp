//===- tools/Harness.cpp - run a graph on the GPU and check it ------------===//
#include "tools/Harness.h"

#include "ir/ErrorBound.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <cstdio>

namespace minijit {

namespace {

/// Whether every f16/bf16 value an output of `g` needs (views aside) is
/// found by name in the compiled graph, so the `stored` flags say exactly
/// which of them the program rounds. Simplify may merge or rename values;
/// then no rounding is taken as certain (ir/ErrorBound.h).
bool halfValuesFound(const Graph &g, const CompiledGraph &c) {
  std::vector<bool> live(g.size(), false);
  for (ValueId o : g.outputs())
    live[o] = true;
  for (size_t i = g.size(); i-- > 0;)
    if (live[i])
      for (ValueId p : g.nodes()[i].operands)
        live[p] = true;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.nodes()[i];
    bool half = n.dtype == DType::F16 || n.dtype == DType::BF16;
    if (!live[i] || !half || n.cls() == OpClass::Input || n.cls() == OpClass::Constant ||
        n.cls() == OpClass::View)
      continue;
    if (n.name.empty() || !c.graph.lookup(n.name))
      return false;
  }
  return true;
}

} // namespace

CheckedRun runAndCheck(const Graph &g, const Device &gpu, bool fusion, uint64_t seed,
                       const std::vector<HostTensor> *inputs,
                       std::optional<std::vector<HostTensor>> reference) {
  CompileOptions opt;
  opt.fusion = fusion;
  return runAndCheck(g, gpu, opt, seed, inputs, std::move(reference));
}

CheckedRun runAndCheck(const Graph &g, const Device &gpu, CompileOptions opt, uint64_t seed,
                       const std::vector<HostTensor> *inputs,
                       std::optional<std::vector<HostTensor>> reference) {
  opt.device = gpu.properties();
  return checkCompiled(g, gpu, compileGraph(g, opt), seed, inputs, std::move(reference));
}

CheckedRun checkCompiled(const Graph &g, const Device &gpu, CompiledGraph compiled, uint64_t seed,
                         const std::vector<HostTensor> *inputs,
                         std::optional<std::vector<HostTensor>> reference) {
  CheckedRun r = runCompiled(g, gpu, std::move(compiled), seed, inputs);
  checkOutputs(g, r, std::move(reference));
  return r;
}

CheckedRun runCompiled(const Graph &g, const Device &gpu, CompiledGraph compiled, uint64_t seed,
                       const std::vector<HostTensor> *inputs) {
  CheckedRun r;
  r.compiled = std::move(compiled);
  r.inputs = inputs ? *inputs : randomInputs(g, seed);
  Executable &exe = r.executable.emplace(gpu, r.compiled.program);
  std::vector<DeviceTensor> din;
  for (const HostTensor &h : r.inputs)
    din.push_back(DeviceTensor::fromHost(gpu, h));
  std::vector<DeviceTensor> dout = exe.allocateOutputs();
  poisonTensors(dout);
  exe.enqueue(din, dout);
  exe.synchronize();
  for (const DeviceTensor &t : dout)
    r.outputs.push_back(t.download());
  return r;
}

ReferenceOutputs referenceOutputs(const Graph &g, const CompiledGraph &compiled,
                                  const std::vector<HostTensor> &inputs) {
  // A training graph is checked against the CPU reference of its expansion
  // (the same nodes the compiler received).
  std::optional<Graph> expanded;
  if (hasDerivatives(g))
    expanded.emplace(expandAutodiff(g));
  const Graph &ref = expanded ? *expanded : g;
  ReferenceOutputs out;
  std::vector<bool> stored = storedValues(ref, compiled);
  std::vector<bool> registers = registerReadValues(ref, compiled);
  EvalOptions eo;
  eo.stored = &stored;
  eo.readInRegisters = &registers;
  eo.tf32Matmuls = compiled.tf32Matmuls;
  eo.tf32x3Matmuls = compiled.tf32x3Matmuls;
  BoundedOutputs bounded = evaluateWithBounds(ref, inputs, eo, halfValuesFound(ref, compiled));
  out.values = std::move(bounded.values);
  out.bounds = std::move(bounded.bounds);
  // Sums whose terms cancel are compared relative to the terms' size.
  bool sums = llvm::any_of(ref.nodes(), [](const Node &n) {
    return n.op == OpKind::Sum || n.op == OpKind::Mean || n.op == OpKind::Matmul;
  });
  if (sums) {
    eo.magnitudes = true;
    out.magnitudes = evaluate(ref, inputs, eo);
  }
  for (ValueId o : ref.outputs())
    out.tolerances.push_back(toleranceFor(ref, o));
  return out;
}

void compareWithReference(const ReferenceOutputs &ref, CheckedRun &r) {
  r.compare.clear();
  r.reference = ref.values;
  r.bounds = ref.bounds;
  r.ok = true;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    r.compare.push_back(compareTensors(r.outputs[i], ref.values[i], ref.tolerances[i],
                                       ref.magnitudes.empty() ? nullptr : &ref.magnitudes[i],
                                       ref.bounds.empty() ? nullptr : &ref.bounds[i]));
    r.ok = r.ok && r.compare.back().ok;
  }
}

void checkOutputs(const Graph &g, CheckedRun &r,
                  std::optional<std::vector<HostTensor>> reference) {
  if (!reference) {
    auto t0 = std::chrono::steady_clock::now();
    ReferenceOutputs ref = referenceOutputs(g, r.compiled, r.inputs);
    r.referenceSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    compareWithReference(ref, r);
    return;
  }
  std::optional<Graph> expanded;
  if (hasDerivatives(g))
    expanded.emplace(expandAutodiff(g));
  const Graph &graph = expanded ? *expanded : g;
  ReferenceOutputs given;
  given.values = std::move(*reference);
  for (ValueId o : graph.outputs())
    given.tolerances.push_back(toleranceFor(graph, o));
  compareWithReference(given, r);
}

void applyUpdates(const Graph &g, std::vector<HostTensor> &inputs,
                  llvm::ArrayRef<HostTensor> outputs) {
  for (size_t o = 0; o < outputs.size(); ++o)
    if (int in = g.updatedInput(o); in >= 0)
      inputs[in] = outputs[o];
}

void poisonTensors(std::vector<DeviceTensor> &tensors) {
  for (DeviceTensor &t : tensors) {
    HostTensor poison(t.dtype(), t.shape());
    poison.poison();
    t.upload(poison);
  }
}

std::vector<bool> storedValues(const Graph &g, const CompiledGraph &c) {
  std::vector<bool> stored(g.size(), false);
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.nodes()[i];
    if (n.op == OpKind::Input) {
      stored[i] = true;
      continue;
    }
    if (n.name.empty())
      continue;
    std::optional<ValueId> id = c.graph.lookup(n.name);
    const FusionPlan &plan = c.detail->plan;
    // A value simplify merged into another (or renamed) may be stored under
    // that one's name: rounded here, it is within the rounding's bound of an
    // unrounded one too (no rounding is certain then: halfValuesFound).
    if (!id && n.cls() != OpClass::Constant) {
      stored[i] = true;
      continue;
    }
    stored[i] = id && *id < static_cast<ValueId>(plan.storedBy.size()) && plan.storedBy[*id] >= 0;
  }
  return stored;
}

std::vector<bool> registerReadValues(const Graph &g, const CompiledGraph &c) {
  const FusionPlan &plan = c.detail->plan;
  const Graph &cg = c.graph;
  // In the compiled graph: a stored value that a kernel computing it also
  // hands, in registers, to another value it computes.
  std::vector<bool> inRegisters(cg.size(), false);
  for (const KernelGroup &k : plan.kernels) {
    std::vector<bool> held(cg.size(), false);
    for (ValueId v : k.held)
      held[v] = true;
    for (ValueId v : k.held)
      for (ValueId o : cg.node(v).operands)
        if (held[o] && o < static_cast<ValueId>(plan.storedBy.size()) && plan.storedBy[o] >= 0)
          inRegisters[o] = true;
  }
  std::vector<bool> out(g.size(), false);
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.nodes()[i];
    if (n.op == OpKind::Input || n.name.empty())
      continue;
    std::optional<ValueId> id = cg.lookup(n.name);
    out[i] = id && inRegisters[*id];
  }
  return out;
}

std::string summarizeTensor(const HostTensor &t) {
  int64_t n = t.numel();
  if (n == 0)
    return std::string(dtypeName(t.dtype())) + t.shape().str() + "  (empty: no elements)";
  double sum = 0, sumSq = 0, lo = INFINITY, hi = -INFINITY;
  int64_t nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.get(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    sum += v;
    sumSq += v * v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  int64_t m = n - nans;
  double mean = m ? sum / m : 0;
  double var = m ? std::max(0.0, sumSq / m - mean * mean) : 0;
  auto g4 = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  std::string first;
  for (int64_t i = 0; i < std::min<int64_t>(n, 4); ++i)
    first += (i ? ", " : "") + g4(t.get(i));
  if (n > 4)
    first += ", ...";
  std::string s = std::string(dtypeName(t.dtype())) + t.shape().str() + "  mean " + g4(mean) + "  std " +
                  g4(std::sqrt(var)) + "  min " + g4(lo) + "  max " + g4(hi) + "  [" + first + "]";
  if (nans)
    s += llvm::formatv("  ({0} NaN)", nans).str();
  return s;
}

} // namespace minijit
