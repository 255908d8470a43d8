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
#include <string>
#include <vector>

namespace minijit {

struct ProgramBuffer {
  enum class Role { Input, Output, Temp };
  std::string name; ///< the IR value it holds, without '%'
  DType dtype = DType::F32;
  Shape shape;
  Role role = Role::Temp;
  int slot = -1;    ///< Temp: the memory slot it shares with others not alive at once
  int64_t bytes() const { return shape.numel() * dtypeSize(dtype); }
};

/// ptxas's resource report for one kernel.
struct KernelResources {
  unsigned registers = 0;
  unsigned sharedBytes = 0;  ///< static shared memory
  unsigned stackBytes = 0;
  unsigned spillStores = 0, spillLoads = 0;
  bool known = false;
};

struct ProgramKernel {
  std::string name;     ///< entry point
  std::string cubin;    ///< compiled for Program::arch
  std::string ptx;
  std::string source;   ///< the CUDA C++ compiled (preamble included)
  unsigned block = 256; ///< threads per block (1-D)
  int64_t grid = 1;     ///< blocks (1-D)
  unsigned dynamicShared = 0; ///< bytes; above 48 KiB the executable raises the kernel's limit
  /// Bytes of zeroed scratch memory passed as the last argument, which the
  /// kernel leaves zeroed again (the partial results and counters of a
  /// reduction split across blocks).
  int64_t workspaceBytes = 0;
  std::vector<int> args; ///< buffer ids, in parameter order
  int64_t bytesRead = 0, bytesWritten = 0; ///< each buffer read or written once
  int64_t flops = 0;
  KernelResources resources;
};

struct Program {
  std::string graphName;
  std::string arch;                  ///< e.g. sm_90
  std::vector<ProgramBuffer> buffers;
  std::vector<int> inputs;           ///< buffer per graph input
  std::vector<int> outputs;          ///< buffer per graph output (may repeat)
  std::vector<ProgramKernel> kernels; ///< launched in this order
  std::vector<int64_t> slotBytes;    ///< size of each temporary slot

  int64_t bytesMoved() const {
    int64_t b = 0;
    for (const ProgramKernel &k : kernels)
      b += k.bytesRead + k.bytesWritten;
    return b;
  }
};

} // namespace minijit
