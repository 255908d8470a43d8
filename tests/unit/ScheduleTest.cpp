// Schedules and CUDA without NVRTC: index and vector width, tails, templates, overrides, names.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "ir/Builder.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using namespace minijit;

namespace {

/// Compiles without NVRTC, for the assumed H200, f32 products on the CUDA
/// cores (the templates these tests read; three TF32 products, the default
/// for large ones, are tested where asked for).
CompiledGraph lower(const Graph &g, bool fusion = true, const std::string &overrides = "",
                    bool reassociate = true) {
  ::unsetenv("MINIJIT_SCHEDULE");
  CompileOptions opt;
  opt.tf32x3 = false;
  opt.fusion = fusion;
  opt.reassociate = reassociate;
  opt.compileKernels = false;
  Expected<ScheduleOverrides> parsed = parseScheduleOverrides(overrides);
  EXPECT_TRUE(parsed) << parsed.error();
  if (parsed)
    opt.scheduleOverrides = *parsed;
  return compileGraph(g, opt);
}

/// Fused, without the rewrites that reassociate: an argmax of a softmax stays
/// one (simplify/ArgmaxRewrites.h would make it the argmax of the logits).
CompiledGraph lowerAsWritten(const Graph &g, const std::string &overrides = "") {
  return lower(g, true, overrides, /*reassociate=*/false);
}

Graph unaryGraph(DType t, const Shape &s, OpKind op = OpKind::Neg) {
  Graph g("u");
  Tensor x = g.input("x", t, s);
  g.output(unary(op, x), "y");
  return g;
}

Graph rowSum(int64_t rows, int64_t cols, int64_t axis = 1) {
  Graph g("r");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  g.output(sum(x, {axis}), "s");
  return g;
}

/// The sum over the outer and inner axes of [a, b, c]: rows of a*c that are
/// not contiguous.
Graph outerInnerSum(int64_t a, int64_t b, int64_t c) {
  Graph g("oi");
  Tensor x = g.input("x", DType::F32, {a, b, c});
  g.output(sum(x, {0, 2}), "s");
  return g;
}

Graph softmax(int64_t rows, int64_t cols, DType t = DType::F32) {
  Graph g("softmax");
  Tensor x = g.input("x", t, {rows, cols});
  Tensor e = exp(x - max(x, {1}, true));
  g.output(e / sum(e, {1}, true), "y");
  return g;
}

/// The CompileError of a compile given `overrides` as $MINIJIT_SCHEDULE:
/// text that does not parse is refused where it enters, a value the kernel
/// cannot take by the template that reads it (f32 products on the CUDA
/// cores, as lower's).
std::string compileErrorOf(const Graph &g, const std::string &overrides) {
  ::setenv("MINIJIT_SCHEDULE", overrides.c_str(), 1);
  CompileOptions opt;
  opt.tf32x3 = false;
  opt.compileKernels = false;
  std::string what;
  try {
    compileGraph(g, opt);
  } catch (const CompileError &e) {
    what = e.what();
  }
  ::unsetenv("MINIJIT_SCHEDULE");
  if (what.empty())
    ADD_FAILURE() << "no CompileError for overrides '" << overrides << "'";
  return what;
}

bool contains(const std::string &s, const std::string &what) {
  return s.find(what) != std::string::npos;
}

} // namespace

// ---- index width

TEST(Schedule, SmallTensorsUse32BitIndices) {
  CompiledGraph c = lower(unaryGraph(DType::F32, {1 << 20}));
  ASSERT_EQ(c.detail->kernels.size(), 1u);
  EXPECT_FALSE(c.detail->kernels[0].lowered.index64);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "const int vi = (int)blockIdx.x * 256 + threadIdx.x;"))
      << c.detail->kernels[0].cuda;
  EXPECT_FALSE(contains(c.detail->kernels[0].cuda, "long long"));
}

TEST(Schedule, LargestInt32TensorStillUses32BitIndices) {
  CompiledGraph c = lower(unaryGraph(DType::F32, {2147483647}));
  EXPECT_FALSE(c.detail->kernels[0].lowered.index64);
  EXPECT_FALSE(contains(c.detail->kernels[0].cuda, "long long"));
}

TEST(Schedule, TensorsOf2To31ElementsUse64BitIndices) {
  for (Shape s : {Shape{2147483648}, Shape{65536, 32769}, Shape{3, 1 << 30}}) {
    CompiledGraph c = lower(unaryGraph(DType::F32, s));
    EXPECT_TRUE(c.detail->kernels[0].lowered.index64) << s.str();
    EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "long long")) << s.str();
  }
}

TEST(Schedule, LargeReductionsUse64BitIndices) {
  CompiledGraph below = lower(rowSum(65536, 16384));
  EXPECT_FALSE(below.detail->kernels[0].lowered.index64);
  CompiledGraph above = lower(rowSum(65536, 32768));
  EXPECT_TRUE(above.detail->kernels[0].lowered.index64);
  EXPECT_TRUE(contains(above.detail->kernels[0].cuda, "const long long row"));
}

TEST(Schedule, AnyLargeParameterNeeds64BitIndices) {
  // The kernel's domain is small, but it reads a huge input.
  Graph g("slice");
  Tensor x = g.input("x", DType::F32, {65536, 65536});
  g.output(sum(x, {0, 1}), "s");
  CompiledGraph c = lower(g);
  EXPECT_TRUE(c.detail->kernels[0].lowered.index64);
}

// ---- vector width and tails

TEST(Schedule, F32ContiguousUsesFourWideVectors) {
  CompiledGraph c = lower(unaryGraph(DType::F32, {4096, 1024}));
  EXPECT_EQ(c.detail->kernels[0].schedule.kind(), ScheduleKind::Pointwise);
  EXPECT_EQ(c.detail->kernels[0].schedule.as<PointwiseSchedule>().vec, 4u);
  EXPECT_FALSE(c.detail->kernels[0].schedule.as<PointwiseSchedule>().tail);
  EXPECT_EQ(c.detail->kernels[0].schedule.as<PointwiseSchedule>().numVec, 4096 * 1024 / 4);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_load(x_r, x + (vi * 4));")) << c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_store(y_out + (vi * 4), y_out_r);")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, SixteenBitTypesUseEightWideVectors) {
  for (DType t : {DType::BF16, DType::F16}) {
    CompiledGraph c = lower(unaryGraph(t, {1 << 20}));
    EXPECT_EQ(c.detail->kernels[0].schedule.as<PointwiseSchedule>().vec, 8u) << std::string(dtypeName(t));
    EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_load(x_r, x + (vi * 8));")) << c.detail->kernels[0].cuda;
  }
}

TEST(Schedule, TheWidestTypeSetsTheVectorWidth) {
  Graph g("mixed");
  Tensor x = g.input("x", DType::BF16, {1 << 20});
  g.output(x.cast(DType::F32) * 2, "y");
  EXPECT_EQ(lower(g).detail->kernels[0].schedule.as<PointwiseSchedule>().vec, 4u); // 16 bytes of f32
  EXPECT_EQ(lower(unaryGraph(DType::I32, {1 << 20})).detail->kernels[0].schedule.as<PointwiseSchedule>().vec, 4u);
}

TEST(Schedule, OddSizesGetAScalarTail) {
  CompiledGraph c = lower(unaryGraph(DType::F32, {1027}));
  const PointwiseSchedule &s = c.detail->kernels[0].schedule.as<PointwiseSchedule>();
  EXPECT_EQ(s.vec, 4u);
  EXPECT_EQ(s.numVec, 256);
  EXPECT_TRUE(s.tail);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "// the last 3 elements, one per thread")) << c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "const int i = 1024 + threadIdx.x;")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, SizesBelowFourUseNarrowerVectors) {
  CompiledGraph c = lower(unaryGraph(DType::F32, {3}));
  const PointwiseSchedule &s = c.detail->kernels[0].schedule.as<PointwiseSchedule>();
  EXPECT_EQ(s.vec, 2u);
  EXPECT_EQ(s.numVec, 1);
  EXPECT_TRUE(s.tail);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "// the last 1 element")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, ScalarsUseNoVectors) {
  CompiledGraph c = lower(unaryGraph(DType::F32, {}));
  const PointwiseSchedule &s = c.detail->kernels[0].schedule.as<PointwiseSchedule>();
  EXPECT_EQ(s.vec, 1u);
  EXPECT_EQ(s.numVec, 1);
  EXPECT_FALSE(s.tail);
  EXPECT_EQ(s.grid, 1);
  EXPECT_FALSE(contains(c.detail->kernels[0].cuda, "mj_load(")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, GatheredLoadsAreNotVectorized) {
  Graph g("t");
  Tensor x = g.input("x", DType::F32, {64, 32});
  g.output(exp(x.permute({1, 0})), "y");
  // (without transpose=0 the permuted operand would go through shared tiles)
  CompiledGraph c = lower(g, true, "transpose=0");
  EXPECT_EQ(c.detail->kernels[0].schedule.as<PointwiseSchedule>().vec, 4u); // the store is contiguous
  EXPECT_FALSE(contains(c.detail->kernels[0].cuda, "mj_load(")) << c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_store(")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, BroadcastLoadsAreReadOncePerVector) {
  Graph g("bias");
  Tensor x = g.input("x", DType::F32, {256, 64});
  Tensor scale = g.input("scale", DType::F32, {256, 1});
  g.output(x * scale, "y");
  CompiledGraph cg = lower(g);
  // scale is the same for the four lanes of a vector: one scalar load.
  EXPECT_TRUE(contains(cg.detail->kernels[0].cuda, "const float scale_v = scale[vi / 16];")) << cg.detail->kernels[0].cuda;
}

// ---- reduction templates

TEST(Schedule, RowReductionsUseTheInnerTemplate) {
  CompiledGraph c = lower(rowSum(4096, 1024));
  EXPECT_EQ(c.detail->kernels[0].schedule.kind(), ScheduleKind::InnerRow);
  EXPECT_EQ(c.detail->kernels[0].schedule.as<RowSchedule>().vec, 4u);
  EXPECT_EQ(c.detail->kernels[0].name, "red_sum_row_k0");
}

TEST(Schedule, ColumnReductionsUseTheOuterTemplate) {
  CompiledGraph c = lower(rowSum(4096, 1024, 0));
  EXPECT_EQ(c.detail->kernels[0].schedule.kind(), ScheduleKind::OuterCol);
  EXPECT_EQ(c.detail->kernels[0].name, "red_sum_col_k0");
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_col_reduce<MjSum, 8>")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, TheLayoutNotTheAxisChoosesTheTemplate) {
  // Reducing the last axis of a transposed view reads columns of memory.
  Graph g("t");
  Tensor x = g.input("x", DType::F32, {1024, 4096});
  g.output(sum(x.permute({1, 0}), {1}), "s");
  CompiledGraph c = lower(g);
  EXPECT_EQ(c.detail->kernels[0].schedule.kind(), ScheduleKind::OuterCol);
}

TEST(Schedule, ShortRowsShareAWarp) {
  CompiledGraph c = lower(softmax(4096, 64));
  EXPECT_LT(c.detail->kernels[0].schedule.as<RowSchedule>().threadsPerRow, 32u);
  EXPECT_GT(c.detail->kernels[0].schedule.as<RowSchedule>().rowsPerBlock, 1u);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_warp_reduce<MjMax, " +
                                      std::to_string(c.detail->kernels[0].schedule.as<RowSchedule>().threadsPerRow) + ">"))
      << c.detail->kernels[0].cuda;
}

TEST(Schedule, MediumRowsUseAWarpEach) {
  CompiledGraph c = lower(softmax(32768, 512));
  EXPECT_EQ(c.detail->kernels[0].schedule.kind(), ScheduleKind::InnerRow);
  EXPECT_EQ(c.detail->kernels[0].schedule.as<RowSchedule>().threadsPerRow, 32u);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_warp_reduce<MjMax, 32>")) << c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_warp_reduce<MjSum, 32>")) << c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_load(")) << c.detail->kernels[0].cuda;
  EXPECT_FALSE(contains(c.detail->kernels[0].cuda, "mj_block_reduce<"));
}

// Rows of a warp that are long for it (8 vectors a lane or more), or too few
// to fill a quarter of the device a warp each, take more threads, each keeping
// two vectors or more, until the rows hold two waves of threads.
TEST(Schedule, WarpRowsLongOrFewTakeMoreThreads) {
  auto threads = [](const Graph &g) {
    return lower(g).detail->kernels[0].schedule.as<RowSchedule>().threadsPerRow;
  };
  EXPECT_EQ(threads(softmax(4096, 1024)), 128u) << "long for a warp: 256 vectors";
  EXPECT_EQ(threads(softmax(8191, 1023)), 128u) << "mid-vector rows count their extra vector";
  EXPECT_EQ(threads(softmax(16384, 1024)), 64u) << "two waves at 64 threads a row";
  EXPECT_EQ(threads(softmax(65536, 1024)), 32u) << "enough rows: a warp each";
  EXPECT_EQ(threads(softmax(509, 1536)), 128u) << "at least two vectors a thread";
  EXPECT_EQ(threads(softmax(4096, 768)), 32u) << "neither long nor few";
  EXPECT_EQ(threads(softmax(1000, 777)), 64u) << "few rows";
  EXPECT_EQ(threads(softmax(1000, 200)), 32u) << "too short to share: under 4 vectors a thread";
  CompiledGraph c = lower(softmax(4096, 1024));
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_block_reduce<MjMax, 128>")) << c.detail->kernels[0].cuda;
  EXPECT_EQ(c.detail->kernels[0].schedule.geometry().grid, 4096);
  EXPECT_EQ(lower(softmax(4096, 1024), true, "tpr=32").detail->kernels[0].schedule.as<RowSchedule>().threadsPerRow,
            32u) << "tpr sets it by hand";
}

