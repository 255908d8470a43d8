//===- tools/minijit.cpp - the command-line tool ---------------------------===//
// check / eval / compile / run / compare / tune / reduce on a .mj file, and
// devices (the GPUs of the host), as docs/GUIDE.md describes.
// Exit status: 0 success, 1 a failed check or a runtime error, 2 bad usage or
// a file that does not parse or verify.
//===----------------------------------------------------------------------===//
#include "compiler/nvrtc/Nvrtc.h"
#include "compiler/schedule/ScheduleOverrides.h"
#include "ir/Bind.h"
#include "tools/DeviceReport.h"
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

/// A flag whose value is wrong (a --input file that does not hold its
/// input): exit status 2, like a file that does not parse.
struct UsageError : GraphError {
  using GraphError::GraphError;
};

/// What --input and --save ask for.
struct DataFlags {
  std::vector<std::string> inputs; ///< NAME=FILE.npy
  std::string saveDir;
};

/// Seeded random inputs for `g`, with those that --input names read from
/// their files. The files are read (and checked against the input's type)
/// first, and random tensors made only for the inputs left, so a bad file is
/// reported before anything large is allocated. Throws UsageError for a
/// malformed flag, an unknown name, a name given twice or a file that does
/// not hold the input's type.
std::vector<HostTensor> inputsFor(const Graph &g, uint64_t seed, const DataFlags &d) try {
  std::vector<HostTensor> fromFiles(g.inputs().size());
  std::vector<bool> given(g.inputs().size(), false);
  for (const std::string &spec : d.inputs) {
    auto [name, path] = llvm::StringRef(spec).split('=');
    name.consume_front("%");
    if (name.empty() || path.empty())
      throw GraphError("--input " + spec + ": expected NAME=FILE.npy");
    std::optional<ValueId> id = g.lookup(name);
    auto it = id ? llvm::find(g.inputs(), *id) : g.inputs().end();
    if (it == g.inputs().end()) {
      std::string names;
      for (ValueId in : g.inputs())
        names += (names.empty() ? "%" : ", %") + g.node(in).name;
      throw GraphError(llvm::formatv("--input {0}: graph '{1}' has no input %{2} (its inputs: {3})",
                                     spec, g.name(), name, names)
                           .str());
    }
    const Node &n = g.node(*id);
    size_t k = it - g.inputs().begin();
    if (given[k])
      throw GraphError("--input " + spec + ": input %" + n.name +
                       " is given twice; give each input one file");
    given[k] = true;
    fromFiles[k] = readNpy(path, "input %" + n.name, std::pair(n.dtype, n.shape));
  }
  std::vector<HostTensor> ins = randomInputs(g, seed, &given);
  for (size_t k = 0; k < ins.size(); ++k)
    if (given[k])
      ins[k] = std::move(fromFiles[k]);
  return ins;
} catch (const UsageError &) {
  throw;
} catch (const GraphError &e) {
  throw UsageError(e.what());
}

/// `g` with its named dimensions bound: from --dim and, where `d` is given
/// (the commands that take inputs), from the shapes of the --input files.
/// A graph without names is returned as it is. Throws UsageError for a
/// malformed --dim, a dimension nothing gives a size, or sizes that disagree.
Graph bindForCommand(const Graph &g, const std::vector<std::string> &dimFlags,
                     const DataFlags *d) try {
  DimBindings sizes;
  for (const std::string &flag : dimFlags)
    if (std::string error = parseDimBinding(flag, sizes); !error.empty())
      throw UsageError(error);
  if (sizes.size() < dimFlags.size())
    throw UsageError("--dim: a dimension is given a size twice (" +
                     llvm::join(dimFlags, ", ") + "); give each name one --dim");
  if (!hasUnboundDims(g))
    return g;
  std::map<std::string, std::string> from;
  for (const auto &[name, size] : sizes)
    from[name] = "--dim " + name + "=" + std::to_string(size);
  for (const std::string &spec : d ? d->inputs : std::vector<std::string>{}) {
    auto [name, path] = llvm::StringRef(spec).split('=');
    name.consume_front("%");
    std::optional<ValueId> id = g.lookup(name);
    if (!id || g.node(*id).op != OpKind::Input || path.empty())
      continue; // inputsFor reports it
    const Node &n = g.node(*id);
    HostTensor t = readNpy(path, "input %" + n.name);
    matchShape(n.shape, t.shape(), "input %" + n.name + " (" + path.str() + ")", sizes, from);
  }
  return bindDims(g, sizes);
} catch (const UsageError &) {
  throw;
} catch (const GraphError &e) {
  throw UsageError(e.what());
}

