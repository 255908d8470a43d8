//===- compiler/cache/KernelCache.h - compiled kernels, kept ----------*- C++ -*-===//
// NVRTC output kept in memory and on disk, keyed by a SHA-256 of the source,
// the options, the architecture, the NVRTC version and minijit's version.
// Disk entries are written atomically (temporary file, then rename) and carry
// a checksum: a truncated, corrupt or foreign entry is never loaded; it is
// recompiled and replaced. A process killed while writing leaves only a
// temporary file, which is never read and is removed once stale. A read-only
// or full cache directory only costs the caching (one warning). Safe to use
// from several threads and several processes at once (docs/HARDENING.md).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/nvrtc/Nvrtc.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace minijit {

struct CacheStats {
  uint64_t memoryHits = 0, diskHits = 0, compiles = 0;
  uint64_t corruptEntries = 0, writeFailures = 0;
  uint64_t staleTempsRemoved = 0; ///< left by writers that died mid-write
  /// Kernels that took the image of an earlier one of the same structure
  /// (getShared), without a compile or a lookup of their own source.
  uint64_t shared = 0;
};

struct CachedKernel {
  /// Shared: the image of another kernel of the same structure (getShared).
  enum class From { Compiled, Memory, Disk, Shared };
  NvrtcOutput out;
  From from = From::Compiled;
  double ms = 0; ///< time spent getting it (compile, or read)
};

class KernelCache {
public:
  /// `dir`: where entries live (created on first write); empty for memory
  /// only. `enabled` false: every request compiles.
  KernelCache(std::string dir, bool enabled);

  /// The process-wide cache: $MINIJIT_CACHE_DIR, else $XDG_CACHE_HOME/minijit,
  /// else ~/.cache/minijit; MINIJIT_DISABLE_CACHE=1 turns it off.
  static KernelCache &global();

  /// The compiled kernel, from memory, disk or NVRTC (in that order).
  /// Concurrent requests for one key compile it once. Throws CompileError.
  CachedKernel get(const std::string &source, const std::string &kernel, const Target &target,
                   llvm::ArrayRef<std::string> options);

  /// A kernel compiled as another one's image: `entry` is the entry point
  /// the image has (the other kernel's name), or `kernel` itself.
  struct SharedKernel {
    CachedKernel kernel;
    std::string entry;
  };
  /// get(source, kernel, ...), unless this process compiled a kernel of the
  /// same `structure` (structuralSource: the text with the IR's names taken
  /// out) for this target: then that kernel's image and entry point,
  /// From::Shared. The 16 layers of an MLP, and the same layer in the
  /// programs of several batch sizes, compile once.
  SharedKernel getShared(const std::string &structure, const std::string &source,
                         const std::string &kernel, const Target &target,
                         llvm::ArrayRef<std::string> options);

  /// The key and the disk path of an entry (for tests and tools); the key
  /// holds the target's name().
  std::string keyFor(const std::string &source, const Target &target,
                     llvm::ArrayRef<std::string> options);
  std::string pathFor(const std::string &key) const;

  const std::string &directory() const { return Dir; }
  bool enabled() const { return Enabled; }
  CacheStats stats() const;
  /// Forgets the in-memory entries (the disk stays).
  void clearMemory();

  /// Decodes the bytes of an entry file that should hold `key`. Returns false
  /// with the reason in `why` ("corrupt or truncated (checksum mismatch)",
  /// "for another key", ...) for anything else. Never throws; never trusts a
  /// length it has not checked (for tests and tools).
  static bool parseEntry(llvm::StringRef data, llvm::StringRef key, NvrtcOutput &out,
                         std::string &why);

  /// Temporary files older than this in an entry's directory were left by a
  /// writer that died; the next write there removes them.
  static constexpr int kStaleTempSeconds = 600;

private:
  std::string nvrtcIdentity();
  bool readEntry(const std::string &key, NvrtcOutput &out);
  void writeEntry(const std::string &key, const NvrtcOutput &out);
  void removeStaleTemps(const std::string &dir);
  void warnOnce(const std::string &what);

  std::string Dir;
  bool Enabled;
  mutable std::mutex Mutex;
  std::map<std::string, std::shared_future<NvrtcOutput>> Memory;
  /// Structure key -> the source and entry point compiled for it (getShared).
  std::map<std::string, std::pair<std::string, std::string>> Structures;
  CacheStats Stats;
  std::string NvrtcId;
  bool Warned = false;
};

} // namespace minijit
