//===- capi/lib/CApiInternal.h - the C API's handles and guard --*- C++ -*-===//
// What each opaque handle of minijit-c/minijit.h holds, the conversions
// between the C and C++ types, and `guarded`, which turns every exception
// into a status and the thread's last error. Used only inside capi/lib/.
//===----------------------------------------------------------------------===//
#pragma once

#define MINIJIT_C_BUILDING 1
#include "minijit-c/minijit.h"

#include "minijit.h"

#include <optional>
#include <string>
#include <vector>

struct mjGraph_ {
  minijit::Graph graph;
  std::string printed; ///< mjGraphPrint's text
};

struct mjCompileOptions_ {
  minijit::CompileOptions options;
};

struct mjCompiled_ {
  minijit::CompiledGraph compiled;
  std::vector<std::optional<std::string>> texts; ///< per mjStage, made on first ask
  std::vector<minijit::KernelSummary> kernels;
};

struct mjDevice_ {
  minijit::Device device;
};

struct mjBuffer_ {
  minijit::DeviceTensor tensor;
};

struct mjExecutable_ {
  minijit::Executable exe;
  // Reused by every run, so a run allocates only the tensors' wrappers.
  std::vector<minijit::DeviceTensor> inputs, outputs;
};

struct mjHostTensors_ {
  std::vector<minijit::HostTensor> tensors;
  std::vector<std::vector<int64_t>> dims; ///< per tensor, what mjHostTensorsGet points to
};

struct mjString_ {
  std::string text;
};

namespace minijit::capi {

/// Records a failure of the calling thread's last call and returns `status`.
mjStatus fail(mjStatus status, std::string message);
/// Records what the exception in flight says (call inside a catch block).
/// Never throws: where copying the message runs out of memory, the status is
/// MJ_ERROR_INTERNAL and the message a fixed "out of host memory".
mjStatus failFromException() noexcept;

/// fn() (which returns nothing), with every exception turned into a status.
template <typename Fn> mjStatus guarded(Fn &&fn) {
  try {
    fn();
    return MJ_OK;
  } catch (...) {
    return failFromException();
  }
}

/// Thrown inside guarded for a bad argument: MJ_ERROR_INVALID_ARGUMENT.
struct InvalidArgument {
  std::string message;
};
/// Throws InvalidArgument "CALL: WHAT is null" when `p` is null.
template <typename T> void require(const T *p, const char *call, const char *what) {
  if (!p)
    throw InvalidArgument{std::string(call) + ": " + what + " is null"};
}

DType toDType(mjDType t, const char *call);
mjDType fromDType(DType t);
/// The shape of `rank` dims (rank 0..MJ_MAX_RANK, dims non-null when rank > 0).
Shape toShape(int32_t rank, const int64_t *dims, const char *call);
/// The bindings `dims` gives (NULL: none).
DimBindings toBindings(const mjDimBindings *dims, const char *call);
/// `g` with its named dimensions bound by the inputs' shapes and `given`,
/// which must agree with them; `g` itself when it has none.
Graph bindGraph(const Graph &g, std::span<const Shape> inputShapes, const DimBindings &given);

} // namespace minijit::capi