/// Writes each output of `g` as DIR/NAME.npy (DIR/GRAPH/NAME.npy when the
/// file holds several graphs) and says where.
void saveOutputs(const Graph &g, llvm::ArrayRef<HostTensor> outs, const DataFlags &d,
                 bool severalGraphs) {
  if (d.saveDir.empty())
    return;
  std::string dir = severalGraphs ? d.saveDir + "/" + g.name() : d.saveDir;
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    throw GraphError(llvm::formatv("--save {0}: cannot create the folder: {1}", dir, ec.message())
                         .str());
  for (size_t i = 0; i < outs.size(); ++i)
    writeNpy(dir + "/" + g.node(g.outputs()[i]).name + ".npy", outs[i]);
  llvm::outs() << llvm::formatv("  saved {0} output{1} to {2}/\n", outs.size(),
                                outs.size() == 1 ? "" : "s", dir);
}

/// Throws UsageError for a --dim NAME that no graph of the file has (`names`):
/// a size that would silently go unused is more likely a typo. (A name of
/// another graph than --graph picks is allowed: one command line may serve
/// every graph of a file.)
void checkDimFlagsUsed(const std::set<std::string> &names,
                       const std::vector<std::string> &dimFlags) {
  for (const std::string &flag : dimFlags) {
    std::string name = llvm::StringRef(flag).split('=').first.str();
    if (!names.count(name))
      throw UsageError(llvm::formatv("--dim {0}: no graph has a dimension named {1} (named "
                                     "dimensions: {2})",
                                     flag, name,
                                     names.empty() ? std::string("none")
                                                   : llvm::join(names, ", "))
                           .str());
  }
}

