// Named dimensions on the GPU (issue 17): one executable of a graph with a
// named batch size runs at many sizes, bucket edges included, each checked
// against the CPU reference with poisoned outputs; kernels of one bucket are
// compiled once; inputs that disagree on a name launch nothing.
#include "tests/gpu/GpuTest.h"

#include "compiler/cache/KernelCache.h"
#include "ir/Bind.h"
#include "runtime/Driver.h"
#include "tests/support/Expect.h"

#include "llvm/Support/FileSystem.h"

namespace minijit {
namespace {

class NamedDims : public GpuTest {
protected:
  /// Runs `exe` on seeded inputs of `g` bound to B = `b`, its outputs
  /// poisoned first, and compares each with the reference; on `stream`
  /// (a caller's, waited for alone) where one is given, else its own.
  void expectBindingMatches(Executable &exe, const Graph &g, int64_t b,
                            CUstream stream = nullptr) {
    Graph bound = bindDims(g, {{"B", b}});
    std::vector<HostTensor> ins = randomInputs(bound, 7000 + static_cast<uint64_t>(b));
    std::vector<DeviceTensor> din;
    for (const HostTensor &h : ins)
      din.push_back(DeviceTensor::fromHost(gpu(), h));
    std::vector<DeviceTensor> dout = exe.allocateOutputs(din);
    poisonTensors(dout);
    if (stream) {
      exe.enqueueOn(stream, din, dout);
      Driver::get().check(Driver::get().cuStreamSynchronize(stream), "cuStreamSynchronize");
    } else {
      exe.enqueue(din, dout);
      exe.synchronize();
    }
    EXPECT_EQ(exe.dims().at("B"), b);
    std::vector<HostTensor> ref = evaluate(bound, ins);
    for (size_t i = 0; i < ref.size(); ++i) {
      CompareResult c = compareTensors(dout[i].download(), ref[i],
                                       toleranceFor(bound, bound.outputs()[i]));
      EXPECT_TRUE(c.ok) << g.name() << " at B=" << b << ", output " << i << ": " << c.summary
                        << (exe.graphReplay() ? " (graph replay)" : "");
    }
  }