// Few rows of a warp or less share smaller blocks, so that every SM gets some.
TEST(Schedule, FewShortRowsShareSmallerBlocks) {
  EXPECT_EQ(lower(softmax(1001, 256)).detail->kernels[0].schedule.geometry().block, 128u);
  EXPECT_EQ(lower(softmax(100, 256)).detail->kernels[0].schedule.geometry().block, 32u);
  EXPECT_EQ(lower(softmax(40000, 256)).detail->kernels[0].schedule.geometry().block, 256u);
}

TEST(Schedule, LongRowsUseABlockEach) {
  CompiledGraph c = lower(softmax(512, 16384));
  const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_GT(s.threadsPerRow, 32u);
  EXPECT_EQ(s.block, s.threadsPerRow);
  EXPECT_EQ(s.rowsPerBlock, 1u);
  EXPECT_EQ(s.grid, 512);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_block_reduce<MjMax, " + std::to_string(s.block) + ">"))
      << c.detail->kernels[0].cuda;
}

TEST(Schedule, FewLongRowsAreSplitAcrossBlocks) {
  CompiledGraph c = lower(rowSum(3, 1 << 22)); // 3 rows: a block each would use 3 SMs
  const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_GT(s.splits, 1u);
  EXPECT_EQ(s.grid, 3 * int64_t(s.splits));
  EXPECT_GE(s.grid, 132); // at least a block per SM of the H200
  EXPECT_EQ(s.chunk * s.splits >= (1 << 22) / 4, true);
  EXPECT_FALSE(s.cached);
  EXPECT_EQ(c.program.kernels[0].workspaceBytes, (3 + 3 * int64_t(s.splits)) * 4);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "atomicAdd(&mj_count[row], 1u)")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, ManyRowsAndShortRowsAreNotSplit) {
  for (const CompiledGraph &c : {lower(rowSum(132, 1 << 20)), lower(rowSum(3, 2048))}) {
    EXPECT_EQ(c.detail->kernels[0].schedule.as<RowSchedule>().splits, 1u) << c.fusedText();
    EXPECT_EQ(c.program.kernels[0].workspaceBytes, 0);
    EXPECT_FALSE(contains(c.detail->kernels[0].cuda, "mj_work")) << c.detail->kernels[0].cuda;
  }
}

TEST(Schedule, FewLongRowsOfSeveralPassesMeetAfterEachPass) {
  // softmax: max, then sum, then the stores; 5 rows fill 264 blocks at most
  // (two per SM, all resident), so 52 blocks per row.
  CompiledGraph c = lower(softmax(5, 1 << 22));
  const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_TRUE(s.waits);
  EXPECT_EQ(s.splits, 52u);
  EXPECT_EQ(s.grid, 5 * 52);
  EXPECT_LE(s.grid, 2 * 132);
  EXPECT_EQ(s.minBlocksPerSM, 2u);
  EXPECT_TRUE(c.program.kernels[0].coResident);
  // two counters per row, then a partial per block and reduction
  EXPECT_EQ(c.program.kernels[0].workspaceBytes, (2 * 5 + 5 * 52 * 2) * 4);
  const std::string &cuda = c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(cuda, "__launch_bounds__(512, 2)")) << cuda;
  EXPECT_TRUE(contains(cuda, "mj_row_barrier(&mj_arrived[row], 52u);")) << cuda;
  EXPECT_TRUE(contains(cuda, "mj_row_barrier(&mj_arrived[row], 104u);")) << cuda;
  EXPECT_TRUE(contains(cuda, "mj_row_leave(&mj_arrived[row], &mj_left[row], 52u);")) << cuda;
  // online=1: the max and the sum of exp(x - max) in one pass, one barrier;
  // the sum's partial is a pair (the sum and the max it is relative to)
  CompiledGraph online = lower(softmax(5, 1 << 22), true, "online=1");
  EXPECT_EQ(online.program.kernels[0].workspaceBytes, (2 * 5 + 5 * 52 * 3) * 4);
  EXPECT_TRUE(contains(online.detail->kernels[0].cuda, "mj_row_barrier(&mj_arrived[row], 52u);"))
      << online.detail->kernels[0].cuda;
  EXPECT_FALSE(contains(online.detail->kernels[0].cuda, "mj_row_barrier(&mj_arrived[row], 104u);"));
  // a one-pass split does not wait: the last block combines
  CompiledGraph one = lower(rowSum(3, 1 << 22));
  EXPECT_FALSE(one.detail->kernels[0].schedule.as<RowSchedule>().waits);
  EXPECT_FALSE(one.program.kernels[0].coResident);
  EXPECT_FALSE(contains(one.detail->kernels[0].cuda, "mj_row_barrier(")) << one.detail->kernels[0].cuda;
}

/// `cluster` (sm_90, by hand or by the tuner; no rule takes it): each row
/// over a cluster of blocks that hold their chunks in registers where 8
/// vectors a thread take them, and meet at the cluster's barrier (no
/// counters in the workspace, none of the grid need be resident at once).
/// Refused where it cannot be: sm_80, not a cluster size, rows sharing
/// blocks, few rows split over the grid.
TEST(Schedule, RowsOverAClusterOfBlocksByHand) {
  EXPECT_EQ(lower(softmax(1024, 32768)).detail->kernels[0].schedule.as<RowSchedule>().cluster, 1u);
  CompiledGraph c = lower(softmax(1024, 32768), true, "rowcluster=2");
  const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(s.cluster, 2u);
  EXPECT_EQ(s.splits, 2u);
  EXPECT_TRUE(s.waits);
  EXPECT_TRUE(s.cached);
  EXPECT_EQ(s.itemsPerThread, 8u);
  EXPECT_EQ(s.grid, 2048);
  EXPECT_EQ(c.program.kernels[0].cluster, 2u);
  EXPECT_FALSE(c.program.kernels[0].persistent); // the grid is launched whole
  EXPECT_FALSE(c.program.kernels[0].coResident);
  EXPECT_EQ(c.program.kernels[0].workspaceBytes, 1024 * 2 * 2 * 4); // partials only
  const std::string &cuda = c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(cuda, "__cluster_dims__(2, 1, 1) __launch_bounds__(512, 2)")) << cuda;
  EXPECT_TRUE(contains(cuda, "mj_cluster_sync(); // all 2 blocks of the row")) << cuda;
  EXPECT_FALSE(contains(cuda, "mj_row_barrier(")) << cuda;
  EXPECT_FALSE(contains(cuda, "mj_row_leave(")) << cuda;
  EXPECT_TRUE(contains(c.cudaText(), "void mj_cluster_sync()")) << "the whole program's text";
  // rows of 50257 bf16 (mid-vector rows of 6283 vectors of 8) over four
  CompiledGraph bc = lower(softmax(2048, 50257, DType::BF16), true, "rowcluster=4");
  const RowSchedule &b = bc.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(b.splits, 4u);
  EXPECT_TRUE(b.cached);
  EXPECT_LE(b.itemsPerThread, 8u);
  CompileOptions ampere;
  ampere.compileKernels = false;
  ampere.arch = "sm_80";
  ampere.scheduleOverrides.rowcluster = 2;
  EXPECT_THROW(compileGraph(softmax(1024, 32768), ampere), CompileError);
  EXPECT_THROW(lower(softmax(1024, 32768), true, "rowcluster=3"), CompileError);
  EXPECT_THROW(lower(softmax(4096, 128), true, "rowcluster=2"), CompileError);
  EXPECT_THROW(lower(softmax(5, 1 << 22), true, "rowcluster=2"), CompileError);
  // the matmul's `cluster` is not the rows' (every template ignores the
  // keys of others)
  EXPECT_EQ(lower(softmax(4096, 128), true, "cluster=2").detail->kernels[0].schedule.as<RowSchedule>().cluster, 1u);
}

/// Softmax over rows of `cols`, then the argmax of the probabilities (a
/// greedy decoding step), in `t`.
Graph greedyDecode(int64_t rows, int64_t cols, DType t = DType::F32) {
  Graph g("greedy");
  Tensor x = g.input("x", t, {rows, cols});
  g.output(argmax(softmax(x, 1), 1), "token");
  return g;
}

TEST(Schedule, FewLongRowsWithAnArgmaxAreSplitToo) {
  // 64 rows of 128256, the softmax as written: four blocks a row (two per
  // SM, all resident), meeting after each pass; the argmax's partial is a
  // pair (value, position), so a block leaves four words: the max, the sum,
  // the argmax's value and position
  CompiledGraph c = lowerAsWritten(greedyDecode(64, 128256));
  ASSERT_EQ(c.detail->kernels.size(), 1u);
  const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(s.splits, 4u);
  EXPECT_TRUE(s.waits);
  EXPECT_EQ(s.grid, 256);
  EXPECT_EQ(s.chunk, 8016);
  EXPECT_EQ(c.program.kernels[0].workspaceBytes, (2 * 64 + 64 * 4 * 4) * 4);
  const std::string &cuda = c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(cuda, "mj_partial[(row * 4 + part) * 4 + 2] = __float_as_uint(token_acc);"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "mj_partial[(row * 4 + part) * 4 + 3] = (unsigned)token_at;")) << cuda;
  EXPECT_TRUE(contains(cuda, "token_at = lane < 4 ? (int)__ldcg(&mj_partial[(row * 4 + lane) * 4 + "
                             "3]) : 2147483647;"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "mj_row_barrier(&mj_arrived[row], 12u);")) << cuda;
  // an argmax alone is one pass: the last block of the row combines the pairs
  Graph one("one");
  Tensor x = one.input("x", DType::BF16, {3, 128257});
  one.output(argmin(x, 1), "i");
  CompiledGraph o = lower(one);
  const RowSchedule &os = o.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_GT(os.splits, 1u);
  EXPECT_FALSE(os.waits);
  EXPECT_EQ(o.program.kernels[0].workspaceBytes, int64_t(3 + 3 * os.splits * 2) * 4);
  EXPECT_TRUE(contains(o.detail->kernels[0].cuda, "mj_block_argreduce<false, 512>(i_acc, i_at")) << o.detail->kernels[0].cuda;
  // many rows fill the SMs unsplit
  EXPECT_EQ(lowerAsWritten(greedyDecode(4096, 32000)).detail->kernels[0].schedule.as<RowSchedule>().splits, 1u);
  EXPECT_EQ(lower(greedyDecode(4096, 32000)).detail->kernels[0].schedule.as<RowSchedule>().splits, 1u);
}

TEST(Schedule, AGreedyDecodingStepIsOneWaveOfArgmaxBlocks) {
  // Rewritten (simplify/ArgmaxRewrites.h), 64 rows of 128256 are an argmax
  // alone: one pass of 16-byte vectors over 8 blocks a row, 512 blocks of
  // 512 threads, all resident at once (four per SM, in the launch bounds),
  // four vectors a thread in flight
  CompiledGraph c = lower(greedyDecode(64, 128256));
  ASSERT_EQ(c.detail->kernels.size(), 1u);
  const CompiledKernel &k = c.detail->kernels[0];
  EXPECT_EQ(k.name, "red_argmax_row_k0");
  const RowSchedule &s = k.schedule.as<RowSchedule>();
  EXPECT_EQ(s.vec, 4u);
  EXPECT_EQ(s.threadsPerRow, 512u);
  EXPECT_EQ(s.splits, 8u);
  EXPECT_FALSE(s.waits);
  EXPECT_EQ(s.grid, 512);
  EXPECT_LE(s.grid, 4 * 132);
  EXPECT_EQ(s.minBlocksPerSM, 4u);
  EXPECT_EQ(s.ahead, 4u);
  EXPECT_TRUE(contains(k.cuda, "__launch_bounds__(512, 4) red_argmax_row_k0(")) << k.cuda;
  EXPECT_TRUE(contains(k.cuda, "mj_load(logits_a[u], logits + (row * 128256 + kv * 4));") ||
              contains(k.cuda, "mj_load(x_a[u], x + (row * 128256 + kv * 4));"))
      << k.cuda;
  // a sum over the same rows: four blocks per SM rounded down (no block past
  // the wave), no launch bounds asked, one vector at a time
  CompiledGraph summed = lower(rowSum(64, 128256));
  const RowSchedule &sum = summed.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(sum.splits, 8u);
  EXPECT_EQ(lower(rowSum(100, 128256)).detail->kernels[0].schedule.as<RowSchedule>().grid, 500)
      << "5 blocks a row, not 6: 600 blocks would be 72 past the wave";
  EXPECT_EQ(sum.minBlocksPerSM, 0u);
  EXPECT_EQ(sum.ahead, 1u);
  // splits=N sets the blocks a row by hand, within the threads that
  // combine them, and for rows read in several passes within residency
  EXPECT_EQ(lower(greedyDecode(64, 128256), true, "splits=9")
                .detail->kernels[0].schedule.as<RowSchedule>().grid,
            576);
  EXPECT_EQ(lower(rowSum(64, 128256), true, "splits=1")
                .detail->kernels[0].schedule.as<RowSchedule>().splits,
            1u);
  EXPECT_TRUE(contains(compileErrorOf(greedyDecode(64, 128256), "splits=513"),
                       "splits must be 1..512 for rows of 32064 vectors on 512 threads"));
  CompileOptions asWritten;
  asWritten.reassociate = false;
  asWritten.compileKernels = false;
  asWritten.scheduleOverrides.splits = 5;
  try {
    compileGraph(greedyDecode(64, 128256), asWritten);
    ADD_FAILURE() << "splits=5 over 64 rows of several passes compiled";
  } catch (const CompileError &e) {
    EXPECT_TRUE(contains(e.what(), "fit at most 4 blocks a row, all resident")) << e.what();
  }
}

