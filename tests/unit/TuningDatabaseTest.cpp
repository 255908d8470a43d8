// compiler/tune/TuningDatabase: entries round-trip, corrupt ones are reported
// and ignored, concurrent writers leave whole entries, and a compile takes a
// kernel's tuned schedule from it (wherever the kernel sits in its graph)
// unless tuning is off or parameters are set by hand.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/cache/EntryFile.h"
#include "compiler/cache/KernelCache.h"
#include "compiler/tune/TuningDatabase.h"
#include "ir/Builder.h"
#include "ir/Parser.h"
#include "tests/support/CacheFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace minijit;
using namespace minijit::cachetest;

namespace {

class TuningDatabaseTest : public ::testing::Test {
protected:
  void SetUp() override {
    ::unsetenv("MINIJIT_SCHEDULE");
    Dir = makeScratchDir("minijit-tuning-test");
    ASSERT_FALSE(Dir.empty());
  }
  void TearDown() override { llvm::sys::fs::remove_directories(Dir); }

  static void writeBytes(const std::string &path, const std::string &bytes) {
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
    std::ofstream(path, std::ios::binary) << bytes;
  }

  std::string Dir;
};

TuningEntry entry(const std::string &overrides, double tuned, double def) {
  TuningEntry e;
  Expected<ScheduleOverrides> parsed = parseScheduleOverrides(overrides);
  EXPECT_TRUE(parsed) << parsed.error();
  if (parsed)
    e.overrides = *parsed;
  e.tunedUs = tuned;
  e.defaultUs = def;
  e.candidates = 17;
  e.driver = "13000";
  return e;
}

const std::string kKeyA(64, 'a'), kKeyB(64, 'b');

TEST_F(TuningDatabaseTest, EntriesRoundTrip) {
  TuningDatabase db(Dir);
  EXPECT_FALSE(db.lookup(kKeyA));
  std::string error;
  ASSERT_TRUE(db.store(kKeyA, entry("tpr=128,vec=4", 10.5, 12.25), error)) << error;
  std::optional<TuningEntry> e = TuningDatabase(Dir).lookup(kKeyA); // another instance: from disk
  ASSERT_TRUE(e);
  EXPECT_EQ(e->overrides.str(), "tpr=128,vec=4");
  EXPECT_DOUBLE_EQ(e->tunedUs, 10.5);
  EXPECT_DOUBLE_EQ(e->defaultUs, 12.25);
  EXPECT_EQ(e->candidates, 17);
  EXPECT_EQ(e->driver, "13000");
  EXPECT_FALSE(db.lookup(kKeyB));
  ASSERT_TRUE(db.store(kKeyA, entry("", 9, 9), error)) << error; // the default won: replaced
  EXPECT_TRUE(db.lookup(kKeyA)->overrides.empty());
  EXPECT_EQ(db.stats().corruptEntries, 0u);
}

TEST_F(TuningDatabaseTest, CorruptEntriesAreReportedAndIgnored) {
  TuningDatabase db(Dir);
  std::string error;
  ASSERT_TRUE(db.store(kKeyA, entry("tpr=64", 1, 2), error)) << error;
  std::string good;
  {
    std::ifstream in(db.pathFor(kKeyA), std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string flipped = good;
  flipped[12] ^= 1;
  const std::string damaged[] = {"garbage", good.substr(0, good.size() - 3), flipped};
  for (const std::string &bytes : damaged) {
    writeBytes(db.pathFor(kKeyA), bytes);
    EXPECT_FALSE(db.lookup(kKeyA));
  }
  writeBytes(db.pathFor(kKeyB), good); // a whole entry, for another key
  EXPECT_FALSE(db.lookup(kKeyB));
  // a whole entry whose overrides do not parse: its text is read only here
  writeBytes(db.pathFor(kKeyA), entry::encode("MJTD0001", {kKeyA, "tpr=64,bogus=1", "1.000",
                                                           "2.000", "17", "13000"}));
  EXPECT_FALSE(db.lookup(kKeyA));
  EXPECT_EQ(db.stats().corruptEntries, 5u);
  ASSERT_TRUE(db.store(kKeyA, entry("tpr=64", 1, 2), error)) << error; // replaced whole
  EXPECT_TRUE(db.lookup(kKeyA));
}

TEST_F(TuningDatabaseTest, ConcurrentWritersLeaveWholeEntries) {
  TuningDatabase db(Dir);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      TuningDatabase mine(Dir); // as another process would: its own instance
      for (int i = 0; i < 40; ++i) {
        std::string error;
        EXPECT_TRUE(mine.store(kKeyA, entry("tpr=" + std::to_string(t), i, i + 1), error)) << error;
        std::optional<TuningEntry> e = mine.lookup(kKeyA);
        ASSERT_TRUE(e);
        EXPECT_EQ(e->defaultUs, e->tunedUs + 1); // never a mix of two entries
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_TRUE(db.lookup(kKeyA));
  EXPECT_EQ(db.stats().corruptEntries, 0u);
}

TEST_F(TuningDatabaseTest, NoDirectoryKeepsNothing) {
  TuningDatabase db("");
  std::string error;
  EXPECT_FALSE(db.store(kKeyA, entry("tpr=64", 1, 2), error));
  EXPECT_NE(error.find("no tuning database directory"), std::string::npos) << error;
  EXPECT_FALSE(db.lookup(kKeyA));
}

/// A softmax, alone or after another kernel (then it is kernel 1; its
/// values keep their names, which the key includes).
Graph softmaxGraph(bool anotherFirst) {
  std::string text = "graph softmax(%x: f32[4096, 1024], %v: f32[1000]) {\n";
  if (anotherFirst)
    text += "  %a = tanh %v\n";
  text += "  %m = max %x axes=[1] keepdim=true\n"
          "  %d = sub %x, %m\n"
          "  %e = exp %d\n"
          "  %s = sum %e axes=[1] keepdim=true\n"
          "  %y = div %e, %s\n";
  text += anotherFirst ? "  return %a, %y\n}\n" : "  return %y\n}\n";
  return parseGraphs(text)[0];
}

TEST_F(TuningDatabaseTest, ACompileTakesTheTunedSchedule) {
  TuningDatabase db(Dir);
  KernelCache cache("", true);
  CompileOptions opt;
  opt.compileKernels = false;
  opt.cache = &cache;
  opt.tuningDatabase = &db;
  CompiledGraph plain = compileGraph(softmaxGraph(false), opt);
  ASSERT_EQ(plain.detail->kernels.size(), 1u);
  const CompiledKernel &k = plain.detail->kernels[0];
  EXPECT_FALSE(k.tuned);
  EXPECT_EQ(plain.fusedText().find("tuned"), std::string::npos);
  std::string key = TuningDatabase::keyFor(cache, tuningSource(k.lowered, k.schedule),
                                           plain.target, opt.device);
  std::string error;
  ASSERT_TRUE(db.store(key, entry("tpr=128", 10, 12), error)) << error;

  for (bool anotherFirst : {false, true}) {
    CompiledGraph tuned = compileGraph(softmaxGraph(anotherFirst), opt);
    ASSERT_EQ(tuned.detail->kernels.size(), anotherFirst ? 2u : 1u);
    const CompiledKernel &t = tuned.detail->kernels.back();
    EXPECT_EQ(t.lowered.index, anotherFirst ? 1 : 0);
    ASSERT_TRUE(t.tuned) << tuned.fusedText();
    EXPECT_EQ(t.schedule.as<RowSchedule>().threadsPerRow, 128u);
    EXPECT_NE(tuned.fusedText().find("schedule: tuned (10.00 us, default 12.00 us; tpr=128): "
                                     "inner row: a block of 128 per row"),
              std::string::npos)
        << tuned.fusedText();
  }

  CompileOptions off = opt;
  off.tuning = CompileOptions::Tuning::Off;
  EXPECT_FALSE(compileGraph(softmaxGraph(false), off).detail->kernels[0].tuned);
  CompileOptions byHand = opt;
  byHand.scheduleOverrides.tpr = 64;
  CompiledGraph hand = compileGraph(softmaxGraph(false), byHand);
  EXPECT_FALSE(hand.detail->kernels[0].tuned);
  EXPECT_EQ(hand.detail->kernels[0].schedule.as<RowSchedule>().threadsPerRow, 64u);

  // an entry this kernel cannot take keeps the default (and says so)
  ASSERT_TRUE(db.store(key, entry("tpr=3", 10, 12), error)) << error;
  CompiledGraph bad = compileGraph(softmaxGraph(false), opt);
  EXPECT_FALSE(bad.detail->kernels[0].tuned);
  EXPECT_EQ(describeSchedule(bad.detail->kernels[0].schedule), describeSchedule(k.schedule));
}

} // namespace
