//===- tests/gpu/MatmulTest.cpp - matmul and its epilogues on the GPU ------===//
#include "compiler/CompileDetail.h"
#include "tests/gpu/GpuTest.h"
#include "tests/gpu/MatmulCases.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace minijit {
namespace {

class Matmul : public GpuTest {
protected:
  /// Expects the CUDA cores' deeper pipeline (deeperPipelinePays) in `g`'s
  /// schedule, compiled for this device where there is one (the rule counts
  /// its SMs).
  void expectDeeperPipeline(const Graph &g) const {
    CompileOptions opt = exactF32();
    if (Gpu)
      opt.device = gpu().properties();
    std::string fused = compileGraph(g, opt).fusedText();
    EXPECT_NE(fused.find("4 stages through cp.async, fragments too (frag=2)"), std::string::npos)
        << fused;
  }
};

struct MatmulShape {
  int64_t m, n, k;
};

const MatmulShape kShapes[] = {{1, 1, 1},   {127, 255, 63}, {64, 64, 64},   {130, 66, 40},
                               {1, 300, 17}, {257, 8, 1024}, {1000, 1000, 1000}};

/// (x @ w + bias) through the lecture's GeLU, plus a residual, cast to f32;
/// with `keepH` the product plus bias is an output too.
Graph epilogueGraph(const char *name, DType t, int64_t m, int64_t k, int64_t n, bool keepH) {
  Graph g(name);
  Tensor x = g.input("x", t, {m, k});
  Tensor w = g.input("w", t, {k, n});
  Tensor bias = g.input("bias", t, {n});
  Tensor res = g.input("res", t, {m, n});
  Tensor h = matmul(x, w) + bias;
  Tensor gelu = 0.5 * h * (1.0 + tanh(0.7978845608 * (h + 0.044715 * h * h * h)));
  g.output((gelu + res).cast(DType::F32), "y");
  if (keepH)
    g.output(h, "h");
  return g;
}

TEST_F(Matmul, EveryDTypeAndOddShape) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (const MatmulShape &s : kShapes) {
      Graph g(std::string("mm_") + std::string(dtypeName(t)));
      Tensor a = g.input("a", t, {s.m, s.k});
      Tensor b = g.input("b", t, {s.k, s.n});
      g.output(matmul(a, b), "c");
      expectMatches(g, static_cast<uint64_t>(s.m * 7 + s.n), /*fusedOnly=*/true);
    }
}

TEST_F(Matmul, EveryTileConfiguration) {
  // Each template's tiles, pipelines and warp layouts (set through
  // MINIJIT_SCHEDULE), on shapes that leave partial tiles and on a k that is
  // not a whole number of 16-byte chunks (element loads instead of vectors).
  struct Config {
    DType t;
    const char *overrides;
  };
  const Config configs[] = {{DType::F32, "tile=128"},
                            {DType::F32, "tile=64"},
                            {DType::F32, "tile=32"},
                            {DType::F32, "tile=16"},
                            {DType::F32, "tile=128,frag=2"},
                            {DType::F32, "tile=64,frag=2"},
                            {DType::F32, "tile=16,frag=2"},
                            {DType::F32, "tile=128,tn=16"},
                            {DType::F32, "tile=128,tn=16,frag=2"},
                            {DType::F32, "tile=128,cpasync=3"},
                            {DType::F32, "tile=128,tn=16,cpasync=4"},
                            {DType::F32, "tile=64,cpasync=3"},
                            {DType::F32, "tile=16,cpasync=4"},
                            {DType::F32, "tile=256"},
                            {DType::F32, "tile=256,cpasync=3,krows=1"},
                            {DType::F32, "tile=256,krows=1"},
                            {DType::F32, "tile=128,tn=16,krows=1"},
                            {DType::F32, "tile=128,cpasync=3,frag=2"},
                            {DType::F32, "tile=16,cpasync=4,frag=2"},
                            {DType::F16, "wgmma=0,tile=128"},
                            {DType::F16, "wgmma=0,tile=64"},
                            {DType::F16, "wgmma=0,tile=128,bn=256,wn=4,stages=3"},
                            {DType::BF16, "wgmma=0,tile=128,bk=64,stages=3"},
                            {DType::F16, "wgmma=0,tile=128,wm=2,wn=4,stages=2"},
                            {DType::BF16, "wgmma=0,tile=64,bk=16,stages=6"}};
  const MatmulShape shapes[] = {{127, 255, 63}, {130, 66, 40}, {257, 136, 1000}, {64, 64, 64}};
  for (const Config &c : configs)
    for (const MatmulShape &s : shapes) {
      ScheduleEnv env(c.overrides);
      Graph g(std::string("mm_") + std::string(dtypeName(c.t)));
      Tensor a = g.input("a", c.t, {2, s.m, s.k});
      Tensor b = g.input("b", c.t, {s.k, s.n});
      g.output(matmul(a, b) * 0.5, "c");
      SCOPED_TRACE(std::string(c.overrides) + " " + std::to_string(s.m) + "x" +
                   std::to_string(s.n) + "x" + std::to_string(s.k));
      expectMatches(g, static_cast<uint64_t>(s.m + s.k), /*fusedOnly=*/true);
    }
}

/// gelu(x @ W.T + bias), W as nn.Linear stores it, [out, in], in f32.
Graph linearGeluF32(const char *name, int64_t rows, int64_t out, int64_t in) {
  Graph g(name);
  Tensor x = g.input("x", DType::F32, {rows, in});
  Tensor w = g.input("w", DType::F32, {out, in});
  Tensor bias = g.input("bias", DType::F32, {out});
  Tensor h = matmul(x, w.permute({1, 0})) + bias;
  g.output(0.5 * h * (1.0 + erf(h * 0.7071067811865476)), "y");
  return g;
}

/// The CUDA cores' pipelined loop (frag=2, through registers or cp.async),
/// 128 threads of 8x16 outputs (tn=16), the cp.async stages (cpasync=3, 4),
/// the 256x128 tile and the
/// tiles kept k-contiguous (krows, either operand or both) on every layout
/// pair, with tiles that overhang every edge and a k that ends mid-slice.
TEST_F(Matmul, PipelinedF32LoopOnEveryLayout) {
  for (const char *overrides :
       {"tile=128,frag=2", "tile=64,frag=2", "tile=128,tn=16", "tile=128,tn=16,frag=2",
        "tile=128,cpasync=3", "tile=128,tn=16,cpasync=4", "tile=64,cpasync=4", "tile=256",
        "tile=256,krows=1", "tile=256,cpasync=3", "tile=256,cpasync=3,krows=1",
        "tile=128,tn=16,krows=1", "tile=128,tn=16,cpasync=3,krows=1",
        "tile=128,cpasync=3,frag=2", "tile=128,cpasync=4,frag=2", "tile=64,cpasync=4,frag=2",
        "tile=256,cpasync=3,frag=2"})
    for (bool aT : {false, true})
      for (bool bT : {false, true})
        // (m = 133: A stored transposed is read element by element; 136: by
        // 16-byte units along m)
        for (int64_t m : {133, 136}) {
          ScheduleEnv env(overrides);
          SCOPED_TRACE(std::string(overrides) + (aT ? " A^T" : " A") + (bT ? " B^T" : " B") +
                       " m=" + std::to_string(m));
          Graph g("mm_pipe");
          auto [a, b] = layoutPair(g, aT, bT, m, 260, 84);
          Tensor bias = g.input("bias", DType::F32, {260});
          g.output(matmul(a, b) + bias, "c");
          expectMatches(g, static_cast<uint64_t>(11 + 2 * aT + bT + m));
        }
}

