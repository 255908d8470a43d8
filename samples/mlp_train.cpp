//===- samples/mlp_train.cpp - the lecture's training step -----------------===//
// run_mlp(dim=128, num_layers=16, batch_size=128, num_steps=5) as the lecture
// writes it: 16 layers of nn.Linear (with bias) and F.gelu (erf), y =
// model(x).mean(), y.backward(), five steps with the gradients accumulating.
// One graph holds the forward pass, the mean, the backward pass (from
// `grad`, expanded by autodiff) and the accumulation in place. It runs one
// kernel per op, fused, and fused with CUDA graph replay; the gradients are
// checked against the CPU reference, and so are five accumulated steps and
// an SGD step that updates the weights in place. A large variant (dim 4096,
// 4 layers, batch 4096) is timed too.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "tools/Harness.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace minijit;
using lecture::TrainStep;

namespace {

/// nn.Linear's initialisation scale: weights and biases uniform-like in
/// +-1/sqrt(dim); here normal values scaled by it. Accumulators start at 0.
std::vector<HostTensor> trainInputs(const Graph &g, int64_t dim, uint64_t seed) {
  std::vector<HostTensor> ins = randomInputs(g, seed);
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string &name = g.node(g.inputs()[i]).name;
    double scale = name == "x" ? 1.0 : name[0] == 'g' ? 0.0 : 1.0 / std::sqrt(double(dim));
    for (int64_t e = 0; e < ins[i].numel(); ++e)
      ins[i].set(e, ins[i].get(e) * scale);
  }
  return ins;
}

std::vector<DeviceTensor> upload(const Device &gpu, llvm::ArrayRef<HostTensor> hs) {
  std::vector<DeviceTensor> ds;
  for (const HostTensor &h : hs)
    ds.push_back(DeviceTensor::fromHost(gpu, h));
  return ds;
}

/// The largest |a - b| relative to the largest |b| over all elements.
double relativeError(const HostTensor &a, const HostTensor &b) {
  double diff = 0, scale = 1e-30;
  for (int64_t e = 0; e < a.numel(); ++e) {
    diff = std::max(diff, std::fabs(a.get(e) - b.get(e)));
    scale = std::max(scale, std::fabs(b.get(e)));
  }
  return diff / scale;
}

/// Five steps of the accumulating graph on the device, against five steps
/// of the CPU reference (each step's reference fed the last step's result).
bool checkAccumulation(const Graph &g, const Device &gpu, int64_t dim) {
  CompileOptions opt;
  opt.device = gpu.properties();
  Executable exe(gpu, compileGraph(g, opt).program);
  std::vector<HostTensor> host = trainInputs(g, dim, 5);
  std::vector<DeviceTensor> din = upload(gpu, host), dout = exe.allocateOutputs();
  for (int step = 0; step < 5; ++step) {
    exe.enqueue(din, dout);
    applyUpdates(g, host, evaluate(g, host));
  }
  exe.synchronize();
  double worst = 0;
  for (size_t i = 0; i < host.size(); ++i)
    if (g.node(g.inputs()[i]).name[0] == 'g')
      worst = std::max(worst, relativeError(din[i].download(), host[i]));
  bool ok = worst < 1e-4;
  llvm::outs() << llvm::formatv("5 steps accumulating in place: the 32 accumulators on the GPU "
                                "differ from the CPU reference by at most {0:e2} (relative) {1}\n",
                                worst, ok ? "ok" : "MISMATCH");
  return ok;
}

/// One SGD step that writes the new weights over the old ones.
bool checkSgd(const Device &gpu, int64_t dim, int layers, int64_t batch) {
  Graph g = lecture::mlpTrain(dim, layers, batch, TrainStep::Sgd, DType::F32, 0.5);
  CompileOptions opt;
  opt.device = gpu.properties();
  Executable exe(gpu, compileGraph(g, opt).program);
  std::vector<HostTensor> host = trainInputs(g, dim, 6);
  std::vector<HostTensor> ref = evaluate(g, host);
  std::vector<DeviceTensor> din = upload(gpu, host), dout = exe.allocateOutputs();
  exe.enqueue(din, dout);
  exe.synchronize();
  double worst = 0;
  for (size_t o = 1; o < g.outputs().size(); ++o)
    worst = std::max(worst, relativeError(din[g.updatedInput(o)].download(), ref[o]));
  bool ok = worst < 1e-5;
  llvm::outs() << llvm::formatv("one SGD step in place (lr 0.5): the 32 parameters differ from the "
                                "CPU reference by at most {0:e2} (relative) {1}\n",
                                worst, ok ? "ok" : "MISMATCH");
  return ok;
}

