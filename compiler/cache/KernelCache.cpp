//===- compiler/cache/KernelCache.cpp - compiled kernels, kept ------------------===//
// Entry layout: "MJKC0001", then five length-prefixed fields (key, cubin,
// ptx, log, nvrtc version), then the xxHash64 of everything before it.
// Entries sit in 256 subdirectories named by the key's first two hex digits.
// A writer fills a fresh temporary file and renames it over the entry, so a
// reader sees a whole old entry, a whole new one, or none; the checksum
// catches what the disk itself damages.
//===----------------------------------------------------------------------===//
#include "compiler/cache/KernelCache.h"

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
#include "llvm/Support/xxhash.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace minijit {

namespace {

constexpr char kMagic[] = "MJKC0001";

void putField(std::string &buf, llvm::StringRef f) {
  uint64_t n = f.size();
  buf.append(reinterpret_cast<const char *>(&n), 8);
  buf.append(f.data(), f.size());
}

bool getField(llvm::StringRef &rest, std::string &out) {
  if (rest.size() < 8)
    return false;
  uint64_t n;
  std::memcpy(&n, rest.data(), 8);
  rest = rest.drop_front(8);
  if (n > rest.size())
    return false;
  out = rest.take_front(n).str();
  rest = rest.drop_front(n);
  return true;
}

std::string defaultDir() {
  if (const char *d = std::getenv("MINIJIT_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/minijit";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/minijit";
  return "";
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// No entry is near this size; a larger file at an entry's path is not read.
constexpr uint64_t kMaxEntryBytes = uint64_t(256) << 20;

/// Writes all of `data` to `fd`, continuing after short writes and EINTR.
std::error_code writeFully(int fd, llvm::StringRef data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return std::error_code(errno, std::generic_category());
    data = data.drop_front(static_cast<size_t>(n));
  }
  return {};
}

/// Why a file of `bytes` must not be written: past the file size limit
/// (ulimit -f) the kernel sends SIGXFSZ, whose default action ends the
/// process. Empty when the write may go ahead (a process that ignores or
/// handles SIGXFSZ sees the write fail with EFBIG instead).
std::string fileSizeLimitProblem(size_t bytes) {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || bytes <= rl.rlim_cur)
    return "";
  struct sigaction sa;
  if (::sigaction(SIGXFSZ, nullptr, &sa) == 0 && sa.sa_handler != SIG_DFL)
    return "";
  return llvm::formatv("an entry of {0} bytes exceeds the file size limit of {1} bytes (ulimit -f)",
                       bytes, static_cast<uint64_t>(rl.rlim_cur))
      .str();
}

/// Writes `data` to a fresh temporary file beside `path`, then renames it to
/// `path`. On failure, removes the temporary file and says why in `error`.
bool writeAtomically(const std::string &path, llvm::StringRef data, std::string &error) {
  error = fileSizeLimitProblem(data.size());
  if (!error.empty())
    return false;
  llvm::SmallString<256> tmp;
  int fd = -1;
  std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, tmp);
  if (ec) {
    error = ec.message();
    return false;
  }
  ec = writeFully(fd, data);
  // close() reports what a delayed write could not store (quotas, NFS).
  if (::close(fd) != 0 && !ec)
    ec = std::error_code(errno, std::generic_category());
  if (!ec)
    ec = llvm::sys::fs::rename(tmp, path);
  if (!ec)
    return true;
  error = ec.message();
  llvm::sys::fs::remove(tmp);
  return false;
}

} // namespace

KernelCache::KernelCache(std::string dir, bool enabled) : Dir(std::move(dir)), Enabled(enabled) {}

KernelCache &KernelCache::global() {
  static KernelCache cache(defaultDir(), [] {
    const char *d = std::getenv("MINIJIT_DISABLE_CACHE");
    return !(d && *d && std::strcmp(d, "0") != 0);
  }());
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
  // (path, size, mtime), so a cache hit does not load NVRTC (~5 ms).
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
    writeAtomically(record,
                    path + "\n" + std::to_string(st.st_size) + "\n" + std::to_string(st.st_mtime) +
                        "\n" + version,
                    err);
  }
  return version;
}

