//===- runtime/ProfileJson.cpp - the profile as data, for the plots -------===//
#include "runtime/ProfileJson.h"
#include "runtime/ProfileJsonValues.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <ctime>

namespace minijit {

namespace {

llvm::json::Object peakJson(const PeakRate &p) {
  return llvm::json::Object{{"unit", p.unit},
                            {"dtype", p.dtype},
                            {"flops_per_s", p.flopsPerSecond},
                            {"flops_per_clock_per_sm", p.flopsPerClockPerSM},
                            {"source", p.source}};
}

llvm::json::Array stringsJson(llvm::ArrayRef<std::string> v) {
  llvm::json::Array a;
  for (const std::string &s : v)
    a.push_back(s);
  return a;
}

} // namespace

std::string utcTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

llvm::json::Object deviceJson(const DeviceProperties &dev, double copyGBps) {
  llvm::json::Array peaks;
  for (const PeakRate &p : peakRates(dev))
    peaks.push_back(peakJson(p));
  return llvm::json::Object{
      {"name", dev.name},
      {"arch", dev.arch()},
      {"queried", dev.queried},
      {"sms", dev.smCount},
      {"clock_mhz", dev.clockKHz / 1000.0},
      {"l2_bytes", dev.l2Bytes},
      {"memory_bytes", dev.totalMemory},
      {"copy_gbps", copyGBps},
      {"copy_source", "measured: a device-to-device copy of 1 GiB in the same process, bytes "
                      "read plus bytes written over the median of 20 copies"},
      {"peaks", std::move(peaks)},
  };
}

llvm::json::Object kernelJson(const KernelProfile &k, const KernelDescription &d, size_t index) {
  llvm::json::Array flops;
  if (d.flops.empty()) {
    flops.push_back(llvm::json::Object{{"unit", "cuda_cores"}, {"dtype", "f32"}, {"flops", k.flops}});
  } else {
    for (const FlopCount &f : d.flops)
      flops.push_back(llvm::json::Object{{"unit", f.unit}, {"dtype", f.dtype}, {"flops", f.flops}});
  }
  double seconds = k.us * 1e-6;
  return llvm::json::Object{
      {"index", static_cast<int64_t>(index)},
      {"name", k.name},
      {"kind", d.kind},
      {"schedule", d.schedule},
      {"time_us", llvm::json::Object{{"min", k.minUs}, {"median", k.us}, {"max", k.maxUs}}},
      {"start_us", k.startUs},
      {"bytes", k.bytes},
      {"flops", k.flops},
      {"flops_by_dtype", std::move(flops)},
      {"intensity", k.intensity},
      {"gbps", k.gbps},
      {"copy_fraction", k.copyFraction},
      {"flops_per_s", seconds > 0 ? static_cast<double>(k.flops) / seconds : 0.0},
      {"grid", k.grid},
      {"block", static_cast<int64_t>(k.block)},
      {"blocks_per_sm", k.blocksPerSM},
      {"waves", k.waves.waves},
      {"last_wave_fill", k.waves.lastWaveFill},
      {"registers", static_cast<int64_t>(k.resources.registers)},
      {"spill_bytes", static_cast<int64_t>(k.resources.spillStores + k.resources.spillLoads)},
      {"shared_bytes", static_cast<int64_t>(k.resources.sharedBytes + k.dynamicShared)},
      {"fusion_reasons", stringsJson(d.fusionReasons)},
  };
}

llvm::json::Array kernelsJson(const ProfiledRun &run) {
  llvm::json::Array ks;
  const KernelDescription unknown;
  for (size_t i = 0; i < run.profile.kernels.size(); ++i)
    ks.push_back(kernelJson(run.profile.kernels[i],
                            i < run.kernels.size() ? run.kernels[i] : unknown, i));
  return ks;
}

llvm::json::Object runJson(const ProfiledRun &run) {
  int64_t bytes = 0, flops = 0;
  for (const KernelProfile &k : run.profile.kernels) {
    bytes += k.bytes;
    flops += k.flops;
  }
  return llvm::json::Object{{"graph", run.profile.graph},
                            {"label", run.label},
                            {"fusion", run.fusion},
                            {"timed_runs", run.profile.runs},
                            {"total_us", run.profile.totalUs},
                            {"bytes", bytes},
                            {"flops", flops},
                            {"kernels", kernelsJson(run)}};
}

llvm::json::Object fileHeaderJson(llvm::StringRef kind, llvm::StringRef tool,
                                  const DeviceProperties &dev, double copyGBps,
                                  const std::string &date) {
  return llvm::json::Object{{"schema", kProfileSchema},
                            {"kind", kind.str()},
                            {"tool", tool.str()},
                            {"date", date.empty() ? utcTimestamp() : date},
                            {"device", deviceJson(dev, copyGBps)}};
}

std::string profileFileJson(const DeviceProperties &dev, double copyGBps,
                            std::span<const ProfiledRun> runs, std::string_view tool,
                            const std::string &date) {
  llvm::json::Object root = fileHeaderJson("profile", tool, dev, copyGBps, date);
  llvm::json::Array rs;
  for (const ProfiledRun &r : runs)
    rs.push_back(runJson(r));
  root["runs"] = std::move(rs);
  return formatJson(std::move(root));
}

std::string formatJson(llvm::json::Value value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", value) << "\n";
  return os.str();
}

bool writeTextFile(const std::string &path, const std::string &text, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    error = "cannot write " + path + ": " + ec.message();
    return false;
  }
  os << text;
  os.close();
  if (os.has_error()) {
    error = "cannot write " + path + ": " + os.error().message();
    os.clear_error();
    return false;
  }
  return true;
}

} // namespace minijit
