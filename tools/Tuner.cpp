//===- tools/Tuner.cpp - the search behind `minijit tune` ------------------===//
// One kernel at a time: the candidates compiled at once (a compile of the
// whole graph each, with that kernel's parameters set, so the program, its
// launches and workspaces are what a later compile makes), then on the
// device one after another: checked against the CPU reference (computed
// once), timed alone, and the fastest few timed again against the default
// before the winner is stored.
//===----------------------------------------------------------------------===//
#include "tools/Tuner.h"

#include "ir/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <chrono>
#include <map>

namespace minijit {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The first line of an error (NVRTC's carry the log and the source).
std::string firstLine(const std::string &text) { return text.substr(0, text.find('\n')); }

/// A candidate compiled as part of the whole graph, or why it did not.
struct CompiledCandidate {
  std::optional<CompiledGraph> graph;
  std::string error;
};

/// Why kernel `k` of `c` cannot launch on `dev` by what ptxas reported
/// (registers for the whole block, shared memory), or empty.
std::string exceedsCompiledLimits(const CompiledGraph &c, size_t k, const DeviceProperties &dev) {
  const ProgramKernel &pk = c.program.kernels[k];
  const KernelResources &r = pk.resources;
  if (!r.known)
    return "";
  int64_t registers = int64_t(r.registers) * pk.block;
  if (registers > dev.regsPerBlock)
    return llvm::formatv("{0} registers a thread x {1} threads exceed the block's {2}", r.registers,
                         pk.block, dev.regsPerBlock)
        .str();
  int64_t shared = int64_t(r.sharedBytes) + pk.dynamicShared;
  if (shared > dev.sharedPerBlockOptin)
    return llvm::formatv("{0} bytes of shared memory a block; the device allows {1}", shared,
                         dev.sharedPerBlockOptin)
        .str();
  return "";
}

/// Compiles `g` once per candidate, kernel `k` scheduled by it, several at
/// a time. Kernels other than `k` come from the cache.
std::vector<CompiledCandidate> compileCandidates(const Graph &g, const CompileOptions &base,
                                                 size_t k, const std::vector<Candidate> &cands,
                                                 unsigned threads) {
  std::vector<CompiledCandidate> out(cands.size());
  auto compileOne = [&](size_t i) {
    CompileOptions o = base;
    o.kernelScheduleOverrides[static_cast<int>(k)] = cands[i].overrides;
    o.threads = 1;
    try {
      CompiledGraph c = compileGraph(g, o);
      const CompiledKernel &ck = c.detail->kernels.at(k);
      if (describeSchedule(ck.schedule) != describeSchedule(cands[i].kernel.schedule)) {
        out[i].error = "the compile scheduled it as " + describeSchedule(ck.schedule);
        return;
      }
      if (std::string why = exceedsCompiledLimits(c, k, o.device); !why.empty()) {
        out[i].error = why;
        return;
      }
      out[i].graph.emplace(std::move(c));
    } catch (const Error &e) {
      out[i].error = firstLine(e.what());
    }
  };
  unsigned n = threads ? threads : llvm::hardware_concurrency().compute_thread_count();
  n = std::max(1u, std::min<unsigned>(n, static_cast<unsigned>(cands.size())));
  if (n == 1) {
    for (size_t i = 0; i < cands.size(); ++i)
      compileOne(i);
    return out;
  }
  llvm::ThreadPool pool(llvm::hardware_concurrency(n));
  for (size_t i = 0; i < cands.size(); ++i)
    pool.async([&, i] { compileOne(i); });
  pool.wait();
  return out;
}

/// The compile every candidate starts from: rules' schedules, no database.
CompileOptions baseOptions(const TuneOptions &opt, const DeviceProperties &dev, KernelCache &cache) {
  CompileOptions base;
  base.fusion = opt.fusion;
  base.allowTf32 = opt.allowTf32;
  base.tf32x3 = opt.tf32x3;
  base.device = dev;
  base.tuning = CompileOptions::Tuning::Off;
  base.cache = &cache;
  base.threads = opt.threads;
  return base;
}

void refuseHandSetSchedules() {
  std::string env = scheduleEnvironmentText();
  if (!env.empty())
    throw GraphError("MINIJIT_SCHEDULE is set ('" + env +
                     "'): the search sets each kernel's parameters itself; unset it");
}

/// A candidate's name in the report: its overrides, or "(default)".
std::string candidateName(const ScheduleOverrides &o) {
  return o.empty() ? "(default)" : o.str();
}

/// One kernel's record before its search: name, key, and whether an
/// earlier kernel had the same key.
KernelTune startKernel(const CompiledGraph &def, size_t k, KernelCache &cache,
                       const std::vector<KernelTune> &earlier) {
  KernelTune kt;
  kt.index = static_cast<int>(k);
  kt.name = def.detail->kernels[k].name;
  kt.key = kernelTuningKey(def, k, cache);
  for (const KernelTune &e : earlier)
    if (e.key == kt.key) {
      kt.sameAs = e.sameAs >= 0 ? e.sameAs : e.index;
      break;
    }
  return kt;
}

void say(const TuneOptions &opt, const std::string &line, bool transient = false) {
  if (opt.progress)
    opt.progress(line, transient);
}

/// The device side of a search: the inputs, the reference, rotated buffer
/// sets, and each candidate checked and timed.
class Bench {
public:
  Bench(const Graph &g, const Device &gpu, const CompiledGraph &def, const TuneOptions &opt)
      : G(g), Gpu(gpu), Opt(opt), Inputs(randomInputs(g, opt.seed)),
        Ref(referenceOutputs(g, def, Inputs)) {
    const Program &p = def.program;
    int64_t io = 0;
    for (int b : p.inputs)
      io += p.buffers[b].bytes();
    for (int b : p.outputs)
      io += p.buffers[b].bytes();
    // Enough sets that a round of runs touches 3x the L2 (at most 8).
    int sets = static_cast<int>(std::clamp<int64_t>(
        (3 * gpu.properties().l2Bytes + io - 1) / std::max<int64_t>(io, 1), 1, 8));
    Executable exe(gpu, p);
    Ins.resize(sets);
    Outs.resize(sets);
    for (int s = 0; s < sets; ++s) {
      for (const HostTensor &h : Inputs)
        Ins[s].push_back(DeviceTensor::fromHost(gpu, h));
      Outs[s] = exe.allocateOutputs();
    }
  }

  const std::vector<HostTensor> &inputs() const { return Inputs; }

  /// Checks `c` (all its outputs against the reference, on fresh inputs:
  /// a run may update its inputs in place), then times kernel `k` alone.
  /// Rejects (outcome and why set) what fails.
  void measure(const CompiledGraph &c, size_t k, CandidateResult &r) {
    try {
      Executable exe(Gpu, c.program);
      std::vector<DeviceTensor> din;
      for (const HostTensor &h : Inputs)
        din.push_back(DeviceTensor::fromHost(Gpu, h));
      std::vector<DeviceTensor> dout = exe.allocateOutputs();
      poisonTensors(dout);
      exe.enqueue(din, dout);
      exe.synchronize();
      CheckedRun run;
      for (const DeviceTensor &t : dout)
        run.outputs.push_back(t.download());
      compareWithReference(Ref, run);
      for (size_t i = 0; i < run.compare.size() && !run.ok; ++i)
        if (!run.compare[i].ok) {
          r.outcome = CandidateResult::Outcome::Rejected;
          r.why = "output %" + G.node(G.outputs()[i]).name +
                  " differs from the CPU reference: " + run.compare[i].summary;
          return;
        }
      r.us = time(exe, k);
      r.outcome = CandidateResult::Outcome::Timed;
    } catch (const Error &e) {
      r.outcome = CandidateResult::Outcome::Rejected;
      r.why = firstLine(e.what());
    }
  }

  /// Times kernel `k` of `c` again; nullopt when it fails.
  std::optional<double> retime(const CompiledGraph &c, size_t k) {
    try {
      Executable exe(Gpu, c.program);
      return time(exe, k);
    } catch (const Error &) {
      return std::nullopt;
    }
  }

private:
  double time(Executable &exe, size_t k) {
    return timeKernelRotating(exe, k, Ins, Outs, std::max(1, Opt.runs), 3).medianUs;
  }

  const Graph &G;
  const Device &Gpu;
  const TuneOptions &Opt;
  std::vector<HostTensor> Inputs;
  ReferenceOutputs Ref;
  std::vector<std::vector<DeviceTensor>> Ins, Outs;
};

std::string progressPrefix(const KernelTune &kt) {
  return llvm::formatv("tune: k{0} {1}", kt.index, kt.name).str();
}

/// The fastest few timed candidates and the default, timed once more each;
/// a candidate keeps the better of its two medians (the first round may
/// have caught the device busy), so the winner is not a lucky draw.
void timeAgain(KernelTune &kt, const std::vector<CompiledCandidate> &compiled, size_t k,
               Bench &bench) {
  std::vector<size_t> order;
  for (size_t i = 1; i < kt.candidates.size(); ++i)
    if (kt.candidates[i].outcome == CandidateResult::Outcome::Timed)
      order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return kt.candidates[a].us < kt.candidates[b].us; });
  order.resize(std::min<size_t>(order.size(), 3));
  order.insert(order.begin(), 0);
  for (size_t i : order) {
    CandidateResult &c = kt.candidates[i];
    if (c.outcome != CandidateResult::Outcome::Timed || !compiled[i].graph)
      continue;
    if (std::optional<double> us = bench.retime(*compiled[i].graph, k))
      c.us = std::min(c.us, *us);
  }
}

} // namespace