/// Throws UsageError when --save would write two outputs of one graph to one
/// file (a graph that returns a value twice, or two values of one name).
void checkSaveNames(const std::vector<Graph> &gs, const DataFlags &d) {
  if (d.saveDir.empty())
    return;
  for (const Graph &g : gs) {
    std::map<std::string, size_t> first;
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const std::string &name = g.node(g.outputs()[i]).name;
      auto [it, fresh] = first.try_emplace(name, i);
      if (!fresh)
        throw UsageError(llvm::formatv("--save {0}: graph '{1}' returns %{2} as output {3} and "
                                       "output {4}; --save writes each output as NAME.npy, so "
                                       "the names must differ",
                                       d.saveDir, g.name(), name, it->second, i)
                             .str());
    }
  }
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
    try {
      checkArch(arch);
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
  bool tf32x3 = false;    ///< --tf32x3
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
               const std::string &profileJson, int device) {
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
    for (int fused = 1; fused >= 0; --fused) {
      CheckedRun r = runAndCheck(g, gpu, fused, seed, &ins);
      if (fused)
        saveOutputs(g, r.outputs, d, gs.size() > 1);
      Executable &exe = *r.executable;
      std::vector<DeviceTensor> din;
      for (const HostTensor &h : ins)
        din.push_back(DeviceTensor::fromHost(gpu, h));
      std::vector<DeviceTensor> dout = exe.allocateOutputs();
      RunTiming t = timeExecutable(exe, din, dout, 100, 10);
      const Program &p = r.compiled.program;
      times[fused] = t.medianUs;
      bytes[fused] = p.bytesMoved();
      if (!profileJson.empty())
        profiled.push_back(profiledRun(r.compiled, profileExecutable(exe, din, dout, 100, copy)));
      std::string check = r.ok ? "ok" : "MISMATCH";
      if (!r.ok)
        status = kFailed;
      llvm::outs() << llvm::formatv("  {0,-8} {1,8} {2,14} {3,12:f2} {4,10:f0} {5,7:f1}%  {6}\n",
                                    fused ? "on" : "off", p.kernels.size(), p.bytesMoved(),
                                    t.medianUs, p.bytesMoved() / (t.medianUs * 1e3),
                                    100 * p.bytesMoved() / (t.medianUs * 1e3) / copy, check);
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
  bool fusion = true, dryRun = false, allowTf32 = false, tf32x3 = false;
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

/// Runs `until` on `g` written to a scratch file: true when it exits 0.
bool stillFails(const Graph &g, const std::string &until, const std::string &path) {
  std::error_code ec;
  {
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      throw GraphError("reduce: cannot write " + path + ": " + ec.message());
    os << printGraph(g);
  }
  std::string cmd = until;
  size_t at = cmd.find("{}");
  if (at == std::string::npos)
    cmd += " " + path;
  for (; at != std::string::npos; at = cmd.find("{}", at + path.size()))
    cmd.replace(at, 2, path);
  llvm::outs().flush();
  int rc = std::system(cmd.c_str());
  return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

int cmdReduce(const std::vector<Graph> &gs, const std::string &file, const std::string &until,
              const std::string &outPath) {
  if (gs.size() != 1) {
    llvm::errs() << "minijit: reduce takes one graph; " << file << " has " << gs.size()
                 << ": pick one with --graph NAME\n";
    return kUsage;
  }
  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("minijit-reduce", dir)) {
    llvm::errs() << "minijit: reduce: cannot make a scratch folder: " << ec.message() << "\n";
    return kFailed;
  }
  std::string path = (dir + "/candidate.mj").str();
  if (!stillFails(gs[0], until, path)) {
    llvm::errs() << "minijit: reduce: the command does not succeed on " << file
                 << " itself, so there is nothing to keep while reducing\n";
    llvm::sys::fs::remove_directories(dir);
    return kFailed;
  }
  ReduceStats stats;
  Graph small = reduceGraph(
      gs[0], [&](const Graph &c) { return stillFails(c, until, path); }, &stats);
  llvm::sys::fs::remove_directories(dir);
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

} // namespace

int main(int argc, char **argv) {
  namespace cl = llvm::cl;
  cl::SubCommand checkCmd("check", "parse and verify FILE, print the canonical text");
  cl::SubCommand evalCmd("eval", "run the CPU reference on seeded random inputs");
  cl::SubCommand compileCmd("compile", "compile FILE and print a stage");
  cl::SubCommand runCmd("run", "run FILE on the GPU (seeded random inputs)");
  cl::SubCommand compareCmd("compare", "fused vs unfused on the GPU, side by side");
  cl::SubCommand tuneCmd("tune", "search each kernel's schedule on the GPU and keep the fastest "
                                 "in the tuning database");
  cl::SubCommand reduceCmd("reduce", "shrink FILE's graph while a command keeps succeeding on it");
  cl::SubCommand devicesCmd("devices", "list the GPUs and the properties the schedules use");
  cl::opt<std::string> file(cl::Positional, cl::desc("FILE.mj"), cl::Required, cl::sub(checkCmd),
                            cl::sub(evalCmd), cl::sub(compileCmd), cl::sub(runCmd),
                            cl::sub(compareCmd), cl::sub(tuneCmd), cl::sub(reduceCmd));
  cl::opt<std::string> graph("graph", cl::desc("only the graph with this name"), cl::sub(checkCmd),
                             cl::sub(evalCmd), cl::sub(compileCmd), cl::sub(runCmd),
                             cl::sub(compareCmd), cl::sub(tuneCmd), cl::sub(reduceCmd));
  cl::opt<std::string> until(
      "until",
      cl::desc("the shell command that says a candidate still shows the problem (exit status "
               "0); {} stands for the candidate's .mj file, appended when absent"),
      cl::value_desc("CMD"), cl::sub(reduceCmd));
  cl::opt<std::string> reduceOut("o", cl::desc("write the reduced graph here (default: stdout)"),
                                 cl::value_desc("FILE"), cl::sub(reduceCmd));
  cl::opt<uint64_t> seed("seed", cl::desc("seed of the random inputs"), cl::init(0),
                         cl::sub(evalCmd), cl::sub(runCmd), cl::sub(compareCmd), cl::sub(tuneCmd));
  cl::list<std::string> inputFiles(
      "input", cl::desc("NAME=FILE.npy: read input %NAME from a .npy file (repeatable; the others "
                        "stay seeded random)"),
      cl::sub(evalCmd), cl::sub(runCmd), cl::sub(compareCmd));
  cl::opt<std::string> saveDir("save", cl::desc("write each output as DIR/NAME.npy"),
                               cl::value_desc("DIR"), cl::sub(evalCmd), cl::sub(runCmd),
                               cl::sub(compareCmd));
  cl::list<std::string> dimFlags(
      "dim", cl::desc("NAME=SIZE: the size of a named dimension, e.g. --dim B=4096 (once a "
                      "name; eval, run and compare also take sizes from the shapes of --input "
                      "files)"),
      cl::value_desc("NAME=SIZE"), cl::sub(evalCmd), cl::sub(compileCmd), cl::sub(runCmd),
      cl::sub(compareCmd), cl::sub(tuneCmd));
  cl::opt<bool> noFusion("no-fusion", cl::desc("one kernel per op, as an eager framework runs"),
                         cl::sub(compileCmd), cl::sub(runCmd), cl::sub(tuneCmd));
  cl::opt<double> budget("budget-s",
                         cl::desc("seconds for the whole search; once spent, the best so far is "
                                  "kept (default 60)"),
                         cl::value_desc("N"), cl::init(60), cl::sub(tuneCmd));
  cl::opt<int> tuneRuns("runs", cl::desc("timed runs per candidate, their median (default 30)"),
                        cl::value_desc("R"), cl::init(30), cl::sub(tuneCmd));
  cl::opt<unsigned> maxCandidates(
      "max-candidates", cl::desc("candidates per kernel, the default included (default 48)"),
      cl::value_desc("N"), cl::init(48), cl::sub(tuneCmd));
  cl::opt<bool> dryRun("dry-run",
                       cl::desc("list each kernel's candidates, compiled through NVRTC (no GPU "
                                "needed, nothing timed or stored)"),
                       cl::sub(tuneCmd));
  cl::opt<bool> noReassociate(
      "no-reassociate",
      cl::desc("keep the order of roundings: no sum of a product rewritten as a product with a "
               "summed operand, no scalar factor moved after a product, no argmax of a softmax "
               "(a strictly increasing map) taken of its logits"),
      cl::sub(compileCmd));
  cl::opt<bool> allowTf32(
      "allow-tf32",
      cl::desc("f32 matmuls may run on tensor cores in TF32 (10 bits of fraction per operand), as "
               "torch.backends.cuda.matmul.allow_tf32; Hopper targets"),
      cl::sub(compileCmd), cl::sub(runCmd), cl::sub(tuneCmd));
  cl::opt<bool> tf32x3(
      "tf32x3",
      cl::desc("large f32 matmuls may run as three TF32 products on tensor cores (each operand "
               "split into two TF32 parts; errors about ten times f32's and a tenth of TF32's, at "
               "1.3-2.7 times the speed); Hopper targets"),
      cl::sub(compileCmd), cl::sub(runCmd), cl::sub(tuneCmd));
  cl::opt<std::string> schedule(
      "schedule",
      cl::desc("set schedule parameters by hand, KEY=V,... (the keys of MINIJIT_SCHEDULE, "
               "docs/GUIDE.md), in place of the environment variable"),
      cl::sub(compileCmd), cl::sub(runCmd));
  cl::opt<std::string> emit("emit", cl::desc("graph|fused|lowered|cuda|ptx|resources|dot"),
                            cl::init("fused"), cl::sub(compileCmd));
  cl::opt<std::string> arch("arch", cl::desc("NVRTC target, e.g. sm_90"), cl::sub(compileCmd));
  cl::opt<bool> timing("time", cl::desc("print each stage's compile time to stderr"),
                       cl::sub(compileCmd));
  cl::opt<bool> check("check", cl::desc("compare with the CPU reference (exit 1 on mismatch)"),
                      cl::sub(runCmd));
  cl::opt<bool> bench("bench", cl::desc("time the run (median of 200, after warm-up)"),
                      cl::sub(runCmd));
  cl::opt<bool> profile("profile", cl::desc("per-kernel table"), cl::sub(runCmd));
  cl::opt<std::string> trace("trace", cl::desc("write a Chrome trace to this file"),
                             cl::sub(runCmd));
  cl::opt<bool> graphReplay("graph-replay", cl::desc("launch through a CUDA graph"),
                            cl::sub(runCmd));
  cl::opt<int> device("device",
                      cl::desc("the GPU to run on, by its ordinal (minijit devices lists them)"),
                      cl::value_desc("N"), cl::init(0), cl::sub(runCmd), cl::sub(compareCmd),
                      cl::sub(tuneCmd));
  cl::opt<bool> bandwidth("bandwidth",
                          cl::desc("measure each GPU's device-to-device copy bandwidth (copies "
                                   "1 GiB 23 times)"),
                          cl::sub(devicesCmd));
  cl::opt<std::string> profileJson("profile-json",
                                   cl::desc("write the per-kernel profile as JSON to this file "
                                            "(docs/PROFILE_JSON.md; scripts/plot.py draws it)"),
                                   cl::sub(runCmd), cl::sub(compareCmd));
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << "minijit " << minijitVersion() << "\n"; });

  std::string errors;
  llvm::raw_string_ostream errStream(errors);
  if (!cl::ParseCommandLineOptions(argc, argv, "minijit: a miniature JIT kernel compiler\n",
                                   &errStream)) {
    llvm::errs() << errStream.str();
    return kUsage;
  }
  if (!checkCmd && !evalCmd && !compileCmd && !runCmd && !compareCmd && !tuneCmd && !reduceCmd &&
      !devicesCmd) {
    llvm::errs() << "usage: minijit {check|eval|compile|run|compare|tune|reduce} FILE [options], or "
                    "minijit devices; see minijit --help\n";
    return kUsage;
  }
  if (device < 0) {
    llvm::errs() << "minijit: --device " << device
                 << ": a device ordinal is 0 or more (minijit devices lists them)\n";
    return kUsage;
  }
  if (devicesCmd) {
    try {
      return cmdDevices(bandwidth);
    } catch (const Error &e) {
      llvm::errs() << "minijit: " << e.what() << "\n";
      return kFailed;
    }
  }
  if (tuneCmd && !(budget > 0)) {
    llvm::errs() << llvm::formatv("minijit: --budget-s {0}: the search needs some seconds (> 0)\n",
                                  double(budget));
    return kUsage;
  }
  if (tuneCmd && maxCandidates < 1) {
    llvm::errs() << "minijit: --max-candidates 0: at least the default is a candidate\n";
    return kUsage;
  }
  if (tuneCmd && tuneRuns < 1) {
    llvm::errs() << "minijit: --runs " << tuneRuns << ": at least 1 timed run a candidate\n";
    return kUsage;
  }
  if (reduceCmd && until.empty()) {
    llvm::errs() << "minijit: reduce needs --until CMD: a command that exits 0 while a "
                    "candidate still shows the problem, e.g. --until \"! minijit run {} --check\"\n";
    return kUsage;
  }
  std::vector<Graph> gs;
  std::set<std::string> fileDims;
  try {
    gs = loadGraphs(file, graph, fileDims);
  } catch (const ParseError &e) {
    llvm::errs() << e.what() << "\n";
    return kUsage;
  } catch (const GraphError &e) {
    llvm::errs() << file << ": error: " << e.what() << "\n";
    return kUsage;
  }
  try {
    DataFlags data;
    data.inputs.assign(inputFiles.begin(), inputFiles.end());
    data.saveDir = saveDir;
    if (checkCmd)
      return cmdCheck(gs);
    if (evalCmd || runCmd || compareCmd)
      checkSaveNames(gs, data);
    if (!reduceCmd) {
      std::vector<std::string> dims(dimFlags.begin(), dimFlags.end());
      checkDimFlagsUsed(fileDims, dims);
      for (Graph &g : gs)
        g = bindForCommand(g, dims, compileCmd || tuneCmd ? nullptr : &data);
    }
    if (evalCmd)
      return cmdEval(gs, seed, data);
    if (compileCmd)
      return cmdCompile(gs, !noFusion, !noReassociate, allowTf32, tf32x3, emit, arch, timing,
                        schedule);
    if (reduceCmd)
      return cmdReduce(gs, file, until, reduceOut);
    if (tuneCmd) {
      TuneFlags t;
      t.fusion = !noFusion;
      t.allowTf32 = allowTf32;
      t.tf32x3 = tf32x3;
      t.dryRun = dryRun;
      t.budgetS = budget;
      t.runs = tuneRuns;
      t.maxCandidates = maxCandidates;
      t.seed = seed;
      t.device = device;
      return cmdTune(gs, t);
    }
    RunFlags f;
    f.fusion = !noFusion;
    f.check = check;
    f.allowTf32 = allowTf32;
    f.tf32x3 = tf32x3;
    f.schedule = schedule;
    f.bench = bench;
    f.profile = profile;
    f.trace = trace;
    f.seed = seed;
    f.graphReplay = graphReplay;
    f.data = data;
    f.profileJson = profileJson;
    f.device = device;
    if (runCmd)
      return cmdRun(gs, f);
    return cmdCompare(gs, seed, data, profileJson, device);
  } catch (const UsageError &e) {
    llvm::errs() << "minijit: " << e.what() << "\n";
    return kUsage;
  } catch (const Error &e) {
    llvm::errs() << "minijit: " << e.what() << "\n";
    return kFailed;
  }
}
