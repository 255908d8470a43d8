//===- compiler/templates/scan/ScanSchedule.cpp - cumsum/cumprod along rows ---===//
// Consecutive elements a thread (elementsPerThread) and as many threads as a
// tile of the row needs, up to 256. A block walks each row, or, where the
// rows are fewer than the SMs, the rows' tiles are chained over blocks
// (chainTiles). The tile goes through shared memory (Scan.cpp), which bounds
// block * items.
//===----------------------------------------------------------------------===//
#include "compiler/templates/scan/ScanInternal.h"

#include "compiler/schedule/ScheduleInternal.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace minijit::detail {

namespace {

/// `s` with its rows' tiles chained over blocks (ScanSchedule::chained())
/// where the rows, a block each, would leave SMs idle and a row holds two
/// tiles or more. Chained, each block scans one tile and waits only for the
/// status words of the tiles before it; the kernel still reads and writes
/// each element once. A chained scan streams at a little over half of copy
/// whatever the rows; a block walking its row at about 1/200 of copy (one
/// block an SM), so a block a row pays from about 7/8 of the SMs on
/// (docs/PERFORMANCE_LOG.md, "Scans: tiles of sixteen elements a thread,
/// chained tiles for few rows"). One scan of 32-bit accumulators (a status
/// word holds a value and its flag), sizes known when compiled (the grid and
/// the workspace hold the tile count).
Expected<Schedule> chainTiles(const LoweredKernel &k, const DeviceProperties &dev,
                              const ScheduleOverrides &o, ScanSchedule s) {
  int64_t tile = int64_t(s.block) * s.items;
  int64_t tiles = (k.K + tile - 1) / tile;
  bool can = !k.symbolic && k.reductions.size() == 1 && k.reductions[0].dtype != DType::I64 &&
             tiles >= 2 && k.rows * tiles < (int64_t(1) << 31);
  bool fewRows = k.rows * 8 < int64_t(dev.smCount) * 7;
  bool chain = o.chain ? *o.chain != 0 : can && fewRows;
  if (chain && !can)
    return refuse("chain=1 needs one scan of 32-bit values (not i64), sizes known when compiled, "
                  "and rows of two tiles (block * items elements) or more");
  if (chain) {
    s.splits = static_cast<unsigned>(tiles);
    s.grid = k.rows * tiles;
  }
  return Schedule{s};
}

/// Elements a thread when not set by hand: 16 where the rows leave each SM
/// fewer than four blocks (there the blocks' threads are all an SM runs, and
/// each needs many loads in flight; the 64 to 80 registers of 16 elements cost
/// nothing), 4 where the rows fill every SM four times or more (about 32
/// registers, so eight blocks of 256 threads fit an SM and one block's loads
/// overlap another's scan; at 16, three blocks fit and a scan whose loads are
/// many runs at half of copy: docs/PERFORMANCE_LOG.md, "The masked cumsum and
/// overlapping windows"). Fewer for rows shorter than 32 threads' worth.
unsigned elementsPerThread(const LoweredKernel &k, const DeviceProperties &dev) {
  uint64_t most = k.rows < 4 * int64_t(dev.smCount) ? 16 : 4;
  uint64_t forRow = llvm::PowerOf2Floor(static_cast<uint64_t>(std::max<int64_t>(k.K / 32, 1)));
  return static_cast<unsigned>(std::clamp<uint64_t>(forRow, 1, most));
}

} // namespace

Expected<Schedule> scanSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                const ScheduleOverrides &o) {
  ScanSchedule s;
  s.items = elementsPerThread(k, dev);
  if (o.items) {
    if (*o.items < 1 || *o.items > 16)
      return refuse("items must be 1..16");
    s.items = static_cast<unsigned>(*o.items);
  }
  int64_t threads = (k.K + s.items - 1) / s.items;
  s.block = static_cast<unsigned>(
      std::clamp<uint64_t>(llvm::PowerOf2Ceil(static_cast<uint64_t>(threads)), 32, 256));
  if (o.block) {
    if (*o.block < 32 || *o.block > 1024 || *o.block % 32)
      return refuse("block must be a multiple of 32 up to 1024");
    s.block = static_cast<unsigned>(*o.block);
  }
  // The tiles in shared memory, one a scan (4 bytes an element, 8 for i64; one
  // in 32 left out), take at most 40 KiB together, under the 48 KiB of static
  // memory: the scans of one kernel share it, fewer elements a tile each.
  int64_t elementBytes = 0;
  for (const KReduction &r : k.reductions)
    elementBytes += r.dtype == DType::I64 ? 8 : 4;
  auto tileBytes = [&] { return int64_t(s.block) * s.items * 33 / 32 * elementBytes; };
  const int64_t most = 40 * 1024;
  if (tileBytes() > most && (o.items || o.block))
    return refuse("block * items elements a scan, for " + std::to_string(k.reductions.size()) +
                " scans, take " + std::to_string(tileBytes()) +
                " bytes of shared memory; at most 40960");
  while (tileBytes() > most && (s.items > 1 || s.block > 32)) {
    if (s.items > 1)
      s.items /= 2;
    else
      s.block /= 2;
  }
  if (tileBytes() > most)
    return refuse("a kernel of " + std::to_string(k.reductions.size()) +
                  " scans needs more shared memory than a block has");
  s.grid = k.rows;
  return chainTiles(k, dev, o, s);
}

} // namespace minijit::detail
