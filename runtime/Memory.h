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

#include <functional>
#include <memory>
#include <vector>

namespace minijit {

/// A block of device memory. Memory from an Allocator goes back to it when
/// the buffer is destroyed; memory minijit does not own is left alone, or
/// handed back to its owner through a release callback.
class DeviceBuffer {
public:
  /// A block from `owner`, or memory the caller owns when `owner` is null.
  DeviceBuffer(Allocator *owner, CUdeviceptr ptr, size_t bytes)
      : Owner(owner), Ptr(ptr), Bytes(bytes) {}
  /// Memory another owner keeps: `release` (which must not throw) runs once,
  /// when the buffer is destroyed, without waiting for work on the GPU.
  DeviceBuffer(CUdeviceptr ptr, size_t bytes, std::function<void()> release)
      : Owner(nullptr), Ptr(ptr), Bytes(bytes), Release(std::move(release)) {}
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  /// The device address of the block.
  CUdeviceptr ptr() const { return Ptr; }
  /// Its size in bytes (for a block of an Allocator, the whole bin).
  size_t bytes() const { return Bytes; }

private:
  Allocator *Owner; ///< null for memory minijit does not own
  CUdeviceptr Ptr;
  size_t Bytes;
  std::function<void()> Release; ///< for memory of another owner, when set
};

/// The allocator's counters, in bytes of whole bins.
struct AllocatorStats {
  size_t bytesInUse = 0;          ///< held by live buffers
  size_t bytesCached = 0;         ///< freed, kept for reuse
  uint64_t driverAllocations = 0; ///< calls to cuMemAlloc
  uint64_t reuses = 0;            ///< requests served from the cache
};

/// The caching allocator of one device (Device::allocator()); thread-safe.
class Allocator {
public:
  /// Allocates in `ctx` (a device's primary context).
  explicit Allocator(CUcontext ctx);
  ~Allocator();
  Allocator(const Allocator &) = delete;
  Allocator &operator=(const Allocator &) = delete;
  /// At least `bytes` of device memory (256-byte aligned). Reuses a cached
  /// block when one fits; on out-of-memory frees the cache and retries once,
  /// then throws CudaError "out of device memory: ...".
  std::shared_ptr<DeviceBuffer> allocate(size_t bytes);
  /// Frees every cached (unused) block.
  void releaseCached();
  /// A snapshot of the counters.
  AllocatorStats stats() const;

private:
  friend class DeviceBuffer;
  void release(CUdeviceptr p, size_t bytes);
  static size_t binSize(size_t bytes);

  CUcontext Ctx;
  struct Cache; ///< the free blocks by size and the counters, behind a mutex (Memory.cpp)
  std::unique_ptr<Cache> C;
};

/// A dense, row-major tensor in device memory. Copies share the memory, which
/// is released with the last copy.
class DeviceTensor {
public:
  DeviceTensor() = default;
  /// Allocates an uninitialised tensor. One of no elements (a dimension of
  /// 0) allocates nothing: it is valid, and its data() is 0.
  DeviceTensor(const Device &dev, DType dtype, const Shape &shape);
  /// Wraps memory the caller owns and keeps alive (no copy, never freed).
  /// `ptr` must be 16-byte aligned: kernels use 16-byte vector accesses.
  static DeviceTensor wrap(const Device &dev, CUdeviceptr ptr, DType dtype, const Shape &shape);
  /// Wraps memory of another owner (no copy): `release` runs once, when the
  /// last copy of the tensor is gone (see DeviceBuffer). fromDLPack uses it.
  static DeviceTensor wrap(const Device &dev, CUdeviceptr ptr, DType dtype, const Shape &shape,
                           std::function<void()> release);
  /// A device copy of a host tensor.
  static DeviceTensor fromHost(const Device &dev, const HostTensor &h);

  /// False for a default-constructed tensor, which has no memory.
  bool valid() const { return Buf != nullptr; }
  DType dtype() const { return Type; }           ///< the element type
  const Shape &shape() const { return Dims; }    ///< the dimensions
  int64_t numel() const { return Dims.numel(); } ///< the number of elements
  /// The bytes of the elements (the buffer may be larger).
  size_t bytes() const { return static_cast<size_t>(numel()) * dtypeSize(Type); }
  /// The device address of element 0; 0 for an invalid tensor, and may be
  /// 0 for one of no elements.
  CUdeviceptr data() const { return Buf ? Buf->ptr() : 0; }
  /// The device the memory is on.
  const Device &device() const { return Dev; }

  /// Copies `h` in and waits until the copy is complete; throws GraphError
  /// when its dtype or shape differ. Work enqueued on an Executable that
  /// reads or writes this tensor must be finished first (synchronize()).
  void upload(const HostTensor &h);
  /// A host copy of the elements (waits for the copy). It does not wait for
  /// an Executable's stream: call its synchronize() first.
  HostTensor download() const;

private:
  Device Dev;
  std::shared_ptr<DeviceBuffer> Buf;
  DType Type = DType::F32;
  Shape Dims;
};

} // namespace minijit
