//===- samples/mlp_multi_gpu.cpp - the MLP on every GPU of the host --------===//
// The lecture's MLP (samples/Lecture.h) with its batch split by rows over
// every GPU of the host: compiled once per architecture, loaded on each
// device, one thread per device running its slice. The slices' outputs are
// gathered on the host (a device-to-host copy each) and checked against the
// CPU reference at a modest size; then a compute-bound size (f16, dim 4096,
// 4 layers, 8192 rows per device) is timed: each device's time with all of
// them busy, and the rate of all the devices at once against device 0 alone
// running every slice in turn. With one GPU the batch is one slice, and the
// sample says so.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "tools/Harness.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <thread>

using namespace minijit;

namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Runs fn(0) .. fn(n - 1), each on a thread of its own, released together;
/// once all have finished, rethrows the first exception one of them threw.
void onEachDevice(size_t n, const std::function<void(size_t)> &fn) {
  std::atomic<size_t> ready{0};
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (size_t d = 0; d < n; ++d)
    threads.emplace_back([&, d] {
      ++ready;
      while (ready.load() < n)
        std::this_thread::yield();
      try {
        fn(d);
      } catch (...) {
        errors[d] = std::current_exception();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (std::exception_ptr &e : errors)
    if (e)
      std::rethrow_exception(e);
}

/// The MLP's inputs (x, then the weights), the weights scaled by 1/sqrt(dim)
/// so that activations stay O(1) through the layers, as samples/mlp.cpp.
std::vector<HostTensor> mlpInputs(const Graph &g, uint64_t seed) {
  std::vector<HostTensor> ins = randomInputs(g, seed);
  double scale = 1 / std::sqrt(static_cast<double>(ins[0].shape()[1]));
  for (size_t i = 1; i < ins.size(); ++i)
    for (int64_t e = 0; e < ins[i].numel(); ++e)
      ins[i].set(e, ins[i].get(e) * scale);
  return ins;
}

size_t rowBytes(const HostTensor &t) {
  return static_cast<size_t>(t.shape()[1]) * dtypeSize(t.dtype());
}

/// Rows [first, first + count) of a row-major matrix.
HostTensor rowsOf(const HostTensor &t, int64_t first, int64_t count) {
  HostTensor part(t.dtype(), {count, t.shape()[1]});
  std::memcpy(part.data(), static_cast<const char *>(t.data()) + first * rowBytes(t),
              part.bytes());
  return part;
}

/// Copies `part` into the rows of `whole` from row `first` on.
void putRows(HostTensor &whole, const HostTensor &part, int64_t first) {
  std::memcpy(static_cast<char *>(whole.data()) + first * rowBytes(whole), part.data(),
              part.bytes());
}

/// A graph's program on every device: compiled once per architecture (for
/// the first device of it), that one compile loaded on each device of the
/// architecture.
struct LoadedEverywhere {
  std::vector<CompiledGraph> compiles;      ///< one per architecture, in the order met
  std::vector<double> compileMs;            ///< the time of each
  std::vector<std::vector<int>> devicesOf;  ///< per compile, the ordinals it is loaded on
  std::vector<Executable> executables;      ///< one per device
};

LoadedEverywhere loadOnEveryDevice(const Graph &g, const std::vector<Device> &devices) {
  LoadedEverywhere l;
  for (const Device &dev : devices) {
    size_t c = 0;
    while (c < l.compiles.size() && !loadsOn(l.compiles[c].program, dev.properties()))
      ++c;
    if (c == l.compiles.size()) {
      CompileOptions opt;
      opt.device = dev.properties();
      Clock::time_point t0 = Clock::now();
      l.compiles.push_back(compileGraph(g, opt));
      l.compileMs.push_back(msBetween(t0, Clock::now()));
      l.devicesOf.emplace_back();
    }
    l.devicesOf[c].push_back(dev.ordinal());
    l.executables.emplace_back(dev, l.compiles[c].program);
  }
  return l;
}

void printLoads(const LoadedEverywhere &l) {
  for (size_t c = 0; c < l.compiles.size(); ++c) {
    std::string ordinals;
    for (int o : l.devicesOf[c])
      ordinals += (ordinals.empty() ? "" : ", ") + std::to_string(o);
    const CompiledGraph &cg = l.compiles[c];
    llvm::outs() << llvm::formatv("  compiled once for {0}: {1} kernels in {2:f0} ms (NVRTC, or "
                                  "the kernel cache); loaded on device{3} {4}\n",
                                  cg.program.arch, cg.numKernels(), l.compileMs[c],
                                  l.devicesOf[c].size() == 1 ? "" : "s", ordinals);
  }
}

/// Runs the MLP (f16, dim 512, 4 layers) on a batch of 64 rows per device,
/// each device its slice from a thread of its own, gathers the slices on the
/// host and checks the whole batch against the CPU reference.
bool checkSplitBatch(const std::vector<Device> &devices) {
  const int64_t dim = 512, rows = 64;
  const int layers = 4;
  int64_t n = static_cast<int64_t>(devices.size());
  Graph slice = lecture::mlp(dim, layers, rows, DType::F16);
  Graph whole = lecture::mlp(dim, layers, rows * n, DType::F16);
  llvm::outs() << llvm::formatv("check: dim {0}, {1} layers, f16, {2} rows = {3} rows per device "
                                "x {4} device{5}\n",
                                dim, layers, rows * n, rows, n, n == 1 ? "" : "s");
  LoadedEverywhere l = loadOnEveryDevice(slice, devices);
  printLoads(l);
  CheckedRun r;
  r.inputs = mlpInputs(whole, 3);
  std::vector<HostTensor> parts(devices.size());
  onEachDevice(devices.size(), [&](size_t d) {
    const Device &dev = devices[d];
    std::vector<DeviceTensor> in{
        DeviceTensor::fromHost(dev, rowsOf(r.inputs[0], static_cast<int64_t>(d) * rows, rows))};
    for (size_t i = 1; i < r.inputs.size(); ++i)
      in.push_back(DeviceTensor::fromHost(dev, r.inputs[i]));
    Executable &exe = l.executables[d];
    std::vector<DeviceTensor> out = exe.allocateOutputs();
    poisonTensors(out); // an element no kernel writes fails the check
    exe.enqueue(in, out);
    exe.synchronize();
    parts[d] = out[0].download();
  });
  r.outputs.emplace_back(DType::F16, Shape{rows * n, dim});
  for (size_t d = 0; d < parts.size(); ++d)
    putRows(r.outputs[0], parts[d], static_cast<int64_t>(d) * rows);
  if (l.compiles.size() == 1) {
    r.compiled = l.compiles[0]; // which values the program stores, so rounds to f16
    checkOutputs(whole, r);
    llvm::outs() << llvm::formatv("  gathered on the host ({0} device-to-host cop{1}), against "
                                  "the CPU reference: {2}\n",
                                  n, n == 1 ? "y" : "ies",
                                  (r.ok ? "" : "MISMATCH: ") + r.compare[0].summary);
    return r.ok;
  }
  // Devices of several architectures: each slice of the gathered batch
  // against the reference rounded as its own architecture's program stores.
  bool ok = true;
  for (size_t d = 0; d < devices.size(); ++d) {
    CheckedRun part;
    for (size_t c = 0; c < l.compiles.size(); ++c)
      if (llvm::is_contained(l.devicesOf[c], devices[d].ordinal()))
        part.compiled = l.compiles[c];
    part.inputs = r.inputs;
    part.inputs[0] = rowsOf(r.inputs[0], static_cast<int64_t>(d) * rows, rows);
    part.outputs.push_back(rowsOf(r.outputs[0], static_cast<int64_t>(d) * rows, rows));
    checkOutputs(slice, part);
    llvm::outs() << llvm::formatv("  rows {0} to {1}, gathered from device {2}, against the CPU "
                                  "reference: {3}\n",
                                  d * rows, (d + 1) * rows - 1, devices[d].ordinal(),
                                  (part.ok ? "" : "MISMATCH: ") + part.compare[0].summary);
    ok = ok && part.ok;
  }
  return ok;
}

/// Times the MLP at a compute-bound size: f16, dim 4096, 4 layers, 8192 rows
/// per device.
void timeSplitBatch(const std::vector<Device> &devices) {
  const int64_t dim = 4096, rows = 8192;
  const int layers = 4, runs = 50, warmup = 5;
  size_t n = devices.size();
  double flopsPerSlice = 2.0 * rows * dim * dim * layers;
  Graph slice = lecture::mlp(dim, layers, rows, DType::F16);
  llvm::outs() << llvm::formatv("\ntime: dim {0}, {1} layers, f16, {2} rows per device ({3:f2} "
                                "TFLOP per slice), median of {4} runs\n",
                                dim, layers, rows, flopsPerSlice / 1e12, runs);
  LoadedEverywhere l = loadOnEveryDevice(slice, devices);
  printLoads(l);

  // One model (the weights), and a slice of the batch per device.
  std::vector<HostTensor> host = mlpInputs(slice, 3);
  std::vector<HostTensor> xs(n);
  std::vector<std::vector<DeviceTensor>> in(n), out(n);
  onEachDevice(n, [&](size_t d) {
    xs[d] = HostTensor::random(DType::F16, {rows, dim}, 100 + d);
    in[d].push_back(DeviceTensor::fromHost(devices[d], xs[d]));
    for (size_t i = 1; i < host.size(); ++i)
      in[d].push_back(DeviceTensor::fromHost(devices[d], host[i]));
    out[d] = l.executables[d].allocateOutputs();
  });

  // Each device's time while all of them run.
  std::vector<RunTiming> timing(n);
  onEachDevice(n, [&](size_t d) {
    timing[d] = timeExecutable(l.executables[d], in[d], out[d], runs, warmup);
  });
  llvm::outs() << llvm::formatv("  {0,-8} {1,-24} {2,8} {3,12} {4,10}\n", "device", "name", "rows",
                                "median (ms)", "TFLOP/s");
  for (size_t d = 0; d < n; ++d)
    llvm::outs() << llvm::formatv("  {0,-8} {1,-24} {2,8} {3,12:f3} {4,10:f1}\n",
                                  devices[d].ordinal(), devices[d].properties().name, rows,
                                  timing[d].medianUs / 1e3,
                                  flopsPerSlice / (timing[d].medianUs * 1e6));

  // Every device at once: `runs` batches of n slices, back to back, from
  // the first thread's start to the last one's end.
  std::vector<Clock::time_point> start(n), end(n);
  onEachDevice(n, [&](size_t d) {
    Executable &exe = l.executables[d];
    start[d] = Clock::now();
    for (int i = 0; i < runs; ++i)
      exe.enqueue(in[d], out[d]);
    exe.synchronize();
    end[d] = Clock::now();
  });
  double allMs = msBetween(*std::min_element(start.begin(), start.end()),
                           *std::max_element(end.begin(), end.end())) /
                 runs;

  // Device 0 alone, every slice in turn (the same work, the same program).
  Executable &first = l.executables[0];
  std::vector<std::vector<DeviceTensor>> in0(n), out0(n);
  for (size_t s = 0; s < n; ++s) {
    in0[s] = in[0];
    in0[s][0] = DeviceTensor::fromHost(devices[0], xs[s]);
    out0[s] = first.allocateOutputs();
  }
  for (int i = 0; i < warmup; ++i)
    first.enqueue(in0[i % n], out0[i % n]);
  first.synchronize();
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < runs; ++i)
    for (size_t s = 0; s < n; ++s)
      first.enqueue(in0[s], out0[s]);
  first.synchronize();
  double oneMs = msBetween(t0, Clock::now()) / runs;

  double batchRows = static_cast<double>(rows) * n, batchFlops = flopsPerSlice * n;
  llvm::outs() << llvm::formatv("  {0,-54} {1,12} {2,9} {3,9} {4,8}\n",
                                llvm::formatv("a batch of {0} rows", rows * static_cast<int64_t>(n)),
                                "ms", "M rows/s", "TFLOP/s", "speed-up");
  auto line = [&](const std::string &how, double ms) {
    llvm::outs() << llvm::formatv("    {0,-52} {1,12:f3} {2,9:f2} {3,9:f1} {4,7:f2}x\n", how, ms,
                                  batchRows / (ms * 1e3), batchFlops / (ms * 1e9), oneMs / ms);
  };
  line(llvm::formatv("device {0} alone, the {1} slice{2} in turn", devices[0].ordinal(), n,
                     n == 1 ? "" : "s"),
       oneMs);
  line(llvm::formatv("{0} device{1} at once, a thread each", n, n == 1 ? "" : "s"), allMs);
  if (n == 1)
    llvm::outs() << "  one GPU on this host: the batch is its one slice, so all devices at once "
                    "are device 0 alone (1x by construction); with several GPUs each runs its "
                    "slice at the same time\n";
}

} // namespace

int main() {
  try {
    std::string why;
    if (!Device::available(&why)) {
      CompiledGraph c = compileGraph(lecture::mlp(4096, 4, 8192, DType::F16));
      llvm::outs() << "--- the MLP on every GPU of the host ---\n"
                   << llvm::formatv("compiled for {0} (an assumed H200): {1} kernels, loaded "
                                    "once per GPU where there are GPUs.\n",
                                    c.program.arch, c.numKernels())
                   << "No GPU here (" << why << "): nothing to run.\n";
      return 0;
    }
    int count = Device::count();
    std::vector<Device> devices;
    for (int i = 0; i < count; ++i)
      devices.push_back(Device::open(i));
    llvm::outs() << llvm::formatv("--- the MLP on every GPU of the host: {0} GPU{1} ---\n", count,
                                  count == 1 ? "" : "s");
    for (const Device &d : devices)
      llvm::outs() << llvm::formatv("  device {0}: {1} ({2}, {3} SMs)\n", d.ordinal(),
                                    d.properties().name, d.properties().arch(),
                                    d.properties().smCount);
    if (count == 1)
      llvm::outs() << "  one device: the batch is split into one slice\n";
    bool ok = checkSplitBatch(devices);
    timeSplitBatch(devices);
    return ok ? 0 : 1;
  } catch (const Error &e) {
    llvm::errs() << "error: " << e.what() << "\n";
    return 1;
  }
}
