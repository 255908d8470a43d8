// compiler/tune/CandidateSpace: for every template, the schedules a search
// tries keep within the device's limits (threads and shared memory a block),
// start with the default, hold no two alike (by the kernel they give), and
// are rebuilt from their override text alone, as a compile rebuilds a stored
// winner.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/tune/CandidateSpace.h"
#include "ir/Builder.h"
#include "ir/Parser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

using namespace minijit;

namespace {

/// The bodies and default schedules of `g`'s kernels, for `dev` and `arch`.
CompiledGraph lowered(const Graph &g, const DeviceProperties &dev, const std::string &arch = "",
                      bool fusion = true) {
  ::unsetenv("MINIJIT_SCHEDULE");
  CompileOptions opt;
  opt.fusion = fusion;
  opt.device = dev;
  opt.arch = arch;
  opt.compileKernels = false;
  opt.tuning = CompileOptions::Tuning::Off;
  return compileGraph(g, opt);
}

Graph parse(const std::string &text) { return parseGraphs(text)[0]; }

/// One graph per template (the kernel of interest is the last one).
struct Case {
  const char *name;
  std::string text;
  ScheduleKind kind;
  std::string arch;
};

std::vector<Case> cases() {
  return {
      {"pointwise", "graph g(%x: f32[1048577]) {\n  %y = sigmoid %x\n  return %y\n}\n",
       ScheduleKind::Pointwise, ""},
      {"softmax",
       "graph g(%x: f32[4096, 1024]) {\n  %m = max %x axes=[1] keepdim=true\n"
       "  %d = sub %x, %m\n  %e = exp %d\n  %s = sum %e axes=[1] keepdim=true\n"
       "  %y = div %e, %s\n  return %y\n}\n",
       ScheduleKind::InnerRow, ""},
      {"logsumexp (online by default)",
       "graph g(%x: f32[512, 5003]) {\n  %m = max %x axes=[1] keepdim=true\n"
       "  %d = sub %x, %m\n  %e = exp %d\n  %s = sum %e axes=[1] keepdim=true\n"
       "  %l = log %s\n  %y = add %l, %m\n  return %y\n}\n",
       ScheduleKind::InnerRow, ""},
      {"long rows (split)",
       "graph g(%x: f32[8, 262144]) {\n  %s = sum %x axes=[1]\n  return %s\n}\n",
       ScheduleKind::InnerRow, ""},
      {"columns", "graph g(%x: f32[4096, 1000]) {\n  %s = sum %x axes=[0]\n  return %s\n}\n",
       ScheduleKind::OuterCol, ""},
      {"transpose",
       "graph g(%x: f32[1023, 1025], %y: f32[1025, 1023]) {\n"
       "  %t = permute %y perm=[1, 0]\n  %z = add %x, %t\n  return %z\n}\n",
       ScheduleKind::Transpose, ""},
      {"scan", "graph g(%x: f32[64, 4096]) {\n  %c = cumsum %x axis=1\n  return %c\n}\n",
       ScheduleKind::Scan, ""},
      {"f32 matmul",
       "graph g(%a: f32[512, 256], %b: f32[256, 384]) {\n"
       "  %c = matmul %a, %b\n  return %c\n}\n",
       ScheduleKind::MatmulSimt, ""},
      {"f32 matmul of few tiles (64x128 tile)",
       "graph g(%a: f32[64, 130, 77], %b: f32[64, 77, 250]) {\n"
       "  %c = matmul %a, %b\n  return %c\n}\n",
       ScheduleKind::MatmulSimt, ""},
      {"f16 matmul, mma.sync",
       "graph g(%a: f16[512, 256], %b: f16[256, 384]) {\n"
       "  %c = matmul %a, %b\n  return %c\n}\n",
       ScheduleKind::MatmulMma, "sm_80"},
      {"attention",
       "graph g(%q: f32[2, 4, 100, 64], %k: f32[2, 4, 100, 64], %v: f32[2, 4, 100, 64]) {\n"
       "  %kt = permute %k perm=[0, 1, 3, 2]\n  %s = matmul %q, %kt\n"
       "  %m = max %s axes=[3] keepdim=true\n  %d = sub %s, %m\n  %e = exp %d\n"
       "  %z = sum %e axes=[3] keepdim=true\n  %p = div %e, %z\n"
       "  %o = matmul %p, %v\n  return %o\n}\n",
       ScheduleKind::Attention, ""},
      {"f16 attention, mma.sync",
       "graph g(%q: f16[2, 4, 100, 64], %k: f16[2, 4, 100, 64], %v: f16[2, 4, 100, 64]) {\n"
       "  %kt = permute %k perm=[0, 1, 3, 2]\n  %s = matmul %q, %kt\n"
       "  %m = max %s axes=[3] keepdim=true\n  %d = sub %s, %m\n  %e = exp %d\n"
       "  %z = sum %e axes=[3] keepdim=true\n  %p = div %e, %z\n"
       "  %o = matmul %p, %v\n  return %o\n}\n",
       ScheduleKind::AttentionMma, "sm_80"},
      {"f16 attention, wgmma",
       "graph g(%q: f16[2, 4, 300, 64], %k: f16[2, 4, 300, 64], %v: f16[2, 4, 300, 64]) {\n"
       "  %kt = permute %k perm=[0, 1, 3, 2]\n  %s = matmul %q, %kt\n"
       "  %m = max %s axes=[3] keepdim=true\n  %d = sub %s, %m\n  %e = exp %d\n"
       "  %z = sum %e axes=[3] keepdim=true\n  %p = div %e, %z\n"
       "  %o = matmul %p, %v\n  return %o\n}\n",
       ScheduleKind::AttentionWgmma, "sm_90"},
      {"f16 matmul, wgmma",
       "graph g(%a: f16[1024, 512], %b: f16[512, 1024]) {\n"
       "  %c = matmul %a, %b\n  return %c\n}\n",
       ScheduleKind::MatmulWgmma, "sm_90"},
  };
}

std::string launchOf(const Schedule &s) {
  return std::to_string(s.geometry().block) + "/" + std::to_string(s.geometry().grid) + "/" +
         std::to_string(s.dynamicSharedBytes());
}

TEST(CandidateSpace, EveryTemplateStartsWithTheDefaultAndHoldsNoDuplicates) {
  DeviceProperties dev = DeviceProperties::assumedH200();
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph g = lowered(parse(c.text), dev, c.arch);
    const CompiledKernel &k = g.detail->kernels.back();
    ASSERT_EQ(k.schedule.kind(), c.kind) << describeSchedule(k.schedule);
    Target arch = c.arch.empty() ? dev.target() : *parseTarget(c.arch);
    CandidateSpace space = candidateSpace(k.body, dev, arch);
    ASSERT_GE(space.candidates.size(), 2u) << "no alternative to the default";
    EXPECT_LE(space.candidates.size(), 48u);
    // the default first, the very schedule (and body) a compile makes
    const Candidate &def = space.candidates[0];
    EXPECT_TRUE(def.overrides.empty()) << def.overrides.str();
    EXPECT_EQ(describeSchedule(def.kernel.schedule), describeSchedule(k.schedule));
    EXPECT_EQ(tuningSource(def.kernel.lowered, def.kernel.schedule),
              tuningSource(k.lowered, k.schedule));
    std::set<std::string> identities, texts, kernels;
    for (const Candidate &cand : space.candidates) {
      SCOPED_TRACE(cand.overrides.str());
      EXPECT_TRUE(identities.insert(cand.identity).second) << "a duplicate";
      EXPECT_TRUE(texts.insert(cand.overrides.str()).second) << "an override text twice";
      kernels.insert(tuningSource(cand.kernel.lowered, cand.kernel.schedule) + "@" +
                     launchOf(cand.kernel.schedule));
      EXPECT_EQ(exceedsLimits(cand.kernel.schedule, dev), "");
      EXPECT_LE(cand.kernel.schedule.geometry().block, unsigned(dev.maxThreadsPerBlock));
      EXPECT_LE(int64_t(cand.kernel.schedule.dynamicSharedBytes()), dev.sharedPerBlockOptin);
      // A compile rebuilds it from its text alone (a stored winner).
      Expected<ScheduleOverrides> text = parseScheduleOverrides(cand.overrides.str());
      ASSERT_TRUE(text) << text.error();
      EXPECT_EQ(*text, cand.overrides);
      Expected<ScheduledKernel> again = scheduleKernel(k.body, dev, *text, arch);
      ASSERT_TRUE(again) << again.error();
      EXPECT_EQ(describeSchedule(again->schedule), describeSchedule(cand.kernel.schedule));
      EXPECT_EQ(tuningSource(again->lowered, again->schedule),
                tuningSource(cand.kernel.lowered, cand.kernel.schedule));
    }
    EXPECT_EQ(kernels.size(), space.candidates.size()) << "two candidates give one kernel";
    for (const DroppedCandidate &d : space.dropped)
      EXPECT_FALSE(d.why.empty()) << d.overrides.str();
  }
}

