//===- tools/minijit.cpp - the command-line tool ---------------------------===//
// check / eval / compile / run / compare / tune / reduce on a .mj file, and
// devices (the GPUs of the host), as docs/GUIDE.md describes.
// Exit status: 0 success, 1 a failed check or a runtime error, 2 bad usage or
// a file that does not parse or verify.
//===----------------------------------------------------------------------===//
#include "compiler/nvrtc/Nvrtc.h"
#include "compiler/schedule/ScheduleOverrides.h"
#include "ir/Bind.h"
#include "tools/CommandLine.h"
#include "tools/DataFlags.h"
#include "tools/DeviceReport.h"
#include "tools/FusionComparison.h"
#include "tools/Harness.h"
#include "tools/ProfileRecords.h"
#include "tools/Reduce.h"
#include "tools/Tuner.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include <sys/wait.h>

using namespace minijit;

namespace {

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

/// The graphs of `file`, or only the one named `only`; `dims` gets the named
/// dimensions of every graph of the file.
std::vector<Graph> loadGraphs(const std::string &file, const std::string &only,
                              std::set<std::string> &dims) {
  std::vector<Graph> gs = parseFile(file);
  for (const Graph &g : gs)
    for (const std::string &n : dimNames(g))
      dims.insert(n);
  if (only.empty())
    return gs;
  for (Graph &g : gs)
    if (g.name() == only) {
      std::vector<Graph> one;
      one.push_back(std::move(g));
      return one;
    }
  std::string names;
  for (const Graph &g : gs)
    names += (names.empty() ? "" : ", ") + g.name();
  throw ParseError(file, 0, 0, "no graph named '" + only + "' in the file (it has: " + names + ")");
}

int cmdCheck(const std::vector<Graph> &gs) {
  for (size_t i = 0; i < gs.size(); ++i) {
    if (i)
      llvm::outs() << "\n";
    llvm::outs() << printGraph(gs[i]);
  }
  return kOk;
}

/// For each gather, how many of its indices were out of range (and clamped).
void printOutOfRange(const Graph &g, llvm::ArrayRef<HostTensor> ins) {
  for (const OutOfRangeIndices &o : outOfRangeIndices(g, ins))
    llvm::outs() << llvm::formatv("  indices of %{0}: {1} of {2} outside 0..{3}, clamped\n",
                                  g.node(o.gather).name, o.outside, o.total, o.size - 1);
}

int cmdEval(const std::vector<Graph> &gs, uint64_t seed, const DataFlags &d) {
  for (const Graph &g : gs) {
    std::vector<HostTensor> ins = inputsFor(g, seed, d);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<HostTensor> outs = evaluate(g, ins);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    llvm::outs() << "graph " << g.name() << " (CPU reference, seed " << seed << ", "
                 << llvm::formatv("{0:f1}", ms) << " ms)\n";
    for (size_t i = 0; i < ins.size(); ++i)
      llvm::outs() << "  in  %" << g.node(g.inputs()[i]).name << ": " << summarizeTensor(ins[i])
                   << "\n";
    for (size_t i = 0; i < outs.size(); ++i)
      llvm::outs() << "  out %" << g.node(g.outputs()[i]).name << ": " << summarizeTensor(outs[i])
                   << "\n";
    printOutOfRange(g, ins);
    saveOutputs(g, outs, d, gs.size() > 1);
  }
  return kOk;
}

/// --schedule KEY=V,...: parsed once here, so a bad key or value is bad
/// usage (nullopt, after saying why).
std::optional<ScheduleOverrides> parseScheduleFlag(const std::string &schedule) {
  Expected<ScheduleOverrides> o = parseScheduleOverrides(schedule);
  if (o)
    return *o;
  llvm::errs() << "minijit: --schedule: " << o.error() << "\n";
  return std::nullopt;
}

int cmdCompile(const std::vector<Graph> &gs, bool fusion, bool reassociate, bool allowTf32,
               bool tf32x3, const std::string &emit, const std::string &arch, bool timing,
               const std::string &schedule) {
  std::optional<ScheduleOverrides> overrides = parseScheduleFlag(schedule);
  if (!overrides)
    return kUsage;
  std::optional<Stage> stage = parseStage(emit);
  if (!stage) {
    llvm::errs() << "minijit: unknown --emit=" << emit << " (expected " << stageList() << ")\n";
    return kUsage;
  }
  if (!arch.empty()) {
    Expected<Target> target = parseTarget(arch);
    if (!target) {
      llvm::errs() << "minijit: --arch: " << target.error() << "\n";
      return kUsage;
    }
    try {
      checkTarget(*target);
    } catch (const CompileError &e) {
      llvm::errs() << "minijit: " << e.what() << "\n";
      return kUsage;
    }
  }
  for (size_t i = 0; i < gs.size(); ++i) {
    CompileOptions opt;
    opt.fusion = fusion;
    opt.reassociate = reassociate;
    opt.allowTf32 = allowTf32;
    opt.tf32x3 = tf32x3;
    opt.scheduleOverrides = *overrides;
    opt.arch = arch;
    opt.stopAfter = producingStage(*stage); // --emit=cuda does not run NVRTC
    CompiledGraph c = compileGraph(gs[i], opt);
    if (i)
      llvm::outs() << "\n";
    llvm::outs() << c.text(*stage);
    if (timing)
      llvm::errs() << "compile times of " << gs[i].name() << ":\n" << c.timingText();
  }
  return kOk;
}

struct RunFlags {
  bool fusion = true, check = false, bench = false, profile = false, graphReplay = false;
  bool allowTf32 = false; ///< --allow-tf32
  bool tf32x3 = true;     ///< not --exact-f32
  std::string schedule;   ///< --schedule KEY=V,...
  std::string trace;
  std::string profileJson; ///< --profile-json: the per-kernel profile as data
  uint64_t seed = 0;
  int device = 0; ///< --device: the GPU's ordinal
  DataFlags data;
};

/// Writes the runs of --profile-json; false (after saying why) when it cannot.
bool writeProfileJson(const std::string &path, const Device &gpu, double copyGBps,
                      llvm::ArrayRef<ProfiledRun> runs) {
  std::string error;
  std::string tool = std::string("minijit ") + minijitVersion();
  if (!writeTextFile(path, profileFileJson(gpu.properties(), copyGBps, runs, tool), error)) {
    llvm::errs() << "minijit: " << error << "\n";
    return false;
  }
  llvm::outs() << "  profile written to " << path << " (plot it: scripts/plot.py roofline " << path
               << ")\n";
  return true;
}

int cmdRun(const std::vector<Graph> &gs, const RunFlags &f) {
  std::optional<ScheduleOverrides> overrides = parseScheduleFlag(f.schedule);
  if (!overrides)
    return kUsage;
  Device gpu = Device::open(f.device);
  int status = kOk;
  std::vector<ProfiledRun> profiled;
  double copy = 0;
  for (const Graph &g : gs) {
    std::vector<HostTensor> ins = inputsFor(g, f.seed, f.data);
    // The CPU reference only when asked for (a large product's takes seconds).
    CompileOptions opt;
    opt.fusion = f.fusion;
    opt.allowTf32 = f.allowTf32;
    opt.tf32x3 = f.tf32x3;
    opt.scheduleOverrides = *overrides;
    opt.device = gpu.properties();
    CompiledGraph compiled = compileGraph(g, opt);
    CheckedRun r = f.check ? checkCompiled(g, gpu, std::move(compiled), f.seed, &ins)
                           : runCompiled(g, gpu, std::move(compiled), f.seed, &ins);
    const Program &p = r.compiled.program;
    llvm::outs() << llvm::formatv("graph {0} on {1} (device {2}): {3} kernel{4} (fusion {5}), "
                                  "seed {6}\n",
                                  g.name(), gpu.properties().name, gpu.ordinal(), p.kernels.size(),
                                  p.kernels.size() == 1 ? "" : "s", f.fusion ? "on" : "off",
                                  f.seed);
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      llvm::outs() << "  out %" << g.node(g.outputs()[i]).name << ": "
                   << summarizeTensor(r.outputs[i]) << "\n";
      if (f.check)
        llvm::outs() << "    check: " << r.compare[i].summary << "\n";
    }
    if (f.check)
      printOutOfRange(g, ins);
    saveOutputs(g, r.outputs, f.data, gs.size() > 1);
    if (f.check && !r.ok) {
      llvm::outs() << "  CHECK FAILED: the GPU result differs from the CPU reference\n";
      status = kFailed;
    }
    if (!f.bench && !f.profile && f.trace.empty() && f.profileJson.empty())
      continue;
    Executable &exe = *r.executable;
    exe.setGraphReplay(f.graphReplay);
    std::vector<DeviceTensor> din;
    for (const HostTensor &h : r.inputs)
      din.push_back(DeviceTensor::fromHost(gpu, h));
    std::vector<DeviceTensor> dout = exe.allocateOutputs();
    if (copy == 0)
      copy = measureCopyBandwidth(gpu);
    if (f.bench) {
      RunTiming t = timeExecutable(exe, din, dout, 200, 20);
      double bytes = static_cast<double>(p.bytesMoved());
      llvm::outs() << llvm::formatv("  bench: median {0:f2} us (min {1:f2}, mean {2:f2}) over {3} "
                                    "runs; host {4:f2} us per enqueue{5}\n",
                                    t.medianUs, t.minUs, t.meanUs, t.runs, t.hostUsPerRun,
                                    f.graphReplay ? " (CUDA graph replay)" : "");
      llvm::outs() << llvm::formatv("  bench: {0} bytes moved, {1:f0} GB/s = {2:f1}% of the "
                                    "{3:f0} GB/s copy bandwidth\n",
                                    p.bytesMoved(), bytes / (t.medianUs * 1e3),
                                    100 * bytes / (t.medianUs * 1e3) / copy, copy);
    }
    if (f.profile || !f.trace.empty() || !f.profileJson.empty()) {
      Profile prof = profileExecutable(exe, din, dout, 100, copy);
      if (!f.profileJson.empty())
        profiled.push_back(profiledRun(r.compiled, prof));
      if (f.profile)
        llvm::outs() << formatProfile(prof);
      if (!f.trace.empty()) {
        std::error_code ec;
        llvm::raw_fd_ostream os(f.trace, ec);
        if (ec) {
          llvm::errs() << "minijit: cannot write " << f.trace << ": " << ec.message() << "\n";
          return kFailed;
        }
        os << profileChromeTrace(prof);
        llvm::outs() << "  trace written to " << f.trace << " (open in chrome://tracing or "
                     << "ui.perfetto.dev)\n";
      }
    }
  }
  if (!f.profileJson.empty() && !writeProfileJson(f.profileJson, gpu, copy, profiled))
    return kFailed;
  return status;
}

