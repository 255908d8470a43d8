// Program assembly (runtime/Program.h): buffers, temporary slots, bytes per launch; waves.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "ir/Builder.h"
#include "runtime/Profiler.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

using namespace minijit;

namespace {

CompiledGraph lower(const Graph &g, bool fusion) {
  ::unsetenv("MINIJIT_SCHEDULE");
  CompileOptions opt;
  opt.fusion = fusion;
  opt.compileKernels = false;
  return compileGraph(g, opt);
}

/// x [1000, 256] through 20 elementwise ops: tanh, then + b, alternately.
Graph chain() {
  Graph g("chain");
  Tensor x = g.input("x", DType::F32, {1000, 256});
  Tensor b = g.input("b", DType::F32, {256});
  Tensor t = x;
  for (int i = 0; i < 20; ++i)
    t = i % 2 == 0 ? tanh(t) : t + b;
  g.output(t, "y");
  return g;
}

const int64_t kChainBytes = 1000 * 256 * 4;

} // namespace

TEST(Program, BuffersAreInputsThenStoredValues) {
  CompiledGraph c = lower(chain(), false);
  const Program &p = c.program;
  EXPECT_EQ(p.graphName, "chain");
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.buffers[p.inputs[0]].name, "x");
  EXPECT_EQ(p.buffers[p.inputs[0]].role, ProgramBuffer::Role::Input);
  EXPECT_EQ(p.buffers[p.inputs[1]].bytes(), 1024);
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.buffers[p.outputs[0]].name, "y");
  EXPECT_EQ(p.buffers[p.outputs[0]].role, ProgramBuffer::Role::Output);
  EXPECT_EQ(p.buffers.size(), 2u + 20u); // every op stores its result
  int temps = 0;
  for (const ProgramBuffer &b : p.buffers)
    temps += b.role == ProgramBuffer::Role::Temp;
  EXPECT_EQ(temps, 19);
}

TEST(Program, UnfusedChainUsesAtMostThreeSlots) {
  CompiledGraph c = lower(chain(), false);
  const Program &p = c.program;
  ASSERT_EQ(p.kernels.size(), 20u);
  EXPECT_LE(p.slotBytes.size(), 3u);
  EXPECT_GE(p.slotBytes.size(), 2u); // a kernel reads one temporary while writing another
  for (const ProgramBuffer &b : p.buffers) {
    if (b.role != ProgramBuffer::Role::Temp) {
      EXPECT_EQ(b.slot, -1) << b.name;
      continue;
    }
    ASSERT_GE(b.slot, 0) << b.name;
    ASSERT_LT(b.slot, static_cast<int>(p.slotBytes.size())) << b.name;
    EXPECT_GE(p.slotBytes[b.slot], b.bytes()) << b.name;
  }
}

TEST(Program, TemporariesSharingASlotAreNeverAliveTogether) {
  CompiledGraph c = lower(chain(), false);
  const Program &p = c.program;
  std::vector<int> first(p.buffers.size(), -1), last(p.buffers.size(), -1);
  for (size_t k = 0; k < p.kernels.size(); ++k)
    for (int b : p.kernels[k].args) {
      if (first[b] < 0)
        first[b] = static_cast<int>(k);
      last[b] = static_cast<int>(k);
    }
  for (size_t a = 0; a < p.buffers.size(); ++a)
    for (size_t b = a + 1; b < p.buffers.size(); ++b) {
      if (p.buffers[a].role != ProgramBuffer::Role::Temp ||
          p.buffers[b].slot != p.buffers[a].slot || p.buffers[b].role != ProgramBuffer::Role::Temp)
        continue;
      bool overlap = first[a] <= last[b] && first[b] <= last[a];
      EXPECT_FALSE(overlap) << p.buffers[a].name << " [" << first[a] << ", " << last[a] << "] and "
                            << p.buffers[b].name << " [" << first[b] << ", " << last[b]
                            << "] share slot " << p.buffers[a].slot;
    }
}

TEST(Program, BytesPerKernelAreTheBufferSizes) {
  CompiledGraph c = lower(chain(), false);
  const Program &p = c.program;
  int64_t total = 0;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const ProgramKernel &pk = p.kernels[k];
    // tanh reads one [1000, 256] tensor; + b also reads b (1 KB).
    EXPECT_EQ(pk.bytesRead, kChainBytes + (k % 2 == 1 ? 1024 : 0)) << "k" << k;
    EXPECT_EQ(pk.bytesWritten, kChainBytes) << "k" << k;
    total += pk.bytesRead + pk.bytesWritten;
    int64_t fromArgs = 0;
    for (int b : pk.args)
      fromArgs += p.buffers[b].bytes();
    EXPECT_EQ(fromArgs, pk.bytesRead + pk.bytesWritten) << "k" << k;
  }
  EXPECT_EQ(p.bytesMoved(), total);
}

