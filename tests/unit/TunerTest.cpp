// tools/Tuner without a GPU: the winner is picked from given times and
// stored under the key a later compile of the same graph looks up (which
// then takes it, and --emit=fused says so); per-kernel schedule parameters
// reach their kernel alone; the dry run lists and compiles the candidates.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/cache/KernelCache.h"
#include "compiler/tune/TuningDatabase.h"
#include "ir/Parser.h"
#include "tests/support/CacheFiles.h"
#include "tools/Tuner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

using namespace minijit;
using namespace minijit::cachetest;

namespace {

/// A tanh (kernel 0) and a softmax (kernel 1), or a logsumexp as kernel 1.
Graph twoKernels(bool logsumexp = false) {
  std::string text = "graph g(%v: f32[1000], %x: f32[4096, 1024]) {\n"
                     "  %a = tanh %v\n"
                     "  %m = max %x axes=[1] keepdim=true\n"
                     "  %d = sub %x, %m\n"
                     "  %e = exp %d\n"
                     "  %s = sum %e axes=[1] keepdim=true\n";
  text += logsumexp ? "  %l = log %s\n  %y = add %l, %m\n" : "  %y = div %e, %s\n";
  text += "  return %a, %y\n}\n";
  return parseGraphs(text)[0];
}

/// `text` parsed (the tests' candidates are written as text).
ScheduleOverrides overridesOf(const std::string &text) {
  Expected<ScheduleOverrides> o = parseScheduleOverrides(text);
  EXPECT_TRUE(o) << o.error();
  return o ? *o : ScheduleOverrides();
}

CandidateResult timed(const std::string &overrides, double us) {
  CandidateResult c;
  c.overrides = overridesOf(overrides);
  c.outcome = CandidateResult::Outcome::Timed;
  c.us = us;
  return c;
}

CandidateResult rejected(const std::string &overrides) {
  CandidateResult c;
  c.overrides = overridesOf(overrides);
  c.outcome = CandidateResult::Outcome::Rejected;
  c.why = "output %y differs from the CPU reference";
  return c;
}

bool isOnline(const CompiledKernel &k) {
  return llvm::any_of(k.lowered.reductions, [](const KReduction &r) { return r.onlineMax >= 0; });
}

class TunerTest : public ::testing::Test {
protected:
  void SetUp() override {
    ::unsetenv("MINIJIT_SCHEDULE");
    Dir = makeScratchDir("minijit-tuner-test");
    ASSERT_FALSE(Dir.empty());
    Db = std::make_unique<TuningDatabase>(Dir);
    Opt.compileKernels = false;
    Opt.cache = &Cache;
    Opt.tuningDatabase = Db.get();
  }
  void TearDown() override { llvm::sys::fs::remove_directories(Dir); }

  /// The search's record of kernel `k` of `g` with the given candidates,
  /// its winner chosen and stored as the search does.
  KernelTune record(const Graph &g, size_t k, std::vector<CandidateResult> candidates) {
    CompileOptions base = Opt;
    base.tuning = CompileOptions::Tuning::Off;
    CompiledGraph def = compileGraph(g, base);
    KernelTune kt;
    kt.index = static_cast<int>(k);
    kt.key = kernelTuningKey(def, k, Cache);
    kt.candidates = std::move(candidates);
    kt.winner = chooseWinner(kt, "13000");
    EXPECT_TRUE(recordWinner(kt, *Db)) << kt.storeError;
    return kt;
  }

  std::string Dir;
  KernelCache Cache{"", true};
  std::unique_ptr<TuningDatabase> Db;
  CompileOptions Opt;
};

TEST_F(TunerTest, TheFastestCorrectCandidateWins) {
  KernelTune kt;
  kt.candidates = {timed("", 12), timed("tpr=64", 10), rejected("tpr=256"), timed("tpr=128", 9)};
  std::optional<TuningEntry> w = chooseWinner(kt, "13000");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->overrides.str(), "tpr=128");
  EXPECT_EQ(w->tunedUs, 9);
  EXPECT_EQ(w->defaultUs, 12);
  EXPECT_EQ(w->candidates, 3); // the rejected one was not timed
  EXPECT_EQ(w->driver, "13000");
}

