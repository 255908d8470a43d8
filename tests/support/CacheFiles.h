//===- tests/support/CacheFiles.h - files and kernels for the cache tests -*- C++ -*-===//
//
// What the kernel cache tests (KernelCacheTest, CacheFaultTest,
// ConcurrencyTest) share: a tiny kernel to compile, whole-file reads and
// writes, a search of a cache directory, and a fresh scratch directory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <system_error>
#include <vector>

namespace minijit::cachetest {

/// A one-line kernel `name` that adds `addend`; distinct addends give
/// distinct sources, so distinct cache keys.
inline std::string kernelSource(const std::string &name, int addend = 1) {
  return "extern \"C\" __global__ void " + name + "(float *p) { p[threadIdx.x] += " +
         std::to_string(addend) + ".0f; }\n";
}

/// The bytes of the file at `path`; empty when it cannot be read.
inline std::string readAll(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

/// Replaces the file at `path` with `data`; false when it cannot be opened.
inline bool writeAll(const std::string &path, const std::string &data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os << data;
  return true;
}

/// Every regular file under `dir` whose name contains `part`.
inline std::vector<std::string> filesUnder(const std::string &dir, llvm::StringRef part) {
  std::vector<std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (it->type() == llvm::sys::fs::file_type::regular_file &&
        llvm::sys::path::filename(it->path()).contains(part))
      out.push_back(it->path());
  return out;
}

/// A new, empty directory in the system's temporary directory whose name
/// starts with `prefix`; empty when it cannot be made.
inline std::string makeScratchDir(llvm::StringRef prefix) {
  llvm::SmallString<128> path;
  if (llvm::sys::fs::createUniqueDirectory(prefix, path))
    return "";
  return path.str().str();
}

} // namespace minijit::cachetest