/// The rule's cp.async pipeline with pipelined fragments (rows that are not
/// whole 128-byte lines, one matrix's tiles filling the SMs twice: the unit
/// test Schedule.F32DeeperPipelineWhereRowsAreNotWholeLines) on every layout
/// pair, with k of fewer slices than stages (12), whole slices or not, and
/// m and n overhanging the tiles; and A stored [k, m] with B [k, n] in whole
/// lines. 21 x 21 tiles or more: the rule takes them on devices of up to
/// 220 SMs, and the test checks that it did.
TEST_F(Matmul, DeeperF32PipelineByRule) {
  for (bool aT : {false, true})
    for (bool bT : {false, true})
      for (int64_t k : {12, 20, 84}) {
        SCOPED_TRACE(std::string(aT ? "A^T" : "A") + (bT ? " B^T" : " B") +
                     " k=" + std::to_string(k));
        Graph g("mm_deep");
        auto [a, b] = layoutPair(g, aT, bT, 2600, 2601, k);
        g.output(matmul(a, b) * 0.5, "c");
        expectDeeperPipeline(g);
        expectMatchesWith(g, exactF32(), static_cast<uint64_t>(31 + 2 * aT + bT + k));
      }
  // Both operands copied as stored (A [k, m], B [k, n]) take it with whole
  // lines too: rows of 2720 and 2656 floats, 22 x 21 tiles, edge tiles in
  // m and n
  for (int64_t k : {32, 96}) {
    SCOPED_TRACE("A^T B, whole lines, k=" + std::to_string(k));
    Graph g("mm_deep_lines");
    auto [a, b] = layoutPair(g, true, false, 2720, 2656, k);
    g.output(relu(matmul(a, b)), "c");
    expectDeeperPipeline(g);
    expectMatchesWith(g, exactF32(), static_cast<uint64_t>(71 + k));
  }
}

/// The rule's pipeline on a batch of products whose operands are copied as
/// stored (A [2, k, m], B [2, k, n]): each matrix's 22 x 21 tiles fill the
/// wave, k = 36 ends mid-slice, and the batches' offsets go into every copy.
TEST_F(Matmul, DeeperF32PipelineBatched) {
  Graph g("mm_deep_batched");
  auto [a, b] = layoutPair(g, true, false, 2720, 2656, 36, /*batch=*/2);
  g.output(matmul(a, b) * 0.5, "c");
  expectDeeperPipeline(g);
  expectMatchesWith(g, exactF32(), 97);
}

/// How tf32Deviation reads the operands: as TF32 reads them (the low 13
/// bits of the fraction cut off), rounded to the nearest TF32 value (ties
/// away from zero), or exactly.
enum class OperandsAs { Cut, Rounded, Exact };

/// An f32 value as TF32 reads it: the low 13 bits of its fraction cut off
/// (`round`: to the nearest TF32 value instead, ties away from zero).
double tf32Value(double v, bool round) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (round)
    bits += 0x1000;
  bits &= 0xFFFFE000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// How far a product a @ b from the GPU (inputs [a, b] as stored: A [k, m]
/// when aT, B [n, k] when bT) is from the exact product of the operands cut
/// to TF32 (or rounded to it): the largest |gpu - exact| over a bound of the
/// f32 accumulation alone, 2^-24 (log2 k + 2 sqrt k + 2) sum |a' b'|.
double tf32Deviation(const CheckedRun &r, bool aT, bool bT, int64_t batch, int64_t m, int64_t n,
                     int64_t k, OperandsAs as) {
  auto value = [&](double v) {
    return as == OperandsAs::Exact ? v : tf32Value(v, as == OperandsAs::Rounded);
  };
  const HostTensor &a = r.inputs[0], &b = r.inputs[1], &c = r.outputs[0];
  double worst = 0, growth = std::log2(double(k)) + 2 * std::sqrt(double(k)) + 2;
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, sumAbs = 0;
        for (int64_t p = 0; p < k; ++p) {
          double av = value(a.get(q * m * k + (aT ? p * m + i : i * k + p)));
          double bv = value(b.get(q * k * n + (bT ? j * k + p : p * n + j)));
          sum += av * bv;
          sumAbs += std::fabs(av * bv);
        }
        double bound = 0x1p-24 * growth * sumAbs + 1e-30;
        worst = std::max(worst, std::fabs(c.get((q * m + i) * n + j) - sum) / bound);
      }
  return worst;
}

/// TF32 (CompileOptions::allowTf32) on Hopper: every layout pair (copies
/// where an operand is not k-major, zeros where k is not a multiple of 4),
/// batches, tile widths, ping-pong and an epilogue. Each result is checked
/// against the CPU reference (whose bound allows for TF32) and, tighter,
/// against the exact product of the operands cut to TF32: within the f32
/// accumulation's rounding, which a misplaced element or slice would exceed.
TEST_F(Matmul, Tf32OnTensorCores) {
  struct Case {
    int64_t batch, m, n, k;
    bool aT, bT;
    const char *overrides;
  };
  const Case cases[] = {
      {1, 300, 520, 136, false, true, ""},  // nn.Linear's layout: no copy
      {1, 300, 520, 136, false, false, ""}, // B transposed first
      {1, 300, 520, 136, true, true, ""},   // A transposed first
      {1, 300, 520, 136, true, false, "bn=64,stages=2"},
      {1, 200, 264, 1001, false, true, ""}, // k padded to 1004 on both
      {1, 200, 264, 1001, true, false, "pingpong=1"},
      {5, 200, 264, 300, false, false, ""}, // batched, B transposed per batch
      {1, 16, 16, 8, false, true,
       "terms=0"}, // one k-slice, mostly outside the tile (kept a product)
      {1, 640, 768, 1000, false, true, "bn=256,stages=3"},
      {3, 300, 520, 136, false, true, "cluster=2"}, // B's half rows multicast
  };
  CompileOptions opt;
  opt.allowTf32 = true;
  for (const Case &c : cases) {
    ScheduleEnv env(c.overrides);
    SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.n) +
                 "x" + std::to_string(c.k) + (c.aT ? " A^T" : " A") + (c.bT ? " B^T " : " B ") +
                 c.overrides);
    Graph g("tf32");
    auto [a, b] = layoutPair(g, c.aT, c.bT, c.m, c.n, c.k, c.batch);
    g.output(matmul(a, b), "c");
    CompileOptions look = opt;
    look.compileKernels = false;
    std::string fused = compileGraph(g, look).fusedText();
    EXPECT_NE(fused.find("TF32"), std::string::npos) << fused;
    if (!Gpu) {
      expectMatchesWith(g, opt); // compiles through NVRTC, marks the test skipped
      continue;
    }
    CheckedRun r = runAndCheck(g, gpu(), opt, static_cast<uint64_t>(c.m + c.k));
    EXPECT_TRUE(r.compare[0].ok) << r.compare[0].summary << "\n" << fused;
    double cut = tf32Deviation(r, c.aT, c.bT, c.batch, c.m, c.n, c.k, OperandsAs::Cut);
    double rounded = tf32Deviation(r, c.aT, c.bT, c.batch, c.m, c.n, c.k, OperandsAs::Rounded);
    std::printf("[ TF32     ] deviation from the product of the operands cut to TF32: %.3f of "
                "the f32 accumulation's bound (rounded to TF32: %.3f)\n",
                cut, rounded);
    EXPECT_LE(std::min(cut, rounded), 1.0) << fused;
  }
  // The epilogue in the accumulators' registers, one kernel; f32 without
  // the flag stays on the CUDA cores.
  Graph g = linearGeluF32("tf32_linear_gelu", 333, 200, 264);
  CompileOptions look = opt;
  look.compileKernels = false;
  CompiledGraph cg = compileGraph(g, look);
  EXPECT_EQ(cg.numKernels(), 1u) << cg.fusedText();
  EXPECT_NE(cg.fusedText().find("TF32"), std::string::npos) << cg.fusedText();
  look.allowTf32 = false;
  EXPECT_EQ(compileGraph(g, look).fusedText().find("TF32"), std::string::npos);
  expectMatchesWith(g, opt, 5);
}

/// x @ W.T of m rows, n columns and a k of 136, for specialInputs.
Graph linearWithSpecials(const char *name, int64_t m, int64_t n) {
  Graph g(name);
  auto [a, b] = layoutPair(g, false, true, m, n, 136);
  g.output(matmul(a, b), "c");
  return g;
}