TEST(Schedule, FewLongColumnsWithAnArgminAreSplitToo) {
  Graph g("cols");
  Tensor x = g.input("x", DType::F32, {100003, 40});
  g.output(argmin(x, 0), "i");
  CompiledGraph c = lower(g);
  const ColumnSchedule &s = c.detail->kernels[0].schedule.as<ColumnSchedule>();
  EXPECT_GT(s.splits, 1u);
  EXPECT_EQ(c.program.kernels[0].workspaceBytes, int64_t(2 + 40 * s.splits * 2) * 4);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda,
                       "mj_arg_update<false>(i_acc, i_at, __uint_as_float(__ldcg(&mj_partial["))
      << c.detail->kernels[0].cuda;
}

/// A batch norm's statistics in training: the variance needs the mean of
/// the whole column first.
Graph columnVariance(int64_t rows, int64_t cols) {
  Graph g("colvar");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  Tensor d = x - mean(x, {0}, true);
  g.output(mean(d * d, {0}, true), "var");
  return g;
}

TEST(Schedule, FewLongColumnsOfSeveralPassesMeetAcrossBlocks) {
  // [204800, 32]: one group of 32 columns, once one block for the whole
  // tensor; now the blocks four SMs hold of it, all resident, 388
  // positions each, the counters and partials of both passes
  CompiledGraph c = lower(columnVariance(204800, 32));
  const ColumnSchedule &s = c.detail->kernels[0].schedule.as<ColumnSchedule>();
  EXPECT_TRUE(s.waits);
  EXPECT_EQ(s.grid, 4 * 132);
  EXPECT_EQ(s.minBlocksPerSM, 4u);
  EXPECT_EQ(s.block, 256u);
  EXPECT_EQ(s.chunk, 388);
  EXPECT_TRUE(c.program.kernels[0].coResident);
  EXPECT_EQ(c.program.kernels[0].workspaceBytes, int64_t(2 + 32 * 528 * 2) * 4);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_row_barrier(&mj_arrived[group], 1056u)"))
      << c.detail->kernels[0].cuda;
  // on shapes nobody tuned for: every position once, at most four blocks
  // an SM, each thread 32 positions or more; groups for half the SMs or
  // more (a batch norm over [16384, 4096]: 128 groups), or columns too
  // short to split, keep a block a group
  for (int64_t rows : {1, 7, 255, 256, 3001, 65537, 1000003})
    for (int64_t cols : {1, 17, 33, 100, 4000, 8192}) {
      if (rows * cols > (int64_t(1) << 27))
        continue;
      CompiledGraph g = lower(columnVariance(rows, cols));
      const ColumnSchedule *col = g.detail->kernels[0].schedule.getIf<ColumnSchedule>();
      if (!col)
        continue; // (read as rows: a few columns of a short tensor)
      std::string what = std::to_string(rows) + "x" + std::to_string(cols);
      int64_t groups = (cols + 31) / 32;
      if (!col->waits) {
        EXPECT_EQ(col->splits, 1u) << what;
        EXPECT_TRUE(2 * groups >= 132 || rows < 2 * 32 * 8) << what;
        continue;
      }
      EXPECT_EQ(col->grid, groups * col->splits) << what;
      EXPECT_LE(col->grid, 4 * 132) << what;
      EXPECT_GE(col->chunk, 32 * int64_t(col->parts)) << what;
      EXPECT_GE(col->chunk * col->splits, rows) << what;
      EXPECT_LT(col->chunk * (col->splits - 1), rows) << what;
    }
  // i64 sums are not split (their partials are two words)
  Graph longs("longs");
  Tensor x = longs.input("x", DType::I64, {204800, 32});
  Tensor d = x - sum(x, {0}, true);
  longs.output(sum(d * d, {0}, true), "s");
  EXPECT_FALSE(lower(longs).detail->kernels[0].schedule.as<ColumnSchedule>().waits);
  // by hand: within residency
  EXPECT_EQ(lower(columnVariance(204800, 32), true, "splits=7")
                .detail->kernels[0]
                .schedule.as<ColumnSchedule>()
                .grid,
            7);
  EXPECT_TRUE(contains(compileErrorOf(columnVariance(204800, 100), "splits=200"),
                       "splits must be 1..132 for 4 groups of columns read in several passes"));
  // blocks of 1024 threads (parts=32): two an SM at most
  CompiledGraph wideGraph = lower(columnVariance(204800, 32), true, "parts=32");
  const ColumnSchedule &wide = wideGraph.detail->kernels[0].schedule.as<ColumnSchedule>();
  EXPECT_TRUE(wide.waits);
  EXPECT_EQ(wide.minBlocksPerSM, 2u);
  EXPECT_EQ(wide.grid, 200); // (each thread 32 positions or more: 204800 / 1024)
  EXPECT_FALSE(lower(columnVariance(204800, 32), true, "splits=1")
                   .detail->kernels[0]
                   .schedule.as<ColumnSchedule>()
                   .waits);
}

TEST(Schedule, SplitRowsWithArgReductionsOnShapesNobodyTunedFor) {
  // odd, prime, tiny and huge rows, 16-bit and f32, few and many: a split
  // row's blocks cover it exactly once; blocks that wait are all resident
  // (two per SM); long rows on fewer rows than SMs never run on one block
  // a row.
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int64_t rows : {1, 2, 7, 64, 131, 1000})
      for (int64_t cols : {1, 3, 1023, 50257, 128257, 1 << 20}) {
        if (rows * cols > (int64_t(1) << 26))
          continue;
        for (const Graph &g : {greedyDecode(rows, cols, t), [&] {
               Graph a("arg");
               a.output(argmax(a.input("x", t, {rows, cols}), 1), "i");
               return a;
             }()}) {
          for (bool reassociate : {true, false}) { // the greedy step rewritten, and as written
            CompiledGraph c = lower(g, true, "", reassociate);
            const CompiledKernel &k = c.detail->kernels.back();
            const RowSchedule *s = k.schedule.getIf<RowSchedule>();
            ASSERT_NE(s, nullptr) << g.name() << " " << rows << "x" << cols;
            std::string what = g.name() + " " + std::string(dtypeName(t)) + " " +
                               std::to_string(rows) + "x" + std::to_string(cols) +
                               (reassociate ? "" : " as written");
            int64_t kv = s->vectorsPerRow(cols);
            if (s->splits == 1) {
              EXPECT_FALSE(rows < 132 && kv >= 8 * int64_t(s->threadsPerRow) && s->threadsPerRow > 32)
                  << what << ": long rows on " << s->grid << " blocks";
              continue;
            }
            EXPECT_GE(s->chunk * s->splits, kv) << what;
            EXPECT_LT(s->chunk * (s->splits - 1), kv) << what;
            EXPECT_EQ(s->grid, rows * s->splits) << what;
            EXPECT_EQ(s->waits, k.lowered.passes > 1) << what;
            if (s->cluster > 1) { // many rows, each held over a cluster (no residency asked)
              EXPECT_TRUE(s->cached) << what;
              EXPECT_GE(rows, 132) << what;
            } else if (s->waits) {
              EXPECT_LE(s->grid, 2 * 132) << what;
            } else { // an argmax alone: one wave
              EXPECT_EQ(s->minBlocksPerSM, 2048 / s->threadsPerRow) << what;
              EXPECT_LE(s->grid, int64_t(s->minBlocksPerSM) * 132) << what;
            }
          }
        }
      }
}

TEST(Schedule, ConcatHalvesAtWholeVectorsAreReadAsVectors) {
  // rotary embedding on f16: each half of the row is 8 whole vectors, so
  // x at d + 64 and at d - 64 are read as vectors at the clamped first lane
  Graph g("rope");
  Tensor x = g.input("x", DType::F16, {8, 64, 4, 128});
  Tensor c = g.input("cos", DType::F16, {64, 1, 128});
  Tensor sn = g.input("sin", DType::F16, {64, 1, 128});
  Tensor rot = concat({-slice(x, 3, 64, 128), slice(x, 3, 0, 64)}, 3);
  g.output(x * c + rot * sn, "y");
  CompiledGraph cg = lower(g);
  const std::string &cuda = cg.detail->kernels[0].cuda;
  EXPECT_EQ(cg.detail->kernels[0].schedule.as<PointwiseSchedule>().vec, 8u);
  EXPECT_TRUE(contains(cuda, "mj_load(x_r1, x + ((vi / 16) * 128 + mj_clamp((vi % 16) * 8, 56) + 64));")) << cuda;
  EXPECT_TRUE(contains(cuda, "mj_load(x_r2, x + ((vi / 16) * 128 + mj_clamp((vi % 16) * 8 - 64, 56)));")) << cuda;
  EXPECT_FALSE(contains(cuda, "x_r1[0] =")) << cuda;
  // a cut at 20 is whole 4-wide vectors (f32) but not 8-wide ones (f16)
  for (DType t : {DType::F32, DType::F16}) {
    Graph h("cut");
    Tensor a = h.input("a", t, {16, 64});
    Tensor b = h.input("b", t, {16, 64});
    h.output(concat({slice(a, 1, 0, 20), slice(b, 1, 20, 64)}, 1) * 2.0, "y");
    std::string text = lower(h).detail->kernels[0].cuda;
    EXPECT_EQ(contains(text, "a_r[1] = a["), t == DType::F16) << text;
    EXPECT_EQ(contains(text, "mj_load(b__r, b_ + "), t == DType::F32) << text;
  }
}

/// log(sum(exp(x - max(x)))) over rows of `cols` f32: a logsumexp, one
/// pass with an online sum.
Graph logsumexp(int64_t rows, int64_t cols) {
  Graph g("lse");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  Tensor m = max(x, {1}, true);
  g.output(log(sum(exp(x - m), {1})) + m.reshape({rows}), "lse");
  return g;
}

TEST(Schedule, OnlineRowsLoadVectorsAhead) {
  // cross-entropy's logsumexp over rows of 32000: each of 256 threads loads
  // four of its vectors before the work on them, the online sum takes their
  // sixteen values at once, and the max is the online sum's own
  CompiledGraph c = lower(logsumexp(8192, 32000));
  const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(s.ahead, 4u);
  EXPECT_FALSE(s.cached);
  const std::string &cuda = c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(cuda, "for (; kb + 768 < 8000; kb += 1024) {")) << cuda;
  EXPECT_TRUE(contains(cuda, "_in[16]; // the group's values for the online sum")) << cuda;
  EXPECT_TRUE(contains(cuda, "; // the max the online sum is relative to")) << cuda;
  EXPECT_FALSE(contains(cuda, " = mj_max(")) << cuda;
  // ahead=1: one vector at a time
  CompiledGraph one = lower(logsumexp(8192, 32000), true, "ahead=1");
  EXPECT_EQ(one.detail->kernels[0].schedule.as<RowSchedule>().ahead, 1u);
  EXPECT_FALSE(contains(one.detail->kernels[0].cuda, "kb")) << one.detail->kernels[0].cuda;
  // a row read again in each pass groups its loads too (a softmax's rows of
  // 50257, split or not); one pass of light work keeps one vector at a time
  // unless asked; rows held in registers have no loop to group
  EXPECT_EQ(lower(softmax(256, 50257)).detail->kernels[0].schedule.as<RowSchedule>().ahead, 4u);
  EXPECT_EQ(lowerAsWritten(greedyDecode(64, 128256)).detail->kernels[0].schedule.as<RowSchedule>().ahead, 4u);
  EXPECT_EQ(lower(softmax(256, 50257), true, "ahead=1").detail->kernels[0].schedule.as<RowSchedule>().ahead, 1u);
  EXPECT_EQ(lower(rowSum(2048, 131072)).detail->kernels[0].schedule.as<RowSchedule>().ahead, 1u);
  EXPECT_EQ(lower(rowSum(2048, 131072), true, "ahead=4").detail->kernels[0].schedule.as<RowSchedule>().ahead, 4u);
  EXPECT_EQ(lower(softmax(4096, 1024), true, "ahead=4").detail->kernels[0].schedule.as<RowSchedule>().ahead, 1u);
  // a thread with fewer than four vectors loads all it has
  EXPECT_EQ(lower(logsumexp(8192, 256), true, "cached=0").detail->kernels[0].schedule.as<RowSchedule>().ahead, 2u);
  EXPECT_TRUE(contains(compileErrorOf(logsumexp(64, 4096), "ahead=17"), "ahead must be 1..16"));
}

