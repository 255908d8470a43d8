//===- tests/gpu/DevicesTest.cpp - several devices, several threads ---------===//
// One compile loaded on every GPU of the host; threads running executables of
// their own at once, on one device and on two, each run against the first
// (checked against the CPU reference); tensors of another device refused by
// run, enqueue and DLPack. The tests that need two GPUs skip on a host with
// one, and say so.
#include "tests/gpu/GpuTest.h"
#include "tests/support/Expect.h"

#include "samples/Lecture.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

namespace minijit {
namespace {

class Devices : public GpuTest {
protected:
  /// A GPU of another ordinal than gpu()'s, or none (with the reason).
  static std::optional<Device> otherGpu(std::string &why) {
    int count = Device::count();
    if (count < 2) {
      why = "one GPU on this host (" + Gpu->properties().name + "): this test needs two";
      return std::nullopt;
    }
    return Device::open(Gpu->ordinal() == 0 ? 1 : 0);
  }
};

/// Skips the test on a host with one GPU; binds `var` to the other one.
#define MJ_REQUIRE_SECOND_GPU(var)                                                                 \
  MJ_REQUIRE_GPU();                                                                                \
  std::string whyNoSecond;                                                                         \
  std::optional<Device> var = otherGpu(whyNoSecond);                                               \
  if (!var)                                                                                        \
  GTEST_SKIP() << whyNoSecond

/// Runs per thread: $MINIJIT_THREAD_RUNS (fewer under compute-sanitizer), 1000 when unset.
int threadRuns() {
  const char *v = std::getenv("MINIJIT_THREAD_RUNS");
  int n = v ? std::atoi(v) : 0;
  return n > 0 ? n : 1000;
}

Graph softmaxGraph() {
  Graph g("softmax");
  Tensor x = g.input("x", DType::F32, {256, 1024});
  g.output(softmax(x, 1), "y");
  return g;
}

Graph layernormGraph() {
  Graph g("layernorm");
  Tensor x = g.input("x", DType::F32, {128, 2048});
  Tensor w = g.input("w", DType::F32, {2048});
  Tensor b = g.input("b", DType::F32, {2048});
  g.output(layerNorm(x, w, b, 1e-5), "y");
  return g;
}

/// What one thread did with its executable.
struct ThreadRuns {
  bool checked = false; ///< the first run matched the CPU reference
  std::string mismatch; ///< how it did not
  int runs = 0;         ///< runs after the first
  int differing = 0;    ///< of them, runs whose outputs differ from the first's
  std::string error;    ///< an exception's message
};

/// Compiles `g` for `dev` on the calling thread, checks one run against the
/// CPU reference, then runs it `runs` times more, the outputs poisoned before
/// each run, and counts the runs whose outputs differ from the first's in
/// any bit. With `replay` the runs replay a CUDA graph.
ThreadRuns runRepeatedly(const Graph &g, const Device &dev, bool replay, int runs, uint64_t seed) {
  ThreadRuns t;
  try {
    CheckedRun r = runAndCheck(g, dev, /*fusion=*/true, seed);
    t.checked = r.ok;
    for (size_t i = 0; i < r.compare.size(); ++i)
      if (!r.compare[i].ok)
        t.mismatch += "output " + std::to_string(i) + ": " + r.compare[i].summary + "\n";
    Executable &exe = *r.executable;
    exe.setGraphReplay(replay);
    std::vector<DeviceTensor> in, out = exe.allocateOutputs();
    for (const HostTensor &h : r.inputs)
      in.push_back(DeviceTensor::fromHost(dev, h));
    for (int i = 0; i < runs; ++i) {
      poisonTensors(out);
      exe.enqueue(in, out);
      exe.synchronize();
      bool same = true;
      for (size_t o = 0; o < out.size(); ++o) {
        HostTensor h = out[o].download();
        same = same && h.bytes() == r.outputs[o].bytes() &&
               std::memcmp(h.data(), r.outputs[o].data(), h.bytes()) == 0;
      }
      t.differing += !same;
      ++t.runs;
    }
  } catch (const Error &e) {
    t.error = e.what();
  }
  return t;
}

/// Runs job(0) and job(1) on two threads, released together.
void onTwoThreads(const std::function<void(int)> &job) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < 2)
        std::this_thread::yield();
      job(t);
    });
  for (std::thread &t : threads)
    t.join();
}

void expectAllRunsAgree(const ThreadRuns &t, const std::string &what) {
  EXPECT_EQ(t.error, "") << what;
  EXPECT_TRUE(t.checked) << what << ": the first run differs from the CPU reference\n"
                         << t.mismatch;
  EXPECT_EQ(t.runs, threadRuns()) << what;
  EXPECT_EQ(t.differing, 0) << what << ": " << t.differing << " of " << t.runs
                            << " runs differ from the first";
}

TEST_F(Devices, TwoThreadsRunTheirOwnExecutablesOnOneDevice) {
  // Without a GPU this compiles both graphs: the test runs them on one.
  expectMatches(softmaxGraph(), 1, true);
  expectMatches(layernormGraph(), 2, true);
  MJ_REQUIRE_GPU();
  ThreadRuns runs[2];
  onTwoThreads([&](int t) {
    // Thread 0 replays a CUDA graph (captured in its thread's mode), thread 1 launches.
    runs[t] = t == 0 ? runRepeatedly(softmaxGraph(), gpu(), /*replay=*/true, threadRuns(), 1)
                     : runRepeatedly(layernormGraph(), gpu(), /*replay=*/false, threadRuns(), 2);
  });
  expectAllRunsAgree(runs[0],
                     "softmax (graph replay) on device " + std::to_string(gpu().ordinal()));
  expectAllRunsAgree(runs[1], "layernorm on device " + std::to_string(gpu().ordinal()));
}

