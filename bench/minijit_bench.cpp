//===- bench/minijit_bench.cpp - the benchmark suite -----------------------===//
// Runs the lecture's workloads fused and unfused with DESIGN.md's method:
// CUDA events around each run after a warm-up, the median of >= 100 runs,
// inputs and outputs rotated among several buffer sets so each run reads and
// writes more than the L2 holds, and a device-to-device copy measured in the
// same process as the bandwidth roofline. Compile time is reported apart.
// Every workload is checked against the CPU reference once per mode. The
// JSON (docs/PROFILE_JSON.md) holds each row's per-kernel profile too.
//
// --sweep matmul|softmax|mlp runs the lecture's size sweeps instead (matmul
// 1024..16384 in f32, f16, bf16; softmax of 2^26 floats over row lengths 128
// to 262144; the MLP over layers and over batch): fewer runs where one run is
// long (at least 5, about 0.3 s per point), no CPU check, and a JSON of kind
// "sweep" that bench/torch_anchor.py --sweep completes with the anchors.
//
// --profile-json FILE writes the rows' per-kernel profiles as one file of
// kind "profile" (a run per workload and mode), for scripts/plot.py's
// roofline and timeline. --only may be given several times.
//
// --suite general runs the generalization suite instead (bench/GeneralSuite.h;
// bench/torch_general.py is its PyTorch side).
//
//   minijit_bench [--json FILE] [--only SUBSTRING]... [--runs N] [--no-check] [--fused-only] [--exact-f32]
//                 [--sweep NAME] [--suite lecture|general] [--profile-runs N] [--profile-json FILE]
//   minijit_bench [--suite lecture|general] --dump DIR   (no GPU needed: each workload's fused
//                 text and CUDA, both modes)
//   minijit_bench [--suite lecture|general] --dump-graphs DIR   (each workload's graph as
//                 NAME.mj, for `minijit tune`: the tuned schedules it stores are the ones the
//                 benchmark's compile then finds, its kernels' values being named alike)
//===----------------------------------------------------------------------===//
#include "bench/GeneralSuite.h"
#include "runtime/Driver.h"
#include "samples/Lecture.h"
#include "tools/Harness.h"
#include "tools/ProfileRecords.h"

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
  /// When > 0, i32 inputs (ids, labels) are indices drawn uniformly below it,
  /// as the anchor's torch.randint draws them (the generator's are -16..16).
  int64_t indicesBelow = 0;
};

/// An i32 tensor of indices in [0, below), from a fixed seed.
HostTensor randomIndices(const Shape &s, int64_t below, uint64_t seed) {
  HostTensor t(DType::I32, s);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t.set(i, static_cast<double>((x >> 33) % static_cast<uint64_t>(below)));
  }
  return t;
}

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
      {"rope f16 8x4096x32x128", [] { return rope(8, 4096, 32, 128, DType::F16); }},
      {"embedding+layernorm 16384x4096 of 32000",
       [] { return embeddingLayerNorm(16384, 32000, 4096); }, false, true, false, 32000},
      {"cross-entropy 8192x32000", [] { return crossEntropy(8192, 32000); }, false, true, false,
       32000},
      {"greedy decode 64x128256", [] { return greedyDecode(64, 128256); }},
      // The same step at a batch of 2048 (1.05 GB of logits): the large size.
      {"greedy decode 2048x128256", [] { return greedyDecode(2048, 128256); }},
      {"sum n=2^26", [] { return fullSum(int64_t(1) << 26); }},
      {"matmul f32 4096^3", [] { return plainMatmul(4096, DType::F32); }, false, false},
      {"matmul f16 4096^3", [] { return plainMatmul(4096, DType::F16); }, false, false},
      {"matmul f16 8192^3", [] { return plainMatmul(8192, DType::F16); }, false, false},
      {"matmul f16 4096^3+bias+gelu", [] { return matmulBiasGelu(4096, DType::F16); }, false,
       false},
      {"mlp 128x16 batch 128", [] { return mlp(128, 16, 128); }, false, false, true},
      {"mlp 4096x4 batch 4096", [] { return mlp(4096, 4, 4096); }, false, false},
      {"mlp f16 4096x4 batch 4096", [] { return mlp(4096, 4, 4096, DType::F16); }, false, false},
      // One training step (forward, mean, backward: the loss and all gradients).
      {"train mlp 128x16 batch 128",
       [] { return mlpTrain(128, 16, 128, TrainStep::Gradients); }, false, true, true},
      {"train mlp 4096x4 batch 4096",
       [] { return mlpTrain(4096, 4, 4096, TrainStep::Gradients); }, false, false},
      {"train mlp bf16 4096x4 batch 4096",
       [] { return mlpTrain(4096, 4, 4096, TrainStep::Gradients, DType::BF16); }, false, false},
  };
}

