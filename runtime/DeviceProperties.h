//===- runtime/DeviceProperties.h - what a GPU offers ----------*- C++ -*-===//
// The properties of a device that schedules depend on (SM count, shared
// memory, registers, L2). Read from the driver when a GPU is present; without
// one the compiler assumes the H200 minijit is tuned on.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace minijit {

struct DeviceProperties {
  std::string name = "NVIDIA H200 (assumed: no GPU was queried)";
  int ccMajor = 9, ccMinor = 0;
  int smCount = 132;
  int maxThreadsPerBlock = 1024;
  int maxThreadsPerSM = 2048;
  int maxBlocksPerSM = 32;
  int regsPerSM = 65536;
  int regsPerBlock = 65536;
  int64_t sharedPerBlock = 48 * 1024;        ///< without opting in
  int64_t sharedPerBlockOptin = 227 * 1024;  ///< with cuFuncSetAttribute
  int64_t sharedPerSM = 228 * 1024;
  int64_t l2Bytes = 60 * 1024 * 1024;
  int64_t totalMemory = 0;                   ///< bytes; 0 when unknown
  int clockKHz = 1980000;
  bool queried = false; ///< true when read from a real device

  /// The NVRTC target, e.g. "sm_90".
  std::string arch() const { return "sm_" + std::to_string(ccMajor * 10 + ccMinor); }
  /// The H200's properties, used when no GPU is present.
  static DeviceProperties assumedH200() { return DeviceProperties(); }
};

} // namespace minijit
