// Named dimensions (issue 17): the rules of each op with names and their
// messages, the text format, binding from sizes and from inputs, the CPU
// reference at several bindings, and kernels that serve a bucket of sizes.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/cache/KernelCache.h"
#include "ir/Autodiff.h"
#include "ir/Bind.h"
#include "ir/Builder.h"
#include "ir/Evaluator.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include "tests/support/Expect.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace minijit;

namespace {

Graph softmaxGraph(const Shape &s) {
  Graph g("softmax");
  Tensor x = g.input("x", DType::F32, s);
  g.output(softmax(x, -1), "y");
  return g;
}

/// The CUDA of `g` bound to `sizes` (no NVRTC).
std::string cudaAt(const Graph &g, const DimBindings &sizes) {
  CompileOptions opt;
  opt.stopAfter = Stage::Cuda;
  return compileGraph(bindDims(g, sizes), opt).cudaText();
}

} // namespace

TEST(NamedDims, ShapesPrintTheirNames) {
  Shape s{Dim("B"), 1024};
  EXPECT_EQ(s.str(), "[B, 1024]");
  EXPECT_TRUE(s.hasNames());
  EXPECT_FALSE(s.isBound());
  EXPECT_EQ(s.names(), std::vector<std::string>({"B"}));
  EXPECT_EQ((Dim("S") * Dim("B") * 4).str(), "4*B*S");
  EXPECT_EQ(Shape({Dim("B") * Dim("S"), 8}).numelDim().str(), "8*B*S");
  Shape bound = bindShape(s, {{"B", 7}}, "x");
  EXPECT_EQ(bound.str(), "[B, 1024]") << "a bound shape keeps its names";
  EXPECT_EQ(bound.boundStr(), "[B=7, 1024]");
  EXPECT_EQ(bound.numel(), 7 * 1024);
  EXPECT_EQ(bound, Shape({7, 1024})) << "a bound name equals a number of its value";
  EXPECT_NE(s, Shape({7, 1024}));
  EXPECT_EQ(graphErrorOf([] { Dim("2B"); }),
            "'2B' is not a valid dimension name (a letter or '_', then letters, digits and '_')");
}

TEST(NamedDims, ANameBroadcastsWithItselfAndWithOne) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B"), 1024});
  Tensor row = g.input("r", DType::F32, {1, 1024});
  Tensor col = g.input("c", DType::F32, {Dim("B"), 1});
  EXPECT_EQ((x + row).shape().str(), "[B, 1024]");
  EXPECT_EQ((x * col).shape().str(), "[B, 1024]");
  EXPECT_EQ((row + col).shape().str(), "[B, 1024]");
}

TEST(NamedDims, ANameDoesNotBroadcastWithANumberOrAnotherName) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B"), 1024});
  Tensor four = g.input("f", DType::F32, {4, 1024});
  Tensor s = g.input("s", DType::F32, {Dim("S"), 1024});
  EXPECT_EQ(graphErrorOf([&] { x + four; }),
            "add: shapes [B, 1024] and [4, 1024] do not broadcast (dim 0: B vs 4)");
  EXPECT_EQ(graphErrorOf([&] { x - s; }),
            "sub: shapes [B, 1024] and [S, 1024] do not broadcast (dim 0: B vs S)");
  EXPECT_EQ(graphErrorOf([&] { x.broadcast({4, 1024}); }),
            "broadcast: [B, 1024] does not broadcast to [4, 1024] (dim 0: B vs 4)");
}

TEST(NamedDims, ReductionsPermutesAndMatmulsCarryNames) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B"), Dim("S"), 64});
  Tensor w = g.input("w", DType::F32, {64, 32});
  EXPECT_EQ(sum(x, {1}, true).shape().str(), "[B, 1, 64]");
  EXPECT_EQ(sum(x, {2}).shape().str(), "[B, S]");
  EXPECT_EQ(permute(x, {2, 0, 1}).shape().str(), "[64, B, S]");
  EXPECT_EQ(matmul(x, w).shape().str(), "[B, S, 32]");
  Tensor y = g.input("y", DType::F32, {Dim("B"), 64, Dim("S")});
  EXPECT_EQ(matmul(x, y).shape().str(), "[B, S, S]");
  Tensor t = g.input("t", DType::F32, {Dim("T"), 8});
  EXPECT_EQ(graphErrorOf([&] { matmul(x, t); }),
            "matmul: inner dimensions do not match: [B, S, 64] @ [T, 8] (64 vs T)");
}

