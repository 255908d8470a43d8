//===- runtime/Driver.h - the CUDA driver API, loaded at run time -*- C++ -*-===//
// libcuda.so.1 is opened with dlopen and every entry point is looked up with
// cuGetProcAddress, so minijit starts (and its GPU tests skip) on machines
// without a driver. Every failing call becomes a CudaError with the call, the
// driver's error name and its description.
//===----------------------------------------------------------------------===//
#pragma once

#include <cuda.h>

#include <string>

namespace minijit {

/// The CUDA driver's entry points, loaded once per process. One member per
/// function of runtime/DriverFunctions.def, named and typed as in cuda.h.
class Driver {
public:
  /// The loaded driver, initialised (cuInit). Throws CudaError "no CUDA
  /// driver found: ..." when libcuda cannot be loaded or initialised.
  static const Driver &get();
  /// True when a driver loads and reports at least one device; `why` gets
  /// the reason otherwise. Never throws.
  static bool available(std::string *why = nullptr);

  /// Throws CudaError "CALL failed: CUDA_ERROR_X (description)" unless r is CUDA_SUCCESS.
  void check(CUresult r, const char *call) const;
  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string errorText(CUresult r) const;

  int version = 0; ///< cuDriverGetVersion, e.g. 13000

#define MJ_DRIVER_FN(name) decltype(&::name) name = nullptr;
#include "runtime/DriverFunctions.def"

protected:
  Driver() = default; ///< made only by get()
};

} // namespace minijit
