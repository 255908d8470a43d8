//===- runtime/ProfileJson.h - the profile as data, for the plots -*- C++ -*-===//
// Writes what the profiler measured as versioned JSON (docs/PROFILE_JSON.md):
// per run the device, its measured copy bandwidth and its peak FLOP/s per
// unit and dtype; per kernel its name, schedule, times, bytes, FLOPs by unit
// and dtype, rates, launch geometry, waves and the reasons the kernel ends
// where it ends. `minijit run|compare --profile-json`, the benchmark suite and
// its sweeps all write these records; scripts/plot.py reads them. The
// records as JSON values, for a tool that builds a file of its own, are in
// runtime/ProfileJsonValues.h (not installed: they are LLVM's JSON types).
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/PeakRates.h"
#include "runtime/Profiler.h"

#include <span>
#include <string>
#include <string_view>
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

/// A whole `--profile-json` file: the header of kind "profile" (schema,
/// tool, date, which is utcTimestamp() when empty, and the device with
/// `copyGBps`), then the runs; indented, with a final newline.
std::string profileFileJson(const DeviceProperties &dev, double copyGBps,
                            std::span<const ProfiledRun> runs, std::string_view tool,
                            const std::string &date = "");

/// Writes `text` to `path`; false with `error` set when the file cannot be written.
bool writeTextFile(const std::string &path, const std::string &text, std::string &error);

} // namespace minijit
