//===- runtime/Program.h - compiled kernels, ready to run ------*- C++ -*-===//
// The hand-off from the compiler to the runtime: kernel images with their
// launch geometry, the buffers they use (inputs, outputs, temporaries with a
// reuse plan), and per launch the bytes it moves and the FLOPs it does, so the
// profiler can place each launch on a roofline without knowing the graph.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/Shape.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace minijit {

/// One tensor a program's kernels read or write.
struct ProgramBuffer {
  /// A graph input, a graph output, or a temporary between kernels.
  enum class Role { Input, Output, Temp };
  std::string name; ///< the IR value it holds, without '%'
  DType dtype = DType::F32; ///< the element type
  Shape shape;              ///< dense, row-major
  Role role = Role::Temp;   ///< who provides the memory
  int slot = -1;    ///< Temp: the memory slot it shares with others not alive at once
  /// The bytes of its elements.
  int64_t bytes() const { return shape.numel() * dtypeSize(dtype); }
};

/// ptxas's resource report for one kernel.
struct KernelResources {
  unsigned registers = 0;    ///< per thread
  unsigned sharedBytes = 0;  ///< static shared memory
  unsigned stackBytes = 0;   ///< per thread
  unsigned spillStores = 0;  ///< bytes spilled to local memory
  unsigned spillLoads = 0;   ///< bytes loaded back from local memory
  bool known = false;        ///< false when ptxas gave no report
};

/// A TMA descriptor (CUtensorMap, 128-byte swizzle, zeros outside the
/// tensor) that a kernel takes by value after its buffer arguments, its
/// sizes and its workspace. The executable encodes it (cuTensorMapEncodeTiled) for the
/// address bound to its buffer, again only when that address changes.
struct TensorMapSpec {
  int buffer = -1;              ///< buffer id
  DType dtype = DType::F16;     ///< of the elements (f16 or bf16)
  int64_t offset = 0;           ///< elements from the buffer's start to the first one described
  std::vector<int64_t> dims;    ///< extents, the unit-stride one first
  std::vector<int64_t> strides; ///< elements between steps of dims[1], dims[2], ...
  std::vector<unsigned> box;    ///< the extent of one load, per dim
};

/// One kernel: its image, its launch geometry and what it moves and computes.
struct ProgramKernel {
  std::string name;     ///< the kernel's name (its entry point, unless `entry` says otherwise)
  /// The entry point in `cubin`: another kernel's name where this one
  /// shares that kernel's image (the same code but for names); empty: `name`.
  std::string entry;
  /// The target its image is compiled for: Program::arch, or its
  /// architecture-specific form (sm_90a) for a kernel using wgmma and TMA.
  std::string arch;
  std::string cubin;    ///< compiled for `arch`
  std::string ptx;      ///< the PTX, for inspection
  std::string source;   ///< the CUDA C++ compiled (preamble included)
  unsigned block = 256; ///< threads per block (1-D)
  int64_t grid = 1;     ///< blocks (1-D)
  unsigned dynamicShared = 0; ///< bytes; above 48 KiB the executable raises the kernel's limit
  /// Bytes of zeroed scratch memory passed as the last argument, which the
  /// kernel leaves zeroed again (the partial results and counters of a
  /// reduction split across blocks).
  int64_t workspaceBytes = 0;
  /// The blocks wait for each other (a row split over blocks that meet
  /// after each pass): the whole grid must be resident at once, which the
  /// executable checks when it loads the kernel.
  bool coResident = false;
  /// Blocks per cluster (the kernel's __cluster_dims__; grid is a multiple).
  unsigned cluster = 1;
  /// The kernel walks its work with whatever grid it gets (the Hopper
  /// matmul): of clusters, the executable launches at most as many as are
  /// resident at once on the device. Other kernels take their grid whole.
  bool persistent = false;
  std::vector<int> args; ///< buffer ids, in parameter order
  /// Sizes of named dimensions the kernel computes its extent from, passed
  /// (as 64-bit integers) after the buffers: one kernel image serves every
  /// binding whose kernel text is the same.
  std::vector<int64_t> sizeArgs;
  std::vector<TensorMapSpec> tensorMaps; ///< passed after the buffers (and the workspace)
  /// Each buffer read once; a buffer read only through gathered indices
  /// (an embedding's table) counts at most one element per index read.
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0; ///< each buffer written once
  int64_t flops = 0;        ///< floating-point operations per launch
  KernelResources resources; ///< ptxas's report
};

/// An argument of a graph as it declares it (`%x: f32[B, 1024]`): what an
/// executable of a graph with named dimensions matches the inputs of a run
/// against, to find the sizes they bind.
struct ProgramArgument {
  std::string name; ///< without '%'
  DType dtype = DType::F32;
  Shape shape;      ///< numbers and names (Shape::hasNames)
};

/// A compiled graph: what compileGraph produces and an Executable runs.
struct Program {
  std::string graphName;             ///< the graph's name
  std::string arch;                  ///< the compile's Target, as NVRTC spells it (sm_90)
  std::vector<ProgramBuffer> buffers; ///< indexed by buffer id
  std::vector<int> inputs;           ///< buffer per graph input
  std::vector<int> outputs;          ///< buffer per graph output (may repeat)
  /// Per graph output: the graph input (an index into `inputs`) it updates
  /// in place, or -1. After a run the executable copies the output into that
  /// input's memory.
  std::vector<int> updates;
  std::vector<ProgramKernel> kernels; ///< launched in this order
  std::vector<int64_t> slotBytes;    ///< size of each temporary slot

  /// The bytes all kernels read and write together.
  int64_t bytesMoved() const {
    int64_t b = 0;
    for (const ProgramKernel &k : kernels)
      b += k.bytesRead + k.bytesWritten;
    return b;
  }
};

/// Makes the Program of one binding of a graph's named dimensions (the
/// compiler's programMaker: compileGraph of the bound graph).
using ProgramMaker = std::function<Program(const DimBindings &sizes)>;

} // namespace minijit