TEST_F(Devices, OneThreadPerDevice) {
  MJ_REQUIRE_SECOND_GPU(other);
  ThreadRuns runs[2];
  const Device *devs[2] = {&gpu(), &*other};
  onTwoThreads([&](int t) {
    // A thread per device: graph replay on one, plain launches on the other.
    runs[t] = t == 0 ? runRepeatedly(softmaxGraph(), *devs[0], true, threadRuns(), 1)
                     : runRepeatedly(layernormGraph(), *devs[1], false, threadRuns(), 2);
  });
  expectAllRunsAgree(runs[0], "softmax on device " + std::to_string(devs[0]->ordinal()));
  expectAllRunsAgree(runs[1], "layernorm on device " + std::to_string(devs[1]->ordinal()));
  // And the other way round: the graphs swap devices.
  onTwoThreads([&](int t) {
    runs[t] = t == 0 ? runRepeatedly(softmaxGraph(), *devs[1], false, threadRuns(), 3)
                     : runRepeatedly(layernormGraph(), *devs[0], true, threadRuns(), 4);
  });
  expectAllRunsAgree(runs[0], "softmax on device " + std::to_string(devs[1]->ordinal()));
  expectAllRunsAgree(runs[1], "layernorm on device " + std::to_string(devs[0]->ordinal()));
}

TEST_F(Devices, OneCompileLoadsOnEveryDeviceOfItsArchitecture) {
  Graph g = lecture::mlp(256, 2, 64, DType::F16);
  KernelCache cache("", true); // memory only: counts this test's compiles
  CompileOptions opt;
  opt.cache = &cache;
  opt.tuning = CompileOptions::Tuning::Off;
  if (Gpu)
    opt.device = gpu().properties();
  CompiledGraph c = compileGraph(g, opt);
  // Its two layers are one kernel of code: one NVRTC compile at most.
  uint64_t compiled = cache.stats().compiles;
  EXPECT_LE(compiled, c.numKernels());
  MJ_REQUIRE_GPU();
  std::vector<HostTensor> ins = randomInputs(g, 5);
  for (size_t i = 1; i < ins.size(); ++i) // weights of scale 1/sqrt(dim), as samples/mlp.cpp
    for (int64_t e = 0; e < ins[i].numel(); ++e)
      ins[i].set(e, ins[i].get(e) / 16.0);
  std::vector<HostTensor> first;
  int loaded = 0;
  for (int ordinal = 0; ordinal < Device::count(); ++ordinal) {
    Device dev = Device::open(ordinal);
    if (!loadsOn(c.program, dev.properties()))
      continue; // another architecture: it would compile its own
    CheckedRun r = checkCompiled(g, dev, c, 5, &ins);
    EXPECT_TRUE(r.ok) << "device " << ordinal << ": " << r.compare[0].summary;
    if (first.empty())
      first = r.outputs;
    else
      EXPECT_EQ(std::memcmp(r.outputs[0].data(), first[0].data(), first[0].bytes()), 0)
          << "device " << ordinal << " computes other bits than the first device";
    ++loaded;
  }
  EXPECT_GE(loaded, 1);
  EXPECT_EQ(cache.stats().compiles, compiled) << "loading compiled something";
  if (loaded == 1)
    std::printf("note: one device of %s here: loaded on it alone\n", c.program.arch.c_str());
}

TEST_F(Devices, ATensorOfAnotherDeviceIsRefused) {
  MJ_REQUIRE_SECOND_GPU(other);
  Executable exe = compile(softmaxGraph(), gpu());
  HostTensor h = HostTensor::random(DType::F32, {256, 1024}, 1);
  DeviceTensor there = DeviceTensor::fromHost(*other, h);
  DeviceTensor here = DeviceTensor::fromHost(gpu(), h);
  std::string a = std::to_string(other->ordinal()), b = std::to_string(gpu().ordinal());
  EXPECT_EQ(graphErrorOf([&] { exe.run({there}); }),
            "run: input %x is on device " + a + " but the executable runs on device " + b);
  std::vector<DeviceTensor> outs = exe.allocateOutputs();
  EXPECT_EQ(graphErrorOf([&] { exe.enqueue({there}, {outs[0]}); }),
            "enqueue: input %x is on device " + a + " but the executable runs on device " + b);
  DeviceTensor outThere(*other, DType::F32, {256, 1024});
  EXPECT_EQ(graphErrorOf([&] { exe.enqueue({here}, {outThere}); }),
            "enqueue: output %y is on device " + a + " but the executable runs on device " + b);
  std::vector<DeviceTensor> ins{here}, bad{outThere};
  EXPECT_EQ(graphErrorOf([&] { exe.bind(ins, bad); }),
            "bind: output %y is on device " + a + " but the executable runs on device " + b);
  // The executable is unharmed, and runs on its own device's tensors.
  Graph g = softmaxGraph();
  CompareResult ok = compareTensors(exe.run({here})[0].download(), evaluate(g, {h})[0],
                                    toleranceFor(g, g.outputs()[0]));
  EXPECT_TRUE(ok.ok) << ok.summary;

  // DLPack keeps the ordinal: a tensor exported from the other device says
  // so, is refused here and taken there.
  DLManagedTensor *m = toDLPack(there);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(m->dl_tensor.device.device_id, other->ordinal());
  EXPECT_EQ(graphErrorOf([&] { fromDLPack(gpu(), m); }),
            "dlpack: the tensor is on CUDA device " + a + ", the minijit device is " + b);
  DeviceTensor back = fromDLPack(*other, m); // owns m now
  EXPECT_EQ(back.data(), there.data());
  EXPECT_EQ(back.device().ordinal(), other->ordinal());
}

} // namespace
} // namespace minijit
