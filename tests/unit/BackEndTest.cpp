// The back end's pieces on their own: override parsing, the code writer's
// names, lowering's store requests, fusion reasons, stages, driver handles.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/Stage.h"
#include "compiler/emit/CodeWriter.h"
#include "compiler/lower/FuseAndLower.h"
#include "compiler/schedule/ScheduleOverrides.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "runtime/DriverHandle.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace minijit;

namespace {

/// The refusal of `text`, or "" where it parses.
std::string overrideError(const std::string &text) {
  Expected<ScheduleOverrides> o = parseScheduleOverrides(text);
  return o ? "" : o.error();
}

} // namespace

TEST(ScheduleOverrides, ParsesEveryKeyOnce) {
  Expected<ScheduleOverrides> parsed =
      parseScheduleOverrides("tpr=64, vec=4,cached=0,bm=128,tpr=32");
  ASSERT_TRUE(parsed) << parsed.error();
  const ScheduleOverrides &o = *parsed;
  EXPECT_EQ(o.tpr, 32); // the last value of a key given twice
  EXPECT_EQ(o.vec, 4);
  EXPECT_EQ(o.cached, false);
  EXPECT_EQ(o.bm, 128);
  EXPECT_FALSE(o.block);
  EXPECT_FALSE(o.empty());
  Expected<ScheduleOverrides> none = parseScheduleOverrides("");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(ScheduleOverrides, TextRoundTripsInOneOrder) {
  ScheduleOverrides o;
  o.items = 4;
  o.block = 128;
  o.cached = false;
  o.tpr = 8;
  o.cluster = 2;
  o.bn = 256;
  EXPECT_EQ(o.str(), "bn=256,tpr=8,block=128,items=4,cached=0,cluster=2");
  Expected<ScheduleOverrides> back = parseScheduleOverrides(o.str());
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, o);
  back->cached = true;
  EXPECT_NE(*back, o);
  EXPECT_EQ(ScheduleOverrides().str(), "");
  // the order a search's texts always had: geometry first, then variants
  EXPECT_EQ(parseScheduleOverrides("cluster=1,pingpong=0,stages=4,bn=128")->str(),
            "bn=128,stages=4,pingpong=0,cluster=1");
  EXPECT_EQ(parseScheduleOverrides("frag=2,cpasync=3,tile=128")->str(), "tile=128,cpasync=3,frag=2");
}

TEST(ScheduleOverrides, TheEnvironmentIsReadInOnePlace) {
  ::setenv("MINIJIT_SCHEDULE", "tpr=64", 1);
  EXPECT_EQ(scheduleEnvironmentText(), "tpr=64");
  ::unsetenv("MINIJIT_SCHEDULE");
  EXPECT_EQ(scheduleEnvironmentText(), "");
}

TEST(ScheduleOverrides, TheEnvironmentsBadTextIsACompileError) {
  Graph g("cols");
  Tensor x = g.input("x", DType::F32, {1024, 64});
  g.output(sum(x, {0}), "s");
  CompileOptions opt;
  opt.compileKernels = false;
  ::setenv("MINIJIT_SCHEDULE", "bogus=1", 1);
  EXPECT_THROW(compileGraph(g, opt), CompileError);
  opt.scheduleOverrides.parts = 4; // set in the options: the variable is not read
  EXPECT_EQ(compileGraph(g, opt).detail->kernels[0].schedule.as<ColumnSchedule>().parts, 4u);
  ::unsetenv("MINIJIT_SCHEDULE");
}

