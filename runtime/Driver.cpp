//===- runtime/Driver.cpp - the CUDA driver API, loaded at run time -------===//
#include "runtime/Driver.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <dlfcn.h>
#include <mutex>

namespace minijit {

namespace {

using GetProcFn = CUresult (*)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

struct Loaded {
  Driver *driver = nullptr;
  std::string error;
};

} // namespace

// Driver's constructor is private; this function is its only maker.
static Loaded loadDriver() {
  Loaded l;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    // dlerror() already names the library: "libcuda.so.1: cannot open shared object file ..."
    l.error = std::string("no CUDA driver found (") + (e ? e : "dlopen of libcuda.so.1 failed") + ")";
    return l;
  }
  auto getProc = reinterpret_cast<GetProcFn>(dlsym(h, "cuGetProcAddress_v2"));
  if (!getProc) {
    l.error = "the CUDA driver is too old for minijit (libcuda.so.1 lacks cuGetProcAddress_v2; "
              "CUDA 12 or newer is needed)";
    return l;
  }
  struct Access : Driver {
    static Driver *make() { return new Access(); }
  };
  Driver *d = Access::make();
  std::string missing;
  auto lookup = [&](auto &fn, const char *name, int version = CUDA_VERSION) {
    void *p = nullptr;
    CUdriverProcAddressQueryResult status;
    CUresult r = getProc(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != CUDA_SUCCESS || !p) {
      missing += missing.empty() ? name : std::string(", ") + name;
      return;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
#define MJ_DRIVER_FN(name) lookup(d->name, #name);
#define MJ_DRIVER_FN_AT(name, version) lookup(d->name, #name, version);
#include "runtime/DriverFunctions.def"
  if (!missing.empty()) {
    l.error = "the CUDA driver lacks entry points minijit needs (" + missing +
              "); update the driver to one supporting CUDA " + std::to_string(CUDA_VERSION / 1000) +
              "." + std::to_string(CUDA_VERSION % 1000 / 10);
    delete d;
    return l;
  }
  CUresult r = d->cuInit(0);
  if (r != CUDA_SUCCESS) {
    l.error = "no CUDA driver found: cuInit failed: " + d->errorText(r);
    delete d;
    return l;
  }
  d->cuDriverGetVersion(&d->version);
  l.driver = d;
  return l;
}

static const Loaded &loaded() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] { l = loadDriver(); });
  return l;
}

const Driver &Driver::get() {
  const Loaded &l = loaded();
  if (!l.driver)
    throw CudaError(l.error);
  return *l.driver;
}

bool Driver::available(std::string *why) {
  const Loaded &l = loaded();
  if (!l.driver) {
    if (why)
      *why = l.error;
    return false;
  }
  int count = 0;
  CUresult r = l.driver->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    if (why)
      *why = r != CUDA_SUCCESS ? "cuDeviceGetCount failed: " + l.driver->errorText(r)
                               : std::string("the CUDA driver reports no device");
    return false;
  }
  return true;
}

std::string Driver::errorText(CUresult r) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(r, &name);
  if (cuGetErrorString)
    cuGetErrorString(r, &text);
  return llvm::formatv("{0} ({1})", name ? name : "CUDA error " + std::to_string(r),
                       text ? text : "no description")
      .str();
}

void Driver::check(CUresult r, const char *call) const {
  if (r != CUDA_SUCCESS)
    throw CudaError(std::string(call) + " failed: " + errorText(r));
}

} // namespace minijit