TEST(Schedule, RowsThatDoNotFillABlockAreGuarded) {
  CompiledGraph c = lower(softmax(1001, 256)); // 1001 rows, 4 per block
  EXPECT_NE(1001 % c.detail->kernels[0].schedule.as<RowSchedule>().rowsPerBlock, 0u);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "const bool rowValid = rowRaw < 1001;")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, OddRowsStartMidVector) {
  // 50257 and 3001 divide by no vector width: the vectors are aligned to
  // memory, the lanes outside each row masked.
  for (int64_t cols : {50257, 3001, 1023}) {
    CompiledGraph c = lower(softmax(64, cols));
    const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
    EXPECT_EQ(s.vec, 4u) << cols;
    ASSERT_TRUE(s.alignedTo.has_value()) << cols;
    EXPECT_EQ(s.vectorsPerRow(cols), (cols + 6) / 4) << cols;
    const std::string &cuda = c.detail->kernels[0].cuda;
    EXPECT_TRUE(contains(cuda, "const int lead = (int)((row * " + std::to_string(cols) + ") % 4);"))
        << cuda;
    EXPECT_TRUE(contains(cuda, "mj_store_row(y_out + (row * " + std::to_string(cols) + " + k0)"))
        << cuda;
    EXPECT_TRUE(contains(cuda, "_acc = mj_max(")) << cuda;
    EXPECT_TRUE(contains(cuda, "if (inRow) ")) << cuda;
  }
  // 16-bit rows take 8-wide vectors
  EXPECT_EQ(lower(softmax(64, 3001, DType::BF16)).detail->kernels[0].schedule.as<RowSchedule>().vec, 8u);
  // rows of even length keep their exact vectors; short odd rows stay scalar
  EXPECT_FALSE(lower(softmax(64, 1022)).detail->kernels[0].schedule.as<RowSchedule>().alignedTo);
  EXPECT_EQ(lower(softmax(64, 1022)).detail->kernels[0].schedule.as<RowSchedule>().vec, 2u);
  CompiledGraph shortGraph = lower(rowSum(300, 33));
  const RowSchedule &shortRows = shortGraph.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(shortRows.vec, 1u);
  EXPECT_FALSE(shortRows.alignedTo);
  // a row's last vector may start past the tensor's end: where that needs
  // more than 32 bits the rows stay scalar, unless the kernel has 64-bit indices
  CompiledGraph edge = lower(rowSum(1, 2147483647));
  EXPECT_FALSE(edge.detail->kernels[0].lowered.index64);
  EXPECT_FALSE(edge.detail->kernels[0].schedule.as<RowSchedule>().alignedTo);
  CompiledGraph wide = lower(rowSum(3, 1000000001));
  EXPECT_TRUE(wide.detail->kernels[0].lowered.index64);
  EXPECT_TRUE(wide.detail->kernels[0].schedule.as<RowSchedule>().alignedTo);
  // a vec override that does not divide contiguous rows starts them mid-vector too
  EXPECT_TRUE(lower(rowSum(64, 1001), true, "vec=2").detail->kernels[0].schedule.as<RowSchedule>().alignedTo);
}

TEST(Schedule, SoftmaxRowsReadFromDramRunOnline) {
  // Rows of 393216 floats (1.5 MB, KernelBench's softmax): the rows the
  // resident blocks read at once hold far more than the L2, so each pass
  // reads them from DRAM, and the online sum saves one read of every row.
  for (int64_t rows : {512, 4096, 128}) {
    CompiledGraph c = lower(softmax(rows, 393216));
    EXPECT_EQ(c.detail->kernels[0].lowered.passes, 2) << rows;
    EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_online_exp_sum(")) << rows;
    EXPECT_EQ(lower(softmax(rows, 393216), true, "online=0").detail->kernels[0].lowered.passes, 3);
  }
  // Rows re-read from the L2 keep their passes: a vocabulary's (f32 and
  // bf16), few long rows split over blocks (32 MB in all), rows held in
  // registers.
  Graph vocab("vocab");
  Tensor h = vocab.input("h", DType::BF16, {2048, 50257});
  vocab.output(softmax(h.cast(DType::F32), 1).cast(DType::BF16), "p");
  for (const Graph &g : {softmax(2048, 50257), softmax(256, 50257), vocab, softmax(8, 1 << 20),
                         softmax(1024, 32768)})
    EXPECT_EQ(lower(g).detail->kernels[0].lowered.passes, 3) << g.name();
}

TEST(Schedule, SumsOfExpOfTheMaxsInputRunOnline) {
  // online=1 on a softmax: the max and the sum of exp(x - max) in one pass,
  // then the stores; bf16 values computed in f32 too, not bf16 arithmetic
  // (its exps round)
  Graph wide("wide");
  Tensor h = wide.input("h", DType::BF16, {256, 65536});
  wide.output(softmax(h.cast(DType::F32), 1).cast(DType::BF16), "p");
  for (const Graph &g : {softmax(256, 65536), softmax(4096, 1000), wide}) {
    CompiledGraph c = lower(g, true, "online=1");
    EXPECT_EQ(c.detail->kernels[0].lowered.passes, 2) << g.name();
    EXPECT_TRUE(llvm::any_of(c.detail->kernels[0].lowered.reductions,
                             [](const KReduction &r) { return r.onlineMax >= 0; }));
    EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_online_exp_sum(")) << c.detail->kernels[0].cuda;
    // by default a softmax keeps its passes: its stores read the row again anyway
    EXPECT_EQ(lower(g).detail->kernels[0].lowered.passes, 3) << g.name();
  }
  EXPECT_EQ(lower(softmax(256, 65536, DType::BF16), true, "online=1").detail->kernels[0].lowered.passes, 3);
  // logsumexp: one pass over the row in all, nothing kept in registers
  Graph lse("lse");
  Tensor x = lse.input("x", DType::F32, {8192, 32000});
  Tensor m = max(x, {1}, true);
  lse.output(log(sum(exp(x - m), {1})) + m.reshape({8192}), "lse");
  CompiledGraph one = lower(lse);
  EXPECT_EQ(one.detail->kernels[0].lowered.passes, 1);
  EXPECT_FALSE(one.detail->kernels[0].schedule.as<RowSchedule>().cached);
  EXPECT_TRUE(contains(one.detail->kernels[0].cuda, "mj_online_exp_sum(")) << one.detail->kernels[0].cuda;
  EXPECT_EQ(one.detail->kernels[0].schedule.as<RowSchedule>().threadsPerRow, 256u);
  // online=0 keeps the sum in a pass of its own
  EXPECT_EQ(lower(softmax(256, 65536), true, "online=0").detail->kernels[0].lowered.passes, 3);
  EXPECT_EQ(lower(lse, true, "online=0").detail->kernels[0].lowered.passes, 2);
  // the exp of another tensor minus the max, or a column softmax: as written
  Graph other("other");
  Tensor a = other.input("a", DType::F32, {64, 4096});
  Tensor b = other.input("b", DType::F32, {64, 4096});
  other.output(sum(exp(b - max(a, {1}, true)), {1}), "s");
  EXPECT_EQ(lower(other).detail->kernels[0].lowered.passes, 2);
  Graph columns("columns");
  Tensor y = columns.input("y", DType::F32, {4096, 512});
  columns.output(softmax(y, 0), "p");
  EXPECT_EQ(lower(columns).detail->kernels[0].lowered.passes, 3);
}

/// (x - mean(x)) * rsqrt(mean((x - mean(x))^2) + eps) over rows, as the
/// torch backend writes every norm.
Graph normRows(int64_t rows, int64_t cols) {
  Graph g("norm");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  Tensor d = x - mean(x, {1}, true);
  g.output(d * rsqrt(mean(d * d, {1}, true) + 1e-5), "y");
  return g;
}

bool keepsVarianceOnline(const CompiledGraph &c) {
  return llvm::any_of(c.detail->kernels[0].lowered.reductions,
                      [](const KReduction &r) { return r.welfordMean >= 0; });
}

TEST(Schedule, NormRowsReadFromDramKeepTheirVarianceOnline) {
  // Instance norm's rows of 262144 floats (1 MB), 512 or 1000 of them, 896
  // rows of 524288 (group norm), and few long rows split over the blocks
  // of the grid (128 of 262144, 16 of 4194304): the resident blocks' rows
  // hold more than the L2, so each pass reads them from DRAM; Welford's
  // update sums the squared deviations in the mean's pass, one read of
  // every row fewer. Split rows pass their triples between their blocks.
  // (By default the first two are held over clusters instead,
  // Schedule.ManyLongRowsAreHeldOverAClusterByRule; rowcluster=1 keeps a
  // block a row.)
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{512, 262144}, {1000, 262144}, {896, 524288},
                            {128, 262144}, {16, 1 << 22}}) {
    CompiledGraph c = lower(normRows(rows, cols), true, "rowcluster=1");
    EXPECT_EQ(c.detail->kernels[0].lowered.passes, 2) << rows;
    EXPECT_TRUE(keepsVarianceOnline(c)) << rows;
    EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_welford_add(")) << rows;
    EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_block_reduce_welford<")) << rows;
    // two vectors ahead, not four: the merges' registers
    EXPECT_EQ(c.detail->kernels[0].schedule.getIf<RowSchedule>()->ahead, 2u) << rows;
    EXPECT_EQ(lower(normRows(rows, cols), true, "online=0,rowcluster=1").detail->kernels[0].lowered.passes, 3);
  }
  std::string split = lower(normRows(16, 1 << 22)).detail->kernels[0].cuda;
  EXPECT_TRUE(contains(split, "mj_row_barrier(")) << split;
  EXPECT_TRUE(contains(split, "_n = lane < ")) << split; // each block's count read back
  // Rows read again from the L2 or held in registers keep their passes.
  for (const Graph &g : {normRows(4096, 1024), normRows(2048, 32000)}) {
    CompiledGraph c = lower(g);
    EXPECT_EQ(c.detail->kernels[0].lowered.passes, 3) << g.name();
    EXPECT_FALSE(keepsVarianceOnline(c));
  }
  // online=1 asks for it: rows of a warp (the warp's combine), odd rows (one
  // element a push); the variance of torch.var (a Sum) too.
  for (const Graph &g : {normRows(4096, 1000), normRows(4096, 1001), normRows(64, 96)}) {
    CompiledGraph c = lower(g, true, "online=1");
    EXPECT_EQ(c.detail->kernels[0].lowered.passes, 2) << g.name();
    EXPECT_TRUE(keepsVarianceOnline(c)) << g.name();
  }
  // rows that start mid-vector merge whole vectors and push the lanes at
  // their ends; vectors of one element push each
  EXPECT_TRUE(contains(lower(normRows(4096, 1001), true, "online=1").detail->kernels[0].cuda,
                       "mj_welford_add_row("));
  EXPECT_TRUE(contains(lower(normRows(4096, 1001), true, "online=1,vec=1").detail->kernels[0].cuda,
                       "mj_welford_push("));
  EXPECT_TRUE(contains(lower(normRows(64, 96), true, "online=1").detail->kernels[0].cuda,
                       "mj_warp_reduce_welford<"));
  Graph var("var");
  Tensor v = var.input("v", DType::F32, {300, 5000});
  Tensor dv = v - mean(v, {1}, true);
  var.output(sum(dv * dv, {1}) / 4999.0, "s");
  CompiledGraph cv = lower(var, true, "online=1");
  EXPECT_EQ(cv.detail->kernels[0].lowered.passes, 1);
  EXPECT_TRUE(keepsVarianceOnline(cv));
  // By default a variance alone whose second pass reads its rows from the
  // L2 or registers keeps it: the update costs more than that read.
  EXPECT_FALSE(keepsVarianceOnline(lower(var)));
  Graph vocab("vocab_var");
  Tensor w = vocab.input("w", DType::F32, {2048, 32000});
  Tensor dw = w - mean(w, {1}, true);
  vocab.output(sum(dw * dw, {1}), "s");
  EXPECT_EQ(lower(vocab).detail->kernels[0].lowered.passes, 2);
  // Not a variance: squares about another row's mean, about a max, or of
  // a difference the other way round are summed in their own pass.
  Graph other("other");
  Tensor a = other.input("a", DType::F32, {64, 4096});
  Tensor b = other.input("b", DType::F32, {64, 4096});
  Tensor db = b - mean(a, {1}, true), dm = a - max(a, {1}, true);
  other.output(sum(db * db, {1}), "s");
  other.output(sum(dm * dm, {1}), "t");
  CompiledGraph co = lower(other, true, "online=1");
  for (const CompiledKernel &k : co.detail->kernels)
    for (const KReduction &r : k.lowered.reductions)
      EXPECT_LT(r.welfordMean, 0) << r.name;
}

TEST(Schedule, RowsThatDoNotFitAWarpsRegistersTakeMoreThreads) {
  // rmsnorm of f16 rows of 4096: a warp would hold 128 values a thread and
  // read the row twice; 64 threads hold it in registers.
  Graph g("rms");
  Tensor x = g.input("x", DType::F16, {16384, 4096});
  g.output(x * rsqrt(mean(x * x, {1}, true) + 1e-6), "y");
  CompiledGraph c = lower(g);
  const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(s.threadsPerRow, 64u);
  EXPECT_TRUE(s.cached);
}

/// A row held in registers keeps what a later pass would compute again from
/// it: softmax's exp(x - max), computed in the sum's pass, is read back in
/// the store's; the store's pass reads no x and computes no exp. A bf16 row
/// (its registers hold bf16) and a row not held (cached=0) compute it again.
TEST(Schedule, CachedRowsKeepTheExpForTheStore) {
  CompiledGraph c = lower(softmax(2048, 32000));
  ASSERT_TRUE(c.detail->kernels[0].schedule.as<RowSchedule>().cached);
  const std::string &cuda = c.detail->kernels[0].cuda;
  size_t store = cuda.find("// pass 2: store");
  ASSERT_NE(store, std::string::npos) << cuda;
  EXPECT_TRUE(contains(cuda.substr(0, store), "; // kept for the passes after this one, in "
                                               "place of %x"))
      << cuda;
  std::string last = cuda.substr(store);
  EXPECT_TRUE(contains(last, " = x_c[it][j]; // %")) << last;
  EXPECT_TRUE(contains(last, " = exp ")) << last; // (in the comment only)
  EXPECT_TRUE(contains(last, "(kept from pass 1)")) << last;
  EXPECT_FALSE(contains(last, "expf")) << last;
  EXPECT_FALSE(contains(last, "x_v")) << last;
  EXPECT_FALSE(contains(lower(softmax(2048, 32000, DType::BF16)).detail->kernels[0].cuda, "kept"));
  EXPECT_FALSE(contains(lower(softmax(2048, 32000), true, "cached=0").detail->kernels[0].cuda, "kept"));
}

/// Two loads whose stashes interact: the second (t, kept in y's registers
/// from pass 1) would leave x read in one pass only, where the first (e,
/// kept in x's) needs x's registers; only stashes that keep every load held
/// are made (a review found the compile aborting here).
TEST(Schedule, StashesKeepEveryLoadTheyUseHeld) {
  Graph g("two");
  Tensor x = g.input("x", DType::F32, {2048, 4096});
  Tensor y = g.input("y", DType::F32, {2048, 4096});
  Tensor t = (x + y) * sum(y, {1}, true);
  Tensor e = exp(t - max(t, {1}, true));
  g.output(e / sum(e, {1}, true), "out");
  CompiledGraph c = lower(g);
  ASSERT_EQ(c.detail->kernels.size(), 1u) << c.fusedText();
  ASSERT_TRUE(c.detail->kernels[0].schedule.as<RowSchedule>().cached) << c.fusedText();
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "kept for the passes after this one"));
}

