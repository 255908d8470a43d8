//===- tests/support/RandomRun.cpp - many random graphs, every mismatch counted ===//
#include "tests/support/RandomRun.h"

#include "compiler/CompileDetail.h"
#include "ir/Bind.h"
#include "ir/Error.h"
#include "tests/support/BatchCompile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace minijit {

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void countKernels(const CompiledGraph &c, RandomRunSummary &s) {
  for (const CompiledKernel &k : c.detail->kernels)
    ++(k.origin == CachedKernel::From::Compiled ? s.kernelsCompiled : s.kernelsCached);
}

/// The failed comparisons of one run, one per line.
std::string failures(const Graph &g, const CheckedRun &r) {
  std::string out;
  for (size_t i = 0; i < r.compare.size(); ++i)
    if (!r.compare[i].ok)
      out += (out.empty() ? "" : "; ") + ("%" + g.node(g.outputs()[i]).name) + ": " +
             r.compare[i].summary;
  return out;
}

} // namespace

std::vector<uint64_t> RandomRunSummary::seeds() const {
  std::vector<uint64_t> out;
  for (const RandomFinding &f : findings)
    if (!llvm::is_contained(out, f.seed))
      out.push_back(f.seed);
  return out;
}

std::string RandomRunSummary::line(uint64_t first) const {
  std::vector<uint64_t> mismatch, error;
  for (const RandomFinding &f : findings) {
    std::vector<uint64_t> &list = f.error ? error : mismatch;
    if (!llvm::is_contained(list, f.seed))
      list.push_back(f.seed);
  }
  auto join = [](const std::vector<uint64_t> &v) {
    std::string out;
    for (uint64_t x : v)
      out += (out.empty() ? "" : ",") + std::to_string(x);
    return out.empty() ? std::string("-") : out;
  };
  size_t mismatches = llvm::count_if(findings, [](const RandomFinding &f) { return !f.error; });
  return llvm::formatv("summary first={0} next={1} graphs={2} gpu={3} mismatches={4} errors={5} "
                       "compiled={6} cached={7} seconds={8:f1} compile_s={9:f1} run_s={10:f1} "
                       "reference_s={11:f1} mismatch_seeds={12} error_seeds={13}",
                       first, nextSeed, graphs, ranOnGpu ? "yes" : "no", mismatches,
                       findings.size() - mismatches, kernelsCompiled, kernelsCached, seconds,
                       compileSeconds, runSeconds, referenceSeconds, join(mismatch), join(error))
      .str();
}

namespace {

/// One graph's two programs on their way through a batch.
struct Pending {
  uint64_t seed;
  Graph graph;      ///< bound, when it has named sizes
  std::string dims; ///< its binding ("B=7"), or empty
  std::optional<CompiledGraph> program[2]; ///< fused, unfused
  std::string error[2];                    ///< why a program could not be compiled
};

class Runner {
public:
  Runner(const RandomRunOptions &o, const Device *gpu, llvm::raw_ostream &log, std::mutex &logLock)
      : O(o), Gpu(gpu), Log(log), LogLock(logLock) {}

  RandomRunSummary run() {
    auto t0 = std::chrono::steady_clock::now();
    S.ranOnGpu = Gpu != nullptr;
    S.nextSeed = O.first;
    unsigned batch = std::max(1u, O.batch);
    uint64_t stride = std::max<uint64_t>(1, O.stride);
    for (uint64_t done = 0; done < O.count;) {
      if (O.budgetSeconds > 0 && secondsSince(t0) > O.budgetSeconds)
        break;
      if (O.stopAtFirst && !S.findings.empty())
        break;
      auto compileStart = std::chrono::steady_clock::now();
      std::vector<Pending> graphs;
      for (; done < O.count && graphs.size() < batch; ++done)
        for (Pending &p : prepareAll(O.first + done * stride))
          graphs.push_back(std::move(p));
      if (O.batch > 0)
        compileBatch(graphs);
      S.compileSeconds += secondsSince(compileStart);
      for (Pending &p : graphs)
        check(p);
      S.graphs += graphs.size();
      S.nextSeed = O.first + done * stride;
    }
    S.seconds = secondsSince(t0);
    return std::move(S);
  }

private:
  CompileOptions options(bool fused) const {
    CompileOptions opt;
    opt.fusion = fused;
    opt.threads = O.threads;
    opt.compileKernels = O.batch == 0;
    if (Gpu)
      opt.device = Gpu->properties();
    return opt;
  }