std::string kernelTuningKey(const CompiledGraph &c, size_t k, KernelCache &cache) {
  const CompiledKernel &ck = c.detail->kernels.at(k);
  return TuningDatabase::keyFor(cache, tuningSource(ck.lowered, ck.schedule), c.target,
                                c.device);
}

std::optional<TuningEntry> chooseWinner(const KernelTune &k, const std::string &driver) {
  using Outcome = CandidateResult::Outcome;
  if (k.candidates.empty() || !k.candidates[0].overrides.empty() ||
      k.candidates[0].outcome != Outcome::Timed)
    return std::nullopt;
  const CandidateResult &def = k.candidates[0];
  const CandidateResult *best = &def;
  int64_t timed = 0;
  for (const CandidateResult &c : k.candidates) {
    if (c.outcome != Outcome::Timed)
      continue;
    ++timed;
    if (c.us < best->us)
      best = &c;
  }
  // Within 1% of the default is noise: the default stays.
  if (best->us > 0.99 * def.us)
    best = &def;
  TuningEntry e;
  e.overrides = best->overrides;
  e.tunedUs = best->us;
  e.defaultUs = def.us;
  e.candidates = timed;
  e.driver = driver;
  return e;
}

bool recordWinner(KernelTune &k, TuningDatabase &db) {
  if (!k.winner) {
    k.storeError = "no winner (the default was not timed)";
    return false;
  }
  std::string error;
  if (!db.store(k.key, *k.winner, error)) {
    k.storeError = error;
    return false;
  }
  k.storedAt = db.pathFor(k.key);
  return true;
}

