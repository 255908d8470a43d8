//===- compiler/nvrtc/Nvrtc.cpp - compile CUDA C++ with NVRTC -------------------===//
#include "compiler/nvrtc/Nvrtc.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace minijit {

namespace {

struct NvrtcApi {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) getErrorString = nullptr;
  decltype(&::nvrtcCreateProgram) createProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) destroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) compileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) getProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) getProgramLog = nullptr;
  decltype(&::nvrtcGetPTXSize) getPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) getPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) getCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) getCUBIN = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) getNumSupportedArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) getSupportedArchs = nullptr;
  std::string error; ///< why loading failed, empty on success
  std::string path;  ///< the file it was loaded from
};

std::atomic<bool> Loaded{false};

const NvrtcApi &api() {
  static NvrtcApi a;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so"};
    if (const char *home = std::getenv("CUDA_HOME"))
      candidates.push_back(std::string(home) + "/lib64/libnvrtc.so");
#ifdef MINIJIT_CUDA_LIBDIR
    candidates.push_back(std::string(MINIJIT_CUDA_LIBDIR) + "/libnvrtc.so");
#endif
    void *h = nullptr;
    std::string tried;
    for (const std::string &c : candidates) {
      h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h)
        break;
      tried += (tried.empty() ? "" : ", ") + c;
    }
    if (!h) {
      a.error = "cannot load NVRTC (tried " + tried + "): install the CUDA toolkit or set CUDA_HOME";
      return;
    }
    auto sym = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (!fn && a.error.empty())
        a.error = std::string("libnvrtc lacks ") + name;
    };
    sym(a.version, "nvrtcVersion");
    sym(a.getErrorString, "nvrtcGetErrorString");
    sym(a.createProgram, "nvrtcCreateProgram");
    sym(a.destroyProgram, "nvrtcDestroyProgram");
    sym(a.compileProgram, "nvrtcCompileProgram");
    sym(a.getProgramLogSize, "nvrtcGetProgramLogSize");
    sym(a.getProgramLog, "nvrtcGetProgramLog");
    sym(a.getPTXSize, "nvrtcGetPTXSize");
    sym(a.getPTX, "nvrtcGetPTX");
    sym(a.getCUBINSize, "nvrtcGetCUBINSize");
    sym(a.getCUBIN, "nvrtcGetCUBIN");
    sym(a.getNumSupportedArchs, "nvrtcGetNumSupportedArchs");
    sym(a.getSupportedArchs, "nvrtcGetSupportedArchs");
    Dl_info info;
    if (a.version && dladdr(reinterpret_cast<void *>(a.version), &info) && info.dli_fname)
      a.path = info.dli_fname;
    Loaded = a.error.empty();
  });
  if (!a.error.empty())
    throw CompileError(a.error);
  return a;
}

void check(nvrtcResult r, const char *call) {
  if (r != NVRTC_SUCCESS)
    throw CompileError(llvm::formatv("{0} failed: {1}", call, api().getErrorString(r)).str());
}

/// The number right before `what` in `text` (searching from `from`), or 0.
unsigned numberBefore(const std::string &text, const std::string &what, size_t from = 0) {
  size_t at = text.find(what, from);
  if (at == std::string::npos)
    return 0;
  size_t end = at;
  while (end > 0 && text[end - 1] == ' ')
    --end;
  size_t begin = end;
  while (begin > 0 && text[begin - 1] >= '0' && text[begin - 1] <= '9')
    --begin;
  return begin == end ? 0 : static_cast<unsigned>(std::stoul(text.substr(begin, end - begin)));
}

} // namespace