  /// Without a GPU: every binding's kernels through NVRTC, then SKIPPED.
  void compileOnly(const Graph &g, const std::vector<int64_t> &sizes) {
    for (int64_t b : sizes)
      EXPECT_NO_THROW(compileGraph(bindDims(g, {{"B", b}}))) << g.name() << " at B=" << b;
    GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
  }
};

Graph softmaxRows() {
  Graph g("softmax_named");
  Tensor x = g.input("x", DType::F32, {Dim("B"), 1000});
  g.output(softmax(x, -1), "y");
  return g;
}

Graph layerNormRows() {
  Graph g("layernorm_named");
  Tensor x = g.input("x", DType::F32, {Dim("B"), 768});
  Tensor w = g.input("w", DType::F32, {768});
  Tensor b = g.input("b", DType::F32, {768});
  g.output(layerNorm(x, w, b), "y");
  return g;
}

Graph mlpRows() {
  Graph g("mlp_named");
  Tensor h = g.input("x", DType::F32, {Dim("B"), 256});
  for (int i = 0; i < 3; ++i) {
    Tensor w = g.input("w" + std::to_string(i), DType::F32, {256, 256});
    Tensor b = g.input("b" + std::to_string(i), DType::F32, {256});
    h = relu(matmul(h, w) + b);
  }
  g.output(h, "y");
  return g;
}

/// Sizes at the edges of the power-of-two buckets, and some again.
const std::vector<int64_t> kSizes = {1, 2, 3, 127, 128, 129, 1000, 4096, 4097, 3, 1000, 1};

TEST_F(NamedDims, OneExecutableServesEverySize) {
  for (const Graph &g : {softmaxRows(), layerNormRows(), mlpRows()}) {
    if (!Gpu) {
      compileOnly(g, kSizes);
      continue;
    }
    llvm::SmallString<64> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("minijit-named", dir));
    KernelCache cache(dir.str().str(), true);
    CompileOptions opt;
    opt.cache = &cache;
    Executable exe = compile(g, gpu(), opt);
    for (int64_t b : kSizes)
      expectBindingMatches(exe, g, b);
    EXPECT_EQ(exe.bindings(), 9u) << "one program per distinct size";
    // One kernel text serves each bucket of sizes: far fewer compiles than
    // bindings times kernels.
    EXPECT_LE(cache.stats().compiles, g.name() == "mlp_named" ? 8u : 3u)
        << g.name() << ": " << cache.stats().compiles << " NVRTC compiles";
    llvm::sys::fs::remove_directories(dir);
  }
}

TEST_F(NamedDims, GraphReplayFollowsTheBinding) {
  Graph g = softmaxRows();
  if (!Gpu)
    return compileOnly(g, {5, 700});
  Executable exe = compile(g, gpu());
  exe.setGraphReplay(true);
  for (int64_t b : {5, 700, 5, 700, 64})
    expectBindingMatches(exe, g, b);
}

TEST_F(NamedDims, ANamedOneARewriteStretchesReadsItsOneElement) {
  // The narrow-product rewrite at B = 1 broadcasts %w's named 1s to other
  // sizes (random graphs with named sizes, seed 20976 and six others).
  Graph g("named_one");
  Tensor x = g.input("x", DType::F32, {Dim("B"), 3, Dim("B")});
  Tensor w = g.input("w", DType::F32, {Dim("B"), Dim("B")});
  Tensor bias = g.input("bias", DType::F32, {Dim("B")});
  g.output(tanh(matmul(x, w) * 0.1f + bias), "t");
  if (!Gpu)
    return compileOnly(g, {1, 2, 3});
  Executable exe = compile(g, gpu());
  for (int64_t b : {1, 2, 3, 1})
    expectBindingMatches(exe, g, b);
}

TEST_F(NamedDims, InputsThatDisagreeLaunchNothing) {
  Graph g("pair");
  Tensor x = g.input("x", DType::F32, {Dim("B"), 8});
  Tensor y = g.input("y", DType::F32, {Dim("B"), 8});
  g.output(x + y, "z");
  if (!Gpu)
    return compileOnly(g, {5});
  Executable exe = compile(g, gpu());
  std::vector<DeviceTensor> ins = {
      DeviceTensor::fromHost(gpu(), HostTensor::random(DType::F32, {5, 8}, 1)),
      DeviceTensor::fromHost(gpu(), HostTensor::random(DType::F32, {6, 8}, 2))};
  std::vector<DeviceTensor> outs = {DeviceTensor(gpu(), DType::F32, {5, 8})};
  poisonTensors(outs);
  EXPECT_EQ(graphErrorOf([&] { exe.enqueue(ins, outs); }),
            "input %y: dimension 0 is B, which is 5 (from input %x), but input %y has 6");
  exe.synchronize();
  HostTensor z = outs[0].download();
  for (int64_t i = 0; i < z.numel(); ++i)
    ASSERT_TRUE(z.isPoisoned(i)) << "element " << i << " was written";
  EXPECT_EQ(exe.bindings(), 0u);
  EXPECT_EQ(graphErrorOf([&] { exe.program(); }),
            "graph 'pair' has named dimensions and has not run yet: its program depends on the "
            "sizes its inputs bring (run, bind or allocateOutputs(inputs) first)");
}

// Runs on callers' streams (PyTorch's current streams): an unfused graph
// holds temporaries, so a run on another stream than the last waits for it,
// and a binding that takes over waits for the last run on a caller's stream
// before its temporaries go back; a one-kernel graph holds none and records
// nothing. Each run's outputs are read after its own stream alone is waited for.
TEST_F(NamedDims, RunsOnCallersStreamsKeepTheirTemporariesOrdered) {
  Graph unfused = mlpRows();
  Graph plain = softmaxRows();
  if (!Gpu)
    return compileOnly(unfused, {4097, 1000});
  const Driver &d = Driver::get();
  gpu().makeCurrent();
  StreamHandle streams[2];
  for (StreamHandle &s : streams)
    d.check(d.cuStreamCreate(s.receive(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CompileOptions opt;
  opt.fusion = false;
  for (const Graph &g : {unfused, plain}) {
    Executable exe = compile(g, gpu(), g.name() == plain.name() ? CompileOptions{} : opt);
    int run = 0;
    for (int64_t b : {4097, 4097, 1000, 4097})
      expectBindingMatches(exe, g, b, streams[run++ % 2].get());
  }
}

} // namespace
} // namespace minijit
