//===- runtime/Executable.cpp - a Program loaded and ready to run ---------===//
#include "runtime/Executable.h"

#include "ir/Error.h"
#include "runtime/Driver.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <map>

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
  Expected<Target> t = parseTarget(program.arch);
  return t && t->ccMajor == device.ccMajor && t->ccMinor == device.ccMinor;
}

/// One binding's program, loaded: its modules and functions, temporaries,
/// the table of buffer addresses its launches read, and its CUDA graph.
struct Executable::Instance {
  Program Prog;
  DimBindings Sizes; ///< empty for a graph without names
  // Destroyed in reverse order: the graph before the modules it launches.
  std::vector<std::shared_ptr<const ModuleHandle>> Modules;
  std::vector<CUfunction> Functions;
  std::vector<DeviceTensor> Slots;      ///< temporaries' memory, while in use
  std::vector<DeviceTensor> Work;       ///< kernels' zeroed scratch (ProgramKernel::workspaceBytes)
  std::vector<CUdeviceptr> Address;     ///< per buffer, the address bound now
  std::vector<CUdeviceptr> WorkAddress; ///< per kernel, its scratch or 0
  /// Per kernel, its TMA descriptors (ProgramKernel::tensorMaps) and the
  /// buffer address each was encoded for.
  std::vector<std::vector<CUtensorMap>> Maps;
  std::vector<std::vector<CUdeviceptr>> MapAddress;
  /// Per kernel, pointers into Address, the sizes, WorkAddress and Maps.
  std::vector<std::vector<void *>> Params;
  GraphHandle Graph;
  GraphExecHandle GraphExec;
  std::vector<CUdeviceptr> GraphAddress; ///< the addresses the graph was captured with
  /// Per graph output, the index of its value's first listing (itself but
  /// where the graph lists a value twice: simplify made two results one).
  std::vector<size_t> FirstListing;
  /// Per graph output, the tensor bound to it: a value listed twice is
  /// written to its first listing's tensor and copied to any other
  /// (copyRepeats).
  std::vector<CUdeviceptr> OutputAddress;
  std::vector<CUdeviceptr> GraphOutputAddress; ///< OutputAddress when the graph was captured

  /// Whether the instance holds memory of its own now (temporaries, scratch).
  bool holdsMemory() const { return !Slots.empty() || !Work.empty(); }

