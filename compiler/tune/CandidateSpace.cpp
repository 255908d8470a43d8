//===- compiler/tune/CandidateSpace.cpp - the schedules a search tries -----===//
// Per template, a few tens of override texts around the rules' choice, each
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

/// "a=1,b=2" from the non-empty parts.
std::string joinKeys(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string &p : parts)
    if (!p.empty())
      out += (out.empty() ? "" : ",") + p;
  return out;
}

std::string key(const char *name, int64_t value) {
  return std::string(name) + "=" + std::to_string(value);
}

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

/// Inner rows: threads per row (from a quarter of the rules' choice, or a
/// warp, to eight times it), and for the rules' own a warp or less per row,
/// rows per block; then, for each, the online sum turned the other way, loads ahead (which
/// only a row read in a loop has: elsewhere the kernel is the same and
/// dropped), a loop over the row instead of registers; a narrower vector;
/// for many rows of a block each, clusters of blocks a row.
std::vector<std::string> rowCandidates(const LoweredKernel &body, const ScheduledKernel &def,
                                       const DeviceProperties &dev) {
  const RowSchedule &s = def.schedule.as<RowSchedule>();
  int64_t maxThreads = std::min(1024, dev.maxThreadsPerBlock);
  int64_t kv = std::max<int64_t>(1, s.vectorsPerRow(def.lowered.K));
  int64_t most = std::min<int64_t>({maxThreads, 8 * int64_t(s.threadsPerRow),
                                    std::max<int64_t>(32, int64_t(llvm::PowerOf2Ceil(kv)))});
  // Down to a warp at least, where the rules gave a row more threads for
  // filling the device (the warp a row that the rows would otherwise take).
  int64_t least = std::max<int64_t>(1, std::min<int64_t>(s.threadsPerRow / 4, 32));
  std::vector<std::string> bases;
  for (int64_t t : pow2Around(s.threadsPerRow, least, most)) {
    bases.push_back(key("tpr", t));
    if (t != int64_t(s.threadsPerRow) || t > 32)
      continue;
    for (int64_t b : {128, 512})
      if (b % t == 0 && b <= maxThreads && b != int64_t(s.block))
        bases.push_back(joinKeys({key("tpr", t), key("block", b)}));
  }
  std::vector<std::string> out = bases;
  // The online sum, the other way from the default, where the kernel has one.
  if (sumExpsOnline(body)) {
    bool defaultOnline = llvm::any_of(def.lowered.reductions,
                                      [](const KReduction &r) { return r.onlineMax >= 0; });
    std::string flip = defaultOnline ? "online=0" : "online=1";
    out.push_back(flip); // the rules' threads per row for the rewritten kernel
    for (const std::string &b : bases)
      out.push_back(joinKeys({b, flip}));
  }
  for (const std::string &b : bases)
    out.push_back(joinKeys({b, "cached=0"}));
  for (int64_t ahead : {2, 8, 1})
    for (const std::string &b : bases)
      out.push_back(joinKeys({b, key("ahead", ahead)}));
  if (s.vec > 1)
    out.push_back(key("vec", s.vec / 2));
  // Many rows of a block each, or of a cluster each: the other cluster
  // sizes (sm_90; elsewhere they are refused and dropped).
  bool manyRows = s.splits == 1 && def.lowered.rows >= dev.smCount && s.threadsPerRow >= 64;
  if (s.rowsPerBlock == 1 && (s.cluster > 1 || manyRows))
    for (int64_t c : {1, 2, 4, 8})
      if (c != int64_t(s.cluster))
        out.push_back(key("rowcluster", c));
  return out;
}

std::vector<std::string> pointwiseCandidates(const ScheduledKernel &def) {
  const PointwiseSchedule &s = def.schedule.as<PointwiseSchedule>();
  std::vector<std::string> out;
  for (int64_t items : {1, 2, 4, 8})
    for (int64_t b : pow2Around(s.block, 64, 1024))
      out.push_back(joinKeys({key("block", b), key("items", items)}));
  if (s.vec > 1)
    for (int64_t items : {1, 2, 4})
      out.push_back(joinKeys({key("vec", s.vec / 2), key("items", items)}));
  return out;
}

/// Tiles of 16, 32 or 64 with the blocks that divide them, and the
/// pointwise template reading the permuted operands element by element.
std::vector<std::string> transposeCandidates(const ScheduledKernel &def) {
  const TransposeSchedule &s = def.schedule.as<TransposeSchedule>();
  std::vector<std::string> out;
  for (int64_t tile : {int64_t(s.tile), int64_t(16), int64_t(32), int64_t(64)})
    for (int64_t b : pow2Around(s.block, 64, 1024))
      out.push_back(joinKeys({key("tile", tile), key("block", b)}));
  out.push_back("transpose=0");
  for (int64_t items : {2, 4})
    out.push_back(joinKeys({"transpose=0", key("items", items)}));
  return out;
}

/// Threads per column, and with one pass the blocks sharing a group of
/// columns.
std::vector<std::string> columnCandidates(const ScheduledKernel &def) {
  const ColumnSchedule &s = def.schedule.as<ColumnSchedule>();
  const LoweredKernel &k = def.lowered;
  std::vector<std::string> splits{""};
  if (k.passes == 1)
    for (int64_t v : {int64_t(1), int64_t(s.splits) / 2, int64_t(s.splits) * 2, int64_t(s.splits) * 4})
      if (v >= 1 && v <= std::min<int64_t>(k.K, 1024))
        splits.push_back(key("splits", v));
  std::vector<std::string> out;
  for (const std::string &sp : splits)
    for (int64_t parts : pow2Around(s.parts, 1, 32))
      out.push_back(joinKeys({key("parts", parts), sp}));
  return out;
}

