//===- samples/mlp_teacher.cpp - a training loop that learns ---------------===//
// A student MLP (3 layers of nn.Linear, tanh between them) learns to imitate
// a fixed random teacher MLP of the same shape by SGD on the mean squared
// error. One compiled graph is the whole step: forward, loss, backward and
// the SGD update of all six parameters in place on the device. The loss
// falls; the sample exits 1 if it does not (below a fifth of its start).
//
// With a folder argument it writes the data, the initial weights and the
// losses as .npy files, and samples/mlp_teacher.py replays the same run in
// PyTorch and compares the losses. Without a GPU it trains on the CPU
// reference.
//===----------------------------------------------------------------------===//
#include "tools/Harness.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace minijit;

namespace {

constexpr int64_t kDim = 32, kBatch = 256;
constexpr int kLayers = 3, kSteps = 300, kEvery = 25;
constexpr double kLr = 0.3;

Tensor linear(const Tensor &x, const Tensor &w, const Tensor &b) {
  return matmul(x, w.permute({1, 0})) + b;
}

/// Inputs x, target, w0, b0, w1, b1, w2, b2; outputs the loss and each
/// parameter updated in place.
Graph sgdStep() {
  Graph g("teacher_step");
  Tensor x = g.input("x", DType::F32, {kBatch, kDim});
  Tensor target = g.input("target", DType::F32, {kBatch, kDim});
  std::vector<Tensor> params;
  Tensor h = x;
  for (int i = 0; i < kLayers; ++i) {
    Tensor w = g.input("w" + std::to_string(i), DType::F32, {kDim, kDim});
    Tensor b = g.input("b" + std::to_string(i), DType::F32, {kDim});
    params.push_back(w);
    params.push_back(b);
    h = linear(h, w, b);
    if (i + 1 < kLayers)
      h = tanh(h);
  }
  Tensor d = h - target;
  Tensor loss = mean(d * d).named("loss");
  g.output(loss);
  std::vector<Tensor> grads = grad(loss, params);
  for (size_t i = 0; i < params.size(); ++i)
    g.update(params[i], (params[i] - kLr * grads[i]).named(params[i].node().name + ".next"));
  return g;
}

/// The teacher's output for x, computed by the CPU reference.
HostTensor teacherOutput(const HostTensor &x, llvm::ArrayRef<HostTensor> weights) {
  Graph g("teacher");
  Tensor h = g.input("x", DType::F32, {kBatch, kDim});
  for (int i = 0; i < kLayers; ++i) {
    Tensor w = g.input("w" + std::to_string(i), DType::F32, {kDim, kDim});
    Tensor b = g.input("b" + std::to_string(i), DType::F32, {kDim});
    h = linear(h, w, b);
    if (i + 1 < kLayers)
      h = tanh(h);
  }
  g.output(h, "y");
  std::vector<HostTensor> ins = {x};
  ins.insert(ins.end(), weights.begin(), weights.end());
  return evaluate(g, ins)[0];
}

/// Parameters w0, b0, ... scaled as nn.Linear initialises them (1/sqrt(dim)).
std::vector<HostTensor> parameters(uint64_t seed, double gain) {
  std::vector<HostTensor> ps;
  for (int i = 0; i < kLayers; ++i) {
    ps.push_back(HostTensor::random(DType::F32, {kDim, kDim}, seed + 2 * i));
    ps.push_back(HostTensor::random(DType::F32, {kDim}, seed + 2 * i + 1));
  }
  for (HostTensor &p : ps)
    for (int64_t e = 0; e < p.numel(); ++e)
      p.set(e, p.get(e) * gain / std::sqrt(double(kDim)));
  return ps;
}

} // namespace

int main(int argc, char **argv) {
  try {
    std::string dir = argc > 1 ? argv[1] : "";
    Graph g = sgdStep();
    HostTensor x = HostTensor::random(DType::F32, {kBatch, kDim}, 1);
    HostTensor target = teacherOutput(x, parameters(100, 2.0));
    std::vector<HostTensor> host = {x, target};
    for (HostTensor &p : parameters(200, 1.0))
      host.push_back(p);
    if (!dir.empty()) {
      llvm::sys::fs::create_directories(dir);
      for (size_t i = 0; i < host.size(); ++i)
        writeNpy(dir + "/" + g.node(g.inputs()[i]).name + ".npy", host[i]);
    }

    std::string why;
    bool gpu = Device::available(&why);
    llvm::outs() << llvm::formatv("student MLP ({0} layers of {1}, batch {2}) fitting a random "
                                  "teacher by SGD (lr {3}), {4} steps on {5}\n",
                                  kLayers, kDim, kBatch, kLr, kSteps,
                                  gpu ? "the GPU" : "the CPU reference (" + why + ")");
    HostTensor losses(DType::F32, {kSteps});
    if (gpu) {
      Device dev = Device::open();
      CompileOptions opt;
      opt.device = dev.properties();
      CompiledGraph c = compileGraph(g, opt);
      llvm::outs() << "one step: " << c.numKernels() << " kernels\n";
      Executable exe(dev, c.program);
      exe.setGraphReplay(true);
      std::vector<DeviceTensor> din, dout = exe.allocateOutputs();
      for (const HostTensor &h : host)
        din.push_back(DeviceTensor::fromHost(dev, h));
      for (int s = 0; s < kSteps; ++s) {
        exe.enqueue(din, dout);
        exe.synchronize();
        losses.set(s, dout[0].download().get(0));
      }
    } else {
      for (int s = 0; s < kSteps; ++s) {
        std::vector<HostTensor> out = evaluate(g, host);
        losses.set(s, out[0].get(0));
        applyUpdates(g, host, out);
      }
    }
    for (int s = 0; s < kSteps; s += kEvery)
      llvm::outs() << llvm::formatv("  step {0,4}  loss {1:f6}\n", s, losses.get(s));
    llvm::outs() << llvm::formatv("  step {0,4}  loss {1:f6}\n", kSteps - 1, losses.get(kSteps - 1));
    if (!dir.empty()) {
      writeNpy(dir + "/losses.npy", losses);
      llvm::outs() << "data, initial weights and losses written to " << dir
                   << "/ (compare with PyTorch: samples/mlp_teacher.py " << dir << ")\n";
    }
    bool learned = losses.get(kSteps - 1) < 0.2 * losses.get(0);
    llvm::outs() << (learned ? "the loss fell to " : "THE LOSS DID NOT FALL: ")
                 << llvm::formatv("{0:f1}% of its start\n",
                                  100 * losses.get(kSteps - 1) / losses.get(0));
    return learned ? 0 : 1;
  } catch (const Error &e) {
    llvm::errs() << "error: " << e.what() << "\n";
    return 1;
  }
}
