//===- compiler/Compiler.cpp - the text of every stage --------------------===//
// What --emit, MINIJIT_DUMP and MINIJIT_DEBUG print of a CompiledGraph. The
// pipeline itself is compiler/Pipeline.cpp.
//===----------------------------------------------------------------------===//
#include "compiler/Compiler.h"
#include "compiler/CompileDetail.h"
#include "compiler/lower/LoweredPrinter.h"

#include "ir/Printer.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

namespace minijit {

namespace {

/// A default-constructed CompiledGraph has no detail: it reads as empty.
const CompileDetail &detailOf(const CompiledGraph &c) {
  static const CompileDetail none;
  return c.detail ? *c.detail : none;
}

} // namespace

size_t CompiledGraph::numKernels() const { return detailOf(*this).plan.kernels.size(); }

std::string CompiledGraph::text(Stage s) const {
  switch (s) {
  case Stage::Graph: return graphText();
  case Stage::Fused: return fusedText();
  case Stage::Cuda: return cudaText();
  case Stage::Ptx: return ptxText();
  case Stage::Resources: return resourcesText();
  case Stage::Dot: return dotText();
  case Stage::Lowered: return loweredText();
  }
  llvm_unreachable("bad stage");
}

std::vector<KernelSummary> CompiledGraph::kernelSummaries() const {
  const CompileDetail &d = detailOf(*this);
  std::vector<KernelSummary> out;
  for (size_t k = 0; k < d.plan.kernels.size(); ++k) {
    KernelSummary s;
    if (k < d.kernels.size()) {
      s.name = d.kernels[k].name;
      s.schedule = describeSchedule(d.kernels[k].schedule);
    }
    if (k < program.kernels.size()) {
      s.bytesRead = program.kernels[k].bytesRead;
      s.bytesWritten = program.kernels[k].bytesWritten;
    }
    for (ValueId r : d.plan.kernels[k].roots) {
      const std::string &name = graph.node(r).name;
      if (r < static_cast<ValueId>(d.plan.storeReason.size()) && !d.plan.storeReason[r].empty())
        s.reasons.push_back("%" + name + ": " + describeReason(graph, d.plan.storeReason[r]));
      if (r < static_cast<ValueId>(d.plan.apartReason.size()) && !d.plan.apartReason[r].empty())
        s.reasons.push_back("%" + name + " has a kernel of its own: " +
                            describeReason(graph, d.plan.apartReason[r]));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string CompiledGraph::graphText() const { return printGraph(graph); }

namespace {

/// "named size B bound at launch (B = 3000), scheduled for its bucket, B in 2049..4096".
std::string sizesText(const LoweredKernel &k) {
  const KSymbolic &sym = *k.symbolic;
  int64_t extent = outerExtent(k);
  std::string names;
  for (const std::string &n : sym.names)
    names += (names.empty() ? "" : ", ") + n;
  return llvm::formatv("named size{0} {1} bound at launch ({2} = {3}), scheduled for its bucket, {4}",
                       sym.names.size() == 1 ? "" : "s", names, sym.extent.str(), extent,
                       bucketText(sym.extent, extent))
      .str();
}

} // namespace

std::string CompiledGraph::fusedText() const {
  const CompileDetail &d = detailOf(*this);
  std::vector<KernelNotes> notes;
  for (const CompiledKernel &k : d.kernels) {
    std::string line = describeSchedule(k.schedule);
    if (k.tuned)
      line = llvm::formatv("tuned ({0:f2} us, default {1:f2} us{2}{3}): ", k.tuned->tunedUs,
                           k.tuned->defaultUs, k.tuned->overrides.empty() ? "" : "; ",
                           k.tuned->overrides.str())
                 .str() +
             line;
    // A matmul's tiles come in waves: say how full the last one is.
    if (kernelTemplate(k.schedule.kind()).tilesComeInWaves())
      line += "; " + wavesText(k.schedule, device,
                               k.image.resources.known ? k.image.resources.registers : 0);
    if (k.lowered.symbolic)
      line += "; " + sizesText(k.lowered);
    if (k.origin == CachedKernel::From::Shared)
      line += "; the compiled image of another kernel of the same code";
    notes.push_back({k.name, line});
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  printFusionPlan(os, graph, d.plan, notes);
  if (!rewrites.empty()) {
    os << "\nrewrites:\n";
    for (const MatmulRewrite &r : rewrites)
      os << "  " << r.text() << "\n";
  }
  int64_t bytes = program.bytesMoved();
  // Fewer bytes than the kernels' buffers hold: some were read through gathers.
  bool gathered = llvm::any_of(program.kernels, [&](const ProgramKernel &k) {
    int64_t all = 0;
    for (int b : k.args)
      all += program.buffers[b].bytes();
    return k.bytesRead + k.bytesWritten < all;
  });
  os << llvm::formatv("\ntotal: {0} kernel{1}, {2} bytes moved through memory (each buffer read "
                      "and written once per kernel{3})\n",
                      d.plan.kernels.size(), d.plan.kernels.size() == 1 ? "" : "s", bytes,
                      gathered ? "; a table read through gathered indices, the elements they select"
                               : "");
  return os.str();
}

std::string CompiledGraph::loweredText() const {
  const CompileDetail &d = detailOf(*this);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "graph " << graph.name() << ": " << d.kernels.size() << " kernel"
     << (d.kernels.size() == 1 ? "" : "s") << " lowered\n";
  for (const CompiledKernel &k : d.kernels) {
    os << "\n";
    printLoweredKernel(os, k.lowered, k.name);
  }
  return os.str();
}

std::string CompiledGraph::cudaText() const {
  const CompileDetail &d = detailOf(*this);
  std::string s = cudaPreamble();
  // The clusters' barrier and the Hopper kernels' helpers once, each wgmma
  // width once (as the kernels are compiled: kernelPreamble).
  if (llvm::any_of(d.kernels, [](const CompiledKernel &k) { return k.schedule.geometry().cluster > 1; }))
    s += clusterPreamble();
  if (llvm::any_of(d.kernels, [](const CompiledKernel &k) { return holdsRandom(k.lowered); }))
    s += randomPreamble();
  if (llvm::any_of(d.kernels, [](const CompiledKernel &k) { return holdsI64(k.lowered); }))
    s += i64Preamble();
  if (llvm::any_of(d.kernels, [](const CompiledKernel &k) { return holdsWelford(k.lowered); }))
    s += welfordPreamble();
  std::set<std::string> pieces;
  for (const CompiledKernel &k : d.kernels)
    pieces.merge(hopperPieces(k.lowered, k.schedule));
  s += hopperPreamble(pieces);
  for (const CompiledKernel &k : d.kernels)
    s += "\n" + k.cuda;
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
  const CompileDetail &d = detailOf(*this);
  static const char *colours[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                  "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "digraph \"" << graph.name() << "\" {\n  rankdir=TB;\n  node [style=filled, shape=box, "
     << "fontname=\"monospace\"];\n";
  std::vector<int> kernelOf(graph.size(), -1);
  for (size_t k = 0; k < d.plan.kernels.size(); ++k)
    for (ValueId h : d.plan.kernels[k].held)
      kernelOf[h] = static_cast<int>(k);
  for (size_t k = 0; k < d.plan.kernels.size(); ++k) {
    os << "  subgraph cluster_k" << k << " {\n    label=\"k" << k << " "
       << (k < d.kernels.size() ? d.kernels[k].name : "") << "\";\n    style=rounded;\n";
    for (ValueId h : d.plan.kernels[k].held) {
      const Node &n = graph.node(h);
      if (n.op == OpKind::Input)
        continue;
      os << "    n" << h << " [label=\"%" << n.name << " = " << opName(n.op) << "\\n"
         << typeText(n.dtype, n.shape) << "\", fillcolor=\"" << colours[k % 10] << "\""
         << (d.plan.storedBy[h] >= 0 ? ", penwidth=2" : "") << "];\n";
    }
    os << "  }\n";
  }
  for (ValueId in : graph.inputs())
    os << "  n" << in << " [label=\"%" << graph.node(in).name << "\\n"
       << typeText(graph.node(in).dtype, graph.node(in).shape)
       << "\", shape=ellipse, fillcolor=white];\n";
  // An empty output has no kernel: drawn alone, dashed.
  for (ValueId o : graph.outputs())
    if (graph.node(o).shape.isEmpty() && graph.node(o).op != OpKind::Input && kernelOf[o] < 0)
      os << "  n" << o << " [label=\"%" << graph.node(o).name << "\\n"
         << typeText(graph.node(o).dtype, graph.node(o).shape)
         << "\\nempty: no kernel\", style=dashed];\n";
  std::set<std::pair<ValueId, size_t>> drawn;
  for (size_t i = 0; i < graph.size(); ++i) {
    const Node &n = graph.nodes()[i];
    if (n.op == OpKind::Constant || (n.op != OpKind::Input && kernelOf[i] < 0))
      continue;
    for (ValueId o : n.operands) {
      if (graph.node(o).op == OpKind::Constant || !drawn.insert({o, i}).second)
        continue;
      // A value another kernel stored goes through memory between kernels.
      bool throughMemory = d.plan.storedBy[o] >= 0 && kernelOf[o] != kernelOf[i];
      os << "  n" << o << " -> n" << i
         << (throughMemory ? " [style=bold, label=\"memory\"]" : "") << ";\n";
    }
  }
  os << "}\n";
  return os.str();
}

std::string CompiledGraph::timingText() const {
  const CompileDetail &d = detailOf(*this);
  std::string s;
  llvm::raw_string_ostream os(s);
  double total = 0;
  for (const StageTime &st : timings) {
    os << llvm::formatv("  {0,-10} {1,8:f2} ms\n", st.stage, st.ms);
    total += st.ms;
  }
  os << llvm::formatv("  {0,-10} {1,8:f2} ms\n", "total", total);
  int hits = 0, shared = 0;
  for (const CompiledKernel &k : d.kernels) {
    hits += k.origin == CachedKernel::From::Memory || k.origin == CachedKernel::From::Disk;
    shared += k.origin == CachedKernel::From::Shared;
  }
  os << llvm::formatv("  kernels: {0} ({1} from the cache, {2} the image of another of the same "
                      "code)\n",
                      d.kernels.size(), hits, shared);
  return os.str();
}

} // namespace minijit
