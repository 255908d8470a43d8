//===- runtime/PeakRates.h - the roofs of the roofline ---------*- C++ -*-===//
// A GPU's peak arithmetic rate per unit and dtype (CUDA cores in f32, tensor
// cores in f16 and bf16), computed from its properties (SMs, SM clock) and a
// table of FLOPs per clock per SM for the architectures named there. The
// profiler's JSON carries them so a plot can draw one compute roof per unit.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DeviceProperties.h"

#include <string>
#include <vector>

namespace minijit {

/// One compute roof: what one kind of unit does at most on one dtype.
struct PeakRate {
  std::string unit;      ///< "cuda_cores" or "tensor_cores"
  std::string dtype;     ///< the operands' dtype: "f32", "f16", "bf16"
  double flopsPerClockPerSM = 0; ///< from the table (dense, f32 accumulation)
  double flopsPerSecond = 0;     ///< SMs x clock x flopsPerClockPerSM
  /// How the figure was made, e.g. "computed: 132 SMs x 1980 MHz x 256
  /// FLOP/clock/SM (table: sm_90 CUDA cores, f32 FMA)".
  std::string source;
};

/// The peaks of `dev` from the table of FLOPs per clock per SM by compute
/// capability: CUDA cores in f32 for 7.0 to 9.0, tensor cores (dense, f32
/// accumulation) for 7.0 (f16), 8.0 and 9.0 (f16, bf16). An architecture
/// the table does not name gets no entry for that unit (never a guess).
/// A clock of 0 (a driver that does not report it) gives no entries.
std::vector<PeakRate> peakRates(const DeviceProperties &dev);

} // namespace minijit
