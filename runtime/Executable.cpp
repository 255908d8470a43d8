//===- runtime/Executable.cpp - a Program loaded and ready to run ---------===//
#include "runtime/Executable.h"

#include "ir/Error.h"
#include "runtime/Driver.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit {

void checkTensorDevice(const char *call, const char *role, const std::string &name,
                       int tensorDevice, int executableDevice) {
  if (tensorDevice == executableDevice)
    return;
  throw GraphError(llvm::formatv("{0}: {1} %{2} is on device {3} but the executable runs on "
                                 "device {4}",
                                 call, role, name, tensorDevice, executableDevice)
                       .str());
}

bool loadsOn(const Program &program, const DeviceProperties &device) {
  // sm_90a (architecture-specific features) runs on sm_90 devices only, as sm_90 does.
  llvm::StringRef progArch(program.arch);
  progArch.consume_back("a");
  return progArch == device.arch();
}

Executable::Executable(const Device &dev, Program program) : Dev(dev), Prog(std::move(program)) {
  const Driver &d = Driver::get();
  Dev.makeCurrent();
  std::string devArch = Dev.properties().arch();
  for (const ProgramKernel &k : Prog.kernels) {
    if (k.cubin.empty())
      throw CudaError(llvm::formatv("cannot load kernel {0}: it has no CUBIN (the program was "
                                    "compiled without NVRTC)",
                                    k.name)
                          .str());
    if (!loadsOn(Prog, Dev.properties()))
      throw CudaError(llvm::formatv("cannot load kernel {0}: it was compiled for {1}, the device "
                                    "({2}) is {3}; compile for the device",
                                    k.name, Prog.arch, Dev.properties().name, devArch)
                          .str());
    // The modules loaded so far are released by their handles if this or
    // any later step throws.
    ModuleHandle m;
    CUresult r = d.cuModuleLoadData(m.receive(), k.cubin.data());
    if (r != CUDA_SUCCESS)
      throw CudaError(llvm::formatv("cannot load kernel {0} ({1} bytes of CUBIN for {2}): "
                                    "cuModuleLoadData failed: {3}",
                                    k.name, k.cubin.size(), k.arch.empty() ? Prog.arch : k.arch,
                                    d.errorText(r))
                          .str());
    Modules.push_back(std::move(m));
    CUfunction f = nullptr;
    const std::string &entry = k.entry.empty() ? k.name : k.entry;
    d.check(d.cuModuleGetFunction(&f, Modules.back().get(), entry.c_str()), "cuModuleGetFunction");
    Functions.push_back(f);
    // Above 48 KiB a block gets dynamic shared memory only once asked for.
    if (k.dynamicShared > 48 * 1024) {
      CUresult r = d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(k.dynamicShared));
      if (r != CUDA_SUCCESS)
        throw CudaError(llvm::formatv("kernel {0} needs {1} bytes of shared memory, more than "
                                      "{2} allows: {3}",
                                      k.name, k.dynamicShared, Dev.properties().name,
                                      d.errorText(r))
                            .str());
    }
  }
  for (size_t k = 0; k < Prog.kernels.size(); ++k) {
    const ProgramKernel &pk = Prog.kernels[k];
    if (!pk.coResident)
      continue;
    int64_t resident = int64_t(residentBlocks(k)) * Dev.properties().smCount;
    if (pk.grid > resident)
      throw CudaError(llvm::formatv("cannot run kernel {0}: its {1} blocks wait for each other, but "
                                    "{2} holds only {3} of them at once ({4} per SM); compile for "
                                    "this device",
                                    pk.name, pk.grid, Dev.properties().name, resident,
                                    residentBlocks(k))
                          .str());
  }
  for (int64_t bytes : Prog.slotBytes)
    Slots.emplace_back(Dev, DType::Bool, Shape{std::max<int64_t>(bytes, 1)});
  Address.assign(Prog.buffers.size(), 0);
  for (size_t b = 0; b < Prog.buffers.size(); ++b)
    if (Prog.buffers[b].role == ProgramBuffer::Role::Temp)
      Address[b] = Slots[Prog.buffers[b].slot].data();
  WorkAddress.assign(Prog.kernels.size(), 0);
  for (size_t k = 0; k < Prog.kernels.size(); ++k) {
    int64_t bytes = Prog.kernels[k].workspaceBytes;
    if (bytes == 0)
      continue;
    Work.emplace_back(Dev, DType::Bool, Shape{bytes});
    d.check(d.cuMemsetD8(Work.back().data(), 0, static_cast<size_t>(bytes)), "cuMemsetD8");
    WorkAddress[k] = Work.back().data();
  }
  // The memsets ran on the legacy stream, which this executable's
  // non-blocking stream does not wait for.
  if (!Work.empty())
    d.check(d.cuStreamSynchronize(CU_STREAM_LEGACY), "cuStreamSynchronize");
  Maps.resize(Prog.kernels.size());
  MapAddress.resize(Prog.kernels.size());
  for (size_t k = 0; k < Prog.kernels.size(); ++k) {
    Maps[k].resize(Prog.kernels[k].tensorMaps.size());
    MapAddress[k].assign(Prog.kernels[k].tensorMaps.size(), 0);
  }
  encodeTensorMaps(); // the temporaries' maps; the inputs' and outputs' follow at bind
  buildParams();
  d.check(d.cuStreamCreate(Stream.receive(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

void Executable::buildParams() {
  Params.clear();
  for (size_t k = 0; k < Prog.kernels.size(); ++k) {
    std::vector<void *> p;
    for (int b : Prog.kernels[k].args)
      p.push_back(&Address[b]);
    for (int64_t &size : Prog.kernels[k].sizeArgs)
      p.push_back(&size);
    if (Prog.kernels[k].workspaceBytes)
      p.push_back(&WorkAddress[k]);
    for (CUtensorMap &m : Maps[k])
      p.push_back(&m);
    Params.push_back(std::move(p));
  }
}

void Executable::encodeTensorMaps() {
  const Driver &d = Driver::get();
  for (size_t k = 0; k < Prog.kernels.size(); ++k)
    for (size_t i = 0; i < Prog.kernels[k].tensorMaps.size(); ++i) {
      const TensorMapSpec &t = Prog.kernels[k].tensorMaps[i];
      CUdeviceptr base = Address[t.buffer];
      if (base == 0 || base == MapAddress[k][i])
        continue; // not bound yet, or encoded for this address already
      size_t rank = t.dims.size();
      int64_t elem = dtypeSize(t.dtype);
      cuuint64_t dims[5], strides[4];
      cuuint32_t box[5], unit[5];
      for (size_t j = 0; j < rank; ++j) {
        dims[j] = static_cast<cuuint64_t>(t.dims[j]);
        box[j] = t.box[j];
        unit[j] = 1;
        if (j > 0)
          strides[j - 1] = static_cast<cuuint64_t>(t.strides[j - 1] * elem);
      }
      CUresult r = d.cuTensorMapEncodeTiled(
          &Maps[k][i],
          t.dtype == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
          static_cast<cuuint32_t>(rank), reinterpret_cast<void *>(base + t.offset * elem), dims,
          strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS)
        throw CudaError(llvm::formatv("kernel {0}: cuTensorMapEncodeTiled for %{1} failed: {2}",
                                      Prog.kernels[k].name, Prog.buffers[t.buffer].name,
                                      d.errorText(r))
                            .str());
      MapAddress[k][i] = base;
    }
}

Executable::Executable(Executable &&o) noexcept
    : Dev(o.Dev), Prog(std::move(o.Prog)), Stream(std::move(o.Stream)),
      Modules(std::move(o.Modules)), Functions(std::move(o.Functions)), Slots(std::move(o.Slots)),
      Work(std::move(o.Work)), Address(std::move(o.Address)),
      WorkAddress(std::move(o.WorkAddress)), Maps(std::move(o.Maps)),
      MapAddress(std::move(o.MapAddress)), UseGraph(o.UseGraph), Graph(std::move(o.Graph)),
      GraphExec(std::move(o.GraphExec)), GraphAddress(std::move(o.GraphAddress)) {
  buildParams(); // the parameter arrays point into Address, whose storage moved with it
  o.Modules.clear();
}

Executable::~Executable() {
  // The handles release the graph, the modules and the stream after this,
  // in the device's context, once the work queued has finished.
  if (!Stream && Modules.empty())
    return;
  Dev.makeCurrent();
  if (Stream)
    Driver::get().cuStreamSynchronize(Stream.get());
}

void Executable::checkInputs(const char *call, std::span<const DeviceTensor> inputs) const {
  if (inputs.size() != Prog.inputs.size())
    throw GraphError(llvm::formatv("graph '{0}' takes {1} input{2}, got {3}", Prog.graphName,
                                   Prog.inputs.size(), Prog.inputs.size() == 1 ? "" : "s",
                                   inputs.size())
                         .str());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ProgramBuffer &b = Prog.buffers[Prog.inputs[i]];
    if (!inputs[i].valid() || inputs[i].dtype() != b.dtype || inputs[i].shape() != b.shape)
      throw GraphError(llvm::formatv("input {0} (%{1}): expected {2}{3}, got {4}", i, b.name,
                                     dtypeName(b.dtype), b.shape.str(),
                                     inputs[i].valid() ? std::string(dtypeName(inputs[i].dtype())) +
                                                             inputs[i].shape().str()
                                                       : std::string("an empty tensor"))
                           .str());
    checkTensorDevice(call, "input", b.name, inputs[i].device().ordinal(), Dev.ordinal());
  }
}

void Executable::bind(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs) {
  bindAs("bind", inputs, outputs);
}

void Executable::bindAs(const char *call, std::span<const DeviceTensor> inputs,
                        std::span<const DeviceTensor> outputs) {
  checkInputs(call, inputs);
  if (outputs.size() != Prog.outputs.size())
    throw GraphError(llvm::formatv("graph '{0}' has {1} outputs, got {2} output tensors",
                                   Prog.graphName, Prog.outputs.size(), outputs.size())
                         .str());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ProgramBuffer &b = Prog.buffers[Prog.outputs[i]];
    if (!outputs[i].valid() || outputs[i].dtype() != b.dtype || outputs[i].shape() != b.shape)
      throw GraphError(llvm::formatv("output {0} (%{1}): expected a {2}{3} tensor", i, b.name,
                                     dtypeName(b.dtype), b.shape.str())
                           .str());
    checkTensorDevice(call, "output", b.name, outputs[i].device().ordinal(), Dev.ordinal());
  }
  Dev.makeCurrent(); // the tensor maps are encoded in the device's context
  for (size_t i = 0; i < inputs.size(); ++i)
    Address[Prog.inputs[i]] = inputs[i].data();
  for (size_t i = 0; i < outputs.size(); ++i)
    Address[Prog.outputs[i]] = outputs[i].data();
  encodeTensorMaps();
}

void Executable::launchKernel(size_t k) {
  Dev.makeCurrent();
  launch(k);
}

void Executable::launch(size_t k) {
  const Driver &d = Driver::get();
  const ProgramKernel &pk = Prog.kernels[k];
  CUresult r = d.cuLaunchKernel(Functions[k], static_cast<unsigned>(pk.grid), 1, 1, pk.block, 1, 1,
                                pk.dynamicShared, Stream.get(), Params[k].data(), nullptr);
  if (r != CUDA_SUCCESS)
    throw CudaError(llvm::formatv("launching kernel {0} (grid {1}, block {2}) failed: {3}", pk.name,
                                  pk.grid, pk.block, d.errorText(r))
                        .str());
}

void Executable::copyUpdates() {
  const Driver &d = Driver::get();
  for (size_t o = 0; o < Prog.updates.size(); ++o) {
    int in = Prog.updates[o];
    if (in < 0)
      continue;
    const ProgramBuffer &b = Prog.buffers[Prog.outputs[o]];
    d.check(d.cuMemcpyDtoDAsync(Address[Prog.inputs[in]], Address[Prog.outputs[o]],
                                static_cast<size_t>(b.bytes()), Stream.get()),
            "cuMemcpyDtoDAsync (an update in place)");
  }
}

void Executable::launchAll() {
  if (!UseGraph) {
    for (size_t k = 0; k < Functions.size(); ++k)
      launch(k);
    copyUpdates();
    return;
  }
  const Driver &d = Driver::get();
  if (!GraphExec || GraphAddress != Address) {
    GraphExec.reset();
    Graph.reset();
    d.check(d.cuStreamBeginCapture(Stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture");
    try {
      for (size_t k = 0; k < Functions.size(); ++k)
        launch(k);
      copyUpdates();
    } catch (...) {
      GraphHandle partial;
      d.cuStreamEndCapture(Stream.get(), partial.receive());
      throw;
    }
    d.check(d.cuStreamEndCapture(Stream.get(), Graph.receive()), "cuStreamEndCapture");
    d.check(d.cuGraphInstantiateWithFlags(GraphExec.receive(), Graph.get(), 0),
            "cuGraphInstantiate");
    GraphAddress = Address;
  }
  d.check(d.cuGraphLaunch(GraphExec.get(), Stream.get()), "cuGraphLaunch");
}

void Executable::enqueue(std::span<const DeviceTensor> inputs,
                         std::span<const DeviceTensor> outputs) {
  bindAs("enqueue", inputs, outputs); // makes the device's context current
  launchAll();
}

void Executable::synchronize() {
  Dev.makeCurrent();
  const Driver &d = Driver::get();
  CUresult r = d.cuStreamSynchronize(Stream.get());
  if (r != CUDA_SUCCESS)
    throw CudaError(llvm::formatv("running graph '{0}' failed: {1}", Prog.graphName,
                                  d.errorText(r))
                        .str());
}

std::vector<DeviceTensor> Executable::allocateOutputs() {
  std::vector<DeviceTensor> outs;
  for (size_t i = 0; i < Prog.outputs.size(); ++i) {
    // An output listed twice shares one tensor.
    bool repeat = false;
    for (size_t j = 0; j < i && !repeat; ++j)
      if (Prog.outputs[j] == Prog.outputs[i]) {
        outs.push_back(outs[j]);
        repeat = true;
      }
    if (repeat)
      continue;
    const ProgramBuffer &b = Prog.buffers[Prog.outputs[i]];
    outs.emplace_back(Dev, b.dtype, b.shape);
  }
  return outs;
}

std::vector<DeviceTensor> Executable::run(std::span<const DeviceTensor> inputs) {
  Dev.makeCurrent();
  checkInputs("run", inputs);
  std::vector<DeviceTensor> outs = allocateOutputs();
  enqueue(inputs, outs);
  synchronize();
  return outs;
}

std::vector<HostTensor> Executable::run(std::span<const HostTensor> inputs) {
  Dev.makeCurrent();
  if (inputs.size() != Prog.inputs.size())
    throw GraphError(llvm::formatv("graph '{0}' takes {1} inputs, got {2}", Prog.graphName,
                                   Prog.inputs.size(), inputs.size())
                         .str());
  std::vector<DeviceTensor> dins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ProgramBuffer &b = Prog.buffers[Prog.inputs[i]];
    if (inputs[i].dtype() != b.dtype || inputs[i].shape() != b.shape)
      throw GraphError(llvm::formatv("input {0} (%{1}): expected {2}{3}, got {4}{5}", i, b.name,
                                     dtypeName(b.dtype), b.shape.str(),
                                     dtypeName(inputs[i].dtype()), inputs[i].shape().str())
                           .str());
    dins.push_back(DeviceTensor::fromHost(Dev, inputs[i]));
  }
  std::vector<DeviceTensor> douts = run(dins);
  std::vector<HostTensor> outs;
  for (const DeviceTensor &t : douts)
    outs.push_back(t.download());
  return outs;
}

int Executable::residentBlocks(size_t k) const {
  Dev.makeCurrent();
  const Driver &d = Driver::get();
  int blocks = 0;
  d.check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Functions[k],
                                                        static_cast<int>(Prog.kernels[k].block),
                                                        Prog.kernels[k].dynamicShared),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

} // namespace minijit
