//===- compiler/templates/pointwise/PointwiseTemplates.cpp - pointwise and transpose ---===//
// The elementwise templates: vectors of elements a thread (Pointwise.cpp),
// and tiles through shared memory where operands are read across the
// innermost axis (Transpose.cpp). Their rules (PointwiseSchedule.cpp,
// TransposeSchedule.cpp) are reached through the pointwise template.
//===----------------------------------------------------------------------===//
#include "compiler/templates/TemplatesInternal.h"
#include "compiler/templates/pointwise/PointwiseInternal.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit::detail {

namespace {

using Overrides = ScheduleOverrides;

class PointwiseTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::Pointwise; }
  llvm::StringRef name() const override { return "pointwise"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"block", "vec", "items", "transpose"};
    return keys;
  }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<PointwiseSchedule>();
    std::string tail = grid == GridText::AtLaunch ? ", scalar tail where the vectors leave elements"
                       : s.tail                    ? ", scalar tail"
                                                   : "";
    return llvm::formatv("pointwise: {0} threads per block, {1}-wide vectors, {2} per thread, "
                         "{3}{4}",
                         s.block, s.vec, s.items, gridWords(s.grid, grid), tail)
        .str();
  }

  /// Threads per block around the rules' choice with 1 to 8 vectors a
  /// thread, and a narrower vector.
  std::vector<Overrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                    const DeviceProperties &) const override {
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

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitPointwise(e, s.as<PointwiseSchedule>());
  }

  /// Pointwise kernels: the transpose template or this one.
  std::vector<KernelKind> rulesFor() const override { return {KernelKind::Pointwise}; }
  /// The vectors and blocks of the kernel's own element count.
  bool sizeGridForExtent(Schedule &s, const LoweredKernel &k,
                         const DeviceProperties &) const override {
    auto &p = std::get<PointwiseSchedule>(s.params);
    p.numVec = k.numel / p.vec;
    p.tail = k.numel % p.vec != 0;
    p.grid = std::max<int64_t>(1, ceilDiv(p.numVec, int64_t(p.block) * p.items));
    return true;
  }
  Expected<Schedule> choose(const LoweredKernel &k, const DeviceProperties &dev,
                            const ScheduleOverrides &o, const Target &) const override {
    return pointwiseSchedule(k, dev, o);
  }
};

class TransposeTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::Transpose; }
  llvm::StringRef name() const override { return "transpose"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"block", "tile", "transpose", "items"};
    return keys;
  }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<TransposeSchedule>();
    return llvm::formatv("transpose: {0}x{0} tiles over axis {1} ({2}) and the innermost axis "
                         "({3}), {4} operand{5} staged through shared memory, {6} threads per "
                         "block, {7}",
                         s.tile, s.axis, s.a, s.c, s.tiled.size(), s.tiled.size() == 1 ? "" : "s",
                         s.block, gridWords(s.grid, grid))
        .str();
  }

  /// Tiles of 16, 32 or 64 with the blocks that divide them, and the
  /// pointwise template reading the permuted operands element by element.
  std::vector<Overrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                    const DeviceProperties &) const override {
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

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitTranspose(e, s.as<TransposeSchedule>());
  }
};

} // namespace

const KernelTemplate &pointwiseTemplate() {
  static const PointwiseTemplate t;
  return t;
}

const KernelTemplate &transposeTemplate() {
  static const TransposeTemplate t;
  return t;
}

} // namespace minijit::detail
