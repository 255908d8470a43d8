// NVRTC and the kernel cache: misses, memory and disk hits, corrupt entries, threads, errors.
#include "compiler/cache/KernelCache.h"
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/nvrtc/Nvrtc.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "tests/support/CacheFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace minijit;
using namespace minijit::cachetest;

namespace {

const Target kArch{9, 0};

class KernelCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    Dir = makeScratchDir("minijit-cache-test");
    ASSERT_FALSE(Dir.empty());
  }
  void TearDown() override {
    ::chmod(Dir.c_str(), 0755);
    llvm::sys::fs::remove_directories(Dir);
  }

  /// Fills the cache directory with the entry for `source` and returns its path.
  std::string storeEntry(const std::string &source, const std::string &name) {
    KernelCache c(Dir, true);
    c.get(source, name, kArch, {});
    std::string path = c.pathFor(c.keyFor(source, kArch, {}));
    EXPECT_TRUE(llvm::sys::fs::exists(path)) << path;
    return path;
  }

  std::string Dir;
};

} // namespace

TEST_F(KernelCacheTest, MissCompilesThenMemoryHits) {
  KernelCache cache(Dir, true);
  std::string src = kernelSource("k_add");
  CachedKernel first = cache.get(src, "k_add", kArch, {});
  EXPECT_EQ(first.from, CachedKernel::From::Compiled);
  EXPECT_FALSE(first.out.cubin.empty());
  EXPECT_NE(first.out.ptx.find(".entry k_add"), std::string::npos);
  EXPECT_NE(first.out.ptx.find(".target sm_90"), std::string::npos);
  CachedKernel second = cache.get(src, "k_add", kArch, {});
  EXPECT_EQ(second.from, CachedKernel::From::Memory);
  EXPECT_TRUE(second.out.cubin == first.out.cubin);
  CacheStats s = cache.stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.memoryHits, 1u);
  EXPECT_EQ(s.diskHits, 0u);
  EXPECT_EQ(s.corruptEntries, 0u);
  EXPECT_EQ(s.writeFailures, 0u);
}

TEST_F(KernelCacheTest, ANewCacheOnTheSameDirectoryHitsTheDisk) {
  std::string src = kernelSource("k_add");
  std::string cubin;
  {
    KernelCache writer(Dir, true);
    cubin = writer.get(src, "k_add", kArch, {}).out.cubin;
  }
  KernelCache reader(Dir, true);
  CachedKernel k = reader.get(src, "k_add", kArch, {});
  EXPECT_EQ(k.from, CachedKernel::From::Disk);
  EXPECT_TRUE(k.out.cubin == cubin);
  EXPECT_TRUE(k.out.resources.known);
  EXPECT_EQ(reader.stats().diskHits, 1u);
  EXPECT_EQ(reader.stats().compiles, 0u);
}

TEST_F(KernelCacheTest, ClearMemoryFallsBackToTheDisk) {
  KernelCache cache(Dir, true);
  std::string src = kernelSource("k_add");
  cache.get(src, "k_add", kArch, {});
  cache.clearMemory();
  EXPECT_EQ(cache.get(src, "k_add", kArch, {}).from, CachedKernel::From::Disk);
}

TEST_F(KernelCacheTest, EntriesAreWrittenCompletelyWithNoTemporariesLeft) {
  std::string path = storeEntry(kernelSource("k_add"), "k_add");
  std::string data = readAll(path);
  EXPECT_TRUE(data.rfind("MJKC0001", 0) == 0);
  EXPECT_EQ(filesUnder(Dir, ".mjk").size(), 1u);
  for (const std::string &f : filesUnder(Dir, ""))
    EXPECT_EQ(f.find(".tmp-"), std::string::npos) << f;
}

TEST_F(KernelCacheTest, KeysDependOnSourceArchAndOptions) {
  KernelCache cache(Dir, true);
  std::string a = kernelSource("k_add"), b = kernelSource("k_add", 2);
  std::string key = cache.keyFor(a, kArch, {});
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(cache.keyFor(a, kArch, {}), key);
  EXPECT_NE(cache.keyFor(b, kArch, {}), key);
  EXPECT_NE(cache.keyFor(a, Target{8, 0}, {}), key);
  EXPECT_NE(cache.keyFor(a, kArch, {"-lineinfo"}), key);
  EXPECT_EQ(cache.pathFor(key), Dir + "/" + key.substr(0, 2) + "/" + key.substr(2) + ".mjk");
}