TEST(CandidateSpace, CandidatesSetOnlyTheirTemplatesKeys) {
  DeviceProperties dev = DeviceProperties::assumedH200();
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph g = lowered(parse(c.text), dev, c.arch);
    const CompiledKernel &k = g.detail->kernels.back();
    ScheduledKernel def{k.lowered, k.schedule};
    const KernelTemplate &t = kernelTemplate(k.schedule.kind());
    for (const ScheduleOverrides &o : candidateOverrides(k.body, def, dev)) {
      std::string text = o.str();
      llvm::SmallVector<llvm::StringRef, 4> fields;
      llvm::StringRef(text).split(fields, ',');
      for (llvm::StringRef kv : fields) {
        llvm::StringRef key = kv.split('=').first;
        EXPECT_TRUE(llvm::is_contained(t.overrideKeys(), key))
            << text << ": " << key.str() << " is not a key of " << t.name().str();
      }
    }
  }
}

TEST(CandidateSpace, TheOnlineSumIsTriedTheOtherWay) {
  DeviceProperties dev = DeviceProperties::assumedH200();
  for (const Case &c : cases()) {
    if (c.kind != ScheduleKind::InnerRow || llvm::StringRef(c.name).startswith("long"))
      continue;
    SCOPED_TRACE(c.name);
    CompiledGraph g = lowered(parse(c.text), dev);
    const CompiledKernel &k = g.detail->kernels.back();
    bool defaultOnline = llvm::any_of(k.lowered.reductions,
                                      [](const KReduction &r) { return r.onlineMax >= 0; });
    CandidateSpace space = candidateSpace(k.body, dev, dev.target());
    std::string flip = defaultOnline ? "online=0" : "online=1";
    auto it = llvm::find_if(space.candidates, [&](const Candidate &cand) {
      return cand.overrides.str() == flip;
    });
    ASSERT_NE(it, space.candidates.end()) << flip << " missing";
    bool online = llvm::any_of(it->kernel.lowered.reductions,
                               [](const KReduction &r) { return r.onlineMax >= 0; });
    EXPECT_NE(online, defaultOnline);
  }
}

