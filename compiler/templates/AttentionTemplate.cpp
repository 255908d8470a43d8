//===- compiler/templates/AttentionTemplate.cpp - the attention template ---===//
// softmax(g(A @ B)) @ V as one kernel (emit/Attention.cpp), the scores
// never in memory; its rules are in schedule/AttentionSchedule.cpp and the
// graphs it takes are found by compiler/fusion/Attention.cpp.
//===----------------------------------------------------------------------===//
#include "compiler/emit/KernelEmitter.h"
#include "compiler/templates/TemplatesInternal.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit::detail {

namespace {

class AttentionTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::Attention; }
  llvm::StringRef name() const override { return "attention"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"bm"};
    return keys;
  }
  bool tilesComeInWaves() const override { return true; }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<AttentionSchedule>();
    return llvm::formatv("attention on CUDA cores: {0} query rows x {1} keys a tile, {2} threads a "
                         "row ({3} threads), online softmax, {4} ({5} query tiles a batch), {6} "
                         "bytes of shared memory",
                         s.br, s.bc, s.threadsPerRow, s.block, gridWords(s.grid, grid), s.tilesM,
                         s.sharedBytes)
        .str();
  }

  /// The other tile heights: more rows share each K and V tile, fewer fill
  /// more SMs.
  std::vector<ScheduleOverrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                            const DeviceProperties &) const override {
    std::vector<ScheduleOverrides> out;
    for (int64_t bm : {16, 32, 64})
      if (bm != def.schedule.as<AttentionSchedule>().br)
        out.push_back({.bm = bm});
    return out;
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitAttention(e, s.as<AttentionSchedule>());
  }
};

} // namespace

const KernelTemplate &attentionTemplate() {
  static const AttentionTemplate t;
  return t;
}

} // namespace minijit::detail
