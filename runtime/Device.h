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

class Device {
public:
  /// Opens GPU `ordinal`. Throws CudaError ("no CUDA driver found ...", or
  /// "device 3 does not exist (2 devices)").
  static Device open(int ordinal = 0);
  /// True when a driver and at least one GPU are present; never throws.
  static bool available(std::string *why = nullptr);

  const DeviceProperties &properties() const;
  int ordinal() const;
  /// Makes this device's context current on the calling thread.
  void makeCurrent() const;
  void synchronize() const;
  /// Bytes free and total, as the driver reports them.
  std::pair<size_t, size_t> memoryInfo() const;
  Allocator &allocator() const;

  bool operator==(const Device &o) const { return S == o.S; }

private:
  struct State;
  std::shared_ptr<State> S;
};

} // namespace minijit