/// Rows a block would read again from DRAM (an instance norm over 512 rows
/// of 262144) are held by rule over 8 blocks of 1024 threads; the tuner
/// tries a block a row (rowcluster=1) and the other cluster sizes. Rows the
/// rule holds over blocks of 512 (2048 of 65536) are tried over blocks of
/// 1024 too.
TEST(CandidateSpace, LongRowsAreTriedOverClustersOfBlocksOf1024) {
  DeviceProperties dev = DeviceProperties::assumedH200();
  auto find = [](const CandidateSpace &space, const std::string &text) {
    return llvm::find_if(space.candidates, [&](const Candidate &c) { return c.overrides.str() == text; });
  };
  CompiledGraph g = lowered(parse("graph g(%x: f32[512, 262144]) {\n"
                                  "  %m = mean %x axes=[1] keepdim=true\n  %d = sub %x, %m\n"
                                  "  %q = mul %d, %d\n  %v = mean %q axes=[1] keepdim=true\n"
                                  "  %e = add %v, 1e-5\n  %r = rsqrt %e\n  %y = mul %d, %r\n"
                                  "  return %y\n}\n"),
                            dev, "sm_90");
  const RowSchedule &rule = g.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(rule.cluster, 8u);
  EXPECT_EQ(rule.threadsPerRow, 1024u);
  EXPECT_TRUE(rule.cached);
  EXPECT_EQ(rule.itemsPerThread, 8u);
  CandidateSpace space = candidateSpace(g.detail->kernels[0].body, dev, dev.target());
  auto it = llvm::find_if(space.candidates, [](const Candidate &c) {
    return c.kernel.schedule.as<RowSchedule>().cluster == 1; // a block a row, by rowcluster=1
  });
  ASSERT_NE(it, space.candidates.end());
  EXPECT_FALSE(it->kernel.schedule.as<RowSchedule>().cached); // it reads again
  EXPECT_NE(find(space, "rowcluster=4"), space.candidates.end());
  CompiledGraph h = lowered(parse("graph h(%x: f32[2048, 65536]) {\n"
                                  "  %m = max %x axes=[1] keepdim=true\n  %s = sub %x, %m\n"
                                  "  %e = exp %s\n  %t = sum %e axes=[1] keepdim=true\n"
                                  "  %y = div %e, %t\n  return %y\n}\n"),
                            dev, "sm_90");
  EXPECT_EQ(h.detail->kernels[0].schedule.as<RowSchedule>().cluster, 4u);
  CandidateSpace hs = candidateSpace(h.detail->kernels[0].body, dev, dev.target());
  auto wide = find(hs, "tpr=1024,rowcluster=2");
  ASSERT_NE(wide, hs.candidates.end());
  EXPECT_TRUE(wide->kernel.schedule.as<RowSchedule>().cached);
  EXPECT_EQ(wide->kernel.schedule.as<RowSchedule>().threadsPerRow, 1024u);
}