  /// The graph of `seed`, or with named sizes its bindings.
  std::vector<Pending> prepareAll(uint64_t seed) {
    std::vector<Pending> out;
    Graph g = randomGraph(seed, O.graph);
    std::optional<Graph> named;
    int64_t size = g.node(g.inputs()[0]).shape.rank() ? g.node(g.inputs()[0]).shape[0] : 1;
    if (O.namedSizes)
      named = nameDimension(g, size, "B");
    if (!named) {
      out.push_back(prepare(seed, std::move(g), ""));
      return out;
    }
    for (int64_t b : {size, 2 * size + 1, int64_t(1)}) {
      try {
        out.push_back(prepare(seed, bindDims(*named, {{"B", b}}), "B=" + std::to_string(b)));
      } catch (const GraphError &) {
        // too large a tensor at this size: the other bindings still run
      }
    }
    return out;
  }

  Pending prepare(uint64_t seed, Graph graph, std::string dims) {
    Pending p{seed, std::move(graph), std::move(dims), {}, {}};
    for (int f = 0; f < 2; ++f) {
      // A throw is a finding like a wrong value: the run must not stop on it.
      try {
        p.program[f] = compileGraph(p.graph, options(f == 0));
      } catch (const std::exception &e) {
        p.error[f] = e.what();
      }
    }
    return p;
  }

  /// Every kernel of the batch in one NVRTC call; when that fails, program
  /// by program, so the error lands on the graph that has it.
  void compileBatch(std::vector<Pending> &graphs) {
    std::vector<CompiledGraph *> all;
    for (Pending &p : graphs)
      for (auto &c : p.program)
        if (c)
          all.push_back(&*c);
    try {
      compileTogether(all);
      return;
    } catch (const std::exception &) {
    }
    for (Pending &p : graphs)
      for (int f = 0; f < 2; ++f) {
        if (!p.program[f])
          continue;
        try {
          compileTogether({&*p.program[f]});
        } catch (const std::exception &e) {
          p.error[f] = e.what();
          p.program[f].reset();
        }
      }
  }

  void check(Pending &p) {
    if (O.printGraphs) {
      std::lock_guard<std::mutex> lock(LogLock);
      Log << "# seed " << p.seed << (p.dims.empty() ? "" : " " + p.dims) << "\n"
          << printGraph(p.graph);
    }
    for (int f = 0; f < 2; ++f) {
      RandomFinding finding;
      finding.seed = p.seed;
      finding.fused = f == 0;
      if (!p.program[f]) {
        finding.error = true;
        finding.what = p.error[f];
      } else {
        countKernels(*p.program[f], S);
        if (!Gpu) {
          if (O.referenceWithoutGpu)
            referenceOnly(p, f);
          continue;
        }
        try {
          auto runStart = std::chrono::steady_clock::now();
          CheckedRun r = checkCompiled(p.graph, *Gpu, std::move(*p.program[f]), p.seed);
          S.referenceSeconds += r.referenceSeconds;
          S.runSeconds += secondsSince(runStart) - r.referenceSeconds;
          if (r.ok)
            continue;
          finding.what = failures(p.graph, r);
          if (O.verbose)
            finding.what += "\n" + printGraph(p.graph) + r.compiled.fusedText();
        } catch (const std::exception &e) {
          finding.error = true;
          finding.what = e.what();
        }
      }
      if (!p.dims.empty())
        finding.what = "[" + p.dims + "] " + finding.what;
      std::lock_guard<std::mutex> lock(LogLock);
      dump(p);
      Log << llvm::formatv("{0} seed={1} fusion={2}: {3}\n", finding.error ? "error" : "mismatch",
                           p.seed, finding.fused ? "on" : "off", finding.what);
      Log.flush();
      S.findings.push_back(std::move(finding));
    }
  }

