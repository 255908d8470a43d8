//===- capi/lib/Errors.cpp - status codes and the last error --------------===//
// The thread-local last error of the C API, the mapping of minijit's C++
// errors to mjStatus, and the small conversions every other file uses.
//===----------------------------------------------------------------------===//
#include "capi/lib/CApiInternal.h"

#include <new>

using namespace minijit;

namespace {

struct LastError {
  mjStatus status = MJ_OK;
  std::string message;
  /// Set in place of `message` when recording the error itself ran out of
  /// memory.
  const char *fixedMessage = nullptr;
  unsigned line = 0, column = 0;
};

thread_local LastError Last;

} // namespace

namespace minijit::capi {

mjStatus fail(mjStatus status, std::string message) {
  Last.status = status;
  Last.message = std::move(message);
  Last.fixedMessage = nullptr;
  Last.line = Last.column = 0;
  return status;
}

namespace {

mjStatus recordException() {
  try {
    throw;
  } catch (const InvalidArgument &e) {
    return fail(MJ_ERROR_INVALID_ARGUMENT, e.message);
  } catch (const ParseError &e) {
    fail(MJ_ERROR_PARSE, e.what());
    Last.line = e.line();
    Last.column = e.column();
    return MJ_ERROR_PARSE;
  } catch (const GraphError &e) {
    return fail(MJ_ERROR_GRAPH, e.what());
  } catch (const CompileError &e) {
    return fail(MJ_ERROR_COMPILE, e.what());
  } catch (const CudaError &e) {
    return fail(MJ_ERROR_CUDA, e.what());
  } catch (const std::bad_alloc &) {
    return fail(MJ_ERROR_INTERNAL, "out of host memory");
  } catch (const std::exception &e) {
    return fail(MJ_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(MJ_ERROR_INTERNAL, "unknown exception");
  }
}

} // namespace

mjStatus failFromException() noexcept {
  try {
    return recordException();
  } catch (...) { // the message could not be copied
    Last.status = MJ_ERROR_INTERNAL;
    Last.message.clear();
    Last.fixedMessage = "out of host memory";
    Last.line = Last.column = 0;
    return MJ_ERROR_INTERNAL;
  }
}

DType toDType(mjDType t, const char *call) {
  switch (t) {
  case MJ_F32:
    return DType::F32;
  case MJ_F16:
    return DType::F16;
  case MJ_BF16:
    return DType::BF16;
  case MJ_I32:
    return DType::I32;
  case MJ_BOOL:
    return DType::Bool;
  case MJ_I64:
    return DType::I64;
  }
  throw InvalidArgument{std::string(call) + ": dtype " + std::to_string(int(t)) +
                        " is not an mjDType (0 to 5)"};
}

mjDType fromDType(DType t) {
  switch (t) {
  case DType::F32:
    return MJ_F32;
  case DType::F16:
    return MJ_F16;
  case DType::BF16:
    return MJ_BF16;
  case DType::I32:
    return MJ_I32;
  case DType::Bool:
    return MJ_BOOL;
  case DType::I64:
    return MJ_I64;
  }
  return MJ_F32;
}

Shape toShape(int32_t rank, const int64_t *dims, const char *call) {
  if (rank < 0 || rank > MJ_MAX_RANK)
    throw InvalidArgument{std::string(call) + ": rank " + std::to_string(rank) +
                          " is outside 0 to " + std::to_string(MJ_MAX_RANK)};
  if (rank > 0 && !dims)
    throw InvalidArgument{std::string(call) + ": dims is null for rank " + std::to_string(rank)};
  Shape s(std::span<const int64_t>(dims, static_cast<size_t>(rank)));
  checkShape(s, call);
  return s;
}

DimBindings toBindings(const mjDimBindings *dims, const char *call) {
  DimBindings b;
  if (!dims || dims->count == 0)
    return b;
  if (!dims->names || !dims->sizes)
    throw InvalidArgument{std::string(call) + ": dims has null names or sizes"};
  for (size_t i = 0; i < dims->count; ++i) {
    require(dims->names[i], call, "a dimension's name");
    if (dims->sizes[i] < 0)
      throw InvalidArgument{std::string(call) + ": dimension " + dims->names[i] + " has size " +
                            std::to_string(dims->sizes[i]) + "; sizes are at least 0"};
    b[dims->names[i]] = dims->sizes[i];
  }
  return b;
}

Graph bindGraph(const Graph &g, std::span<const Shape> inputShapes, const DimBindings &given) {
  if (!hasUnboundDims(g))
    return g;
  DimBindings sizes = bindingsFromInputs(g, inputShapes);
  for (const auto &[name, size] : given) {
    auto it = sizes.find(name);
    if (it == sizes.end()) {
      sizes[name] = size;
      continue;
    }
    if (it->second != size)
      throw GraphError("dims: " + name + " is given as " + std::to_string(size) +
                       " but the inputs make it " + std::to_string(it->second));
  }
  return bindDims(g, sizes);
}

} // namespace minijit::capi

using namespace minijit::capi;

extern "C" {

const char *mjGetLastError(void) {
  return Last.fixedMessage ? Last.fixedMessage : Last.message.c_str();
}
mjStatus mjGetLastStatus(void) { return Last.status; }
void mjGetLastErrorLocation(unsigned *line, unsigned *column) {
  if (line)
    *line = Last.line;
  if (column)
    *column = Last.column;
}

const char *mjStatusName(mjStatus status) {
  switch (status) {
  case MJ_OK:
    return "ok";
  case MJ_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case MJ_ERROR_PARSE:
    return "parse error";
  case MJ_ERROR_GRAPH:
    return "graph error";
  case MJ_ERROR_COMPILE:
    return "compile error";
  case MJ_ERROR_CUDA:
    return "cuda error";
  case MJ_ERROR_INTERNAL:
    return "internal error";
  }
  return "unknown status";
}

const char *mjVersion(void) { return minijitVersion(); }

const char *mjDTypeName(mjDType dtype) {
  try {
    static thread_local std::string name;
    name = std::string(dtypeName(toDType(dtype, "mjDTypeName")));
    return name.c_str();
  } catch (...) {
    return nullptr;
  }
}

size_t mjDTypeSize(mjDType dtype) {
  try {
    return dtypeSize(toDType(dtype, "mjDTypeSize"));
  } catch (...) {
    return 0;
  }
}

const char *mjStringData(mjString s) { return s ? s->text.c_str() : ""; }
size_t mjStringLength(mjString s) { return s ? s->text.size() : 0; }
void mjStringDestroy(mjString s) { delete s; }

} // extern "C"