/// Random inputs of linearWithSpecials's graph (at least 8 rows each), with
/// infinities and a NaN in x and infinities in W.
std::vector<HostTensor> specialInputs(const Graph &g) {
  std::vector<HostTensor> in = randomInputs(g, 9);
  const double inf = std::numeric_limits<double>::infinity();
  in[0].set(0 * 136 + 5, inf);
  in[0].set(1 * 136 + 9, -inf);
  in[0].set(2 * 136 + 3, std::nan(""));
  in[1].set(4 * 136 + 11, inf);
  in[1].set(7 * 136 + 100, -inf);
  return in;
}

/// Three TF32 products (CompileOptions::tf32x3) on every layout pair, with k
/// not a multiple of 4 (each part padded), batches and an epilogue. Each
/// result is checked against the CPU reference (whose bound allows for the
/// split) and, tighter, against the exact product: within the f32
/// accumulation's own bound, as the CUDA cores' result of the same graph
/// (printed beside it). Products too small to pay stay on the CUDA cores.
TEST_F(Matmul, Tf32x3NearF32OnEveryLayout) {
  struct Case {
    int64_t batch, m, n, k;
    bool aT, bT;
  };
  const Case cases[] = {
      {1, 1600, 1700, 77, false, true},  // nn.Linear's layout, k padded to 80
      {1, 1600, 1700, 136, false, false}, // B transposed by the split's copy
      {1, 1600, 1700, 136, true, true},   // A transposed
      {1, 1600, 1700, 301, true, false},  // both, k padded
      {3, 1560, 1570, 200, false, false}, // batched
      {1, 2100, 2100, 1000, false, true}, // 289 tiles: not few enough for split-K
  };
  CompileOptions opt;
  opt.tf32x3 = true;
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.n) +
                 "x" + std::to_string(c.k) + (c.aT ? " A^T" : " A") + (c.bT ? " B^T" : " B"));
    Graph g("tf32x3");
    auto [a, b] = layoutPair(g, c.aT, c.bT, c.m, c.n, c.k, c.batch);
    g.output(matmul(a, b), "c");
    CompileOptions look = opt;
    look.compileKernels = false;
    CompiledGraph cg = compileGraph(g, look);
    std::string fused = cg.fusedText();
    EXPECT_NE(fused.find("three TF32 products"), std::string::npos) << fused;
    EXPECT_NE(fused.find("matmul on tensor cores (wgmma"), std::string::npos) << fused;
    EXPECT_TRUE(cg.tf32x3Matmuls) << fused; // the product's kernel was found and split
    if (!Gpu) {
      expectMatchesWith(g, opt); // compiles through NVRTC, marks the test skipped
      continue;
    }
    uint64_t seed = static_cast<uint64_t>(c.m + c.k);
    CheckedRun r = runAndCheck(g, gpu(), opt, seed);
    EXPECT_TRUE(r.compiled.tf32x3Matmuls);
    EXPECT_FALSE(r.compiled.tf32Matmuls); // (the checks' bound is 3xTF32's, not TF32's)
    EXPECT_TRUE(r.compare[0].ok) << r.compare[0].summary << "\n" << fused;
    double split = tf32Deviation(r, c.aT, c.bT, c.batch, c.m, c.n, c.k, OperandsAs::Exact);
    CheckedRun f32 = runAndCheck(g, gpu(), exactF32(), seed);
    EXPECT_TRUE(f32.compare[0].ok) << f32.compare[0].summary;
    double cores = tf32Deviation(f32, c.aT, c.bT, c.batch, c.m, c.n, c.k, OperandsAs::Exact);
    std::printf("[ 3xTF32   ] deviation from the exact product: %.3f of the f32 accumulation's "
                "bound (CUDA cores: %.3f)\n",
                split, cores);
    EXPECT_LE(split, 1.0) << fused;
  }
  // The epilogue in the accumulators' registers; a product of 128 rows (the
  // copies would cost more than the split saves) stays on the CUDA cores.
  Graph g = linearGeluF32("tf32x3_linear_gelu", 1600, 1700, 520);
  CompileOptions look = opt;
  look.compileKernels = false;
  CompiledGraph cg = compileGraph(g, look);
  EXPECT_EQ(cg.numKernels(), 3u) << cg.fusedText(); // two copies of parts, the product
  EXPECT_TRUE(cg.tf32x3Matmuls) << cg.fusedText();
  expectMatchesWith(g, opt, 5);
  // Infinities and NaN where the product as written has them (an infinite
  // x's lo and cross hi are 0), on the GPU.
  if (Gpu) {
    Graph s = linearWithSpecials("tf32x3_specials", 1600, 1700);
    std::vector<HostTensor> in = specialInputs(s);
    CheckedRun r = runAndCheck(s, gpu(), opt, 9, &in);
    EXPECT_TRUE(r.compiled.tf32x3Matmuls);
    EXPECT_TRUE(r.compare[0].ok) << r.compare[0].summary;
  }
  // A product of 128 rows is not split by copies: the kernel splits it
  // (ExactF32SplitInTheKernel).
  Graph narrow("tf32x3_narrow");
  Tensor xn = narrow.input("x", DType::F32, {128, 4096});
  Tensor wn = narrow.input("w", DType::F32, {4096, 4096});
  narrow.output(matmul(xn, wn.permute({1, 0})), "y");
  std::string narrowText = compileGraph(narrow, look).fusedText();
  EXPECT_EQ(narrowText.find("Tf32x3"), std::string::npos) << narrowText;
  EXPECT_EQ(narrowText.find("matmul on tensor cores (wgmma"), std::string::npos) << narrowText;
}

/// promote=1: each k-slice's TF32 product added to the tile's sum by the
/// CUDA cores (rounded to nearest) once done, even and odd slices in
/// accumulators of their own; an even and an odd number of slices, one slice,
/// batches, both flags. Checked as the two tests above, and the deviation
/// from the exact product printed beside the same product without it and on
/// the CUDA cores.
TEST_F(Matmul, Tf32SlicesAddedOnTheCudaCores) {
  struct Case {
    int64_t batch, m, n, k;
    bool aT, bT, x3;
  };
  const Case cases[] = {
      {1, 1600, 1700, 136, false, true, true},  // 3 x 136 = 408 of k: 13 slices
      {1, 2100, 2100, 1000, false, true, true}, // 94 slices
      {3, 1560, 1570, 200, false, false, true}, // batched, B transposed by the split's copy
      {1, 300, 520, 8, false, true, false},     // TF32, one slice
      {1, 200, 264, 1001, false, true, false},  // TF32, k padded to 1004: 32 slices
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.n) +
                 "x" + std::to_string(c.k) + (c.x3 ? " 3xTF32" : " TF32"));
    CompileOptions opt;
    (c.x3 ? opt.tf32x3 : opt.allowTf32) = true;
    Graph g("tf32_promoted");
    auto [a, b] = layoutPair(g, c.aT, c.bT, c.m, c.n, c.k, c.batch);
    g.output(matmul(a, b), "c");
    std::string fused;
    {
      ScheduleEnv env("promote=1,terms=0"); // (k = 8 kept a product)
      CompileOptions look = opt;
      look.compileKernels = false;
      fused = compileGraph(g, look).fusedText();
      EXPECT_NE(fused.find("each k-slice's product added to the sum by the CUDA cores"),
                std::string::npos)
          << fused;
      if (!Gpu) {
        expectMatchesWith(g, opt); // compiles through NVRTC, marks the test skipped
        continue;
      }
    }
    uint64_t seed = static_cast<uint64_t>(c.m + c.k);
    auto deviation = [&](const char *overrides, const CompileOptions &o) {
      ScheduleEnv env(overrides);
      CheckedRun r = runAndCheck(g, gpu(), o, seed);
      EXPECT_TRUE(r.compare[0].ok) << overrides << ": " << r.compare[0].summary;
      if (c.x3)
        return tf32Deviation(r, c.aT, c.bT, c.batch, c.m, c.n, c.k, OperandsAs::Exact);
      // (an operand read in place is cut to TF32 by the tensor cores, a
      // copied one rounded by its copy: as Tf32OnTensorCores, the nearer)
      return std::min(tf32Deviation(r, c.aT, c.bT, c.batch, c.m, c.n, c.k, OperandsAs::Cut),
                      tf32Deviation(r, c.aT, c.bT, c.batch, c.m, c.n, c.k, OperandsAs::Rounded));
    };
    double promoted = deviation("promote=1,terms=0", opt),
           plain = deviation("promote=0,terms=0", opt);
    CompileOptions exact;
    exact.tf32x3 = false;
    if (c.x3)
      std::printf("[ PROMOTE  ] deviation from the exact product: %.3f of the f32 accumulation's "
                  "bound (without promote: %.3f; CUDA cores: %.3f)\n",
                  promoted, plain, deviation("", exact));
    else
      std::printf("[ PROMOTE  ] deviation from the product of the operands as TF32: %.3f of the "
                  "f32 accumulation's bound (without promote: %.3f)\n",
                  promoted, plain);
    EXPECT_LE(promoted, 1.0) << fused;
  }
}

