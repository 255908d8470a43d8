//===- runtime/Device.cpp - one GPU and its context -----------------------===//
#include "runtime/Device.h"

#include "ir/Error.h"
#include "runtime/Driver.h"
#include "runtime/Memory.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <mutex>

namespace minijit {

struct Device::State {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  int ordinal = 0;
  DeviceProperties props;
  std::unique_ptr<Allocator> allocator;
  /// Loaded modules by image (loadModule), held while some executable uses them.
  std::mutex moduleMutex;
  std::map<std::string, std::weak_ptr<const ModuleHandle>> modules;
  ~State() {
    allocator.reset(); // frees cached blocks while the context lives
    if (ctx)
      Driver::get().cuDevicePrimaryCtxRelease(dev);
  }
};

bool Device::available(std::string *why) { return Driver::available(why); }

int Device::count() {
  const Driver &d = Driver::get();
  int count = 0;
  d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

Device Device::open(int ordinal) {
  const Driver &d = Driver::get();
  int count = Device::count();
  if (count == 0)
    throw CudaError("no CUDA device found (the driver reports 0 devices)");
  if (ordinal < 0 || ordinal >= count)
    throw CudaError(llvm::formatv("device {0} does not exist ({1} device{2})", ordinal, count,
                                  count == 1 ? "" : "s")
                        .str());
  Device out;
  out.S = std::make_shared<State>();
  State &s = *out.S;
  s.ordinal = ordinal;
  d.check(d.cuDeviceGet(&s.dev, ordinal), "cuDeviceGet");
  d.check(d.cuDevicePrimaryCtxRetain(&s.ctx, s.dev), "cuDevicePrimaryCtxRetain");
  d.check(d.cuCtxSetCurrent(s.ctx), "cuCtxSetCurrent");
  char name[256] = {0};
  d.check(d.cuDeviceGetName(name, sizeof name, s.dev), "cuDeviceGetName");
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    d.check(d.cuDeviceGetAttribute(&v, a, s.dev), "cuDeviceGetAttribute");
    return v;
  };
  DeviceProperties &p = s.props;
  p.name = name;
  p.ccMajor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p.ccMinor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p.smCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p.maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  p.maxThreadsPerSM = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  p.maxBlocksPerSM = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  p.regsPerSM = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  p.regsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  p.sharedPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  p.sharedPerBlockOptin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  p.sharedPerSM = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  p.l2Bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  p.clockKHz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  p.driverVersion = d.version;
  size_t total = 0;
  d.check(d.cuDeviceTotalMem(&total, s.dev), "cuDeviceTotalMem");
  p.totalMemory = static_cast<int64_t>(total);
  p.queried = true;
  s.allocator = std::make_unique<Allocator>(s.ctx);
  return out;
}

const DeviceProperties &Device::properties() const { return S->props; }
int Device::ordinal() const { return S->ordinal; }

void Device::makeCurrent() const {
  const Driver &d = Driver::get();
  d.check(d.cuCtxSetCurrent(S->ctx), "cuCtxSetCurrent");
}

void Device::synchronize() const {
  makeCurrent();
  const Driver &d = Driver::get();
  d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
}

std::pair<size_t, size_t> Device::memoryInfo() const {
  makeCurrent();
  size_t free = 0, total = 0;
  const Driver &d = Driver::get();
  d.check(d.cuMemGetInfo(&free, &total), "cuMemGetInfo");
  return {free, total};
}

bool Device::canAccessPeer(const Device &other) const {
  if (S->dev == other.S->dev)
    return false;
  const Driver &d = Driver::get();
  int can = 0;
  d.check(d.cuDeviceCanAccessPeer(&can, S->dev, other.S->dev), "cuDeviceCanAccessPeer");
  return can != 0;
}

Allocator &Device::allocator() const { return *S->allocator; }

std::shared_ptr<const ModuleHandle> Device::loadModule(const std::string &cubin,
                                                       const std::string &what) const {
  std::lock_guard<std::mutex> lock(S->moduleMutex);
  auto it = S->modules.find(cubin);
  if (it != S->modules.end())
    if (std::shared_ptr<const ModuleHandle> m = it->second.lock())
      return m;
  // Forget the images no executable holds any more.
  for (auto e = S->modules.begin(); e != S->modules.end();)
    e = e->second.expired() ? S->modules.erase(e) : std::next(e);
  makeCurrent();
  const Driver &d = Driver::get();
  auto m = std::make_shared<ModuleHandle>();
  CUresult r = d.cuModuleLoadData(m->receive(), cubin.data());
  if (r != CUDA_SUCCESS)
    throw CudaError(llvm::formatv("cannot load {0} ({1} bytes of CUBIN): cuModuleLoadData failed: {2}",
                                  what, cubin.size(), d.errorText(r))
                        .str());
  S->modules[cubin] = m;
  return m;
}

} // namespace minijit
