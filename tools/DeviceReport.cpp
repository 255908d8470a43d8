//===- tools/DeviceReport.cpp - what `minijit devices` says of a GPU -------===//
#include "tools/DeviceReport.h"

#include "runtime/PeakRates.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace minijit {

namespace {

std::string kib(int64_t bytes) {
  if (bytes % 1024 == 0)
    return llvm::formatv("{0} KiB", bytes / 1024).str();
  return llvm::formatv("{0} bytes", bytes).str();
}

std::string mib(int64_t bytes) {
  if (bytes % (1024 * 1024) == 0)
    return llvm::formatv("{0} MiB", bytes / (1024 * 1024)).str();
  return llvm::formatv("{0:f1} MiB", bytes / 1048576.0).str();
}

std::string gib(int64_t bytes) { return llvm::formatv("{0:f1} GiB", bytes / 1073741824.0).str(); }

} // namespace

std::string describeDevice(const DeviceFacts &d) {
  const DeviceProperties &p = d.properties;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("device {0}: {1}\n", d.ordinal, p.name);
  os << llvm::formatv("  compute capability {0}.{1} ({2}), {3} SMs at {4} MHz\n", p.ccMajor,
                      p.ccMinor, p.arch(), p.smCount, p.clockKHz / 1000);
  os << llvm::formatv("  shared memory: {0} per block ({1} opted in), {2} per SM\n",
                      kib(p.sharedPerBlock), kib(p.sharedPerBlockOptin), kib(p.sharedPerSM));
  os << llvm::formatv("  registers: {0} per block, {1} per SM; threads: {2} per block, {3} per "
                      "SM; at most {4} blocks per SM\n",
                      p.regsPerBlock, p.regsPerSM, p.maxThreadsPerBlock, p.maxThreadsPerSM,
                      p.maxBlocksPerSM);
  os << "  L2: " << mib(p.l2Bytes) << "; memory: ";
  if (p.totalMemory <= 0)
    os << "unknown";
  else if (d.freeBytes >= 0)
    os << gib(p.totalMemory) << " (" << gib(d.freeBytes) << " free)";
  else
    os << gib(p.totalMemory);
  os << "\n";
  std::vector<PeakRate> peaks = peakRates(p);
  if (peaks.empty()) {
    os << "  peak rates: not known for " << p.arch() << "\n";
  } else {
    os << "  peak rates:";
    for (size_t i = 0; i < peaks.size(); ++i)
      os << llvm::formatv("{0} {1} on {2} {3:f1} TFLOP/s", i ? ";" : "", peaks[i].dtype,
                          peaks[i].unit == "cuda_cores" ? "CUDA cores" : "tensor cores",
                          peaks[i].flopsPerSecond / 1e12);
    os << " (from the SM clock)\n";
  }
  if (d.copyGBps > 0)
    os << llvm::formatv("  copy bandwidth: {0:f0} GB/s (a device-to-device copy, measured)\n",
                        d.copyGBps);
  return os.str();
}

} // namespace minijit