/// An exact f32 product as three TF32 products split in the kernel
/// (split3=1, MatmulWgmmaSchedule::splitInKernel): nn.Linear's layout with k
/// not a multiple of the 32 of a slice, rows of A not a multiple of 8 and n
/// not of the tile (an epilogue), A's rows over several tiles, batches of
/// both operands, a k of one partial slice, and infinities and NaN. Each
/// result is checked against the CPU reference and, tighter, against the
/// exact product within the f32 accumulation's own bound, printed beside
/// the CUDA cores' deviation on the same inputs.
TEST_F(Matmul, ExactF32SplitInTheKernel) {
  struct Case {
    int64_t batch, m, n, k;
    bool relu;
  };
  const Case cases[] = {
      {1, 128, 2048, 1000, false}, // 31 slices and a partial one
      {1, 97, 1701, 1004, true},   // a 104-row tile, n past the last tile, an epilogue
      {1, 300, 700, 520, false},   // three tiles of A's rows
      {3, 64, 520, 256, false},    // batched
      {1, 128, 256, 4, false},     // one slice, mostly zeros (split3=1 only: k < 128)
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.n) +
                 "x" + std::to_string(c.k));
    Graph g("split3");
    auto [a, b] = layoutPair(g, false, true, c.m, c.n, c.k, c.batch);
    Tensor y = matmul(a, b);
    g.output(c.relu ? relu(y) : y, "c");
    // (splitk=0: the kernel alone, not the slices of a split along k;
    // terms=0: k = 4 a product, not a sum of four terms)
    ScheduleEnv env("split3=1,splitk=0,terms=0");
    CompileOptions look;
    look.compileKernels = false;
    CompiledGraph cg = compileGraph(g, look);
    EXPECT_EQ(cg.numKernels(), 1u) << cg.fusedText();
    EXPECT_NE(cg.fusedText().find("split in the kernel"), std::string::npos) << cg.fusedText();
    EXPECT_TRUE(cg.tf32x3Matmuls);
    if (!Gpu) {
      expectMatchesWith(g, CompileOptions{}); // compiles through NVRTC, marks the test skipped
      continue;
    }
    uint64_t seed = static_cast<uint64_t>(c.m + c.n + c.k);
    CheckedRun r = runAndCheck(g, gpu(), CompileOptions{}, seed);
    EXPECT_TRUE(r.compare[0].ok) << r.compare[0].summary << "\n" << cg.fusedText();
    if (c.relu)
      continue; // (tf32Deviation reads the product itself)
    bool fewTerms = c.k < 128; // (the parts' own error then passes the sum's bound)
    double split = tf32Deviation(r, false, true, c.batch, c.m, c.n, c.k, OperandsAs::Exact);
    ScheduleEnv cores("split3=0");
    CheckedRun f32 = runAndCheck(g, gpu(), exactF32(), seed);
    double exact = tf32Deviation(f32, false, true, c.batch, c.m, c.n, c.k, OperandsAs::Exact);
    std::printf("[ SPLIT3   ] deviation from the exact product: %.3f of the f32 accumulation's "
                "bound (CUDA cores: %.3f)%s\n",
                split, exact, fewTerms ? ", k under 128: not bounded so" : "");
    if (!fewTerms) {
      EXPECT_LE(split, 1.0);
    }
  }
  // By the rule: a product of 128 rows too few tiles to fill the SMs, split
  // along k into slices the kernel takes as a batch, summed after.
  Graph rule("split3_rule");
  auto [ra, rb] = layoutPair(rule, false, true, 128, 4096, 2048);
  rule.output(matmul(ra, rb), "c");
  CompileOptions look;
  look.compileKernels = false;
  std::string ruleText = compileGraph(rule, look).fusedText();
  EXPECT_NE(ruleText.find("split in the kernel"), std::string::npos) << ruleText;
  expectMatchesWith(rule, CompileOptions{}, 3);
  if (!Gpu)
    return;
  // Infinities and NaN where the product as written has them.
  Graph s = linearWithSpecials("split3_specials", 128, 1024);
  std::vector<HostTensor> in = specialInputs(s);
  ScheduleEnv env("split3=1,splitk=0");
  CheckedRun r = runAndCheck(s, gpu(), CompileOptions{}, 9, &in);
  EXPECT_TRUE(r.compiled.tf32x3Matmuls);
  EXPECT_TRUE(r.compare[0].ok) << r.compare[0].summary;
}

TEST_F(Matmul, BatchedWithBroadcasting) {
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g("bmm");
    Tensor a = g.input("a", t, {3, 1, 33, 40});
    Tensor b = g.input("b", t, {4, 40, 24});
    g.output(matmul(a, b), "c"); // [3, 4, 33, 24]
    expectMatches(g, 4);
  }
}

TEST_F(Matmul, TransposedOperandsThroughPermute) {
  for (DType t : {DType::F32, DType::F16}) {
    Graph g("mm_t");
    Tensor at = g.input("at", t, {72, 130}); // A stored transposed
    Tensor bt = g.input("bt", t, {96, 72});  // B stored transposed
    g.output(matmul(at.permute({1, 0}), bt.permute({1, 0})), "c");
    expectMatches(g, 5);
  }
}

/// A transpose of a product it alone reads runs as the product of the
/// transposed operands the other way round (simplify/Simplify.cpp,
/// transposedProduct): NetVLAD's aggregation at a small batch, the norms
/// after it reading the result in order, in f32 and f16, and a batch
/// against a matrix.
TEST_F(Matmul, TransposedProductsStoreTheOrderTheirReadersTake) {
  for (DType t : {DType::F32, DType::F16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    Graph g("vlad");
    Tensor assign = g.input("assign", t, {6, 101, 32});
    Tensor x = g.input("x", t, {6, 101, 72});
    Tensor w = g.input("w", t, {72, 40});
    Tensor vlad = matmul(assign.permute({0, 2, 1}), x).permute({0, 2, 1}).cast(DType::F32);
    Tensor n = vlad / sqrt(sum(vlad * vlad, {1}, true) + 1e-6);
    g.output(n.reshape({6, 72 * 32}), "vlad");
    g.output(matmul(x, w).permute({0, 2, 1}) + 1.0, "xw");
    expectMatches(g, 31);
  }
}

/// Transposed operands whose contiguous axis allows 16-byte loads down the
/// tile's columns (A with m contiguous, B with k contiguous), in every float
/// dtype, with tiles that overhang every edge, batched, and as nn.Linear
/// writes it (x @ W.T + b).
TEST_F(Matmul, TransposedOperandsReadAsVectors) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    bool f32 = t == DType::F32;
    {
      Graph g("mm_t4");
      Tensor at = g.input("at", t, {72, 136}); // A: [136, 72], m contiguous
      Tensor bt = g.input("bt", t, {40, 72});  // B: [72, 40], k contiguous
      g.output(matmul(at.permute({1, 0}), bt.permute({1, 0})), "c");
      CompileOptions opt;
      opt.compileKernels = false;
      if (!f32)
        opt.scheduleOverrides.wgmma = 0; // mma.sync's loads (the run takes wgmma)
      std::string fused = compileGraph(g, opt).fusedText();
      std::string how = f32 ? "by float4" : "by 16-byte cp.async";
      EXPECT_NE(fused.find("A " + how + " along m (stored transposed)"), std::string::npos) << fused;
      EXPECT_NE(fused.find("B " + how + " along k (stored transposed)"), std::string::npos) << fused;
      expectMatches(g, 7);
    }
    {
      Graph g("linear");
      Tensor x = g.input("x", t, {264, 520});
      Tensor w = g.input("w", t, {392, 520});
      Tensor b = g.input("b", t, {392});
      // No activation after it: with K = 520 a tanh of a sum that cancels to about 0.1
      // differed from the reference by 1.06x the f32 tolerance on the H200 (fused and
      // unfused agreeing exactly); the sum itself is judged by the size of its terms.
      g.output(matmul(x, w.permute({1, 0})) + b, "y");
      expectMatches(g, 8);
    }
    {
      Graph g("batched_t");
      Tensor a = g.input("a", t, {3, 24, 48}); // [3, 48, 24] stored transposed
      Tensor bt = g.input("bt", t, {3, 32, 24});
      g.output(matmul(a.permute({0, 2, 1}), bt.permute({0, 2, 1})), "c");
      expectMatches(g, 9);
    }
  }
}