int cmdCompare(const std::vector<Graph> &gs, uint64_t seed, const DataFlags &d,
               const std::string &profileJson, int device, bool exactF32) {
  Device gpu = Device::open(device);
  int status = kOk;
  double copy = measureCopyBandwidth(gpu);
  std::vector<ProfiledRun> profiled;
  for (const Graph &g : gs) {
    llvm::outs() << llvm::formatv("graph {0} on {1} (device {2}, copy bandwidth {3:f0} GB/s), "
                                  "seed {4}\n",
                                  g.name(), gpu.properties().name, gpu.ordinal(), copy, seed);
    llvm::outs() << llvm::formatv("  {0,-8} {1,8} {2,14} {3,12} {4,10} {5,8}  {6}\n", "fusion",
                                  "kernels", "bytes moved", "time (us)", "GB/s", "%copy", "check");
    double times[2] = {0, 0};
    int64_t bytes[2] = {0, 0};
    std::vector<HostTensor> ins = inputsFor(g, seed, d);
    for (ComparedRun &side :
         compareFusion(g, gpu, seed, ins, copy, !profileJson.empty(), exactF32)) {
      const CheckedRun &r = side.run;
      bool fused = side.fused;
      if (fused)
        saveOutputs(g, r.outputs, d, gs.size() > 1);
      const Program &p = r.compiled.program;
      times[fused] = side.timing.medianUs;
      bytes[fused] = p.bytesMoved();
      if (side.profile)
        profiled.push_back(std::move(*side.profile));
      std::string check = r.ok ? "ok" : "MISMATCH";
      if (!r.ok)
        status = kFailed;
      llvm::outs() << llvm::formatv("  {0,-8} {1,8} {2,14} {3,12:f2} {4,10:f0} {5,7:f1}%  {6}\n",
                                    fused ? "on" : "off", p.kernels.size(), p.bytesMoved(),
                                    side.timing.medianUs,
                                    p.bytesMoved() / (side.timing.medianUs * 1e3),
                                    100 * p.bytesMoved() / (side.timing.medianUs * 1e3) / copy,
                                    check);
      if (!r.ok)
        for (size_t i = 0; i < r.compare.size(); ++i)
          if (!r.compare[i].ok)
            llvm::outs() << "    %" << g.node(g.outputs()[i]).name << ": " << r.compare[i].summary
                         << "\n";
    }
    llvm::outs() << llvm::formatv("  fusion moves {0:f2}x fewer bytes and runs {1:f2}x faster "
                                  "({2:f2} us saved)\n",
                                  bytes[1] ? static_cast<double>(bytes[0]) / bytes[1] : 0.0,
                                  times[1] > 0 ? times[0] / times[1] : 0.0, times[0] - times[1]);
  }
  if (!profileJson.empty() && !writeProfileJson(profileJson, gpu, copy, profiled))
    return kFailed;
  return status;
}