int run(int64_t dim, int layers, int64_t batch, bool small) {
  Graph grads = lecture::mlpTrain(dim, layers, batch, TrainStep::Gradients);
  Graph train = lecture::mlpTrain(dim, layers, batch, TrainStep::Accumulate);
  llvm::outs() << llvm::formatv("--- MLP training step: dim {0}, {1} layers, batch {2} (f32): "
                                "forward, mean, backward, gradients accumulated ---\n",
                                dim, layers, batch);
  std::string why;
  CompileOptions opt;
  opt.compileKernels = Device::available(&why);
  if (!opt.compileKernels) {
    CompiledGraph fused = compileGraph(train, opt);
    opt.fusion = false;
    CompiledGraph eager = compileGraph(train, opt);
    llvm::outs() << "fused: " << fused.numKernels()
                 << " kernels, one kernel per op: " << eager.numKernels()
                 << ". The first backward kernel (a matmul with the GeLU derivative as its "
                    "epilogue):\n\n"
                 << fused.detail->kernels[layers].cuda << "\nNo GPU here (" << why << "): nothing to run.\n\n";
    return 0;
  }
  Device gpu = Device::open();
  int status = 0;
  if (small) {
    std::vector<HostTensor> ins = trainInputs(grads, dim, 3);
    for (bool fused : {false, true}) {
      CheckedRun r = runAndCheck(grads, gpu, fused, 3, &ins);
      size_t bad = llvm::count_if(r.compare, [](const CompareResult &c) { return !c.ok; });
      llvm::outs() << llvm::formatv("{0}: the loss and 32 gradients against the CPU reference: "
                                    "{1}\n",
                                    fused ? "fused" : "one kernel per op",
                                    bad ? std::to_string(bad) + " MISMATCH" : std::string("ok"));
      status |= bad ? 1 : 0;
    }
    status |= checkAccumulation(train, gpu, dim) ? 0 : 1;
    status |= checkSgd(gpu, dim, layers, batch) ? 0 : 1;
  }
  llvm::outs() << llvm::formatv("\n{0,-30} {1,8} {2,14}\n", "one step", "kernels", "time (us)");
  std::vector<HostTensor> ins = trainInputs(train, dim, 4);
  Profile profile;
  for (bool fused : {false, true})
    for (bool replay : {false, true}) {
      opt.fusion = fused;
      opt.device = gpu.properties();
      Executable exe(gpu, compileGraph(train, opt).program);
      exe.setGraphReplay(replay);
      std::vector<DeviceTensor> din = upload(gpu, ins), dout = exe.allocateOutputs();
      RunTiming t = timeExecutable(exe, din, dout, small ? 200 : 20, small ? 20 : 3);
      llvm::outs() << llvm::formatv("{0,-30} {1,8} {2,14:f1}\n",
                                    std::string(fused ? "fused" : "one kernel per op") +
                                        (replay ? " + graph replay" : ""),
                                    exe.program().kernels.size(), t.medianUs);
      if (fused && !replay)
        profile = profileExecutable(exe, din, dout, small ? 50 : 5);
    }
  llvm::outs() << "\nthe fused step, kernel by kernel:\n" << formatProfile(profile) << "\n";
  return status;
}

} // namespace

int main() {
  try {
    int status = run(128, 16, 128, /*small=*/true);
    status |= run(4096, 4, 4096, /*small=*/false);
    return status;
  } catch (const Error &e) {
    llvm::errs() << "error: " << e.what() << "\n";
    return 1;
  }
}
