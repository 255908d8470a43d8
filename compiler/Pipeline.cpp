//===- compiler/Pipeline.cpp - compileGraph as the list of its stages -----===//
// verify, simplify (graph -> graph), fuse and lower, schedule and name,
// emit CUDA, NVRTC. Each stage fills the CompiledKernel records; the Program
// for the runtime is assembled once the schedules are known. MINIJIT_DEBUG
// prints stage names and times (1), the IR after each stage (2), the CUDA and
// PTX (3); MINIJIT_DUMP prints or writes the named stages' text.
//===----------------------------------------------------------------------===//
#include "compiler/Compiler.h"
#include "compiler/CompileDetail.h"
#include "compiler/Mutation.h"
#include "compiler/fusion/Attention.h"
#include "compiler/schedule/SimtTiles.h"

#include "compiler/simplify/ArgmaxRewrites.h"
#include "compiler/simplify/MatmulRewrites.h"
#include "compiler/simplify/Simplify.h"
#include "compiler/templates/KernelTemplate.h"
#include "ir/Autodiff.h"
#include "ir/Bind.h"
#include "ir/Error.h"
#include "ir/Verifier.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <map>
#include <optional>

namespace minijit {

namespace {

using Clock = std::chrono::steady_clock;

int debugLevel() {
  const char *d = std::getenv("MINIJIT_DEBUG");
  return d ? std::atoi(d) : 0;
}

/// The stages MINIJIT_DUMP names, in its order; a warning for other names.
std::vector<Stage> dumpedStages() {
  std::vector<Stage> out;
  const char *what = std::getenv("MINIJIT_DUMP");
  if (!what || !*what)
    return out;
  llvm::SmallVector<llvm::StringRef, 4> names;
  llvm::StringRef(what).split(names, ',', -1, false);
  for (llvm::StringRef n : names) {
    if (std::optional<Stage> s = parseStage(n)) {
      out.push_back(*s);
      continue;
    }
    llvm::errs() << "minijit: warning: MINIJIT_DUMP: unknown stage '" << n << "' (expected "
                 << stageList() << ")\n";
  }
  return out;
}

/// Prints each dumped stage to stderr, or writes it into MINIJIT_DUMP_DIR.
void dumpStages(const CompiledGraph &c, llvm::ArrayRef<Stage> stages) {
  const char *dir = std::getenv("MINIJIT_DUMP_DIR");
  for (Stage s : stages) {
    std::string text = c.text(s);
    if (!dir || !*dir) {
      llvm::errs() << "// ---- MINIJIT_DUMP " << stageName(s) << " of " << c.graph.name() << "\n"
                   << text;
      continue;
    }
    std::string path = std::string(dir) + "/" + c.graph.name() + std::string(dumpExtension(s));
    std::error_code ec = llvm::sys::fs::create_directories(dir);
    llvm::raw_fd_ostream os(path, ec);
    if (ec) {
      llvm::errs() << "minijit: warning: MINIJIT_DUMP_DIR: cannot write " << path << ": "
                   << ec.message() << "\n";
      continue;
    }
    os << text;
  }
}

/// The overrides a compile takes: CompileOptions::scheduleOverrides, or
/// where none is set those of $MINIJIT_SCHEDULE (one more way in), parsed
/// here once. Text that does not parse is the user's mistake: CompileError.
ScheduleOverrides overridesOf(const CompileOptions &opt) {
  if (!opt.scheduleOverrides.empty())
    return opt.scheduleOverrides;
  Expected<ScheduleOverrides> env = parseScheduleOverrides(scheduleEnvironmentText());
  if (!env)
    throw CompileError(env.error());
  return *env;
}

/// The graph rewrites of a compile with fusion (`tf32`: its f32 products
/// run in TF32, whose operands rewriteTf32Operands copies last).
MatmulRewriteOptions matmulRewriteOptions(const CompileOptions &opt, const ScheduleOverrides &o,
                                          bool alignRows, bool tf32) {
  MatmulRewriteOptions r;
  r.reassociate = opt.reassociate;
  r.alignRows = alignRows;
  r.fewTermsUpTo = o.terms.value_or(kFewTermsUpTo);
  r.fewTermsUpTo16Bit = o.terms.value_or(kFewTermsUpTo16Bit);
  // The CUDA cores' f32 matmul reads tiles by float4s where rows are whole
  // float4s (not when pad=0); TF32 products take the Hopper template, which
  // reads both operands k-major (their copies come last, in place of the
  // float4 rows and split-K).
  r.float4Rows = !tf32 && o.pad.value_or(1) != 0;
  // Three TF32 products in place of an f32 one where that pays
  // (tf32x3Pays); the others stay on the CUDA cores. The override tf32x3=0
  // keeps them all there, tf32x3=1 takes those under the line too.
  r.tf32x3 = o.tf32x3.value_or(opt.tf32x3) && !tf32 && alignRows;
  r.tf32x3Always = r.tf32x3 && o.tf32x3 == true;
  if (r.tf32x3)
    r.fewTiles = [dev = opt.device](int64_t batch, int64_t m, int64_t n, int64_t k) {
      int64_t tiles = batch * ((m + 127) / 128) * ((n + 127) / 128);
      return tiles < dev.smCount || (batch == 1 && splitSlices(m, n, k, dev) > 1);
    };
  // Attention's products stay as written: fusion makes them one kernel.
  r.keptProducts = attentionProducts;
  // Split-K where its rule says, by the waves of the f32 template's tiles
  // on the device; splitk=N >= 2 forces N slices, splitk=0 none.
  if (tf32)
    return r;
  if (o.splitk.value_or(1) == 1) {
    r.splitK.rule = [dev = opt.device](int64_t m, int64_t n, int64_t k, int64_t padCopies) {
      return splitSlices(m, n, k, dev, padCopies);
    };
    // (the split in the kernel as its rule takes it: tf32x3 on, split3 not 0)
    if (r.tf32x3 && o.split3.value_or(1) != 0)
      r.splitK.splitInKernel = [dev = opt.device](int64_t m, int64_t n, int64_t k,
                                                  int64_t padCopies) {
        return splitInKernelSlices(m, n, k, padCopies, dev);
      };
  }
  else if (*o.splitk >= 2)
    r.splitK.force = *o.splitk;
  return r;
}

/// What ptxas must have done for a template that splits its registers by
/// setmaxnreg (KernelTemplate::requiredRegisters, the Hopper matmul), else
/// the template is at fault: no wgmma serialized ("wgmma.mma_async
/// instructions are serialized due to ...", 3-4x slower), and `registers` a
/// thread at launch.
void checkRegisterSplit(const std::string &kernel, const NvrtcOutput &image, unsigned registers) {
  if (image.log.find("wgmma.mma_async instructions are serialized") != std::string::npos)
    throw CompileError("kernel " + kernel + ": ptxas serialized its wgmma:\n" + image.log);
  if (image.resources.known && image.resources.registers != registers)
    throw CompileError("kernel " + kernel + ": ptxas gave it " +
                       std::to_string(image.resources.registers) + " registers a thread, not the " +
                       std::to_string(registers) + " its setmaxnreg split needs");
}

/// Elements of parameter `param` that kernel `k` can read, when that is
/// fewer than its buffer may hold and can be told: every load of it gathers
/// (its offset reads an index from memory), so each reads one element per
/// evaluation (an embedding reads the rows its ids select, not the table).
std::optional<int64_t> gatheredElements(const LoweredKernel &k, int param) {
  if (k.kind == KernelKind::Matmul || isAttentionKind(k.kind))
    return std::nullopt;
  std::vector<bool> need = neededValues(k);
  int64_t n = 0;
  bool any = false;
  for (size_t i = 0; i < k.values.size(); ++i) {
    const KValue &v = k.values[i];
    if (v.kind != KValue::Kind::Load || v.param != param || !need[i])
      continue;
    if (k.ctx.valuesIn(v.offset).empty())
      return std::nullopt;
    any = true;
    n += isRowKernel(k.kind) ? (v.perRow ? k.rows : k.rows * k.K) : k.numel;
  }
  if (!any)
    return std::nullopt;
  return n;
}

/// One launch per kernel: its name, geometry and workspace.
void addLaunches(CompiledGraph &c, const CompileDetail &d) {
  for (const CompiledKernel &ck : d.kernels) {
    ProgramKernel pk;
    pk.name = ck.name;
    pk.block = ck.schedule.geometry().block;
    pk.grid = ck.schedule.geometry().grid;
    pk.dynamicShared = ck.schedule.dynamicSharedBytes();
    pk.workspaceBytes = workspaceBytes(ck.lowered, ck.schedule);
    pk.cluster = ck.schedule.geometry().cluster;
    const KernelTemplate &t = kernelTemplate(ck.schedule.kind());
    pk.coResident = t.coResident(ck.schedule);
    pk.persistent = t.persistent();
    if (ck.lowered.symbolic)
      pk.sizeArgs = ck.lowered.symbolic->values;
    c.program.kernels.push_back(std::move(pk));
  }
}

/// The Program as far as the plan and schedules decide it: buffers, one
/// launch per kernel (name, geometry, workspace, arguments, bytes, FLOPs) and
/// the temporary-slot plan. Sources and images follow in later stages.
void assembleProgram(CompiledGraph &c, CompileDetail &d) {
  const Graph &g = c.graph;
  Program &p = c.program;
  p.graphName = g.name();
  p.arch = c.target.name();
  addLaunches(c, d);
  std::vector<int> inputBuffer(g.size(), -1), storedBuffer(g.size(), -1);
  std::vector<bool> isOutput(g.size(), false);
  for (ValueId o : g.outputs())
    isOutput[o] = true;
  for (ValueId in : g.inputs()) {
    const Node &n = g.node(in);
    inputBuffer[in] = static_cast<int>(p.buffers.size());
    p.inputs.push_back(inputBuffer[in]);
    p.buffers.push_back({n.name, n.dtype, n.shape, ProgramBuffer::Role::Input, -1});
  }
  for (const KernelGroup &kg : d.plan.kernels)
    for (ValueId r : kg.roots) {
      const Node &n = g.node(r);
      storedBuffer[r] = static_cast<int>(p.buffers.size());
      p.buffers.push_back({n.name, n.dtype, n.shape,
                           isOutput[r] ? ProgramBuffer::Role::Output : ProgramBuffer::Role::Temp,
                           -1});
    }
  for (ValueId o : g.outputs()) {
    const Node &n = g.node(o);
    if (storedBuffer[o] < 0 && n.shape.isEmpty()) { // no kernel writes it: 0 bytes
      storedBuffer[o] = static_cast<int>(p.buffers.size());
      p.buffers.push_back({n.name, n.dtype, n.shape, ProgramBuffer::Role::Output, -1});
    }
    p.outputs.push_back(storedBuffer[o]);
  }
  for (size_t o = 0; o < g.outputs().size(); ++o)
    p.updates.push_back(g.updatedInput(o));

  std::vector<int> firstUse(p.buffers.size(), -1), lastUse(p.buffers.size(), -1);
  for (size_t k = 0; k < d.kernels.size(); ++k) {
    CompiledKernel &ck = d.kernels[k];
    const LoweredKernel &lk = ck.lowered;
    ProgramKernel &pk = p.kernels[k];
    for (const KParam &param : lk.params) {
      int b = param.written ? storedBuffer[param.node]
                            : (g.node(param.node).op == OpKind::Input ? inputBuffer[param.node]
                                                                      : storedBuffer[param.node]);
      assert(b >= 0 && "every parameter has a buffer");
      pk.args.push_back(b);
      int64_t bytes = p.buffers[b].bytes();
      if (std::optional<int64_t> n = param.written ? std::nullopt
                                                   : gatheredElements(lk, static_cast<int>(pk.args.size() - 1)))
        bytes = std::min(bytes, *n * int64_t(dtypeSize(param.dtype)));
      (param.written ? pk.bytesWritten : pk.bytesRead) += bytes;
      if (firstUse[b] < 0)
        firstUse[b] = static_cast<int>(k);
      lastUse[b] = static_cast<int>(k);
    }
    int64_t elements = isRowKernel(lk.kind) ? lk.rows * lk.K : lk.numel;
    pk.flops = lk.flopsPerElement * elements;
    // The template's target (the Hopper matmul's wgmma needs the
    // architecture-specific one) and TMA descriptors, whose buffers are the
    // kernel's parameters until here.
    const KernelTemplate &t = kernelTemplate(ck.schedule.kind());
    ck.target = t.compileTarget(c.target);
    pk.arch = ck.target.name();
    pk.tensorMaps = t.tensorMaps(lk, ck.schedule);
    for (TensorMapSpec &map : pk.tensorMaps)
      map.buffer = pk.args[map.buffer];
  }
  // Temporaries share slots when their lifetimes (first write .. last read)
  // do not overlap, so a long unfused chain holds two or three at once.
  std::vector<int> slotFreeAfter; // the last launch using each slot
  for (size_t k = 0; k < p.kernels.size(); ++k)
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      ProgramBuffer &buf = p.buffers[b];
      if (buf.role != ProgramBuffer::Role::Temp || firstUse[b] != static_cast<int>(k))
        continue;
      int slot = -1;
      for (size_t s = 0; s < slotFreeAfter.size() && slot < 0; ++s)
        if (slotFreeAfter[s] < static_cast<int>(k))
          slot = static_cast<int>(s);
      if (slot < 0) {
        slot = static_cast<int>(slotFreeAfter.size());
        slotFreeAfter.push_back(-1);
        p.slotBytes.push_back(0);
      }
      buf.slot = slot;
      slotFreeAfter[slot] = lastUse[b];
      p.slotBytes[slot] = std::max(p.slotBytes[slot], buf.bytes());
    }
}

/// The target of a compile: CompileOptions::arch parsed, else the device's.
/// Throws CompileError for a spelling that is not a target.
Target targetOf(const CompileOptions &opt) {
  if (opt.arch.empty())
    return opt.device.target();
  Expected<Target> t = parseTarget(opt.arch);
  if (!t)
    throw CompileError("CompileOptions::arch: " + t.error());
  return *t;
}

class Pipeline {
public:
  Pipeline(const Graph &g, const CompileOptions &opt)
      : G(g), Opt(opt), Tgt(targetOf(opt)),
        Debug(debugLevel()), Dumps(dumpedStages()), D(std::make_shared<CompileDetail>()) {
    C.detail = D;
    C.target = Tgt;
    Last = Opt.compileKernels ? Opt.stopAfter : std::min(Opt.stopAfter, Stage::Cuda);
    Last = producingStage(Last);
    for (Stage s : Dumps)
      Last = std::max(Last, producingStage(s));
  }