TuneReport tuneGraph(const Graph &g, const Device &gpu, const TuneOptions &opt) {
  refuseHandSetSchedules();
  auto t0 = Clock::now();
  const DeviceProperties &dev = gpu.properties();
  KernelCache memoryOnly("", true);
  KernelCache &cache =
      opt.cache ? *opt.cache : KernelCache::global().enabled() ? KernelCache::global() : memoryOnly;
  TuningDatabase &db = opt.database ? *opt.database : TuningDatabase::global();
  CompileOptions base = baseOptions(opt, dev, cache);
  CompiledGraph def = compileGraph(g, base);
  TuneReport report;
  report.graph = g.name();
  report.device = dev.name;
  report.database = db.directory();
  Bench bench(g, gpu, def, opt);
  std::string driver = std::to_string(dev.driverVersion);
  size_t n = def.detail->kernels.size();
  for (size_t k = 0; k < n; ++k) {
    KernelTune kt = startKernel(def, k, cache, report.kernels);
    auto tk = Clock::now();
    if (kt.sameAs >= 0) {
      report.kernels.push_back(std::move(kt));
      continue;
    }
    if (secondsSince(t0) >= opt.budgetS) {
      kt.skipped = llvm::formatv("the budget of {0} s was spent", opt.budgetS).str();
      report.kernels.push_back(std::move(kt));
      continue;
    }
    CandidateSpace space =
        candidateSpace(def.detail->kernels[k].body, dev, def.target, opt.maxCandidates);
    kt.dropped = std::move(space.dropped);
    say(opt, llvm::formatv("{0}: compiling {1} candidates", progressPrefix(kt),
                           space.candidates.size()));
    std::vector<CompiledCandidate> compiled = compileCandidates(g, base, k, space.candidates, opt.threads);
    std::optional<size_t> best; // the fastest timed so far
    for (size_t i = 0; i < space.candidates.size(); ++i) {
      CandidateResult r;
      r.overrides = space.candidates[i].overrides;
      r.schedule = describeSchedule(space.candidates[i].kernel.schedule);
      if (!compiled[i].graph) {
        r.outcome = CandidateResult::Outcome::Rejected;
        r.why = compiled[i].error;
        kt.candidates.push_back(std::move(r));
        continue;
      }
      r.resources = compiled[i].graph->program.kernels[k].resources;
      double spent = secondsSince(t0), spentHere = secondsSince(tk);
      if (i > 0 && (spent >= opt.budgetS || spentHere >= opt.kernelBudgetS)) {
        r.outcome = CandidateResult::Outcome::NotTimed;
        r.why = spent >= opt.budgetS
                    ? llvm::formatv("the budget of {0} s was spent", opt.budgetS).str()
                    : llvm::formatv("the kernel's {0} s were spent", opt.kernelBudgetS).str();
        kt.candidates.push_back(std::move(r));
        continue;
      }
      bench.measure(*compiled[i].graph, k, r);
      kt.candidates.push_back(std::move(r));
      const CandidateResult &last = kt.candidates.back();
      if (last.outcome == CandidateResult::Outcome::Timed &&
          (!best || last.us < kt.candidates[*best].us))
        best = kt.candidates.size() - 1;
      if (best) {
        const CandidateResult &b = kt.candidates[*best];
        say(opt,
            llvm::formatv("{0}: {1}/{2} tried, best so far {3} {4:f2} us", progressPrefix(kt),
                          i + 1, space.candidates.size(),
                          candidateName(b.overrides), b.us),
            /*transient=*/true);
      }
    }
    timeAgain(kt, compiled, k, bench);
    kt.winner = chooseWinner(kt, driver);
    if (kt.winner)
      recordWinner(kt, db);
    else
      kt.storeError = "no winner: the default schedule was not timed";
    kt.seconds = secondsSince(tk);
    say(opt, llvm::formatv("{0}: done in {1:f1} s", progressPrefix(kt), kt.seconds));
    report.kernels.push_back(std::move(kt));
  }
  // A compile that reads the database now takes the winners: run it, check it.
  bool anyStored = llvm::any_of(report.kernels, [](const KernelTune &k) { return !k.storedAt.empty(); });
  if (anyStored) {
    CompileOptions use = base;
    use.tuning = CompileOptions::Tuning::UseDatabase;
    use.tuningDatabase = &db;
    CompiledGraph tuned = compileGraph(g, use);
    for (const CompiledKernel &ck : tuned.detail->kernels)
      report.tunedKernels += ck.tuned.has_value();
    CheckedRun r = checkCompiled(g, gpu, std::move(tuned), opt.seed, &bench.inputs());
    report.verified = true;
    report.verifyOk = r.ok;
    for (size_t i = 0; i < r.compare.size(); ++i)
      report.verifySummary += (i ? "; %" : "%") + g.node(g.outputs()[i]).name + ": " +
                              r.compare[i].summary;
  }
  report.seconds = secondsSince(t0);
  return report;
}