/// The generalization suite (bench/GeneralSuite.h) as rows of this one.
std::vector<Workload> suiteWorkloads(const std::string &suite) {
  if (suite != "general")
    return workloads();
  std::vector<Workload> out;
  for (const bench::GeneralWorkload &w : bench::generalWorkloads())
    out.push_back({w.name, w.build, false, w.checkable, false});
  return out;
}

struct Result {
  std::string workload, mode;
  size_t kernels = 0;
  int64_t bytes = 0;
  double us = 0, gbps = 0, copyFraction = 0, compileMs = 0, hostUs = 0, hostGraphUs = 0;
  double minUs = 0, maxUs = 0;
  int runs = 0;
  double flops = 0;
  int64_t ioBytes = 0; ///< the graph's inputs read once and outputs written once
  bool checked = false, ok = true;
  std::string checkText;
  ProfiledRun profiled; ///< per kernel, with one buffer set
};

/// A device tensor of seeded random values. Past 2^22 elements a random block
/// of 2^22 is repeated by device-to-device copies: drawing hundreds of
/// millions of normals on the host would take longer than the whole sweep.
DeviceTensor randomDeviceTensor(const Device &gpu, DType dtype, const Shape &shape, uint64_t seed) {
  constexpr int64_t kBlock = int64_t(1) << 22;
  if (shape.numel() <= kBlock)
    return DeviceTensor::fromHost(gpu, HostTensor::random(dtype, shape, seed));
  DeviceTensor block = DeviceTensor::fromHost(gpu, HostTensor::random(dtype, Shape{kBlock}, seed));
  DeviceTensor t(gpu, dtype, shape);
  gpu.makeCurrent();
  const Driver &d = Driver::get();
  size_t total = t.bytes(), done = std::min(total, block.bytes());
  d.check(d.cuMemcpyDtoD(t.data(), block.data(), done), "cuMemcpyDtoD");
  while (done < total) {
    size_t n = std::min(done, total - done);
    d.check(d.cuMemcpyDtoD(t.data() + done, t.data(), n), "cuMemcpyDtoD");
    done += n;
  }
  // The copies run on the legacy stream, which the executable's stream does
  // not wait for.
  d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  return t;
}

/// A copy of `t` in new device memory.
DeviceTensor deviceCopy(const Device &gpu, const DeviceTensor &t) {
  DeviceTensor c(gpu, t.dtype(), t.shape());
  gpu.makeCurrent();
  const Driver &d = Driver::get();
  d.check(d.cuMemcpyDtoD(c.data(), t.data(), t.bytes()), "cuMemcpyDtoD");
  d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  return c;
}

/// The bytes of a program's inputs and outputs: what one run must move at least.
int64_t ioBytesOf(const Program &p) {
  int64_t bytes = 0;
  for (int b : p.inputs)
    bytes += p.buffers[b].bytes();
  for (int b : p.outputs)
    bytes += p.buffers[b].bytes();
  return bytes;
}

/// Enough buffer sets that one round of runs touches 3x the L2 (at most 16).
int bufferSets(const Device &gpu, const Program &p) {
  int64_t perSet = ioBytesOf(p);
  return static_cast<int>(std::clamp<int64_t>(
      (3 * gpu.properties().l2Bytes + perSet - 1) / std::max<int64_t>(perSet, 1), 1, 16));
}

/// How many timed runs a point gets: `runs` when that fits in `budgetS`
/// seconds, else what does (at least `least`).
int runsWithin(double budgetS, double estimateUs, int runs, int least) {
  if (estimateUs <= 0)
    return runs;
  return std::clamp(static_cast<int>(budgetS * 1e6 / estimateUs), std::min(least, runs), runs);
}

