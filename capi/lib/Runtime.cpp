//===- capi/lib/Runtime.cpp - devices, device buffers, executables --------===//
// The C API over runtime/: opening a GPU, device tensors for callers without
// an allocator of their own, executables that run on the caller's tensors
// (raw pointers or DLPack) on the caller's stream, and `compare`, fused
// against unfused with the profile as JSON.
//===----------------------------------------------------------------------===//
#include "capi/lib/CApiInternal.h"

#include "runtime/ProfileJsonValues.h"
#include "tools/FusionComparison.h"
#include "tools/Harness.h"
#include "tools/ProfileRecords.h"

#include "llvm/Support/JSON.h"

#include <cstring>

using namespace minijit;
using namespace minijit::capi;

namespace {

/// The caller's tensors as DeviceTensors of `dev` (wrapped, never freed),
/// into `out` (reused between runs).
void wrapTensors(const Device &dev, size_t n, const mjTensorRef *refs, const char *what,
                 std::vector<DeviceTensor> &out) {
  out.clear();
  if (n)
    require(refs, "mjExecutableEnqueue", what);
  for (size_t i = 0; i < n; ++i) {
    const mjTensorRef &r = refs[i];
    Shape s = toShape(r.rank, r.dims, "mjExecutableEnqueue");
    auto ptr = reinterpret_cast<CUdeviceptr>(r.data);
    // A tensor of no elements is never read or written: any address will
    // do, null among them (a zero-element torch tensor's data_ptr is 0).
    if (!s.isEmpty() && (ptr == 0 || ptr % 16 != 0))
      throw GraphError(std::string("mjExecutableEnqueue: ") + what + " " + std::to_string(i) +
                       (ptr == 0 ? " has a null address"
                                 : " is not 16-byte aligned, as the kernels' vector accesses need"));
    out.push_back(DeviceTensor::wrap(dev, ptr, toDType(r.dtype, "mjExecutableEnqueue"), s));
  }
}

/// The DLPack tensors as DeviceTensors of `dev`, borrowed.
void wrapDLPack(const Device &dev, size_t n, void *const *managed, const char *what,
                std::vector<DeviceTensor> &out) {
  out.clear();
  if (n)
    require(managed, "mjExecutableEnqueueDLPack", what);
  for (size_t i = 0; i < n; ++i) {
    auto *m = static_cast<DLManagedTensor *>(managed[i]);
    require(m, "mjExecutableEnqueueDLPack", what);
    DLTensorInfo info = checkDLTensor(m->dl_tensor, dev.ordinal());
    out.push_back(DeviceTensor::wrap(dev, info.data, info.dtype, info.shape));
  }
}

llvm::json::Value runJsonOf(const CheckedRun &r, const RunTiming &t, bool fused, const Graph &g) {
  llvm::json::Array checks;
  for (size_t i = 0; i < r.compare.size(); ++i)
    checks.push_back(llvm::json::Object{{"output", g.node(g.outputs()[i]).name},
                                        {"ok", r.compare[i].ok},
                                        {"summary", r.compare[i].summary}});
  const Program &p = r.compiled.program;
  return llvm::json::Object{{"label", fused ? "fused" : "unfused"},
                            {"fusion", fused},
                            {"kernels", static_cast<int64_t>(p.kernels.size())},
                            {"bytes_moved", p.bytesMoved()},
                            {"median_us", t.medianUs},
                            {"min_us", t.minUs},
                            {"host_us_per_run", t.hostUsPerRun},
                            {"ok", r.ok},
                            {"check", std::move(checks)}};
}

} // namespace

