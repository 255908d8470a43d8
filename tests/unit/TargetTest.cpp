//===- tests/unit/TargetTest.cpp - the typed GPU target -------------------===//
// runtime/Target.h: NVRTC's spellings parsed and named again, the feature
// queries the schedules ask, and a compile that takes its target from
// CompileOptions::arch (parsed once, at the entry) or from the device.
//===----------------------------------------------------------------------===//
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "runtime/DeviceProperties.h"
#include "runtime/Target.h"

#include <gtest/gtest.h>

#include <string>

using namespace minijit;

namespace {

Target parsed(const std::string &text) {
  Expected<Target> t = parseTarget(text);
  EXPECT_TRUE(t) << text << ": " << t.error();
  return t ? *t : Target{};
}

std::string refusal(const std::string &text) {
  Expected<Target> t = parseTarget(text);
  EXPECT_FALSE(t) << text << " parsed as " << t->name();
  return t ? "" : t.error();
}

TEST(Target, ParsesNvrtcSpellingsAndNamesThemAgain) {
  Target a = parsed("sm_80");
  EXPECT_EQ(a.ccMajor, 8);
  EXPECT_EQ(a.ccMinor, 0);
  EXPECT_FALSE(a.archSpecific);
  Target h = parsed("sm_90");
  EXPECT_EQ(h, (Target{9, 0, false}));
  Target ha = parsed("sm_90a");
  EXPECT_EQ(ha, (Target{9, 0, true}));
  EXPECT_NE(h, ha);
  EXPECT_EQ(h.specific(), ha);
  Target b = parsed("sm_100");
  EXPECT_EQ(b.ccMajor, 10);
  EXPECT_EQ(b.ccMinor, 0);
  EXPECT_EQ(parsed("sm_121").ccMinor, 1);
  EXPECT_EQ(parsed("sm_86").number(), 86);
  for (const char *text : {"sm_80", "sm_86", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_121"})
    EXPECT_EQ(parsed(text).name(), text);
  // well spelled but below what minijit runs on: parseTarget takes it,
  // checkTarget (with NVRTC's list) refuses it
  EXPECT_EQ(parsed("sm_75").name(), "sm_75");
}

TEST(Target, RefusesWhatIsNotATarget) {
  EXPECT_EQ(refusal("90"),
            "'90' is not a GPU target (expected sm_ and the compute capability, e.g. sm_90 or "
            "sm_90a)");
  for (const char *text : {"", "sm", "sm_", "compute_90", "SM_90", "sm90", "sm_9", "sm_1000",
                           "sm_9x", "sm_+90", "sm_ 90", "sm_90aa", "sm_a", "sm_09", "sm_90 "})
    EXPECT_NE(refusal(text).find("is not a GPU target"), std::string::npos) << text;
  EXPECT_NE(refusal("sm_80a").find("begin at sm_90a"), std::string::npos);
  EXPECT_NE(refusal("sm_09").find("major version"), std::string::npos);
}

TEST(Target, FeaturesFollowTheComputeCapability) {
  Target sm80 = parsed("sm_80"), sm90 = parsed("sm_90"), sm90a = parsed("sm_90a"),
         sm100 = parsed("sm_100");
  EXPECT_TRUE(sm80.hasMmaF16());
  EXPECT_FALSE(sm80.hasWgmma());
  EXPECT_FALSE(sm80.hasTma());
  EXPECT_FALSE(sm80.hasClusters());
  for (const Target &t : {sm90, sm90a}) {
    EXPECT_TRUE(t.hasMmaF16());
    EXPECT_TRUE(t.hasWgmma());
    EXPECT_TRUE(t.hasTma());
    EXPECT_TRUE(t.hasClusters());
  }
  // Blackwell keeps TMA and clusters; wgmma was Hopper's alone
  EXPECT_TRUE(sm100.hasMmaF16());
  EXPECT_FALSE(sm100.hasWgmma());
  EXPECT_TRUE(sm100.hasTma());
  EXPECT_TRUE(sm100.hasClusters());
  EXPECT_FALSE(parsed("sm_75").hasMmaF16());
}

TEST(Target, TheDeviceGivesItsOwn) {
  DeviceProperties d = DeviceProperties::assumedH200();
  EXPECT_EQ(d.target(), (Target{9, 0, false}));
  EXPECT_EQ(d.arch(), "sm_90");
  d.ccMajor = 12;
  d.ccMinor = 1;
  EXPECT_EQ(d.target().name(), "sm_121");
  EXPECT_EQ(d.arch(), "sm_121");
}

Graph f16Matmul() {
  Graph g("mm");
  g.output(matmul(g.input("a", DType::F16, {256, 256}), g.input("b", DType::F16, {256, 256})), "c");
  return g;
}

CompiledGraph compileFor(const std::string &arch) {
  CompileOptions opt;
  opt.compileKernels = false;
  opt.arch = arch;
  return compileGraph(f16Matmul(), opt);
}

TEST(Target, ACompileParsesCompileOptionsArchOnce) {
  CompiledGraph d = compileFor("");
  EXPECT_EQ(d.target, (Target{9, 0, false})); // the device's
  EXPECT_EQ(d.program.arch, "sm_90");
  EXPECT_EQ(d.detail->kernels[0].schedule.kind(), ScheduleKind::MatmulWgmma);
  // the Hopper template compiles for the architecture-specific variant
  EXPECT_EQ(d.detail->kernels[0].target, (Target{9, 0, true}));
  EXPECT_EQ(d.program.kernels[0].arch, "sm_90a");
  CompiledGraph a = compileFor("sm_80");
  EXPECT_EQ(a.target, (Target{8, 0, false}));
  EXPECT_EQ(a.detail->kernels[0].schedule.kind(), ScheduleKind::MatmulMma);
  EXPECT_EQ(a.detail->kernels[0].target, a.target);
  // no wgmma on sm_100: mma.sync's template, compiled for sm_100 itself
  CompiledGraph b = compileFor("sm_100");
  EXPECT_EQ(b.detail->kernels[0].schedule.kind(), ScheduleKind::MatmulMma);
  EXPECT_EQ(b.program.kernels[0].arch, "sm_100");
  try {
    compileFor("sm90");
    ADD_FAILURE() << "a spelling that is not a target compiled";
  } catch (const CompileError &e) {
    EXPECT_EQ(std::string(e.what()),
              "CompileOptions::arch: 'sm90' is not a GPU target (expected sm_ and the compute "
              "capability, e.g. sm_90 or sm_90a)");
  }
}

/// Long rows over a cluster of blocks (rowcluster, by hand or by the tuner)
/// wherever the target has clusters: sm_90 and, since the rule asks the
/// feature and not the name, sm_100; sm_80 refuses it.
TEST(Target, RowClustersFollowTheClusterFeature) {
  Graph g("softmax");
  Tensor x = g.input("x", DType::F32, {1024, 32768});
  Tensor e = exp(x - max(x, {1}, true));
  g.output(e / sum(e, {1}, true), "y");
  CompileOptions opt;
  opt.compileKernels = false;
  opt.scheduleOverrides.rowcluster = 2;
  for (const char *arch : {"sm_90", "sm_100"}) {
    opt.arch = arch;
    CompiledGraph c = compileGraph(g, opt);
    EXPECT_EQ(c.program.kernels[0].cluster, 2u) << arch;
  }
  opt.arch = "sm_80";
  EXPECT_THROW(compileGraph(g, opt), CompileError);
}

} // namespace
