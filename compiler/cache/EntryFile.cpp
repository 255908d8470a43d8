//===- compiler/cache/EntryFile.cpp - checksummed files, written atomically -===//
#include "compiler/cache/EntryFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/resource.h>
#include <unistd.h>

namespace minijit::entry {

namespace {

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

} // namespace

std::string encode(llvm::StringRef magic, llvm::ArrayRef<llvm::StringRef> fields) {
  std::string buf = magic.str();
  for (llvm::StringRef f : fields)
    putField(buf, f);
  uint64_t sum = llvm::xxHash64(buf);
  buf.append(reinterpret_cast<const char *>(&sum), 8);
  return buf;
}

bool decode(llvm::StringRef data, llvm::StringRef magic, llvm::StringRef what, size_t count,
            std::vector<std::string> &fields, std::string &why) {
  if (data.size() < magic.size() + 8 || !data.startswith(magic)) {
    why = "not a minijit " + what.str();
    return false;
  }
  llvm::StringRef body = data.drop_back(8);
  uint64_t sum;
  std::memcpy(&sum, data.data() + data.size() - 8, 8);
  if (llvm::xxHash64(body) != sum) {
    why = "corrupt or truncated (checksum mismatch)";
    return false;
  }
  llvm::StringRef rest = body.drop_front(magic.size());
  fields.assign(count, "");
  for (std::string &f : fields)
    if (!getField(rest, f)) {
      why = "malformed (its fields do not add up)";
      return false;
    }
  if (!rest.empty()) {
    why = "malformed (its fields do not add up)";
    return false;
  }
  return true;
}

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

ReadResult readFile(const std::string &path, uint64_t maxBytes,
                    std::unique_ptr<llvm::MemoryBuffer> &data, uint64_t &size) {
  size = 0;
  if (llvm::sys::fs::file_size(path, size))
    return ReadResult::Absent;
  if (size > maxBytes)
    return ReadResult::TooLarge;
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false,
                                         /*IsVolatile=*/true);
  if (!buf)
    return ReadResult::Absent;
  data = std::move(*buf);
  return ReadResult::Read;
}

std::string entryPath(const std::string &dir, const std::string &key, llvm::StringRef extension) {
  return dir + "/" + key.substr(0, 2) + "/" + key.substr(2) + extension.str();
}

uint64_t removeStaleTemps(const std::string &dir, int staleSeconds) {
  auto now = std::chrono::system_clock::now();
  uint64_t removed = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    if (!llvm::sys::path::filename(it->path()).contains(".tmp-"))
      continue;
    llvm::sys::fs::file_status st;
    if (llvm::sys::fs::status(it->path(), st) || st.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    if (now - st.getLastModificationTime() < std::chrono::seconds(staleSeconds))
      continue;
    if (!llvm::sys::fs::remove(it->path()))
      ++removed;
  }
  return removed;
}

std::string defaultCacheDirectory() {
  if (const char *d = std::getenv("MINIJIT_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/minijit";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/minijit";
  return "";
}

bool cacheDisabled() {
  const char *d = std::getenv("MINIJIT_DISABLE_CACHE");
  return d && *d && std::strcmp(d, "0") != 0;
}

} // namespace minijit::entry