TEST_F(KernelCacheTest, TruncatedEntryIsRecompiledAndReplaced) {
  std::string src = kernelSource("k_add");
  std::string path = storeEntry(src, "k_add");
  std::string good = readAll(path);
  ASSERT_TRUE(writeAll(path, good.substr(0, good.size() / 2)));
  KernelCache cache(Dir, true);
  CachedKernel k = cache.get(src, "k_add", kArch, {});
  EXPECT_EQ(k.from, CachedKernel::From::Compiled);
  EXPECT_EQ(cache.stats().corruptEntries, 1u);
  EXPECT_EQ(cache.stats().compiles, 1u);
  // Replaced by a complete entry (not byte-identical: the ptxas log inside
  // carries its compile time).
  EXPECT_EQ(readAll(path).size(), good.size());
  KernelCache again(Dir, true);
  EXPECT_EQ(again.get(src, "k_add", kArch, {}).from, CachedKernel::From::Disk);
}

TEST_F(KernelCacheTest, EntryCutBeforeItsChecksumIsRecompiled) {
  std::string src = kernelSource("k_add");
  std::string path = storeEntry(src, "k_add");
  std::string good = readAll(path);
  ASSERT_TRUE(writeAll(path, good.substr(0, good.size() - 3)));
  KernelCache cache(Dir, true);
  EXPECT_EQ(cache.get(src, "k_add", kArch, {}).from, CachedKernel::From::Compiled);
  EXPECT_EQ(cache.stats().corruptEntries, 1u);
}

TEST_F(KernelCacheTest, BitFlippedEntryIsRecompiledAndReplaced) {
  std::string src = kernelSource("k_add");
  std::string path = storeEntry(src, "k_add");
  std::string good = readAll(path);
  for (size_t at : {good.size() / 2, size_t(20), good.size() - 1}) {
    std::string bad = good;
    bad[at] ^= 0x10;
    ASSERT_TRUE(writeAll(path, bad));
    KernelCache cache(Dir, true);
    CachedKernel k = cache.get(src, "k_add", kArch, {});
    EXPECT_EQ(k.from, CachedKernel::From::Compiled) << "flip at " << at;
    EXPECT_EQ(cache.stats().corruptEntries, 1u) << "flip at " << at;
    KernelCache again(Dir, true);
    EXPECT_EQ(again.get(src, "k_add", kArch, {}).from, CachedKernel::From::Disk)
        << "flip at " << at << ": the entry was not replaced";
  }
}

TEST_F(KernelCacheTest, EntryOfAnotherKeyIsNotLoaded) {
  std::string a = kernelSource("k_one", 1), b = kernelSource("k_two", 2);
  std::string pathA = storeEntry(a, "k_one");
  KernelCache probe(Dir, true);
  std::string pathB = probe.pathFor(probe.keyFor(b, kArch, {}));
  ASSERT_FALSE(llvm::sys::fs::create_directories(llvm::sys::path::parent_path(pathB)));
  ASSERT_TRUE(writeAll(pathB, readAll(pathA))); // a valid entry, but for a's key
  KernelCache cache(Dir, true);
  CachedKernel k = cache.get(b, "k_two", kArch, {});
  EXPECT_EQ(k.from, CachedKernel::From::Compiled);
  EXPECT_EQ(cache.stats().corruptEntries, 1u);
  EXPECT_NE(k.out.ptx.find(".entry k_two"), std::string::npos);
  EXPECT_EQ(k.out.ptx.find("k_one"), std::string::npos);
  KernelCache again(Dir, true);
  CachedKernel fromDisk = again.get(b, "k_two", kArch, {});
  EXPECT_EQ(fromDisk.from, CachedKernel::From::Disk);
  EXPECT_TRUE(fromDisk.out.cubin == k.out.cubin);
}

TEST_F(KernelCacheTest, ForeignFileIsNotLoaded) {
  std::string src = kernelSource("k_add");
  std::string path = storeEntry(src, "k_add");
  ASSERT_TRUE(writeAll(path, "not a cache entry at all"));
  KernelCache cache(Dir, true);
  EXPECT_EQ(cache.get(src, "k_add", kArch, {}).from, CachedKernel::From::Compiled);
  EXPECT_EQ(cache.stats().corruptEntries, 1u);
  ASSERT_TRUE(writeAll(path, ""));
  KernelCache empty(Dir, true);
  EXPECT_EQ(empty.get(src, "k_add", kArch, {}).from, CachedKernel::From::Compiled);
  EXPECT_EQ(empty.stats().corruptEntries, 1u);
}

