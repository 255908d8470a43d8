//===- runtime/Profiler.h - where the time goes ----------------*- C++ -*-===//
// Times each launch with CUDA events (median over runs) and places it on a
// roofline: bytes moved, effective bandwidth against a device-to-device copy
// measured on the same GPU, FLOPs, arithmetic intensity, and how its blocks
// fill the SMs (resident blocks per SM, waves, the fill of the last wave).
// Reports as a table, JSON, or a Chrome trace (chrome://tracing, Perfetto).
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Executable.h"

#include <string>
#include <vector>

namespace minijit {

/// Waves of blocks over the SMs, as the lecture counts them.
struct WaveMath {
  int64_t capacity = 0;  ///< blocks resident at once: SMs x blocks per SM
  double waves = 0;      ///< blocks / capacity
  double lastWaveFill = 0; ///< the last wave's share of capacity (1 when full)
};
WaveMath computeWaves(int64_t blocks, int sms, int blocksPerSM);

struct KernelProfile {
  std::string name;
  double us = 0;         ///< median time
  int64_t bytes = 0;     ///< read + written, each buffer once
  double gbps = 0;       ///< bytes / time
  double copyFraction = 0; ///< gbps / the copy's bandwidth
  int64_t flops = 0;
  double intensity = 0;  ///< flops / bytes
  int64_t grid = 0;
  unsigned block = 0;
  int blocksPerSM = 0;
  WaveMath waves;
  KernelResources resources;
  double startUs = 0;    ///< offset within one run (for the trace)
};

struct Profile {
  std::string device;
  std::string graph;
  double copyGBps = 0;   ///< the same device's device-to-device copy
  int runs = 0;
  double totalUs = 0;    ///< sum of the kernels' medians
  std::vector<KernelProfile> kernels;
};

/// The bandwidth of a device-to-device copy of `bytes` (bytes read plus bytes
/// written over the median time of `runs` copies), in GB/s.
double measureCopyBandwidth(const Device &dev, size_t bytes = size_t(1) << 30, int runs = 20);

/// Runs the program `runs` times (after 3 warm-up runs) with events around
/// every launch. `copyGBps` of 0 measures the copy first.
Profile profileExecutable(Executable &exe, llvm::ArrayRef<DeviceTensor> inputs,
                          llvm::ArrayRef<DeviceTensor> outputs, int runs = 100,
                          double copyGBps = 0);

/// Times whole runs with events: the median, after warm-up runs.
struct RunTiming {
  double medianUs = 0, minUs = 0, meanUs = 0;
  int runs = 0;
  double hostUsPerRun = 0; ///< wall time of `runs` back-to-back enqueues / runs
};
RunTiming timeExecutable(Executable &exe, llvm::ArrayRef<DeviceTensor> inputs,
                         llvm::ArrayRef<DeviceTensor> outputs, int runs = 100, int warmup = 10);
/// The same, run i using buffer set i % sets (so a small workload still
/// reads and writes beyond the L2 across runs).
RunTiming timeExecutableRotating(Executable &exe,
                                 llvm::ArrayRef<std::vector<DeviceTensor>> inputSets,
                         llvm::ArrayRef<std::vector<DeviceTensor>> outputSets, int runs,
                         int warmup);

std::string formatProfile(const Profile &p);
std::string profileJson(const Profile &p);
/// Chrome trace events (one run's launches laid end to end at their medians).
std::string profileChromeTrace(const Profile &p);

} // namespace minijit