TEST(ScheduleOverrides, AKernelRefusesAsAValue) {
  Graph g("rows");
  Tensor x = g.input("x", DType::F32, {1024, 4096});
  g.output(sum(x, {1}), "s");
  CompileOptions opt;
  opt.compileKernels = false;
  CompiledGraph c = compileGraph(g, opt);
  const LoweredKernel &body = c.detail->kernels[0].body;
  ScheduleOverrides o;
  o.tpr = 3;
  Expected<ScheduledKernel> s = scheduleKernel(body, opt.device, o, opt.device.target());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error(), "schedule override: tpr must be a power of two up to 1024");
  o.tpr = 64;
  Expected<ScheduledKernel> fits = scheduleKernel(body, opt.device, o, opt.device.target());
  ASSERT_TRUE(fits) << fits.error();
  EXPECT_EQ(fits->schedule.as<RowSchedule>().threadsPerRow, 64u);
  // the pipeline reports the refusal of an override set by hand
  opt.scheduleOverrides.tpr = 3;
  EXPECT_THROW(compileGraph(g, opt), CompileError);
}

TEST(ScheduleOverrides, BadKeysAndValuesAreErrors) {
  EXPECT_EQ(overrideError("bogus=1").rfind(
                "schedule override: unknown key 'bogus' (known: tile, bm, ", 0),
            0u);
  EXPECT_EQ(overrideError("tpr=x"), "schedule override: 'tpr=x' needs a non-negative integer");
  EXPECT_EQ(overrideError("vec=-2"), "schedule override: 'vec=-2' needs a non-negative integer");
  EXPECT_EQ(overrideError("vec"), "schedule override: 'vec' needs a non-negative integer");
}

TEST(ScheduleOverrides, RangesAreCheckedByTheTemplateThatUsesThem) {
  // A column reduction has no threads per row: tpr=3 is not its business.
  Graph g("cols");
  Tensor x = g.input("x", DType::F32, {1024, 64});
  g.output(sum(x, {0}), "s");
  CompileOptions opt;
  opt.compileKernels = false;
  opt.scheduleOverrides.tpr = 3;
  CompiledGraph c = compileGraph(g, opt);
  EXPECT_EQ(c.detail->kernels[0].schedule.kind(), ScheduleKind::OuterCol);
}

TEST(CodeWriter, UniqueNamesSkipTakenAndReservedOnes) {
  CodeWriter w;
  w.reserve("x");
  EXPECT_EQ(w.unique("x"), "x1");
  EXPECT_EQ(w.unique("x"), "x2");
  EXPECT_EQ(w.unique("y"), "y");
  EXPECT_EQ(w.unique("float"), "float1"); // a keyword
  EXPECT_EQ(w.unique("row"), "row1");     // one of the emitter's own locals
}

TEST(CodeWriter, ScopesIndent) {
  CodeWriter w;
  w.open("if (a)");
  w.line("b();");
  w.close();
  w.open("auto f = [&]()");
  w.close("};");
  EXPECT_EQ(w.text(), "if (a) {\n  b();\n}\nauto f = [&]() {\n};\n");
}

TEST(Lowering, AReductionInAnotherKernelsDomainAsksForAStore) {
  Graph g("moved");
  Tensor x = g.input("x", DType::F32, {64, 64});
  Tensor m = sum(x, {1}).named("m");
  Tensor y = x - m.reshape({1, 64}); // y[i, j] needs the sum of row j
  g.output(y, "y");
  // The first plan fusion tries: one kernel holding everything.
  FusionPlan one;
  KernelGroup k;
  k.kind = KernelKind::Pointwise;
  k.domain = Shape({64, 64});
  k.roots = {y.id()};
  for (size_t v = 0; v < g.size(); ++v)
    if (g.nodes()[v].op != OpKind::Input && g.nodes()[v].op != OpKind::Constant)
      k.held.push_back(static_cast<ValueId>(v));
  k.reads = {x.id()};
  one.kernels.push_back(k);
  one.storedBy.assign(g.size(), -1);
  one.storedBy[y.id()] = 0;
  LoweringResult r = lowerKernel(g, one, 0);
  ASSERT_TRUE(std::holds_alternative<StoreRequest>(r));
  const StoreRequest &want = std::get<StoreRequest>(r);
  EXPECT_EQ(want.node, m.id());
  EXPECT_EQ(want.root, y.id());
  EXPECT_EQ(want.reason.kind, FusionReasonKind::ReductionOtherDomain);
  EXPECT_EQ(describeReason(g, want.reason),
            "reduction %m reduces [64, 64] over axes [1], another domain than its consumer's "
            "kernel");
  // Fusion stores %m, then keeps %y apart from it, and says why.
  FusionPlan plan = fuseGraph(g, true);
  EXPECT_EQ(plan.storeReason[m.id()].kind, FusionReasonKind::ReductionOtherRow);
  EXPECT_EQ(plan.apartReason[y.id()].kind, FusionReasonKind::ReductionOtherRow);
}

