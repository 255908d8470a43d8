// Several threads at once on the CPU side: compiling different and identical
// graphs through one kernel cache (memory and disk), evaluating graphs with
// the CPU reference, loading the CUDA driver. scripts/sanitize.sh thread runs
// these under ThreadSanitizer.
#include "compiler/Compiler.h"
#include "compiler/cache/KernelCache.h"
#include "ir/Builder.h"
#include "ir/Evaluator.h"
#include "runtime/Driver.h"
#include "tests/support/CacheFiles.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace minijit;
using namespace minijit::cachetest;

namespace {

constexpr int kThreads = 8;

/// Runs fn(0) .. fn(kThreads - 1) on as many threads, released together.
void onThreads(const std::function<void(int)> &fn) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads)
        std::this_thread::yield();
      fn(t);
    });
  for (std::thread &t : threads)
    t.join();
}

struct Workload {
  Graph graph;
  bool fusion;
};

/// Four workloads (two threads each): a row reduction with its epilogue,
/// several kernels unfused, a column reduction in f16, a matmul with an
/// epilogue. Softmax appears fused and unfused, so the two share no kernel.
std::vector<Workload> workloads() {
  std::vector<Workload> w;
  {
    Graph g("softmax");
    Tensor x = g.input("x", DType::F32, {64, 256});
    Tensor e = exp(x - max(x, {1}, true));
    g.output(e / sum(e, {1}, true), "y");
    w.push_back({g, true});
    w.push_back({g, false});
  }
  {
    Graph g("colsum");
    g.output(sum(g.input("x", DType::F16, {100, 33}), {0}), "y");
    w.push_back({g, true});
  }
  {
    Graph g("mm");
    Tensor a = g.input("a", DType::F32, {64, 32});
    Tensor b = g.input("b", DType::F32, {32, 16});
    g.output(relu(matmul(a, b)), "y");
    w.push_back({g, true});
  }
  return w;
}

std::vector<std::string> cubinsOf(const CompiledGraph &c) {
  std::vector<std::string> out;
  for (const ProgramKernel &k : c.program.kernels)
    out.push_back(k.cubin);
  return out;
}

class ConcurrencyTest : public ::testing::Test {
protected:
  void SetUp() override {
    Dir = makeScratchDir("minijit-threads");
    ASSERT_FALSE(Dir.empty());
  }
  void TearDown() override { llvm::sys::fs::remove_directories(Dir); }

  /// Each thread compiles workload t / 2 with `cache`; returns the cubins.
  std::vector<std::vector<std::string>> compileOnThreads(const std::vector<Workload> &w,
                                                         KernelCache &cache) {
    std::vector<std::vector<std::string>> cubins(kThreads);
    onThreads([&](int t) {
      CompileOptions opt;
      opt.cache = &cache;
      opt.fusion = w[t / 2].fusion;
      opt.threads = 2; // each compile also runs NVRTC on a pool of its own
      cubins[t] = cubinsOf(compileGraph(w[t / 2].graph, opt));
    });
    return cubins;
  }

  std::string Dir;
};

} // namespace

