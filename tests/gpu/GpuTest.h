//===- tests/gpu/GpuTest.h - fixture for tests that need a GPU --*- C++ -*-===//
// Every GPU test compares with the CPU reference on fresh random inputs, with
// outputs poisoned before the run. Without a driver or device, graphs are
// still compiled fused and unfused through NVRTC (so CI checks every kernel
// compiles), then the test reports SKIPPED: it did not run on a GPU. The
// device is $MINIJIT_DEVICE (an ordinal, 0 when unset), so the whole suite
// runs on any GPU of the host.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/CompileDetail.h"
#include "tools/Harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>

/// Skips the test without a GPU: put first in tests that use gpu().
#define MJ_REQUIRE_GPU()                                                                           \
  if (!Gpu)                                                                                        \
  GTEST_SKIP() << "no GPU: " << WhyNot

namespace minijit {

/// The ordinal $MINIJIT_DEVICE names, 0 when it is unset or empty; -1 with
/// `error` set when it is not a number from 0 up.
inline int deviceOrdinalFromEnv(std::string &error) {
  const char *v = std::getenv("MINIJIT_DEVICE");
  if (!v || !*v)
    return 0;
  char *end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  if (*end || errno || n < 0 || n > std::numeric_limits<int>::max()) {
    error = std::string("MINIJIT_DEVICE=") + v + ": expected a device ordinal (0, 1, ...)";
    return -1;
  }
  return static_cast<int>(n);
}

class GpuTest : public ::testing::Test {
protected:
  /// Opens the device $MINIJIT_DEVICE names. A value that is not an ordinal,
  /// or a device the driver does not have, fails every test (SetUp) rather
  /// than skipping it: the run asked for a GPU it cannot have.
  static void SetUpTestSuite() {
    if (Gpu || !OpenError.empty())
      return;
    int ordinal = deviceOrdinalFromEnv(OpenError);
    if (ordinal < 0 || !Device::available(&WhyNot))
      return;
    try {
      Gpu = Device::open(ordinal);
    } catch (const CudaError &e) {
      OpenError = std::string("MINIJIT_DEVICE=") + std::to_string(ordinal) + ": " + e.what();
    }
  }
  void SetUp() override {
    if (!OpenError.empty())
      FAIL() << OpenError;
  }
  const Device &gpu() const { return *Gpu; }

  /// Runs `g` fused and unfused; every output must match the reference.
  /// Without a GPU, compiles both versions through NVRTC instead and marks
  /// the test skipped (the rest of the test still runs: later graphs are
  /// compiled too; code after it that needs the device checks Gpu).
  void expectMatches(const Graph &g, uint64_t seed = 1, bool fusedOnly = false) {
    if (!Gpu) {
      for (int fused = 1; fused >= (fusedOnly ? 1 : 0); --fused) {
        CompileOptions opt;
        opt.fusion = fused;
        EXPECT_NO_THROW(compileGraph(g, opt)) << printGraph(g);
      }
      GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
    }
    for (int fused = 1; fused >= (fusedOnly ? 1 : 0); --fused) {
      CheckedRun r = runAndCheck(g, gpu(), fused, seed);
      for (size_t i = 0; i < r.compare.size(); ++i)
        EXPECT_TRUE(r.compare[i].ok)
            << "graph " << g.name() << " (fusion " << (fused ? "on" : "off") << ", seed " << seed
            << ") output %" << g.node(g.outputs()[i]).name << ": " << r.compare[i].summary
            << "\n"
            << r.compiled.fusedText();
    }
  }

  /// Options that keep every f32 product on the CUDA cores (three TF32
  /// products are the default for large ones): for the tests of the CUDA
  /// cores' templates and of what they fuse with.
  static CompileOptions exactF32() {
    CompileOptions opt;
    opt.tf32x3 = false;
    return opt;
  }

  /// Runs `g` compiled with `opt` (device set from the GPU) and checks every
  /// output against the reference; without a GPU, compiles it through NVRTC
  /// and marks the test skipped, as expectMatches does.
  void expectMatchesWith(const Graph &g, CompileOptions opt, uint64_t seed = 1) {
    if (!Gpu) {
      EXPECT_NO_THROW(compileGraph(g, opt)) << printGraph(g);
      GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
    }
    CheckedRun r = runAndCheck(g, gpu(), opt, seed);
    for (size_t i = 0; i < r.compare.size(); ++i)
      EXPECT_TRUE(r.compare[i].ok)
          << "graph " << g.name() << " (seed " << seed << ") output %"
          << g.node(g.outputs()[i]).name << ": " << r.compare[i].summary << "\n"
          << r.compiled.fusedText();
  }

  /// How many of `g`'s fused kernels (compiled without NVRTC, no tuning)
  /// have a schedule of one of `kinds`; `fused` gets the --emit=fused text.
  static size_t kernelsOfKind(const Graph &g, std::initializer_list<ScheduleKind> kinds,
                              std::string &fused, CompileOptions opt = {}) {
    opt.compileKernels = false;
    opt.tuning = CompileOptions::Tuning::Off;
    CompiledGraph cg = compileGraph(g, opt);
    fused = cg.fusedText();
    size_t count = 0;
    for (const CompiledKernel &k : cg.detail->kernels)
      count += std::find(kinds.begin(), kinds.end(), k.schedule.kind()) != kinds.end();
    return count;
  }

  static inline std::optional<Device> Gpu;
  static inline std::string WhyNot;
  static inline std::string OpenError; ///< a device asked for and not opened
};

/// A sample's path: $MINIJIT_SAMPLES, ./samples, or the source tree's.
inline std::string samplePath(const std::string &name) {
  if (const char *d = std::getenv("MINIJIT_SAMPLES"))
    return std::string(d) + "/" + name;
  std::string local = "samples/" + name;
  if (FILE *f = std::fopen(local.c_str(), "r")) {
    std::fclose(f);
    return local;
  }
  return std::string(MINIJIT_SOURCE_DIR) + "/samples/" + name;
}

} // namespace minijit
