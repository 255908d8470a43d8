//===- runtime/Executable.h - a Program loaded and ready to run -*- C++ -*-===//
// Loads a Program's kernels once, keeps its temporaries (planned by
// liveness), checks the inputs of every run against the graph, and launches
// the kernels on its stream, optionally captured once in a CUDA graph and
// replayed. The launch path does no allocation: argument arrays point into
// one table of buffer addresses. One Program may be loaded on every device of
// its architecture, one Executable each, and run from a thread per device.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DriverHandle.h"
#include "runtime/Memory.h"
#include "runtime/Program.h"

#include <cuda.h>

#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace minijit {

/// The check run, enqueue and bind make of every tensor they are given: an
/// executable reads and writes memory of its own device only (nothing is
/// copied between devices behind the caller's back). Throws GraphError
/// "CALL: ROLE %NAME is on device 0 but the executable runs on device 1"
/// when `tensorDevice` differs from `executableDevice` (ROLE is "input" or
/// "output"). Needs no driver.
void checkTensorDevice(const char *call, const char *role, const std::string &name,
                       int tensorDevice, int executableDevice);

/// True when the kernels of `program` load on a device like `device`: the
/// program was compiled for its architecture (a program for sm_90a, with
/// Hopper's architecture-specific kernels, loads on sm_90 devices). The
/// Executable constructor refuses any other. Needs no driver.
bool loadsOn(const Program &program, const DeviceProperties &device);

/// A Program loaded on one device, with its stream and temporaries.
///
/// Several devices: a Program does not depend on the device it is loaded on
/// beyond its architecture, so one compile serves every GPU of that
/// architecture: `Executable(gpu0, c.program)`, `Executable(gpu1,
/// c.program)`, one NVRTC compile and one CUBIN per kernel. A device of
/// another architecture needs a compile of its own (the kernel cache keeps
/// both). The program's launch geometry was sized for the device it was
/// compiled for (CompileOptions::device); on a device with fewer SMs a
/// kernel whose blocks must all be resident at once is refused when loaded.
///
/// Threads: one Executable is used by one thread at a time (its bound
/// buffers, CUDA graph and stream are its own state); different Executables
/// may run concurrently from different threads, on one device or several.
/// Every call makes the executable's device's context current on the
/// calling thread first.
class Executable {
public:
  /// Loads every kernel of `program` on `dev` and allocates its temporaries.
  /// Throws CudaError naming a kernel that does not load (a CUBIN for another
  /// architecture, a damaged image).
  Executable(const Device &dev, Program program);
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;
  Executable(Executable &&) noexcept;
  Executable &operator=(Executable &&) = delete;

  const Program &program() const { return Prog; }
  const Device &device() const { return Dev; }

  /// Uploads `inputs`, runs, waits and downloads the outputs. Throws
  /// GraphError for an input of the wrong dtype or shape. Every run, on host
  /// or device tensors, also writes each output that updates an input in
  /// place (Graph::update) into that input's memory, after all kernels.
  std::vector<HostTensor> run(std::span<const HostTensor> inputs);
  /// The same on a braced list of inputs: exe.run({x, w}).
  std::vector<HostTensor> run(std::initializer_list<HostTensor> inputs) {
    return run(std::span<const HostTensor>(inputs.begin(), inputs.size()));
  }
  /// Runs on device tensors and waits; returns freshly allocated outputs.
  /// Throws GraphError for an input of the wrong dtype or shape, or on
  /// another device (checkTensorDevice).
  std::vector<DeviceTensor> run(std::span<const DeviceTensor> inputs);
  std::vector<DeviceTensor> run(std::initializer_list<DeviceTensor> inputs) {
    return run(std::span<const DeviceTensor>(inputs.begin(), inputs.size()));
  }
  /// Enqueues the whole program on the stream without waiting. `outputs`
  /// must match the graph's outputs; inputs and outputs must be on the
  /// executable's device (GraphError otherwise, as for run).
  void enqueue(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs);
  void enqueue(std::initializer_list<DeviceTensor> inputs,
               std::initializer_list<DeviceTensor> outputs) {
    enqueue(std::span<const DeviceTensor>(inputs.begin(), inputs.size()),
            std::span<const DeviceTensor>(outputs.begin(), outputs.size()));
  }
  /// Waits for everything enqueued; throws CudaError for a failed kernel.
  void synchronize();
  /// Allocates one device tensor per graph output.
  std::vector<DeviceTensor> allocateOutputs();

  /// When on, the launches are captured once in a CUDA graph (per set of
  /// buffer addresses) and replayed: one driver call per run.
  void setGraphReplay(bool on) { UseGraph = on; }
  bool graphReplay() const { return UseGraph; }

  // ---- for the profiler
  CUstream stream() const { return Stream.get(); }
  /// Checks (as enqueue does) and binds the buffers of the next launches.
  void bind(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs);
  /// Enqueues kernel `k` alone with the bound buffers.
  void launchKernel(size_t k);
  /// Blocks of kernel k that fit on one SM at once (its occupancy).
  int residentBlocks(size_t k) const;

private:
  /// Throws GraphError, naming `call`, for inputs of the wrong number, dtype,
  /// shape or device.
  void checkInputs(const char *call, std::span<const DeviceTensor> inputs) const;
  /// bind, with errors naming `call`.
  void bindAs(const char *call, std::span<const DeviceTensor> inputs,
              std::span<const DeviceTensor> outputs);
  /// Enqueues kernel `k` (its context current already).
  void launch(size_t k);
  void launchAll();
  /// Copies each output that updates an input into that input's memory.
  void copyUpdates();
  void buildParams();
  /// Encodes each kernel's TMA descriptors whose buffer's address changed.
  void encodeTensorMaps();

  Device Dev;
  Program Prog;
  // Destroyed in reverse order: the graph before the modules it launches,
  // the modules before the stream.
  StreamHandle Stream;
  std::vector<ModuleHandle> Modules;
  std::vector<CUfunction> Functions;
  std::vector<DeviceTensor> Slots;     ///< temporaries' memory
  std::vector<DeviceTensor> Work;      ///< kernels' zeroed scratch (ProgramKernel::workspaceBytes)
  std::vector<CUdeviceptr> Address;    ///< per buffer, the address bound now
  std::vector<CUdeviceptr> WorkAddress; ///< per kernel, its scratch or 0
  /// Per kernel, its TMA descriptors (ProgramKernel::tensorMaps) and the
  /// buffer address each was encoded for.
  std::vector<std::vector<CUtensorMap>> Maps;
  std::vector<std::vector<CUdeviceptr>> MapAddress;
  std::vector<std::vector<void *>> Params; ///< per kernel, pointers into Address, WorkAddress, Maps
  bool UseGraph = false;
  GraphHandle Graph;
  GraphExecHandle GraphExec;
  std::vector<CUdeviceptr> GraphAddress; ///< the addresses the graph was captured with
};

} // namespace minijit
