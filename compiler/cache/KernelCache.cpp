//===- compiler/cache/KernelCache.cpp - compiled kernels, kept ------------------===//
// Entry layout (cache/EntryFile.h): "MJKC0001", then five fields (key,
// cubin, ptx, log, nvrtc version), then the checksum. Entries sit in 256
// subdirectories named by the key's first two hex digits.
//===----------------------------------------------------------------------===//
#include "compiler/cache/KernelCache.h"

#include "compiler/cache/EntryFile.h"

#include "ir/Error.h"
#include "ir/Version.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <sys/stat.h>
#include <unistd.h>

namespace minijit {

namespace {

constexpr char kMagic[] = "MJKC0001";

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// No entry is near this size; a larger file at an entry's path is not read.
constexpr uint64_t kMaxEntryBytes = uint64_t(256) << 20;

} // namespace

KernelCache::KernelCache(std::string dir, bool enabled) : Dir(std::move(dir)), Enabled(enabled) {}

KernelCache &KernelCache::global() {
  static KernelCache cache(entry::defaultCacheDirectory(), !entry::cacheDisabled());
  return cache;
}

void KernelCache::warnOnce(const std::string &what) {
  if (Warned)
    return;
  Warned = true;
  llvm::errs() << "minijit: warning: kernel cache: " << what << "\n";
}

std::string KernelCache::nvrtcIdentity() {
  // Known once NVRTC is loaded; otherwise from a record of the library file
  // (path, size, mtime), so that a cache hit does not pay for loading NVRTC
  // (docs/PERFORMANCE_LOG.md, "Figures once quoted in code comments").
  if (nvrtcLoaded())
    return nvrtcVersion();
  std::string record = Dir.empty() ? "" : Dir + "/nvrtc-id";
  if (!record.empty()) {
    auto buf = llvm::MemoryBuffer::getFile(record);
    if (buf) {
      llvm::SmallVector<llvm::StringRef, 4> parts;
      (*buf)->getBuffer().split(parts, '\n', -1, false);
      struct stat st;
      if (parts.size() == 4 && ::stat(parts[0].str().c_str(), &st) == 0 &&
          std::to_string(st.st_size) == parts[1] && std::to_string(st.st_mtime) == parts[2])
        return parts[3].str();
    }
  }
  std::string version = nvrtcVersion();
  std::string path = nvrtcLibraryPath();
  struct stat st;
  if (!record.empty() && !path.empty() && ::stat(path.c_str(), &st) == 0 &&
      !llvm::sys::fs::create_directories(Dir)) {
    std::string err;
    entry::writeAtomically(record,
                    path + "\n" + std::to_string(st.st_size) + "\n" + std::to_string(st.st_mtime) +
                        "\n" + version,
                    err);
  }
  return version;
}

std::string KernelCache::keyFor(const std::string &source, const Target &target,
                                llvm::ArrayRef<std::string> options) {
  {
    std::lock_guard<std::mutex> lock(Mutex);
    if (NvrtcId.empty() || (nvrtcLoaded() && NvrtcId != nvrtcVersion()))
      NvrtcId = nvrtcIdentity();
  }
  llvm::SHA256 h;
  auto part = [&](llvm::StringRef s) {
    h.update(s);
    h.update(llvm::StringRef("\0", 1));
  };
  part("minijit");
  part(minijitVersion());
  part("nvrtc");
  part(NvrtcId);
  part(target.name());
  for (const std::string &o : options)
    part(o);
  part(source);
  return llvm::toHex(h.final(), /*LowerCase=*/true);
}

std::string KernelCache::pathFor(const std::string &key) const {
  return entry::entryPath(Dir, key, ".mjk");
}

bool KernelCache::parseEntry(llvm::StringRef data, llvm::StringRef key, NvrtcOutput &out,
                             std::string &why) {
  std::vector<std::string> f; // key, cubin, ptx, log, nvrtc version
  if (!entry::decode(data, llvm::StringRef(kMagic, 8), "cache entry", 5, f, why))
    return false;
  if (f[0] != key) {
    why = "for another key";
    return false;
  }
  NvrtcOutput o;
  o.cubin = std::move(f[1]);
  o.ptx = std::move(f[2]);
  o.log = std::move(f[3]);
  o.resources = parsePtxasReport(o.log);
  out = std::move(o);
  return true;
}

bool KernelCache::readEntry(const std::string &key, NvrtcOutput &out) {
  if (Dir.empty())
    return false;
  std::string path = pathFor(key);
  auto corrupt = [&](const std::string &why) {
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.corruptEntries;
    llvm::errs() << "minijit: warning: kernel cache entry " << path << " is " << why
                 << "; recompiling it\n";
    return false;
  };
  std::unique_ptr<llvm::MemoryBuffer> data;
  uint64_t size = 0;
  switch (entry::readFile(path, kMaxEntryBytes, data, size)) {
  case entry::ReadResult::Absent: return false; // absent (or unreadable): compile
  case entry::ReadResult::TooLarge:
    return corrupt(llvm::formatv("{0} bytes, larger than any entry", size).str());
  case entry::ReadResult::Read: break;
  }
  std::string why;
  if (!parseEntry(data->getBuffer(), key, out, why))
    return corrupt(why);
  return true;
}

void KernelCache::writeEntry(const std::string &key, const NvrtcOutput &out) {
  if (Dir.empty())
    return;
  std::string nvrtcId;
  {
    std::lock_guard<std::mutex> lock(Mutex);
    nvrtcId = NvrtcId;
  }
  std::string buf = entry::encode(llvm::StringRef(kMagic, 8),
                                  {key, out.cubin, out.ptx, out.log, nvrtcId});
  std::string path = pathFor(key), error;
  std::string dir = llvm::sys::path::parent_path(path).str();
  std::error_code ec = llvm::sys::fs::create_directories(dir);
  if (ec)
    error = ec.message();
  if (ec || !entry::writeAtomically(path, buf, error)) {
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.writeFailures;
    warnOnce("cannot write to " + Dir + " (" + error + "); kernels are compiled but not kept");
    return;
  }
  removeStaleTemps(dir);
}

void KernelCache::removeStaleTemps(const std::string &dir) {
  uint64_t removed = entry::removeStaleTemps(dir, kStaleTempSeconds);
  if (!removed)
    return;
  std::lock_guard<std::mutex> lock(Mutex);
  Stats.staleTempsRemoved += removed;
}

CachedKernel KernelCache::get(const std::string &source, const std::string &kernel,
                              const Target &target, llvm::ArrayRef<std::string> options) {
  auto t0 = std::chrono::steady_clock::now();
  CachedKernel result;
  if (!Enabled) {
    result.out = compileWithNvrtc(source, kernel, target, options);
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.compiles;
    result.ms = msSince(t0);
    return result;
  }
  std::string key = keyFor(source, target, options);
  std::promise<NvrtcOutput> promise;
  std::shared_future<NvrtcOutput> future;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(Mutex);
    auto it = Memory.find(key);
    if (it != Memory.end()) {
      future = it->second;
      ++Stats.memoryHits;
    } else {
      future = promise.get_future().share();
      Memory[key] = future;
      owner = true;
    }
  }
  if (!owner) {
    result.out = future.get(); // rethrows the owner's CompileError
    result.from = CachedKernel::From::Memory;
    result.ms = msSince(t0);
    return result;
  }
  try {
    if (readEntry(key, result.out)) {
      result.from = CachedKernel::From::Disk;
      std::lock_guard<std::mutex> lock(Mutex);
      ++Stats.diskHits;
    } else {
      result.out = compileWithNvrtc(source, kernel, target, options);
      result.from = CachedKernel::From::Compiled;
      {
        std::lock_guard<std::mutex> lock(Mutex);
        ++Stats.compiles;
      }
      writeEntry(key, result.out);
    }
    promise.set_value(result.out);
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard<std::mutex> lock(Mutex);
    Memory.erase(key); // a failed compile is not remembered
    throw;
  }
  result.ms = msSince(t0);
  return result;
}

KernelCache::SharedKernel KernelCache::getShared(const std::string &structure,
                                                const std::string &source,
                                                const std::string &kernel,
                                                const Target &target,
                                                llvm::ArrayRef<std::string> options) {
  if (!Enabled)
    return {get(source, kernel, target, options), kernel};
  std::string key = keyFor(structure, target, options);
  std::optional<std::pair<std::string, std::string>> earlier;
  {
    std::lock_guard<std::mutex> lock(Mutex);
    auto it = Structures.find(key);
    if (it != Structures.end())
      earlier = it->second;
  }
  if (earlier && earlier->first != source) {
    CachedKernel k = get(earlier->first, earlier->second, target, options);
    k.from = CachedKernel::From::Shared;
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.shared;
    return {std::move(k), earlier->second};
  }
  CachedKernel k = get(source, kernel, target, options);
  std::lock_guard<std::mutex> lock(Mutex);
  Structures.emplace(key, std::make_pair(source, kernel));
  return {std::move(k), kernel};
}

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(Mutex);
  return Stats;
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(Mutex);
  Memory.clear();
  Structures.clear();
}

} // namespace minijit