TEST(NamedDims, ReshapesSplitAndMergeNamedDimensions) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B"), Dim("S"), 1024});
  Tensor flat = x.reshape({Dim("B") * Dim("S"), 1024});
  EXPECT_EQ(flat.shape().str(), "[B*S, 1024]");
  EXPECT_EQ(flat.reshape({Dim("B"), Dim("S"), 32, 32}).shape().str(), "[B, S, 32, 32]");
  EXPECT_EQ(graphErrorOf([&] { x.reshape({Dim("B"), 1024}); }),
            "reshape: cannot reshape [B, S, 1024] (1024*B*S elements) to [B, 1024] (1024*B "
            "elements)");
}

TEST(NamedDims, SlicesPadsAndConcatsAlongANamedAxisAreRefused) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B"), 16});
  EXPECT_EQ(slice(x, 1, 2, 10).shape().str(), "[B, 8]");
  EXPECT_EQ(pad(x, {0, 1}, {0, 1}).shape().str(), "[B, 18]");
  EXPECT_EQ(concat({x, x}, 1).shape().str(), "[B, 32]");
  EXPECT_EQ(graphErrorOf([&] { slice(x, 0, 0, 2); }),
            "slice: axis 0 of [B, 16] is the named dimension B; slicing a named dimension is not "
            "supported (its size is known only when the graph runs)");
  EXPECT_EQ(graphErrorOf([&] { pad(x, {1, 0}, {0, 0}); }),
            "pad: axis 0 of [B, 16] is the named dimension B; padding a named dimension is not "
            "supported (its size is known only when the graph runs)");
  EXPECT_EQ(graphErrorOf([&] { concat({x, x}, 0); }),
            "concat: axis 0 of [B, 16] is the named dimension B; concatenating along a named "
            "dimension is not supported (its size is known only when the graph runs)");
}

TEST(NamedDims, ArgumentsTakeSingleNames) {
  Graph g;
  EXPECT_EQ(graphErrorOf([&] { g.input("x", DType::F32, {Dim("B") * Dim("S"), 4}); }),
            "input %x: dimension 0 is B*S; an argument's dimensions are numbers or single names "
            "(reshape inside the graph to a product)");
}

TEST(NamedDims, ALossWithANamedDimensionHasNoGradient) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B")});
  EXPECT_EQ(graphErrorOf([&] { grad(x * x, x); }),
            "grad: the loss %t0 has shape [B] (B elements) but must have one element; reduce it "
            "first (e.g. `mean(t0)`) or use vjp");
  EXPECT_EQ(grad(mean(x * x), x).shape().str(), "[B]");
}

TEST(NamedDims, TextRoundTripsWithNamesAndProducts) {
  std::string text = "graph f(%x: f32[B, S, 64], %w: f32[64, 64]) {\n"
                     "  %h = matmul %x, %w : f32[B, S, 64]\n"
                     "  %r = reshape %h shape=[B*S, 64] : f32[B*S, 64]\n"
                     "  %p = iota shape=[S, 4*B] axis=1 dtype=i32 : i32[S, 4*B]\n"
                     "  return %r, %p\n"
                     "}\n";
  std::vector<Graph> gs = parseGraphs(text);
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(printGraph(gs[0]), text);
}

TEST(NamedDims, TheParserNamesTheRule) {
  try {
    parseGraphs("graph f(%x: f32[B, 8], %y: f32[C, 8]) {\n  %z = add %x, %y\n  return %z\n}\n",
                "t.mj");
    FAIL() << "no error";
  } catch (const ParseError &e) {
    EXPECT_EQ(std::string(e.what()),
              "t.mj:2:8: error: add: shapes [B, 8] and [C, 8] do not broadcast (dim 0: B vs C)");
  }
}

