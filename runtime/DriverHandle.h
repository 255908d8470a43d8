//===- runtime/DriverHandle.h - driver objects that release themselves -*- C++ -*-===//
// Every module, stream, event and CUDA graph the runtime creates is owned by
// a DriverHandle, so an exception between creating one and handing it on
// (a failed load of a later kernel, an allocation that runs out of memory)
// releases it rather than leaking it.
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <utility>

namespace minijit {

/// Owns one driver object of type T (a pointer-like CUDA handle) and gives it
/// back with Release when destroyed or reset. Move-only.
template <typename T, void (*Release)(T)> class DriverHandle {
public:
  DriverHandle() = default;
  explicit DriverHandle(T h) : H(h) {}
  ~DriverHandle() { reset(); }
  DriverHandle(const DriverHandle &) = delete;
  DriverHandle &operator=(const DriverHandle &) = delete;
  DriverHandle(DriverHandle &&o) noexcept : H(std::exchange(o.H, nullptr)) {}
  DriverHandle &operator=(DriverHandle &&o) noexcept {
    if (this != &o)
      reset(std::exchange(o.H, nullptr));
    return *this;
  }

  T get() const { return H; }
  explicit operator bool() const { return H != nullptr; }
  /// Releases the object held (if any) and holds `h`.
  void reset(T h = nullptr) {
    if (H)
      Release(H);
    H = h;
  }
  /// For the driver's create calls, cuStreamCreate(s.receive(), ...): releases
  /// what is held and returns where the new handle goes.
  T *receive() {
    reset();
    return &H;
  }

private:
  T H = nullptr;
};

// The release functions; they ignore errors (there is no one to report them
// to while unwinding), as destructors must.
void unloadModule(CUmodule m);
void destroyStream(CUstream s);
void destroyEvent(CUevent e);
void destroyGraph(CUgraph g);
void destroyGraphExec(CUgraphExec g);

using ModuleHandle = DriverHandle<CUmodule, unloadModule>;
using StreamHandle = DriverHandle<CUstream, destroyStream>;
using EventHandle = DriverHandle<CUevent, destroyEvent>;
using GraphHandle = DriverHandle<CUgraph, destroyGraph>;
using GraphExecHandle = DriverHandle<CUgraphExec, destroyGraphExec>;

} // namespace minijit