struct TuneFlags {
  bool fusion = true, dryRun = false, allowTf32 = false, tf32x3 = true;
  double budgetS = 60;
  int runs = 30;
  unsigned maxCandidates = 48;
  uint64_t seed = 0;
  int device = 0;
};

/// Progress on stderr: on a terminal each line replaces the last (every
/// candidate timed); elsewhere only the lines that stay (a kernel's start
/// and end).
void printProgress(const std::string &line, bool transient) {
  bool terminal = llvm::errs().is_displayed();
  if (terminal) {
    llvm::errs() << "\r" << line << "\x1b[K";
    if (!transient)
      llvm::errs() << "\n";
    return;
  }
  if (!transient)
    llvm::errs() << line << "\n";
}

/// Searches each kernel's schedule of every graph (one budget for them
/// all), or with --dry-run lists the candidates compiled.
int cmdTune(const std::vector<Graph> &gs, const TuneFlags &f) {
  if (std::string env = scheduleEnvironmentText(); !env.empty()) {
    llvm::errs() << "minijit: MINIJIT_SCHEDULE is set ('" << env
                 << "'): tune sets each kernel's parameters itself; unset it\n";
    return kUsage;
  }
  TuneOptions o;
  o.fusion = f.fusion;
  o.allowTf32 = f.allowTf32;
  o.tf32x3 = f.tf32x3;
  o.runs = f.runs;
  o.maxCandidates = f.maxCandidates;
  o.seed = f.seed;
  o.progress = printProgress;
  if (f.dryRun) {
    for (size_t i = 0; i < gs.size(); ++i) {
      if (i)
        llvm::outs() << "\n";
      llvm::outs() << formatTuneReport(listCandidates(gs[i], o));
    }
    return kOk;
  }
  std::optional<Device> gpu;
  try {
    gpu = Device::open(f.device);
  } catch (const CudaError &e) {
    llvm::errs() << "minijit: tune needs a GPU to time the candidates: " << e.what()
                 << "\n(--dry-run lists each kernel's candidates, compiled through NVRTC, "
                    "without one)\n";
    return kFailed;
  }
  auto t0 = std::chrono::steady_clock::now();
  int status = kOk;
  for (size_t i = 0; i < gs.size(); ++i) {
    double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    o.budgetS = std::max(0.0, f.budgetS - spent);
    TuneReport r = tuneGraph(gs[i], *gpu, o);
    if (i)
      llvm::outs() << "\n";
    llvm::outs() << formatTuneReport(r);
    if (r.verified && !r.verifyOk)
      status = kFailed;
  }
  return status;
}

