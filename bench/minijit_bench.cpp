//===- bench/minijit_bench.cpp - the benchmark suite -----------------------===//
// Runs the lecture's workloads fused and unfused with DESIGN.md's method:
// CUDA events around each run after a warm-up, the median of >= 100 runs,
// inputs and outputs rotated among several buffer sets so each run reads and
// writes more than the L2 holds, and a device-to-device copy measured in the
// same process as the bandwidth roofline. Compile time is reported apart.
// Every workload is checked against the CPU reference once per mode.
//
//   minijit_bench [--json FILE] [--only SUBSTRING] [--runs N] [--no-check] [--fused-only]
//   minijit_bench --dump DIR   (no GPU needed: each workload's fused text and CUDA, both modes)
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "tools/Harness.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

using namespace minijit;

namespace {

struct Workload {
  std::string name;
  std::function<Graph()> build;
  bool hostLoop = false;    ///< also report host wall time per call in a loop
  bool checkable = true;    ///< small enough for the CPU reference
  bool graphReplay = false; ///< launch through a CUDA graph
};

/// x @ w + bias, then GeLU: the fused-epilogue row.
Graph matmulBiasGelu(int64_t n, DType t) {
  Graph g("matmul_bias_gelu");
  Tensor x = g.input("x", t, {n, n});
  Tensor w = g.input("w", t, {n, n});
  Tensor bias = g.input("bias", t, {n});
  Tensor h = matmul(x, w) + bias;
  g.output(0.5 * h * (1.0 + tanh(0.7978845608 * (h + 0.044715 * h * h * h))), "y");
  return g;
}

/// A full sum: one long row, split across blocks.
Graph fullSum(int64_t n) {
  Graph g("full_sum");
  Tensor x = g.input("x", DType::F32, {n});
  g.output(sum(x), "s");
  return g;
}

Graph plainMatmul(int64_t n, DType t) {
  Graph g("matmul");
  Tensor x = g.input("x", t, {n, n});
  Tensor w = g.input("w", t, {n, n});
  g.output(matmul(x, w), "y");
  return g;
}

std::vector<Workload> workloads() {
  using namespace lecture;
  return {
      {"gelu n=2^26", [] { return gelu(int64_t(1) << 26); }},
      {"gelu n=2^16", [] { return gelu(int64_t(1) << 16); }, true},
      {"softmax 4096x1024", [] { return softmax(4096, 1024); }},
      {"softmax 8192x8192", [] { return softmax(8192, 8192); }},
      {"softmax 1024x32768", [] { return softmax(1024, 32768); }},
      {"softmax 65536x128", [] { return softmax(65536, 128); }},
      {"layernorm 8192x8192", [] { return layernorm(8192, 8192); }},
      {"rmsnorm 8192x8192", [] { return rmsnorm(8192, 8192); }},
      {"gelu bf16 n=2^26", [] { return gelu(int64_t(1) << 26, DType::BF16); }},
      {"sum n=2^26", [] { return fullSum(int64_t(1) << 26); }},
      {"matmul f32 4096^3", [] { return plainMatmul(4096, DType::F32); }, false, false},
      {"matmul f16 4096^3", [] { return plainMatmul(4096, DType::F16); }, false, false},
      {"matmul f16 8192^3", [] { return plainMatmul(8192, DType::F16); }, false, false},
      {"matmul f16 4096^3+bias+gelu", [] { return matmulBiasGelu(4096, DType::F16); }, false,
       false},
      {"mlp 128x16 batch 128", [] { return mlp(128, 16, 128); }, false, false, true},
      {"mlp 4096x4 batch 4096", [] { return mlp(4096, 4, 4096); }, false, false},
  };
}

struct Result {
  std::string workload, mode;
  size_t kernels = 0;
  int64_t bytes = 0;
  double us = 0, gbps = 0, copyFraction = 0, compileMs = 0, hostUs = 0, hostGraphUs = 0;
  double flops = 0;
  bool checked = false, ok = true;
  std::string checkText;
};

Result benchOne(const Device &gpu, const Workload &w, bool fused, int runs, bool check,
                double copyGBps) {
  Result r;
  r.workload = w.name;
  r.mode = fused ? "fused" : "unfused";
  Graph g = w.build();
  CompileOptions opt;
  opt.fusion = fused;
  opt.device = gpu.properties();
  // Compile time as a user sees it the first time: no cache.
  KernelCache cold("", /*enabled=*/false);
  opt.cache = &cold;
  auto t0 = std::chrono::steady_clock::now();
  CompiledGraph c = compileGraph(g, opt);
  r.compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const Program &p = c.program;
  r.kernels = p.kernels.size();
  r.bytes = p.bytesMoved();
  for (const ProgramKernel &k : p.kernels)
    r.flops += static_cast<double>(k.flops);
  if (check && w.checkable) {
    CheckedRun cr = runAndCheck(g, gpu, fused, 1);
    r.checked = true;
    r.ok = cr.ok;
    for (size_t i = 0; i < cr.compare.size(); ++i)
      r.checkText += (i ? "; " : "") + cr.compare[i].summary;
  }
  Executable exe(gpu, p);
  exe.setGraphReplay(w.graphReplay);
  // Enough buffer sets that one round of runs touches 3x the L2.
  int64_t perSet = 0;
  for (int b : p.inputs)
    perSet += p.buffers[b].bytes();
  for (int b : p.outputs)
    perSet += p.buffers[b].bytes();
  int sets = static_cast<int>(std::clamp<int64_t>(
      (3 * gpu.properties().l2Bytes + perSet - 1) / std::max<int64_t>(perSet, 1), 1, 16));
  std::vector<std::vector<DeviceTensor>> ins(sets), outs(sets);
  std::vector<HostTensor> hostIn = randomInputs(g, 7);
  for (int s = 0; s < sets; ++s) {
    for (const HostTensor &h : hostIn)
      ins[s].push_back(DeviceTensor::fromHost(gpu, h));
    outs[s] = exe.allocateOutputs();
  }
  RunTiming t = timeExecutableRotating(exe, ins, outs, runs, 10);
  r.us = t.medianUs;
  r.gbps = r.bytes / (r.us * 1e3);
  r.copyFraction = r.gbps / copyGBps;
  if (w.hostLoop) {
    // Host wall time per call, the way a Python loop over F.gelu is timed:
    // back-to-back calls, one wait at the end.
    for (bool graph : {false, true}) {
      exe.setGraphReplay(graph);
      RunTiming h = timeExecutable(exe, ins[0], outs[0], 2000, 50);
      (graph ? r.hostGraphUs : r.hostUs) = h.hostUsPerRun;
    }
  }
  return r;
}

/// Writes DIR/NAME.MODE.fused.txt and .cu for every workload, compiled for
/// the assumed H200 without NVRTC: what scripts/compare_cuda.sh diffs.
int dumpWorkloads(const std::string &dir) {
  std::error_code ec = llvm::sys::fs::create_directories(dir);
  for (const Workload &w : workloads())
    for (bool fused : {true, false}) {
      CompileOptions opt;
      opt.fusion = fused;
      opt.compileKernels = false;
      CompiledGraph c = compileGraph(w.build(), opt);
      std::string base = dir + "/" + w.name + (fused ? ".fused" : ".unfused");
      std::replace(base.begin() + dir.size() + 1, base.end(), ' ', '_');
      llvm::raw_fd_ostream fusedOut(base + ".fused.txt", ec), cudaOut(base + ".cu", ec);
      if (ec) {
        llvm::errs() << "minijit_bench: cannot write " << base << ": " << ec.message() << "\n";
        return 1;
      }
      fusedOut << c.fusedText();
      cudaOut << c.cudaText();
    }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string json, only;
  int runs = 200;
  bool check = true, fusedOnly = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(100, std::atoi(argv[++i]));
    else if (a == "--no-check")
      check = false;
    else if (a == "--fused-only")
      fusedOnly = true;
    else if (a == "--dump" && i + 1 < argc)
      return dumpWorkloads(argv[i + 1]);
    else {
      llvm::errs() << "usage: minijit_bench [--json FILE] [--only SUBSTRING] [--runs N>=100] "
                      "[--no-check] [--fused-only] | --dump DIR\n";
      return 2;
    }
  }
  std::string why;
  if (!Device::available(&why)) {
    llvm::outs() << "minijit_bench: no GPU (" << why << "); nothing to measure\n";
    return 0;
  }
  try {
    Device gpu = Device::open();
    double copy = measureCopyBandwidth(gpu);
    llvm::outs() << llvm::formatv("device: {0}; device-to-device copy of 1 GiB: {1:f0} GB/s "
                                  "(read + write); median of {2} runs per row\n",
                                  gpu.properties().name, copy, runs);
    llvm::outs() << llvm::formatv("{0,-28} {1,-8} {2,7} {3,12} {4,10} {5,8} {6,7} {7,8} {8,11} "
                                  "{9}\n",
                                  "workload", "mode", "kernels", "bytes", "time(us)", "GB/s",
                                  "%copy", "TFLOP/s", "compile(ms)", "check");
    std::vector<Result> results;
    bool allOk = true;
    for (const Workload &w : workloads()) {
      if (!only.empty() && w.name.find(only) == std::string::npos)
        continue;
      for (bool fused : {true, false}) {
        if (!fused && fusedOnly)
          continue;
        Result r = benchOne(gpu, w, fused, runs, check, copy);
        allOk = allOk && r.ok;
        llvm::outs() << llvm::formatv("{0,-28} {1,-8} {2,7} {3,12} {4,10:f2} {5,8:f0} {6,6:f1}% "
                                      "{7,8:f1} {8,11:f1} {9}\n",
                                      r.workload, r.mode, r.kernels, r.bytes, r.us, r.gbps,
                                      100 * r.copyFraction, r.flops / (r.us * 1e6), r.compileMs,
                                      !r.checked ? "-" : (r.ok ? "ok" : "MISMATCH " + r.checkText));
        if (r.hostUs > 0)
          llvm::outs() << llvm::formatv("{0,-28} {1,-8} host wall time per call in a loop: {2:f2} "
                                        "us (CUDA graph replay: {3:f2} us)\n",
                                        "", r.mode, r.hostUs, r.hostGraphUs);
        llvm::outs().flush();
        results.push_back(r);
      }
    }
    if (!json.empty()) {
      llvm::json::Array rows;
      for (const Result &r : results)
        rows.push_back(llvm::json::Object{{"workload", r.workload},
                                          {"mode", r.mode},
                                          {"kernels", static_cast<int64_t>(r.kernels)},
                                          {"bytes", r.bytes},
                                          {"us", r.us},
                                          {"gbps", r.gbps},
                                          {"copy_fraction", r.copyFraction},
                                          {"compile_ms", r.compileMs},
                                          {"tflops", r.flops / (r.us * 1e6)},
                                          {"host_us_per_call", r.hostUs},
                                          {"host_us_per_call_graph", r.hostGraphUs},
                                          {"check", !r.checked ? "skipped" : (r.ok ? "ok" : "mismatch")}});
      llvm::json::Object root{{"tool", "minijit"},
                              {"device", gpu.properties().name},
                              {"copy_gbps", copy},
                              {"runs", runs},
                              {"rows", std::move(rows)}};
      std::error_code ec;
      llvm::raw_fd_ostream os(json, ec);
      if (ec) {
        llvm::errs() << "minijit_bench: cannot write " << json << ": " << ec.message() << "\n";
        return 1;
      }
      os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
    }
    return allOk ? 0 : 1;
  } catch (const Error &e) {
    llvm::errs() << "minijit_bench: " << e.what() << "\n";
    return 1;
  }
}
