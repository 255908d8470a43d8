//===- tests/gpu/TuneTest.cpp - the schedule search on the GPU ------------===//
// A small search (a softmax and a transposed add at odd sizes, a small
// budget) stores a winner for each kernel, after which a compile takes the
// tuned schedules and its outputs still equal the CPU reference. Without a
// GPU the candidates are compiled through NVRTC (the dry run) and the test
// is skipped.
#include "tests/gpu/GpuTest.h"
#include "tests/support/CacheFiles.h"
#include "tools/Tuner.h"

#include "ir/Parser.h"

#include "llvm/Support/FileSystem.h"

#include <memory>
#include <string>

namespace minijit {
namespace {

class Tune : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    ::unsetenv("MINIJIT_SCHEDULE");
    Dir = cachetest::makeScratchDir("minijit-tune-gpu-test");
    ASSERT_FALSE(Dir.empty());
    Db = std::make_unique<TuningDatabase>(Dir);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(Dir); }

  TuneOptions options() const {
    TuneOptions o;
    o.budgetS = 20;
    o.kernelBudgetS = 5;
    o.runs = 10;
    o.maxCandidates = 12;
    o.database = Db.get();
    return o;
  }

  /// Tunes `g`; every kernel gets a stored winner, and a compile that reads
  /// the database takes them all and matches the reference.
  void expectTunedMatches(const Graph &g, size_t kernels) {
    if (!Gpu) {
      TuneReport dry = listCandidates(g, options());
      ASSERT_EQ(dry.kernels.size(), kernels);
      for (const KernelTune &k : dry.kernels) {
        ASSERT_FALSE(k.candidates.empty());
        for (const CandidateResult &c : k.candidates)
          EXPECT_EQ(c.outcome, CandidateResult::Outcome::Compiled)
              << "k" << k.index << " " << c.overrides.str() << ": " << c.why;
      }
      GTEST_SKIP() << "no GPU (" << WhyNot << "): candidates compiled through NVRTC, not run";
    }
    TuneReport r = tuneGraph(g, gpu(), options());
    std::string text = formatTuneReport(r);
    ASSERT_EQ(r.kernels.size(), kernels) << text;
    for (const KernelTune &k : r.kernels) {
      ASSERT_FALSE(k.candidates.empty()) << text;
      EXPECT_EQ(k.candidates[0].outcome, CandidateResult::Outcome::Timed) << text;
      for (const CandidateResult &c : k.candidates)
        EXPECT_EQ(c.why.find("differs from the CPU reference"), std::string::npos)
            << "k" << k.index << " " << c.overrides.str() << " mismatched\n" << text;
      ASSERT_TRUE(k.winner) << text;
      EXPECT_GT(k.winner->tunedUs, 0) << text;
      EXPECT_LE(k.winner->tunedUs, k.winner->defaultUs) << text;
      EXPECT_FALSE(k.storedAt.empty()) << k.storeError << "\n" << text;
    }
    EXPECT_TRUE(r.verified) << text;
    EXPECT_TRUE(r.verifyOk) << text;
    EXPECT_EQ(r.tunedKernels, kernels) << text;

    // A later compile, as `minijit run` makes it, takes every tuned
    // schedule; its outputs equal the reference on other inputs.
    CompileOptions opt;
    opt.tuningDatabase = Db.get();
    CheckedRun run = runAndCheck(g, gpu(), opt, /*seed=*/5);
    for (const CompiledKernel &k : run.compiled.detail->kernels)
      EXPECT_TRUE(k.tuned) << k.name << "\n" << run.compiled.fusedText();
    for (size_t i = 0; i < run.compare.size(); ++i)
      EXPECT_TRUE(run.compare[i].ok) << run.compare[i].summary << "\n" << run.compiled.fusedText();
  }

  std::string Dir;
  std::unique_ptr<TuningDatabase> Db;
};

TEST_F(Tune, SoftmaxAtOddSizes) {
  Graph g = parseGraphs("graph softmax(%x: f32[1023, 1025]) {\n"
                        "  %m = max %x axes=[1] keepdim=true\n  %d = sub %x, %m\n"
                        "  %e = exp %d\n  %s = sum %e axes=[1] keepdim=true\n"
                        "  %y = div %e, %s\n  return %y\n}\n")[0];
  expectTunedMatches(g, 1);
}

TEST_F(Tune, TransposedAddAtOddSizes) {
  Graph g = parseGraphs("graph tadd(%x: f32[1023, 1025], %y: f32[1025, 1023]) {\n"
                        "  %t = permute %y perm=[1, 0]\n  %z = add %x, %t\n  return %z\n}\n")[0];
  expectTunedMatches(g, 1);
}

TEST_F(Tune, EachKernelOfAnUnfusedSoftmax) {
  Graph g = parseGraphs("graph softmax(%x: f32[257, 3001]) {\n"
                        "  %m = max %x axes=[1] keepdim=true\n  %d = sub %x, %m\n"
                        "  %e = exp %d\n  %s = sum %e axes=[1] keepdim=true\n"
                        "  %y = div %e, %s\n  return %y\n}\n")[0];
  TuneOptions o = options();
  o.fusion = false;
  if (!Gpu) {
    TuneReport dry = listCandidates(g, o);
    EXPECT_EQ(dry.kernels.size(), 5u) << formatTuneReport(dry);
    GTEST_SKIP() << "no GPU (" << WhyNot << "): candidates compiled through NVRTC, not run";
  }
  TuneReport r = tuneGraph(g, gpu(), o);
  EXPECT_TRUE(r.verified && r.verifyOk) << formatTuneReport(r);
}

} // namespace
} // namespace minijit