TEST(Fusion, KeepsTheKernelsOfItsLastRound) {
  Graph g("twice");
  Tensor x = g.input("x", DType::F32, {64, 128});
  Tensor s = sum(x, {1}, true);
  g.output(x / s, "y");
  FusedGraph f = fuseAndLower(g, true);
  ASSERT_EQ(f.kernels.size(), f.plan.kernels.size());
  for (size_t k = 0; k < f.kernels.size(); ++k)
    EXPECT_EQ(f.kernels[k].index, static_cast<int>(k));
  EXPECT_EQ(f.plan.storeReason[g.outputs()[0]].kind, FusionReasonKind::GraphOutput);
}

TEST(Stage, NamesParseBack) {
  for (Stage s : {Stage::Graph, Stage::Fused, Stage::Cuda, Stage::Ptx, Stage::Resources,
                  Stage::Dot, Stage::Lowered})
    EXPECT_EQ(parseStage(stageName(s)), s);
  EXPECT_FALSE(parseStage("asm"));
  EXPECT_EQ(stageList(), "graph, fused, lowered, cuda, ptx, resources or dot");
  EXPECT_EQ(producingStage(Stage::Resources), Stage::Ptx);
  EXPECT_EQ(producingStage(Stage::Dot), Stage::Fused);
  EXPECT_EQ(producingStage(Stage::Lowered), Stage::Fused);
}

TEST(Stage, CompilingStopsAfterTheStageAskedFor) {
  Graph g("stop");
  Tensor x = g.input("x", DType::F32, {1024});
  g.output(exp(x), "y");
  CompileOptions opt;
  opt.stopAfter = Stage::Graph;
  CompiledGraph c = compileGraph(g, opt);
  EXPECT_EQ(c.reached, Stage::Graph);
  EXPECT_TRUE(c.detail->kernels.empty());
  opt.stopAfter = Stage::Cuda;
  c = compileGraph(g, opt);
  EXPECT_EQ(c.reached, Stage::Cuda);
  ASSERT_EQ(c.detail->kernels.size(), 1u);
  EXPECT_FALSE(c.detail->kernels[0].cuda.empty());
  EXPECT_TRUE(c.program.kernels[0].cubin.empty()); // NVRTC did not run
  EXPECT_EQ(c.timings.back().stage, "emit");
}

namespace {

std::vector<int> released;
void releaseFake(int *h) { released.push_back(*h); }
using FakeHandle = DriverHandle<int *, releaseFake>;

} // namespace

TEST(DriverHandle, ReleasesWhatWasCreatedBeforeAThrow) {
  // What Executable's constructor does with modules: the third load fails.
  static int ids[] = {1, 2, 3};
  released.clear();
  auto loadAll = [&] {
    std::vector<FakeHandle> loaded;
    for (int &id : ids) {
      if (id == 3)
        throw CudaError("cannot load kernel 3");
      loaded.emplace_back(&id);
    }
  };
  EXPECT_THROW(loadAll(), CudaError);
  EXPECT_EQ(released, (std::vector<int>{1, 2}));
}

TEST(DriverHandle, MovesAndResets) {
  static int a = 7, b = 8;
  released.clear();
  {
    FakeHandle h(&a);
    FakeHandle moved = std::move(h);
    EXPECT_FALSE(h);
    *moved.receive() = &b; // releases a, then holds b
    EXPECT_EQ(moved.get(), &b);
  }
  EXPECT_EQ(released, (std::vector<int>{7, 8}));
}
