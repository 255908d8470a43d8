//===- runtime/Memory.cpp - device memory and device tensors --------------===//
#include "runtime/Memory.h"

#include "ir/Error.h"
#include "runtime/Driver.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <mutex>

namespace minijit {

DeviceBuffer::~DeviceBuffer() {
  if (Owner)
    Owner->release(Ptr, Bytes);
  else if (Release)
    Release();
}

struct Allocator::Cache {
  std::mutex Mutex;
  std::multimap<size_t, CUdeviceptr> Free;
  AllocatorStats Stats;
};

Allocator::Allocator(CUcontext ctx) : Ctx(ctx), C(std::make_unique<Cache>()) {}

Allocator::~Allocator() { releaseCached(); }

size_t Allocator::binSize(size_t bytes) {
  if (bytes == 0)
    bytes = 1;
  constexpr size_t small = 512, large = 2 << 20;
  if (bytes < (1u << 20))
    return (bytes + small - 1) / small * small;
  return (bytes + large - 1) / large * large;
}

std::shared_ptr<DeviceBuffer> Allocator::allocate(size_t bytes) {
  size_t bin = binSize(bytes);
  {
    std::lock_guard<std::mutex> lock(C->Mutex);
    // The smallest cached block that fits, if it is not more than twice the need.
    auto it = C->Free.lower_bound(bin);
    if (it != C->Free.end() && it->first <= 2 * bin) {
      size_t size = it->first;
      CUdeviceptr p = it->second;
      C->Free.erase(it);
      C->Stats.bytesCached -= size;
      C->Stats.bytesInUse += size;
      ++C->Stats.reuses;
      return std::make_shared<DeviceBuffer>(this, p, size);
    }
  }
  const Driver &d = Driver::get();
  d.check(d.cuCtxSetCurrent(Ctx), "cuCtxSetCurrent");
  CUdeviceptr p = 0;
  CUresult r = d.cuMemAlloc(&p, bin);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    releaseCached();
    r = d.cuMemAlloc(&p, bin);
  }
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t freeBytes = 0, total = 0;
    d.cuMemGetInfo(&freeBytes, &total);
    throw CudaError(llvm::formatv("out of device memory: asked for {0} bytes ({1:f2} GiB), {2:f2} "
                                  "GiB free of {3:f2} GiB",
                                  bin, bin / 1073741824.0, freeBytes / 1073741824.0,
                                  total / 1073741824.0)
                        .str());
  }
  d.check(r, "cuMemAlloc");
  std::lock_guard<std::mutex> lock(C->Mutex);
  C->Stats.bytesInUse += bin;
  ++C->Stats.driverAllocations;
  return std::make_shared<DeviceBuffer>(this, p, bin);
}

void Allocator::release(CUdeviceptr p, size_t bytes) {
  std::lock_guard<std::mutex> lock(C->Mutex);
  C->Free.emplace(bytes, p);
  C->Stats.bytesInUse -= bytes;
  C->Stats.bytesCached += bytes;
}

void Allocator::releaseCached() {
  std::lock_guard<std::mutex> lock(C->Mutex);
  if (C->Free.empty())
    return;
  const Driver &d = Driver::get();
  d.cuCtxSetCurrent(Ctx);
  for (auto &[size, p] : C->Free)
    d.cuMemFree(p);
  C->Free.clear();
  C->Stats.bytesCached = 0;
}

AllocatorStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(C->Mutex);
  return C->Stats;
}

DeviceTensor::DeviceTensor(const Device &dev, DType dtype, const Shape &shape)
    : Dev(dev), Type(dtype), Dims(shape) {
  // A tensor of no elements takes no memory (cuMemAlloc refuses 0 bytes):
  // its address is 0 and nothing reads or writes it.
  if (bytes() == 0) {
    Buf = std::make_shared<DeviceBuffer>(nullptr, CUdeviceptr(0), 0);
    return;
  }
  dev.makeCurrent();
  Buf = dev.allocator().allocate(bytes());
}

DeviceTensor DeviceTensor::wrap(const Device &dev, CUdeviceptr ptr, DType dtype,
                                const Shape &shape) {
  DeviceTensor t;
  t.Dev = dev;
  t.Type = dtype;
  t.Dims = shape;
  t.Buf = std::make_shared<DeviceBuffer>(nullptr, ptr, t.bytes());
  return t;
}

DeviceTensor DeviceTensor::wrap(const Device &dev, CUdeviceptr ptr, DType dtype, const Shape &shape,
                                std::function<void()> release) {
  DeviceTensor t;
  t.Dev = dev;
  t.Type = dtype;
  t.Dims = shape;
  t.Buf = std::make_shared<DeviceBuffer>(ptr, t.bytes(), std::move(release));
  return t;
}

DeviceTensor DeviceTensor::fromHost(const Device &dev, const HostTensor &h) {
  DeviceTensor t(dev, h.dtype(), h.shape());
  t.upload(h);
  return t;
}

void DeviceTensor::upload(const HostTensor &h) {
  if (h.dtype() != Type || h.shape() != Dims)
    throw GraphError(llvm::formatv("upload: the device tensor is {0}{1}, the host tensor {2}{3}",
                                   dtypeName(Type), Dims.str(), dtypeName(h.dtype()),
                                   h.shape().str())
                         .str());
  Dev.makeCurrent();
  const Driver &d = Driver::get();
  if (!bytes())
    return;
  d.check(d.cuMemcpyHtoD(data(), h.data(), bytes()), "cuMemcpyHtoD");
  // From pageable memory the call returns once the data is staged; the DMA
  // to the device may still be running on the legacy stream, which kernels
  // on an executable's (non-blocking) stream do not wait for. Seen on the
  // H200: NaN poison landing after the kernel's stores. Wait for it here.
  d.check(d.cuStreamSynchronize(CU_STREAM_LEGACY), "cuStreamSynchronize");
}

HostTensor DeviceTensor::download() const {
  HostTensor h(Type, Dims);
  Dev.makeCurrent();
  const Driver &d = Driver::get();
  if (bytes())
    d.check(d.cuMemcpyDtoH(h.data(), data(), bytes()), "cuMemcpyDtoH");
  return h;
}

} // namespace minijit
