//===- tests/gpu/GpuTest.h - fixture for tests that need a GPU --*- C++ -*-===//
// Every GPU test compares with the CPU reference on fresh random inputs, with
// outputs poisoned before the run. Without a driver or device, graphs are
// still compiled fused and unfused through NVRTC (so CI checks every kernel
// compiles), then the test reports SKIPPED: it did not run on a GPU.
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/Harness.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

/// Skips the test without a GPU: put first in tests that use gpu().
#define MJ_REQUIRE_GPU()                                                                           \
  if (!Gpu)                                                                                        \
  GTEST_SKIP() << "no GPU: " << WhyNot

namespace minijit {

class GpuTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (!Gpu && Device::available(&WhyNot))
      Gpu = Device::open();
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

  static inline std::optional<Device> Gpu;
  static inline std::string WhyNot;
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