TEST(NamedDims, BindingGivesEverySizeAndRefusesWhatIsMissing) {
  Graph g = softmaxGraph({Dim("B"), 1000});
  EXPECT_EQ(dimNames(g), std::vector<std::string>({"B"}));
  EXPECT_TRUE(hasUnboundDims(g));
  Graph b = bindDims(g, {{"B", 3}});
  EXPECT_FALSE(hasUnboundDims(b));
  EXPECT_EQ(b.node(b.outputs()[0]).shape.boundStr(), "[B=3, 1000]");
  EXPECT_EQ(graphErrorOf([&] { bindDims(g, {{"S", 3}}); }),
            "%x: the named dimension B has no size (give it, e.g. --dim B=N)");
  EXPECT_EQ(graphErrorOf([&] { bindDims(g, {{"B", -1}}); }),
            "the named dimension B is given the size -1; sizes are at least 0");
  EXPECT_EQ(bindDims(g, {{"B", 0}}).node(b.outputs()[0]).shape.boundStr(), "[B=0, 1000]")
      << "an empty batch (issue 42)";
  DimBindings sizes;
  EXPECT_EQ(parseDimBinding("B=4096", sizes), "");
  EXPECT_EQ(sizes.at("B"), 4096);
  EXPECT_EQ(parseDimBinding("B4096", sizes), "--dim B4096: expected NAME=SIZE, e.g. B=4096");
  EXPECT_EQ(parseDimBinding("B=-1", sizes),
            "--dim B=-1: the size must be at least 0 (0: an empty dimension)");
}

TEST(NamedDims, InputsThatDisagreeOnANameAreRefused) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B"), 8});
  Tensor y = g.input("y", DType::F32, {Dim("B"), 8});
  g.output(x + y, "z");
  DimBindings ok = bindingsFromInputs(g, std::vector<Shape>{{5, 8}, {5, 8}});
  EXPECT_EQ(ok.at("B"), 5);
  EXPECT_EQ(graphErrorOf([&] { bindingsFromInputs(g, std::vector<Shape>{{5, 8}, {6, 8}}); }),
            "input %y: dimension 0 is B, which is 5 (from input %x), but input %y has 6");
  EXPECT_EQ(graphErrorOf([&] { bindingsFromInputs(g, std::vector<Shape>{{5, 7}, {5, 8}}); }),
            "input %x: expected [B, 8], got [5, 7] (dim 1: 8 vs 7)");
  EXPECT_EQ(graphErrorOf([&] { bindingsFromInputs(g, std::vector<Shape>{{5}, {5, 8}}); }),
            "input %x: expected rank 2 ([B, 8]), got [5]");
}

TEST(NamedDims, TheReferenceBindsFromItsInputsAtEverySize) {
  Graph g;
  Tensor x = g.input("x", DType::F32, {Dim("B"), 5});
  Tensor w = g.input("w", DType::F32, {5, 3});
  g.output(relu(matmul(x, w)) + sum(x, {1}, true), "y");
  for (int64_t b : {1, 2, 7}) {
    Graph bound = bindDims(g, {{"B", b}});
    std::vector<HostTensor> ins = randomInputs(bound, 100 + b);
    std::vector<HostTensor> named = evaluate(g, ins), fixed = evaluate(bound, ins);
    ASSERT_EQ(named[0].shape(), Shape({b, 3}));
    for (int64_t i = 0; i < named[0].numel(); ++i)
      EXPECT_EQ(named[0].get(i), fixed[0].get(i)) << "B=" << b << " element " << i;
  }
  EXPECT_EQ(graphErrorOf([&] { randomInputs(g, 1); }),
            "graph 'main' has named dimensions without sizes (B): bind them first (bindDims, or "
            "--dim NAME=SIZE)");
}