TEST(CandidateSpace, ASmallerDeviceBoundsThreadsAndSharedMemory) {
  DeviceProperties small = DeviceProperties::assumedH200();
  small.maxThreadsPerBlock = 256;
  small.sharedPerBlockOptin = 100 * 1024;
  for (const Case &c : cases()) {
    SCOPED_TRACE(c.name);
    CompiledGraph g = lowered(parse(c.text), small, c.arch);
    const CompiledKernel &k = g.detail->kernels.back();
    Target arch = c.arch.empty() ? small.target() : *parseTarget(c.arch);
    CandidateSpace space = candidateSpace(k.body, small, arch);
    ASSERT_FALSE(space.candidates.empty());
    // The default is the rules' choice and always a candidate (a scan's
    // block of 512 and Hopper's 384 threads are fixed by their templates);
    // every other candidate keeps within the device's limits.
    for (const Candidate &cand : llvm::drop_begin(space.candidates)) {
      EXPECT_LE(cand.kernel.schedule.geometry().block, 256u) << cand.overrides.str();
      EXPECT_LE(int64_t(cand.kernel.schedule.dynamicSharedBytes()), small.sharedPerBlockOptin)
          << cand.overrides.str();
    }
  }
  // The pointwise space asks for blocks of up to 1024 threads: dropped, with the reason.
  CompiledGraph pw = lowered(parse(cases()[0].text), small);
  CandidateSpace space = candidateSpace(pw.detail->kernels[0].body, small, small.target());
  EXPECT_TRUE(llvm::any_of(space.dropped, [](const DroppedCandidate &d) {
    return d.overrides.block == 1024 &&
           d.why == "1024 threads a block; the device allows 256";
  }));
  // Hopper tiles of 4 or more stages need more than 100 KB: dropped.
  CompiledGraph mm = lowered(parse(cases().back().text), small, "sm_90");
  CandidateSpace tiles = candidateSpace(mm.detail->kernels[0].body, small, Target{9, 0});
  EXPECT_TRUE(llvm::any_of(tiles.dropped, [](const DroppedCandidate &d) {
    return d.overrides.stages == 6 &&
           d.why.find("shared memory") != std::string::npos;
  }));
}

TEST(CandidateSpace, ExceedsLimitsNamesTheLimit) {
  DeviceProperties dev = DeviceProperties::assumedH200();
  PointwiseSchedule p;
  p.block = 2048;
  EXPECT_EQ(exceedsLimits(Schedule{p}, dev), "2048 threads a block; the device allows 1024");
  MatmulMmaSchedule m;
  m.block = 256;
  m.sharedBytes = 300 * 1024;
  EXPECT_NE(exceedsLimits(Schedule{m}, dev).find("307200 bytes of shared memory a block"),
            std::string::npos);
  p.block = 256;
  EXPECT_EQ(exceedsLimits(Schedule{p}, dev), "");
}

TEST(CandidateSpace, TheLimitKeepsTheFirstCandidates) {
  DeviceProperties dev = DeviceProperties::assumedH200();
  CompiledGraph g = lowered(parse(cases()[1].text), dev);
  CandidateSpace all = candidateSpace(g.detail->kernels[0].body, dev, dev.target());
  CandidateSpace few = candidateSpace(g.detail->kernels[0].body, dev, dev.target(), 5);
  ASSERT_EQ(few.candidates.size(), 5u);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(few.candidates[i].overrides, all.candidates[i].overrides);
  EXPECT_TRUE(llvm::any_of(few.dropped, [](const DroppedCandidate &d) {
    return d.why == "over the limit of 5 candidates";
  }));
}

} // namespace

/// Three TF32 products (the default for a large f32 product on Hopper) are
/// searched only among promoted schedules: no 256-wide tile, no ping-pong,
/// which would give up the promoted sums' accuracy for speed.
TEST(CandidateSpace, ThreeTf32ProductsStayPromoted) {
  DeviceProperties dev = DeviceProperties::assumedH200();
  CompiledGraph g = lowered(parse("graph g(%a: f32[2048, 2048], %b: f32[2048, 2048]) {\n"
                                  "  %c = matmul %a, %b\n  return %c\n}\n"),
                            dev);
  const CompiledKernel &k = g.detail->kernels.back();
  ASSERT_TRUE(k.body.matmul && k.body.matmul->threeParts) << g.fusedText();
  CandidateSpace space = candidateSpace(k.body, dev, dev.target());
  ASSERT_GE(space.candidates.size(), 2u);
  for (const Candidate &cand : space.candidates) {
    if (cand.kernel.schedule.kind() != ScheduleKind::MatmulWgmma)
      continue; // (wgmma=0: mma.sync, whose sums are not the wgmma tiles')
    EXPECT_TRUE(cand.kernel.schedule.as<MatmulWgmmaSchedule>().promote) << cand.overrides.str();
  }
}
