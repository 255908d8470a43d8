//===- samples/mlp.cpp - the lecture's MLP ---------------------------------===//
// run_mlp(dim=128, num_layers=16, batch_size=128): 16 times a matmul then a
// GeLU. Small: each layer is a few microseconds of work, so the launches
// dominate; fusing each GeLU into its matmul halves the kernels, and a CUDA
// graph replays all of them with one call. Large (dim 4096, 4 layers, batch
// 4096): the matmuls dominate, the compute-bound regime.
//===----------------------------------------------------------------------===//
#include "samples/Lecture.h"
#include "tools/Harness.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace minijit;

namespace {

int run(int64_t dim, int layers, int64_t batch, bool check) {
  Graph g = lecture::mlp(dim, layers, batch);
  llvm::outs() << llvm::formatv("--- MLP: dim {0}, {1} layers, batch {2} (f32) ---\n", dim, layers,
                                batch);
  std::string why;
  CompileOptions opt;
  if (!Device::available(&why)) {
    CompiledGraph c = compileGraph(g, opt);
    opt.fusion = false;
    CompiledGraph e = compileGraph(g, opt);
    llvm::outs() << "fused: " << c.numKernels() << " kernels, unfused: "
                 << e.numKernels() << ". The first layer's fused kernel:\n\n"
                 << c.detail->kernels[0].cuda << "\nNo GPU here (" << why << "): nothing to run.\n\n";
    return 0;
  }
  Device gpu = Device::open();
  double flops = 2.0 * batch * dim * dim * layers;
  int status = 0;
  llvm::outs() << llvm::formatv("{0,-28} {1,8} {2,12} {3,10}  {4}\n", "", "kernels", "time (us)",
                                "TFLOP/s", "vs reference");
  for (bool fused : {false, true})
    for (bool replay : {false, true}) {
      std::vector<HostTensor> ins = randomInputs(g, 3);
      // Scale the weights so activations stay O(1) through the layers.
      for (size_t i = 1; i < ins.size(); ++i)
        for (int64_t e = 0; e < ins[i].numel(); ++e)
          ins[i].set(e, ins[i].get(e) / std::sqrt(static_cast<double>(dim)));
      std::string verdict = "not checked (large)";
      if (check) {
        CheckedRun r = runAndCheck(g, gpu, fused, 3, &ins);
        verdict = r.ok ? "ok" : "MISMATCH: " + r.compare[0].summary;
        status |= r.ok ? 0 : 1;
      }
      opt.fusion = fused;
      opt.device = gpu.properties();
      Executable exe(gpu, compileGraph(g, opt).program);
      exe.setGraphReplay(replay);
      std::vector<DeviceTensor> din;
      for (const HostTensor &h : ins)
        din.push_back(DeviceTensor::fromHost(gpu, h));
      std::vector<DeviceTensor> dout = exe.allocateOutputs();
      RunTiming t = timeExecutable(exe, din, dout, 100, 10);
      llvm::outs() << llvm::formatv("{0,-28} {1,8} {2,12:f2} {3,10:f2}  {4}\n",
                                    std::string(fused ? "fused" : "one kernel per op") +
                                        (replay ? " + graph replay" : ""),
                                    exe.program().kernels.size(), t.medianUs,
                                    flops / (t.medianUs * 1e6), verdict);
    }
  llvm::outs() << "\n";
  return status;
}

} // namespace

int main() {
  try {
    int status = run(128, 16, 128, /*check=*/true);
    status |= run(4096, 4, 4096, /*check=*/false);
    return status;
  } catch (const Error &e) {
    llvm::errs() << "error: " << e.what() << "\n";
    return 1;
  }
}
