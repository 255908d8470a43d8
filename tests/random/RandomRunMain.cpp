//===- tests/random/RandomRunMain.cpp - the long differential run ----------===//
// minijit_random_run --first S --count N [--stride P] [--budget-s T]: random graphs fused
// and unfused on the GPU against the CPU reference, every mismatch counted
// with its seed; without a GPU, compiled only (compile throughput). The last
// line is the summary scripts/random_run.sh adds up. Exit status 1 when any
// graph was flagged, 0 otherwise.
//===----------------------------------------------------------------------===//
#include "tests/support/RandomRun.h"

#include "llvm/Support/CommandLine.h"

using namespace minijit;

int main(int argc, char **argv) {
  namespace cl = llvm::cl;
  cl::opt<uint64_t> first("first", cl::desc("the first seed"), cl::init(1));
  cl::opt<uint64_t> count("count", cl::desc("graphs to try"), cl::init(100));
  cl::opt<uint64_t> stride("stride", cl::desc("seeds first, first + stride, ..."), cl::init(1));
  cl::opt<double> budget("budget-s", cl::desc("start no graph after this many seconds (0: none)"),
                         cl::init(0));
  cl::opt<unsigned> threads("threads", cl::desc("NVRTC threads per compile (0: one per core)"),
                            cl::init(0));
  cl::opt<unsigned> batch("batch",
                          cl::desc("graphs per NVRTC call (0: kernel by kernel, through the cache)"),
                          cl::init(4));
  cl::opt<unsigned> ops("ops", cl::desc("ops per graph"), cl::init(12));
  cl::opt<bool> compileOnly("compile-only", cl::desc("compile, even with a GPU"));
  cl::opt<bool> movement("movement", cl::desc("graphs with the data-movement ops too "
                                              "(RandomGraphOptions::dataMovement)"));
  cl::opt<bool> named("named", cl::desc("name each graph's leading size B and check it at three "
                                        "sizes (RandomRunOptions::namedSizes)"));
  cl::opt<bool> reference("reference", cl::desc("without a GPU, also evaluate each program's CPU "
                                                "reference (what the check costs)"));
  cl::opt<unsigned> workers("workers", cl::desc("threads, each checking every n-th graph on the one "
                                                 "device"),
                            cl::init(1));
  cl::opt<bool> print("print", cl::desc("print each graph before checking it"));
  cl::opt<bool> stopAtFirst("stop-at-first", cl::desc("stop after the first flagged graph"));
  cl::opt<std::string> dump("dump", cl::desc("write each flagged graph to DIR/rg<seed>.mj"),
                            cl::value_desc("DIR"));
  cl::opt<bool> verbose("verbose", cl::desc("print each flagged graph and its kernels"));
  cl::ParseCommandLineOptions(argc, argv, "minijit_random_run: the long differential run\n");

  RandomRunOptions o;
  o.first = first;
  o.count = count;
  o.stride = stride;
  o.budgetSeconds = budget;
  o.threads = threads;
  o.batch = batch;
  o.verbose = verbose;
  o.stopAtFirst = stopAtFirst;
  o.dumpDir = dump;
  o.graph.ops = static_cast<int>(ops);
  o.graph.dataMovement = movement;
  o.namedSizes = named;
  o.referenceWithoutGpu = reference;
  o.workers = workers;
  o.printGraphs = print;
  std::optional<Device> gpu;
  std::string why;
  if (!compileOnly && Device::available(&why))
    gpu = Device::open();
  else if (!compileOnly)
    llvm::errs() << "minijit_random_run: no GPU (" << why << "): compiling only\n";
  RandomRunSummary s = runRandomGraphs(o, gpu ? &*gpu : nullptr, llvm::outs());
  llvm::outs() << s.line(o.first) << "\n";
  return s.findings.empty() ? 0 : 1;
}
