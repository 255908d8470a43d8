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
#include <memory>
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
/// Named dimensions: an executable of a graph whose arguments have named
/// sizes (`%x: f32[B, 1024]`) binds them from the shapes of each run's
/// inputs. The first run of a binding makes its program (ProgramMaker) and
/// loads it; later runs of that binding reuse it (its launch parameters and
/// CUDA graph), with no compile and no lookup beyond comparing the inputs'
/// shapes with the last run's. Kernels whose code does not depend on the
/// sizes (one text per bucket of sizes) are compiled and loaded once for
/// all bindings. Inputs that disagree on a name are refused before anything
/// is launched. The temporaries are those of the binding in use: another
/// binding gives them back to the device's caching allocator.
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
  /// A graph with named dimensions, declared by `arguments`: each binding
  /// its runs bring is made by `make` and loaded on first use. `graphName`
  /// names it in messages.
  Executable(const Device &dev, std::string graphName, std::vector<ProgramArgument> arguments,
             ProgramMaker make);
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;
  Executable(Executable &&) noexcept;
  Executable &operator=(Executable &&) = delete;

  /// The program of the binding in use (of a graph with named dimensions:
  /// the last run's or bind's). Throws GraphError before the first run of
  /// a graph with named dimensions.
  const Program &program() const;
  const Device &device() const { return Dev; }
  /// The sizes of the binding in use; empty for a graph without names.
  const DimBindings &dims() const;
  /// How many bindings have been made (programs loaded); 1 without names.
  size_t bindings() const { return Instances.size(); }

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
  /// The same on `stream` (another framework's, such as PyTorch's current
  /// stream; null is the legacy default stream) in place of the
  /// executable's own: the run is ordered with the caller's work on it, and
  /// synchronize() does not wait for it. With graph replay the launches are
  /// captured on the executable's stream and the graph launched on `stream`.
  /// A run on another stream than the last run's waits for that run first
  /// where that run used the executable's temporaries or scratch.
  void enqueueOn(CUstream stream, std::span<const DeviceTensor> inputs,
                 std::span<const DeviceTensor> outputs);
  /// Waits for everything enqueued; throws CudaError for a failed kernel.
  void synchronize();
  /// Allocates one device tensor per graph output (of the binding in use).
  std::vector<DeviceTensor> allocateOutputs();
  /// The same for the binding that `inputs` bring (made if new).
  std::vector<DeviceTensor> allocateOutputs(std::span<const DeviceTensor> inputs);

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
  struct Instance; // one binding's program, loaded: executable.cpp

  /// Loads `program` as a new instance.
  std::unique_ptr<Instance> load(Program program, DimBindings sizes);
  /// The instance of the binding the inputs' shapes give (made and loaded
  /// on first use) made current; for a graph without names, the one.
  /// Throws GraphError, naming `call`, for inputs that bind no sizes.
  Instance &select(const char *call, std::span<const Shape> shapes);
  Instance &select(const char *call, std::span<const DeviceTensor> inputs);
  /// The instance in use; throws GraphError before the first binding.
  Instance &current() const;
  /// Throws GraphError, naming `call`, for inputs of the wrong number, dtype,
  /// shape or device.
  void checkInputs(const char *call, const Instance &in,
                   std::span<const DeviceTensor> inputs) const;
  /// bind, with errors naming `call`.
  void bindAs(const char *call, std::span<const DeviceTensor> inputs,
              std::span<const DeviceTensor> outputs);
  /// Enqueues kernel `k` on `stream` (its context current already).
  void launch(Instance &in, size_t k, CUstream stream);
  void launchAll(Instance &in, CUstream stream);
  /// Copies each output that updates an input into that input's memory.
  void copyUpdates(Instance &in, CUstream stream);
  /// Copies each output the graph lists again (the same value) into its own
  /// tensor where the caller bound another than the first listing's.
  void copyRepeats(Instance &in, CUstream stream);
  /// launchAll on `stream`, after the last run where that was on another
  /// stream, and recorded as the last run.
  void launchOrdered(Instance &in, CUstream stream);
  /// Allocates the temporaries and scratch of `in` (given back when
  /// another instance takes over).
  void acquireMemory(Instance &in);

  Device Dev;
  std::string GraphName;
  std::vector<ProgramArgument> Arguments; ///< of a graph with named dimensions
  ProgramMaker Make;                      ///< null: one program, no names
  // Destroyed in reverse order: the instances (their graphs and modules)
  // before the stream.
  StreamHandle Stream;
  std::vector<std::unique_ptr<Instance>> Instances;
  Instance *Cur = nullptr; ///< the binding in use
  bool UseGraph = false;
  /// The end of the last run and its stream, recorded where that run used
  /// the executable's own memory (LastRunHoldsOwnMemory): a run on another
  /// stream waits for it.
  EventHandle LastRunDone;
  CUstream LastRunStream = nullptr;
  bool LastRunHoldsOwnMemory = false;
};

} // namespace minijit
