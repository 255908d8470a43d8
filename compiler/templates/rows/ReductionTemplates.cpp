//===- compiler/templates/rows/ReductionTemplates.cpp - inner rows and outer columns ---===//
// The reduction templates: contiguous rows, T threads a row, split over
// blocks or clusters where rows are few and long (RowReduction.cpp), and
// strided columns, 32 a block (ColumnReduction.cpp). Their rules
// (ReductionSchedule.cpp) are reached through the inner row template.
//===----------------------------------------------------------------------===//
#include "compiler/templates/TemplatesInternal.h"
#include "compiler/templates/rows/RowsInternal.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace minijit::detail {

namespace {

using Overrides = ScheduleOverrides;

std::string describeRow(const RowSchedule &s, GridText grid) {
  unsigned t = s.threadsPerRow;
  std::string ahead =
      s.ahead > 1 ? llvm::formatv(", {0} vectors a thread loaded at a time", s.ahead).str() : "";
  std::string who = t == 1    ? std::string("1 thread")
                    : t < 32  ? llvm::formatv("{0} threads", t).str()
                    : t == 32 ? std::string("a warp")
                              : llvm::formatv("a block of {0}", t).str();
  std::string held = s.cached ? llvm::formatv("{0} per thread held in registers", s.itemsPerThread).str()
                              : std::string("read again in each pass");
  std::string how =
      s.cluster > 1
          ? llvm::formatv("split over a cluster of {0} blocks per row ({1} vectors each, {2}), "
                          "meeting at the cluster's barrier after each pass to combine the "
                          "partials",
                          s.splits, s.chunk, held)
                .str()
      : s.splits > 1 && s.waits
          ? llvm::formatv("split over {0} blocks per row ({1} vectors each, {2}), meeting after "
                          "each pass to combine the partials",
                          s.splits, s.chunk, held)
                .str()
      : s.splits > 1 ? llvm::formatv("split over {0} blocks per row ({1} vectors each), the last to "
                                     "finish combines them",
                                     s.splits, s.chunk)
                           .str()
      : s.cached   ? llvm::formatv("{0} per thread held in registers", s.itemsPerThread).str()
                   : std::string("looped over the row (read again in each pass)");
  return llvm::formatv("inner row: {0} per row, {1} row{2} per block ({3} threads), {4}-wide "
                       "vectors{5}, {6}{7}, {8}",
                       who, s.rowsPerBlock, s.rowsPerBlock == 1 ? "" : "s", s.block, s.vec,
                       s.alignedTo ? " aligned to memory (rows start mid-vector, the lanes "
                                     "outside a row masked)"
                                   : "",
                       how, ahead, gridWords(s.grid, grid))
      .str();
}

/// Inner rows: threads per row (from a quarter of the rules' choice, or a
/// warp, to eight times it), and for the rules' own a warp or less per row,
/// rows per block; then, for each, the online sum turned the other way, loads ahead (which
/// only a row read in a loop has: elsewhere the kernel is the same and
/// dropped), a loop over the row instead of registers; a narrower vector;
/// for many rows of a block each, clusters of blocks a row (of the rules'
/// threads and of 1024).
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
  if (reduceOnline(body)) {
    bool defaultOnline = hasOnlineReduction(def.lowered);
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
  if (s.rowsPerBlock == 1 && (s.cluster > 1 || manyRows)) {
    for (int64_t c : {1, 2, 4, 8})
      if (c != int64_t(s.cluster))
        out.push_back({.rowcluster = c});
    // and of 1024 threads a block, whose chunks of a row four times a
    // block of 512's length stay in registers (8 vectors a thread), rows
    // that a block reads again from DRAM held in the cluster's registers
    // instead (an instance norm over rows of 262144: 8 blocks)
    if (maxThreads >= 1024 && s.threadsPerRow < 1024)
      for (int64_t c : {2, 4, 8})
        out.push_back({.tpr = 1024, .rowcluster = c});
  }
  return out;
}

class InnerRowTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::InnerRow; }
  llvm::StringRef name() const override { return "inner_row"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"block", "vec", "tpr", "cached", "splits", "online", "ahead", "rowcluster"};
    return keys;
  }

  std::string describe(const Schedule &s, GridText grid) const override {
    return describeRow(s.as<RowSchedule>(), grid);
  }

  std::vector<Overrides> candidates(const LoweredKernel &body, const ScheduledKernel &def,
                                    const DeviceProperties &dev) const override {
    return rowCandidates(body, def, dev);
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitRowReduction(e, s.as<RowSchedule>());
  }

  /// Reductions: inner rows or outer columns.
  std::vector<KernelKind> rulesFor() const override { return {KernelKind::Reduction}; }
  /// The blocks of the kernel's own row count.
  bool sizeGridForExtent(Schedule &s, const LoweredKernel &k,
                         const DeviceProperties &) const override {
    auto &r = std::get<RowSchedule>(s.params);
    r.grid = r.splits > 1 ? k.rows * r.splits : ceilDiv(k.rows, r.rowsPerBlock);
    return true;
  }
  Expected<Schedule> choose(const LoweredKernel &k, const DeviceProperties &dev,
                            const ScheduleOverrides &o, const Target &target) const override {
    return reductionSchedule(k, dev, o, target.hasClusters());
  }

  /// A row's blocks meeting after each pass at a barrier in global memory;
  /// in a cluster they wait for each other only.
  bool coResident(const Schedule &s) const override {
    const RowSchedule &row = s.as<RowSchedule>();
    return row.splits > 1 && row.waits && row.cluster == 1;
  }
};

class OuterColumnTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::OuterCol; }
  llvm::StringRef name() const override { return "outer_col"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"parts", "splits"};
    return keys;
  }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<ColumnSchedule>();
    std::string split =
        s.splits > 1 ? llvm::formatv(", split over {0} blocks per 32 columns ({1} positions each), "
                                     "{2}",
                                     s.splits, s.chunk,
                                     s.waits ? "all resident, meeting after each pass"
                                             : "the last to finish combines them")
                           .str()
                     : std::string();
    return llvm::formatv("outer column: 32 columns x {0} parts per block ({1} threads){2}, {3}",
                         s.parts, s.block, split, gridWords(s.grid, grid))
        .str();
  }

  /// Threads per column, and with one pass the blocks sharing a group of
  /// columns.
  std::vector<Overrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                    const DeviceProperties &) const override {
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

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitColumnReduction(e, s.as<ColumnSchedule>());
  }

  /// Columns split over blocks that meet after each pass.
  bool coResident(const Schedule &s) const override {
    const ColumnSchedule &col = s.as<ColumnSchedule>();
    return col.splits > 1 && col.waits;
  }
};

} // namespace

const KernelTemplate &innerRowTemplate() {
  static const InnerRowTemplate t;
  return t;
}

const KernelTemplate &outerColumnTemplate() {
  static const OuterColumnTemplate t;
  return t;
}

} // namespace minijit::detail