/// Lists every GPU of the host with the properties the schedules use, and
/// which pairs can read each other's memory. Throws CudaError without a
/// driver.
int cmdDevices(bool bandwidth) {
  int count = Device::count();
  if (count == 0) {
    llvm::errs() << "minijit: the CUDA driver reports no GPU\n";
    return kFailed;
  }
  std::vector<Device> devices;
  for (int i = 0; i < count; ++i)
    devices.push_back(Device::open(i));
  int driver = devices[0].properties().driverVersion;
  llvm::outs() << llvm::formatv("{0} GPU{1}, CUDA driver {2}.{3}\n", count, count == 1 ? "" : "s",
                                driver / 1000, driver % 1000 / 10);
  for (const Device &dev : devices) {
    DeviceFacts facts;
    facts.ordinal = dev.ordinal();
    facts.properties = dev.properties();
    facts.freeBytes = static_cast<int64_t>(dev.memoryInfo().first);
    if (bandwidth)
      facts.copyGBps = measureCopyBandwidth(dev);
    llvm::outs() << describeDevice(facts);
  }
  if (count > 1) {
    llvm::outs() << "peer access (kernels of the row's device reading the column's memory):\n";
    llvm::outs() << llvm::formatv("  {0,6}", "");
    for (int j = 0; j < count; ++j)
      llvm::outs() << llvm::formatv(" {0,4}", j);
    llvm::outs() << "\n";
    for (int i = 0; i < count; ++i) {
      llvm::outs() << llvm::formatv("  {0,6}", i);
      for (int j = 0; j < count; ++j) {
        const char *cell = i == j ? "-" : devices[i].canAccessPeer(devices[j]) ? "yes" : "no";
        llvm::outs() << llvm::formatv(" {0,4}", cell);
      }
      llvm::outs() << "\n";
    }
  }
  return kOk;
}

