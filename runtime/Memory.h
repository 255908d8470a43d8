//===- runtime/Memory.h - device memory and device tensors -----*- C++ -*-===//
// A caching allocator (freed blocks are kept for reuse, so a program run in a
// loop does not call cuMemAlloc) and dense device tensors with upload and
// download. Out of memory is a CudaError that says how much was asked for and
// how much is free.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/HostTensor.h"
#include "runtime/Device.h"

#include <cuda.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace minijit {

/// A block of device memory; returned to its allocator when destroyed.
class DeviceBuffer {
public:
  DeviceBuffer(Allocator *owner, CUdeviceptr ptr, size_t bytes)
      : Owner(owner), Ptr(ptr), Bytes(bytes) {}
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  CUdeviceptr ptr() const { return Ptr; }
  size_t bytes() const { return Bytes; }

private:
  Allocator *Owner; ///< null for memory the caller owns
  CUdeviceptr Ptr;
  size_t Bytes;
};

struct AllocatorStats {
  size_t bytesInUse = 0, bytesCached = 0;
  uint64_t driverAllocations = 0, reuses = 0;
};

class Allocator {
public:
  /// Allocates in `ctx` (a device's primary context).
  explicit Allocator(CUcontext ctx) : Ctx(ctx) {}
  ~Allocator();
  /// At least `bytes` of device memory (256-byte aligned). Reuses a cached
  /// block when one fits; on out-of-memory frees the cache and retries once,
  /// then throws CudaError "out of device memory: ...".
  std::shared_ptr<DeviceBuffer> allocate(size_t bytes);
  /// Frees every cached (unused) block.
  void releaseCached();
  AllocatorStats stats() const;

private:
  friend class DeviceBuffer;
  void release(CUdeviceptr p, size_t bytes);
  static size_t binSize(size_t bytes);

  CUcontext Ctx;
  mutable std::mutex Mutex;
  std::multimap<size_t, CUdeviceptr> Free;
  AllocatorStats Stats;
};

/// A dense, row-major tensor in device memory.
class DeviceTensor {
public:
  DeviceTensor() = default;
  /// Allocates an uninitialised tensor.
  DeviceTensor(const Device &dev, DType dtype, const Shape &shape);
  /// Wraps memory the caller owns and keeps alive (no copy, never freed).
  static DeviceTensor wrap(const Device &dev, CUdeviceptr ptr, DType dtype, const Shape &shape);
  /// A device copy of a host tensor.
  static DeviceTensor fromHost(const Device &dev, const HostTensor &h);

  bool valid() const { return Buf != nullptr; }
  DType dtype() const { return Type; }
  const Shape &shape() const { return Dims; }
  int64_t numel() const { return Dims.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtypeSize(Type); }
  CUdeviceptr data() const { return Buf ? Buf->ptr() : 0; }
  const Device &device() const { return Dev; }

  /// Copies `h` in; throws GraphError when its dtype or shape differ.
  void upload(const HostTensor &h);
  HostTensor download() const;

private:
  Device Dev;
  std::shared_ptr<DeviceBuffer> Buf;
  DType Type = DType::F32;
  Shape Dims;
};

} // namespace minijit