/// f32 products whose rows are not whole float4s (k = 77, m and n odd) in
/// every layout, and batched: the operands are copied into padded rows (k
/// with zeros, MatmulRewrites' float4Operands), the tiles are read by float4s,
/// and the last vector of a row of B (of A stored transposed) reads into the
/// padding for outputs no one stores.
TEST_F(Matmul, OddF32OperandsPaddedToWholeFloat4s) {
  for (int layout = 0; layout < 5; ++layout) {
    bool transA = layout & 1, transB = layout & 2, batched = layout == 4;
    SCOPED_TRACE("layout " + std::to_string(layout));
    Graph g("mm_float4_rows");
    int64_t m = batched ? 1200 : 1403, n = batched ? 1201 : 1401, k = 77;
    auto shape = [&](int64_t r, int64_t c) {
      return batched ? Shape{4, r, c} : Shape{r, c};
    };
    auto swapLast = [&](Tensor t) {
      return batched ? t.permute({0, 2, 1}) : t.permute({1, 0});
    };
    Tensor a = transA ? swapLast(g.input("at", DType::F32, shape(k, m)))
                      : g.input("a", DType::F32, shape(m, k));
    Tensor b = transB ? swapLast(g.input("bt", DType::F32, shape(n, k)))
                      : g.input("b", DType::F32, shape(k, n));
    Tensor bias = g.input("bias", DType::F32, {n});
    g.output(relu(matmul(a, b) + bias), "y");
    CompileOptions opt = exactF32();
    opt.compileKernels = false;
    std::string fused = compileGraph(g, opt).fusedText();
    EXPECT_NE(fused.find("whole float4s"), std::string::npos) << fused;
    EXPECT_NE(fused.find("A by float4"), std::string::npos) << fused;
    EXPECT_NE(fused.find("B by float4"), std::string::npos) << fused;
    expectMatchesWith(g, exactF32(), 40 + layout);
  }
}

TEST_F(Matmul, EpiloguesRunInsideTheKernel) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    Graph g = epilogueGraph("mm_epilogue", t, 200, 96, 136, false);
    CompileOptions opt;
    opt.compileKernels = false;
    EXPECT_EQ(compileGraph(g, opt).detail->plan.kernels.size(), 1u);
    expectMatches(g, 6);
  }
}

TEST_F(Matmul, OperandsComputedFirstAreStored) {
  Graph g("mm_prologue");
  Tensor x = g.input("x", DType::F32, {64, 48});
  Tensor w = g.input("w", DType::F32, {48, 32});
  g.output(matmul(tanh(x), w * 0.5), "y");
  expectMatches(g, 8);
}

TEST_F(Matmul, TheLecturesMlpLayer) {
  for (const Graph &g : parseFile(samplePath("mlp.mj")))
    expectMatches(g, 9);
}

TEST_F(Matmul, NarrowProductsRunAsReductions) {
  // One output column (a matrix-vector product) or one output row: an
  // elementwise product and a sum over k, with the epilogue in the same
  // kernel (f32); long k split over blocks, odd sizes, batches, transposed
  // operands, every dtype.
  struct Case {
    Shape a, b;
    bool transposeB;
  };
  const Case cases[] = {{{2049, 3001}, {3001, 1}, false},   {{7, 100003}, {100003, 1}, false},
                        {{1, 4099}, {4099, 3001}, false},   {{1, 77}, {77, 1}, false},
                        {{1, 262147}, {262147, 33}, false}, {{3, 129, 517}, {517, 1}, false},
                        {{2, 1, 300}, {2, 300, 257}, false}, {{1, 513}, {1000, 513}, true},
                        {{1000, 1}, {1, 1}, false}};
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (const Case &c : cases) {
      Graph g(std::string("narrow_") + std::string(dtypeName(t)));
      Tensor a = g.input("a", t, c.a);
      Tensor b = g.input("b", t, c.b);
      Tensor y = matmul(a, c.transposeB ? transpose(b) : b);
      // (a 16-bit product read by an epilogue stays a matmul: the sum's
      // cast would round it where the fused matmul does not)
      g.output(t == DType::F32 ? relu(y * 0.5 + 0.25) : y, "y");
      SCOPED_TRACE(std::string(dtypeName(t)) + c.a.str() + " @ " + c.b.str());
      CompileOptions opt;
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      ASSERT_EQ(cg.numKernels(), 1u) << cg.fusedText();
      EXPECT_EQ(cg.rewrites.size(), 1u) << cg.fusedText();
      EXPECT_EQ(cg.program.kernels[0].name.find("mm_"), std::string::npos) << cg.fusedText();
      expectMatches(g, static_cast<uint64_t>(c.a.numel() % 97));
    }
}

TEST_F(Matmul, OuterProductsRunAsPointwise) {
  // k = 1: the column times the row, one pointwise kernel, in every dtype;
  // batches broadcast against one side, operands read through transposes,
  // an f32 epilogue in the same kernel, odd sizes.
  struct Case {
    Shape a, b;
    bool transposeB;
  };
  const Case cases[] = {{{8191, 1}, {1, 4097}, false}, {{3, 300, 1}, {1, 264}, false},
                        {{300, 1}, {5, 1, 263}, false}, {{2, 77, 1}, {2, 1, 1001}, false},
                        {{1001, 1}, {999, 1}, true},    {{1, 1}, {1, 7}, false}};
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (const Case &c : cases) {
      Graph g(std::string("outer_") + std::string(dtypeName(t)));
      Tensor a = g.input("a", t, c.a);
      Tensor b = g.input("b", t, c.b);
      Tensor y = matmul(a, c.transposeB ? transpose(b) : b);
      g.output(t == DType::F32 ? tanh(y * 0.5 + 0.25) : y, "y");
      SCOPED_TRACE(std::string(dtypeName(t)) + c.a.str() + " @ " + c.b.str());
      CompileOptions opt;
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      ASSERT_EQ(cg.numKernels(), 1u) << cg.fusedText();
      ASSERT_EQ(cg.rewrites.size(), 1u) << cg.fusedText();
      EXPECT_EQ(cg.rewrites[0].kind, c.a[c.a.rank() - 2] == 1 ? MatmulRewriteKind::NarrowProduct
                                                                  : MatmulRewriteKind::OuterProduct);
      EXPECT_EQ(cg.program.kernels[0].name.find("mm_"), std::string::npos) << cg.fusedText();
      expectMatches(g, static_cast<uint64_t>(c.b.numel() % 89));
    }
}

