// The kernel cache under faults that involve other processes: a writer killed
// at a chosen byte and at random moments, a full disk, a file size limit,
// stale temporary files, bit flips at every position of an entry, and two
// processes compiling the same kernels at once. Each ends with a correct
// kernel and no entry that loads wrongly.
#include "compiler/cache/KernelCache.h"
#include "compiler/nvrtc/Nvrtc.h"
#include "tests/support/CacheFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace minijit;
using namespace minijit::cachetest;

namespace {

const Target kArch{9, 0};

/// The entries under `dir` that do not decode as the entry their path names
/// (KEY[0:2]/KEY[2:].mjk), each with the reason.
std::vector<std::string> badEntries(const std::string &dir) {
  std::vector<std::string> bad;
  for (const std::string &path : filesUnder(dir, ".mjk")) {
    if (!llvm::StringRef(path).endswith(".mjk"))
      continue; // a temporary file
    std::string key = llvm::sys::path::filename(llvm::sys::path::parent_path(path)).str() +
                      llvm::sys::path::stem(path).str();
    NvrtcOutput out;
    std::string why;
    if (!KernelCache::parseEntry(readAll(path), key, out, why))
      bad.push_back(path + ": " + why);
  }
  return bad;
}

size_t entryCount(const std::string &dir) {
  size_t n = 0;
  for (const std::string &path : filesUnder(dir, ".mjk"))
    n += llvm::StringRef(path).endswith(".mjk");
  return n;
}

/// A forked child running `body`; its exit status is body's result. Its
/// stdout and stderr go to a pipe (pipes are not subject to the file size
/// limits some children set). The child ends with _exit: no destructors, no
/// gtest.
class ChildProcess {
public:
  explicit ChildProcess(const std::function<int()> &body) {
    int fds[2];
    if (::pipe(fds) != 0)
      return;
    // Or the child inherits the parent's buffered output and may write it
    // (under ThreadSanitizer it does, as it ends).
    std::fflush(nullptr);
    llvm::outs().flush();
    Pid = ::fork();
    if (Pid == 0) {
      ::close(fds[0]);
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[1]);
      int code = 100;
      try {
        code = body();
      } catch (const std::exception &e) {
        llvm::errs() << "child: exception: " << e.what() << "\n";
        code = 101;
      }
      ::_exit(code);
    }
    ::close(fds[1]);
    ErrFd = fds[0];
  }

  /// Collects the child's stderr and waits for it to end.
  void wait() {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(ErrFd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      Err.append(buf, static_cast<size_t>(n));
    }
    ::close(ErrFd);
    while (::waitpid(Pid, &Status, 0) < 0 && errno == EINTR) {
    }
  }

  pid_t pid() const { return Pid; }
  bool exitedWith(int code) const { return WIFEXITED(Status) && WEXITSTATUS(Status) == code; }
  bool killedBy(int sig) const { return WIFSIGNALED(Status) && WTERMSIG(Status) == sig; }
  const std::string &err() const { return Err; }
  std::string describe() const {
    std::string s = WIFEXITED(Status)     ? "exit " + std::to_string(WEXITSTATUS(Status))
                    : WIFSIGNALED(Status) ? "signal " + std::to_string(WTERMSIG(Status))
                                          : "status " + std::to_string(Status);
    return s + "; stderr: " + Err;
  }

private:
  pid_t Pid = -1;
  int ErrFd = -1;
  int Status = 0;
  std::string Err;
};

/// Runs `body` in a child and waits for it.
ChildProcess runChild(const std::function<int()> &body) {
  ChildProcess c(body);
  c.wait();
  return c;
}

void setFileSizeLimit(rlim_t bytes) {
  struct rlimit rl;
  ::getrlimit(RLIMIT_FSIZE, &rl);
  rl.rlim_cur = bytes;
  ::setrlimit(RLIMIT_FSIZE, &rl);
}

constexpr int kDiedMidWrite = 42;
void exitMidWrite(int) { ::_exit(kDiedMidWrite); }

#if defined(__SANITIZE_THREAD__)
#define MINIJIT_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MINIJIT_UNDER_TSAN 1
#endif
#endif

