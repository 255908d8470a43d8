//===- minijit.h - the one header for users ---------------------*- C++ -*-===//
// Build a graph (ir/Builder.h), compile it (compiler/Compiler.h), run it on a
// GPU (runtime/Executable.h), profile it (runtime/Profiler.h), check it
// against the CPU reference (ir/Evaluator.h), and share device tensors with
// other frameworks (runtime/DLPack.h).
//
//   minijit::Graph g("gelu");
//   auto x = g.input("x", minijit::DType::F32, {1 << 20});
//   g.output(0.5f * x * (1.0f + tanh(0.79788456f * (x + 0.044715f * x * x * x))), "y");
//   minijit::Device gpu = minijit::Device::open();
//   minijit::Executable exe = minijit::compile(g, gpu);
//   std::vector<minijit::HostTensor> y = exe.run({minijit::HostTensor::random(...)});
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Compiler.h"
#include "ir/Autodiff.h"
#include "ir/Bind.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Graph.h"
#include "ir/HostTensor.h"
#include "ir/Npy.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Version.h"
#include "runtime/DLPack.h"
#include "runtime/Device.h"
#include "runtime/Executable.h"
#include "runtime/Memory.h"
#include "runtime/PeakRates.h"
#include "runtime/ProfileJson.h"
#include "runtime/Profiler.h"

namespace minijit {

/// Compiles `g` for `gpu` (its architecture and SM count) and loads it.
/// A graph with named dimensions (`g.input("x", DType::F32, {Dim("B"),
/// 1024})`) is compiled for each binding its runs bring, on first use, one
/// kernel per bucket of sizes (docs/GUIDE.md, "Named dimensions").
/// Throws GraphError, CompileError or CudaError.
inline Executable compile(const Graph &g, const Device &gpu, CompileOptions options = {}) {
  options.device = gpu.properties();
  options.arch.clear();
  if (hasUnboundDims(g))
    return Executable(gpu, g.name(), programArguments(g), programMaker(g, options));
  return Executable(gpu, compileGraph(g, options).program);
}

} // namespace minijit