TEST_F(Matmul, ProductsOfFewTermsRunAsPointwise) {
  // 2 <= k <= 8: the sum of k columns times rows, one pointwise kernel, in
  // every dtype; batches (Mamba2's [b, 3, 3] @ [b, 3, n]) and broadcast
  // batches, an f32 epilogue in the same kernel, odd and prime sizes; B
  // stored [n, k] (read through a transpose), k = 7 in 16 bits and k = 9
  // stay products.
  struct Case {
    Shape a, b;
    bool transposeB;
  };
  const Case cases[] = {{{4099, 2}, {2, 1031}, false},  {{256, 3, 3}, {256, 3, 1000}, false},
                        {{3, 301, 5}, {5, 263}, false}, {{300, 7}, {5, 7, 263}, false},
                        {{1001, 8}, {999, 8}, true},    {{1, 4}, {4, 1}, false},
                        {{17, 6}, {33, 6}, true}};
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (const Case &c : cases) {
      Graph g(std::string("few_") + std::string(dtypeName(t)));
      Tensor a = g.input("a", t, c.a);
      Tensor b = g.input("b", t, c.b);
      Tensor y = matmul(a, c.transposeB ? transpose(b) : b);
      g.output(t == DType::F32 ? tanh(y * 0.5 + 0.25) : y, "y");
      SCOPED_TRACE(std::string(dtypeName(t)) + c.a.str() + " @ " + c.b.str());
      CompileOptions opt;
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      // (16 bits: up to k = 6 by default)
      int64_t k = c.a[c.a.rank() - 1];
      if (c.transposeB || k > (t == DType::F32 ? kFewTermsUpTo : kFewTermsUpTo16Bit)) {
        EXPECT_TRUE(cg.rewrites.empty() || cg.rewrites[0].kind != MatmulRewriteKind::FewTerms)
            << cg.fusedText();
        expectMatches(g, static_cast<uint64_t>(c.b.numel() % 89));
        continue;
      }
      ASSERT_EQ(cg.numKernels(), 1u) << cg.fusedText();
      ASSERT_EQ(cg.rewrites.size(), 1u) << cg.fusedText();
      // (a single output row or column is a narrow product first)
      bool narrow = c.a[c.a.rank() - 2] == 1 || c.b[c.b.rank() - 1] == 1;
      EXPECT_EQ(cg.rewrites[0].kind,
                narrow ? MatmulRewriteKind::NarrowProduct : MatmulRewriteKind::FewTerms);
      EXPECT_EQ(cg.program.kernels[0].name.find("mm_"), std::string::npos) << cg.fusedText();
      expectMatches(g, static_cast<uint64_t>(c.b.numel() % 89));
    }
  Graph nine("nine_terms");
  Tensor a = nine.input("a", DType::F32, {300, 9});
  Tensor b = nine.input("b", DType::F32, {9, 263});
  nine.output(matmul(a, b), "y");
  CompileOptions opt;
  opt.compileKernels = false;
  CompiledGraph cg = compileGraph(nine, opt);
  EXPECT_TRUE(cg.rewrites.empty()) << cg.fusedText();
  expectMatches(nine, 9);
}

TEST_F(Matmul, SumsOfProductsSumTheOperandFirst) {
  // sum(A @ B, -1) = A @ sum(B, -1) and sum(A @ B, -2) = sum(A, -2) @ B
  // (mean likewise, keepdim both ways), nn.Linear's layout, a batch, f16.
  for (DType t : {DType::F32, DType::F16})
    for (int axis : {-1, -2})
      for (bool keepdim : {false, true})
        for (OpKind op : {OpKind::Sum, OpKind::Mean}) {
          Graph g("sum_of_product");
          Tensor x = g.input("x", t, {3, 257, 129});
          Tensor w = g.input("w", t, {1001, 129}); // [out, in]
          Tensor y = reduce(op, matmul(x, transpose(w)), {axis}, keepdim);
          g.output(t == DType::F32 ? y : y.cast(DType::F32), "y");
          SCOPED_TRACE(std::string(opName(op)) + " axis " + std::to_string(axis) +
                       (keepdim ? " keepdim " : " ") + std::string(dtypeName(t)));
          CompileOptions opt;
          opt.compileKernels = false;
          CompiledGraph cg = compileGraph(g, opt);
          ASSERT_FALSE(cg.rewrites.empty()) << cg.fusedText();
          EXPECT_EQ(cg.rewrites[0].kind, MatmulRewriteKind::SumOfProduct);
          for (const KernelSummary &k : cg.kernelSummaries())
            EXPECT_EQ(k.name.find("mm_"), std::string::npos) << cg.fusedText();
          expectMatches(g, static_cast<uint64_t>(axis + 5), /*fusedOnly=*/true);
        }
}

TEST_F(Matmul, SumsThroughLinearOpsMoveOntoTheProduct) {
  // KernelBench level 2 #14's sum(x @ W.T / 2) * s, and a mean through a
  // bias, a negation and a term that varies along the summed axes, over the
  // columns, the rows, both, and a batched product's columns; odd sizes.
  struct Case {
    const char *name;
    DimVector axes;
    bool batched;
  };
  for (const Case &c : {Case{"columns", {1}, false}, Case{"rows", {0}, false},
                        Case{"all", {0, 1}, false}, Case{"batched", {2}, true}}) {
    SCOPED_TRACE(c.name);
    Graph g("sum_through_linear");
    Shape xs = c.batched ? Shape{3, 129, 67} : Shape{129, 67};
    Tensor x = g.input("x", DType::F32, xs);
    Tensor w = g.input("w", DType::F32, {1003, 67});
    Tensor v = g.input("v", DType::F32, {1003, 67}); // (one weight would be one product)
    Tensor b = g.input("b", DType::F32, {1003});
    Tensor t = g.input("t", DType::F32, {129, 1003});
    g.output(sum(matmul(x, transpose(w)) / 2.0f, c.axes, true) * 1.5f, "y");
    g.output(mean(-(matmul(x, transpose(v)) + b) - t, c.axes), "z");
    CompileOptions opt;
    opt.compileKernels = false;
    CompiledGraph cg = compileGraph(g, opt);
    for (const KernelSummary &k : cg.kernelSummaries())
      EXPECT_EQ(k.name.find("mm_"), std::string::npos) << cg.fusedText();
    expectMatches(g, c.axes.size() + 11, /*fusedOnly=*/true);
  }
}

/// nn.Linear on 3-D and 4-D inputs: the leading axes merged by a reshape,
/// the product, a reshape back and an epilogue, one kernel; a batched
/// product's result read flat; heads split after the product (the last axis
/// cut in two); odd sizes, every float dtype.
TEST_F(Matmul, LinearOnThreeDInputsIsOneKernel) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    struct Case {
      Shape in;
      Shape back;
    };
    for (const Case &c : {Case{{3, 37, 65}, {3, 37, 71}}, Case{{2, 5, 7, 65}, {2, 5, 7, 71}},
                          Case{{3, 37, 65}, {3, 37, 71, 1}}}) {
      Graph g("linear_nd");
      Tensor x = g.input("x", t, c.in);
      Tensor w = g.input("w", t, {71, 65});
      Tensor b = g.input("b", t, {71});
      int64_t rows = c.in.numel() / 65;
      Tensor p = matmul(x.reshape({rows, 65}), transpose(w));
      Tensor y = tanh(p.reshape(c.back) + (c.back.rank() == 4 && c.back[3] == 1
                                              ? b.reshape({71, 1})
                                              : b));
      g.output(y, "y");
      CompileOptions opt;
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      EXPECT_EQ(cg.numKernels(), 1u) << cg.fusedText();
      expectMatches(g, static_cast<uint64_t>(c.in.rank() + 3));
    }
    {
      Graph g("batched_read_flat");
      Tensor x = g.input("x", t, {3, 37, 65});
      Tensor w = g.input("w", t, {65, 70});
      Tensor y = matmul(x, w).reshape({111, 70}) * 0.5;
      g.output(y, "y");
      CompileOptions opt;
      opt.compileKernels = false;
      EXPECT_EQ(compileGraph(g, opt).numKernels(), 1u);
      expectMatches(g, 9);
    }
    {
      Graph g("heads_split");
      Tensor x = g.input("x", t, {4, 33, 96});
      Tensor w = g.input("w", t, {96, 96});
      Tensor p = matmul(x.reshape({132, 96}), transpose(w));
      g.output(p.reshape({4, 33, 6, 16}) + 1.0, "split");
      g.output(p.reshape({4, 33, 6, 16}).permute({0, 2, 1, 3}) * 2.0, "moved");
      expectMatches(g, 10);
    }
  }
}

