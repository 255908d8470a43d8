//===- compiler/NamedSizes.cpp - programs of a graph with named dimensions ===//
// An executable of a graph with named dimensions asks for the program of
// each binding its runs bring. Each is the bound graph compiled as usual;
// the kernels that serve a bucket of sizes have the same text for every
// binding of the bucket, so the kernel cache hands them out without NVRTC.
// MINIJIT_LOG=recompiles says what a new binding did compile, and why.
//===----------------------------------------------------------------------===//
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"

#include "ir/Bind.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace minijit {

namespace {

/// MINIJIT_LOG names "recompiles" (a comma-separated list).
bool recompilesLoggedByEnvironment() {
  const char *log = std::getenv("MINIJIT_LOG");
  if (!log)
    return false;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  llvm::StringRef(log).split(parts, ',', -1, false);
  return llvm::is_contained(parts, "recompiles");
}

/// Why kernel `k` of a new binding went through NVRTC.
std::string whyCompiled(const CompiledKernel &k) {
  if (!k.lowered.symbolic)
    return "its code holds the sizes (a named size it does not take at launch)";
  const LoweredKernel &l = k.lowered;
  return "the first binding of its bucket of sizes (" +
         bucketText(l.symbolic->extent, outerExtent(l)) + ")";
}

void logBinding(const Graph &g, const DimBindings &sizes, const CompiledGraph &c) {
  const CompileDetail &d = *c.detail;
  size_t compiled = 0, reused = 0;
  for (const CompiledKernel &k : d.kernels)
    ++(k.origin == CachedKernel::From::Compiled ? compiled : reused);
  llvm::errs() << llvm::formatv("minijit: graph '{0}' bound to {1}: {2} kernel{3}, {4} compiled by "
                                "NVRTC, {5} from the cache or shared\n",
                                g.name(), bindingsText(sizes), d.kernels.size(),
                                d.kernels.size() == 1 ? "" : "s", compiled, reused);
  for (const CompiledKernel &k : d.kernels)
    if (k.origin == CachedKernel::From::Compiled)
      llvm::errs() << "minijit:   compiled " << k.name << ": " << whyCompiled(k) << "\n";
}

} // namespace

std::vector<ProgramArgument> programArguments(const Graph &g) {
  std::vector<ProgramArgument> out;
  for (ValueId in : g.inputs()) {
    const Node &n = g.node(in);
    out.push_back({n.name, n.dtype, n.shape});
  }
  return out;
}

ProgramMaker programMaker(const Graph &g, CompileOptions options) {
  bool log = options.logRecompiles || recompilesLoggedByEnvironment();
  return [g, options, log](const DimBindings &sizes) {
    Graph bound = bindDims(g, sizes);
    CompiledGraph c = compileGraph(bound, options);
    if (log)
      logBinding(g, sizes, c);
    return std::move(c.program);
  };
}

} // namespace minijit