#ifdef MINIJIT_UNDER_TSAN
/// How many threads this process has now.
int threadCount() {
  int n = 0;
  if (DIR *d = ::opendir("/proc/self/task")) {
    while (const dirent *e = ::readdir(d))
      n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}
#endif

/// Why a forked child cannot die at an exact byte of a write here, or "".
/// Under ThreadSanitizer, a child forked from a process with several threads
/// (the workers of LLVM's parallel executor, which the CPU evaluator starts
/// and keeps, when a test that evaluates runs first: gtest_shuffle) runs with
/// TSan's interceptors off, and TSan delivers an asynchronous signal such
/// as SIGXFSZ only later: the writer sees EFBIG, removes its temporary file
/// and warns, and the handler runs after that (seen with strace). Without
/// TSan, and in a single-threaded TSan process, the handler runs as the
/// write returns.
std::string lateSignalsInChild() {
#ifdef MINIJIT_UNDER_TSAN
  if (int n = threadCount(); n > 1)
    return "under ThreadSanitizer with " + std::to_string(n) +
           " threads, a forked child gets SIGXFSZ only after the failed write has been handled";
#endif
  return "";
}

/// Prints a figure for docs/HARDENING.md among gtest's lines.
void reportFigure(const std::string &line) {
  llvm::outs() << "[ faults   ] " << line << "\n";
  llvm::outs().flush();
}

/// Sets a file's modification time `seconds` in the past.
void age(const std::string &path, int seconds) {
  struct timeval tv[2];
  ::gettimeofday(&tv[0], nullptr);
  tv[0].tv_sec -= seconds;
  tv[1] = tv[0];
  ::utimes(path.c_str(), tv);
}

class CacheFaultTest : public ::testing::Test {
protected:
  void SetUp() override {
    // Loaded before any fork, so children key entries as the parent does.
    ASSERT_FALSE(nvrtcVersion().empty());
    Dir = makeScratchDir("minijit-cache-fault");
    ASSERT_FALSE(Dir.empty());
  }
  void TearDown() override { llvm::sys::fs::remove_directories(Dir); }

  /// A fresh directory under Dir.
  std::string subdir(const std::string &name) {
    std::string d = Dir + "/" + name;
    EXPECT_FALSE(llvm::sys::fs::create_directories(d));
    return d;
  }

  /// NVRTC's output for `source`, compiled once per test outside any cache.
  const NvrtcOutput &reference(const std::string &source, const std::string &name) {
    auto it = References.find(source);
    if (it == References.end())
      it = References.emplace(source, compileWithNvrtc(source, name, kArch, {})).first;
    return it->second;
  }

  std::string Dir;
  std::map<std::string, NvrtcOutput> References;
};

} // namespace

TEST_F(CacheFaultTest, WriterKilledAtAnyByteLeavesNoEntry) {
  if (std::string why = lateSignalsInChild(); !why.empty())
    GTEST_SKIP() << why;
  std::string src = kernelSource("k_kill", 1);
  const NvrtcOutput &ref = reference(src, "k_kill");
  std::string probeDir = subdir("probe");
  KernelCache probe(probeDir, true);
  probe.get(src, "k_kill", kArch, {});
  size_t size = readAll(probe.pathFor(probe.keyFor(src, kArch, {}))).size();
  ASSERT_GT(size, 100u);
  // Header, key, lengths, payload, the checksum's first and last byte.
  for (size_t limit : {size_t(0), size_t(1), size_t(8), size_t(20), size_t(90), size / 2,
                       size - 8, size - 1}) {
    std::string dir = subdir("limit" + std::to_string(limit));
    // The file size limit stops the write at exactly `limit` bytes; SIGXFSZ
    // then ends the process (through a handler, so it leaves no core file).
    ChildProcess child = runChild([&] {
      ::signal(SIGXFSZ, exitMidWrite);
      setFileSizeLimit(limit);
      KernelCache(dir, true).get(src, "k_kill", kArch, {});
      return 0;
    });
    ASSERT_TRUE(child.exitedWith(kDiedMidWrite)) << "limit " << limit << ": " << child.describe();
    EXPECT_EQ(entryCount(dir), 0u) << "limit " << limit;
    std::vector<std::string> temps = filesUnder(dir, ".tmp-");
    ASSERT_EQ(temps.size(), 1u) << "limit " << limit;
    EXPECT_EQ(readAll(temps[0]).size(), limit) << "the writer did not die mid-write";

    KernelCache cache(dir, true);
    CachedKernel k = cache.get(src, "k_kill", kArch, {});
    EXPECT_EQ(k.from, CachedKernel::From::Compiled) << "limit " << limit;
    EXPECT_TRUE(k.out.cubin == ref.cubin) << "limit " << limit;
    EXPECT_EQ(cache.stats().corruptEntries, 0u) << "a temporary file was read";
    EXPECT_TRUE(badEntries(dir).empty());
    KernelCache again(dir, true);
    CachedKernel fromDisk = again.get(src, "k_kill", kArch, {});
    EXPECT_EQ(fromDisk.from, CachedKernel::From::Disk) << "limit " << limit;
    EXPECT_TRUE(fromDisk.out.cubin == ref.cubin) << "limit " << limit;
  }
}

