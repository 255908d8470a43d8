//===- runtime/Executable.h - a Program loaded and ready to run -*- C++ -*-===//
// Loads a Program's kernels once, keeps its temporaries (planned by
// liveness), checks the inputs of every run against the graph, and launches
// the kernels on its stream, optionally captured once in a CUDA graph and
// replayed. The launch path does no allocation: argument arrays point into
// one table of buffer addresses.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DriverHandle.h"
#include "runtime/Memory.h"
#include "runtime/Program.h"

#include <cuda.h>

#include <initializer_list>
#include <span>
#include <vector>

namespace minijit {

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
  std::vector<DeviceTensor> run(std::span<const DeviceTensor> inputs);
  std::vector<DeviceTensor> run(std::initializer_list<DeviceTensor> inputs) {
    return run(std::span<const DeviceTensor>(inputs.begin(), inputs.size()));
  }
  /// Enqueues the whole program on the stream without waiting. `outputs`
  /// must match the graph's outputs.
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
  /// Checks and binds the buffers of the next launches.
  void bind(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs);
  /// Enqueues kernel `k` alone with the bound buffers.
  void launchKernel(size_t k);
  /// Blocks of kernel k that fit on one SM at once (its occupancy).
  int residentBlocks(size_t k) const;

private:
  void checkInputs(std::span<const DeviceTensor> inputs) const;
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