/// Options of one benchOne call.
struct BenchOptions {
  int runs = 200;
  bool check = true;
  double copyGBps = 0;
  int profileRuns = 20;  ///< runs of the per-kernel profile (0: none)
  double budgetS = 0;    ///< > 0: fewer runs where they would take longer (sweeps)
  bool randomOnDevice = false; ///< inputs through randomDeviceTensor
  bool tf32x3 = true;    ///< CompileOptions::tf32x3 (off with --exact-f32)
};

Result benchOne(const Device &gpu, const Workload &w, bool fused, const BenchOptions &o) {
  int runs = o.runs;
  bool check = o.check;
  double copyGBps = o.copyGBps;
  Result r;
  r.workload = w.name;
  r.mode = fused ? "fused" : "unfused";
  Graph g = w.build();
  CompileOptions opt;
  opt.fusion = fused;
  opt.tf32x3 = o.tf32x3;
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
  int sets = bufferSets(gpu, p);
  r.ioBytes = ioBytesOf(p);
  std::vector<std::vector<DeviceTensor>> ins(sets), outs(sets);
  if (o.randomOnDevice) {
    for (int s = 0; s < sets; ++s) {
      for (size_t i = 0; i < g.inputs().size(); ++i) {
        const Node &in = g.node(g.inputs()[i]);
        bool indices = w.indicesBelow > 0 && in.dtype == DType::I32;
        ins[s].push_back(s > 0     ? deviceCopy(gpu, ins[0][i])
                         : indices ? DeviceTensor::fromHost(
                                         gpu, randomIndices(in.shape, w.indicesBelow, 7 + i))
                                   : randomDeviceTensor(gpu, in.dtype, in.shape, 7 + i));
      }
      outs[s] = exe.allocateOutputs();
    }
  } else {
    std::vector<HostTensor> hostIn = randomInputs(g, 7);
    for (size_t i = 0; i < hostIn.size(); ++i)
      if (w.indicesBelow > 0 && hostIn[i].dtype() == DType::I32)
        hostIn[i] = randomIndices(hostIn[i].shape(), w.indicesBelow, 7 + i);
    for (int s = 0; s < sets; ++s) {
      for (const HostTensor &h : hostIn)
        ins[s].push_back(DeviceTensor::fromHost(gpu, h));
      outs[s] = exe.allocateOutputs();
    }
  }
  int warmup = 10;
  if (o.budgetS > 0) {
    // One untimed and one timed run say how long a run takes.
    RunTiming first = timeExecutable(exe, ins[0], outs[0], 1, 1);
    runs = runsWithin(o.budgetS, first.medianUs, runs, 5);
    warmup = runsWithin(o.budgetS / 10, first.medianUs, 10, 1);
  }
  RunTiming t = timeExecutableRotating(exe, ins, outs, runs, warmup);
  r.us = t.medianUs;
  r.minUs = t.minUs;
  r.maxUs = t.maxUs;
  r.runs = runs;
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
    exe.setGraphReplay(w.graphReplay);
  }
  if (o.profileRuns > 0) {
    int profileRuns = o.budgetS > 0 ? runsWithin(o.budgetS, r.us, o.profileRuns, 3) : o.profileRuns;
    r.profiled = profiledRun(c, profileExecutable(exe, ins[0], outs[0], profileRuns, copyGBps));
  }
  return r;
}

// ---- the lecture's sweeps

/// One point of a sweep: a workload at one size, in one group (a panel of the plot).
struct SweepPoint {
  std::string group;
  int64_t x;
  Workload workload;
  bool unfused = true; ///< also run one kernel per op (not for a lone matmul)
  double flops = 0;    ///< the matmuls' 2*M*N*K, the same figure the anchors use
};

/// A panel of a sweep's plot: its x axis and what its throughput counts.
struct SweepGroup {
  std::string name, xLabel;
  std::string throughput; ///< "flops" (TFLOP/s) or "bytes" (GB/s)
  std::string dtype;      ///< whose compute roof the plot draws
};

struct Sweep {
  std::string name, title;
  std::vector<SweepGroup> groups;
  std::vector<SweepPoint> points;
};

std::string dtypeLabel(DType t) { return std::string(dtypeName(t)); }