int cmdReduce(const std::vector<Graph> &gs, const std::string &file, const std::string &until,
              const std::string &outPath) {
  if (gs.size() != 1) {
    llvm::errs() << "minijit: reduce takes one graph; " << file << " has " << gs.size()
                 << ": pick one with --graph NAME\n";
    return kUsage;
  }
  ReduceStats stats;
  std::optional<Graph> reduced = reduceWithCommand(gs[0], until, &stats);
  if (!reduced) {
    llvm::errs() << "minijit: reduce: the command does not succeed on " << file
                 << " itself, so there is nothing to keep while reducing\n";
    return kFailed;
  }
  const Graph &small = *reduced;
  std::string text = printGraph(small);
  if (outPath.empty()) {
    llvm::outs() << text;
  } else {
    std::error_code ec;
    llvm::raw_fd_ostream os(outPath, ec);
    if (ec) {
      llvm::errs() << "minijit: cannot write " << outPath << ": " << ec.message() << "\n";
      return kFailed;
    }
    os << text;
  }
  llvm::errs() << llvm::formatv("reduce: {0} ops to {1} in {2} tries ({3} kept)\n",
                                countOps(gs[0]), countOps(small), stats.tries, stats.accepted);
  return kOk;
}

/// Flags that parsed but do not go together, said on stderr; true when
/// there are any (bad usage, exit status 2).
bool badUsage(const CommandLine &flags) {
  if (flags.device < 0) {
    llvm::errs() << "minijit: --device " << flags.device
                 << ": a device ordinal is 0 or more (minijit devices lists them)\n";
    return true;
  }
  if (flags.tuneCmd && !(flags.budget > 0)) {
    llvm::errs() << llvm::formatv("minijit: --budget-s {0}: the search needs some seconds (> 0)\n",
                                  double(flags.budget));
    return true;
  }
  if (flags.tuneCmd && flags.maxCandidates < 1) {
    llvm::errs() << "minijit: --max-candidates 0: at least the default is a candidate\n";
    return true;
  }
  if (flags.tf32x3 && flags.exactF32) {
    llvm::errs() << "minijit: --tf32x3 and --exact-f32 contradict each other (--tf32x3 is the "
                    "default: give --exact-f32 alone to keep every f32 product on the CUDA cores)\n";
    return true;
  }
  if (flags.tuneCmd && flags.tuneRuns < 1) {
    llvm::errs() << "minijit: --runs " << flags.tuneRuns << ": at least 1 timed run a candidate\n";
    return true;
  }
  if (flags.reduceCmd && flags.until.empty()) {
    llvm::errs()
        << "minijit: reduce needs --until CMD: a command that exits 0 while a "
           "candidate still shows the problem, e.g. --until \"! minijit run {} --check\"\n";
    return true;
  }
  return false;
}

/// Whether f32 products stay exact: --exact-f32, or --tf32x3=false as
/// scripts wrote it while three TF32 products were not the default.
bool exactF32(const CommandLine &flags) {
  return flags.exactF32 || (flags.tf32x3.getNumOccurrences() > 0 && !flags.tf32x3);
}

