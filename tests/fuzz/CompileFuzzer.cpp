//===- tests/fuzz/CompileFuzzer.cpp - libFuzzer target: parse, then compile ===//
// Every graph that verifies compiles (fused and unfused) or is refused with a
// clear CompileError; lowering, scheduling and CUDA emission never crash.
// NVRTC runs on one input in MINIJIT_FUZZ_NVRTC_EVERY (default 50), since it
// costs ~50 ms a kernel; the others stop after emitting CUDA. Small graphs
// also run on the CPU reference.
//===----------------------------------------------------------------------===//
#include "compiler/Compiler.h"
#include "ir/Bind.h"
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Parser.h"

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int every = [] {
    const char *e = std::getenv("MINIJIT_FUZZ_NVRTC_EVERY");
    return e ? std::max(1, std::atoi(e)) : 50;
  }();
  static long count = 0;
  std::string text(reinterpret_cast<const char *>(data), size);
  std::vector<minijit::Graph> graphs;
  try {
    graphs = minijit::parseGraphs(text, "fuzz.mj");
  } catch (const minijit::ParseError &) {
    return 0;
  }
  for (minijit::Graph &g : graphs) {
    // Named dimensions are bound first (compileGraph refuses them unbound),
    // to 1 or to 5 in turn: the named 1 and the bucket's paths both.
    if (minijit::hasUnboundDims(g)) {
      minijit::DimBindings sizes;
      for (const std::string &name : minijit::dimNames(g))
        sizes[name] = count % 2 ? 1 : 5;
      try {
        g = minijit::bindDims(g, sizes);
      } catch (const minijit::GraphError &) {
        continue; // a shape past the limits at these sizes
      }
    }
    // Keep inputs small: a huge tensor only makes the fuzzer slow.
    bool big = false;
    for (const minijit::Node &n : g.nodes())
      big = big || n.shape.numel() > (1 << 22);
    if (big || g.size() > 200)
      continue;
    // The CPU reference on small graphs: a minijit::Error at most, never
    // std::bad_alloc or a crash (issue 42).
    bool small = true;
    for (const minijit::Node &n : g.nodes())
      small = small && n.shape.numel() <= (1 << 14);
    if (small) {
      try {
        minijit::evaluate(g, minijit::randomInputs(g, static_cast<uint64_t>(count)));
      } catch (const minijit::Error &) {
      }
    }
    for (bool fusion : {true, false}) {
      minijit::CompileOptions opt;
      opt.fusion = fusion;
      opt.compileKernels = (++count % every) == 0;
      try {
        minijit::compileGraph(g, opt);
      } catch (const minijit::CompileError &) {
        // a clear refusal is allowed; NVRTC failing on generated code is not,
        // but shows up in the message, which the corpus run prints
        if (opt.compileKernels)
          throw;
      }
    }
  }
  return 0;
}