TuneReport listCandidates(const Graph &g, const TuneOptions &opt, const DeviceProperties &device) {
  refuseHandSetSchedules();
  auto t0 = Clock::now();
  KernelCache memoryOnly("", true);
  KernelCache &cache =
      opt.cache ? *opt.cache : KernelCache::global().enabled() ? KernelCache::global() : memoryOnly;
  CompileOptions base = baseOptions(opt, device, cache);
  CompiledGraph def = compileGraph(g, base);
  TuneReport report;
  report.graph = g.name();
  report.device = device.name;
  report.dryRun = true;
  size_t n = def.detail->kernels.size();
  for (size_t k = 0; k < n; ++k) {
    KernelTune kt = startKernel(def, k, cache, report.kernels);
    auto tk = Clock::now();
    if (kt.sameAs >= 0) {
      report.kernels.push_back(std::move(kt));
      continue;
    }
    CandidateSpace space =
        candidateSpace(def.detail->kernels[k].body, device, def.target, opt.maxCandidates);
    kt.dropped = std::move(space.dropped);
    say(opt, llvm::formatv("{0}: compiling {1} candidates", progressPrefix(kt),
                           space.candidates.size()));
    std::vector<CompiledCandidate> compiled = compileCandidates(g, base, k, space.candidates, opt.threads);
    for (size_t i = 0; i < space.candidates.size(); ++i) {
      CandidateResult r;
      r.overrides = space.candidates[i].overrides;
      r.schedule = describeSchedule(space.candidates[i].kernel.schedule);
      if (compiled[i].graph) {
        r.outcome = CandidateResult::Outcome::Compiled;
        r.resources = compiled[i].graph->program.kernels[k].resources;
      } else {
        r.outcome = CandidateResult::Outcome::Rejected;
        r.why = compiled[i].error;
      }
      kt.candidates.push_back(std::move(r));
    }
    kt.seconds = secondsSince(tk);
    report.kernels.push_back(std::move(kt));
  }
  report.seconds = secondsSince(t0);
  return report;
}

