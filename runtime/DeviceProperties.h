//===- runtime/DeviceProperties.h - what a GPU offers ----------*- C++ -*-===//
// The properties of a device that schedules depend on (SM count, shared
// memory, registers, L2). Read from the driver when a GPU is present; without
// one the compiler assumes the H200 minijit is tuned on.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Target.h"

#include <cstdint>
#include <string>

namespace minijit {

/// A GPU's limits as the compiler sees them; the defaults are the H200's.
struct DeviceProperties {
  std::string name = "NVIDIA H200 (assumed: no GPU was queried)"; ///< the driver's name
  int ccMajor = 9;                          ///< compute capability, major (9 is Hopper)
  int ccMinor = 0;                          ///< compute capability, minor
  int smCount = 132;                        ///< streaming multiprocessors
  int maxThreadsPerBlock = 1024;            ///< threads one block may have
  int maxThreadsPerSM = 2048;               ///< resident threads per SM
  int maxBlocksPerSM = 32;                  ///< resident blocks per SM
  int regsPerSM = 65536;                    ///< 32-bit registers per SM
  int regsPerBlock = 65536;                 ///< 32-bit registers one block may use
  int64_t sharedPerBlock = 48 * 1024;       ///< without opting in
  int64_t sharedPerBlockOptin = 227 * 1024; ///< with cuFuncSetAttribute
  int64_t sharedPerSM = 228 * 1024;         ///< bytes of shared memory per SM
  int64_t l2Bytes = 60 * 1024 * 1024;       ///< bytes of L2 cache
  int64_t totalMemory = 0;                  ///< bytes; 0 when unknown
  int clockKHz = 1980000;                   ///< the SM clock
  int driverVersion = 0;                    ///< cuDriverGetVersion (13000); 0 when not queried
  bool queried = false;                     ///< true when read from a real device

  /// The device's target (compute capability, not the "a" variant).
  Target target() const { return {ccMajor, ccMinor, false}; }
  /// Its NVRTC spelling, e.g. "sm_90".
  std::string arch() const { return target().name(); }
  /// The H200's properties, used when no GPU is present.
  static DeviceProperties assumedH200() { return DeviceProperties(); }
};

} // namespace minijit
