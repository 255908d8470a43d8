//===- capi/lib/Compile.cpp - compile options and compiled graphs ---------===//
// The C API over compiler/Compiler.h: the options a user sets, a compile of
// a graph (its named dimensions bound first), and what the compile made:
// each stage's text and each kernel's summary.
//===----------------------------------------------------------------------===//
#include "capi/lib/CApiInternal.h"

using namespace minijit;
using namespace minijit::capi;

namespace {

constexpr int kNumStages = MJ_STAGE_LOWERED + 1;

Stage toStage(mjStage s, const char *call) {
  switch (s) {
  case MJ_STAGE_GRAPH:
    return Stage::Graph;
  case MJ_STAGE_FUSED:
    return Stage::Fused;
  case MJ_STAGE_CUDA:
    return Stage::Cuda;
  case MJ_STAGE_PTX:
    return Stage::Ptx;
  case MJ_STAGE_RESOURCES:
    return Stage::Resources;
  case MJ_STAGE_DOT:
    return Stage::Dot;
  case MJ_STAGE_LOWERED:
    return Stage::Lowered;
  }
  throw InvalidArgument{std::string(call) + ": stage " + std::to_string(int(s)) +
                        " is not an mjStage (0 to 6)"};
}

/// Runs `set` on the options behind `o`, with a null check.
template <typename Fn> mjStatus setOption(mjCompileOptions o, const char *call, Fn &&set) {
  return guarded([&] {
    require(o, call, "the options");
    set(o->options);
  });
}

} // namespace

extern "C" {

mjStatus mjCompileOptionsCreate(mjCompileOptions *out) {
  return guarded([&] {
    require(out, "mjCompileOptionsCreate", "out");
    *out = new mjCompileOptions_{};
  });
}

void mjCompileOptionsDestroy(mjCompileOptions o) { delete o; }

mjStatus mjCompileOptionsSetFusion(mjCompileOptions o, int on) {
  return setOption(o, "mjCompileOptionsSetFusion", [&](CompileOptions &c) { c.fusion = on; });
}
mjStatus mjCompileOptionsSetReassociate(mjCompileOptions o, int on) {
  return setOption(o, "mjCompileOptionsSetReassociate",
                   [&](CompileOptions &c) { c.reassociate = on; });
}
mjStatus mjCompileOptionsSetAllowTf32(mjCompileOptions o, int on) {
  return setOption(o, "mjCompileOptionsSetAllowTf32", [&](CompileOptions &c) { c.allowTf32 = on; });
}
mjStatus mjCompileOptionsSetTf32x3(mjCompileOptions o, int on) {
  return setOption(o, "mjCompileOptionsSetTf32x3", [&](CompileOptions &c) { c.tf32x3 = on; });
}
mjStatus mjCompileOptionsSetArch(mjCompileOptions o, const char *arch) {
  return setOption(o, "mjCompileOptionsSetArch", [&](CompileOptions &c) {
    std::string text = arch ? arch : "";
    if (!text.empty()) {
      Expected<Target> parsed = parseTarget(text);
      if (!parsed)
        throw CompileError(parsed.error());
    }
    c.arch = text;
  });
}
mjStatus mjCompileOptionsSetTuning(mjCompileOptions o, int on) {
  return setOption(o, "mjCompileOptionsSetTuning", [&](CompileOptions &c) {
    c.tuning = on ? CompileOptions::Tuning::UseDatabase : CompileOptions::Tuning::Off;
  });
}
mjStatus mjCompileOptionsSetSchedule(mjCompileOptions o, const char *schedule) {
  return setOption(o, "mjCompileOptionsSetSchedule", [&](CompileOptions &c) {
    Expected<ScheduleOverrides> parsed = parseScheduleOverrides(schedule ? schedule : "");
    if (!parsed)
      throw CompileError(parsed.error());
    c.scheduleOverrides = *parsed;
  });
}
mjStatus mjCompileOptionsSetThreads(mjCompileOptions o, unsigned threads) {
  return setOption(o, "mjCompileOptionsSetThreads", [&](CompileOptions &c) { c.threads = threads; });
}
mjStatus mjCompileOptionsSetStopAfter(mjCompileOptions o, mjStage stage) {
  return setOption(o, "mjCompileOptionsSetStopAfter", [&](CompileOptions &c) {
    c.stopAfter = producingStage(toStage(stage, "mjCompileOptionsSetStopAfter"));
  });
}
mjStatus mjCompileOptionsSetDevice(mjCompileOptions o, mjDevice device) {
  return setOption(o, "mjCompileOptionsSetDevice", [&](CompileOptions &c) {
    require(device, "mjCompileOptionsSetDevice", "the device");
    c.device = device->device.properties();
    c.arch.clear();
  });
}

mjStatus mjCompile(mjGraph g, mjCompileOptions options, const mjDimBindings *dims,
                   mjCompiled *out) {
  return guarded([&] {
    require(g, "mjCompile", "the graph");
    require(out, "mjCompile", "out");
    CompileOptions opt = options ? options->options : CompileOptions{};
    DimBindings sizes = toBindings(dims, "mjCompile");
    const Graph &graph = g->graph;
    auto c = std::make_unique<mjCompiled_>();
    c->compiled = compileGraph(sizes.empty() ? graph : bindDims(graph, sizes), opt);
    c->texts.resize(kNumStages);
    if (c->compiled.reached && *c->compiled.reached != Stage::Graph)
      c->kernels = c->compiled.kernelSummaries();
    *out = c.release();
  });
}

void mjCompiledDestroy(mjCompiled c) { delete c; }

mjStatus mjCompiledText(mjCompiled c, mjStage stage, const char **text) {
  return guarded([&] {
    require(c, "mjCompiledText", "the compiled graph");
    require(text, "mjCompiledText", "text");
    Stage s = toStage(stage, "mjCompiledText");
    const std::optional<Stage> &reached = c->compiled.reached;
    if (!reached || static_cast<int>(*reached) < static_cast<int>(producingStage(s)))
      throw InvalidArgument{"mjCompiledText: the compile stopped before stage " +
                            std::string(stageName(s))};
    std::optional<std::string> &t = c->texts[stage];
    if (!t)
      t = c->compiled.text(s);
    *text = t->c_str();
  });
}

size_t mjCompiledNumKernels(mjCompiled c) { return c ? c->kernels.size() : 0; }

mjStatus mjCompiledKernel(mjCompiled c, size_t k, const char **name, const char **schedule,
                          int64_t *bytesRead, int64_t *bytesWritten) {
  return guarded([&] {
    require(c, "mjCompiledKernel", "the compiled graph");
    if (k >= c->kernels.size())
      throw InvalidArgument{"mjCompiledKernel: kernel " + std::to_string(k) + " of " +
                            std::to_string(c->kernels.size())};
    const KernelSummary &s = c->kernels[k];
    if (name)
      *name = s.name.c_str();
    if (schedule)
      *schedule = s.schedule.c_str();
    if (bytesRead)
      *bytesRead = s.bytesRead;
    if (bytesWritten)
      *bytesWritten = s.bytesWritten;
  });
}

} // extern "C"