TEST_F(CacheFaultTest, StaleTemporaryFilesAreRemovedYoungOnesKept) {
  if (std::string why = lateSignalsInChild(); !why.empty())
    GTEST_SKIP() << why;
  std::string src = kernelSource("k_stale", 2);
  std::string dir = subdir("stale");
  ChildProcess child = runChild([&] {
    ::signal(SIGXFSZ, exitMidWrite);
    setFileSizeLimit(100);
    KernelCache(dir, true).get(src, "k_stale", kArch, {});
    return 0;
  });
  ASSERT_TRUE(child.exitedWith(kDiedMidWrite)) << child.describe();
  std::vector<std::string> temps = filesUnder(dir, ".tmp-");
  ASSERT_EQ(temps.size(), 1u);
  std::string stale = temps[0];
  age(stale, 2 * KernelCache::kStaleTempSeconds);
  // A writer at work in the same directory right now.
  std::string young = llvm::sys::path::parent_path(stale).str() + "/other.mjk.tmp-12345678";
  ASSERT_TRUE(writeAll(young, "partial"));

  KernelCache cache(dir, true);
  EXPECT_EQ(cache.get(src, "k_stale", kArch, {}).from, CachedKernel::From::Compiled);
  EXPECT_EQ(cache.stats().staleTempsRemoved, 1u);
  EXPECT_FALSE(llvm::sys::fs::exists(stale));
  EXPECT_TRUE(llvm::sys::fs::exists(young));
  EXPECT_EQ(entryCount(dir), 1u);
  EXPECT_TRUE(badEntries(dir).empty());
}

TEST_F(CacheFaultTest, WritersKilledAtRandomMomentsLeaveNoBadEntry) {
  // Each child compiles and stores two new kernels; the parent kills it with
  // SIGKILL after a random delay spread over the time a whole run takes.
  std::string dir = subdir("random");
  auto addends = [](int round) { return std::vector<int>{1000 + 2 * round, 1001 + 2 * round}; };
  auto body = [&](int round) {
    return [&, round] {
      KernelCache cache(dir, true);
      for (int a : addends(round))
        cache.get(kernelSource("k_r", a), "k_r", kArch, {});
      return 0;
    };
  };
  auto t0 = std::chrono::steady_clock::now();
  ChildProcess whole = runChild(body(-1));
  ASSERT_TRUE(whole.exitedWith(0)) << whole.describe();
  double runUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                     .count();
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> delay(0, runUs);
  const int rounds = 30;
  int killed = 0, finished = 0;
  for (int round = 0; round < rounds; ++round) {
    ChildProcess child(body(round));
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(delay(rng))));
    ::kill(child.pid(), SIGKILL);
    child.wait();
    ASSERT_TRUE(child.killedBy(SIGKILL) || child.exitedWith(0)) << child.describe();
    killed += child.killedBy(SIGKILL);
    finished += child.exitedWith(0);
    std::vector<std::string> bad = badEntries(dir);
    ASSERT_TRUE(bad.empty()) << "round " << round << ": " << bad[0];
  }
  EXPECT_GT(killed, 0);
  // Every entry left holds the kernel of its own source (the literal that
  // source adds, as PTX spells a float: 0f + its bits).
  KernelCache keys(dir, true);
  size_t entries = 0;
  for (int round = -1; round < rounds; ++round)
    for (int a : addends(round)) {
      std::string src = kernelSource("k_r", a), key = keys.keyFor(src, kArch, {});
      std::string data = readAll(keys.pathFor(key));
      if (data.empty())
        continue;
      ++entries;
      NvrtcOutput out;
      std::string why;
      ASSERT_TRUE(KernelCache::parseEntry(data, key, out, why)) << why;
      float f = static_cast<float>(a);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      EXPECT_NE(out.ptx.find(llvm::formatv("0f{0:X-8}", bits).str()), std::string::npos) << a;
    }
  EXPECT_EQ(entries, entryCount(dir));
  reportFigure(llvm::formatv("{0} writers killed at random moments: {1} killed, {2} finished; {3} "
                             "whole entries and {4} temporary files left",
                             rounds, killed, finished, entries, filesUnder(dir, ".tmp-").size()));
  // The last round's kernels come out right, from an entry or compiled again.
  for (int a : addends(rounds - 1)) {
    std::string src = kernelSource("k_r", a);
    CachedKernel k = keys.get(src, "k_r", kArch, {});
    EXPECT_TRUE(k.out.ptx == reference(src, "k_r").ptx) << a;
  }
  EXPECT_EQ(keys.stats().corruptEntries, 0u);
}

