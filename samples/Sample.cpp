//===- samples/Sample.cpp - the lecture's comparison, one function --------===//
#include "samples/Sample.h"

#include "compiler/nvrtc/Nvrtc.h"
#include "tools/Harness.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace minijit {

namespace {

/// A Program around one hand-written kernel.
Program handWrittenProgram(const Graph &g, const HandWritten &hw, const Target &target) {
  Program p;
  p.graphName = g.name() + "_handwritten";
  p.arch = target.name();
  ProgramKernel k;
  k.name = hw.entry;
  k.source = hw.source;
  NvrtcOutput out = compileWithNvrtc(hw.source, hw.entry, target, {"-lineinfo"});
  k.cubin = out.cubin;
  k.ptx = out.ptx;
  k.resources = out.resources;
  k.block = hw.block;
  k.grid = hw.grid;
  for (ValueId in : g.inputs()) {
    const Node &n = g.node(in);
    p.inputs.push_back(static_cast<int>(p.buffers.size()));
    k.args.push_back(static_cast<int>(p.buffers.size()));
    k.bytesRead += n.shape.numel() * dtypeSize(n.dtype);
    p.buffers.push_back({n.name, n.dtype, n.shape, ProgramBuffer::Role::Input, -1});
  }
  const Node &o = g.node(g.outputs()[0]);
  p.outputs.push_back(static_cast<int>(p.buffers.size()));
  k.args.push_back(static_cast<int>(p.buffers.size()));
  k.bytesWritten = o.shape.numel() * dtypeSize(o.dtype);
  p.buffers.push_back({o.name, o.dtype, o.shape, ProgramBuffer::Role::Output, -1});
  p.kernels.push_back(std::move(k));
  return p;
}

struct Row {
  std::string how;
  size_t kernels = 0;
  int64_t bytes = 0;
  double us = 0;
  bool ok = false;
  std::string check;
};

Row measure(const std::string &how, const Device &gpu, const Graph &g, const Program &p,
            const std::vector<HostTensor> &inputs, const std::vector<HostTensor> &ref,
            Profile *profile) {
  Row r;
  r.how = how;
  r.kernels = p.kernels.size();
  r.bytes = p.bytesMoved();
  Executable exe(gpu, p);
  std::vector<DeviceTensor> din;
  for (const HostTensor &h : inputs)
    din.push_back(DeviceTensor::fromHost(gpu, h));
  std::vector<DeviceTensor> dout = exe.allocateOutputs();
  poisonTensors(dout);
  exe.enqueue(din, dout);
  exe.synchronize();
  r.ok = true;
  for (size_t i = 0; i < dout.size(); ++i) {
    CompareResult c = compareTensors(dout[i].download(), ref[i], toleranceFor(g, g.outputs()[i]));
    r.ok = r.ok && c.ok;
    r.check += c.summary;
  }
  r.us = timeExecutable(exe, din, dout, 100, 10).medianUs;
  if (profile)
    *profile = profileExecutable(exe, din, dout, 100);
  return r;
}

} // namespace

int runSample(const std::string &title, const Graph &g, const HandWritten &hw) {
  llvm::outs() << "=== " << title << " ===\n\n" << printGraph(g) << "\n";
  try {
    CompileOptions opt;
    std::string why;
    bool haveGpu = Device::available(&why);
    std::optional<Device> gpu;
    if (haveGpu) {
      gpu = Device::open();
      opt.device = gpu->properties();
    }
    CompiledGraph fused = compileGraph(g, opt);
    opt.fusion = false;
    CompiledGraph eager = compileGraph(g, opt);
    llvm::outs() << "Fused, the graph is " << fused.numKernels()
                 << " kernel; one kernel per op (fusion off) it is " << eager.numKernels()
                 << ". The fused kernel minijit generates:\n\n";
    for (const CompiledKernel &k : fused.detail->kernels)
      llvm::outs() << k.cuda << "\n";
    if (!haveGpu) {
      llvm::outs() << "No GPU here (" << why << "). With one, this sample runs the graph one "
                   << "kernel per op, fused, and as a hand-written CUDA kernel ("
                   << hw.entry << "), checks each against the CPU reference, and prints times, "
                   << "GB/s and the per-kernel profile of the unfused run.\n\n";
      return 0;
    }
    std::vector<HostTensor> inputs = randomInputs(g, 1);
    std::vector<HostTensor> ref = evaluate(g, inputs);
    double copy = measureCopyBandwidth(*gpu);
    Profile eagerProfile;
    std::vector<Row> rows;
    rows.push_back(measure("one kernel per op", *gpu, g, eager.program, inputs, ref, &eagerProfile));
    rows.push_back(measure("fused (minijit)", *gpu, g, fused.program, inputs, ref, nullptr));
    rows.push_back(measure("hand-written CUDA", *gpu, g,
                           handWrittenProgram(g, hw, gpu->properties().target()), inputs, ref,
                           nullptr));
    llvm::outs() << llvm::formatv("On {0} (device-to-device copy: {1:f0} GB/s), median of 100 "
                                  "runs:\n\n",
                                  gpu->properties().name, copy);
    llvm::outs() << llvm::formatv("{0,-20} {1,8} {2,14} {3,10} {4,9} {5,7}  {6}\n", "", "kernels",
                                  "bytes moved", "time (us)", "GB/s", "% copy", "vs reference");
    int status = 0;
    for (const Row &r : rows) {
      double gbps = r.bytes / (r.us * 1e3);
      llvm::outs() << llvm::formatv("{0,-20} {1,8} {2,14} {3,10:f2} {4,9:f0} {5,6:f1}%  {6}\n",
                                    r.how, r.kernels, r.bytes, r.us, gbps, 100 * gbps / copy,
                                    r.ok ? "ok" : "MISMATCH: " + r.check);
      status |= r.ok ? 0 : 1;
    }
    llvm::outs() << "\nWhere the time goes when every op is its own kernel:\n"
                 << formatProfile(eagerProfile) << "\n";
    return status;
  } catch (const Error &e) {
    llvm::errs() << "error: " << e.what() << "\n";
    return 1;
  }
}

} // namespace minijit