  void buildParams() {
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

  /// Encodes each kernel's TMA descriptors whose buffer's address changed.
  void encodeTensorMaps() {
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
            t.dtype == DType::BF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
            : t.dtype == DType::F32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 // read as TF32 by wgmma
                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
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
};

namespace {

/// A kernel of clusters (ProgramKernel::cluster) must fit one cluster on
/// the device. A persistent one launched with more clusters than the device
/// holds at once would run the rest after the first finish, each walking a
/// share of the work again: its grid becomes the clusters the device holds
/// (the SMs of a cluster share a GPC, so that may be fewer than SMs /
/// cluster).
void fitClusters(ProgramKernel &pk, CUfunction f) {
  if (pk.cluster <= 1)
    return;
  const Driver &d = Driver::get();
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(pk.grid);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = pk.block;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = pk.dynamicShared;
  int clusters = 0;
  d.check(d.cuOccupancyMaxActiveClusters(&clusters, f, &config), "cuOccupancyMaxActiveClusters");
  if (clusters <= 0)
    throw CudaError(llvm::formatv("cannot run kernel {0}: the device holds no cluster of {1} of "
                                  "its blocks ({2} threads, {3} bytes of shared memory each)",
                                  pk.name, pk.cluster, pk.block, pk.dynamicShared)
                        .str());
  if (pk.persistent)
    pk.grid = std::min<int64_t>(pk.grid, int64_t(clusters) * pk.cluster);
}

} // namespace

Executable::Executable(const Device &dev, Program program) : Dev(dev) {
  Dev.makeCurrent();
  GraphName = program.graphName;
  Instances.push_back(load(std::move(program), {}));
  Cur = Instances.back().get();
  acquireMemory(*Cur);
  Driver::get().check(Driver::get().cuStreamCreate(Stream.receive(), CU_STREAM_NON_BLOCKING),
                      "cuStreamCreate");
}

Executable::Executable(const Device &dev, std::string graphName,
                       std::vector<ProgramArgument> arguments, ProgramMaker make)
    : Dev(dev), GraphName(std::move(graphName)), Arguments(std::move(arguments)),
      Make(std::move(make)) {
  Dev.makeCurrent();
  Driver::get().check(Driver::get().cuStreamCreate(Stream.receive(), CU_STREAM_NON_BLOCKING),
                      "cuStreamCreate");
}

std::unique_ptr<Executable::Instance> Executable::load(Program program, DimBindings sizes) {
  const Driver &d = Driver::get();
  auto in = std::make_unique<Instance>();
  in->Prog = std::move(program);
  in->Sizes = std::move(sizes);
  const Program &prog = in->Prog;
  std::string devArch = Dev.properties().arch();
  for (const ProgramKernel &k : prog.kernels) {
    if (k.cubin.empty())
      throw CudaError(llvm::formatv("cannot load kernel {0}: it has no CUBIN (the program was "
                                    "compiled without NVRTC)",
                                    k.name)
                          .str());
    if (!loadsOn(prog, Dev.properties()))
      throw CudaError(llvm::formatv("cannot load kernel {0}: it was compiled for {1}, the device "
                                    "({2}) is {3}; compile for the device",
                                    k.name, prog.arch, Dev.properties().name, devArch)
                          .str());
    // A kernel that shares another's image shares its module too.
    in->Modules.push_back(Dev.loadModule(k.cubin, "kernel " + k.name));
    CUfunction f = nullptr;
    const std::string &entry = k.entry.empty() ? k.name : k.entry;
    d.check(d.cuModuleGetFunction(&f, in->Modules.back()->get(), entry.c_str()),
            "cuModuleGetFunction");
    in->Functions.push_back(f);
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
  for (size_t k = 0; k < prog.kernels.size(); ++k)
    fitClusters(in->Prog.kernels[k], in->Functions[k]);
  for (size_t k = 0; k < prog.kernels.size(); ++k) {
    const ProgramKernel &pk = prog.kernels[k];
    if (!pk.coResident)
      continue;
    int blocks = 0;
    d.check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, in->Functions[k],
                                                          static_cast<int>(pk.block),
                                                          pk.dynamicShared),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    int64_t resident = int64_t(blocks) * Dev.properties().smCount;
    if (pk.grid > resident)
      throw CudaError(llvm::formatv("cannot run kernel {0}: its {1} blocks wait for each other, but "
                                    "{2} holds only {3} of them at once ({4} per SM); compile for "
                                    "this device",
                                    pk.name, pk.grid, Dev.properties().name, resident, blocks)
                          .str());
  }
  std::map<int, size_t> listed; // buffer -> its first listing
  for (size_t o = 0; o < prog.outputs.size(); ++o)
    in->FirstListing.push_back(listed.try_emplace(prog.outputs[o], o).first->second);
  in->Address.assign(prog.buffers.size(), 0);
  in->WorkAddress.assign(prog.kernels.size(), 0);
  in->Maps.resize(prog.kernels.size());
  in->MapAddress.resize(prog.kernels.size());
  for (size_t k = 0; k < prog.kernels.size(); ++k) {
    in->Maps[k].resize(prog.kernels[k].tensorMaps.size());
    in->MapAddress[k].assign(prog.kernels[k].tensorMaps.size(), 0);
  }
  in->buildParams();
  return in;
}

void Executable::acquireMemory(Instance &in) {
  if (in.holdsMemory())
    return;
  const Driver &d = Driver::get();
  const Program &prog = in.Prog;
  for (int64_t bytes : prog.slotBytes)
    in.Slots.emplace_back(Dev, DType::Bool, Shape{std::max<int64_t>(bytes, 1)});
  for (size_t b = 0; b < prog.buffers.size(); ++b)
    if (prog.buffers[b].role == ProgramBuffer::Role::Temp)
      in.Address[b] = in.Slots[prog.buffers[b].slot].data();
  for (size_t k = 0; k < prog.kernels.size(); ++k) {
    int64_t bytes = prog.kernels[k].workspaceBytes;
    if (bytes == 0)
      continue;
    in.Work.emplace_back(Dev, DType::Bool, Shape{bytes});
    d.check(d.cuMemsetD8(in.Work.back().data(), 0, static_cast<size_t>(bytes)), "cuMemsetD8");
    in.WorkAddress[k] = in.Work.back().data();
  }
  // The memsets ran on the legacy stream, which this executable's
  // non-blocking stream does not wait for.
  if (!in.Work.empty())
    d.check(d.cuStreamSynchronize(CU_STREAM_LEGACY), "cuStreamSynchronize");
  in.encodeTensorMaps(); // the temporaries' maps; the inputs' and outputs' follow at bind
}

Executable::Executable(Executable &&o) noexcept
    : Dev(o.Dev), GraphName(std::move(o.GraphName)), Arguments(std::move(o.Arguments)),
      Make(std::move(o.Make)), Stream(std::move(o.Stream)), Instances(std::move(o.Instances)),
      Cur(std::exchange(o.Cur, nullptr)), UseGraph(o.UseGraph),
      LastRunDone(std::move(o.LastRunDone)), LastRunStream(o.LastRunStream),
      LastRunHoldsOwnMemory(std::exchange(o.LastRunHoldsOwnMemory, false)) {}

Executable::~Executable() {
  // The handles release the graphs, the modules and the stream after this,
  // in the device's context, once the work queued has finished.
  if (!Stream && Instances.empty())
    return;
  Dev.makeCurrent();
  if (Stream)
    Driver::get().cuStreamSynchronize(Stream.get());
}

Executable::Instance &Executable::current() const {
  if (!Cur)
    throw GraphError("graph '" + GraphName +
                     "' has named dimensions and has not run yet: its program depends on the "
                     "sizes its inputs bring (run, bind or allocateOutputs(inputs) first)");
  return *Cur;
}

const Program &Executable::program() const { return current().Prog; }

const DimBindings &Executable::dims() const { return current().Sizes; }

Executable::Instance &Executable::select(const char *call, std::span<const Shape> shapes) {
  if (!Make)
    return current();
  // The binding of the last run again: its inputs' shapes, number by number.
  if (Cur && shapes.size() == Cur->Prog.inputs.size()) {
    bool same = true;
    for (size_t i = 0; i < shapes.size() && same; ++i)
      same = shapes[i].dims() == Cur->Prog.buffers[Cur->Prog.inputs[i]].shape.dims();
    if (same)
      return *Cur;
  }
  if (shapes.size() != Arguments.size())
    throw GraphError(llvm::formatv("{0}: graph '{1}' takes {2} input{3}, got {4}", call, GraphName,
                                   Arguments.size(), Arguments.size() == 1 ? "" : "s",
                                   shapes.size())
                         .str());
  DimBindings sizes;
  std::map<std::string, std::string> from;
  for (size_t i = 0; i < shapes.size(); ++i)
    matchShape(Arguments[i].shape, shapes[i], "input %" + Arguments[i].name, sizes, from);
  Instance *found = nullptr;
  for (const std::unique_ptr<Instance> &in : Instances)
    if (in->Sizes == sizes)
      found = in.get();
  if (!found) {
    Instances.push_back(load(Make(sizes), sizes));
    found = Instances.back().get();
  }
  if (found != Cur) {
    // Another binding takes over: the one in use gives its temporaries back
    // to the caching allocator, once the work that reads them is done.
    if (Cur && Cur->holdsMemory()) {
      synchronize();
      // The last run may have been on a caller's stream, which synchronize()
      // does not wait for.
      if (LastRunHoldsOwnMemory)
        Driver::get().check(Driver::get().cuEventSynchronize(LastRunDone.get()),
                            "cuEventSynchronize");
      LastRunHoldsOwnMemory = false;
      Cur->Slots.clear();
      Cur->Work.clear();
      std::fill(Cur->WorkAddress.begin(), Cur->WorkAddress.end(), 0);
      Cur->GraphExec.reset();
      Cur->Graph.reset();
    }
    Cur = found;
    acquireMemory(*Cur);
  }
  return *Cur;
}

Executable::Instance &Executable::select(const char *call, std::span<const DeviceTensor> inputs) {
  if (!Make)
    return current();
  std::vector<Shape> shapes;
  for (const DeviceTensor &t : inputs)
    shapes.push_back(t.valid() ? t.shape() : Shape());
  return select(call, shapes);
}

void Executable::checkInputs(const char *call, const Instance &in,
                             std::span<const DeviceTensor> inputs) const {
  const Program &prog = in.Prog;
  if (inputs.size() != prog.inputs.size())
    throw GraphError(llvm::formatv("graph '{0}' takes {1} input{2}, got {3}", prog.graphName,
                                   prog.inputs.size(), prog.inputs.size() == 1 ? "" : "s",
                                   inputs.size())
                         .str());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ProgramBuffer &b = prog.buffers[prog.inputs[i]];
    if (!inputs[i].valid() || inputs[i].dtype() != b.dtype || inputs[i].shape() != b.shape)
      throw GraphError(llvm::formatv("input {0} (%{1}): expected {2}{3}, got {4}", i, b.name,
                                     dtypeName(b.dtype), b.shape.boundStr(),
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
  Dev.makeCurrent(); // a new binding loads, the tensor maps are encoded, in the device's context
  Instance &in = select(call, inputs);
  checkInputs(call, in, inputs);
  const Program &prog = in.Prog;
  if (outputs.size() != prog.outputs.size())
    throw GraphError(llvm::formatv("graph '{0}' has {1} outputs, got {2} output tensors",
                                   prog.graphName, prog.outputs.size(), outputs.size())
                         .str());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ProgramBuffer &b = prog.buffers[prog.outputs[i]];
    if (!outputs[i].valid() || outputs[i].dtype() != b.dtype || outputs[i].shape() != b.shape)
      throw GraphError(llvm::formatv("output {0} (%{1}): expected a {2}{3} tensor", i, b.name,
                                     dtypeName(b.dtype), b.shape.boundStr())
                           .str());
    checkTensorDevice(call, "output", b.name, outputs[i].device().ordinal(), Dev.ordinal());
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    in.Address[prog.inputs[i]] = inputs[i].data();
  in.OutputAddress.assign(outputs.size(), 0);
  for (size_t i = 0; i < outputs.size(); ++i) {
    in.OutputAddress[i] = outputs[i].data();
    if (in.FirstListing[i] == i)
      in.Address[prog.outputs[i]] = outputs[i].data();
  }
  in.encodeTensorMaps();
}

void Executable::copyRepeats(Instance &in, CUstream stream) {
  const Driver &d = Driver::get();
  const Program &prog = in.Prog;
  for (size_t o = 0; o < prog.outputs.size(); ++o) {
    size_t first = in.FirstListing[o];
    const ProgramBuffer &b = prog.buffers[prog.outputs[o]];
    if (first == o || in.OutputAddress[o] == in.OutputAddress[first] || b.bytes() == 0)
      continue;
    d.check(d.cuMemcpyDtoDAsync(in.OutputAddress[o], in.Address[prog.outputs[o]],
                                static_cast<size_t>(b.bytes()), stream),
            "cuMemcpyDtoDAsync (an output listed twice)");
  }
}

void Executable::launchKernel(size_t k) {
  Dev.makeCurrent();
  launch(current(), k, Stream.get());
}

void Executable::launch(Instance &in, size_t k, CUstream stream) {
  const Driver &d = Driver::get();
  const ProgramKernel &pk = in.Prog.kernels[k];
  // Fusion gives a value of no elements no kernel (compiler/simplify/EmptyValues.h).
  assert(pk.grid > 0 && "no kernel runs over an empty domain");
  CUresult r = d.cuLaunchKernel(in.Functions[k], static_cast<unsigned>(pk.grid), 1, 1, pk.block, 1,
                                1, pk.dynamicShared, stream, in.Params[k].data(), nullptr);
  if (r != CUDA_SUCCESS)
    throw CudaError(llvm::formatv("launching kernel {0} (grid {1}, block {2}) failed: {3}", pk.name,
                                  pk.grid, pk.block, d.errorText(r))
                        .str());
}

void Executable::copyUpdates(Instance &in, CUstream stream) {
  const Driver &d = Driver::get();
  const Program &prog = in.Prog;
  for (size_t o = 0; o < prog.updates.size(); ++o) {
    int i = prog.updates[o];
    if (i < 0)
      continue;
    const ProgramBuffer &b = prog.buffers[prog.outputs[o]];
    if (b.bytes() == 0) // an empty tensor: nothing to copy, and maybe no address
      continue;
    d.check(d.cuMemcpyDtoDAsync(in.Address[prog.inputs[i]], in.Address[prog.outputs[o]],
                                static_cast<size_t>(b.bytes()), stream),
            "cuMemcpyDtoDAsync (an update in place)");
  }
}

void Executable::launchAll(Instance &in, CUstream stream) {
  // No kernel (every output is empty): nothing to capture in a CUDA graph.
  if (!UseGraph || in.Functions.empty()) {
    for (size_t k = 0; k < in.Functions.size(); ++k)
      launch(in, k, stream);
    copyRepeats(in, stream);
    copyUpdates(in, stream);
    return;
  }
  const Driver &d = Driver::get();
  if (!in.GraphExec || in.GraphAddress != in.Address || in.GraphOutputAddress != in.OutputAddress) {
    in.GraphExec.reset();
    in.Graph.reset();
    d.check(d.cuStreamBeginCapture(Stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture");
    try {
      for (size_t k = 0; k < in.Functions.size(); ++k)
        launch(in, k, Stream.get());
      copyRepeats(in, Stream.get());
      copyUpdates(in, Stream.get());
    } catch (...) {
      GraphHandle partial;
      d.cuStreamEndCapture(Stream.get(), partial.receive());
      throw;
    }
    d.check(d.cuStreamEndCapture(Stream.get(), in.Graph.receive()), "cuStreamEndCapture");
    d.check(d.cuGraphInstantiateWithFlags(in.GraphExec.receive(), in.Graph.get(), 0),
            "cuGraphInstantiate");
    in.GraphAddress = in.Address;
    in.GraphOutputAddress = in.OutputAddress;
  }
  d.check(d.cuGraphLaunch(in.GraphExec.get(), stream), "cuGraphLaunch");
}

void Executable::launchOrdered(Instance &in, CUstream stream) {
  const Driver &d = Driver::get();
  if (LastRunHoldsOwnMemory && stream != LastRunStream)
    d.check(d.cuStreamWaitEvent(stream, LastRunDone.get(), 0), "cuStreamWaitEvent");
  launchAll(in, stream);
  // Only a run that uses the executable's own memory (temporaries, scratch)
  // must end before a run on another stream begins; one that reads and
  // writes the caller's tensors alone is ordered by its caller, as the
  // caller's own kernels are, and records no event (host time a run).
  LastRunHoldsOwnMemory = in.holdsMemory();
  if (!LastRunHoldsOwnMemory)
    return;
  if (!LastRunDone)
    d.check(d.cuEventCreate(LastRunDone.receive(), CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  d.check(d.cuEventRecord(LastRunDone.get(), stream), "cuEventRecord");
  LastRunStream = stream;
}

void Executable::enqueue(std::span<const DeviceTensor> inputs,
                         std::span<const DeviceTensor> outputs) {
  bindAs("enqueue", inputs, outputs); // makes the device's context current
  launchOrdered(*Cur, Stream.get());
}

void Executable::enqueueOn(CUstream stream, std::span<const DeviceTensor> inputs,
                           std::span<const DeviceTensor> outputs) {
  bindAs("enqueue", inputs, outputs);
  launchOrdered(*Cur, stream);
}

void Executable::synchronize() {
  Dev.makeCurrent();
  const Driver &d = Driver::get();
  CUresult r = d.cuStreamSynchronize(Stream.get());
  if (r != CUDA_SUCCESS)
    throw CudaError(llvm::formatv("running graph '{0}' failed: {1}", GraphName, d.errorText(r))
                        .str());
}

std::vector<DeviceTensor> Executable::allocateOutputs() {
  const Instance &in = current();
  const Program &prog = in.Prog;
  std::vector<DeviceTensor> outs;
  for (size_t i = 0; i < prog.outputs.size(); ++i) {
    // An output listed twice shares one tensor.
    if (in.FirstListing[i] != i) {
      outs.push_back(outs[in.FirstListing[i]]);
      continue;
    }
    const ProgramBuffer &b = prog.buffers[prog.outputs[i]];
    outs.emplace_back(Dev, b.dtype, Shape(std::span<const int64_t>(b.shape.dims())));
  }
  return outs;
}

std::vector<DeviceTensor> Executable::allocateOutputs(std::span<const DeviceTensor> inputs) {
  Dev.makeCurrent();
  select("allocateOutputs", inputs);
  return allocateOutputs();
}

std::vector<DeviceTensor> Executable::run(std::span<const DeviceTensor> inputs) {
  Dev.makeCurrent();
  checkInputs("run", select("run", inputs), inputs);
  std::vector<DeviceTensor> outs = allocateOutputs();
  enqueue(inputs, outs);
  synchronize();
  return outs;
}

std::vector<HostTensor> Executable::run(std::span<const HostTensor> inputs) {
  Dev.makeCurrent();
  std::vector<Shape> shapes;
  for (const HostTensor &t : inputs)
    shapes.push_back(t.shape());
  const Program &prog = select("run", shapes).Prog;
  if (inputs.size() != prog.inputs.size())
    throw GraphError(llvm::formatv("graph '{0}' takes {1} inputs, got {2}", prog.graphName,
                                   prog.inputs.size(), inputs.size())
                         .str());
  std::vector<DeviceTensor> dins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ProgramBuffer &b = prog.buffers[prog.inputs[i]];
    if (inputs[i].dtype() != b.dtype || inputs[i].shape() != b.shape)
      throw GraphError(llvm::formatv("input {0} (%{1}): expected {2}{3}, got {4}{5}", i, b.name,
                                     dtypeName(b.dtype), b.shape.boundStr(),
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
  const Instance &in = current();
  const Driver &d = Driver::get();
  int blocks = 0;
  d.check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, in.Functions[k],
                                                        static_cast<int>(in.Prog.kernels[k].block),
                                                        in.Prog.kernels[k].dynamicShared),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

} // namespace minijit