TEST(Program, ATableReadThroughGatheredIndicesCountsTheElementsSelected) {
  // an embedding lookup reads the 100 rows its ids select, not the table;
  // fused into a layer norm or alone
  Graph g("embed");
  Tensor table = g.input("table", DType::F32, {32000, 64});
  Tensor ids = g.input("ids", DType::I32, {100});
  g.output(layerNorm(take(table, ids, 0)), "y");
  for (bool fusion : {true, false}) {
    CompiledGraph c = lower(g, fusion);
    const ProgramKernel &k = c.program.kernels[0];
    EXPECT_EQ(k.bytesRead, 100 * 64 * 4 + 100 * 4) << fusion;
    EXPECT_EQ(k.bytesWritten, 100 * 64 * 4) << fusion;
    EXPECT_NE(c.fusedText().find("a table read through gathered indices"), std::string::npos);
  }
  // a tensor also read whole (cross-entropy's logits, gathered at the label
  // too) counts whole; a table smaller than what its indices select counts once
  Graph ce("ce");
  Tensor logits = ce.input("logits", DType::F32, {64, 1000});
  Tensor labels = ce.input("labels", DType::I32, {64, 1});
  ce.output(sum(logits, {1}, true) - takeAlongAxis(logits, labels, 1), "loss");
  EXPECT_EQ(lower(ce, true).program.kernels[0].bytesRead, 64 * 1000 * 4 + 64 * 4);
  Graph small("small");
  Tensor t = small.input("t", DType::F32, {10, 64});
  small.output(take(t, small.input("i", DType::I32, {1000}), 0), "y");
  EXPECT_EQ(lower(small, true).program.kernels[0].bytesRead, 10 * 64 * 4 + 1000 * 4);
  EXPECT_EQ(lower(chain(), true).fusedText().find("gathered"), std::string::npos);
}

TEST(Program, FusedChainIsOneKernelWithoutTemporaries) {
  CompiledGraph c = lower(chain(), true);
  const Program &p = c.program;
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_TRUE(p.slotBytes.empty());
  EXPECT_EQ(p.buffers.size(), 3u);
  EXPECT_EQ(p.kernels[0].bytesRead, kChainBytes + 1024);
  EXPECT_EQ(p.kernels[0].bytesWritten, kChainBytes);
  EXPECT_EQ(p.kernels[0].flops, 20 * 1000 * 256);
  EXPECT_LT(p.bytesMoved(), lower(chain(), false).program.bytesMoved() / 10);
}

TEST(Program, LaunchGeometryComesFromTheSchedules) {
  CompiledGraph c = lower(chain(), false);
  for (size_t k = 0; k < c.program.kernels.size(); ++k) {
    EXPECT_EQ(c.program.kernels[k].block, c.detail->kernels[k].schedule.geometry().block);
    EXPECT_EQ(c.program.kernels[k].grid, c.detail->kernels[k].schedule.geometry().grid);
    EXPECT_EQ(c.program.kernels[k].name, c.detail->kernels[k].name);
    EXPECT_TRUE(c.program.kernels[k].cubin.empty()); // compileKernels = false
  }
}

TEST(Program, AnOutputReadByALaterKernelIsNotATemporary) {
  Graph g("two");
  Tensor x = g.input("x", DType::F32, {1024});
  Tensor a = exp(x);
  g.output(a, "a");
  g.output(a * 2, "b");
  CompiledGraph c = lower(g, false);
  const Program &p = c.program;
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_TRUE(p.slotBytes.empty());
  EXPECT_EQ(p.buffers[p.outputs[0]].role, ProgramBuffer::Role::Output);
  EXPECT_EQ(p.kernels[1].bytesRead, 4096);
}

// ---- waves

TEST(Waves, TwoFullWaves) {
  WaveMath w = computeWaves(264, 132, 1);
  EXPECT_EQ(w.capacity, 132);
  EXPECT_DOUBLE_EQ(w.waves, 2.0);
  EXPECT_DOUBLE_EQ(w.lastWaveFill, 1.0);
}

TEST(Waves, PartialLastWave) {
  WaveMath w = computeWaves(200, 132, 1);
  EXPECT_EQ(w.capacity, 132);
  EXPECT_NEAR(w.waves, 1.515, 0.0005);
  EXPECT_DOUBLE_EQ(w.waves, 200.0 / 132.0);
  EXPECT_DOUBLE_EQ(w.lastWaveFill, 68.0 / 132.0);
}

TEST(Waves, SeveralBlocksPerSM) {
  WaveMath w = computeWaves(1000, 132, 4);
  EXPECT_EQ(w.capacity, 528);
  EXPECT_DOUBLE_EQ(w.waves, 1000.0 / 528.0);
  EXPECT_DOUBLE_EQ(w.lastWaveFill, 472.0 / 528.0);
}

TEST(Waves, FewerBlocksThanSMs) {
  WaveMath w = computeWaves(33, 132, 1);
  EXPECT_DOUBLE_EQ(w.waves, 0.25);
  EXPECT_DOUBLE_EQ(w.lastWaveFill, 0.25);
}

TEST(Waves, NoBlocksAndDegenerateDevices) {
  WaveMath w = computeWaves(0, 132, 1);
  EXPECT_EQ(w.waves, 0);
  EXPECT_EQ(w.lastWaveFill, 0);
  WaveMath z = computeWaves(10, 0, 0); // never divides by zero
  EXPECT_EQ(z.capacity, 1);
  EXPECT_DOUBLE_EQ(z.waves, 10.0);
}
