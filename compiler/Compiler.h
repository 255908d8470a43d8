//===- compiler/Compiler.h - graph in, compiled kernels out ----*- C++ -*-===//
// The pipeline in one call: simplify, fuse and lower, schedule, emit CUDA,
// compile with NVRTC (through the kernel cache, kernels in parallel) and
// assemble a runtime Program; every stage's text is kept for inspection.
// This header is public: the compiler's internals (the fusion plan, each
// kernel's lowered body and schedule) are behind CompiledGraph::detail.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Stage.h"
#include "compiler/schedule/ScheduleOverrides.h"
#include "compiler/simplify/MatmulRewrites.h"
#include "ir/Graph.h"
#include "runtime/DeviceProperties.h"
#include "runtime/Program.h"
#include "runtime/Target.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace minijit {

class KernelCache;
class TuningDatabase;
struct CompileDetail;

struct CompileOptions {
  bool fusion = true;
  /// Rewrites that change the order of roundings (a sum of a product as a
  /// product with a summed operand, a scalar factor moved after a product,
  /// see compiler/simplify/MatmulRewrites.h; an argmax of a strictly
  /// increasing map of x as the argmax of x, compiler/simplify/ArgmaxRewrites.h,
  /// which also changes a NaN's position). They, and the other matmul
  /// rewrites, apply only with fusion.
  bool reassociate = true;
  /// f32 matmuls may run on tensor cores in TF32, as PyTorch's
  /// torch.backends.cuda.matmul.allow_tf32: each operand keeps 10 bits of
  /// fraction (a relative error of about 1e-3 per product), several times
  /// the speed of the CUDA cores. Off by default. Applies on Hopper targets
  /// (the wgmma template), where both operands can be read k-major: an
  /// operand stored the other way, or with k not a multiple of 4, is copied
  /// first when the product is large enough for the copy to pay.
  bool allowTf32 = false;
  /// Large f32 matmuls run on Hopper's tensor cores as three TF32 products
  /// (CUTLASS's "3xTF32"): each operand is split into two TF32 parts, hi
  /// and lo, A @ B = Ahi@Bhi + Ahi@Blo + Alo@Bhi, each k-slice of 32 summed
  /// by the tensor cores and added to the tile's sum on the CUDA cores,
  /// rounded to nearest (MatmulWgmmaSchedule::promote). Its error was 0.16
  /// to 0.69 times cuBLAS's exact SGEMM's on the products measured
  /// (bench/matmul/f32/tf32x3_error.py; the bound per term: rewriteMatmuls,
  /// compiler/simplify/MatmulRewrites.h), at 1.1 to 1.8 times the CUDA
  /// cores' speed (docs/PERFORMANCE.md). Only where the operands' copies pay
  /// (tf32x3Pays) and the product has tiles enough not to be split along k;
  /// other products stay on the CUDA cores. On by
  /// default; false (`--exact-f32`) keeps every f32 product on the CUDA
  /// cores, exactly f32 (PyTorch's "highest"); allowTf32 takes precedence.
  bool tf32x3 = true;
  /// Schedules are sized for this device; without a GPU, an H200.
  DeviceProperties device = DeviceProperties::assumedH200();
  /// The target as NVRTC spells it ("sm_80", "sm_90a"); empty: the device's
  /// (sm_90 for the H200). Text, so that code setting it compiles as it
  /// did: compileGraph parses it once (parseTarget, runtime/Target.h; a
  /// spelling that is not a target is a CompileError) and the stages take
  /// the typed CompiledGraph::target.
  std::string arch;
  /// The last stage to run (MINIJIT_DUMP may ask for a later one). Stages
  /// after it leave their fields empty: after Graph no plan or kernels,
  /// after Fused no CUDA, after Cuda no CUBIN.
  Stage stopAfter = Stage::Ptx;
  /// False: stop after emitting CUDA (no NVRTC), as stopAfter = Stage::Cuda.
  bool compileKernels = true;
  /// Where compiled kernels are kept; null: KernelCache::global().
  KernelCache *cache = nullptr;
  /// Schedules a search found (compiler/tune/TuningDatabase.h). UseDatabase
  /// takes a kernel's tuned schedule where the database holds one, unless
  /// scheduleOverrides (or $MINIJIT_SCHEDULE) set parameters by hand; Off
  /// keeps the rules' schedules.
  enum class Tuning { Off, UseDatabase };
  Tuning tuning = Tuning::UseDatabase;
  /// Where tuned schedules are read; null: TuningDatabase::global().
  TuningDatabase *tuningDatabase = nullptr;
  /// NVRTC compiles in parallel; 0: one thread per core.
  unsigned threads = 0;
  /// Hand-set schedule parameters for experiments (from text:
  /// parseScheduleOverrides). None set: those of $MINIJIT_SCHEDULE, parsed
  /// when the compile starts (CompileError where the text does not parse).
  /// A value a kernel cannot take is a CompileError of the compile.
  ScheduleOverrides scheduleOverrides;
  /// Schedule parameters for single kernels, by launch index (the N of
  /// `kernel kN` in --emit=fused): that kernel is scheduled with these
  /// alone, in place of scheduleOverrides, $MINIJIT_SCHEDULE and the tuning
  /// database (none set: the rules' schedule). The search (tools/Tuner.h)
  /// compiles each candidate this way. An index past the last kernel is
  /// ignored.
  std::map<int, ScheduleOverrides> kernelScheduleOverrides;
  /// Extra NVRTC options (-lineinfo keeps source lines for Nsight Compute).
  std::vector<std::string> nvrtcOptions = {"-lineinfo"};
  /// programMaker: print why each new binding compiled what it compiled
  /// (also on with MINIJIT_LOG=recompiles).
  bool logRecompiles = false;
};

