//===- runtime/ProfileJson.h - the profile as data, for the plots -*- C++ -*-===//
// Writes what the profiler measured as versioned JSON (docs/PROFILE_JSON.md):
// per run the device, its measured copy bandwidth and its peak FLOP/s per
// unit and dtype; per kernel its name, schedule, times, bytes, FLOPs by unit
// and dtype, rates, launch geometry, waves and the reasons the kernel ends
// where it ends. `minijit run|compare --profile-json`, the benchmark suite and
// its sweeps all write these records; scripts/plot.py reads them.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/PeakRates.h"
#include "runtime/Profiler.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace minijit {

/// The version of the JSON written here. scripts/plot.py refuses any other;
/// a change to a field's name or meaning raises it.
constexpr int kProfileSchema = 1;

/// FLOPs done by one kind of unit on one dtype.
struct FlopCount {
  std::string unit;  ///< "cuda_cores" or "tensor_cores" (as in PeakRate)
  std::string dtype; ///< "f32", "f16", "bf16"
  int64_t flops = 0;
};

/// What the compiler knows about a kernel and the runtime's Program does not:
/// its template, its schedule, where its FLOPs run and why it was cut there.
struct KernelDescription {
  /// The schedule's template: "pointwise", "inner_row", "outer_col",
  /// "matmul_simt", "matmul_mma"; empty when unknown.
  std::string kind;
  std::string schedule; ///< one line, as --emit=fused prints it
  /// By unit and dtype; empty: all of the kernel's FLOPs on CUDA cores in f32.
  std::vector<FlopCount> flops;
  /// Why each value the kernel writes is stored (and, for a value kept out of
  /// the kernel of its consumer, why), as --emit=fused prints them.
  std::vector<std::string> fusionReasons;
};

/// One graph profiled in one mode.
struct ProfiledRun {
  std::string label;  ///< "fused" or "unfused"
  bool fusion = true; ///< the compile's fusion switch
  Profile profile;    ///< as profileExecutable measured it
  /// One per profile.kernels entry; missing entries are written as unknown.
  std::vector<KernelDescription> kernels;
};

/// Today's date and time in UTC, "2026-12-01T09:30:00Z".
std::string utcTimestamp();

/// The device object: name, arch, SMs, clock, the copy bandwidth measured in
/// this process and the peaks of peakRates(dev).
llvm::json::Object deviceJson(const DeviceProperties &dev, double copyGBps);

/// One kernel's record (`index` is its place in launch order).
llvm::json::Object kernelJson(const KernelProfile &k, const KernelDescription &d, size_t index);

/// Every kernel of `run`, in launch order.
llvm::json::Array kernelsJson(const ProfiledRun &run);

/// One run: its graph, label, totals and kernels.
llvm::json::Object runJson(const ProfiledRun &run);

/// The header every file of the schema starts with: schema, kind ("profile",
/// "suite", "sweep"), tool, date (utcTimestamp() when empty) and device.
llvm::json::Object fileHeaderJson(llvm::StringRef kind, llvm::StringRef tool,
                                  const DeviceProperties &dev, double copyGBps,
                                  const std::string &date = "");

/// A whole `--profile-json` file: the header of kind "profile" and the runs.
std::string profileFileJson(const DeviceProperties &dev, double copyGBps,
                            llvm::ArrayRef<ProfiledRun> runs, llvm::StringRef tool,
                            const std::string &date = "");

/// `value` as indented text with a final newline.
std::string formatJson(llvm::json::Value value);

/// Writes `text` to `path`; false with `error` set when the file cannot be written.
bool writeTextFile(const std::string &path, const std::string &text, std::string &error);

} // namespace minijit
