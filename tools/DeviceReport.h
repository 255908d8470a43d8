//===- tools/DeviceReport.h - what `minijit devices` says of a GPU -*- C++ -*-===//
// One GPU's properties in words: those the schedules read (compute
// capability, SMs, shared memory per block and per SM, registers, L2), its
// memory, clock and the peak rates they give, and a measured copy bandwidth
// when there is one. Needs no driver: the CLI reads the facts from each
// device and hands them here.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DeviceProperties.h"

#include <cstdint>
#include <string>

namespace minijit {

/// What is known of one GPU.
struct DeviceFacts {
  int ordinal = 0;             ///< the driver's number for it
  DeviceProperties properties; ///< as Device::properties() reads them
  int64_t freeBytes = -1;      ///< free memory now; -1 when not asked
  double copyGBps = 0;         ///< a measured device-to-device copy; 0 when not measured
};

/// The lines `minijit devices` prints for one GPU, each ending in a newline:
///   device 0: NVIDIA H200
///     compute capability 9.0 (sm_90), 132 SMs at 1980 MHz
///     ...
std::string describeDevice(const DeviceFacts &d);

} // namespace minijit