TEST_F(CacheFaultTest, FullDiskStillCompilesWithAWarning) {
  std::string src = kernelSource("k_full", 3);
  const NvrtcOutput &ref = reference(src, "k_full");
  std::string dir = subdir("full");
  // With SIGXFSZ ignored, a write past the file size limit fails with EFBIG
  // as on a full disk (ENOSPC): same path, same handling.
  ChildProcess child = runChild([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    setFileSizeLimit(64);
    KernelCache cache(dir, true);
    CachedKernel k = cache.get(src, "k_full", kArch, {});
    if (k.from != CachedKernel::From::Compiled || !(k.out.cubin == ref.cubin))
      return 1;
    if (cache.stats().writeFailures != 1)
      return 2;
    if (cache.get(src, "k_full", kArch, {}).from != CachedKernel::From::Memory)
      return 3;
    return 0;
  });
  ASSERT_TRUE(child.exitedWith(0)) << child.describe();
  EXPECT_NE(child.err().find("minijit: warning: kernel cache: cannot write to " + dir + " (File "
                             "too large); kernels are compiled but not kept"),
            std::string::npos)
      << child.err();
  EXPECT_EQ(filesUnder(dir, "").size(), 0u) << "a partial entry was left behind";
}

TEST_F(CacheFaultTest, FileSizeLimitDoesNotEndTheProcess) {
  // SIGXFSZ left at its default (ending the process): the cache sees that
  // the entry does not fit under the limit and does not write it.
  std::string src = kernelSource("k_ulimit", 4);
  const NvrtcOutput &ref = reference(src, "k_ulimit");
  std::string dir = subdir("ulimit");
  ChildProcess child = runChild([&] {
    ::signal(SIGXFSZ, SIG_DFL);
    setFileSizeLimit(64);
    KernelCache cache(dir, true);
    CachedKernel k = cache.get(src, "k_ulimit", kArch, {});
    return k.from == CachedKernel::From::Compiled && k.out.cubin == ref.cubin &&
                   cache.stats().writeFailures == 1
               ? 0
               : 1;
  });
  ASSERT_TRUE(child.exitedWith(0)) << child.describe();
  EXPECT_NE(child.err().find("exceeds the file size limit of 64 bytes (ulimit -f)"),
            std::string::npos)
      << child.err();
  EXPECT_EQ(filesUnder(dir, "").size(), 0u);
}

TEST_F(CacheFaultTest, EveryBitFlipAndTruncationIsDetected) {
  std::string src = kernelSource("k_flip", 5);
  std::string dir = subdir("flip");
  KernelCache cache(dir, true);
  cache.get(src, "k_flip", kArch, {});
  std::string key = cache.keyFor(src, kArch, {});
  std::string good = readAll(cache.pathFor(key));
  NvrtcOutput out;
  std::string why;
  ASSERT_TRUE(KernelCache::parseEntry(good, key, out, why)) << why;
  size_t flips = 0;
  for (size_t i = 0; i < good.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] ^= static_cast<char>(1 << bit);
      ASSERT_FALSE(KernelCache::parseEntry(bad, key, out, why)) << "byte " << i << " bit " << bit;
      ++flips;
    }
  for (size_t n = 0; n < good.size(); ++n)
    ASSERT_FALSE(KernelCache::parseEntry(llvm::StringRef(good).take_front(n), key, out, why))
        << "cut to " << n << " bytes";
  EXPECT_FALSE(KernelCache::parseEntry(good + "x", key, out, why));
  EXPECT_FALSE(KernelCache::parseEntry(good, std::string(64, '0'), out, why));
  EXPECT_EQ(why, "for another key");
  reportFigure(llvm::formatv("{0} single-bit flips and {1} truncations of a {1}-byte entry: all "
                             "detected",
                             flips, good.size()));
}

