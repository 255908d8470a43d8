//===- compiler/Compiler.cpp - graph in, compiled kernels out -------------===//
#include "compiler/Compiler.h"

#include "compiler/Simplify.h"
#include "ir/Autodiff.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <map>
#include <set>

namespace minijit {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

int debugLevel() {
  const char *d = std::getenv("MINIJIT_DEBUG");
  return d ? std::atoi(d) : 0;
}

/// Buffers, arguments, byte counts and the temporary-slot plan.
void assembleProgram(CompiledGraph &c) {
  const Graph &g = c.graph;
  Program &p = c.program;
  p.graphName = g.name();
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
  for (const KernelGroup &kg : c.plan.kernels)
    for (ValueId r : kg.roots) {
      const Node &n = g.node(r);
      storedBuffer[r] = static_cast<int>(p.buffers.size());
      p.buffers.push_back({n.name, n.dtype, n.shape,
                           isOutput[r] ? ProgramBuffer::Role::Output : ProgramBuffer::Role::Temp,
                           -1});
    }
  for (ValueId o : g.outputs())
    p.outputs.push_back(storedBuffer[o]);
  for (ValueId in : g.updates())
    p.updates.push_back(in < 0 ? -1 : static_cast<int>(llvm::find(g.inputs(), in) - g.inputs().begin()));

  std::vector<int> firstUse(p.buffers.size(), -1), lastUse(p.buffers.size(), -1);
  for (size_t k = 0; k < c.lowered.size(); ++k) {
    const LoweredKernel &lk = c.lowered[k];
    ProgramKernel &pk = p.kernels[k];
    for (const KParam &param : lk.params) {
      int b = param.written ? storedBuffer[param.node]
                            : (g.node(param.node).op == OpKind::Input ? inputBuffer[param.node]
                                                                      : storedBuffer[param.node]);
      assert(b >= 0 && "every parameter has a buffer");
      pk.args.push_back(b);
      (param.written ? pk.bytesWritten : pk.bytesRead) += p.buffers[b].bytes();
      if (firstUse[b] < 0)
        firstUse[b] = static_cast<int>(k);
      lastUse[b] = static_cast<int>(k);
    }
    int64_t elements = lk.kind == KernelKind::Reduction ? lk.rows * lk.K : lk.numel;
    pk.flops = lk.flopsPerElement * elements;
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

void dumpStages(const CompiledGraph &c) {
  const char *what = std::getenv("MINIJIT_DUMP");
  if (!what || !*what)
    return;
  const char *dir = std::getenv("MINIJIT_DUMP_DIR");
  llvm::SmallVector<llvm::StringRef, 4> stages;
  llvm::StringRef(what).split(stages, ',', -1, false);
  for (llvm::StringRef s : stages) {
    std::string text, ext;
    if (s == "graph") {
      text = c.graphText();
      ext = ".mj";
    } else if (s == "fused") {
      text = c.fusedText();
      ext = ".fused.txt";
    } else if (s == "cuda") {
      text = c.cudaText();
      ext = ".cu";
    } else if (s == "ptx") {
      text = c.ptxText();
      ext = ".ptx";
    } else {
      llvm::errs() << "minijit: warning: MINIJIT_DUMP: unknown stage '" << s
                   << "' (expected graph, fused, cuda, ptx)\n";
      continue;
    }
    if (!dir || !*dir) {
      llvm::errs() << "// ---- MINIJIT_DUMP " << s << " of " << c.graph.name() << "\n" << text;
      continue;
    }
    std::string path = std::string(dir) + "/" + c.graph.name() + ext;
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

} // namespace

CompiledGraph compileGraph(const Graph &g, const CompileOptions &opt) {
  CompiledGraph c;
  int debug = debugLevel();
  auto stage = [&](const char *name, Clock::time_point t0) {
    c.timings.push_back({name, msSince(t0)});
    if (debug >= 1)
      llvm::errs() << llvm::formatv("minijit: {0,-10} {1,8:f2} ms\n", name, c.timings.back().ms);
  };

  auto t = Clock::now();
  verifyGraph(g);
  if (hasDerivatives(g)) {
    Graph expanded = expandAutodiff(g);
    stage("autodiff", t);
    t = Clock::now();
    c.graph = simplifyGraph(expanded);
  } else {
    c.graph = simplifyGraph(g);
  }
  stage("simplify", t);
  if (debug >= 2)
    llvm::errs() << "// after simplify\n" << c.graphText();

  t = Clock::now();
  c.plan = fuseGraph(c.graph, opt.fusion);
  stage("fuse", t);

  t = Clock::now();
  std::string overrides = opt.scheduleOverrides;
  if (const char *env = std::getenv("MINIJIT_SCHEDULE"); overrides.empty() && env)
    overrides = env;
  for (size_t k = 0; k < c.plan.kernels.size(); ++k) {
    c.lowered.push_back(lowerKernel(c.graph, c.plan, static_cast<int>(k)));
    c.schedules.push_back(chooseSchedule(c.lowered.back(), opt.device, overrides));
    c.names.push_back(kernelName(c.graph, c.plan, c.lowered.back(), c.schedules.back()));
  }
  stage("schedule", t);
  if (debug >= 2)
    llvm::errs() << c.fusedText();

  t = Clock::now();
  for (size_t k = 0; k < c.lowered.size(); ++k)
    c.cuda.push_back(emitKernel(c.graph, c.plan, c.lowered[k], c.schedules[k], c.names[k]).source);
  stage("emit", t);

  Program &p = c.program;
  p.arch = opt.arch.empty() ? opt.device.arch() : opt.arch;
  for (size_t k = 0; k < c.lowered.size(); ++k) {
    ProgramKernel pk;
    pk.name = c.names[k];
    pk.source = cudaPreamble() + "\n" + c.cuda[k];
    pk.block = c.schedules[k].block;
    pk.grid = c.schedules[k].grid;
    pk.dynamicShared = c.schedules[k].sharedBytes;
    if (c.schedules[k].splits > 1) {
      const LoweredKernel &lk = c.lowered[k];
      int64_t partials = lk.rows * c.schedules[k].splits * static_cast<int64_t>(lk.reductions.size());
      pk.workspaceBytes = (lk.rows + partials) * 4;
    }
    p.kernels.push_back(std::move(pk));
  }
  assembleProgram(c);
  c.origin.assign(c.lowered.size(), CachedKernel::From::Compiled);

  if (opt.compileKernels) {
    t = Clock::now();
    KernelCache &cache = opt.cache ? *opt.cache : KernelCache::global();
    std::vector<std::exception_ptr> errors(p.kernels.size());
    auto compileOne = [&](size_t k) {
      try {
        CachedKernel ck = cache.get(p.kernels[k].source, p.kernels[k].name, p.arch, opt.nvrtcOptions);
        p.kernels[k].cubin = std::move(ck.out.cubin);
        p.kernels[k].ptx = std::move(ck.out.ptx);
        p.kernels[k].resources = ck.out.resources;
        c.origin[k] = ck.from;
      } catch (...) {
        errors[k] = std::current_exception();
      }
    };
    if (p.kernels.size() <= 1) {
      for (size_t k = 0; k < p.kernels.size(); ++k)
        compileOne(k);
    } else {
      unsigned threads = opt.threads ? opt.threads : llvm::hardware_concurrency().compute_thread_count();
      llvm::ThreadPool pool(llvm::hardware_concurrency(std::min<unsigned>(threads, p.kernels.size())));
      for (size_t k = 0; k < p.kernels.size(); ++k)
        pool.async([&, k] { compileOne(k); });
      pool.wait();
    }
    for (std::exception_ptr &e : errors)
      if (e)
        std::rethrow_exception(e);
    stage("nvrtc", t);
    if (debug >= 3)
      llvm::errs() << c.cudaText() << c.ptxText();
  }
  dumpStages(c);
  return c;
}

std::string CompiledGraph::graphText() const { return printGraph(graph); }

std::string CompiledGraph::fusedText() const {
  std::vector<KernelNotes> notes;
  for (size_t k = 0; k < names.size(); ++k)
    notes.push_back({names[k], k < schedules.size() ? schedules[k].describe() : ""});
  std::string s;
  llvm::raw_string_ostream os(s);
  printFusionPlan(os, graph, plan, notes);
  int64_t bytes = program.bytesMoved();
  os << llvm::formatv("\ntotal: {0} kernel{1}, {2} bytes moved through memory (each buffer read "
                      "and written once per kernel)\n",
                      plan.kernels.size(), plan.kernels.size() == 1 ? "" : "s", bytes);
  return os.str();
}

std::string CompiledGraph::cudaText() const {
  std::string s = cudaPreamble();
  for (const std::string &k : cuda)
    s += "\n" + k;
  return s;
}

std::string CompiledGraph::ptxText() const {
  std::string s;
  for (const ProgramKernel &k : program.kernels)
    s += "// ---- PTX of " + k.name + "\n" + k.ptx + "\n";
  return s;
}

std::string CompiledGraph::resourcesText() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0,-32} {1,5} {2,8} {3,7} {4,7} {5,7} {6,10} {7,6}\n", "kernel", "regs",
                      "smem(B)", "stack", "spillST", "spillLD", "grid", "block");
  for (const ProgramKernel &k : program.kernels) {
    const KernelResources &r = k.resources;
    if (!r.known) {
      os << llvm::formatv("{0,-32} (not compiled)\n", k.name);
      continue;
    }
    // Shared memory: the static part ptxas reports plus the dynamic part
    // the launch asks for (the multi-stage matmul tiles).
    os << llvm::formatv("{0,-32} {1,5} {2,8} {3,7} {4,7} {5,7} {6,10} {7,6}\n", k.name, r.registers,
                        r.sharedBytes + k.dynamicShared, r.stackBytes, r.spillStores, r.spillLoads,
                        k.grid, k.block);
  }
  bool spills = llvm::any_of(program.kernels, [](const ProgramKernel &k) {
    return k.resources.spillStores || k.resources.spillLoads;
  });
  os << (spills ? "warning: some kernels spill registers to local memory\n" : "no spills\n");
  return os.str();
}

std::string CompiledGraph::dotText() const {
  static const char *colours[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                  "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "digraph \"" << graph.name() << "\" {\n  rankdir=TB;\n  node [style=filled, shape=box, "
     << "fontname=\"monospace\"];\n";
  std::vector<int> kernelOf(graph.size(), -1);
  for (size_t k = 0; k < plan.kernels.size(); ++k)
    for (ValueId h : plan.kernels[k].held)
      kernelOf[h] = static_cast<int>(k);
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    os << "  subgraph cluster_k" << k << " {\n    label=\"k" << k << " "
       << (k < names.size() ? names[k] : "") << "\";\n    style=rounded;\n";
    for (ValueId h : plan.kernels[k].held) {
      const Node &n = graph.node(h);
      if (n.op == OpKind::Input)
        continue;
      os << "    n" << h << " [label=\"%" << n.name << " = " << opName(n.op) << "\\n"
         << typeText(n.dtype, n.shape) << "\", fillcolor=\"" << colours[k % 10] << "\""
         << (plan.storedBy[h] >= 0 ? ", penwidth=2" : "") << "];\n";
    }
    os << "  }\n";
  }
  for (ValueId in : graph.inputs())
    os << "  n" << in << " [label=\"%" << graph.node(in).name << "\\n"
       << typeText(graph.node(in).dtype, graph.node(in).shape)
       << "\", shape=ellipse, fillcolor=white];\n";
  std::set<std::pair<ValueId, size_t>> drawn;
  for (size_t i = 0; i < graph.size(); ++i) {
    const Node &n = graph.nodes()[i];
    if (n.op == OpKind::Constant || (n.op != OpKind::Input && kernelOf[i] < 0))
      continue;
    for (ValueId o : n.operands) {
      if (graph.node(o).op == OpKind::Constant || !drawn.insert({o, i}).second)
        continue;
      // A value another kernel stored goes through memory between kernels.
      bool throughMemory = plan.storedBy[o] >= 0 && kernelOf[o] != kernelOf[i];
      os << "  n" << o << " -> n" << i
         << (throughMemory ? " [style=bold, label=\"memory\"]" : "") << ";\n";
    }
  }
  os << "}\n";
  return os.str();
}

std::string CompiledGraph::timingText() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  double total = 0;
  for (const StageTime &st : timings) {
    os << llvm::formatv("  {0,-10} {1,8:f2} ms\n", st.stage, st.ms);
    total += st.ms;
  }
  os << llvm::formatv("  {0,-10} {1,8:f2} ms\n", "total", total);
  int hits = 0;
  for (CachedKernel::From f : origin)
    hits += f != CachedKernel::From::Compiled;
  os << llvm::formatv("  kernels: {0} ({1} from the cache)\n", origin.size(), hits);
  return os.str();
}

} // namespace minijit