  /// The CPU reference of program `f` with its bounds, with nothing to
  /// compare it with: what the check would cost.
  void referenceOnly(Pending &p, int f) {
    CheckedRun r;
    r.compiled = std::move(*p.program[f]);
    r.inputs = randomInputs(p.graph, p.seed);
    checkOutputs(p.graph, r);
    S.referenceSeconds += r.referenceSeconds;
  }

  /// The flagged graph as text in O.dumpDir (once per seed).
  void dump(const Pending &p) {
    if (O.dumpDir.empty() || (!S.findings.empty() && S.findings.back().seed == p.seed))
      return;
    llvm::sys::fs::create_directories(O.dumpDir);
    std::error_code ec;
    llvm::raw_fd_ostream os(O.dumpDir + "/rg" + std::to_string(p.seed) + ".mj", ec);
    if (ec) {
      Log << "cannot write to " << O.dumpDir << ": " << ec.message() << "\n";
      return;
    }
    os << "# minijit_random_run seed " << p.seed << ": minijit run THIS --check --seed " << p.seed
       << (p.dims.empty() ? "" : " --dim " + p.dims) << "\n"
       << printGraph(p.graph);
  }

  const RandomRunOptions &O;
  const Device *Gpu;
  llvm::raw_ostream &Log;
  std::mutex &LogLock; ///< findings and dumps, one worker at a time
  RandomRunSummary S;
};

/// Worker w of `workers` takes graphs w, w + workers, ... of the range.
RandomRunOptions workerOptions(const RandomRunOptions &o, unsigned w, unsigned workers) {
  RandomRunOptions sub = o;
  uint64_t stride = std::max<uint64_t>(1, o.stride);
  sub.first = o.first + w * stride;
  sub.stride = stride * workers;
  sub.count = o.count > w ? (o.count - w + workers - 1) / workers : 0;
  sub.workers = 1;
  return sub;
}

/// The workers' summaries as one: the run resumes at the lowest seed a
/// worker had not tried.
RandomRunSummary merge(std::vector<RandomRunSummary> parts, const RandomRunOptions &o) {
  RandomRunSummary all;
  all.nextSeed = o.first + o.count * std::max<uint64_t>(1, o.stride);
  for (RandomRunSummary &p : parts) {
    all.graphs += p.graphs;
    all.nextSeed = std::min(all.nextSeed, p.nextSeed);
    for (RandomFinding &f : p.findings)
      all.findings.push_back(std::move(f));
    all.kernelsCompiled += p.kernelsCompiled;
    all.kernelsCached += p.kernelsCached;
    all.compileSeconds += p.compileSeconds;
    all.runSeconds += p.runSeconds;
    all.referenceSeconds += p.referenceSeconds;
    all.ranOnGpu = p.ranOnGpu;
  }
  return all;
}

} // namespace

RandomRunSummary runRandomGraphs(const RandomRunOptions &o, const Device *gpu,
                                 llvm::raw_ostream &log) {
  std::mutex logLock;
  unsigned workers = std::max(1u, o.workers);
  if (workers == 1)
    return Runner(o, gpu, log, logLock).run();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<RandomRunOptions> options;
  for (unsigned w = 0; w < workers; ++w)
    options.push_back(workerOptions(o, w, workers));
  std::vector<RandomRunSummary> parts(workers);
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w)
    threads.emplace_back([&, w] { parts[w] = Runner(options[w], gpu, log, logLock).run(); });
  for (std::thread &t : threads)
    t.join();
  RandomRunSummary all = merge(std::move(parts), o);
  all.seconds = secondsSince(t0);
  return all;
}

} // namespace minijit
