//===- runtime/PeakRates.cpp - the roofs of the roofline ------------------===//
#include "runtime/PeakRates.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit {

namespace {

/// FLOPs per clock per SM of one unit on one dtype, for one compute capability.
struct TableRow {
  int cc;           ///< major * 10 + minor
  const char *unit;
  const char *dtype;
  double flopsPerClock;
  const char *what; ///< the unit as the architecture's documents count it
};

// CUDA cores: FP32 lanes per SM x 2 (a fused multiply-add is two FLOPs).
// Tensor cores: dense matrix FMAs per clock per SM x 2, with f32
// accumulation, for the data-centre parts whose rate does not depend on the
// product (consumer parts of 7.5, 8.6, 8.9 halve it with f32 accumulation).
constexpr TableRow kTable[] = {
    {70, "cuda_cores", "f32", 128, "64 FP32 lanes, FMA"},
    {75, "cuda_cores", "f32", 128, "64 FP32 lanes, FMA"},
    {80, "cuda_cores", "f32", 128, "64 FP32 lanes, FMA"},
    {86, "cuda_cores", "f32", 256, "128 FP32 lanes, FMA"},
    {87, "cuda_cores", "f32", 256, "128 FP32 lanes, FMA"},
    {89, "cuda_cores", "f32", 256, "128 FP32 lanes, FMA"},
    {90, "cuda_cores", "f32", 256, "128 FP32 lanes, FMA"},
    {70, "tensor_cores", "f16", 1024, "8 tensor cores x 64 FMA"},
    {80, "tensor_cores", "f16", 2048, "4 tensor cores x 256 FMA"},
    {80, "tensor_cores", "bf16", 2048, "4 tensor cores x 256 FMA"},
    {90, "tensor_cores", "f16", 4096, "4 tensor cores x 512 FMA"},
    {90, "tensor_cores", "bf16", 4096, "4 tensor cores x 512 FMA"},
};

} // namespace

std::vector<PeakRate> peakRates(const DeviceProperties &dev) {
  std::vector<PeakRate> peaks;
  if (dev.clockKHz <= 0 || dev.smCount <= 0)
    return peaks;
  int cc = dev.ccMajor * 10 + dev.ccMinor;
  double mhz = dev.clockKHz / 1000.0;
  for (const TableRow &row : kTable) {
    if (row.cc != cc)
      continue;
    PeakRate p;
    p.unit = row.unit;
    p.dtype = row.dtype;
    p.flopsPerClockPerSM = row.flopsPerClock;
    p.flopsPerSecond = dev.smCount * (dev.clockKHz * 1e3) * row.flopsPerClock;
    p.source = llvm::formatv("computed: {0} SMs x {1:f0} MHz{2} x {3:f0} FLOP/clock/SM (table: "
                             "sm_{4} {5}, {6}{7})",
                             dev.smCount, mhz,
                             dev.queried ? " (the driver's maximum SM clock)" : " (assumed)",
                             row.flopsPerClock, cc,
                             llvm::StringRef(row.unit) == "cuda_cores" ? "CUDA cores"
                                                                       : "tensor cores",
                             row.what,
                             llvm::StringRef(row.unit) == "tensor_cores"
                                 ? ", dense, f32 accumulation"
                                 : "")
                   .str();
    peaks.push_back(std::move(p));
  }
  return peaks;
}

} // namespace minijit
