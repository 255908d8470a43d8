//===- runtime/Device.h - one GPU and its context --------------*- C++ -*-===//
// Opens a GPU through the driver (its primary context), reads the properties
// the compiler's schedules use, and owns the caching allocator. Copies of a
// Device share one state; it is released with the last copy.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DeviceProperties.h"

#include <cuda.h>

#include <memory>
#include <string>
#include <utility>

namespace minijit {

class Allocator;

/// A GPU opened through the driver, with its primary context and caching
/// allocator. Cheap to copy: copies share one state. A default-constructed
/// Device is no device (only assignment and destruction are valid).
class Device {
public:
  /// Opens GPU `ordinal`. Throws CudaError ("no CUDA driver found ...", or
  /// "device 3 does not exist (2 devices)").
  static Device open(int ordinal = 0);
  /// True when a driver and at least one GPU are present; never throws.
  static bool available(std::string *why = nullptr);

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
  /// The device's caching allocator, which DeviceTensor allocates from.
  Allocator &allocator() const;

  /// True for copies of the same opened device.
  bool operator==(const Device &o) const { return S == o.S; }

private:
  struct State;
  std::shared_ptr<State> S;
};

} // namespace minijit