struct StageTime {
  std::string stage;
  double ms;
};

/// One kernel of a compiled graph as data: what `--emit=fused` says of it.
struct KernelSummary {
  std::string name;         ///< the extern "C" entry point
  std::string schedule;     ///< the schedule in words ("inner_row tpr=256 vec=4 ...")
  int64_t bytesRead = 0;    ///< each buffer it reads, once
  int64_t bytesWritten = 0; ///< each buffer it writes, once
  /// Why each value the kernel stores is stored ("%m: reduction result read
  /// by a later kernel"), and why a value has a kernel of its own.
  std::vector<std::string> reasons;
};

/// Everything the compiler produced for one graph.
struct CompiledGraph {
  Graph graph{"main"};           ///< the graph after simplification
  std::vector<MatmulRewrite> rewrites; ///< the matmul and argmax rewrites applied to it
  DeviceProperties device;       ///< the schedules were sized for it
  /// What the kernels compile for: CompileOptions::arch parsed, else the
  /// device's (Program::arch spells it; a template may compile its kernels
  /// for the architecture-specific variant, CompiledKernel::target).
  Target target;
  /// Some f32 matmul runs in TF32 (CompileOptions::allowTf32): its checks
  /// allow for the operands' shorter fraction (EvalOptions::tf32Matmuls).
  bool tf32Matmuls = false;
  /// Some f32 matmul runs as three TF32 products (CompileOptions::tf32x3):
  /// its checks allow for that (EvalOptions::tf32x3Matmuls).
  bool tf32x3Matmuls = false;
  Program program;               ///< the runtime's copy; no cubin before Stage::Ptx ran
  std::vector<StageTime> timings;
  std::optional<Stage> reached;  ///< the last stage that ran
  /// The compiler's own records (the fusion plan, and per kernel its lowered
  /// body, schedule, CUDA and image), for minijit's tools and tests: declared
  /// in compiler/CompileDetail.h, which is not installed. Set by compileGraph.
  std::shared_ptr<const CompileDetail> detail;

  /// How many kernels the graph became (launches per run); 0 when the
  /// compile stopped after Stage::Graph.
  size_t numKernels() const;
  /// One summary per kernel, in launch order (numKernels() of them).
  std::vector<KernelSummary> kernelSummaries() const;

  /// The text of `s` (what --emit=s prints).
  std::string text(Stage s) const;

  /// --emit=graph: the simplified graph in the text format.
  std::string graphText() const;
  /// --emit=fused: kernels, their ops, schedules and boundary reasons.
  std::string fusedText() const;
  /// --emit=lowered: each kernel as lowered (parameters, loads at their index
  /// expressions, ops, reductions, stores), where views have become arithmetic.
  std::string loweredText() const;
  /// --emit=cuda: the preamble once, then every kernel.
  std::string cudaText() const;
  /// --emit=ptx.
  std::string ptxText() const;
  /// --emit=resources: registers, spills, shared memory, launch geometry.
  std::string resourcesText() const;
  /// --emit=dot: the graph with one colour per kernel (render with Graphviz).
  std::string dotText() const;
  /// Per-stage times and where each kernel came from.
  std::string timingText() const;
};

/// Compiles `g`. Throws GraphError for a graph that does not verify and
/// CompileError for what the code generator or NVRTC rejects. A graph with
/// named dimensions is compiled once bound (ir/Bind.h: bindDims), or through
/// programMaker.
CompiledGraph compileGraph(const Graph &g, const CompileOptions &options = {});

/// The arguments of `g` as it declares them, named dimensions included.
std::vector<ProgramArgument> programArguments(const Graph &g);

/// The programs of a graph with named dimensions, one per binding: `g`
/// bound and compiled with `options`. Kernels whose text a binding shares
/// with an earlier one (the sizes of one bucket) are not compiled again
/// (KernelCache::getShared). With `options.logRecompiles` (or
/// MINIJIT_LOG=recompiles) each new binding prints to stderr which kernels
/// NVRTC compiled for it and why: a kernel's first bucket of sizes, or a
/// kernel whose code holds the sizes (a named stride, row length, ...).
ProgramMaker programMaker(const Graph &g, CompileOptions options);

} // namespace minijit