TEST(NamedDims, OneKernelTextServesTheSizesOfABucket) {
  Graph g = softmaxGraph({Dim("B"), 1024});
  std::string at3 = cudaAt(g, {{"B", 3}});
  EXPECT_NE(at3.find("const long long B) {"), std::string::npos) << at3;
  EXPECT_NE(at3.find("const int mj_rows = (int)(B);"), std::string::npos) << at3;
  EXPECT_EQ(cudaAt(g, {{"B", 4}}), at3) << "B in 3..4";
  EXPECT_EQ(cudaAt(g, {{"B", 1}}), cudaAt(g, {{"B", 2}}))
      << "a named size of 1 is not folded away: it shares the bucket of 2";
  // A bucket of rows a warp each: the spare warps of the last block are guarded.
  std::string at20000 = cudaAt(g, {{"B", 20000}});
  EXPECT_NE(at20000.find("rowValid = rowRaw < mj_rows"), std::string::npos) << at20000;
  for (int64_t b : {16385, 30000, 32768})
    EXPECT_EQ(cudaAt(g, {{"B", b}}), at20000) << "B=" << b;
  // Buckets are scheduled for their sizes: few rows take more threads each.
  EXPECT_NE(at3, at20000);
  // A static graph's kernel keeps its numbers.
  EXPECT_EQ(cudaAt(softmaxGraph({4096, 1024}), {}).find("const long long"), std::string::npos);
}

TEST(NamedDims, ANameThatIsAStrideIsCompiledForItsSize) {
  Graph g("t");
  Tensor x = g.input("x", DType::F32, {Dim("B"), 64});
  g.output(transpose(x) * 2.0f, "y");
  EXPECT_NE(cudaAt(g, {{"B", 256}}), cudaAt(g, {{"B", 512}}));
  EXPECT_EQ(cudaAt(g, {{"B", 256}}).find("const long long B"), std::string::npos);
}

TEST(NamedDims, BucketsArePowersOfTwoOfTheNamedSizes) {
  DimExpr b = Dim("B").expr(), b1024 = (Dim(1024) * Dim("B")).expr();
  EXPECT_EQ(bucketExtent(b, 1), 2) << "a named 1 shares the bucket of 2";
  EXPECT_EQ(bucketExtent(b, 2), 2);
  EXPECT_EQ(bucketExtent(b, 3), 4);
  EXPECT_EQ(bucketExtent(b, 4096), 4096);
  EXPECT_EQ(bucketExtent(b, 4097), 8192);
  EXPECT_EQ(bucketExtent(b1024, 1024 * 3000), 1024 * 4096);
  EXPECT_EQ(bucketExtent(Dim(1000).expr(), 1000), 1000) << "a number is its own bucket";
  EXPECT_EQ(bucketText(b1024, 1024 * 3000), "B in 2049..4096");
  EXPECT_EQ(bucketText(b, 1), "B in 1..2");
}

TEST(NamedDims, TheGridIsSizedForTheBoundSize) {
  Graph g = softmaxGraph({Dim("B"), 1024});
  CompileOptions opt;
  opt.stopAfter = Stage::Cuda;
  CompiledGraph a = compileGraph(bindDims(g, {{"B", 3000}}), opt);
  ASSERT_EQ(a.program.kernels.size(), 1u);
  EXPECT_EQ(a.program.kernels[0].grid, 3000) << "a block a row, as for the bucket's 4096";
  EXPECT_EQ(a.program.kernels[0].sizeArgs, std::vector<int64_t>({3000}));
  EXPECT_NE(a.fusedText().find("named size B bound at launch (B = 3000), scheduled for its "
                               "bucket, B in 2049..4096"),
            std::string::npos)
      << a.fusedText();
}