extern "C" {

mjStatus mjDeviceCount(int *count) {
  return guarded([&] {
    require(count, "mjDeviceCount", "count");
    *count = Device::count();
  });
}

mjStatus mjDeviceOpen(int ordinal, mjDevice *out) {
  return guarded([&] {
    require(out, "mjDeviceOpen", "out");
    *out = new mjDevice_{Device::open(ordinal)};
  });
}

void mjDeviceDestroy(mjDevice d) { delete d; }
const char *mjDeviceName(mjDevice d) { return d ? d->device.properties().name.c_str() : ""; }
int mjDeviceOrdinal(mjDevice d) { return d ? d->device.ordinal() : -1; }

mjStatus mjDeviceProperties(mjDevice d, int *major, int *minor, int *sms, size_t *totalBytes) {
  return guarded([&] {
    require(d, "mjDeviceProperties", "the device");
    const DeviceProperties &p = d->device.properties();
    if (major)
      *major = p.ccMajor;
    if (minor)
      *minor = p.ccMinor;
    if (sms)
      *sms = p.smCount;
    if (totalBytes)
      *totalBytes = static_cast<size_t>(p.totalMemory);
  });
}

mjStatus mjDeviceSynchronize(mjDevice d) {
  return guarded([&] {
    require(d, "mjDeviceSynchronize", "the device");
    d->device.synchronize();
  });
}

mjStatus mjBufferCreate(mjDevice d, mjDType dtype, int32_t rank, const int64_t *dims,
                        mjBuffer *out) {
  return guarded([&] {
    require(d, "mjBufferCreate", "the device");
    require(out, "mjBufferCreate", "out");
    *out = new mjBuffer_{DeviceTensor(d->device, toDType(dtype, "mjBufferCreate"),
                                      toShape(rank, dims, "mjBufferCreate"))};
  });
}

void mjBufferDestroy(mjBuffer b) { delete b; }
void *mjBufferPointer(mjBuffer b) {
  return b ? reinterpret_cast<void *>(b->tensor.data()) : nullptr;
}

mjStatus mjBufferWrite(mjBuffer b, const void *host, size_t bytes) {
  return guarded([&] {
    require(b, "mjBufferWrite", "the buffer");
    const DeviceTensor &t = b->tensor;
    if (bytes != t.bytes())
      throw InvalidArgument{"mjBufferWrite: " + std::to_string(bytes) +
                            " bytes given for a tensor of " + std::to_string(t.bytes())};
    if (bytes == 0) // an empty tensor: nothing to copy, `host` may be null
      return;
    require(host, "mjBufferWrite", "host");
    HostTensor h(t.dtype(), t.shape());
    std::memcpy(h.data(), host, bytes);
    b->tensor.upload(h);
  });
}

mjStatus mjBufferRead(mjBuffer b, void *host, size_t bytes) {
  return guarded([&] {
    require(b, "mjBufferRead", "the buffer");
    const DeviceTensor &t = b->tensor;
    if (bytes != t.bytes())
      throw InvalidArgument{"mjBufferRead: room for " + std::to_string(bytes) +
                            " bytes given for a tensor of " + std::to_string(t.bytes())};
    if (bytes == 0) // an empty tensor: nothing to copy, `host` may be null
      return;
    require(host, "mjBufferRead", "host");
    HostTensor h = t.download();
    std::memcpy(host, h.data(), bytes);
  });
}

mjStatus mjExecutableCreate(mjDevice d, mjGraph g, mjCompileOptions options, mjExecutable *out) {
  return guarded([&] {
    require(d, "mjExecutableCreate", "the device");
    require(g, "mjExecutableCreate", "the graph");
    require(out, "mjExecutableCreate", "out");
    CompileOptions opt = options ? options->options : CompileOptions{};
    *out = new mjExecutable_{compile(g->graph, d->device, opt), {}, {}};
  });
}

mjStatus mjExecutableLoad(mjDevice d, mjCompiled c, mjExecutable *out) {
  return guarded([&] {
    require(d, "mjExecutableLoad", "the device");
    require(c, "mjExecutableLoad", "the compiled graph");
    require(out, "mjExecutableLoad", "out");
    if (!c->compiled.reached || *c->compiled.reached != Stage::Ptx)
      throw InvalidArgument{"mjExecutableLoad: the compile stopped before NVRTC (stage ptx)"};
    *out = new mjExecutable_{Executable(d->device, c->compiled.program), {}, {}};
  });
}

void mjExecutableDestroy(mjExecutable e) { delete e; }

mjStatus mjExecutableSetGraphReplay(mjExecutable e, int on) {
  return guarded([&] {
    require(e, "mjExecutableSetGraphReplay", "the executable");
    e->exe.setGraphReplay(on != 0);
  });
}

mjStatus mjExecutableEnqueue(mjExecutable e, size_t numInputs, const mjTensorRef *inputs,
                             size_t numOutputs, const mjTensorRef *outputs, void *stream) {
  return guarded([&] {
    require(e, "mjExecutableEnqueue", "the executable");
    wrapTensors(e->exe.device(), numInputs, inputs, "input", e->inputs);
    wrapTensors(e->exe.device(), numOutputs, outputs, "output", e->outputs);
    e->exe.enqueueOn(static_cast<CUstream>(stream), e->inputs, e->outputs);
  });
}

mjStatus mjExecutableEnqueueDLPack(mjExecutable e, size_t numInputs, void *const *inputs,
                                   size_t numOutputs, void *const *outputs, void *stream) {
  return guarded([&] {
    require(e, "mjExecutableEnqueueDLPack", "the executable");
    wrapDLPack(e->exe.device(), numInputs, inputs, "input", e->inputs);
    wrapDLPack(e->exe.device(), numOutputs, outputs, "output", e->outputs);
    e->exe.enqueueOn(static_cast<CUstream>(stream), e->inputs, e->outputs);
  });
}

mjStatus mjExecutableRun(mjExecutable e, size_t numInputs, const mjTensorRef *inputs,
                         size_t numOutputs, const mjTensorRef *outputs) {
  return guarded([&] {
    require(e, "mjExecutableRun", "the executable");
    wrapTensors(e->exe.device(), numInputs, inputs, "input", e->inputs);
    wrapTensors(e->exe.device(), numOutputs, outputs, "output", e->outputs);
    e->exe.enqueue(e->inputs, e->outputs);
    e->exe.synchronize();
  });
}

mjStatus mjExecutableSynchronize(mjExecutable e) {
  return guarded([&] {
    require(e, "mjExecutableSynchronize", "the executable");
    e->exe.synchronize();
  });
}

mjStatus mjCompare(mjDevice d, mjGraph g, uint64_t seed, const mjDimBindings *dims,
                   mjString *json) {
  return guarded([&] {
    require(d, "mjCompare", "the device");
    require(g, "mjCompare", "the graph");
    require(json, "mjCompare", "json");
    const Device &gpu = d->device;
    DimBindings sizes = toBindings(dims, "mjCompare");
    Graph graph = sizes.empty() ? g->graph : bindDims(g->graph, sizes);
    std::vector<HostTensor> ins = randomInputs(graph, seed);
    double copy = measureCopyBandwidth(gpu);
    llvm::json::Array runs;
    std::vector<ProfiledRun> profiled;
    double times[2] = {0, 0};
    for (ComparedRun &side : compareFusion(graph, gpu, seed, ins, copy, true)) {
      times[side.fused] = side.timing.medianUs;
      profiled.push_back(std::move(*side.profile));
      runs.push_back(runJsonOf(side.run, side.timing, side.fused, graph));
    }
    std::string tool = std::string("minijit-c ") + minijitVersion();
    llvm::Expected<llvm::json::Value> profile =
        llvm::json::parse(profileFileJson(gpu.properties(), copy, profiled, tool));
    if (!profile)
      throw Error("mjCompare: the profile JSON does not parse: " +
                  llvm::toString(profile.takeError()));
    llvm::json::Object result{{"graph", graph.name()},
                              {"device", gpu.properties().name},
                              {"seed", static_cast<int64_t>(seed)},
                              {"copy_gbps", copy},
                              {"speedup", times[1] > 0 ? times[0] / times[1] : 0.0},
                              {"runs", std::move(runs)},
                              {"profile", std::move(*profile)}};
    *json = new mjString_{formatJson(std::move(result))};
  });
}

} // extern "C"
