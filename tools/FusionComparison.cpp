//===- tools/FusionComparison.cpp - one graph fused and unfused -----------===//
#include "tools/FusionComparison.h"

namespace minijit {

std::vector<ComparedRun> compareFusion(const Graph &g, const Device &gpu, uint64_t seed,
                                       std::vector<HostTensor> &inputs, double copyBandwidth,
                                       bool profile, bool exactF32) {
  std::vector<ComparedRun> sides;
  for (bool fused : {true, false}) {
    CompileOptions opt;
    opt.fusion = fused;
    opt.tf32x3 = !exactF32;
    ComparedRun side{fused, runAndCheck(g, gpu, opt, seed, &inputs), {}, std::nullopt};
    Executable &exe = *side.run.executable;
    std::vector<DeviceTensor> din;
    for (const HostTensor &h : inputs)
      din.push_back(DeviceTensor::fromHost(gpu, h));
    std::vector<DeviceTensor> dout = exe.allocateOutputs();
    side.timing = timeExecutable(exe, din, dout, 100, 10);
    if (profile)
      side.profile = profiledRun(side.run.compiled,
                                 profileExecutable(exe, din, dout, 100, copyBandwidth));
    sides.push_back(std::move(side));
  }
  return sides;
}

} // namespace minijit
