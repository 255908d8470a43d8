//===- tools/Harness.h - run a graph on the GPU and check it ----*- C++ -*-===//
// What the CLI, the samples, the benchmarks and the GPU tests all do: compile
// a graph for a device, run it on seeded random inputs with every output
// poisoned first, and compare each output with the CPU reference. Its users
// read the compiler's records of what they ran, so it includes them.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/CompileDetail.h"
#include "minijit.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <vector>

namespace minijit {

/// What runAndCheck did: the compiled graph, the data and the comparisons.
struct CheckedRun {
  CompiledGraph compiled;             ///< with its texts (fusedText() for a failure)
  std::vector<HostTensor> inputs;     ///< as generated (or given)
  std::vector<HostTensor> outputs;    ///< from the GPU
  std::vector<HostTensor> reference;  ///< from the CPU reference
  std::vector<HostTensor> bounds;     ///< per output, each element's error bound (ir/ErrorBound.h); empty with a given reference
  std::vector<CompareResult> compare; ///< one per output
  bool ok = true;                     ///< every comparison passed
  std::optional<Executable> executable; ///< the program as loaded, to run it again
  double referenceSeconds = 0;        ///< of the check's time, the CPU reference's (with its bounds)
};

/// Compiles `g` (fusion on or off) for `gpu`, runs it once on `inputs` (or
/// seeded random inputs) with NaN-poisoned outputs, and compares every
/// output with the reference. The reference rounds to f16/bf16 exactly the
/// values the program stores (see storedValues); an element passes within
/// the tolerance or within Tolerance::safety times its error bound
/// (evaluateWithBounds). `reference`, when given, replaces the reference
/// (and there are no bounds). Throws what compile and run throw.
CheckedRun runAndCheck(const Graph &g, const Device &gpu, bool fusion, uint64_t seed,
                       const std::vector<HostTensor> *inputs = nullptr,
                       std::optional<std::vector<HostTensor>> reference = std::nullopt);

/// The same with the compile options given (their device is replaced by
/// `gpu`'s properties).
CheckedRun runAndCheck(const Graph &g, const Device &gpu, CompileOptions opt, uint64_t seed,
                       const std::vector<HostTensor> *inputs = nullptr,
                       std::optional<std::vector<HostTensor>> reference = std::nullopt);

/// The same for `g` compiled already (every kernel with its CUBIN).
CheckedRun checkCompiled(const Graph &g, const Device &gpu, CompiledGraph compiled, uint64_t seed,
                         const std::vector<HostTensor> *inputs = nullptr,
                         std::optional<std::vector<HostTensor>> reference = std::nullopt);

/// What checkCompiled does before it compares: runs `compiled` once on
/// `inputs` (or seeded random inputs) with NaN-poisoned outputs and
/// downloads them; r.compare stays empty and r.ok true (`minijit run`
/// without --check: a large product's CPU reference takes many seconds).
CheckedRun runCompiled(const Graph &g, const Device &gpu, CompiledGraph compiled, uint64_t seed,
                       const std::vector<HostTensor> *inputs = nullptr);

/// What checkCompiled does after its run: compares `r.outputs`, a run of
/// `r.compiled` on `r.inputs`, with the CPU reference of `g` on `r.inputs`
/// (or with `reference`, when given), and sets r.reference, r.bounds,
/// r.compare and r.ok. `g` is the graph compiled, or one with the same values
/// (by name) at other sizes: the whole batch of which each device ran a
/// slice with the program of one, their outputs gathered in `r.outputs`.
void checkOutputs(const Graph &g, CheckedRun &r,
                  std::optional<std::vector<HostTensor>> reference = std::nullopt);

/// The CPU reference of `g`'s outputs on `inputs`, as checkOutputs compares
/// with: the values (rounded where `compiled` stores f16/bf16), each
/// element's error bound, the magnitudes of sums and the tolerances. A
/// search that checks many schedules of one graph computes it once.
struct ReferenceOutputs {
  std::vector<HostTensor> values;     ///< one per output
  std::vector<HostTensor> bounds;     ///< per output; empty with a given reference
  std::vector<HostTensor> magnitudes; ///< per output, where the graph sums; else empty
  std::vector<Tolerance> tolerances;  ///< one per output
};
ReferenceOutputs referenceOutputs(const Graph &g, const CompiledGraph &compiled,
                                  const std::vector<HostTensor> &inputs);

/// Compares `r.outputs` with `ref` and sets r.reference, r.bounds,
/// r.compare and r.ok.
void compareWithReference(const ReferenceOutputs &ref, CheckedRun &r);

/// What a run does to its inputs, on the host: each output that updates an
/// argument in place replaces that argument's tensor in `inputs`, so the CPU
/// reference can take the same steps as the device.
void applyUpdates(const Graph &g, std::vector<HostTensor> &inputs,
                  llvm::ArrayRef<HostTensor> outputs);

/// Fills every tensor with the NaN poison (see HostTensor::poison), so an
/// element a kernel never writes is caught.
void poisonTensors(std::vector<DeviceTensor> &tensors);

/// Per value of `g`: whether the compiled program stores it in memory (and so
/// rounds it to its dtype). Values are matched to the compiled (simplified)
/// graph by name; inputs count as stored, and so does a value simplify merged
/// away (its twin may be stored; a rounding's bound covers both).
std::vector<bool> storedValues(const Graph &g, const CompiledGraph &c);

/// Per value of `g`: whether the program reads it from registers (unrounded)
/// in a kernel that computes it, while the same or another kernel stores it
/// (rounded): then its readers may see either, and the error bounds make room
/// for both (EvalOptions::readInRegisters). Matched by name, as storedValues.
std::vector<bool> registerReadValues(const Graph &g, const CompiledGraph &c);

/// One line: "f32[4096, 1024]  mean 0.000977  std 0.0012  min 1.2e-06  max 0.0371  [0.00114, ...]".
std::string summarizeTensor(const HostTensor &t);

} // namespace minijit