std::string KernelCache::keyFor(const std::string &source, const std::string &arch,
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
  part(arch);
  for (const std::string &o : options)
    part(o);
  part(source);
  return llvm::toHex(h.final(), /*LowerCase=*/true);
}

std::string KernelCache::pathFor(const std::string &key) const {
  return Dir + "/" + key.substr(0, 2) + "/" + key.substr(2) + ".mjk";
}

bool KernelCache::parseEntry(llvm::StringRef data, llvm::StringRef key, NvrtcOutput &out,
                             std::string &why) {
  if (data.size() < 8 + 8 || !data.startswith(llvm::StringRef(kMagic, 8))) {
    why = "not a minijit cache entry";
    return false;
  }
  llvm::StringRef body = data.drop_back(8);
  uint64_t sum;
  std::memcpy(&sum, data.data() + data.size() - 8, 8);
  if (llvm::xxHash64(body) != sum) {
    why = "corrupt or truncated (checksum mismatch)";
    return false;
  }
  llvm::StringRef rest = body.drop_front(8);
  std::string storedKey, nvrtc;
  NvrtcOutput o;
  if (!getField(rest, storedKey) || !getField(rest, o.cubin) || !getField(rest, o.ptx) ||
      !getField(rest, o.log) || !getField(rest, nvrtc) || !rest.empty()) {
    why = "malformed (its fields do not add up)";
    return false;
  }
  if (storedKey != key) {
    why = "for another key";
    return false;
  }
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
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(path, size))
    return false; // absent (or unreadable): compile
  if (size > kMaxEntryBytes)
    return corrupt(llvm::formatv("{0} bytes, larger than any entry", size).str());
  // Read, not mapped: a file another process truncates in place would make a
  // mapping fault (SIGBUS); a read just sees fewer bytes.
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false,
                                         /*IsVolatile=*/true);
  if (!buf)
    return false;
  std::string why;
  if (!parseEntry((*buf)->getBuffer(), key, out, why))
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
  std::string buf(kMagic, 8);
  putField(buf, key);
  putField(buf, out.cubin);
  putField(buf, out.ptx);
  putField(buf, out.log);
  putField(buf, nvrtcId);
  uint64_t sum = llvm::xxHash64(buf);
  buf.append(reinterpret_cast<const char *>(&sum), 8);
  std::string path = pathFor(key), error;
  std::string dir = llvm::sys::path::parent_path(path).str();
  std::error_code ec = llvm::sys::fs::create_directories(dir);
  if (ec)
    error = ec.message();
  if (ec || !writeAtomically(path, buf, error)) {
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.writeFailures;
    warnOnce("cannot write to " + Dir + " (" + error + "); kernels are compiled but not kept");
    return;
  }
  removeStaleTemps(dir);
}

void KernelCache::removeStaleTemps(const std::string &dir) {
  auto now = std::chrono::system_clock::now();
  uint64_t removed = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    if (!llvm::sys::path::filename(it->path()).contains(".tmp-"))
      continue;
    llvm::sys::fs::file_status st;
    if (llvm::sys::fs::status(it->path(), st) || st.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    // A young one may belong to a writer still at work.
    if (now - st.getLastModificationTime() < std::chrono::seconds(kStaleTempSeconds))
      continue;
    if (!llvm::sys::fs::remove(it->path()))
      ++removed;
  }
  if (!removed)
    return;
  std::lock_guard<std::mutex> lock(Mutex);
  Stats.staleTempsRemoved += removed;
}

CachedKernel KernelCache::get(const std::string &source, const std::string &kernel,
                              const std::string &arch, llvm::ArrayRef<std::string> options) {
  auto t0 = std::chrono::steady_clock::now();
  CachedKernel result;
  if (!Enabled) {
    result.out = compileWithNvrtc(source, kernel, arch, options);
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.compiles;
    result.ms = msSince(t0);
    return result;
  }
  std::string key = keyFor(source, arch, options);
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
      result.out = compileWithNvrtc(source, kernel, arch, options);
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

CacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(Mutex);
  return Stats;
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(Mutex);
  Memory.clear();
}

} // namespace minijit
