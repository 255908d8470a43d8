//===- compiler/templates/scan/ScanTemplate.cpp - cumulative sums and products ---===//
// The scan template: a block per row or a tile a block (chained), warp then
// block scans of tiles (Scan.cpp; its rules in ScanSchedule.cpp).
//===----------------------------------------------------------------------===//
#include "compiler/templates/TemplatesInternal.h"
#include "compiler/templates/scan/ScanInternal.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit::detail {

namespace {

class ScanTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::Scan; }
  llvm::StringRef name() const override { return "scan"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"block", "items", "chain"};
    return keys;
  }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<ScanSchedule>();
    if (s.chained())
      return llvm::formatv("scan: each row's {0} tiles chained over blocks (a tile a block, the "
                           "tiles before added by a decoupled look-back), {1} threads, {2} "
                           "consecutive elements per thread, warp then block scan, {3}",
                           s.splits, s.block, s.items, gridWords(s.grid, grid))
          .str();
    return llvm::formatv("scan: a block of {0} threads per row, {1} consecutive elements per "
                         "thread per tile, warp then block scan, {2}",
                         s.block, s.items, gridWords(s.grid, grid))
        .str();
  }

  /// Elements a thread and threads per block around the rules' choice.
  std::vector<ScheduleOverrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                            const DeviceProperties &) const override {
    const ScanSchedule &s = def.schedule.as<ScanSchedule>();
    std::vector<ScheduleOverrides> out;
    for (int64_t items : pow2Around(s.items, 1, 16))
      for (int64_t b : pow2Around(s.block, 64, 1024))
        out.push_back({.block = b, .items = items});
    // The other way of walking the rows, where the rule chose chained tiles.
    if (s.chained())
      out.push_back({.chain = 0});
    return out;
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitScan(e, s.as<ScanSchedule>());
  }

  /// cumsum/cumprod kernels.
  std::vector<KernelKind> rulesFor() const override { return {KernelKind::Scan}; }
  Expected<Schedule> choose(const LoweredKernel &k, const DeviceProperties &dev,
                            const ScheduleOverrides &o, const Target &) const override {
    return scanSchedule(k, dev, o);
  }
};

} // namespace

const KernelTemplate &scanTemplate() {
  static const ScanTemplate t;
  return t;
}

} // namespace minijit::detail
