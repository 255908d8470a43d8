// Training graphs on the GPU: gradients from autodiff, fused and unfused,
// against the CPU reference; random graphs with gradients; updates in place,
// with and without CUDA graph replay.
#include "GpuTest.h"

#include "samples/Lecture.h"
#include "tests/support/RandomGraph.h"

namespace minijit {
namespace {

class Training : public GpuTest {};

/// `g` with a scalar loss (the mean of each float output times a random
/// cotangent input, summed) and, as outputs, the loss and its gradient with
/// respect to every float input.
Graph withGradients(const Graph &g) {
  Graph out(g.name() + "_grad");
  std::vector<ValueId> map(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    NodeSpec s = specOf(g.node(i));
    for (ValueId &o : s.operands)
      o = map[o];
    map[i] = out.add(s);
  }
  std::optional<Tensor> loss;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    Tensor y(&out, map[g.outputs()[i]]);
    if (!isFloat(y.dtype()))
      continue;
    Tensor c = out.input("c" + std::to_string(i), y.dtype(), y.shape());
    Tensor term = mean(y * c);
    loss = loss ? *loss + term : term;
  }
  out.output(*loss, "loss");
  for (ValueId in : g.inputs())
    if (isFloat(g.node(in).dtype))
      out.output(grad(*loss, Tensor(&out, map[in])), "d_" + g.node(in).name);
  return out;
}

TEST_F(Training, LectureMlpGradientsFusedAndUnfused) {
  expectMatches(lecture::mlpTrain(64, 3, 37, lecture::TrainStep::Gradients));
  expectMatches(lecture::mlpTrain(128, 2, 128, lecture::TrainStep::Gradients, DType::F16));
}

// The gradient of a plain sum of a product: ones @ W^T, whose ones are a
// literal made a tensor by views (fusion stores the view; the literal itself
// has no buffer), at odd sizes, f32 and f16.
TEST_F(Training, GradientOfTheSumOfAProduct) {
  for (DType dt : {DType::F32, DType::F16}) {
    Graph g("grad_of_sum_" + std::string(dtypeName(dt)));
    Tensor x = g.input("x", dt, {37, 129});
    Tensor w = g.input("w", dt, {129, 61});
    Tensor l = sum(matmul(x, w));
    g.output(grad(l, x), "dx");
    g.output(grad(l, w), "dw");
    expectMatches(g, 7);
  }
}

TEST_F(Training, RandomGraphGradientsFusedAndUnfused) {
  int graphs = 60;
  if (const char *n = std::getenv("MINIJIT_RANDOM_GRAPHS"))
    graphs = std::min(graphs, std::atoi(n));
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(graphs); ++seed) {
    Graph g = withGradients(randomGraph(seed));
    SCOPED_TRACE("random graph seed " + std::to_string(seed) + " with gradients:\n" +
                 printGraph(g));
    expectMatches(g, seed);
    if (HasFailure())
      break;
  }
}

/// Two SGD steps on the device, the weights updated in place, against two
/// steps of the CPU reference.
TEST_F(Training, SgdUpdatesWeightsInPlace) {
  Graph g = lecture::mlpTrain(48, 2, 33, lecture::TrainStep::Sgd, DType::F32, 0.25);
  if (!Gpu) {
    EXPECT_NO_THROW(compileGraph(g));
  }
  MJ_REQUIRE_GPU();
  for (bool replay : {false, true}) {
    CompileOptions opt;
    opt.device = gpu().properties();
    Executable exe(gpu(), compileGraph(g, opt).program);
    exe.setGraphReplay(replay);
    std::vector<HostTensor> host = randomInputs(g, 4);
    for (size_t i = 1; i < host.size(); ++i)
      for (int64_t e = 0; e < host[i].numel(); ++e)
        host[i].set(e, host[i].get(e) / 7);
    std::vector<DeviceTensor> din, dout = exe.allocateOutputs();
    for (const HostTensor &h : host)
      din.push_back(DeviceTensor::fromHost(gpu(), h));
    for (int step = 0; step < 2; ++step) {
      exe.enqueue(din, dout);
      applyUpdates(g, host, evaluate(g, host));
    }
    exe.synchronize();
    for (size_t i = 1; i < host.size(); ++i) {
      CompareResult c = compareTensors(din[i].download(), host[i], Tolerance{1e-4});
      EXPECT_TRUE(c.ok) << "replay " << replay << " %" << g.node(g.inputs()[i]).name << ": "
                        << c.summary;
    }
  }
}

/// An input read by a kernel that runs after the one computing its update
/// still reads the old value: updates are written after every kernel.
TEST_F(Training, UpdateWaitsForEveryReader) {
  Graph g("upd");
  Tensor w = g.input("w", DType::F32, {1000, 37});
  Tensor w2 = w * 2.0;
  g.update(w, w2);
  g.output(exp(sum(w, {1})) + sum(w2, {1}), "late"); // reads w after %w2 exists
  if (!Gpu) {
    EXPECT_NO_THROW(compileGraph(g));
  }
  MJ_REQUIRE_GPU();
  for (bool fused : {true, false}) {
    CompileOptions opt;
    opt.fusion = fused;
    opt.device = gpu().properties();
    Executable exe(gpu(), compileGraph(g, opt).program);
    std::vector<HostTensor> host = randomInputs(g, 9);
    std::vector<HostTensor> ref = evaluate(g, host);
    std::vector<DeviceTensor> din = {DeviceTensor::fromHost(gpu(), host[0])};
    std::vector<DeviceTensor> dout = exe.allocateOutputs();
    poisonTensors(dout);
    exe.enqueue(din, dout);
    exe.synchronize();
    EXPECT_TRUE(compareTensors(din[0].download(), ref[0], Tolerance{0}).ok) << "fusion " << fused;
    CompareResult late = compareTensors(dout[1].download(), ref[1], toleranceFor(g, g.outputs()[1]));
    EXPECT_TRUE(late.ok) << "fusion " << fused << ": " << late.summary;
  }
}

} // namespace
} // namespace minijit
