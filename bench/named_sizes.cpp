//===- bench/named_sizes.cpp - one compile for every batch size -----------===//
// The targets of named dimensions (issue 17), measured: a softmax, a layer
// norm and an MLP with a named batch size B, each one executable run at 100
// batch sizes from 1 to 65536 in this process:
//   - NVRTC compiles for all 100 (a fresh kernel cache per graph);
//   - at the largest sizes, the named executable's time against a graph
//     compiled for that size (median of 100 runs each, same process);
//   - host time per run of one binding (back-to-back enqueues);
//   - the small sizes checked against the CPU reference.
// And the cold compile of the suite's 16-layer MLP against one layer, fused
// and unfused (no GPU needed: --compile-only measures only that and the
// compile counts).
//
//   minijit_named_bench [--compile-only] [--sizes N]
//===----------------------------------------------------------------------===//
#include "compiler/cache/KernelCache.h"
#include "samples/Lecture.h"
#include "tools/Harness.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

using namespace minijit;

namespace {

/// `n` distinct sizes from 1 to `most`, spread evenly on a log scale.
std::vector<int64_t> batchSizes(int n, int64_t most) {
  std::set<int64_t> s;
  for (int i = 0; i < n; ++i)
    s.insert(std::max<int64_t>(
        1, std::llround(std::exp(std::log(double(most)) * i / std::max(1, n - 1)))));
  // Rounding merges some small ones: fill in with their neighbours.
  for (int64_t v = 2; static_cast<int>(s.size()) < n && v < most; ++v)
    s.insert(v);
  return {s.begin(), s.end()};
}

struct Workload {
  std::string name;
  Graph named;                           ///< with the batch size B
  std::function<Graph(int64_t)> fixed;   ///< the same at one batch size
  int64_t checkUpTo;                     ///< sizes checked against the CPU reference
  /// Inputs after the first are scaled by this (an MLP's weights by
  /// 1/sqrt(dim), as samples/mlp.cpp, so that f16 does not overflow).
  double weightScale = 1;
};

/// Seeded inputs of `g`, the weights scaled as `w` says.
std::vector<HostTensor> inputsOf(const Graph &g, const Workload &w, uint64_t seed) {
  std::vector<HostTensor> ins = randomInputs(g, seed);
  if (w.weightScale != 1)
    for (size_t i = 1; i < ins.size(); ++i)
      for (int64_t e = 0; e < ins[i].numel(); ++e)
        ins[i].set(e, ins[i].get(e) * w.weightScale);
  return ins;
}

std::vector<Workload> workloads() {
  return {
      {"softmax [B, 1024] f32", lecture::softmax(Dim("B"), 1024),
       [](int64_t b) { return lecture::softmax(b, 1024); }, 8192},
      {"layernorm [B, 4096] f32", lecture::layernorm(Dim("B"), 4096),
       [](int64_t b) { return lecture::layernorm(b, 4096); }, 1024},
      {"mlp 1024x4 [B, 1024] f16", lecture::mlp(1024, 4, Dim("B"), DType::F16),
       [](int64_t b) { return lecture::mlp(1024, 4, b, DType::F16); }, 256, 1.0 / 32},
  };
}

/// A fresh kernel cache in a scratch folder (removed with it).
struct ScratchCache {
  llvm::SmallString<64> dir;
  std::unique_ptr<KernelCache> cache;
  ScratchCache() {
    if (llvm::sys::fs::createUniqueDirectory("minijit-named-bench", dir))
      dir.clear();
    cache = std::make_unique<KernelCache>(dir.str().str(), true);
  }
  ~ScratchCache() {
    if (!dir.empty())
      llvm::sys::fs::remove_directories(dir);
  }
};

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Cold compile of `g` (a fresh cache): milliseconds, NVRTC compiles.
std::pair<double, uint64_t> coldCompile(const Graph &g, bool fusion) {
  ScratchCache c;
  CompileOptions opt;
  opt.fusion = fusion;
  opt.cache = c.cache.get();
  opt.tuning = CompileOptions::Tuning::Off;
  auto t0 = std::chrono::steady_clock::now();
  compileGraph(g, opt);
  return {msSince(t0), c.cache->stats().compiles};
}

void compileTimes() {
  coldCompile(lecture::gelu(1024), true); // loads NVRTC, which no timing below should count
  llvm::outs() << "cold compile of the suite's MLP (dim 128, batch 128, f32), a fresh kernel cache:\n";
  for (bool fusion : {true, false}) {
    auto [one, oneN] = coldCompile(lecture::mlp(128, 1, int64_t(128)), fusion);
    auto [all, allN] = coldCompile(lecture::mlp(128, 16, int64_t(128)), fusion);
    llvm::outs() << llvm::formatv("  fusion {0,-3}: 1 layer {1,7:f1} ms ({2} NVRTC compiles), "
                                  "16 layers {3,7:f1} ms ({4}): {5:f2}x one layer\n",
                                  fusion ? "on" : "off", one, oneN, all, allN, all / one);
  }
}

/// NVRTC compiles for every size, without a GPU: the graph bound and
/// compiled size after size through one fresh cache.
void countCompiles(const Workload &w, const std::vector<int64_t> &sizes) {
  ScratchCache c;
  CompileOptions opt;
  opt.cache = c.cache.get();
  for (int64_t b : sizes)
    compileGraph(bindDims(w.named, {{"B", b}}), opt);
  llvm::outs() << llvm::formatv("  {0,-26} {1} sizes, {2} NVRTC compiles\n", w.name, sizes.size(),
                                c.cache->stats().compiles);
}

std::vector<DeviceTensor> upload(const Device &gpu, const std::vector<HostTensor> &ins) {
  std::vector<DeviceTensor> out;
  for (const HostTensor &h : ins)
    out.push_back(DeviceTensor::fromHost(gpu, h));
  return out;
}

void runWorkload(const Device &gpu, const Workload &w, const std::vector<int64_t> &sizes) {
  ScratchCache c;
  CompileOptions opt;
  opt.cache = c.cache.get();
  Executable exe = compile(w.named, gpu, opt);
  int checked = 0, failed = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t b : sizes) {
    Graph bound = bindDims(w.named, {{"B", b}});
    std::vector<HostTensor> ins = inputsOf(bound, w, static_cast<uint64_t>(b));
    std::vector<DeviceTensor> din = upload(gpu, ins);
    std::vector<DeviceTensor> dout = exe.allocateOutputs(din);
    poisonTensors(dout);
    exe.enqueue(din, dout);
    exe.synchronize();
    if (b > w.checkUpTo)
      continue;
    ++checked;
    std::vector<HostTensor> ref = evaluate(bound, ins);
    for (size_t i = 0; i < ref.size(); ++i) {
      Tolerance tol = toleranceFor(bound, bound.outputs()[i]);
      CompareResult r = compareTensors(dout[i].download(), ref[i], tol);
      if (!r.ok) {
        ++failed;
        llvm::outs() << "    MISMATCH at B=" << b << ": " << r.summary << "\n";
      }
    }
  }
  double allMs = msSince(t0);
  llvm::outs() << llvm::formatv("  {0,-26} {1} sizes in {2:f0} ms: {3} bindings, {4} NVRTC compiles; "
                                "{5} sizes checked against the CPU reference, {6} mismatches\n",
                                w.name, sizes.size(), allMs, exe.bindings(),
                                c.cache->stats().compiles, checked, failed);
  for (int64_t b : {sizes.back(), sizes.back() * 5 / 8 + 1}) {
    Graph bound = bindDims(w.named, {{"B", b}});
    std::vector<DeviceTensor> din = upload(gpu, inputsOf(bound, w, 1));
    std::vector<DeviceTensor> dout = exe.allocateOutputs(din);
    RunTiming named = timeExecutable(exe, din, dout, 100, 10);
    Executable fixed = compile(w.fixed(b), gpu);
    std::vector<DeviceTensor> fout = fixed.allocateOutputs();
    RunTiming once = timeExecutable(fixed, din, fout, 100, 10);
    llvm::outs() << llvm::formatv("    B={0,-6} named {1,9:f2} us, compiled for the size {2,9:f2} "
                                  "us: {3:+0.00;-0.00} %\n",
                                  b, named.medianUs, once.medianUs,
                                  100 * (named.medianUs - once.medianUs) / once.medianUs);
  }
  // Host time per run where the GPU work is shortest (B = 1): the enqueue
  // of a binding already made, against a program compiled for B = 1.
  Graph one = bindDims(w.named, {{"B", 1}});
  std::vector<DeviceTensor> din = upload(gpu, inputsOf(one, w, 1));
  std::vector<DeviceTensor> dout = exe.allocateOutputs(din);
  Executable fixed = compile(w.fixed(1), gpu);
  std::vector<DeviceTensor> fout = fixed.allocateOutputs();
  for (bool replay : {false, true}) {
    exe.setGraphReplay(replay);
    fixed.setGraphReplay(replay);
    RunTiming named = timeExecutable(exe, din, dout, 2000, 100);
    RunTiming once = timeExecutable(fixed, din, fout, 2000, 100);
    llvm::outs() << llvm::formatv("    B=1      host per run{0}: named {1:f2} us, compiled for the "
                                  "size {2:f2} us (GPU median {3:f2} / {4:f2} us)\n",
                                  replay ? " (CUDA graph replay)" : "", named.hostUsPerRun,
                                  once.hostUsPerRun, named.medianUs, once.medianUs);
  }
}

} // namespace

int main(int argc, char **argv) {
  bool compileOnly = false;
  int count = 100;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--compile-only") == 0)
      compileOnly = true;
    else if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
      count = std::atoi(argv[++i]);
    else {
      llvm::errs() << "usage: minijit_named_bench [--compile-only] [--sizes N]\n";
      return 2;
    }
  }
  std::vector<int64_t> sizes = batchSizes(count, 65536);
  try {
    compileTimes();
    if (compileOnly) {
      llvm::outs() << "NVRTC compiles over " << sizes.size() << " batch sizes 1.."
                   << sizes.back() << " (no GPU: compiled for an H200):\n";
      for (const Workload &w : workloads())
        countCompiles(w, sizes);
      return 0;
    }
    Device gpu = Device::open();
    llvm::outs() << "one executable per graph, " << sizes.size() << " batch sizes 1.."
                 << sizes.back() << " on " << gpu.properties().name << ":\n";
    for (const Workload &w : workloads())
      runWorkload(gpu, w, sizes);
  } catch (const Error &e) {
    llvm::errs() << "minijit_named_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