std::string numberedSource(const std::string &source) {
  std::string out;
  unsigned n = 1;
  size_t start = 0;
  while (start <= source.size()) {
    size_t end = source.find('\n', start);
    if (end == std::string::npos)
      end = source.size();
    out += llvm::formatv("{0,5} | ", n++).str() + source.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

KernelResources parsePtxasReport(const std::string &log) {
  KernelResources r;
  size_t used = log.find("Used ");
  if (used == std::string::npos)
    return r;
  r.known = true;
  r.registers = numberBefore(log, "registers", used);
  size_t lineEnd = log.find('\n', used);
  std::string usedLine = log.substr(used, lineEnd == std::string::npos ? std::string::npos : lineEnd - used);
  r.sharedBytes = numberBefore(usedLine, "bytes smem");
  r.stackBytes = numberBefore(log, "bytes stack frame");
  r.spillStores = numberBefore(log, "bytes spill stores");
  r.spillLoads = numberBefore(log, "bytes spill loads");
  return r;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  check(api().version(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

bool nvrtcLoaded() { return Loaded; }

std::vector<int> nvrtcSupportedArchs() {
  const NvrtcApi &a = api();
  int n = 0;
  check(a.getNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(n);
  if (n)
    check(a.getSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

void checkTarget(const Target &target) {
  std::vector<int> supported = nvrtcSupportedArchs();
  if (llvm::is_contained(supported, target.number()) && target.hasMmaF16())
    return;
  std::string list;
  for (int v : supported)
    if (v >= 80)
      list += (list.empty() ? "sm_" : ", sm_") + std::to_string(v);
  throw CompileError("--arch=" + target.name() + " is not a target minijit can compile for (NVRTC " +
                     nvrtcVersion() + ", kernels need sm_80 or newer: " + list + ")");
}

std::string nvrtcLibraryPath() { return api().path; }

namespace {

/// A source this long may keep NVRTC busy for seconds: it is named on stderr
/// before the compile, so that the wait does not look like a hang.
constexpr long kLongSourceLines = 2000;

/// Says on stderr which kernel NVRTC compiles when its source is long, and
/// how long a compile of a second or more took once done. No watcher
/// thread: one a compile would start threads in the forked children of a
/// threaded process (the kernel cache's fault tests), which ThreadSanitizer
/// refuses, and cost a thread's start on every cache miss.
class SlowCompileNotice {
public:
  SlowCompileNotice(const std::string &kernel, const std::string &source)
      : Kernel(kernel), Lines(std::count(source.begin(), source.end(), '\n')),
        Start(std::chrono::steady_clock::now()) {
    if (Lines >= kLongSourceLines)
      say(llvm::formatv("minijit: compiling kernel {0} ({1} lines of CUDA) with NVRTC...\n",
                        Kernel, Lines));
  }
  ~SlowCompileNotice() {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
    if (s >= 1.0)
      say(llvm::formatv("minijit: compiled kernel {0} ({1} lines of CUDA) with NVRTC in {2:f1} s\n",
                        Kernel, Lines, s));
  }

private:
  /// One write, so that lines from threads compiling at once do not mix.
  static void say(const std::string &line) { llvm::errs() << line; }

  std::string Kernel;
  long Lines;
  std::chrono::steady_clock::time_point Start;
};

} // namespace

NvrtcOutput compileWithNvrtc(const std::string &source, const std::string &kernel,
                             const Target &target, llvm::ArrayRef<std::string> options) {
  const NvrtcApi &a = api();
  nvrtcProgram prog;
  std::string file = kernel + ".cu";
  check(a.createProgram(&prog, source.c_str(), file.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  std::vector<std::string> opts = {"--gpu-architecture=" + target.name(), "-Xptxas=-v"};
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char *> copts;
  for (const std::string &o : opts)
    copts.push_back(o.c_str());
  nvrtcResult res;
  {
    SlowCompileNotice notice(kernel, source);
    res = a.compileProgram(prog, static_cast<int>(copts.size()), copts.data());
  }
  NvrtcOutput out;
  size_t logSize = 0;
  a.getProgramLogSize(prog, &logSize);
  if (logSize > 1) {
    out.log.resize(logSize);
    a.getProgramLog(prog, out.log.data());
    out.log.resize(logSize - 1);
  }
  if (res != NVRTC_SUCCESS) {
    a.destroyProgram(&prog);
    std::string optText;
    for (const std::string &o : opts)
      optText += " " + o;
    throw CompileError(llvm::formatv("NVRTC could not compile kernel {0} ({1}; options:{2}):\n{3}\n"
                                     "--- source of {0} ---\n{4}",
                                     kernel, a.getErrorString(res), optText, out.log,
                                     numberedSource(source))
                           .str());
  }
  size_t ptxSize = 0, cubinSize = 0;
  a.getPTXSize(prog, &ptxSize);
  out.ptx.resize(ptxSize);
  a.getPTX(prog, out.ptx.data());
  if (!out.ptx.empty() && out.ptx.back() == '\0')
    out.ptx.pop_back();
  a.getCUBINSize(prog, &cubinSize);
  out.cubin.resize(cubinSize);
  if (cubinSize)
    a.getCUBIN(prog, out.cubin.data());
  a.destroyProgram(&prog);
  out.resources = parsePtxasReport(out.log);
  return out;
}

} // namespace minijit