TEST_F(KernelCacheTest, ReadOnlyDirectoryStillCompiles) {
  ASSERT_EQ(::chmod(Dir.c_str(), 0555), 0);
  std::string probe = Dir + "/probe";
  if (FILE *f = std::fopen(probe.c_str(), "w")) {
    std::fclose(f);
    std::remove(probe.c_str());
    GTEST_SKIP() << "chmod does not stop writes here (running as root)";
  }
  KernelCache cache(Dir, true);
  std::string src = kernelSource("k_add");
  CachedKernel k = cache.get(src, "k_add", kArch, {});
  EXPECT_EQ(k.from, CachedKernel::From::Compiled);
  EXPECT_FALSE(k.out.cubin.empty());
  EXPECT_GE(cache.stats().writeFailures, 1u);
  EXPECT_EQ(cache.get(src, "k_add", kArch, {}).from, CachedKernel::From::Memory);
}

TEST_F(KernelCacheTest, UnwritableDirectoryStillCompiles) {
  // A file where the cache directory should be: writes fail even for root.
  std::string file = Dir + "/not-a-dir";
  ASSERT_TRUE(writeAll(file, "x"));
  KernelCache cache(file + "/cache", true);
  std::string src = kernelSource("k_add");
  CachedKernel k = cache.get(src, "k_add", kArch, {});
  EXPECT_EQ(k.from, CachedKernel::From::Compiled);
  EXPECT_FALSE(k.out.cubin.empty());
  EXPECT_EQ(cache.stats().writeFailures, 1u);
  EXPECT_EQ(cache.stats().compiles, 1u);
  EXPECT_EQ(cache.get(src, "k_add", kArch, {}).from, CachedKernel::From::Memory);
}

TEST_F(KernelCacheTest, ConcurrentRequestsCompileOnce) {
  KernelCache cache(Dir, true);
  std::string src = kernelSource("k_par");
  std::vector<std::string> cubins(8);
  std::vector<int> from(8, -1);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < 8)
        std::this_thread::yield();
      CachedKernel k = cache.get(src, "k_par", kArch, {});
      cubins[t] = k.out.cubin;
      from[t] = static_cast<int>(k.from);
    });
  for (std::thread &t : threads)
    t.join();
  CacheStats s = cache.stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.memoryHits, 7u);
  EXPECT_EQ(s.diskHits, 0u);
  int compiled = 0;
  for (int t = 0; t < 8; ++t) {
    EXPECT_FALSE(cubins[t].empty());
    EXPECT_TRUE(cubins[t] == cubins[0]) << "thread " << t;
    compiled += from[t] == static_cast<int>(CachedKernel::From::Compiled);
  }
  EXPECT_EQ(compiled, 1);
}