TEST_F(Matmul, ScalarFactorsMoveIntoTheEpilogue) {
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g("scaled_product");
    Tensor x = g.input("x", t, {130, 200});
    Tensor w = g.input("w", t, {200, 66});
    g.output(matmul(x * 0.125, 3.0 * w), "y");
    CompileOptions opt;
    opt.compileKernels = false;
    CompiledGraph cg = compileGraph(g, opt);
    EXPECT_EQ(cg.numKernels(), 1u) << cg.fusedText();
    expectMatches(g, 4, /*fusedOnly=*/true);
  }
}

/// The Hopper template (TMA, mbarriers, wgmma; sm_90a) on every layout TMA
/// reads (A k- or m-major, B k- or n-major), batched at a stride and
/// broadcast, with tiles overhanging every edge, more tiles than blocks (the
/// persistent loop), more k-slices than stages, every tile width and pipeline
/// depth, and the fused epilogues.
TEST_F(Matmul, HopperTemplateOnEveryLayout) {
  struct Case {
    Shape a, b;
    bool aT, bT; ///< the operand is stored transposed and read through a permute
    const char *overrides;
  };
  const Case cases[] = {
      {{16, 8}, {8, 16}, false, false, "terms=0"}, // (k = 8 kept a product)
      {{127, 264}, {264, 200}, false, false, ""},
      {{127, 264}, {264, 200}, false, true, ""},
      {{136, 264}, {264, 200}, true, false, ""}, // m-major A: rows of m, 16-byte aligned
      {{136, 264}, {264, 200}, true, true, ""},
      {{1152, 256}, {256, 1024}, false, false, "bn=64,stages=2"},
      {{1152, 256}, {256, 1024}, false, true, "bn=128,stages=3"},
      {{304, 1032}, {1032, 520}, true, false, "bn=256,stages=4"},
      {{300, 1032}, {1032, 520}, false, true, "bn=256,stages=2"},
      {{5, 72, 96}, {5, 96, 40}, false, false, ""},
      {{5, 72, 96}, {5, 96, 40}, true, true, "bn=128"},
      {{3, 2, 65, 128}, {128, 136}, false, false, ""},
      {{3, 2, 65, 128}, {128, 136}, false, true, ""},
      // (k = 1, an outer product, is a pointwise product now:
      // OuterProductsRunAsPointwise)
      // rows of 1001 or 997 halves: padded to whole 16-byte units first (a pad kernel)
      {{300, 1001}, {1001, 997}, false, false, ""},
      {{300, 1001}, {1001, 997}, false, true, ""},
      // ping-pong: each consumer warpgroup every other tile (2 or 3 per block here)
      {{1152, 256}, {256, 2048}, false, false, "pingpong=1,bn=64,stages=3"},
      {{304, 1032}, {1032, 520}, true, true, "pingpong=1"},
      {{5, 72, 96}, {5, 96, 40}, false, true, "pingpong=1"},
      // clusters of two sharing B's tile (TMA multicast): an odd count of tile
      // rows (the last pair's second tile outside the matrix), B k-major
      // (half its rows each) and n-major (half its 64 x 64 boxes each),
      // batches, more pairs than clusters (the persistent loop)
      {{127, 264}, {264, 200}, false, true, "cluster=2"},
      {{1152, 256}, {256, 1024}, false, false, "cluster=2,bn=128,stages=3"},
      {{1152, 256}, {256, 2048}, false, false, "cluster=2,bn=256"},
      {{304, 1032}, {1032, 520}, true, true, "cluster=2,bn=256,stages=4"},
      {{5, 72, 96}, {5, 96, 40}, false, true, "cluster=2"},
      {{5, 300, 96}, {5, 96, 264}, false, false, "cluster=2,bn=128"},
      {{2048, 128}, {128, 1024}, false, true, "cluster=2,bn=64,stages=2"},
  };
  for (DType t : {DType::F16, DType::BF16})
    for (const Case &c : cases) {
      ScheduleEnv env(c.overrides);
      Graph g(std::string("hopper_") + std::string(dtypeName(t)));
      auto operand = [&](const char *name, const Shape &s, bool transposed) {
        if (!transposed)
          return g.input(name, t, s);
        Shape stored = s;
        stored.setDim(s.rank() - 1, s.dim(s.rank() - 2));
        stored.setDim(s.rank() - 2, s.dim(s.rank() - 1));
        return transpose(g.input(name, t, stored));
      };
      Tensor a = operand("a", c.a, c.aT), b = operand("b", c.b, c.bT);
      g.output(matmul(a, b), "c");
      SCOPED_TRACE(std::string(dtypeName(t)) + c.a.str() + (c.aT ? "T" : "") + " @ " + c.b.str() +
                   (c.bT ? "T " : " ") + c.overrides);
      CompileOptions opt;
      opt.compileKernels = false;
      std::string fused = compileGraph(g, opt).fusedText();
      EXPECT_NE(fused.find("wgmma"), std::string::npos) << fused;
      expectMatches(g, static_cast<uint64_t>(c.a.numel() % 89), /*fusedOnly=*/true);
    }
  // the epilogues: bias, GeLU, a residual and a cast, in the accumulators' registers
  for (const char *overrides : {"pingpong=0", "pingpong=1", "cluster=2"})
    for (DType t : {DType::F16, DType::BF16}) {
      ScheduleEnv env(overrides);
      SCOPED_TRACE(overrides);
      Graph g = epilogueGraph("hopper_epilogue", t, 333, 192, 264, true);
      CompileOptions opt;
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      EXPECT_EQ(cg.numKernels(), 1u) << cg.fusedText();
      EXPECT_NE(cg.fusedText().find("wgmma"), std::string::npos) << cg.fusedText();
      expectMatches(g, 12);
    }
}

