//===- compiler/tune/CandidateSpace.cpp - the schedules a search tries -----===//
// Per template, a few tens of typed overrides around the rules' choice, each
// realized through scheduleKernel (the compile's own path), checked against
// the device's limits and made unique by the kernel it gives.
//===----------------------------------------------------------------------===//
#include "compiler/tune/CandidateSpace.h"

#include "compiler/tune/TuningDatabase.h"
#include "ir/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <map>

namespace minijit {

namespace {

using Overrides = ScheduleOverrides;

/// Powers of two from `lo` to `hi`, `center` first, then outwards (the
/// nearest to the rules' choice first).
std::vector<int64_t> pow2Around(int64_t center, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  if (center >= lo && center <= hi)
    out.push_back(center);
  for (int64_t step = 2; center / step >= lo || center * step <= hi; step *= 2) {
    if (center / step >= lo && center % step == 0)
      out.push_back(center / step);
    if (center * step <= hi)
      out.push_back(center * step);
  }
  return out;
}

/// Each of `bases` with `field` set to `value`.
std::vector<Overrides> eachWith(const std::vector<Overrides> &bases,
                                std::optional<int64_t> Overrides::*field, int64_t value) {
  std::vector<Overrides> out = bases;
  for (Overrides &o : out)
    o.*field = value;
  return out;
}

/// Inner rows: threads per row (from a quarter of the rules' choice, or a
/// warp, to eight times it), and for the rules' own a warp or less per row,
/// rows per block; then, for each, the online sum turned the other way, loads ahead (which
/// only a row read in a loop has: elsewhere the kernel is the same and
/// dropped), a loop over the row instead of registers; a narrower vector;
/// for many rows of a block each, clusters of blocks a row.
std::vector<Overrides> rowCandidates(const LoweredKernel &body, const ScheduledKernel &def,
                                     const DeviceProperties &dev) {
  const RowSchedule &s = def.schedule.as<RowSchedule>();
  int64_t maxThreads = std::min(1024, dev.maxThreadsPerBlock);
  int64_t kv = std::max<int64_t>(1, s.vectorsPerRow(def.lowered.K));
  int64_t most = std::min<int64_t>({maxThreads, 8 * int64_t(s.threadsPerRow),
                                    std::max<int64_t>(32, int64_t(llvm::PowerOf2Ceil(kv)))});
  // Down to a warp at least, where the rules gave a row more threads for
  // filling the device (the warp a row that the rows would otherwise take).
  int64_t least = std::max<int64_t>(1, std::min<int64_t>(s.threadsPerRow / 4, 32));
  std::vector<Overrides> bases;
  for (int64_t t : pow2Around(s.threadsPerRow, least, most)) {
    bases.push_back({.tpr = t});
    if (t != int64_t(s.threadsPerRow) || t > 32)
      continue;
    for (int64_t b : {128, 512})
      if (b % t == 0 && b <= maxThreads && b != int64_t(s.block))
        bases.push_back({.block = b, .tpr = t});
  }
  std::vector<Overrides> out = bases;
  auto append = [&](const std::vector<Overrides> &more) {
    out.insert(out.end(), more.begin(), more.end());
  };
  // The online sum, the other way from the default, where the kernel has one.
  if (sumExpsOnline(body)) {
    bool defaultOnline = llvm::any_of(def.lowered.reductions,
                                      [](const KReduction &r) { return r.onlineMax >= 0; });
    int64_t flip = defaultOnline ? 0 : 1;
    out.push_back({.online = flip}); // the rules' threads per row for the rewritten kernel
    append(eachWith(bases, &Overrides::online, flip));
  }
  for (Overrides b : bases) {
    b.cached = false;
    out.push_back(b);
  }
  for (int64_t ahead : {2, 8, 1})
    append(eachWith(bases, &Overrides::ahead, ahead));
  if (s.vec > 1)
    out.push_back({.vec = s.vec / 2});
  // Many rows of a block each, or of a cluster each: the other cluster
  // sizes (sm_90; elsewhere they are refused and dropped).
  bool manyRows = s.splits == 1 && def.lowered.rows >= dev.smCount && s.threadsPerRow >= 64;
  if (s.rowsPerBlock == 1 && (s.cluster > 1 || manyRows))
    for (int64_t c : {1, 2, 4, 8})
      if (c != int64_t(s.cluster))
        out.push_back({.rowcluster = c});
  return out;
}

std::vector<Overrides> pointwiseCandidates(const ScheduledKernel &def) {
  const PointwiseSchedule &s = def.schedule.as<PointwiseSchedule>();
  std::vector<Overrides> out;
  for (int64_t items : {1, 2, 4, 8})
    for (int64_t b : pow2Around(s.block, 64, 1024))
      out.push_back({.block = b, .items = items});
  if (s.vec > 1)
    for (int64_t items : {1, 2, 4})
      out.push_back({.vec = s.vec / 2, .items = items});
  return out;
}

/// Tiles of 16, 32 or 64 with the blocks that divide them, and the
/// pointwise template reading the permuted operands element by element.
std::vector<Overrides> transposeCandidates(const ScheduledKernel &def) {
  const TransposeSchedule &s = def.schedule.as<TransposeSchedule>();
  std::vector<Overrides> out;
  for (int64_t tile : {int64_t(s.tile), int64_t(16), int64_t(32), int64_t(64)})
    for (int64_t b : pow2Around(s.block, 64, 1024))
      out.push_back({.block = b, .tile = tile});
  out.push_back({.transpose = 0});
  for (int64_t items : {2, 4})
    out.push_back({.items = items, .transpose = 0});
  return out;
}

/// Threads per column, and with one pass the blocks sharing a group of
/// columns.
std::vector<Overrides> columnCandidates(const ScheduledKernel &def) {
  const ColumnSchedule &s = def.schedule.as<ColumnSchedule>();
  const LoweredKernel &k = def.lowered;
  std::vector<std::optional<int64_t>> splits{std::nullopt};
  if (k.passes == 1)
    for (int64_t v : {int64_t(1), int64_t(s.splits) / 2, int64_t(s.splits) * 2, int64_t(s.splits) * 4})
      if (v >= 1 && v <= std::min<int64_t>(k.K, 1024))
        splits.push_back(v);
  std::vector<Overrides> out;
  for (std::optional<int64_t> sp : splits)
    for (int64_t parts : pow2Around(s.parts, 1, 32))
      out.push_back({.parts = parts, .splits = sp});
  return out;
}

std::vector<Overrides> scanCandidates(const ScheduledKernel &def) {
  const ScanSchedule &s = def.schedule.as<ScanSchedule>();
  std::vector<Overrides> out;
  for (int64_t items : pow2Around(s.items, 1, 16))
    for (int64_t b : pow2Around(s.block, 64, 1024))
      out.push_back({.block = b, .items = items});
  return out;
}

std::vector<Overrides> simtCandidates() {
  std::vector<Overrides> out;
  for (int64_t tile : {128, 64, 32, 16})
    for (int64_t frag : {1, 2})
      out.push_back({.tile = tile, .frag = frag});
  // 128 threads of 8x16 outputs on the 128x128 tile; three and four
  // stages copied by cp.async
  for (int64_t frag : {1, 2})
    out.push_back({.tile = 128, .frag = frag, .tn = 16});
  for (int64_t tn : {8, 16})
    for (int64_t stages : {3, 4})
      out.push_back({.tile = 128, .tn = tn, .cpasync = stages});
  out.push_back({.tile = 64, .cpasync = 3});
  // 256x128 tiles of 8x16 outputs a thread, and the tiles of an operand
  // whose k is contiguous kept so (krows), through registers or cp.async
  for (int64_t stages : {0, 3})
    for (int64_t krows : {0, 1})
      out.push_back({.tile = 256, .cpasync = stages, .krows = krows});
  for (int64_t stages : {0, 3})
    out.push_back({.tile = 128, .tn = 16, .cpasync = stages, .krows = 1});
  // cp.async with pipelined fragments (the rule's choice where rows are
  // not whole lines or both operands are copied as stored; tile=128,frag=1
  // above is the loop through registers)
  for (int64_t stages : {3, 4})
    out.push_back({.tile = 128, .frag = 2, .cpasync = stages});
  return out;
}

std::vector<Overrides> wgmmaCandidates() {
  std::vector<Overrides> out;
  // cooperative in single blocks and in clusters of two sharing B's
  // tile (either may be the rule's choice), then ping-pong
  for (int64_t bn : {256, 128, 64})
    for (int64_t stages : {4, 3, 5, 6, 2})
      for (int64_t cluster : {1, 2})
        out.push_back({.bn = bn, .stages = stages, .pingpong = 0, .cluster = cluster});
  for (int64_t bn : {128, 64})
    for (int64_t stages : {4, 3, 5, 6, 2})
      out.push_back({.bn = bn, .stages = stages, .pingpong = 1});
  // the epilogue staged through shared memory or not (the rule stages
  // every 16-bit product and TF32 ones of a short k), with as many stages
  // as fit
  for (int64_t bn : {256, 128})
    for (int64_t staged : {1, 0})
      for (int64_t cluster : {1, 2})
        out.push_back({.bn = bn, .pingpong = 0, .cluster = cluster, .staged = staged});
  out.push_back({.wgmma = 0});
  return out;
}

std::vector<Overrides> mmaCandidates() {
  std::vector<Overrides> out;
  for (int64_t tile : {128, 64})
    for (int64_t stages : {2, 3, 4, 5})
      for (int64_t frag : {1, 2})
        out.push_back({.tile = tile, .stages = stages, .frag = frag});
  return out;
}

/// The schedule's launch, which its text does not show.
std::string launchText(const Schedule &s) {
  const LaunchGeometry &g = s.geometry();
  return llvm::formatv("\n// launch: block {0}, grid {1}, dynamic shared {2}\n", g.block, g.grid,
                       s.dynamicSharedBytes())
      .str();
}

} // namespace

std::vector<ScheduleOverrides> candidateOverrides(const LoweredKernel &body,
                                                  const ScheduledKernel &def,
                                                  const DeviceProperties &dev) {
  switch (def.schedule.kind()) {
  case ScheduleKind::Pointwise: return pointwiseCandidates(def);
  case ScheduleKind::InnerRow: return rowCandidates(body, def, dev);
  case ScheduleKind::OuterCol: return columnCandidates(def);
  case ScheduleKind::Transpose: return transposeCandidates(def);
  case ScheduleKind::Scan: return scanCandidates(def);
  case ScheduleKind::MatmulSimt: return simtCandidates();
  case ScheduleKind::MatmulMma: return mmaCandidates();
  case ScheduleKind::MatmulWgmma: return wgmmaCandidates();
  }
  return {};
}

std::string exceedsLimits(const Schedule &s, const DeviceProperties &dev) {
  const LaunchGeometry &g = s.geometry();
  if (int64_t(g.block) > dev.maxThreadsPerBlock)
    return llvm::formatv("{0} threads a block; the device allows {1}", g.block,
                         dev.maxThreadsPerBlock)
        .str();
  if (int64_t(s.dynamicSharedBytes()) > dev.sharedPerBlockOptin)
    return llvm::formatv("{0} bytes of shared memory a block; the device allows {1}",
                         s.dynamicSharedBytes(), dev.sharedPerBlockOptin)
        .str();
  if (const TransposeSchedule *t = s.getIf<TransposeSchedule>()) {
    int64_t tiles = int64_t(t->tiled.size()) * t->tile * (t->tile + 1) * 4;
    if (tiles > dev.sharedPerBlock)
      return llvm::formatv("{0} bytes of tiles in shared memory; the device allows {1}", tiles,
                           dev.sharedPerBlock)
          .str();
  }
  if (blocksPerSM(s, dev, 0) < 1)
    return "no block of it fits an SM (threads, registers or shared memory)";
  if (const RowSchedule *r = s.getIf<RowSchedule>();
      r && r->waits && r->cluster == 1 &&
      g.grid > int64_t(std::max(1u, g.minBlocksPerSM)) * dev.smCount)
    return llvm::formatv("its {0} blocks wait for each other but cannot all be resident", g.grid)
        .str();
  return "";
}

CandidateSpace candidateSpace(const LoweredKernel &body, const DeviceProperties &dev,
                              const std::string &arch, size_t limit) {
  CandidateSpace space;
  std::map<std::string, ScheduleOverrides> seen; // identity -> the first overrides giving it
  auto add = [&](const ScheduleOverrides &overrides, ScheduledKernel k) {
    std::string identity = tuningSource(k.lowered, k.schedule) + launchText(k.schedule);
    auto [it, fresh] = seen.emplace(identity, overrides);
    if (!fresh) {
      space.dropped.push_back(
          {overrides, "same kernel as " + (it->second.empty() ? "the default" : it->second.str())});
      return;
    }
    if (space.candidates.size() >= limit) {
      space.dropped.push_back(
          {overrides, llvm::formatv("over the limit of {0} candidates", limit).str()});
      return;
    }
    space.candidates.push_back({overrides, std::move(k), std::move(identity)});
  };
  Expected<ScheduledKernel> def = scheduleKernel(body, dev, {}, arch);
  if (!def)
    throw CompileError(def.error()); // not an override's: a kernel no template takes
  std::vector<ScheduleOverrides> tries = candidateOverrides(body, *def, dev);
  add({}, *def);
  std::vector<ScheduleOverrides> done;
  for (const ScheduleOverrides &o : tries) {
    if (llvm::is_contained(done, o))
      continue;
    done.push_back(o);
    Expected<ScheduledKernel> k = scheduleKernel(body, dev, o, arch);
    if (!k) {
      space.dropped.push_back({o, k.error()});
      continue;
    }
    if (std::string why = exceedsLimits(k->schedule, dev); !why.empty()) {
      space.dropped.push_back({o, why});
      continue;
    }
    add(o, std::move(*k));
  }
  return space;
}

} // namespace minijit
