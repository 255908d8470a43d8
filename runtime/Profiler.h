//===- runtime/Profiler.h - where the time goes ----------------*- C++ -*-===//
// Times each launch with CUDA events (median over runs) and places it on a
// roofline: bytes moved, effective bandwidth against a device-to-device copy
// measured on the same GPU, FLOPs, arithmetic intensity, and how its blocks
// fill the SMs (resident blocks per SM, waves, the fill of the last wave).
// Reports as a table, JSON, or a Chrome trace (chrome://tracing, Perfetto).
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Executable.h"

#include <span>
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

/// One kernel's place on the roofline: time, traffic, work and occupancy.
struct KernelProfile {
  std::string name;      ///< the kernel's entry point
  double us = 0;         ///< median time
  double minUs = 0;      ///< the fastest of the timed runs
  double maxUs = 0;      ///< the slowest of the timed runs
  int64_t bytes = 0;     ///< read + written, each buffer once
  double gbps = 0;       ///< bytes / time
  double copyFraction = 0; ///< gbps / the copy's bandwidth
  int64_t flops = 0;     ///< floating-point operations per run
  double intensity = 0;  ///< flops / bytes
  int64_t grid = 0;      ///< blocks launched
  unsigned block = 0;    ///< threads per block
  int blocksPerSM = 0;   ///< resident blocks per SM (occupancy)
  WaveMath waves;        ///< how the grid fills the SMs
  KernelResources resources; ///< registers, shared memory, spills
  unsigned dynamicShared = 0; ///< bytes of dynamic shared memory per block
  double startUs = 0;    ///< offset within one run (for the trace)
};

/// What profileExecutable measured: one entry per kernel, in launch order.
struct Profile {
  std::string device;    ///< the GPU's name
  std::string graph;     ///< the graph's name
  double copyGBps = 0;   ///< the same device's device-to-device copy
  int runs = 0;          ///< timed runs per kernel
  double totalUs = 0;    ///< sum of the kernels' medians
  std::vector<KernelProfile> kernels; ///< in launch order
};

/// The bandwidth of a device-to-device copy of `bytes` (bytes read plus bytes
/// written over the median time of `runs` copies), in GB/s.
double measureCopyBandwidth(const Device &dev, size_t bytes = size_t(1) << 30, int runs = 20);

/// Runs the program `runs` times (after 3 warm-up runs) with events around
/// every launch. `copyGBps` of 0 measures the copy first.
Profile profileExecutable(Executable &exe, std::span<const DeviceTensor> inputs,
                          std::span<const DeviceTensor> outputs, int runs = 100,
                          double copyGBps = 0);

/// The time of whole runs, from events on the stream.
struct RunTiming {
  double medianUs = 0;   ///< the median run
  double minUs = 0;      ///< the fastest run
  double maxUs = 0;      ///< the slowest run
  double meanUs = 0;     ///< the mean over the runs
  int runs = 0;          ///< timed runs (after the warm-up)
  double hostUsPerRun = 0; ///< wall time of `runs` back-to-back enqueues / runs
};
/// Times whole runs with events: the median, after `warmup` untimed runs.
RunTiming timeExecutable(Executable &exe, std::span<const DeviceTensor> inputs,
                         std::span<const DeviceTensor> outputs, int runs = 100, int warmup = 10);
/// The same, run i using buffer set i % sets (so a small workload still
/// reads and writes beyond the L2 across runs).
RunTiming timeExecutableRotating(Executable &exe,
                                 std::span<const std::vector<DeviceTensor>> inputSets,
                         std::span<const std::vector<DeviceTensor>> outputSets, int runs,
                         int warmup);

/// Times kernel `k` of `exe` alone: the median of `runs` launches after
/// `warmup` untimed ones. Run i binds buffer set i % sets and launches the
/// kernels before `k` untimed first, so that `k` reads what they write (and
/// a small workload still reads beyond the L2 across runs).
RunTiming timeKernelRotating(Executable &exe, size_t k,
                             std::span<const std::vector<DeviceTensor>> inputSets,
                             std::span<const std::vector<DeviceTensor>> outputSets, int runs,
                             int warmup);

std::string formatProfile(const Profile &p);
std::string profileJson(const Profile &p);
/// Chrome trace events (one run's launches laid end to end at their medians).
std::string profileChromeTrace(const Profile &p);

} // namespace minijit
