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
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override { return {}; }
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

  std::vector<ScheduleOverrides> candidates(const LoweredKernel &, const ScheduledKernel &,
                                            const DeviceProperties &) const override {
    return {};
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