TEST(NamedDims, IdenticalLayersCompileOnce) {
  llvm::SmallString<64> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("minijit-shared", dir));
  KernelCache cache(dir.str().str(), true);
  Graph g("mlp");
  Tensor h = g.input("x", DType::F32, {Dim("B"), 64});
  for (int i = 0; i < 16; ++i)
    h = relu(matmul(h, g.input("w" + std::to_string(i), DType::F32, {64, 64})));
  g.output(h, "y");
  CompileOptions opt;
  opt.cache = &cache;
  opt.tuning = CompileOptions::Tuning::Off;
  CompiledGraph c = compileGraph(bindDims(g, {{"B", 100}}), opt);
  ASSERT_EQ(c.program.kernels.size(), 16u);
  EXPECT_EQ(cache.stats().compiles, 1u) << "NVRTC once for 16 layers of one structure";
  std::set<std::string> entries;
  for (const ProgramKernel &k : c.program.kernels) {
    entries.insert(k.entry);
    EXPECT_EQ(k.cubin, c.program.kernels[0].cubin);
  }
  EXPECT_EQ(entries.size(), 1u);
  // Another batch size of the same bucket: no compile at all.
  CompiledGraph d = compileGraph(bindDims(g, {{"B", 120}}), opt);
  EXPECT_EQ(cache.stats().compiles, 1u);
  EXPECT_EQ(d.program.kernels[3].sizeArgs, std::vector<int64_t>({120}));
  llvm::sys::fs::remove_directories(dir);
}

TEST(NamedDims, RecompilesAreLoggedWithTheirReason) {
  llvm::SmallString<64> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("minijit-log", dir));
  KernelCache cache(dir.str().str(), true);
  Graph g("t");
  Tensor x = g.input("x", DType::F32, {Dim("B"), 64});
  g.output(softmax(x, -1), "s");
  g.output(transpose(x) * 2.0f, "y");
  CompileOptions opt;
  opt.cache = &cache;
  opt.logRecompiles = true;
  ProgramMaker make = programMaker(g, opt);
  testing::internal::CaptureStderr();
  Program p3 = make({{"B", 300}});
  Program p5 = make({{"B", 500}});
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(p3.kernels.size(), 2u);
  EXPECT_EQ(p5.kernels[0].sizeArgs, std::vector<int64_t>({500}));
  EXPECT_NE(log.find("minijit: graph 't' bound to B=300: 2 kernels, 2 compiled by NVRTC, 0 from "
                     "the cache or shared"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("compiled softmax_row_k0: the first binding of its bucket of sizes (B in "
                     "257..512)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("minijit: graph 't' bound to B=500: 2 kernels, 1 compiled by NVRTC, 1 from "
                     "the cache or shared"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("compiled poi_mul_k1: its code holds the sizes"), std::string::npos) << log;
  std::vector<ProgramArgument> args = programArguments(g);
  ASSERT_EQ(args.size(), 1u);
  EXPECT_EQ(args[0].shape.str(), "[B, 64]");
  llvm::sys::fs::remove_directories(dir);
}

TEST(NamedDims, CompilingOrDifferentiatingUnboundSizesIsRefused) {
  Graph g("f");
  Tensor x = g.input("x", DType::F32, {Dim("B"), 4});
  Tensor w = g.input("w", DType::F32, {4});
  g.output(grad(mean(x * w), w), "gw");
  EXPECT_EQ(graphErrorOf([&] { compileGraph(g); }),
            "graph 'f' has named dimensions without sizes (B): bind them (bindDims, --dim "
            "NAME=SIZE), or compile through minijit::compile, which binds each run's sizes");
  EXPECT_EQ(graphErrorOf([&] { expandAutodiff(g); }),
            "graph 'f' has named dimensions without sizes (B): bind them before expanding its "
            "gradients (bindDims)");
  // Bound, a mean's gradient divides by the bound size: the same as the
  // graph written at that size.
  for (int64_t b : {1, 3}) {
    Graph bound = bindDims(g, {{"B", b}});
    std::vector<HostTensor> ins = randomInputs(bound, 9);
    std::vector<HostTensor> named = evaluate(g, ins), fixed = evaluate(bound, ins);
    for (int64_t i = 0; i < 4; ++i)
      EXPECT_EQ(named[0].get(i), fixed[0].get(i)) << "B=" << b;
    EXPECT_NO_THROW(compileGraph(bound));
  }
}