// ---- overrides

TEST(Schedule, OverrideThreadsPerRow) {
  CompiledGraph c = lower(softmax(4096, 1024), true, "tpr=64");
  const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
  EXPECT_EQ(s.threadsPerRow, 64u);
  EXPECT_EQ(s.block, 64u);
  EXPECT_EQ(s.rowsPerBlock, 1u);
  EXPECT_EQ(s.grid, 4096);
  EXPECT_EQ(c.program.kernels[0].block, 64u);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_block_reduce<MjMax, 64>")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, OverridePointwiseBlockAndItems) {
  CompiledGraph c = lower(unaryGraph(DType::F32, {1 << 20}), true, "block=128,items=2");
  const PointwiseSchedule &s = c.detail->kernels[0].schedule.as<PointwiseSchedule>();
  EXPECT_EQ(s.block, 128u);
  EXPECT_EQ(s.items, 2u);
  EXPECT_EQ(s.grid, (1 << 18) / 256);
  EXPECT_EQ(c.program.kernels[0].grid, s.grid);
}

TEST(Schedule, OverridesThatDoNotApplyAreIgnored) {
  CompiledGraph plain = lower(unaryGraph(DType::F32, {1 << 20}));
  CompiledGraph c = lower(unaryGraph(DType::F32, {1 << 20}), true, "tpr=64,parts=4");
  EXPECT_EQ(c.detail->kernels[0].cuda, plain.detail->kernels[0].cuda);
}

TEST(Schedule, OverrideErrors) {
  Graph g = softmax(4096, 1000);
  EXPECT_EQ(
      compileErrorOf(g, "bogus=1").rfind("schedule override: unknown key 'bogus' (known: ", 0), 0u);
  EXPECT_EQ(compileErrorOf(g, "tpr=3"), "schedule override: tpr must be a power of two up to 1024");
  EXPECT_EQ(compileErrorOf(g, "tpr=2048"),
            "schedule override: tpr must be a power of two up to 1024");
  EXPECT_EQ(compileErrorOf(g, "tpr=x"), "schedule override: 'tpr=x' needs a non-negative integer");
  EXPECT_EQ(compileErrorOf(g, "tpr=-4"),
            "schedule override: 'tpr=-4' needs a non-negative integer");
  EXPECT_EQ(compileErrorOf(g, "vec=3"), "schedule override: vec must be a power of two up to 16");
  EXPECT_EQ(compileErrorOf(outerInnerSum(3, 7, 1001), "vec=2"),
            "schedule override: vec=2 does not divide the row length 3003, and the rows are not "
            "contiguous");
  EXPECT_EQ(compileErrorOf(unaryGraph(DType::F32, {1024}), "block=100"),
            "schedule override: block must be a multiple of 32 up to 1024");
  EXPECT_EQ(compileErrorOf(unaryGraph(DType::F32, {1024}), "items=0"),
            "schedule override: items must be 1..16");
}

/// The CUDA cores' f32 keys: 128 threads of 8x16 outputs (tn=16, two
/// blocks an SM) and three or four stages copied by cp.async (cpasync);
/// combinations that cannot be built are refused, and the tensor-core
/// templates' keys (bk, stages) leave the CUDA cores' product as it is.
TEST(Schedule, F32CudaCoreKeys) {
  Graph g("mm");
  g.output(matmul(g.input("a", DType::F32, {4096, 4096}), g.input("b", DType::F32, {4096, 4096})),
           "c");
  auto simt = [&](const std::string &keys) {
    return lower(g, true, keys).detail->kernels.back().schedule.as<MatmulSimtSchedule>();
  };
  MatmulSimtSchedule d = simt("");
  EXPECT_EQ(d.tn, 8u);
  EXPECT_EQ(d.block, 256u);
  EXPECT_EQ(d.stages, 2u);
  EXPECT_EQ(d.bk, 8u);
  MatmulSimtSchedule mma = simt("bk=64,stages=6");
  EXPECT_EQ(mma.bk, 8u);
  EXPECT_EQ(mma.stages, 2u);
  MatmulSimtSchedule wide = simt("tn=16");
  EXPECT_EQ(wide.tn, 16u);
  EXPECT_EQ(wide.block, 128u);
  EXPECT_EQ(wide.minBlocksPerSM, 2u);
  EXPECT_EQ(simt("cpasync=3").stages, 3u);
  EXPECT_EQ(simt("cpasync=0").stages, 2u);
  std::string text = lower(g, true, "cpasync=3").fusedText();
  EXPECT_NE(text.find("3 stages through cp.async"), std::string::npos) << text;
  std::string cuda = lower(g, true, "cpasync=4").cudaText();
  EXPECT_NE(cuda.find("mj_cp_async4(&As[s][c + j][r]"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("mj_cp_async_wait<2>();"), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("Anext"), std::string::npos) << cuda;
  EXPECT_EQ(compileErrorOf(g, "tn=12"), "schedule override: tn must be 8 or 16");
  EXPECT_EQ(compileErrorOf(g, "tile=64,tn=16"),
            "schedule override: tn applies to the 128x128 tile only (tile=128)");
  // a small product beside it keeps its own tile's outputs a thread
  Graph small("small");
  small.output(
      matmul(small.input("a", DType::F32, {128, 128}), small.input("b", DType::F32, {128, 128})), "c");
  MatmulSimtSchedule s16 =
      lower(small, true, "tn=16").detail->kernels.back().schedule.as<MatmulSimtSchedule>();
  EXPECT_EQ(s16.bm, 16u);
  EXPECT_EQ(s16.tn, 1u);
  // two blocks an SM in the launch bounds for every tile but 256x128
  EXPECT_EQ(s16.minBlocksPerSM, 2u);
  EXPECT_EQ(d.minBlocksPerSM, 2u);
  EXPECT_EQ(simt("tile=64").minBlocksPerSM, 2u);
  EXPECT_EQ(simt("tile=32").minBlocksPerSM, 2u);
  // the stages' static shared memory counts in the blocks an SM holds
  EXPECT_EQ(simt("tile=16,cpasync=4").staticSharedBytes(), 4u * 64 * 40 * 4);
  EXPECT_EQ(compileErrorOf(g, "cpasync=2"), "schedule override: cpasync must be 0, 3 or 4");
  // cp.async with the next step's fragments read during this one's
  // multiply-adds: the wait and barrier in the last step of a slice
  MatmulSimtSchedule both = simt("cpasync=3,frag=2");
  EXPECT_EQ(both.stages, 3u);
  EXPECT_EQ(both.fragBuffers, 2u);
  std::string pipelined = lower(g, true, "cpasync=3,frag=2").cudaText();
  EXPECT_NE(pipelined.find("mj_cp_async_wait<1>(); // slice t + 1 has landed"), std::string::npos)
      << pipelined;
  EXPECT_NE(pipelined.find("fragments((p + 1) % 2, (t + 1) % 3, 0);"), std::string::npos)
      << pipelined;
}

/// x @ W.T at 4096^3 in f32, nn.Linear's layout.
Graph linearF32(int64_t size) {
  Graph g("lin");
  Tensor x = g.input("x", DType::F32, {size, size});
  Tensor w = g.input("w", DType::F32, {size, size});
  g.output(matmul(x, w.permute({1, 0})), "y");
  return g;
}

MatmulSimtSchedule simtSchedule(const Graph &g, const std::string &keys) {
  return lower(g, true, keys).detail->kernels.back().schedule.as<MatmulSimtSchedule>();
}

/// The 256x128 tile: by hand only (the rule keeps 128x128), 256 threads of
/// 8x16 outputs, one block an SM; four stages do not fit 48 KiB.
TEST(Schedule, F32WideTile) {
  Graph g = linearF32(4096);
  EXPECT_EQ(simtSchedule(g, "").bm, 128u);
  MatmulSimtSchedule wide = simtSchedule(g, "tile=256");
  EXPECT_EQ(wide.bm, 256u);
  EXPECT_EQ(wide.bn, 128u);
  EXPECT_EQ(wide.tn, 16u);
  EXPECT_EQ(wide.block, 256u);
  EXPECT_EQ(wide.minBlocksPerSM, 1u);
  EXPECT_FALSE(wide.kRowsA || wide.kRowsB);
  EXPECT_EQ(compileErrorOf(g, "tile=256,cpasync=4"),
            "schedule override: cpasync=4: 4 stages of a 256x128x8 tile need 50176 bytes of "
            "static shared memory, more than 48 KiB");
}

/// Tiles kept along k (krows=1) for threads of 8x16 outputs: both operands
/// of x @ W.T, only A of a row-major product, none of a product whose
/// operands are not read by float4s along k; refused on a tile of 8x8 or
/// with frag=2 asked for by hand. (The CUDA: tests/lit/matmul_f32_krows.mj.)
TEST(Schedule, F32TilesKeptAlongK) {
  Graph g = linearF32(4096);
  MatmulSimtSchedule kept = simtSchedule(g, "tile=256,cpasync=3,krows=1");
  EXPECT_TRUE(kept.kRowsA);
  EXPECT_TRUE(kept.kRowsB);
  // A [256][8] and B [128][8 + 4] in three stages
  EXPECT_EQ(kept.staticSharedBytes(), 3u * (256 * 8 + 128 * 12) * 4);
  MatmulSimtSchedule narrow = simtSchedule(g, "tn=16,krows=1");
  EXPECT_TRUE(narrow.kRowsA && narrow.kRowsB);
  Graph mm("mm");
  mm.output(matmul(mm.input("a", DType::F32, {4096, 4096}), mm.input("b", DType::F32, {4096, 4096})),
            "c");
  MatmulSimtSchedule rowMajor = simtSchedule(mm, "tn=16,krows=1");
  EXPECT_TRUE(rowMajor.kRowsA);
  EXPECT_FALSE(rowMajor.kRowsB);
  Graph t("t");
  t.output(matmul(t.input("a", DType::F32, {4096, 4096}).permute({1, 0}),
                  t.input("b", DType::F32, {4096, 4096})),
           "c");
  MatmulSimtSchedule none = simtSchedule(t, "tn=16,krows=1");
  EXPECT_FALSE(none.kRowsA || none.kRowsB);
  EXPECT_EQ(compileErrorOf(g, "krows=2"), "schedule override: krows must be 0 or 1");
  EXPECT_EQ(compileErrorOf(g, "tile=128,krows=1"),
            "schedule override: krows=1 needs threads of 8x16 outputs (tile=256, or tn=16 on the "
            "128x128 tile) and frag=1; this tile's threads have 8x8 and frag=1");
  // a tile the rule picked without threads of 8x16 stays as it is: the
  // 128x128 tile of 8x8, a small product's 16x16
  MatmulSimtSchedule ruled = simtSchedule(g, "krows=1");
  EXPECT_FALSE(ruled.kRowsA || ruled.kRowsB);
  Graph small("small");
  small.output(
      matmul(small.input("a", DType::F32, {128, 128}), small.input("b", DType::F32, {128, 128})), "c");
  EXPECT_EQ(simtSchedule(small, "tn=16,krows=1").bm, 16u);
  EXPECT_EQ(compileErrorOf(g, "tile=256,krows=1,frag=2"),
            "schedule override: krows=1 needs threads of 8x16 outputs (tile=256, or tn=16 on the "
            "128x128 tile) and frag=1; this tile's threads have 8x16 and frag=2");
}

/// The rule's deeper pipeline on the CUDA cores (cp.async in 4 stages,
/// frag=2) where one matrix's tiles fill a wave of two blocks an SM and an
/// operand read by float4s has rows that are not whole 128-byte lines (the
/// name's case), or both operands are copied as stored (A [k, m], B [k, n]):
/// not for other layouts in whole lines, not for few tiles, not where a key
/// is set by hand.
TEST(Schedule, F32DeeperPipelineWhereRowsAreNotWholeLines) {
  auto simt = [](int64_t m, int64_t n, int64_t k, bool linear, const std::string &keys = "") {
    Graph g("mm");
    Tensor a = g.input("a", DType::F32, {m, k});
    Tensor b = linear ? g.input("w", DType::F32, {n, k}).permute({1, 0})
                      : g.input("b", DType::F32, {k, n});
    g.output(matmul(a, b), "c");
    CompiledGraph c = lower(g, true, keys);
    for (const auto &kernel : c.detail->kernels) // (a split product's sum comes after it)
      if (const MatmulSimtSchedule *s = kernel.schedule.getIf<MatmulSimtSchedule>())
        return *s;
    ADD_FAILURE() << "no matmul kernel";
    return MatmulSimtSchedule{};
  };
  auto deep = [](const MatmulSimtSchedule &s) { return s.stages == 4 && s.fragBuffers == 2; };
  EXPECT_TRUE(deep(simt(4096, 4096, 4100, false)));  // A's rows: 16400 bytes
  EXPECT_TRUE(deep(simt(2048, 6144, 4104, false)));  // 16416 bytes
  EXPECT_TRUE(deep(simt(4096, 4100, 4096, false)));  // B's rows
  EXPECT_TRUE(deep(simt(3000, 3000, 3000, true)));   // x and nn.Linear's W, 12000 bytes
  EXPECT_FALSE(deep(simt(4096, 4096, 4096, false))); // whole lines
  EXPECT_FALSE(deep(simt(8192, 2944, 5920, false)));
  EXPECT_FALSE(deep(simt(4096, 4096, 4096, true)));
  EXPECT_FALSE(deep(simt(1024, 1024, 4100, false))); // 64 tiles
  EXPECT_FALSE(deep(simt(2048, 2048, 4100, false))); // 256 tiles: under two an SM
  EXPECT_FALSE(deep(simt(4096, 4096, 4100, false, "tn=16")));
  EXPECT_EQ(simt(4096, 4096, 4100, false, "cpasync=3").fragBuffers, 1u);
  EXPECT_EQ(simt(4096, 4096, 4100, false, "frag=2").stages, 2u);
  EXPECT_EQ(simt(4096, 4096, 4100, false, "cpasync=0").stages, 2u);
  // tn=8 is the default's own value
  EXPECT_TRUE(deep(simt(4096, 4096, 4100, false, "tn=8")));
  // A stored transposed ([k, m], rows of 4100 floats) and B row-major
  Graph t("t");
  t.output(matmul(t.input("a", DType::F32, {4096, 4100}).permute({1, 0}),
                  t.input("b", DType::F32, {4096, 4100})),
           "c");
  MatmulSimtSchedule transposed = simtSchedule(t, "");
  EXPECT_TRUE(transposed.vecAT);
  EXPECT_TRUE(deep(transposed));
  // Both operands copied as stored (A [k, m], B [k, n]): whole lines too;
  // not B stored [n, k], nor under two tiles an SM, nor by hand
  auto weightGrad = [](int64_t m, int64_t n, int64_t k, bool bT, const std::string &keys) {
    Graph g("wg");
    Tensor b = bT ? g.input("b", DType::F32, {n, k}).permute({1, 0})
                  : g.input("b", DType::F32, {k, n});
    g.output(matmul(g.input("a", DType::F32, {k, m}).permute({1, 0}), b), "c");
    return simtSchedule(g, keys);
  };
  EXPECT_TRUE(deep(weightGrad(4096, 4096, 4096, false, "")));
  EXPECT_TRUE(deep(weightGrad(2688, 2720, 96, false, "")));
  EXPECT_FALSE(deep(weightGrad(4096, 4096, 4096, true, "")));
  EXPECT_FALSE(deep(weightGrad(2048, 2048, 4096, false, "")));
  EXPECT_FALSE(deep(weightGrad(4096, 4096, 4096, false, "frag=1")));
}

TEST(Schedule, VectorOverrideWiderThanSixteenBytesIsRefused) {
  // 32-byte vectors of f32 have no load instruction; refused up front.
  EXPECT_EQ(compileErrorOf(rowSum(4096, 1024), "vec=8"),
            "schedule override: vec=8 makes 32-byte accesses of this kernel's 4-byte elements; "
            "at most 16 bytes");
  EXPECT_NO_THROW(lower(unaryGraph(DType::BF16, {4096}), true, "vec=8"));
}

// ---- names and text

TEST(Schedule, KernelNamesSayTheScheduleAndTheOps) {
  EXPECT_EQ(lower(softmax(4096, 1024)).detail->kernels[0].name, "softmax_row_k0");
  Graph gelu("gelu");
  Tensor x = gelu.input("x", DType::F32, {1 << 20});
  gelu.output(0.5 * x * (1.0 + tanh(0.7978846 * (x + 0.044715 * x * x * x))), "y");
  EXPECT_EQ(lower(gelu).detail->kernels[0].name, "poi_mul_add_tanh_k0");
  CompiledGraph eager = lower(gelu, false);
  ASSERT_EQ(eager.detail->kernels.size(), 9u);
  EXPECT_EQ(eager.detail->kernels[0].name, "poi_mul_k0");
  EXPECT_EQ(eager.detail->kernels[8].name, "poi_mul_k8");
  Graph lse("lse");
  Tensor y = lse.input("x", DType::F32, {64, 128});
  Tensor m = max(y, {1}, true);
  lse.output(log(sum(exp(y - m), {1}, true)) + m, "l");
  EXPECT_EQ(lower(lse).detail->kernels[0].name, "logsumexp_row_k0");
  Graph copy("copy");
  copy.output(copy.input("x", DType::F32, {8}));
  EXPECT_EQ(lower(copy).detail->kernels[0].name, "copy_k0");
}

TEST(Schedule, NormalizationKernelNames) {
  Graph ln("ln");
  Tensor x = ln.input("x", DType::F32, {64, 256});
  Tensor d = x - mean(x, {1}, true);
  ln.output(d * rsqrt(mean(d * d, {1}, true) + 1e-5), "y");
  EXPECT_EQ(lower(ln).detail->kernels[0].name, "layernorm_row_k0");
  Graph rms("rms");
  Tensor z = rms.input("x", DType::F32, {64, 256});
  rms.output(z * rsqrt(mean(z * z, {1}, true) + 1e-6), "y");
  EXPECT_EQ(lower(rms).detail->kernels[0].name, "rmsnorm_row_k0");
}

TEST(Schedule, KernelSignatureAndComments) {
  CompiledGraph c = lower(unaryGraph(DType::F32, {1024}, OpKind::Exp));
  const std::string &s = c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(s, "extern \"C\" __global__ void __launch_bounds__(256) poi_exp_k0(const "
                          "float *__restrict__ x, float *__restrict__ y_out) {"))
      << s;
  EXPECT_TRUE(contains(s, "// %y = exp %x : f32[1024]")) << s;
  EXPECT_TRUE(contains(s, "// reads %x; writes %y")) << s;
  EXPECT_TRUE(contains(c.cudaText(), "---- end of preamble ----"));
  EXPECT_EQ(c.program.kernels[0].source.rfind(cudaPreamble(), 0), 0u);
}

