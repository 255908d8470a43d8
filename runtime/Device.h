//===- runtime/Device.h - one GPU and its context --------------*- C++ -*-===//
// Opens a GPU through the driver (its primary context), reads the properties
// the compiler's schedules use, and owns the caching allocator. Copies of a
// Device share one state; it is released with the last copy. Every GPU of
// the host can be opened, each from any thread.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DeviceProperties.h"
#include "runtime/DriverHandle.h"

#include <cuda.h>

#include <memory>
#include <string>
#include <utility>

namespace minijit {

class Allocator;

/// A GPU opened through the driver, with its primary context and caching
/// allocator. Cheap to copy: copies share one state. A default-constructed
/// Device is no device (only assignment and destruction are valid).
///
/// Threads: a Device (and its copies) may be used from several threads at
/// once. Every minijit call that works on a device (an Executable's run,
/// DeviceTensor's allocation, upload and download, the profiler) first makes
/// that device's context current on the calling thread, so threads may work
/// on different devices, and one thread may alternate between devices,
/// without calling makeCurrent() themselves. A call leaves its device's
/// context current on the thread.
class Device {
public:
  /// Opens GPU `ordinal` (0 to count() - 1). Opening the same ordinal twice
  /// gives two Devices on the one primary context: memory of either may be
  /// used with the other. Throws CudaError ("no CUDA driver found ...", or
  /// "device 3 does not exist (2 devices)").
  static Device open(int ordinal = 0);
  /// True when a driver and at least one GPU are present; never throws.
  static bool available(std::string *why = nullptr);
  /// The number of GPUs the driver reports (0 when it has none). Throws
  /// CudaError "no CUDA driver found ..." without a driver.
  static int count();

  /// What the schedules use: SMs, compute capability, shared memory, L2.
  const DeviceProperties &properties() const;
  /// The driver's number for this GPU, as passed to open().
  int ordinal() const;
  /// Makes this device's context current on the calling thread.
  void makeCurrent() const;
  /// Waits for all work on the device (cuCtxSynchronize); throws CudaError
  /// for a kernel that failed.
  void synchronize() const;
  /// Bytes free and total, as the driver reports them.
  std::pair<size_t, size_t> memoryInfo() const;
  /// True when kernels on this device could read `other`'s memory directly
  /// (cuDeviceCanAccessPeer; peer access is not enabled by this call). False
  /// for the same GPU.
  bool canAccessPeer(const Device &other) const;
  /// The device's caching allocator, which DeviceTensor allocates from.
  Allocator &allocator() const;
  /// The module of `cubin` loaded in this device's context, shared by every
  /// executable of this Device (and its copies) that loads the same image:
  /// a kernel serving many programs (the layers of an MLP, the bindings of
  /// a graph with named dimensions) is loaded once. Released with its last
  /// user. Throws CudaError, naming `what`, when the driver refuses it.
  std::shared_ptr<const ModuleHandle> loadModule(const std::string &cubin,
                                                 const std::string &what) const;

  /// True for copies of the same opened device.
  bool operator==(const Device &o) const { return S == o.S; }

private:
  struct State;
  std::shared_ptr<State> S;
};

} // namespace minijit