std::string formatTuneReport(const TuneReport &r) {
  using Outcome = CandidateResult::Outcome;
  std::string out;
  llvm::raw_string_ostream os(out);
  size_t n = r.kernels.size();
  os << llvm::formatv("tune {0} on {1}: {2} kernel{3}{4}\n", r.graph, r.device, n,
                      n == 1 ? "" : "s",
                      r.dryRun ? " (dry run: candidates compiled through NVRTC, none run)" : "");
  for (const KernelTune &k : r.kernels) {
    os << llvm::formatv("kernel k{0} {1}: ", k.index, k.name);
    if (k.sameAs >= 0) {
      os << llvm::formatv("the same kernel as k{0}, which its search covers\n", k.sameAs);
      continue;
    }
    if (!k.skipped.empty()) {
      os << "not searched: " << k.skipped << "; it keeps its default schedule\n";
      continue;
    }
    size_t timed = llvm::count_if(k.candidates, [](const CandidateResult &c) {
      return c.outcome == Outcome::Timed || c.outcome == Outcome::Compiled;
    });
    os << llvm::formatv("{0} candidates ({1} {2}), {3} dropped before compiling\n",
                        k.candidates.size(), timed, r.dryRun ? "compiled" : "timed",
                        k.dropped.size());
    for (const CandidateResult &c : k.candidates) {
      std::string name = candidateName(c.overrides);
      std::string what;
      switch (c.outcome) {
      case Outcome::Compiled:
        what = c.resources.known ? llvm::formatv("{0} registers{1}", c.resources.registers,
                                                 c.resources.spillStores
                                                     ? llvm::formatv(", {0} bytes spilled",
                                                                     c.resources.spillStores)
                                                           .str()
                                                     : std::string())
                                       .str()
                                 : "compiled";
        break;
      case Outcome::Timed: what = llvm::formatv("{0:f2} us", c.us).str(); break;
      case Outcome::Rejected: what = "rejected: " + c.why; break;
      case Outcome::NotTimed: what = "not timed: " + c.why; break;
      }
      os << llvm::formatv("  {0,-30} {1}\n", name, what);
      if (c.outcome != Outcome::Rejected)
        os << "      " << c.schedule << "\n";
    }
    if (r.dryRun) {
      for (const DroppedCandidate &d : k.dropped)
        os << llvm::formatv("  dropped {0}: {1}\n", d.overrides.str(), d.why);
      continue;
    }
    if (k.winner) {
      const TuningEntry &w = *k.winner;
      if (w.overrides.empty())
        os << llvm::formatv("  best: the default ({0:f2} us); no candidate was 1% faster\n",
                            w.defaultUs);
      else
        os << llvm::formatv("  best: {0}: {1:f2} us against the default's {2:f2} us, {3:f2}x\n",
                            w.overrides.str(), w.tunedUs, w.defaultUs,
                            w.tunedUs > 0 ? w.defaultUs / w.tunedUs : 0.0);
    }
    if (!k.storedAt.empty())
      os << "  stored: " << k.storedAt << "\n";
    else if (!k.storeError.empty())
      os << "  not stored: " << k.storeError << "\n";
  }
  if (r.verified)
    os << llvm::formatv("verify: a compile now takes {0} tuned schedule{1} from the database; "
                        "{2}: {3}\n",
                        r.tunedKernels, r.tunedKernels == 1 ? "" : "s",
                        r.verifyOk ? "outputs match the CPU reference" : "MISMATCH",
                        r.verifySummary);
  os << llvm::formatv("{0} in {1:f1} s\n", r.dryRun ? "listed" : "searched", r.seconds);
  return out;
}

} // namespace minijit