TEST(Schedule, HalfTypesConvertAtLoadsAndStores) {
  CompiledGraph c = lower(unaryGraph(DType::BF16, {1024}, OpKind::Exp));
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_bf2f(")) << c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_f2bf(")) << c.detail->kernels[0].cuda;
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "const unsigned short *__restrict__ x")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, ValueNamesThatClashWithCKeywordsAreRenamed) {
  Graph g("names");
  Tensor x = g.input("int", DType::F32, {1024});
  Tensor y = exp(x).named("float");
  g.output((y * 2).named("out"));
  CompiledGraph c = lower(g);
  EXPECT_FALSE(contains(c.detail->kernels[0].cuda, "const float float =")) << c.detail->kernels[0].cuda;
  EXPECT_FALSE(contains(c.detail->kernels[0].cuda, "float *__restrict__ int,")) << c.detail->kernels[0].cuda;
}

TEST(Schedule, ValueNamesWithThePreamblePrefixAreRenamed) {
  // Found at 8a20cd2: a computed value named mj_... (a valid name) hung the
  // compiler: Emitter::unique appended 1, 2, 3... but kept looping while the
  // candidate started with "mj_". Reproduce with
  //   graph g(%x: f32[4]) { %mj_y = exp %x  return %mj_y }
  // and `minijit compile`. The compile runs in a child process here, so a
  // regression fails after 30 seconds instead of hanging the suite.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Graph g("names");
    Tensor x = g.input("x", DType::F32, {1024});
    g.output(exp(x).named("mj_y"));
    CompiledGraph c = lower(g);
    bool ok = !contains(c.detail->kernels[0].cuda, "const float mj_y =");
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  for (int waited = 0; waited < 300; ++waited) {
    if (::waitpid(child, &status, WNOHANG) == child) {
      ASSERT_TRUE(WIFEXITED(status));
      EXPECT_EQ(WEXITSTATUS(status), 0) << "a local named mj_y shadows the preamble's names";
      return;
    }
    ::usleep(100 * 1000);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  FAIL() << "compiling a value named mj_y did not finish in 30 seconds";
}

TEST(Schedule, OutputIsDeterministic) {
  Graph g = softmax(4096, 1024);
  CompiledGraph a = lower(g), b = lower(g);
  EXPECT_EQ(a.cudaText(), b.cudaText());
  EXPECT_EQ(a.fusedText(), b.fusedText());
}

TEST(Schedule, DescribeNamesTheTemplate) {
  EXPECT_EQ(describeSchedule(lower(unaryGraph(DType::F32, {1027})).detail->kernels[0].schedule),
            "pointwise: 256 threads per block, 4-wide vectors, 1 per thread, grid 1, scalar tail");
  EXPECT_EQ(describeSchedule(lower(rowSum(4096, 1024, 0)).detail->kernels[0].schedule),
            "outer column: 32 columns x 8 parts per block (256 threads), split over 16 blocks per "
            "32 columns (256 positions each), the last to finish combines them, grid 512");
  EXPECT_EQ(describeSchedule(lower(softmax(32768, 512)).detail->kernels[0].schedule)
                .rfind("inner row: a warp per row, ", 0),
            0u);
}

TEST(Schedule, AssumedDeviceIsAnH200) {
  DeviceProperties d = DeviceProperties::assumedH200();
  EXPECT_EQ(d.smCount, 132);
  EXPECT_EQ(d.arch(), "sm_90");
  EXPECT_FALSE(d.queried);
  CompiledGraph c = lower(unaryGraph(DType::F32, {8}));
  EXPECT_EQ(c.program.arch, "sm_90");
}

namespace {

/// The Hopper template's TMA descriptors, as the executable will encode
/// them: per operand the buffer, the dims (unit stride first), the strides
/// and the box, for each layout, a batch at a stride and one broadcast, and
/// the sm_90a target of the kernel while the program stays sm_90.
TEST(Schedule, HopperMatmulTensorMapsFollowTheLayouts) {
  struct Case {
    Shape a, b;
    bool aT, bT; ///< stored transposed, read through a permute
    std::vector<int64_t> aDims, aStrides, bDims, bStrides;
    std::vector<unsigned> aBox, bBox;
  };
  const Case cases[] = {
      // x @ W: A k-major, B n-major (64 x 64 boxes)
      {{4096, 1024}, {1024, 2048}, false, false, {1024, 4096}, {1024}, {2048, 1024}, {2048},
       {64, 128}, {64, 64}},
      // nn.Linear, x @ W.T: B k-major (one box of bn rows)
      {{512, 1024}, {1024, 768}, false, true, {1024, 512}, {1024}, {1024, 768}, {1024},
       {64, 128}, {64, 64}},
      // the weight gradient x.T @ dy: A m-major
      {{320, 2048}, {2048, 640}, true, false, {320, 2048}, {320}, {640, 2048}, {640},
       {64, 64}, {64, 64}},
      // batched at a stride; B shared by the batches (no third dim)
      {{6, 200, 136}, {6, 136, 72}, false, false, {136, 200, 6}, {136, 27200}, {72, 136, 6},
       {72, 9792}, {64, 128, 1}, {64, 64, 1}},
      {{6, 200, 136}, {136, 72}, false, false, {136, 200, 6}, {136, 27200}, {72, 136}, {72},
       {64, 128, 1}, {64, 64}},
  };
  for (const Case &c : cases) {
    Graph g("mm");
    auto operand = [&](const char *name, const Shape &s, bool transposed) {
      if (!transposed)
        return g.input(name, DType::F16, s);
      Shape stored = s;
      stored.setDim(s.rank() - 1, s.dim(s.rank() - 2));
      stored.setDim(s.rank() - 2, s.dim(s.rank() - 1));
      return transpose(g.input(name, DType::F16, stored));
    };
    g.output(matmul(operand("a", c.a, c.aT), operand("b", c.b, c.bT)), "c");
    CompiledGraph cg = lower(g);
    SCOPED_TRACE(cg.fusedText());
    ASSERT_EQ(cg.program.kernels.size(), 1u);
    const ProgramKernel &k = cg.program.kernels[0];
    EXPECT_EQ(cg.detail->kernels[0].schedule.kind(), ScheduleKind::MatmulWgmma);
    EXPECT_EQ(k.arch, "sm_90a");
    EXPECT_EQ(cg.program.arch, "sm_90");
    ASSERT_EQ(k.tensorMaps.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      const TensorMapSpec &t = k.tensorMaps[i];
      EXPECT_EQ(cg.program.buffers[t.buffer].name, i == 0 ? "a" : "b");
      EXPECT_EQ(t.dims, i == 0 ? c.aDims : c.bDims);
      EXPECT_EQ(t.strides, i == 0 ? c.aStrides : c.bStrides);
      std::vector<unsigned> box = i == 0 ? c.aBox : c.bBox;
      if (i == 1 && c.bT) // k-major B: one box of the tile's bn rows
        box[1] = cg.detail->kernels[0].schedule.as<MatmulWgmmaSchedule>().bn;
      EXPECT_EQ(t.box, box);
      EXPECT_EQ(t.offset, 0);
    }
  }
  // k = 1 (an outer product): each operand's single row or column has no
  // stride to speak of, so both are read along m and n, rows of 16 bytes.
  // (A 16-bit one read by an epilogue stays a product; else it is a
  // pointwise product, MatmulRewriteKind::OuterProduct.)
  Graph outer("outer");
  outer.output(relu(matmul(outer.input("a", DType::F16, {300, 1}),
                           outer.input("b", DType::F16, {1, 264})) *
                    0.5),
               "c");
  CompiledGraph o = lower(outer);
  ASSERT_EQ(o.detail->kernels[0].schedule.kind(), ScheduleKind::MatmulWgmma) << o.fusedText();
  const MatmulWgmmaSchedule &ow = o.detail->kernels[0].schedule.as<MatmulWgmmaSchedule>();
  EXPECT_FALSE(ow.a.kMajor);
  EXPECT_FALSE(ow.b.kMajor);
  EXPECT_EQ(ow.a.outerStride, 304);
  EXPECT_EQ(ow.b.outerStride, 264);
  EXPECT_TRUE(o.rewrites.empty()); // nothing padded
  // f32 and sm_80 keep their templates and take no descriptors
  Graph f("f32");
  f.output(matmul(f.input("a", DType::F32, {256, 256}), f.input("b", DType::F32, {256, 256})), "c");
  EXPECT_TRUE(lower(f).program.kernels[0].tensorMaps.empty());
  Graph h("f16");
  h.output(matmul(h.input("a", DType::F16, {256, 256}), h.input("b", DType::F16, {256, 256})), "c");
  CompileOptions opt;
  opt.compileKernels = false;
  opt.arch = "sm_80";
  CompiledGraph sm80 = compileGraph(h, opt);
  EXPECT_EQ(sm80.detail->kernels[0].schedule.kind(), ScheduleKind::MatmulMma);
  EXPECT_EQ(sm80.program.kernels[0].arch, "sm_80");
  EXPECT_TRUE(sm80.program.kernels[0].tensorMaps.empty());
}

/// The Hopper matmul's epilogue through shared memory: the rule's for 16-bit
/// products and TF32 ones of k <= 128, two 18 KiB buffers after the stages
/// (one stage fewer fits); stages asked for that leave no room drop the
/// rule's staging, and staged=1 with them is an error; tiles wide enough to
/// fill the SMs, narrower where whole rounds of the persistent grid take less.
TEST(Schedule, HopperEpilogueStagedAndTileRounds) {
  auto product = [](DType t, int64_t m, int64_t n, int64_t k) {
    Graph g("mm");
    g.output(matmul(g.input("a", t, {m, k}), g.input("b", t, {k, n})), "c");
    return g;
  };
  auto wgmma = [](const CompiledGraph &cg) {
    return cg.detail->kernels.back().schedule.as<MatmulWgmmaSchedule>();
  };
  MatmulWgmmaSchedule big = wgmma(lower(product(DType::F16, 4096, 4096, 4096)));
  EXPECT_TRUE(big.stagedEpilogue);
  EXPECT_EQ(big.bn, 256u);
  EXPECT_EQ(big.stages, 3u);
  EXPECT_EQ(big.sharedBytes, 3u * 49152 + 2 * MatmulWgmmaSchedule::kStagedBufferBytes + 1024);
  MatmulWgmmaSchedule direct = wgmma(lower(product(DType::F16, 4096, 4096, 4096), true, "staged=0"));
  EXPECT_FALSE(direct.stagedEpilogue);
  EXPECT_EQ(direct.stages, 4u);
  EXPECT_FALSE(wgmma(lower(product(DType::F16, 4096, 4096, 4096), true, "stages=4")).stagedEpilogue);
  EXPECT_THROW(lower(product(DType::F16, 4096, 4096, 4096), true, "stages=4,staged=1"), CompileError);
  // an n that is not a multiple of 4 (B stored transposed, k-major) is
  // staged too: the buffer read back in pairs (n even) or single columns
  // (n odd), a warp's 32 threads on consecutive ones
  for (int64_t n : {998, 999}) {
    SCOPED_TRACE(n);
    Graph odd("odd");
    odd.output(matmul(odd.input("a", DType::BF16, {512, 64}),
                      transpose(odd.input("b", DType::BF16, {n, 64}))),
               "c");
    EXPECT_TRUE(wgmma(lower(odd)).stagedEpilogue);
    std::string cuda = lower(odd).cudaText();
    EXPECT_NE(cuda.find("mj_warpgroup_sync(c);"), std::string::npos);
    EXPECT_NE(cuda.find(n % 2 ? "const float mj_v = mj_out[row * 72 + mj_q];"
                              : "const float2 mj_v = *reinterpret_cast<const float2 *>"),
              std::string::npos)
        << cuda;
    EXPECT_FALSE(wgmma(lower(odd, true, "staged=0")).stagedEpilogue);
  }
  EXPECT_NE(lower(product(DType::F16, 4096, 4096, 4096)).cudaText().find("mj_warpgroup_sync(c);"),
            std::string::npos);
  // n odd past a k of 2 KiB a row: staged where the buffers leave four
  // stages or more (a 128-wide tile), not in 128x256 tiles (3 stages left)
  MatmulWgmmaSchedule oddWide = wgmma(lower(product(DType::F16, 4097, 4095, 4093)));
  EXPECT_EQ(oddWide.bn, 256u);
  EXPECT_FALSE(oddWide.stagedEpilogue);
  EXPECT_EQ(oddWide.stages, 4u);
  EXPECT_TRUE(wgmma(lower(product(DType::F16, 4097, 4095, 4093), true, "staged=1")).stagedEpilogue);
  MatmulWgmmaSchedule oddNarrow = wgmma(lower(product(DType::BF16, 4095, 4097, 1023)));
  EXPECT_EQ(oddNarrow.bn, 128u);
  EXPECT_TRUE(oddNarrow.stagedEpilogue);
  EXPECT_EQ(oddNarrow.stages, 5u);
  // up to a k of 2 KiB a row the stores are much of the work: staged
  // whatever the stages left
  for (int64_t k : {64, 1024}) {
    MatmulWgmmaSchedule oddShort = wgmma(lower(product(DType::BF16, 8192, 4094, k)));
    EXPECT_EQ(oddShort.bn, 256u);
    EXPECT_TRUE(oddShort.stagedEpilogue) << k;
    EXPECT_EQ(oddShort.stages, 3u);
  }
  EXPECT_FALSE(wgmma(lower(product(DType::BF16, 8192, 4094, 1032))).stagedEpilogue);
  // TF32: a short k only
  Graph tf("tf32");
  tf.output(matmul(tf.input("a", DType::F32, {1024, 128}),
                   transpose(tf.input("b", DType::F32, {1024, 128}))),
            "c");
  CompileOptions opt;
  opt.compileKernels = false;
  opt.allowTf32 = true;
  EXPECT_TRUE(wgmma(compileGraph(tf, opt)).stagedEpilogue);
  Graph tl("tf32_long");
  tl.output(matmul(tl.input("a", DType::F32, {1024, 256}),
                   transpose(tl.input("b", DType::F32, {1024, 256}))),
            "c");
  EXPECT_FALSE(wgmma(compileGraph(tl, opt)).stagedEpilogue);
  // 2047 x 3072: 192 tiles of 128x256 are 1.45 rounds on 132 SMs (2 x 288),
  // 384 of 128x128 2.91 (3 x 160): the narrower tile
  MatmulWgmmaSchedule r = wgmma(lower(product(DType::F16, 2047, 3072, 1536)));
  EXPECT_EQ(r.bn, 128u);
  std::string text = lower(product(DType::F16, 2047, 3072, 1536)).fusedText();
  EXPECT_NE(text.find("192 pairs of tiles over 66 clusters: 2.91 rounds, the last 91 % full"),
            std::string::npos)
      << text;
}

/// promote=1 (TF32 on Hopper): each k-slice's product in accumulators of its
/// own, even and odd slices apart, added to the tile's sum by the CUDA cores
/// once done; cooperative, bn at most 128. By default for three TF32
/// products (--tf32x3) where the tile allows it, by hand for TF32.
TEST(Schedule, Tf32SlicesAddedOnTheCudaCoresWhereAsked) {
  Graph tf("tf32");
  tf.output(matmul(tf.input("a", DType::F32, {4096, 1024}),
                   transpose(tf.input("b", DType::F32, {4096, 1024}))),
            "c");
  auto compileWith = [](const Graph &g, const std::string &overrides, bool tf32,
                        std::string *error, bool x3 = false) -> std::optional<CompiledGraph> {
    ::unsetenv("MINIJIT_SCHEDULE");
    CompileOptions opt;
    opt.compileKernels = false;
    opt.allowTf32 = tf32;
    opt.tf32x3 = x3;
    opt.scheduleOverrides = *parseScheduleOverrides(overrides);
    try {
      return compileGraph(g, opt);
    } catch (const CompileError &e) {
      *error = e.what();
    }
    return std::nullopt;
  };
  std::string error;
  std::optional<CompiledGraph> asked = compileWith(tf, "promote=1", true, &error);
  ASSERT_TRUE(asked) << error;
  const MatmulWgmmaSchedule &w = asked->detail->kernels[0].schedule.as<MatmulWgmmaSchedule>();
  EXPECT_TRUE(w.promote);
  EXPECT_EQ(w.bn, 128u);
  const std::string &cuda = asked->detail->kernels[0].cuda;
  EXPECT_TRUE(contains(cuda, "float mj_even[64], mj_odd[64];")) << cuda;
  EXPECT_TRUE(contains(cuda, "(mj_even, descA + k8 * 2, descB + k8 * 2, k8 > 0)")) << cuda;
  EXPECT_TRUE(contains(cuda, "if (t % 2 == 1) mj_add_acc(acc, mj_even);")) << cuda;
  EXPECT_TRUE(contains(asked->fusedText(), "each k-slice's product added to the sum by the CUDA cores"));
  std::optional<CompiledGraph> plain = compileWith(tf, "", true, &error);
  ASSERT_TRUE(plain) << error;
  EXPECT_FALSE(plain->detail->kernels[0].schedule.as<MatmulWgmmaSchedule>().promote);
  EXPECT_FALSE(contains(plain->detail->kernels[0].cuda, "mj_add_acc"));
  EXPECT_FALSE(compileWith(tf, "promote=1,pingpong=1", true, &error));
  EXPECT_TRUE(contains(error, "promote=1 needs the cooperative form")) << error;
  EXPECT_FALSE(compileWith(tf, "promote=1,bn=256", true, &error));
  EXPECT_TRUE(contains(error, "promote=1 needs bn of 64 or 128")) << error;
  EXPECT_FALSE(compileWith(tf, "promote=2", true, &error));
  EXPECT_TRUE(contains(error, "promote must be 0 or 1")) << error;
  // Three TF32 products: promoted unless promote=0, ping-pong or bn=256
  // (which then keep one accumulator rather than fail).
  auto promoted = [&](const std::string &overrides) {
    std::optional<CompiledGraph> x3 = compileWith(tf, overrides, false, &error, true);
    EXPECT_TRUE(x3) << overrides << ": " << error;
    if (!x3)
      return false;
    const CompiledKernel &mm = x3->detail->kernels.back();
    EXPECT_TRUE(mm.lowered.matmul && mm.lowered.matmul->threeParts) << x3->fusedText();
    return mm.schedule.as<MatmulWgmmaSchedule>().promote;
  };
  EXPECT_TRUE(promoted(""));
  EXPECT_FALSE(promoted("promote=0"));
  EXPECT_FALSE(promoted("pingpong=1"));
  EXPECT_FALSE(promoted("bn=256"));
  EXPECT_TRUE(promoted("bn=64"));
  Graph half("f16");
  half.output(matmul(half.input("a", DType::F16, {4096, 1024}), half.input("b", DType::F16, {1024, 4096})),
              "c");
  EXPECT_FALSE(compileWith(half, "promote=1", false, &error));
  EXPECT_TRUE(contains(error, "promote=1 is for f32 products read as TF32")) << error;
}

/// Many f32 rows of 65536 or more, too long for a block's registers (read
/// again in each pass, from DRAM where the rows in flight pass the L2), are
/// split by rule over the smallest cluster of blocks of 512 that holds
/// them, 8 vectors and 32 elements a thread at most (two blocks an SM),
/// else over 8 blocks of 1024, where the chunks fill 7 or 8 of those
/// vectors. Rows a block holds, shorter rows, smaller chunks and 16-bit rows
/// (not measured over clusters), few rows (split over the grid), rows no
/// cluster holds, one-pass reductions, sm_80 and an override keep the rules
/// before.
TEST(Schedule, ManyLongRowsAreHeldOverAClusterByRule) {
  struct Want {
    Graph g;
    unsigned cluster, threads, items;
  };
  for (const Want &w : {Want{softmax(2048, 65536), 4, 512, 8}, Want{normRows(512, 262144), 8, 1024, 8},
                        Want{softmax(1024, 100003), 8, 512, 7}, Want{softmax(1024, 131072), 8, 512, 8},
                        Want{softmax(300, 200003), 8, 1024, 7}}) {
    CompiledGraph c = lower(w.g);
    const RowSchedule &s = c.detail->kernels[0].schedule.as<RowSchedule>();
    std::string what = w.g.name() + " " + std::to_string(c.detail->kernels[0].lowered.K);
    EXPECT_EQ(s.cluster, w.cluster) << what;
    EXPECT_EQ(s.threadsPerRow, w.threads) << what;
    EXPECT_EQ(s.itemsPerThread, w.items) << what;
    EXPECT_TRUE(s.cached) << what;
    EXPECT_EQ(s.grid, c.detail->kernels[0].lowered.rows * w.cluster) << what;
    EXPECT_EQ(s.minBlocksPerSM, w.threads == 512 ? 2u : 0u) << what;
    EXPECT_EQ(c.program.kernels[0].cluster, w.cluster) << what;
    // rowcluster=1 keeps a block a row, read again
    CompiledGraph blockARow = lower(w.g, true, "rowcluster=1");
    const RowSchedule &one = blockARow.detail->kernels[0].schedule.as<RowSchedule>();
    EXPECT_EQ(one.cluster, 1u) << what;
    EXPECT_FALSE(one.cached) << what;
  }
  // the norm's rows held: no online variance, its passes exact
  EXPECT_EQ(lower(normRows(512, 262144)).detail->kernels[0].lowered.passes, 3);
  // what the rule leaves alone
  for (const Graph &g : {softmax(2048, 32000), softmax(96, 262144), normRows(896, 524288), rowSum(2048, 131072),
                         softmax(4096, 1024), softmax(2048, 50257), softmax(4096, 65535),
                         softmax(2048, 50257, DType::BF16), softmax(1024, 131072, DType::BF16),
                         normRows(1024, 65537), softmax(1536, 81920)}) // (the last two: 5 vectors a thread)
    EXPECT_EQ(lower(g).detail->kernels[0].schedule.as<RowSchedule>().cluster, 1u) << g.name();
  EXPECT_EQ(lower(softmax(2048, 65536), true, "tpr=512").detail->kernels[0].schedule.as<RowSchedule>().cluster, 1u);
  EXPECT_EQ(lower(softmax(2048, 65536), true, "rowcluster=2").detail->kernels[0].schedule.as<RowSchedule>().cluster, 2u);
  CompileOptions ampere;
  ampere.compileKernels = false;
  ampere.arch = "sm_80";
  CompiledGraph a = compileGraph(softmax(2048, 65536), ampere);
  EXPECT_EQ(a.detail->kernels[0].schedule.as<RowSchedule>().cluster, 1u);
}

/// Clusters of two (cluster=2): the blocks of a cluster walk pairs of tiles
/// along m and share B's tile, each loading half of it (half the rows of a
/// k-major B, half the 64 x 64 boxes of an n-major one) for both.
TEST(Schedule, HopperClustersOfTwoShareB) {
  auto product = [](int64_t m, int64_t n, int64_t k, bool bKMajor) {
    Graph g("mm");
    Tensor a = g.input("a", DType::F16, {m, k});
    Tensor b = bKMajor ? transpose(g.input("b", DType::F16, {n, k}))
                       : g.input("b", DType::F16, {k, n});
    g.output(matmul(a, b), "c");
    return g;
  };
  CompiledGraph sq = lower(product(4096, 4096, 4096, false), true, "cluster=2");
  const MatmulWgmmaSchedule &w = sq.detail->kernels[0].schedule.as<MatmulWgmmaSchedule>();
  EXPECT_EQ(w.cluster, 2u);
  EXPECT_EQ(w.tiles, 512);
  EXPECT_EQ(w.walked(), 256); // 16 pairs of tile rows x 16 columns
  EXPECT_EQ(w.grid, 132);     // 66 clusters on the 132 SMs
  EXPECT_EQ(sq.program.kernels[0].cluster, 2u);
  EXPECT_EQ(sq.program.kernels[0].tensorMaps[1].box, (std::vector<unsigned>{64, 64}));
  EXPECT_TRUE(
      contains(sq.fusedText(), "clusters of 2 blocks on tiles m, m + 1, B's tile multicast"))
      << sq.fusedText();
  // the rule: clusters where there are two waves of tiles or more whose
  // rows pair up; else (or cluster=1, or ping-pong) single blocks
  EXPECT_EQ(lower(product(4096, 4096, 4096, false)).program.kernels[0].cluster, 2u);
  EXPECT_EQ(lower(product(4096, 4096, 4096, false), true, "cluster=1").program.kernels[0].cluster,
            1u);
  EXPECT_EQ(lower(product(4096, 4096, 4096, false), true, "pingpong=1").program.kernels[0].cluster,
            1u);
  EXPECT_EQ(lower(product(4224, 4096, 4096, false)).program.kernels[0].cluster, 1u); // 33 tile rows
  EXPECT_EQ(lower(product(2048, 2048, 4096, false)).program.kernels[0].cluster, 1u); // 128 tiles
  // nn.Linear's layout: each block loads half of B's 256 rows
  CompiledGraph lin = lower(product(1152, 2048, 512, true), true, "cluster=2,bn=256");
  const MatmulWgmmaSchedule &lw = lin.detail->kernels[0].schedule.as<MatmulWgmmaSchedule>();
  EXPECT_EQ(lin.program.kernels[0].tensorMaps[1].box, (std::vector<unsigned>{64, 128}));
  EXPECT_EQ(lw.tilesM, 9);
  EXPECT_EQ(lw.walked(), 5 * 8); // the fifth pair's second tile lies outside the matrix
  EXPECT_EQ(lw.grid, 80);
  // what cannot be
  Graph g = product(1152, 2048, 512, false);
  EXPECT_TRUE(contains(compileErrorOf(g, "cluster=3"), "cluster must be 1 or 2"));
  EXPECT_TRUE(contains(compileErrorOf(g, "cluster=2,pingpong=1"), "cooperative form"));
  EXPECT_TRUE(contains(compileErrorOf(g, "cluster=2,bn=64"), "n-major B needs bn of 128 or 256"));
}

/// cumsum of `rows` rows of `cols` elements of `t`.
Graph scanRows(int64_t rows, int64_t cols, DType t = DType::F32) {
  Graph g("scan_rows");
  Tensor x = g.input("x", t, {rows, cols});
  g.output(cumsum(x, 1), "y");
  return g;
}

TEST(Schedule, FewLongScanRowsChainTheirTiles) {
  // 64 rows of 400000 a block each would leave 68 of 132 SMs idle: each
  // row's tiles of 256 threads x 16 elements go to blocks of their own, 98 a
  // row, chained by the look-back; the workspace holds their ticket counter
  // and a status word a tile.
  CompiledGraph c = lower(scanRows(64, 400000));
  const ScanSchedule *s = c.detail->kernels[0].schedule.getIf<ScanSchedule>();
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->chained());
  EXPECT_EQ(s->splits, 98u);
  EXPECT_EQ(s->grid, 64 * 98);
  EXPECT_EQ(c.program.kernels[0].workspaceBytes, (2 + 64 * 98 * 2) * 4);
  EXPECT_TRUE(contains(c.detail->kernels[0].cuda, "mj_scan_look_back<MjSum>(status, tileOfRow"));
  EXPECT_TRUE(contains(c.fusedText(), "98 tiles chained over blocks"));
  // Rows enough to fill the machine (128 of them: 7/8 of the SMs and more), a
  // row of one tile, an i64 scan (its value does not fit a status word) and
  // chain=0: a block walks each row.
  for (const Graph &g : {scanRows(4096, 32768), scanRows(128, 400000), scanRows(64, 4096),
                         scanRows(64, 400000, DType::I64)}) {
    CompiledGraph d = lower(g);
    EXPECT_FALSE(d.detail->kernels[0].schedule.getIf<ScanSchedule>()->chained()) << d.fusedText();
    EXPECT_EQ(d.program.kernels[0].workspaceBytes, 0);
    EXPECT_FALSE(contains(d.detail->kernels[0].cuda, "mj_scan_look_back"));
  }
  EXPECT_FALSE(lower(scanRows(64, 400000), true, "chain=0")
                   .detail->kernels[0].schedule.getIf<ScanSchedule>()->chained());
  // chain=1 asks for it where rows are many; refused where it cannot be.
  EXPECT_TRUE(lower(scanRows(4096, 32768), true, "chain=1")
                  .detail->kernels[0].schedule.getIf<ScanSchedule>()->chained());
  EXPECT_TRUE(contains(compileErrorOf(scanRows(64, 400000, DType::I64), "chain=1"),
                       "chain=1 needs one scan of 32-bit values"));
  // The tile: 4 elements a thread where the rows fill every SM four times
  // (528 rows of the assumed H200's 132 SMs), 16 where they leave SMs few
  // blocks; fewer for short rows; up to 256 threads.
  auto tileOf = [](int64_t rows, int64_t cols) {
    ScanSchedule s = lower(scanRows(rows, cols)).detail->kernels[0].schedule.as<ScanSchedule>();
    return std::pair{s.block, s.items};
  };
  EXPECT_EQ(tileOf(4096, 32768), std::pair(256u, 4u));
  EXPECT_EQ(tileOf(32768, 1000), std::pair(256u, 4u));
  EXPECT_EQ(tileOf(528, 65536), std::pair(256u, 4u));
  EXPECT_EQ(tileOf(527, 65536), std::pair(256u, 16u));
  EXPECT_EQ(tileOf(128, 400000), std::pair(256u, 16u));
  EXPECT_EQ(tileOf(4096, 100), std::pair(64u, 2u));
  EXPECT_EQ(tileOf(8, 1000), std::pair(64u, 16u));
}

/// AvgPool1d as the torch backend writes it: the input padded by `pad`, its
/// `kernel` windows (slices shifted by one element each) summed.
Graph overlappingWindows(int64_t rows, int64_t cols, int64_t kernel, int64_t padding) {
  Graph g("windows");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  Tensor p = pad(x, {int64_t(0), padding}, {int64_t(0), padding});
  int64_t out = cols + 2 * padding - kernel + 1;
  Tensor sum = slice(p, 1, 0, out);
  for (int64_t j = 1; j < kernel; ++j)
    sum = sum + slice(p, 1, j, j + out);
  g.output(sum / double(kernel), "y");
  return g;
}

TEST(Schedule, ShiftedWindowsNarrowTheVectorsWhereL1WouldBound) {
  // Eight windows read a scalar a lane at 4-wide vectors: a warp's load spans
  // four times its lines, 16.5 bytes through L1 a byte of DRAM, over the 11
  // L1 moves: 2-wide vectors, two a thread. Five windows (10.5) keep 4-wide
  // vectors, and so does a window beside an aligned read.
  auto pointwiseOf = [](const Graph &g) {
    return lower(g).detail->kernels[0].schedule.as<PointwiseSchedule>();
  };
  PointwiseSchedule eight = pointwiseOf(overlappingWindows(8192, 65536, 8, 4));
  EXPECT_EQ(eight.vec, 2u);
  EXPECT_EQ(eight.items, 2u);
  PointwiseSchedule five = pointwiseOf(overlappingWindows(1536, 200003, 5, 2));
  EXPECT_EQ(five.vec, 4u);
  EXPECT_EQ(five.items, 1u);
  PointwiseSchedule two = pointwiseOf(overlappingWindows(4096, 4096, 2, 0));
  EXPECT_EQ(two.vec, 4u);
  // Set by hand, the vectors are as asked, one a thread.
  PointwiseSchedule asked =
      lower(overlappingWindows(8192, 65536, 8, 4), true, "vec=4").detail->kernels[0].schedule.as<PointwiseSchedule>();
  EXPECT_EQ(asked.vec, 4u);
  EXPECT_EQ(asked.items, 1u);
}

} // namespace