// Two GPUs of different architectures (issue 18): a graph compiled for each
// compiles its kernels once per architecture, and the cache keeps both images,
// in memory and on disk, each found again by the next compile for its arch.
TEST_F(KernelCacheTest, EachArchitectureKeepsItsOwnImages) {
  Graph g("softmax");
  Tensor x = g.input("x", DType::F32, {64, 256});
  Tensor e = exp(x - max(x, {1}, true));
  g.output(e / sum(e, {1}, true), "y");
  auto compileFor = [&](KernelCache &cache, const char *arch) {
    CompileOptions opt;
    opt.cache = &cache;
    opt.arch = arch;
    opt.tuning = CompileOptions::Tuning::Off;
    opt.threads = 1;
    return compileGraph(g, opt);
  };
  auto expectOrigin = [](const CompiledGraph &c, CachedKernel::From from, const char *what) {
    for (const CompiledKernel &k : c.detail->kernels)
      EXPECT_EQ(k.origin, from) << what << ": kernel " << k.name;
  };

  KernelCache cache(Dir, true);
  CompiledGraph a80 = compileFor(cache, "sm_80");
  CompiledGraph a90 = compileFor(cache, "sm_90");
  size_t n = a80.numKernels();
  ASSERT_GT(n, 0u);
  ASSERT_EQ(a90.numKernels(), n);
  EXPECT_EQ(a80.program.arch, "sm_80");
  EXPECT_EQ(a90.program.arch, "sm_90");
  for (size_t k = 0; k < n; ++k) {
    EXPECT_NE(a80.detail->kernels[k].image.ptx.find(".target sm_80"), std::string::npos);
    EXPECT_NE(a90.detail->kernels[k].image.ptx.find(".target sm_90"), std::string::npos);
    EXPECT_FALSE(a80.program.kernels[k].cubin == a90.program.kernels[k].cubin) << "kernel " << k;
  }
  expectOrigin(a80, CachedKernel::From::Compiled, "first sm_80 compile");
  expectOrigin(a90, CachedKernel::From::Compiled, "first sm_90 compile");
  EXPECT_EQ(cache.stats().compiles, 2 * n);
  EXPECT_EQ(filesUnder(Dir, ".mjk").size(), 2 * n);

  // Compiled again in the same process: both from memory, nothing compiled.
  CompiledGraph b80 = compileFor(cache, "sm_80");
  CompiledGraph b90 = compileFor(cache, "sm_90");
  expectOrigin(b80, CachedKernel::From::Memory, "second sm_80 compile");
  expectOrigin(b90, CachedKernel::From::Memory, "second sm_90 compile");
  EXPECT_EQ(cache.stats().compiles, 2 * n);
  EXPECT_EQ(cache.stats().memoryHits, 2 * n);

  // In another process (a new cache on the same folder): both from the disk.
  KernelCache fresh(Dir, true);
  CompiledGraph c90 = compileFor(fresh, "sm_90");
  CompiledGraph c80 = compileFor(fresh, "sm_80");
  expectOrigin(c80, CachedKernel::From::Disk, "sm_80 compile of a new cache");
  expectOrigin(c90, CachedKernel::From::Disk, "sm_90 compile of a new cache");
  EXPECT_EQ(fresh.stats().compiles, 0u);
  EXPECT_EQ(fresh.stats().diskHits, 2 * n);
  for (size_t k = 0; k < n; ++k) {
    EXPECT_TRUE(c80.program.kernels[k].cubin == a80.program.kernels[k].cubin) << "kernel " << k;
    EXPECT_TRUE(c90.program.kernels[k].cubin == a90.program.kernels[k].cubin) << "kernel " << k;
  }
}

TEST_F(KernelCacheTest, DisabledCacheCompilesEveryTimeAndWritesNothing) {
  KernelCache cache(Dir, false);
  EXPECT_FALSE(cache.enabled());
  std::string src = kernelSource("k_add");
  EXPECT_EQ(cache.get(src, "k_add", kArch, {}).from, CachedKernel::From::Compiled);
  EXPECT_EQ(cache.get(src, "k_add", kArch, {}).from, CachedKernel::From::Compiled);
  EXPECT_EQ(cache.stats().compiles, 2u);
  EXPECT_EQ(cache.stats().memoryHits, 0u);
  EXPECT_TRUE(filesUnder(Dir, ".mjk").empty());
}

TEST_F(KernelCacheTest, MemoryOnlyCacheHasNoDirectory) {
  KernelCache cache("", true);
  std::string src = kernelSource("k_mem");
  EXPECT_EQ(cache.get(src, "k_mem", kArch, {}).from, CachedKernel::From::Compiled);
  EXPECT_EQ(cache.get(src, "k_mem", kArch, {}).from, CachedKernel::From::Memory);
  KernelCache other("", true);
  EXPECT_EQ(other.get(src, "k_mem", kArch, {}).from, CachedKernel::From::Compiled);
}

TEST_F(KernelCacheTest, SyntaxErrorNamesTheKernelAndShowsLogAndSource) {
  KernelCache cache(Dir, true);
  std::string src = "extern \"C\" __global__ void bad_kernel(float *p) {\n"
                    "  p[0] = undeclared_thing + 1.0f;\n"
                    "}\n";
  try {
    cache.get(src, "bad_kernel", kArch, {});
    FAIL() << "no CompileError";
  } catch (const CompileError &e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("NVRTC could not compile kernel bad_kernel (", 0), 0u) << msg;
    EXPECT_NE(msg.find("undeclared_thing"), std::string::npos) << msg;
    EXPECT_NE(msg.find("error"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--gpu-architecture=sm_90"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--- source of bad_kernel ---"), std::string::npos) << msg;
    EXPECT_NE(msg.find("    2 |   p[0] = undeclared_thing + 1.0f;"), std::string::npos) << msg;
  }
  // A failed compile is not remembered: asking again compiles (and fails) again.
  EXPECT_THROW(cache.get(src, "bad_kernel", kArch, {}), CompileError);
  EXPECT_EQ(cache.stats().memoryHits, 0u);
  EXPECT_TRUE(filesUnder(Dir, ".mjk").empty());
}