  /// The stages in order; each returns early once the last one asked for ran.
  CompiledGraph run() {
    verifyGraph(G);
    if (hasUnboundDims(G))
      throw GraphError("graph '" + G.name() + "' has named dimensions without sizes (" +
                       llvm::join(dimNames(G), ", ") +
                       "): bind them (bindDims, --dim NAME=SIZE), or compile through "
                       "minijit::compile, which binds each run's sizes");
    Overrides = overridesOf(Opt);
    const Graph *source = &G;
    std::optional<Graph> expanded; // the training graph, when G has grad or vjp nodes
    if (hasDerivatives(G)) {
      timed("autodiff", [&] { expanded.emplace(expandAutodiff(G)); });
      verifyInDebugBuilds(*expanded);
      source = &*expanded;
    }
    timed("simplify", [&] {
      C.graph = simplifyGraph(*source);
      if (!Opt.fusion)
        return;
      // Hopper's matmul reads its tiles through TMA, which needs rows of
      // whole 16-byte units (not when wgmma=0 keeps mma.sync).
      bool alignRows = Tgt.hasWgmma() && Overrides.wgmma.value_or(1) != 0;
      bool tf32 = Opt.allowTf32 && alignRows;
      MatmulRewriteResult r =
          rewriteMatmuls(C.graph, matmulRewriteOptions(Opt, Overrides, alignRows, tf32));
      if (Opt.reassociate) { // an argmax of softmax(x) as the argmax of x
        MatmulRewriteResult a = rewriteMonotoneArgs(r.graph);
        r.graph = std::move(a.graph);
        r.applied.insert(r.applied.end(), a.applied.begin(), a.applied.end());
      }
      if (!r.applied.empty()) {
        C.graph = simplifyGraph(r.graph);
        C.rewrites = std::move(r.applied);
      }
      // (not simplified again: a copy that changes only the layout is a pad
      // of nothing, which simplification would drop)
      if (tf32) {
        MatmulRewriteResult t = rewriteTf32Operands(C.graph);
        C.graph = std::move(t.graph);
        C.rewrites.insert(C.rewrites.end(), t.applied.begin(), t.applied.end());
      }
    });
    verifyInDebugBuilds(C.graph);
    if (done(Stage::Graph))
      return finish();
    timed("fuse", [&] { fuse(); });
    timed("schedule", [&] { schedule(); });
    if (done(Stage::Fused))
      return finish();
    timed("emit", [&] { emit(); });
    if (done(Stage::Cuda))
      return finish();
    timed("nvrtc", [&] { compileKernels(); });
    done(Stage::Ptx);
    return finish();
  }

private:
  template <typename F> void timed(const char *name, F work) {
    auto t0 = Clock::now();
    work();
    C.timings.push_back({name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
    if (Debug >= 1)
      llvm::errs() << llvm::formatv("minijit: {0,-10} {1,8:f2} ms\n", name, C.timings.back().ms);
  }

  /// Graph-to-graph stages keep the graph valid; debug builds check it.
  void verifyInDebugBuilds(const Graph &g) {
#ifndef NDEBUG
    verifyGraph(g);
#else
    (void)g;
#endif
  }

  /// Marks `s` reached, prints what MINIJIT_DEBUG asks for after it, and
  /// says whether the pipeline stops here.
  bool done(Stage s) {
    C.reached = s;
    if (Debug >= 2 && s == Stage::Graph)
      llvm::errs() << "// after simplify\n" << C.graphText();
    if (Debug >= 2 && s == Stage::Fused)
      llvm::errs() << C.fusedText();
    if (Debug >= 3 && s == Stage::Ptx)
      llvm::errs() << C.cudaText() << C.ptxText();
    return s == Last;
  }

  CompiledGraph finish() {
    dumpStages(C, Dumps);
    return std::move(C);
  }

  void fuse() {
    FusedGraph f = fuseAndLower(C.graph, Opt.fusion, mutatedLowering());
    D->plan = std::move(f.plan);
    for (LoweredKernel &lk : f.kernels) {
      countMutationSites(lk.misreadReads);
      if (lk.matmul && lk.matmul->dtype == DType::F32) {
        lk.matmul->threeParts = splitIntoTf32x3(lk.matmul->node);
        lk.matmul->tf32 = Opt.allowTf32 || lk.matmul->threeParts;
        lk.matmul->splitAllowed = !lk.matmul->tf32 && Overrides.tf32x3.value_or(Opt.tf32x3);
      }
      CompiledKernel ck;
      ck.group = D->plan.kernels[lk.index];
      ck.body = std::move(lk);
      D->kernels.push_back(std::move(ck));
    }
  }

  /// Whether matmul `mm` of C.graph multiplies the parts of a split into
  /// three TF32 products: its operands are the parts' nodes of one product
  /// (tf32x3PartsNames), which a later fresh name cannot take, as it could
  /// the product's own.
  bool splitIntoTf32x3(ValueId mm) const {
    const Node &n = C.graph.node(mm);
    if (n.op != OpKind::Matmul)
      return false;
    const std::string &a = C.graph.node(n.operands[0]).name;
    const std::string &b = C.graph.node(n.operands[1]).name;
    return llvm::any_of(C.rewrites, [&](const MatmulRewrite &r) {
      return r.kind == MatmulRewriteKind::Tf32x3 &&
             std::make_pair(a, b) == tf32x3PartsNames(r.value);
    });
  }

  void schedule() {
    // Hand-set parameters are an experiment: the database stays out of it.
    TuningDatabase &db = Opt.tuningDatabase ? *Opt.tuningDatabase : TuningDatabase::global();
    bool tuned = Opt.tuning == CompileOptions::Tuning::UseDatabase && Overrides.empty() &&
                 !db.directory().empty() && llvm::sys::fs::is_directory(db.directory());
    for (size_t k = 0; k < D->kernels.size(); ++k) {
      CompiledKernel &ck = D->kernels[k];
      if (auto own = Opt.kernelScheduleOverrides.find(static_cast<int>(k));
          own != Opt.kernelScheduleOverrides.end()) {
        applySchedule(ck, own->second);
      } else {
        applySchedule(ck, Overrides);
        if (tuned)
          useTunedSchedule(ck, db);
      }
      ck.name = kernelName(ck.lowered, ck.schedule);
      if (kernelTemplate(ck.schedule.kind()).readsF32AsTf32(ck.lowered)) {
        const MatmulWgmmaSchedule *w = ck.schedule.getIf<MatmulWgmmaSchedule>();
        if (splitIntoTf32x3(ck.lowered.matmul->node) || (w && w->splitInKernel))
          C.tf32x3Matmuls = true;
        else
          C.tf32Matmuls = true;
      }
    }
    C.device = Opt.device;
    assembleProgram(C, *D);
  }

  /// Schedules `ck`'s body with `overrides` (scheduleKernel: the template's
  /// parameters, and the online sum of inner rows). Overrides the kernel
  /// cannot take were set by hand: the user's mistake, a CompileError.
  void applySchedule(CompiledKernel &ck, const ScheduleOverrides &overrides) {
    Expected<ScheduledKernel> s = scheduleKernel(ck.body, Opt.device, overrides, Tgt);
    if (!s)
      throw CompileError(s.error());
    ck.lowered = std::move(s->lowered);
    ck.schedule = std::move(s->schedule);
  }

  /// The schedule the database holds for `ck` (keyed by its default
  /// schedule's text), if any. An entry whose parameters this kernel cannot
  /// take (written by another build) is reported and left alone.
  void useTunedSchedule(CompiledKernel &ck, TuningDatabase &db) {
    KernelCache &cache = Opt.cache ? *Opt.cache : KernelCache::global();
    std::string key =
        TuningDatabase::keyFor(cache, tuningSource(ck.lowered, ck.schedule), Tgt, Opt.device);
    std::optional<TuningEntry> e = db.lookup(key);
    if (!e)
      return;
    Expected<ScheduledKernel> s = scheduleKernel(ck.body, Opt.device, e->overrides, Tgt);
    if (!s) {
      llvm::errs() << "minijit: warning: tuning database entry " << db.pathFor(key) << " ('"
                   << e->overrides.str() << "') does not fit its kernel (" << s.error()
                   << "); the kernel keeps its default schedule\n";
      return;
    }
    ck.lowered = std::move(s->lowered);
    ck.schedule = std::move(s->schedule);
    ck.tuned = std::move(e);
  }

  void emit() {
    for (size_t k = 0; k < D->kernels.size(); ++k) {
      CompiledKernel &ck = D->kernels[k];
      ck.cuda = mutateKernel(emitKernel(ck.lowered, ck.schedule, ck.name));
      C.program.kernels[k].source =
          mutatePreamble(kernelPreamble(ck.lowered, ck.schedule)) + "\n" + ck.cuda;
    }
  }

  /// Every kernel through the cache (NVRTC on a miss), in parallel; the
  /// first error is rethrown once all are done. Kernels of the same
  /// structure (the same text but for names and comments: the layers of an
  /// MLP) compile once and share the image, in this program and with
  /// earlier programs of the process (KernelCache::getShared).
  void compileKernels() {
    Program &p = C.program;
    KernelCache &cache = Opt.cache ? *Opt.cache : KernelCache::global();
    size_t n = p.kernels.size();
    std::vector<std::string> structure(n);
    std::vector<size_t> first(n); // the kernel whose image kernel k takes
    std::map<std::string, size_t> seen;
    for (size_t k = 0; k < n; ++k) {
      structure[k] = structuralSource(D->kernels[k].lowered, D->kernels[k].schedule);
      first[k] = seen.emplace(structure[k], k).first->second;
    }
    std::vector<std::exception_ptr> errors(n);
    auto compileOne = [&](size_t k) {
      try {
        KernelCache::SharedKernel got = cache.getShared(
            structure[k], p.kernels[k].source, p.kernels[k].name, D->kernels[k].target,
            Opt.nvrtcOptions);
        CompiledKernel &ck = D->kernels[k];
        // ptxas serializes a wgmma whose accumulators it cannot keep in
        // place (3-4x slower): a defect of the template, not a slow kernel.
        if (unsigned r = kernelTemplate(ck.schedule.kind()).requiredRegisters())
          checkRegisterSplit(p.kernels[k].name, got.kernel.out, r);
        ck.image = std::move(got.kernel.out);
        ck.origin = got.kernel.from;
        p.kernels[k].entry = got.entry;
      } catch (...) {
        errors[k] = std::current_exception();
      }
    };
    std::vector<size_t> unique;
    for (size_t k = 0; k < n; ++k)
      if (first[k] == k)
        unique.push_back(k);
    if (unique.size() <= 1) {
      for (size_t k : unique)
        compileOne(k);
    } else {
      unsigned threads = Opt.threads ? Opt.threads : llvm::hardware_concurrency().compute_thread_count();
      llvm::ThreadPool pool(llvm::hardware_concurrency(std::min<unsigned>(threads, unique.size())));
      for (size_t k : unique)
        pool.async([&, k] { compileOne(k); });
      pool.wait();
    }
    for (std::exception_ptr &e : errors)
      if (e)
        std::rethrow_exception(e);
    for (size_t k = 0; k < n; ++k) {
      CompiledKernel &ck = D->kernels[k];
      if (first[k] != k) {
        ck.image = D->kernels[first[k]].image;
        ck.origin = CachedKernel::From::Shared;
        p.kernels[k].entry = p.kernels[first[k]].entry;
      }
      p.kernels[k].cubin = ck.image.cubin;
      p.kernels[k].ptx = ck.image.ptx;
      p.kernels[k].resources = ck.image.resources;
    }
  }

  const Graph &G;
  const CompileOptions &Opt;
  const Target Tgt; ///< what the kernels compile for (targetOf)
  const int Debug;
  const std::vector<Stage> Dumps;
  /// The hand-set schedule parameters (overridesOf), set when run() starts.
  ScheduleOverrides Overrides;
  Stage Last;
  std::shared_ptr<CompileDetail> D; ///< C.detail, which the stages fill
  CompiledGraph C;
};

} // namespace

CompiledGraph compileGraph(const Graph &g, const CompileOptions &options) {
  return Pipeline(g, options).run();
}

} // namespace minijit
