//===- compiler/cache/EntryFile.h - checksummed files, written atomically -*- C++ -*-===//
// What the kernel cache and the tuning database share. An entry is an 8-byte
// magic, length-prefixed fields, then the xxHash64 of everything before it.
// A writer fills a fresh temporary file and renames it over the entry, so a
// reader sees a whole old entry, a whole new one, or none; the checksum
// catches what the disk itself damages. Entries are read with read(), not
// mapped (a file truncated in place by another process would fault a
// mapping), and temporary files left by a writer that died are removed once
// stale.
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minijit::entry {

/// `magic` (8 bytes), the fields, the checksum.
std::string encode(llvm::StringRef magic, llvm::ArrayRef<llvm::StringRef> fields);

/// The `count` fields of an entry with `magic`. Returns false with the reason
/// in `why`: "not a minijit ENTRY" (`what` names it), "corrupt or truncated
/// (checksum mismatch)", "malformed (its fields do not add up)". Never trusts
/// a length it has not checked.
bool decode(llvm::StringRef data, llvm::StringRef magic, llvm::StringRef what, size_t count,
            std::vector<std::string> &fields, std::string &why);

/// Writes `data` to a fresh temporary file beside `path`, then renames it to
/// `path`. On failure removes the temporary file and says why in `error`
/// (also for a file the size limit, ulimit -f, would stop).
bool writeAtomically(const std::string &path, llvm::StringRef data, std::string &error);

enum class ReadResult {
  Absent,   ///< no file (or unreadable)
  Read,     ///< `data` holds it
  TooLarge, ///< larger than `maxBytes`: `size` says how large; not read
};
ReadResult readFile(const std::string &path, uint64_t maxBytes,
                    std::unique_ptr<llvm::MemoryBuffer> &data, uint64_t &size);

/// Where the entry for `key` (hex) lives in `dir`: in one of 256
/// subdirectories named by its first two digits, then the rest + `extension`.
std::string entryPath(const std::string &dir, const std::string &key, llvm::StringRef extension);

/// Removes the temporary files in `dir` older than `staleSeconds` (younger
/// ones may belong to a writer still at work); returns how many.
uint64_t removeStaleTemps(const std::string &dir, int staleSeconds);

/// $MINIJIT_CACHE_DIR, else $XDG_CACHE_HOME/minijit, else ~/.cache/minijit
/// (empty without a home).
std::string defaultCacheDirectory();

/// MINIJIT_DISABLE_CACHE is set to something other than 0: nothing is kept.
bool cacheDisabled();

} // namespace minijit::entry