TEST(Nvrtc, VersionIsMajorDotMinor) {
  std::string v = nvrtcVersion();
  ASSERT_NE(v.find('.'), std::string::npos) << v;
  EXPECT_TRUE(nvrtcLoaded());
  EXPECT_FALSE(nvrtcLibraryPath().empty());
}

TEST(Nvrtc, PtxasReportIsParsed) {
  std::string log = "ptxas info    : 0 bytes gmem\n"
                    "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                    "ptxas info    : Function properties for k\n"
                    "    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
                    "ptxas info    : Used 40 registers, 1024 bytes smem, 360 bytes cmem[0]\n";
  KernelResources r = parsePtxasReport(log);
  EXPECT_TRUE(r.known);
  EXPECT_EQ(r.registers, 40u);
  EXPECT_EQ(r.sharedBytes, 1024u);
  EXPECT_EQ(r.stackBytes, 16u);
  EXPECT_EQ(r.spillStores, 4u);
  EXPECT_EQ(r.spillLoads, 8u);
  EXPECT_FALSE(parsePtxasReport("").known);
}

TEST(Nvrtc, CompiledKernelsReportTheirResources) {
  NvrtcOutput out = compileWithNvrtc(kernelSource("k_res"), "k_res", kArch, {});
  EXPECT_TRUE(out.resources.known) << out.log;
  EXPECT_GT(out.resources.registers, 0u) << out.log;
  EXPECT_EQ(out.resources.spillStores, 0u);
}

TEST(Nvrtc, NumberedSource) { EXPECT_EQ(numberedSource("a\nb"), "    1 | a\n    2 | b\n"); }

TEST(Nvrtc, SamplesCompileThroughNvrtc) {
  // Every sample workload, fused, through NVRTC and the process-wide cache
  // ($MINIJIT_CACHE_DIR when ctest runs us).
  Graph soft("softmax");
  Tensor x = soft.input("x", DType::F32, {4096, 1024});
  Tensor e = exp(x - max(x, {1}, true));
  soft.output(e / sum(e, {1}, true), "y");
  Graph ln("layernorm");
  Tensor h = ln.input("x", DType::BF16, {4096, 1024});
  Tensor d = h - mean(h, {1}, true);
  ln.output(d * rsqrt(mean(d * d, {1}, true) + 1e-5), "y");
  Graph col("colsum");
  col.output(sum(col.input("x", DType::F16, {1000, 333}), {0}), "y");
  for (const Graph *g : {&soft, &ln, &col}) {
    CompiledGraph c = compileGraph(*g);
    ASSERT_EQ(c.program.kernels.size(), 1u) << g->name();
    EXPECT_FALSE(c.program.kernels[0].cubin.empty()) << g->name();
    EXPECT_TRUE(c.program.kernels[0].resources.known) << g->name();
  }
}

TEST(Nvrtc, MatmulOperandNamesDoNotClashWithTheTemplatesLocals) {
  // Found in commit 8a20cd2: the SIMT matmul template declares locals (r, c, e, gm, gk, gn, tx,
  // ty, As, Bs, ...) that a kernel parameter named after an IR value can
  // shadow: `graph mm(%a: f32[128, 64], %c: f32[64, 32]) { %y = matmul %a, %c
  // return %y }` fails in NVRTC with "expression must have pointer-to-object
  // type but it has type int" at `c[bBatch + gk * 32 + gn * 1]`.
  Graph g("mm");
  Tensor a = g.input("a", DType::F32, {128, 64});
  Tensor c = g.input("c", DType::F32, {64, 32});
  g.output(matmul(a, c), "y");
  CompileOptions opt;
  KernelCache cache("", true);
  opt.cache = &cache;
  EXPECT_NO_THROW(compileGraph(g, opt));
}