/// The Hopper template's epilogue staged through shared memory (the rule's
/// choice for 16-bit products and TF32 ones of a short k) and not: tiles that overhang
/// m and n, each tile width (one to four 64-column chunks), both forms,
/// clusters, batches, the fused epilogue with two outputs, TF32, and an n
/// not a multiple of 4 (the buffer read back in pairs or single columns).
TEST_F(Matmul, HopperEpilogueStagedThroughSharedMemory) {
  struct Case {
    Shape a, b;
    bool bT;
    const char *overrides;
    bool staged; ///< the schedule's text names the staged epilogue
  };
  const Case cases[] = {
      {{300, 64}, {64, 1000}, false, "", true},          // the rule: 16-bit
      {{300, 64}, {64, 1000}, false, "staged=0", false}, // and without it
      {{1152, 256}, {256, 1024}, false, "staged=0,cluster=2,bn=128,stages=3", false},
      {{5, 72, 96}, {5, 96, 40}, true, "staged=0,pingpong=1", false},
      {{127, 264}, {264, 200}, true, "staged=1", true},      // a longer k, n overhangs
      {{136, 40}, {40, 264}, false, "staged=1,bn=64", true}, // one chunk a tile
      {{1152, 32}, {32, 2048}, false, "staged=1,bn=128,stages=2", true},
      {{5, 72, 96}, {5, 96, 40}, true, "staged=1,pingpong=1", true},
      {{1152, 32}, {32, 2048}, false, "staged=1,cluster=2,bn=256", true},
      {{301, 32}, {32, 998}, true, "", true}, // n % 4 = 2: pairs
      {{301, 32}, {32, 998}, true, "staged=0", false},
      {{7, 1001, 129}, {7, 129, 257}, false, "", true}, // n odd: single columns
      {{7, 1001, 129}, {7, 129, 257}, false, "staged=0", false},
      {{5, 72, 96}, {5, 96, 41}, true, "staged=1,pingpong=1", true},
      {{1152, 32}, {32, 2047}, false, "staged=1,cluster=2,bn=256", true},
      {{300, 40}, {40, 999}, true, "staged=1,bn=64", true},
      {{300, 8}, {8, 264}, false, "terms=0", true}, // k = 8: one wgmma a tile
  };
  for (DType t : {DType::F16, DType::BF16})
    for (const Case &c : cases) {
      ScheduleEnv env(c.overrides);
      SCOPED_TRACE(std::string(dtypeName(t)) + c.a.str() + " @ " + c.b.str() + (c.bT ? "T " : " ") +
                   c.overrides);
      Graph g(std::string("staged_") + std::string(dtypeName(t)));
      Tensor a = g.input("a", t, c.a);
      Shape stored = c.b;
      if (c.bT) {
        stored.setDim(c.b.rank() - 1, c.b.dim(c.b.rank() - 2));
        stored.setDim(c.b.rank() - 2, c.b.dim(c.b.rank() - 1));
      }
      Tensor b = g.input("b", t, stored);
      g.output(matmul(a, c.bT ? transpose(b) : b), "c");
      CompileOptions opt;
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      std::string fused = cg.fusedText();
      EXPECT_NE(fused.find("wgmma"), std::string::npos) << fused;
      EXPECT_EQ(fused.find("epilogue staged") != std::string::npos, c.staged) << fused;
      // the kernel does what the schedule says
      EXPECT_EQ(cg.cudaText().find("mj_warpgroup_sync(c);") != std::string::npos, c.staged);
      expectMatches(g, static_cast<uint64_t>(c.a.numel() % 97), /*fusedOnly=*/true);
    }
  // the fused epilogue (bias, GeLU, a residual, a cast, and h kept): k = 192
  // (n = 264, whole vectors of four; 262, pairs; 263, single columns: 400
  // rows, so that the product is large enough for its operands' rows to be
  // copied to whole 16-byte units, which the Hopper template reads)
  for (int64_t n : {264, 262, 263})
    for (const char *overrides : {"staged=1", "staged=1,pingpong=1", "staged=1,cluster=2",
                                  "staged=0", "staged=0,pingpong=1"})
      for (DType t : {DType::F16, DType::BF16}) {
        ScheduleEnv env(overrides);
        SCOPED_TRACE(std::string(overrides) + " n=" + std::to_string(n));
        Graph g = epilogueGraph("staged_epilogue", t, n == 264 ? 333 : 400, 192, n, true);
        CompileOptions opt;
        opt.compileKernels = false;
        CompiledGraph cg = compileGraph(g, opt);
        if (n == 264) { // (rows of 262 and 263 halves are copied to whole 16-byte units first)
          EXPECT_EQ(cg.numKernels(), 1u) << cg.fusedText();
        }
        EXPECT_EQ(cg.fusedText().find("epilogue staged") != std::string::npos,
                  std::string(overrides).find("staged=1") != std::string::npos)
            << cg.fusedText();
        expectMatches(g, 13);
      }
  // values and inputs named as the staged epilogue's locals might be (an
  // attention's q and v; the emitter's are mj_ prefixed, nv reserved)
  {
    Graph g("staged_names");
    Tensor q = g.input("q", DType::F16, {300, 64});
    Tensor k = g.input("k", DType::F16, {264, 64});
    Tensor ch = g.input("ch", DType::F16, {300, 264});
    Tensor nv = g.input("nv", DType::F16, {264});
    Tensor v = matmul(q, transpose(k));
    g.output(v * ch + nv, "v");
    CompileOptions opt;
    opt.compileKernels = false;
    EXPECT_NE(compileGraph(g, opt).fusedText().find("epilogue staged"), std::string::npos);
    expectMatches(g, 17);
  }
  // TF32 (f32 outputs, 16-byte stores; single ones where n is odd),
  // nn.Linear's layout: k = 8 and 100 (the rule stages TF32 products up to
  // k = 128)
  for (int64_t k : {8, 100})
    for (int64_t n : {520, 518, 517}) {
      SCOPED_TRACE("tf32 k=" + std::to_string(k) + " n=" + std::to_string(n));
      Graph g("staged_tf32");
      auto [a, b] = layoutPair(g, false, true, 300, n, k);
      g.output(matmul(a, b), "c");
      CompileOptions opt;
      opt.allowTf32 = true;
      opt.scheduleOverrides.terms = 0; // (k = 8 kept a product)
      CompileOptions look = opt;
      look.compileKernels = false;
      std::string fused = compileGraph(g, look).fusedText();
      EXPECT_NE(fused.find("epilogue staged"), std::string::npos) << fused;
      expectMatchesWith(g, opt);
    }
}

/// The large odd product, 4097x4093 @ 4093x4095 in f16 and bf16 on
/// Hopper: both operands padded to whole 16-byte rows first, 33 tile rows
/// (single blocks: an odd count), an odd n stored one element at a time.
/// Every output must be written (none left as the NaN poison); three whole
/// rows, two whole columns and 2000 elements at random are compared with the
/// exact product of the operands as stored, within the output's rounding and
/// a bound of the f32 accumulation (a misplaced tile or slice is off by the
/// size of the values, about 64). The CPU reference of the whole product (69
/// G multiply-adds) would take minutes.
TEST_F(Matmul, LargeOddProductSampled) {
  const int64_t m = 4097, n = 4095, k = 4093;
  for (DType t : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(t));
    Graph g(std::string("large_odd_") + std::string(dtypeName(t)));
    // (the inputs in two statements: the order of a call's arguments is
    // unspecified, and r.inputs follows the order they were declared in)
    Tensor a0 = g.input("a", t, {m, k});
    Tensor b0 = g.input("b", t, {k, n});
    g.output(matmul(a0, b0), "c");
    CompileOptions opt;
    if (Gpu)
      opt.device = gpu().properties();
    CompiledGraph cg = compileGraph(g, opt);
    ASSERT_NE(cg.fusedText().find("wgmma"), std::string::npos) << cg.fusedText();
    if (!Gpu)
      continue; // compiled through NVRTC; skipped below
    CheckedRun r = runCompiled(g, gpu(), std::move(cg), 41);
    const HostTensor &c = r.outputs[0];
    int64_t unwritten = 0;
    for (int64_t i = 0; i < c.numel(); ++i)
      unwritten += !std::isfinite(c.get(i));
    EXPECT_EQ(unwritten, 0) << "output elements left as the NaN poison (or not finite)";
    std::vector<float> a(m * k), b(k * n);
    for (int64_t i = 0; i < m * k; ++i)
      a[i] = static_cast<float>(r.inputs[0].get(i));
    for (int64_t i = 0; i < k * n; ++i)
      b[i] = static_cast<float>(r.inputs[1].get(i));
    std::vector<std::pair<int64_t, int64_t>> at;
    for (int64_t row : {int64_t(0), int64_t(1), m / 2, m - 2, m - 1})
      for (int64_t j = 0; j < n; ++j)
        at.push_back({row, j});
    for (int64_t col : {int64_t(0), n - 1})
      for (int64_t i = 0; i < m; ++i)
        at.push_back({i, col});
    uint64_t x = 12345;
    for (int i = 0; i < 2000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      at.push_back({int64_t((x >> 33) % uint64_t(m)), int64_t((x >> 13) % uint64_t(n))});
    }
    double rounding = t == DType::F16 ? 0x1p-11 : 0x1p-8; // the output's unit roundoff
    double growth = std::log2(double(k)) + 2 * std::sqrt(double(k)) + 2;
    int64_t bad = 0;
    double worst = 0;
    for (auto [i, j] : at) {
      double sum = 0, sumAbs = 0;
      for (int64_t p = 0; p < k; ++p) {
        double v = double(a[i * k + p]) * double(b[p * n + j]);
        sum += v;
        sumAbs += std::fabs(v);
      }
      double bound = rounding * std::fabs(sum) + 0x1p-24 * growth * sumAbs + 0x1p-24;
      double err = std::fabs(c.get(i * n + j) - sum);
      worst = std::max(worst, err / bound);
      bad += !(err <= bound);
    }
    std::printf("[ SAMPLED  ] %s: %zu elements, the largest error %.3f of its bound\n",
                std::string(dtypeName(t)).c_str(), at.size(), worst);
    EXPECT_EQ(bad, 0) << "of " << at.size() << " sampled elements; the largest error " << worst
                      << " of its bound";
  }
  if (!Gpu)
    GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
}

} // namespace
} // namespace minijit