TEST_F(ConcurrencyTest, EightThreadsShareOneCacheInMemoryAndOnDisk) {
  std::vector<Workload> w = workloads();
  ASSERT_EQ(w.size() * 2, size_t(kThreads));
  // The kernels to expect: each distinct source compiles once.
  std::set<std::string> sources;
  size_t requests = 0;
  for (const Workload &x : w) {
    CompileOptions opt;
    opt.fusion = x.fusion;
    opt.compileKernels = false;
    for (const ProgramKernel &k : compileGraph(x.graph, opt).program.kernels) {
      sources.insert(k.source);
      requests += 2;
    }
  }

  KernelCache cache(Dir, true);
  std::vector<std::vector<std::string>> first = compileOnThreads(w, cache);
  for (int t = 0; t < kThreads; t += 2) {
    ASSERT_FALSE(first[t].empty());
    EXPECT_TRUE(first[t] == first[t + 1]) << "workload " << t / 2;
    for (const std::string &c : first[t])
      EXPECT_FALSE(c.empty());
  }
  CacheStats s = cache.stats();
  EXPECT_EQ(s.compiles, sources.size());
  EXPECT_EQ(s.memoryHits + s.compiles, requests);
  EXPECT_EQ(s.corruptEntries + s.writeFailures, 0u);

  // A second cache on the same directory, its memory cleared again and
  // again while the threads compile: every kernel comes from the disk (or
  // from memory), none is compiled, all are the same.
  KernelCache second(Dir, true);
  std::atomic<bool> done{false};
  std::thread clearer([&] {
    while (!done.load()) {
      second.clearMemory();
      std::this_thread::yield();
    }
  });
  std::vector<std::vector<std::string>> again = compileOnThreads(w, second);
  done = true;
  clearer.join();
  EXPECT_TRUE(again == first);
  s = second.stats();
  EXPECT_EQ(s.compiles, 0u);
  EXPECT_GE(s.diskHits, sources.size());
  EXPECT_EQ(s.memoryHits + s.diskHits, requests);
  EXPECT_EQ(s.corruptEntries, 0u);
}

TEST_F(ConcurrencyTest, ThreadsCompilingForTwoArchitecturesShareOneCache) {
  // What a host with GPUs of two architectures does when a thread per device
  // compiles the same graph at once: each architecture's kernels are
  // compiled once, every thread gets its own architecture's images.
  Graph g = workloads()[0].graph;
  const char *arch[2] = {"sm_80", "sm_90"};
  KernelCache cache(Dir, true);
  std::vector<CompiledGraph> got(kThreads);
  onThreads([&](int t) {
    CompileOptions opt;
    opt.cache = &cache;
    opt.arch = arch[t % 2];
    opt.tuning = CompileOptions::Tuning::Off;
    opt.threads = 2;
    got[t] = compileGraph(g, opt);
  });
  size_t n = got[0].numKernels();
  ASSERT_GT(n, 0u);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(got[t].program.arch, arch[t % 2]) << "thread " << t;
    EXPECT_TRUE(cubinsOf(got[t]) == cubinsOf(got[t % 2])) << "thread " << t;
  }
  for (size_t k = 0; k < n; ++k)
    EXPECT_FALSE(got[0].program.kernels[k].cubin == got[1].program.kernels[k].cubin)
        << "kernel " << k << " has one image for both architectures";
  CacheStats s = cache.stats();
  EXPECT_EQ(s.compiles, 2 * n);
  EXPECT_EQ(s.memoryHits, (kThreads - 2) * n);
  EXPECT_EQ(filesUnder(Dir, ".mjk").size(), 2 * n);
}

TEST_F(ConcurrencyTest, EightThreadsEvaluateGraphsAtOnce) {
  std::vector<Workload> w = workloads();
  std::vector<std::vector<HostTensor>> inputs, expected;
  for (const Workload &x : w) {
    inputs.push_back(randomInputs(x.graph, 11));
    expected.push_back(evaluate(x.graph, inputs.back()));
  }
  std::vector<std::vector<HostTensor>> got(kThreads);
  onThreads([&](int t) { got[t] = evaluate(w[t / 2].graph, inputs[t / 2]); });
  for (int t = 0; t < kThreads; ++t) {
    const std::vector<HostTensor> &want = expected[t / 2];
    ASSERT_EQ(got[t].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[t][i].bytes(), want[i].bytes());
      EXPECT_EQ(std::memcmp(got[t][i].data(), want[i].data(), want[i].bytes()), 0)
          << "thread " << t << " output " << i;
    }
  }
}

TEST(Concurrency, EightThreadsLoadTheDriverAtOnce) {
  // With or without a driver on this machine, every thread sees the same
  // answer, and the loader runs once.
  std::vector<int> available(kThreads);
  std::vector<std::string> why(kThreads);
  onThreads([&](int t) { available[t] = Driver::available(&why[t]); });
  for (int t = 1; t < kThreads; ++t) {
    EXPECT_EQ(available[t], available[0]) << "thread " << t;
    EXPECT_EQ(why[t], why[0]) << "thread " << t;
  }
}