TEST_F(TunerTest, WithinOnePercentTheDefaultStays) {
  KernelTune kt;
  kt.candidates = {timed("", 10), timed("tpr=64", 9.95)};
  std::optional<TuningEntry> w = chooseWinner(kt, "");
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->overrides.empty());
  EXPECT_EQ(w->tunedUs, 10);
}

TEST_F(TunerTest, NoWinnerWithoutATimedDefault) {
  KernelTune kt;
  kt.candidates = {rejected(""), timed("tpr=64", 5)};
  EXPECT_FALSE(chooseWinner(kt, ""));
  EXPECT_FALSE(recordWinner(kt, *Db));
  EXPECT_FALSE(kt.storeError.empty());
}

TEST_F(TunerTest, AStoredWinnerIsTakenByALaterCompile) {
  Graph g = twoKernels();
  CompiledGraph before = compileGraph(g, Opt);
  EXPECT_FALSE(before.detail->kernels[1].tuned);
  EXPECT_EQ(before.fusedText().find("tuned"), std::string::npos);

  KernelTune kt = record(g, 1, {timed("", 12), timed("tpr=128", 9), timed("tpr=64", 10)});
  EXPECT_FALSE(kt.storedAt.empty());
  EXPECT_TRUE(llvm::sys::fs::exists(kt.storedAt));

  CompiledGraph after = compileGraph(g, Opt);
  ASSERT_EQ(after.detail->kernels.size(), 2u);
  EXPECT_FALSE(after.detail->kernels[0].tuned) << "only the searched kernel is tuned";
  const CompiledKernel &k = after.detail->kernels[1];
  ASSERT_TRUE(k.tuned) << after.fusedText();
  EXPECT_EQ(k.tuned->overrides.str(), "tpr=128");
  EXPECT_EQ(k.schedule.as<RowSchedule>().threadsPerRow, 128u);
  EXPECT_NE(after.fusedText().find("schedule: tuned (9.00 us, default 12.00 us; tpr=128): inner "
                                   "row: a block of 128 per row"),
            std::string::npos)
      << after.fusedText();
}

TEST_F(TunerTest, AStoredOnlineSumIsRebuiltByALaterCompile) {
  // softmax: two passes, not online by default; the winner turns it on
  Graph softmax = twoKernels(false);
  EXPECT_FALSE(isOnline(compileGraph(softmax, Opt).detail->kernels[1]));
  record(softmax, 1, {timed("", 12), timed("online=1", 9)});
  CompiledGraph onGraph = compileGraph(softmax, Opt);
  const CompiledKernel &on = onGraph.detail->kernels[1];
  ASSERT_TRUE(on.tuned) << onGraph.fusedText();
  EXPECT_TRUE(isOnline(on));
  // logsumexp: online by default; the winner turns it off
  Graph lse = twoKernels(true);
  EXPECT_TRUE(isOnline(compileGraph(lse, Opt).detail->kernels[1]));
  record(lse, 1, {timed("", 12), timed("online=0,tpr=512", 9)});
  CompiledGraph offGraph = compileGraph(lse, Opt);
  const CompiledKernel &off = offGraph.detail->kernels[1];
  ASSERT_TRUE(off.tuned) << offGraph.fusedText();
  EXPECT_FALSE(isOnline(off));
  EXPECT_EQ(off.schedule.as<RowSchedule>().threadsPerRow, 512u);
}

