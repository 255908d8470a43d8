//===- compiler/tune/TuningDatabase.cpp - tuned schedules, kept ------------===//
// Entry layout (cache/EntryFile.h): "MJTD0001", then six fields (key,
// overrides, tuned and default microseconds and the candidate count as
// decimal text, the driver), then the checksum; in 256 subdirectories named
// by the key's first two hex digits, as the kernel cache's.
//===----------------------------------------------------------------------===//
#include "compiler/tune/TuningDatabase.h"

#include "compiler/cache/EntryFile.h"
#include "compiler/cache/KernelCache.h"
#include "compiler/emit/CudaEmitter.h"
#include "compiler/templates/KernelTemplate.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace minijit {

namespace {

constexpr char kMagic[] = "MJTD0001";
constexpr uint64_t kMaxEntryBytes = 1 << 20; ///< an entry is a few hundred bytes

} // namespace

std::string tuningSource(const LoweredKernel &k, const Schedule &s) {
  LoweredKernel anywhere = k;
  anywhere.index = 0;
  return kernelPreamble(anywhere, s) + "\n" + emitKernel(anywhere, s, "k");
}

TuningDatabase::TuningDatabase(std::string dir) : Dir(std::move(dir)) {}

TuningDatabase &TuningDatabase::global() {
  static TuningDatabase db([] {
    std::string base = entry::defaultCacheDirectory();
    return entry::cacheDisabled() || base.empty() ? std::string() : base + "/tuning";
  }());
  return db;
}

std::string TuningDatabase::keyFor(KernelCache &cache, const std::string &defaultSource,
                                   const Target &target, const DeviceProperties &dev) {
  // The kernel cache's key names the source, the target, NVRTC and minijit.
  std::string compiled = cache.keyFor(defaultSource, target, {});
  llvm::SHA256 h;
  for (const std::string &part : {std::string("minijit tuning"), compiled, dev.name,
                                  std::to_string(dev.smCount), std::to_string(dev.driverVersion)}) {
    h.update(part);
    h.update(llvm::StringRef("\0", 1));
  }
  return llvm::toHex(h.final(), /*LowerCase=*/true);
}

std::string TuningDatabase::pathFor(const std::string &key) const {
  return entry::entryPath(Dir, key, ".mjt");
}

std::optional<TuningEntry> TuningDatabase::lookup(const std::string &key) {
  {
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.lookups;
  }
  if (Dir.empty())
    return std::nullopt;
  std::string path = pathFor(key);
  auto corrupt = [&](const std::string &why) -> std::optional<TuningEntry> {
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.corruptEntries;
    llvm::errs() << "minijit: warning: tuning database entry " << path << " is " << why
                 << "; the kernel keeps its default schedule\n";
    return std::nullopt;
  };
  std::unique_ptr<llvm::MemoryBuffer> data;
  uint64_t size = 0;
  switch (entry::readFile(path, kMaxEntryBytes, data, size)) {
  case entry::ReadResult::Absent: return std::nullopt;
  case entry::ReadResult::TooLarge:
    return corrupt(llvm::formatv("{0} bytes, larger than any entry", size).str());
  case entry::ReadResult::Read: break;
  }
  std::vector<std::string> f; // key, overrides, tuned us, default us, candidates, driver
  std::string why;
  if (!entry::decode(data->getBuffer(), llvm::StringRef(kMagic, 8), "tuning entry", 6, f, why))
    return corrupt(why);
  if (f[0] != key)
    return corrupt("for another key");
  Expected<ScheduleOverrides> overrides = parseScheduleOverrides(f[1]);
  if (!overrides)
    return corrupt("malformed (" + overrides.error() + ")");
  TuningEntry e;
  e.overrides = std::move(*overrides);
  e.driver = f[5];
  if (!llvm::to_float(f[2], e.tunedUs) || !llvm::to_float(f[3], e.defaultUs) ||
      !llvm::to_integer(f[4], e.candidates, 10))
    return corrupt("malformed (a time or count is not a number)");
  std::lock_guard<std::mutex> lock(Mutex);
  ++Stats.hits;
  return e;
}

bool TuningDatabase::store(const std::string &key, const TuningEntry &e, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = why;
    std::lock_guard<std::mutex> lock(Mutex);
    ++Stats.writeFailures;
    return false;
  };
  if (Dir.empty())
    return fail("no tuning database directory (no cache directory, or MINIJIT_DISABLE_CACHE)");
  std::string tuned = llvm::formatv("{0:f3}", e.tunedUs).str();
  std::string def = llvm::formatv("{0:f3}", e.defaultUs).str();
  std::string count = std::to_string(e.candidates);
  std::string buf =
      entry::encode(llvm::StringRef(kMagic, 8),
                    {key, e.overrides.str(), tuned, def, count, e.driver});
  std::string path = pathFor(key);
  std::string dir = llvm::sys::path::parent_path(path).str();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create " + dir + ": " + ec.message());
  if (!entry::writeAtomically(path, buf, error))
    return fail("cannot write " + path + ": " + error);
  entry::removeStaleTemps(dir, KernelCache::kStaleTempSeconds);
  return true;
}

TuningStats TuningDatabase::stats() const {
  std::lock_guard<std::mutex> lock(Mutex);
  return Stats;
}

} // namespace minijit