/// Runs the subcommand on the graphs of FILE (`fileDims`: their named sizes).
int runCommand(const CommandLine &flags, std::vector<Graph> &gs,
               const std::set<std::string> &fileDims) {
  try {
    DataFlags data;
    data.inputs.assign(flags.inputFiles.begin(), flags.inputFiles.end());
    data.saveDir = flags.saveDir;
    if (flags.checkCmd)
      return cmdCheck(gs);
    if (flags.evalCmd || flags.runCmd || flags.compareCmd)
      checkSaveNames(gs, data);
    if (!flags.reduceCmd) {
      std::vector<std::string> dims(flags.dimFlags.begin(), flags.dimFlags.end());
      checkDimFlagsUsed(fileDims, dims);
      for (Graph &g : gs)
        g = bindForCommand(g, dims, flags.compileCmd || flags.tuneCmd ? nullptr : &data);
    }
    if (flags.evalCmd)
      return cmdEval(gs, flags.seed, data);
    if (flags.compileCmd)
      return cmdCompile(gs, !flags.noFusion, !flags.noReassociate, flags.allowTf32, !exactF32(flags),
                        flags.emit, flags.arch, flags.timing, flags.schedule);
    if (flags.reduceCmd)
      return cmdReduce(gs, flags.file, flags.until, flags.reduceOut);
    if (flags.tuneCmd) {
      TuneFlags t;
      t.fusion = !flags.noFusion;
      t.allowTf32 = flags.allowTf32;
      t.tf32x3 = !exactF32(flags);
      t.dryRun = flags.dryRun;
      t.budgetS = flags.budget;
      t.runs = flags.tuneRuns;
      t.maxCandidates = flags.maxCandidates;
      t.seed = flags.seed;
      t.device = flags.device;
      return cmdTune(gs, t);
    }
    RunFlags f;
    f.fusion = !flags.noFusion;
    f.check = flags.check;
    f.allowTf32 = flags.allowTf32;
    f.tf32x3 = !exactF32(flags);
    f.schedule = flags.schedule;
    f.bench = flags.bench;
    f.profile = flags.profile;
    f.trace = flags.trace;
    f.seed = flags.seed;
    f.graphReplay = flags.graphReplay;
    f.data = data;
    f.profileJson = flags.profileJson;
    f.device = flags.device;
    if (flags.runCmd)
      return cmdRun(gs, f);
    return cmdCompare(gs, flags.seed, data, flags.profileJson, flags.device, exactF32(flags));
  } catch (const UsageError &e) {
    llvm::errs() << "minijit: " << e.what() << "\n";
    return kUsage;
  } catch (const Error &e) {
    llvm::errs() << "minijit: " << e.what() << "\n";
    return kFailed;
  }
}

} // namespace

int main(int argc, char **argv) {
  namespace cl = llvm::cl;
  CommandLine flags;
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << "minijit " << minijitVersion() << "\n"; });

  std::string errors;
  llvm::raw_string_ostream errStream(errors);
  if (!cl::ParseCommandLineOptions(argc, argv, "minijit: a miniature JIT kernel compiler\n",
                                   &errStream)) {
    llvm::errs() << errStream.str();
    return kUsage;
  }
  if (!flags.checkCmd && !flags.evalCmd && !flags.compileCmd && !flags.runCmd &&
      !flags.compareCmd && !flags.tuneCmd && !flags.reduceCmd && !flags.devicesCmd) {
    llvm::errs()
        << "usage: minijit {check|eval|compile|run|compare|tune|reduce} FILE [options], or "
           "minijit devices; see minijit --help\n";
    return kUsage;
  }
  if (badUsage(flags))
    return kUsage;
  if (flags.devicesCmd) {
    try {
      return cmdDevices(flags.bandwidth);
    } catch (const Error &e) {
      llvm::errs() << "minijit: " << e.what() << "\n";
      return kFailed;
    }
  }
  std::vector<Graph> gs;
  std::set<std::string> fileDims;
  try {
    gs = loadGraphs(flags.file, flags.graph, fileDims);
  } catch (const ParseError &e) {
    llvm::errs() << e.what() << "\n";
    return kUsage;
  } catch (const GraphError &e) {
    llvm::errs() << flags.file << ": error: " << e.what() << "\n";
    return kUsage;
  }
  return runCommand(flags, gs, fileDims);
}