Sweep sweepNamed(const std::string &name) {
  using namespace lecture;
  Sweep s;
  s.name = name;
  if (name == "matmul") {
    s.title = "square matmul a @ b (n x n times n x n)";
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      std::string dt = dtypeLabel(t);
      s.groups.push_back({dt, "n (a, b: n x n " + dt + ")", "flops", dt});
      for (int64_t n : {1024, 2048, 4096, 8192, 16384})
        s.points.push_back({dt, n,
                            {"matmul " + dt + " " + std::to_string(n) + "^3",
                             [n, t] { return plainMatmul(n, t); }, false, false},
                            false, 2.0 * n * n * n});
    }
    return s;
  }
  if (name == "softmax") {
    s.title = "softmax over rows of 2^26 f32 elements";
    s.groups.push_back({"f32", "row length (rows x row length = 2^26 elements)", "bytes", "f32"});
    for (int64_t cols = 128; cols <= 262144; cols *= 2) {
      int64_t rows = (int64_t(1) << 26) / cols;
      s.points.push_back({"f32", cols,
                          {"softmax " + std::to_string(rows) + "x" + std::to_string(cols),
                           [rows, cols] { return softmax(rows, cols); }, false, false},
                          true, 0});
    }
    return s;
  }
  if (name == "mlp") {
    s.title = "the lecture's MLP forward (x @ W, GeLU per layer), f32, dim 1024";
    const int64_t dim = 1024;
    auto point = [&](const std::string &group, int64_t x, int layers, int64_t batch) {
      s.points.push_back({group, x,
                          {"mlp " + std::to_string(dim) + "x" + std::to_string(layers) +
                               " batch " + std::to_string(batch),
                           [=] { return mlp(dim, layers, batch); }, false, false},
                          true, 2.0 * batch * dim * dim * layers});
    };
    s.groups.push_back({"layers", "layers (batch 1024)", "flops", "f32"});
    for (int layers : {1, 2, 4, 8, 16})
      point("layers", layers, layers, 1024);
    s.groups.push_back({"batch", "batch (4 layers)", "flops", "f32"});
    for (int64_t batch : {128, 512, 2048, 8192})
      point("batch", batch, 4, batch);
    return s;
  }
  return s;
}

llvm::json::Object timeJson(const Result &r) {
  return llvm::json::Object{{"min", r.minUs}, {"median", r.us}, {"max", r.maxUs}};
}

/// Whether `name` is selected by the --only substrings (all are, without any).
bool selected(const std::string &name, const std::vector<std::string> &only) {
  return only.empty() || llvm::any_of(only, [&](const std::string &o) {
           return name.find(o) != std::string::npos;
         });
}

int runSweep(const Device &gpu, const std::string &name, const std::string &json,
             const std::vector<std::string> &only, int profileRuns, double copy) {
  Sweep s = sweepNamed(name);
  if (s.points.empty()) {
    llvm::errs() << "minijit_bench: unknown --sweep " << name << " (expected matmul, softmax or mlp)\n";
    return 2;
  }
  llvm::outs() << llvm::formatv("sweep {0}: {1}\n", s.name, s.title);
  llvm::outs() << llvm::formatv("{0,-28} {1,-8} {2,7} {3,6} {4,12} {5,8} {6,8} {7,11}\n", "workload",
                                "mode", "kernels", "runs", "time(us)", "GB/s", "TFLOP/s",
                                "compile(ms)");
  BenchOptions o;
  o.runs = 100;
  o.check = false;
  o.copyGBps = copy;
  o.profileRuns = profileRuns;
  o.budgetS = 0.3;
  o.randomOnDevice = true;
  llvm::json::Array series[2]; // points of fused, unfused
  // The file is written again after every point: a sweep stopped by a time
  // limit leaves what it measured.
  auto write = [&]() {
    if (json.empty())
      return true;
    llvm::json::Object root = fileHeaderJson(
        "sweep", std::string("minijit_bench ") + minijitVersion(), gpu.properties(), copy);
    root["sweep"] = s.name;
    root["title"] = s.title;
    root["method"] = "CUDA events around each run after a warm-up; the median of up to 100 runs, "
                     "fewer (at least 5) where they would take more than 0.3 s; inputs random "
                     "(past 2^22 elements a random block repeated), buffers rotated beyond the "
                     "L2; not checked against the CPU reference";
    llvm::json::Array groups;
    for (const SweepGroup &g : s.groups)
      groups.push_back(llvm::json::Object{{"name", g.name},
                                          {"x_label", g.xLabel},
                                          {"throughput", g.throughput},
                                          {"dtype", g.dtype}});
    root["groups"] = std::move(groups);
    llvm::json::Array all;
    all.push_back(llvm::json::Object{
        {"impl", "minijit"}, {"mode", "fused"}, {"label", "minijit fused"}, {"points", llvm::json::Array(series[0])}});
    if (!series[1].empty())
      all.push_back(llvm::json::Object{{"impl", "minijit"},
                                       {"mode", "unfused"},
                                       {"label", "minijit unfused (one kernel per op)"},
                                       {"points", llvm::json::Array(series[1])}});
    root["series"] = std::move(all);
    std::string error;
    if (writeTextFile(json, formatJson(std::move(root)), error))
      return true;
    llvm::errs() << "minijit_bench: " << error << "\n";
    return false;
  };
  for (const SweepPoint &pt : s.points) {
    if (!selected(pt.workload.name, only))
      continue;
    for (bool fused : {true, false}) {
      if (!fused && !pt.unfused)
        continue;
      Result r = benchOne(gpu, pt.workload, fused, o);
      llvm::outs() << llvm::formatv("{0,-28} {1,-8} {2,7} {3,6} {4,12:f2} {5,8:f0} {6,8:f1} "
                                    "{7,11:f1}\n",
                                    r.workload, r.mode, r.kernels, r.runs, r.us,
                                    r.ioBytes / (r.us * 1e3),
                                    pt.flops / (r.us * 1e6), r.compileMs);
      llvm::outs().flush();
      series[fused ? 0 : 1].push_back(llvm::json::Object{
          {"group", pt.group},
          {"x", pt.x},
          {"workload", pt.workload.name},
          {"time_us", timeJson(r)},
          {"timed_runs", r.runs},
          {"bytes", r.ioBytes},
          {"flops", pt.flops},
          {"kernels_launched", static_cast<int64_t>(r.kernels)},
          {"bytes_moved", r.bytes},
          {"compile_ms", r.compileMs},
          {"profile_runs", r.profiled.profile.runs},
          {"kernels", kernelsJson(r.profiled)},
      });
      if (!write())
        return 1;
    }
  }
  return write() ? 0 : 1;
}

