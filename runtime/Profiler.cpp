//===- runtime/Profiler.cpp - where the time goes -------------------------===//
#include "runtime/Profiler.h"

#include "ir/Error.h"
#include "runtime/Driver.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

namespace minijit {

namespace {

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// A CUDA event, destroyed with its owner.
struct Event {
  CUevent e = nullptr;
  Event() { Driver::get().check(Driver::get().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate"); }
  ~Event() {
    if (e)
      Driver::get().cuEventDestroy(e);
  }
  Event(const Event &) = delete;
  Event(Event &&o) noexcept : e(o.e) { o.e = nullptr; }
};

double elapsedUs(const Event &a, const Event &b) {
  float ms = 0;
  const Driver &d = Driver::get();
  d.check(d.cuEventElapsedTime(&ms, a.e, b.e), "cuEventElapsedTime");
  return ms * 1000.0;
}

} // namespace

WaveMath computeWaves(int64_t blocks, int sms, int blocksPerSM) {
  WaveMath w;
  w.capacity = int64_t(std::max(sms, 1)) * std::max(blocksPerSM, 1);
  w.waves = static_cast<double>(blocks) / static_cast<double>(w.capacity);
  int64_t rem = blocks % w.capacity;
  w.lastWaveFill = blocks == 0 ? 0 : (rem == 0 ? 1.0 : static_cast<double>(rem) / w.capacity);
  return w;
}

double measureCopyBandwidth(const Device &dev, size_t bytes, int runs) {
  dev.makeCurrent();
  const Driver &d = Driver::get();
  DeviceTensor a(dev, DType::Bool, Shape{static_cast<int64_t>(bytes)});
  DeviceTensor b(dev, DType::Bool, Shape{static_cast<int64_t>(bytes)});
  d.check(d.cuMemsetD8(a.data(), 1, bytes), "cuMemsetD8");
  CUstream s = nullptr;
  d.check(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  std::vector<double> us;
  for (int i = 0; i < runs + 3; ++i) {
    Event e0, e1;
    d.check(d.cuEventRecord(e0.e, s), "cuEventRecord");
    d.check(d.cuMemcpyDtoDAsync(b.data(), a.data(), bytes, s), "cuMemcpyDtoDAsync");
    d.check(d.cuEventRecord(e1.e, s), "cuEventRecord");
    d.check(d.cuEventSynchronize(e1.e), "cuEventSynchronize");
    if (i >= 3)
      us.push_back(elapsedUs(e0, e1));
  }
  d.cuStreamDestroy(s);
  return 2.0 * static_cast<double>(bytes) / (median(us) * 1e3);
}

Profile profileExecutable(Executable &exe, std::span<const DeviceTensor> inputs,
                          std::span<const DeviceTensor> outputs, int runs, double copyGBps) {
  const Program &prog = exe.program();
  const Device &dev = exe.device();
  Profile p;
  p.device = dev.properties().name;
  p.graph = prog.graphName;
  p.copyGBps = copyGBps > 0 ? copyGBps : measureCopyBandwidth(dev);
  p.runs = runs;
  dev.makeCurrent();
  exe.bind(inputs, outputs);
  const Driver &d = Driver::get();
  size_t n = prog.kernels.size();
  std::vector<std::vector<double>> times(n);
  std::vector<Event> events(n + 1);
  for (int r = 0; r < runs + 3; ++r) {
    for (size_t k = 0; k < n; ++k) {
      d.check(d.cuEventRecord(events[k].e, exe.stream()), "cuEventRecord");
      exe.launchKernel(k);
    }
    d.check(d.cuEventRecord(events[n].e, exe.stream()), "cuEventRecord");
    exe.synchronize();
    if (r < 3)
      continue;
    for (size_t k = 0; k < n; ++k)
      times[k].push_back(elapsedUs(events[k], events[k + 1]));
  }
  double start = 0;
  for (size_t k = 0; k < n; ++k) {
    const ProgramKernel &pk = prog.kernels[k];
    KernelProfile kp;
    kp.name = pk.name;
    kp.us = median(times[k]);
    if (!times[k].empty()) {
      kp.minUs = *std::min_element(times[k].begin(), times[k].end());
      kp.maxUs = *std::max_element(times[k].begin(), times[k].end());
    }
    kp.bytes = pk.bytesRead + pk.bytesWritten;
    kp.gbps = kp.us > 0 ? kp.bytes / (kp.us * 1e3) : 0;
    kp.copyFraction = p.copyGBps > 0 ? kp.gbps / p.copyGBps : 0;
    kp.flops = pk.flops;
    kp.intensity = kp.bytes ? static_cast<double>(kp.flops) / kp.bytes : 0;
    kp.grid = pk.grid;
    kp.block = pk.block;
    kp.blocksPerSM = exe.residentBlocks(k);
    kp.waves = computeWaves(pk.grid, dev.properties().smCount, kp.blocksPerSM);
    kp.resources = pk.resources;
    kp.dynamicShared = pk.dynamicShared;
    kp.startUs = start;
    start += kp.us;
    p.totalUs += kp.us;
    p.kernels.push_back(kp);
  }
  return p;
}

RunTiming timeExecutable(Executable &exe, std::span<const DeviceTensor> inputs,
                         std::span<const DeviceTensor> outputs, int runs, int warmup) {
  std::vector<std::vector<DeviceTensor>> in{{inputs.begin(), inputs.end()}},
      out{{outputs.begin(), outputs.end()}};
  return timeExecutableRotating(exe, in, out, runs, warmup);
}

RunTiming timeExecutableRotating(Executable &exe,
                                 std::span<const std::vector<DeviceTensor>> inputSets,
                         std::span<const std::vector<DeviceTensor>> outputSets, int runs,
                         int warmup) {
  const Driver &d = Driver::get();
  exe.device().makeCurrent();
  size_t sets = inputSets.size();
  assert(sets > 0 && sets == outputSets.size() && "one output set per input set");
  for (int i = 0; i < warmup; ++i)
    exe.enqueue(inputSets[i % sets], outputSets[i % sets]);
  exe.synchronize();
  std::vector<double> us;
  Event e0, e1;
  for (int i = 0; i < runs; ++i) {
    d.check(d.cuEventRecord(e0.e, exe.stream()), "cuEventRecord");
    exe.enqueue(inputSets[i % sets], outputSets[i % sets]);
    d.check(d.cuEventRecord(e1.e, exe.stream()), "cuEventRecord");
    d.check(d.cuEventSynchronize(e1.e), "cuEventSynchronize");
    us.push_back(elapsedUs(e0, e1));
  }
  RunTiming t;
  t.runs = runs;
  t.medianUs = median(us);
  t.minUs = *std::min_element(us.begin(), us.end());
  t.maxUs = *std::max_element(us.begin(), us.end());
  double sum = 0;
  for (double u : us)
    sum += u;
  t.meanUs = sum / runs;
  // Host cost: enqueue back to back, then wait once.
  auto h0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i)
    exe.enqueue(inputSets[0], outputSets[0]);
  exe.synchronize();
  t.hostUsPerRun =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() /
      runs;
  return t;
}

RunTiming timeKernelRotating(Executable &exe, size_t k,
                             std::span<const std::vector<DeviceTensor>> inputSets,
                             std::span<const std::vector<DeviceTensor>> outputSets, int runs,
                             int warmup) {
  const Driver &d = Driver::get();
  exe.device().makeCurrent();
  size_t sets = inputSets.size();
  assert(sets > 0 && sets == outputSets.size() && "one output set per input set");
  assert(k < exe.program().kernels.size() && "a kernel of the program");
  assert(runs > 0 && "at least one timed run");
  // All runs are enqueued with their events, then waited for once.
  std::vector<Event> starts(runs), ends(runs);
  for (int i = 0; i < warmup + runs; ++i) {
    exe.bind(inputSets[i % sets], outputSets[i % sets]);
    for (size_t before = 0; before < k; ++before)
      exe.launchKernel(before);
    if (i >= warmup)
      d.check(d.cuEventRecord(starts[i - warmup].e, exe.stream()), "cuEventRecord");
    exe.launchKernel(k);
    if (i >= warmup)
      d.check(d.cuEventRecord(ends[i - warmup].e, exe.stream()), "cuEventRecord");
  }
  exe.synchronize();
  std::vector<double> us;
  for (int i = 0; i < runs; ++i)
    us.push_back(elapsedUs(starts[i], ends[i]));
  RunTiming t;
  t.runs = runs;
  t.medianUs = median(us);
  t.minUs = *std::min_element(us.begin(), us.end());
  t.maxUs = *std::max_element(us.begin(), us.end());
  double sum = 0;
  for (double u : us)
    sum += u;
  t.meanUs = sum / runs;
  return t;
}

std::string formatProfile(const Profile &p) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("profile of graph '{0}' on {1}: median of {2} runs; copy bandwidth {3:f0} "
                      "GB/s\n",
                      p.graph, p.device, p.runs, p.copyGBps);
  os << llvm::formatv("{0,-30} {1,9} {2,12} {3,8} {4,7} {5,9} {6,7} {7,9} {8,6} {9,7} {10,7} {11,9}\n",
                      "kernel", "time(us)", "bytes", "GB/s", "%copy", "GFLOP/s", "FLOP/B",
                      "grid", "block", "blk/SM", "waves", "last-wave");
  for (const KernelProfile &k : p.kernels)
    os << llvm::formatv("{0,-30} {1,9:f2} {2,12} {3,8:f0} {4,6:f1}% {5,9:f1} {6,7:f2} {7,9} {8,6} "
                        "{9,7} {10,7:f2} {11,8:f0}%\n",
                        k.name, k.us, k.bytes, k.gbps, 100 * k.copyFraction,
                        k.us > 0 ? k.flops / (k.us * 1e3) : 0.0, k.intensity, k.grid, k.block,
                        k.blocksPerSM, k.waves.waves, 100 * k.waves.lastWaveFill);
  int64_t bytes = 0;
  for (const KernelProfile &k : p.kernels)
    bytes += k.bytes;
  os << llvm::formatv("{0,-30} {1,9:f2} {2,12} {3,8:f0} {4,6:f1}%\n", "total", p.totalUs, bytes,
                      p.totalUs > 0 ? bytes / (p.totalUs * 1e3) : 0.0,
                      p.totalUs > 0 && p.copyGBps > 0
                          ? 100 * bytes / (p.totalUs * 1e3) / p.copyGBps
                          : 0.0);
  return os.str();
}

std::string profileJson(const Profile &p) {
  llvm::json::Array ks;
  for (const KernelProfile &k : p.kernels)
    ks.push_back(llvm::json::Object{
        {"name", k.name},
        {"us", k.us},
        {"bytes", k.bytes},
        {"gbps", k.gbps},
        {"copy_fraction", k.copyFraction},
        {"flops", k.flops},
        {"intensity", k.intensity},
        {"grid", k.grid},
        {"block", static_cast<int64_t>(k.block)},
        {"blocks_per_sm", k.blocksPerSM},
        {"waves", k.waves.waves},
        {"last_wave_fill", k.waves.lastWaveFill},
        {"registers", static_cast<int64_t>(k.resources.registers)},
        {"spill_bytes", static_cast<int64_t>(k.resources.spillStores + k.resources.spillLoads)},
    });
  llvm::json::Object root{{"graph", p.graph},       {"device", p.device},
                          {"copy_gbps", p.copyGBps}, {"runs", p.runs},
                          {"total_us", p.totalUs},   {"kernels", std::move(ks)}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return os.str();
}

std::string profileChromeTrace(const Profile &p) {
  llvm::json::Array events;
  for (const KernelProfile &k : p.kernels)
    events.push_back(llvm::json::Object{
        {"name", k.name},
        {"cat", "kernel"},
        {"ph", "X"},
        {"ts", k.startUs},
        {"dur", k.us},
        {"pid", 0},
        {"tid", 0},
        {"args", llvm::json::Object{{"bytes", k.bytes},
                                    {"GB/s", k.gbps},
                                    {"grid", k.grid},
                                    {"block", static_cast<int64_t>(k.block)},
                                    {"waves", k.waves.waves}}}});
  llvm::json::Object root{{"traceEvents", std::move(events)},
                          {"displayTimeUnit", "ns"},
                          {"otherData", llvm::json::Object{{"graph", p.graph}, {"device", p.device}}}};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return os.str();
}

} // namespace minijit