TEST_F(CacheFaultTest, BitFlipsInEachPartOfAnEntryAreRecompiled) {
  std::string src = kernelSource("k_part", 6);
  const NvrtcOutput &ref = reference(src, "k_part");
  std::string dir = subdir("parts");
  KernelCache writer(dir, true);
  writer.get(src, "k_part", kArch, {});
  std::string path = writer.pathFor(writer.keyFor(src, kArch, {}));
  std::string good = readAll(path);
  // Offsets of the parts: magic, then (length, bytes) for key, cubin, ptx,
  // log and the NVRTC version, then the checksum.
  std::vector<std::pair<std::string, size_t>> parts = {{"magic", 3}};
  size_t at = 8;
  for (const char *field : {"key", "cubin", "ptx", "log", "nvrtc version"}) {
    uint64_t n;
    ASSERT_LE(at + 8, good.size());
    std::memcpy(&n, good.data() + at, 8);
    parts.push_back({std::string(field) + " length", at + 1});
    if (n)
      parts.push_back({field, at + 8 + n / 2});
    at += 8 + n;
  }
  ASSERT_EQ(at + 8, good.size());
  parts.push_back({"checksum", at + 4});
  for (auto &[part, offset] : parts) {
    std::string bad = good;
    bad[offset] ^= 0x04;
    ASSERT_TRUE(writeAll(path, bad));
    KernelCache cache(dir, true);
    CachedKernel k = cache.get(src, "k_part", kArch, {});
    EXPECT_EQ(k.from, CachedKernel::From::Compiled) << part;
    EXPECT_TRUE(k.out.cubin == ref.cubin) << part;
    EXPECT_EQ(cache.stats().corruptEntries, 1u) << part;
    EXPECT_TRUE(badEntries(dir).empty()) << part << ": not replaced";
  }
}

TEST_F(CacheFaultTest, TwoProcessesCompilingAtOnceAgree) {
  const int rounds = 5, kernels = 3;
  std::string results = subdir("results");
  int bothCompiled = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string dir = subdir("both" + std::to_string(round));
    std::vector<std::string> srcs;
    for (int j = 0; j < kernels; ++j)
      srcs.push_back(kernelSource("k_both", 100 * round + j));
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<std::unique_ptr<ChildProcess>> children;
    for (int c = 0; c < 2; ++c)
      children.push_back(std::make_unique<ChildProcess>([&, c] {
        ::close(go[1]);
        char byte;
        if (::read(go[0], &byte, 1) != 1)
          return 10;
        KernelCache cache(dir, true);
        for (int j = 0; j < kernels; ++j) {
          CachedKernel k = cache.get(srcs[j], "k_both", kArch, {});
          std::string base = results + "/" + std::to_string(c) + "-" + std::to_string(j);
          if (!writeAll(base + ".cubin", k.out.cubin) ||
              !writeAll(base + ".from", std::to_string(static_cast<int>(k.from))))
            return 11;
        }
        return 0;
      }));
    ::close(go[0]);
    ASSERT_EQ(::write(go[1], "gg", 2), 2); // both start together
    ::close(go[1]);
    for (auto &c : children) {
      c->wait();
      ASSERT_TRUE(c->exitedWith(0)) << c->describe();
    }
    KernelCache after(dir, true);
    for (int j = 0; j < kernels; ++j) {
      std::string c0 = readAll(results + "/0-" + std::to_string(j) + ".cubin");
      std::string c1 = readAll(results + "/1-" + std::to_string(j) + ".cubin");
      EXPECT_FALSE(c0.empty());
      EXPECT_TRUE(c0 == c1) << "round " << round << " kernel " << j;
      EXPECT_TRUE(c0 == reference(srcs[j], "k_both").cubin) << "round " << round;
      bothCompiled += readAll(results + "/0-" + std::to_string(j) + ".from") == "0" &&
                      readAll(results + "/1-" + std::to_string(j) + ".from") == "0";
      CachedKernel k = after.get(srcs[j], "k_both", kArch, {});
      EXPECT_EQ(k.from, CachedKernel::From::Disk) << "round " << round << " kernel " << j;
      EXPECT_TRUE(k.out.cubin == c0);
    }
    EXPECT_TRUE(badEntries(dir).empty());
    EXPECT_TRUE(filesUnder(dir, ".tmp-").empty());
  }
  reportFigure(llvm::formatv("{0} kernels compiled by two processes at once; {1} compiled by both "
                             "(the other times one read the other's entry)",
                             rounds * kernels, bothCompiled));
}