/// Writes DIR/NAME.MODE.fused.txt and .cu for every workload, compiled for
/// the assumed H200 without NVRTC: what scripts/compare_cuda.sh diffs.
int dumpWorkloads(const std::string &dir, const std::string &suite) {
  std::error_code ec = llvm::sys::fs::create_directories(dir);
  for (const Workload &w : suiteWorkloads(suite))
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

/// Writes DIR/NAME.mj, each workload's graph in the text format.
int dumpGraphs(const std::string &dir, const std::string &suite) {
  std::error_code ec = llvm::sys::fs::create_directories(dir);
  for (const Workload &w : suiteWorkloads(suite)) {
    std::string path = dir + "/" + w.name + ".mj";
    std::replace(path.begin() + dir.size() + 1, path.end(), ' ', '_');
    llvm::raw_fd_ostream out(path, ec);
    if (ec) {
      llvm::errs() << "minijit_bench: cannot write " << path << ": " << ec.message() << "\n";
      return 1;
    }
    out << printGraph(w.build());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string json, sweep, profileJson, dump, dumpGraphDir, suite = "lecture";
  std::vector<std::string> only;
  int runs = 200, profileRuns = 20;
  bool check = true, fusedOnly = false, tf32x3 = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      only.push_back(argv[++i]);
    else if (a == "--profile-json" && i + 1 < argc)
      profileJson = argv[++i];
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(100, std::atoi(argv[++i]));
    else if (a == "--no-check")
      check = false;
    else if (a == "--fused-only")
      fusedOnly = true;
    else if (a == "--tf32x3") // the default, kept for scripts
      tf32x3 = true;
    else if (a == "--exact-f32")
      tf32x3 = false;
    else if (a == "--sweep" && i + 1 < argc)
      sweep = argv[++i];
    else if (a == "--suite" && i + 1 < argc && (std::strcmp(argv[i + 1], "lecture") == 0 ||
                                                 std::strcmp(argv[i + 1], "general") == 0))
      suite = argv[++i];
    else if (a == "--profile-runs" && i + 1 < argc)
      profileRuns = std::max(0, std::atoi(argv[++i]));
    else if (a == "--dump" && i + 1 < argc)
      dump = argv[++i];
    else if (a == "--dump-graphs" && i + 1 < argc)
      dumpGraphDir = argv[++i];
    else {
      llvm::errs() << "usage: minijit_bench [--json FILE] [--only SUBSTRING] [--runs N>=100] "
                      "[--no-check] [--fused-only] [--exact-f32] [--sweep matmul|softmax|mlp] [--suite lecture|general] "
                      "[--profile-runs N] [--profile-json FILE] | --dump DIR | --dump-graphs DIR\n";
      return 2;
    }
  }
  if (!dump.empty())
    return dumpWorkloads(dump, suite);
  if (!dumpGraphDir.empty())
    return dumpGraphs(dumpGraphDir, suite);
  std::string why;
  if (!Device::available(&why)) {
    llvm::outs() << "minijit_bench: no GPU (" << why << "); nothing to measure\n";
    return 0;
  }
  try {
    Device gpu = Device::open();
    double copy = measureCopyBandwidth(gpu);
    if (!sweep.empty()) {
      llvm::outs() << llvm::formatv("device: {0}; device-to-device copy of 1 GiB: {1:f0} GB/s "
                                    "(read + write)\n",
                                    gpu.properties().name, copy);
      return runSweep(gpu, sweep, json, only, profileRuns, copy);
    }
    llvm::outs() << llvm::formatv("device: {0}; device-to-device copy of 1 GiB: {1:f0} GB/s "
                                  "(read + write); median of {2} runs per row\n",
                                  gpu.properties().name, copy, runs);
    llvm::outs() << llvm::formatv("{0,-28} {1,-8} {2,7} {3,12} {4,10} {5,8} {6,7} {7,8} {8,11} "
                                  "{9}\n",
                                  "workload", "mode", "kernels", "bytes", "time(us)", "GB/s",
                                  "%copy", "TFLOP/s", "compile(ms)", "check");
    std::vector<Result> results;
    bool allOk = true;
    for (const Workload &w : suiteWorkloads(suite)) {
      if (!selected(w.name, only))
        continue;
      for (bool fused : {true, false}) {
        if (!fused && fusedOnly)
          continue;
        BenchOptions o;
        o.runs = runs;
        o.check = check;
        o.copyGBps = copy;
        o.profileRuns = profileRuns;
        o.tf32x3 = tf32x3;
        o.randomOnDevice = !check; // nothing to compare: no need for the host's copy of the inputs
        Result r = benchOne(gpu, w, fused, o);
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
    if (!profileJson.empty()) {
      std::vector<ProfiledRun> profiled;
      for (const Result &r : results) {
        profiled.push_back(r.profiled);
        profiled.back().profile.graph = r.workload; // the suite's names tell sizes apart
      }
      std::string error;
      if (!writeTextFile(profileJson,
                         profileFileJson(gpu.properties(), copy, profiled,
                                         std::string("minijit_bench ") + minijitVersion()),
                         error)) {
        llvm::errs() << "minijit_bench: " << error << "\n";
        return 1;
      }
    }
    if (!json.empty()) {
      llvm::json::Array rows;
      for (const Result &r : results)
        rows.push_back(llvm::json::Object{{"workload", r.workload},
                                          {"mode", r.mode},
                                          {"kernels_launched", static_cast<int64_t>(r.kernels)},
                                          {"bytes", r.bytes},
                                          {"us", r.us},
                                          {"gbps", r.gbps},
                                          {"copy_fraction", r.copyFraction},
                                          {"compile_ms", r.compileMs},
                                          {"tflops", r.flops / (r.us * 1e6)},
                                          {"host_us_per_call", r.hostUs},
                                          {"host_us_per_call_graph", r.hostGraphUs},
                                          {"check", !r.checked ? "skipped" : (r.ok ? "ok" : "mismatch")},
                                          {"time_us", timeJson(r)},
                                          {"profile_runs", r.profiled.profile.runs},
                                          {"kernels", kernelsJson(r.profiled)}});
      llvm::json::Object root = fileHeaderJson(
          "suite", std::string("minijit_bench ") + minijitVersion(), gpu.properties(), copy);
      root["timed_runs"] = runs;
      root["rows"] = std::move(rows);
      std::string error;
      if (!writeTextFile(json, formatJson(std::move(root)), error)) {
        llvm::errs() << "minijit_bench: " << error << "\n";
        return 1;
      }
    }
    return allOk ? 0 : 1;
  } catch (const Error &e) {
    llvm::errs() << "minijit_bench: " << e.what() << "\n";
    return 1;
  }
}