TEST_F(TunerTest, KernelScheduleOverridesReachTheirKernelAlone) {
  Graph g = twoKernels();
  record(g, 1, {timed("", 12), timed("tpr=256", 9)});
  CompileOptions own = Opt;
  own.kernelScheduleOverrides[1].tpr = 64;
  own.kernelScheduleOverrides[0].block = 128;
  own.kernelScheduleOverrides[7].tpr = 8; // no such kernel: ignored
  CompiledGraph c = compileGraph(g, own);
  EXPECT_EQ(c.detail->kernels[0].schedule.geometry().block, 128u);
  const CompiledKernel &k = c.detail->kernels[1];
  EXPECT_FALSE(k.tuned) << "the kernel's own parameters come before the database";
  EXPECT_EQ(k.schedule.as<RowSchedule>().threadsPerRow, 64u);
  // none set is the rules' schedule, not the database's
  own.kernelScheduleOverrides = {{1, ScheduleOverrides()}};
  CompiledGraph rules = compileGraph(g, own);
  EXPECT_FALSE(rules.detail->kernels[1].tuned);
  CompileOptions off = Opt;
  off.tuning = CompileOptions::Tuning::Off;
  EXPECT_EQ(rules.detail->kernels[1].schedule.as<RowSchedule>().threadsPerRow,
            compileGraph(g, off).detail->kernels[1].schedule.as<RowSchedule>().threadsPerRow);
}

TEST_F(TunerTest, TheKeyFollowsTheKernelNotItsPlace) {
  Graph two = twoKernels();
  Graph one = parseGraphs("graph g(%x: f32[4096, 1024]) {\n"
                          "  %m = max %x axes=[1] keepdim=true\n  %d = sub %x, %m\n"
                          "  %e = exp %d\n  %s = sum %e axes=[1] keepdim=true\n"
                          "  %y = div %e, %s\n  return %y\n}\n")[0];
  CompileOptions off = Opt;
  off.tuning = CompileOptions::Tuning::Off;
  std::string a = kernelTuningKey(compileGraph(two, off), 1, Cache);
  EXPECT_EQ(a, kernelTuningKey(compileGraph(one, off), 0, Cache));
  EXPECT_NE(a, kernelTuningKey(compileGraph(two, off), 0, Cache));
  CompileOptions other = off;
  other.device.smCount = 114;
  EXPECT_NE(a, kernelTuningKey(compileGraph(two, other), 1, Cache)) << "another device";
}

TEST_F(TunerTest, TheDryRunCompilesEachKernelsCandidates) {
  Graph g = parseGraphs("graph g(%x: f32[1023, 1025], %y: f32[1025, 1023]) {\n"
                        "  %t = permute %y perm=[1, 0]\n  %z = add %x, %t\n  return %z\n}\n")[0];
  TuneOptions o;
  o.cache = &Cache;
  o.maxCandidates = 6;
  TuneReport r = listCandidates(g, o);
  EXPECT_TRUE(r.dryRun);
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelTune &k = r.kernels[0];
  ASSERT_EQ(k.candidates.size(), 6u);
  EXPECT_TRUE(k.candidates[0].overrides.empty());
  for (const CandidateResult &c : k.candidates) {
    EXPECT_EQ(c.outcome, CandidateResult::Outcome::Compiled) << c.overrides.str() << ": " << c.why;
    EXPECT_TRUE(c.resources.known) << c.overrides.str();
  }
  std::string text = formatTuneReport(r);
  EXPECT_NE(text.find("kernel k0 "), std::string::npos) << text;
  EXPECT_NE(text.find("6 candidates (6 compiled)"), std::string::npos) << text;
  EXPECT_NE(text.find("transpose"), std::string::npos) << text;
}

TEST_F(TunerTest, HandSetParametersAreRefused) {
  ::setenv("MINIJIT_SCHEDULE", "tpr=64", 1);
  TuneOptions o;
  o.cache = &Cache;
  EXPECT_THROW(listCandidates(twoKernels(), o), GraphError);
  ::unsetenv("MINIJIT_SCHEDULE");
}

} // namespace