std::vector<std::string> scanCandidates(const ScheduledKernel &def) {
  const ScanSchedule &s = def.schedule.as<ScanSchedule>();
  std::vector<std::string> out;
  for (int64_t items : pow2Around(s.items, 1, 16))
    for (int64_t b : pow2Around(s.block, 64, 1024))
      out.push_back(joinKeys({key("items", items), key("block", b)}));
  return out;
}

std::vector<std::string> matmulCandidates(const ScheduledKernel &def) {
  std::vector<std::string> out;
  switch (def.schedule.kind()) {
  case ScheduleKind::MatmulSimt:
    for (int64_t tile : {128, 64, 32, 16})
      for (int64_t frag : {1, 2})
        out.push_back(joinKeys({key("tile", tile), key("frag", frag)}));
    // 128 threads of 8x16 outputs on the 128x128 tile; three and four
    // stages copied by cp.async
    for (int64_t frag : {1, 2})
      out.push_back(joinKeys({key("tile", 128), key("tn", 16), key("frag", frag)}));
    for (int64_t tn : {8, 16})
      for (int64_t stages : {3, 4})
        out.push_back(joinKeys({key("tile", 128), key("tn", tn), key("cpasync", stages)}));
    out.push_back(joinKeys({key("tile", 64), key("cpasync", 3)}));
    // 256x128 tiles of 8x16 outputs a thread, and the tiles of an operand
    // whose k is contiguous kept so (krows), through registers or cp.async
    for (int64_t stages : {0, 3})
      for (int64_t krows : {0, 1})
        out.push_back(joinKeys({key("tile", 256), key("cpasync", stages), key("krows", krows)}));
    for (int64_t stages : {0, 3})
      out.push_back(
          joinKeys({key("tile", 128), key("tn", 16), key("cpasync", stages), key("krows", 1)}));
    // cp.async with pipelined fragments (the rule's choice where rows are
    // not whole lines or both operands are copied as stored; tile=128,frag=1
    // above is the loop through registers)
    for (int64_t stages : {3, 4})
      out.push_back(joinKeys({key("tile", 128), key("cpasync", stages), key("frag", 2)}));
    break;
  case ScheduleKind::MatmulMma:
    for (int64_t tile : {128, 64})
      for (int64_t stages : {2, 3, 4, 5})
        for (int64_t frag : {1, 2})
          out.push_back(joinKeys({key("tile", tile), key("stages", stages), key("frag", frag)}));
    break;
  case ScheduleKind::MatmulWgmma:
    // cooperative in single blocks and in clusters of two sharing B's
    // tile (either may be the rule's choice), then ping-pong
    for (int64_t bn : {256, 128, 64})
      for (int64_t stages : {4, 3, 5, 6, 2})
        for (int64_t cluster : {1, 2})
          out.push_back(joinKeys({key("bn", bn), key("stages", stages), key("pingpong", 0),
                                  key("cluster", cluster)}));
    for (int64_t bn : {128, 64})
      for (int64_t stages : {4, 3, 5, 6, 2})
        out.push_back(joinKeys({key("bn", bn), key("stages", stages), key("pingpong", 1)}));
    // the epilogue staged through shared memory or not (the rule stages
    // every 16-bit product and TF32 ones of a short k), with as many stages
    // as fit
    for (int64_t bn : {256, 128})
      for (int64_t staged : {1, 0})
        for (int64_t cluster : {1, 2})
          out.push_back(joinKeys({key("bn", bn), key("staged", staged), key("pingpong", 0),
                                  key("cluster", cluster)}));
    out.push_back("wgmma=0");
    break;
  default: break;
  }
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

std::vector<std::string> candidateOverrides(const LoweredKernel &body, const ScheduledKernel &def,
                                            const DeviceProperties &dev) {
  switch (def.schedule.kind()) {
  case ScheduleKind::Pointwise: return pointwiseCandidates(def);
  case ScheduleKind::InnerRow: return rowCandidates(body, def, dev);
  case ScheduleKind::OuterCol: return columnCandidates(def);
  case ScheduleKind::Transpose: return transposeCandidates(def);
  case ScheduleKind::Scan: return scanCandidates(def);
  case ScheduleKind::MatmulSimt:
  case ScheduleKind::MatmulMma:
  case ScheduleKind::MatmulWgmma: return matmulCandidates(def);
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
  std::map<std::string, std::string> seen; // identity -> the first overrides giving it
  auto add = [&](const std::string &overrides, ScheduledKernel k) {
    std::string identity = tuningSource(k.lowered, k.schedule) + launchText(k.schedule);
    auto [it, fresh] = seen.emplace(identity, overrides);
    if (!fresh) {
      space.dropped.push_back(
          {overrides, "same kernel as " + (it->second.empty() ? "the default" : it->second)});
      return;
    }
    if (space.candidates.size() >= limit) {
      space.dropped.push_back(
          {overrides, llvm::formatv("over the limit of {0} candidates", limit).str()});
      return;
    }
    space.candidates.push_back({overrides, std::move(k), std::move(identity)});
  };
  ScheduledKernel def = scheduleKernel(body, dev, {}, arch);
  std::vector<std::string> texts = candidateOverrides(body, def, dev);
  add("", def);
  std::vector<std::string> done;
  for (const std::string &text : texts) {
    if (llvm::is_contained(done, text))
      continue;
    done.push_back(text);
    try {
      ScheduledKernel k = scheduleKernel(body, dev, parseScheduleOverrides(text), arch);
      if (std::string why = exceedsLimits(k.schedule, dev); !why.empty()) {
        space.dropped.push_back({text, why});
        continue;
      }
      add(text, std::move(k));
    } catch (const CompileError &e) {
      space.dropped.push_back({text, e.what()});
    }
  }
  return space;
}

} // namespace minijit
