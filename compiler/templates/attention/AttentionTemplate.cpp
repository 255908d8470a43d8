//===- compiler/templates/attention/AttentionTemplate.cpp - the attention template ---===//
// softmax(g(A @ B)) @ V as one kernel, the scores never in memory: on the
// CUDA cores (Attention.cpp) and for f16/bf16 on the tensor cores
// (AttentionMma.cpp; AttentionWgmma.cpp on Hopper, where asked for); their rules
// (AttentionSchedule.cpp) are reached through the CUDA cores' template, and the graphs they take
// are found by compiler/fusion/Attention.cpp.
//===----------------------------------------------------------------------===//
#include "compiler/templates/TemplatesInternal.h"
#include "compiler/templates/attention/AttentionInternal.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit::detail {

namespace {

class AttentionTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::Attention; }
  llvm::StringRef name() const override { return "attention"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"bm", "rpt", "tpr"};
    return keys;
  }
  bool tilesComeInWaves() const override { return true; }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<AttentionSchedule>();
    return llvm::formatv("attention on CUDA cores: {0} query rows x {1} keys a tile, {2} threads a "
                         "row and {7} {8} a thread ({3} threads), online softmax, {4} ({5} query "
                         "tiles a batch), {6} bytes of shared memory",
                         s.br, s.bc, s.threadsPerRow, s.block, gridWords(s.grid, grid), s.tilesM,
                         s.sharedBytes, s.rowsPerThread, s.rowsPerThread == 1 ? "row" : "rows")
        .str();
  }

  /// The other tile heights and rows a thread: more rows share each K and
  /// V tile and each read of it, fewer fill more SMs.
  std::vector<ScheduleOverrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                            const DeviceProperties &) const override {
    const auto &s = def.schedule.as<AttentionSchedule>();
    std::vector<ScheduleOverrides> out;
    for (int64_t bm : {16, 32, 64, 128})
      for (int64_t rpt : {1, 2, 4})
        if ((bm != s.br || rpt != s.rowsPerThread) && rpt * 8 <= bm)
          out.push_back({.bm = bm, .rpt = rpt});
    return out;
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitAttention(e, s.as<AttentionSchedule>());
  }

  /// Attention kernels: on the tensor cores or the CUDA cores.
  std::vector<KernelKind> rulesFor() const override { return {KernelKind::Attention}; }
  Expected<Schedule> choose(const LoweredKernel &k, const DeviceProperties &dev,
                            const ScheduleOverrides &o, const Target &target) const override {
    return attentionSchedule(k, dev, o, target);
  }
};

/// f16/bf16 on the tensor cores (AttentionMma.cpp).
class AttentionMmaTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::AttentionMma; }
  llvm::StringRef name() const override { return "attention_mma"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"bm", "wm", "bn"};
    return keys;
  }
  bool usesTensorCores() const override { return true; }
  bool tilesComeInWaves() const override { return true; }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<AttentionMmaSchedule>();
    return llvm::formatv("attention on tensor cores (mma.sync m16n8k16): {0} query rows x {1} keys "
                         "a tile, a warp per {6} rows ({2} threads), online softmax, {3} ({4} query "
                         "tiles a batch), {5} bytes of shared memory",
                         s.br, s.bc, s.block, gridWords(s.grid, grid), s.tilesM, s.sharedBytes,
                         16 * s.rowTiles)
        .str();
  }

  /// The tensor cores' other tiles (128 or 64 rows a block, 16 or 32 a
  /// warp, 64 or 32 keys), and the CUDA cores' kernel with 16 or 32 rows.
  std::vector<ScheduleOverrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                            const DeviceProperties &) const override {
    const auto &d = def.schedule.as<AttentionMmaSchedule>();
    std::vector<ScheduleOverrides> out;
    for (int64_t bm : {128, 64})
      for (int64_t wm : {32, 16})
        for (int64_t bn : {64, 32})
          if (bm != d.br || wm != 16 * d.rowTiles || bn != d.bc)
            out.push_back({.bm = bm, .bn = bn, .wm = wm});
    out.push_back({.bm = 32});
    out.push_back({.bm = 16});
    return out;
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitAttentionMma(e, s.as<AttentionMmaSchedule>());
  }
};

/// f16/bf16 on Hopper's wgmma (AttentionWgmma.cpp): the rule wherever it
/// takes the attention (head dims 64 and 128, no row statistics stored).
class AttentionWgmmaTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::AttentionWgmma; }
  llvm::StringRef name() const override { return "attention_wgmma"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"wgmma", "bn", "stages", "overlap", "pingpong"};
    return keys;
  }
  bool usesTensorCores() const override { return true; }
  bool tilesComeInWaves() const override { return true; }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<AttentionWgmmaSchedule>();
    return llvm::formatv("attention on tensor cores (wgmma, sm_90a): {0} query rows x {1} keys a "
                         "tile, a producer warpgroup copying K and V into rings of {2} tiles, two "
                         "consumer warpgroups of 64 rows ({3} threads), online softmax, P from "
                         "registers{7}, {4} ({5} query tiles a batch), {6} bytes of shared memory",
                         s.br, s.bc, s.stages, s.block, gridWords(s.grid, grid), s.tilesM,
                         s.sharedBytes,
                         std::string(s.overlap ? ", each tile's softmax beside the tile before's "
                                                 "P V"
                                               : "") +
                             (s.pingpong ? ", the consumers taking turns to issue" : ""))
        .str();
  }

  /// The other tiles of keys and rings (those the shared memory holds), and
  /// mma.sync's kernel.
  std::vector<ScheduleOverrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                            const DeviceProperties &) const override {
    const auto &d = def.schedule.as<AttentionWgmmaSchedule>();
    std::vector<ScheduleOverrides> out;
    for (int64_t form : {1, 2, 0}) // overlap; overlap and ping-pong; neither
      for (int64_t bn : {128, 64})
        for (int64_t stages : {2, 3, 4}) {
          bool overlap = form >= 1, pingpong = form == 2;
          if (bn != d.bc || stages != d.stages || overlap != d.overlap || pingpong != d.pingpong)
            out.push_back({.bn = bn,
                           .stages = stages,
                           .wgmma = 1,
                           .pingpong = pingpong ? 1 : 0,
                           .overlap = overlap ? 1 : 0});
        }
    out.push_back({.wgmma = 0});
    return out;
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitAttentionWgmma(e, s.as<AttentionWgmmaSchedule>());
  }

  /// wgmma and setmaxnreg need the architecture-specific target.
  Target compileTarget(const Target &target) const override { return target.specific(); }
  /// 168 a thread at launch, which setmaxnreg splits as 56 for the
  /// producer's 128 threads and 224 for the consumers' 256.
  unsigned requiredRegisters() const override { return 168; }
};

/// An attention's backward, FlashAttention-2's on the CUDA cores
/// (AttentionBackward.cpp).
class AttentionBackwardTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::AttentionBackward; }
  llvm::StringRef name() const override { return "attention_backward"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"bm"};
    return keys;
  }
  bool tilesComeInWaves() const override { return true; }

  std::vector<KernelKind> rulesFor() const override {
    return {KernelKind::AttentionBackwardKV, KernelKind::AttentionBackwardQ};
  }
  Expected<Schedule> choose(const LoweredKernel &k, const DeviceProperties &dev,
                            const ScheduleOverrides &o, const Target &) const override {
    return detail::attentionBackwardSchedule(k, dev, o);
  }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<AttentionBackwardSchedule>();
    return llvm::formatv("attention backward on CUDA cores: tiles of {0} rows, {1} threads a row "
                         "({2} threads), the probabilities computed again from the rows' max and "
                         "sum, {3} ({4} tiles a batch), {5} bytes of shared memory",
                         s.bc, s.threadsPerRow, s.block, gridWords(s.grid, grid), s.tilesM,
                         s.sharedBytes)
        .str();
  }

  /// Tiles of 16 rows: twice the blocks, for few rows.
  std::vector<ScheduleOverrides> candidates(const LoweredKernel &, const ScheduledKernel &def,
                                            const DeviceProperties &) const override {
    if (def.schedule.as<AttentionBackwardSchedule>().bc == 16)
      return {};
    return {{.bm = 16}};
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitAttentionBackward(e, s.as<AttentionBackwardSchedule>());
  }
};

} // namespace

const KernelTemplate &attentionBackwardTemplate() {
  static const AttentionBackwardTemplate t;
  return t;
}

const KernelTemplate &attentionTemplate() {
  static const AttentionTemplate t;
  return t;
}

const KernelTemplate &attentionWgmmaTemplate() {
  static const AttentionWgmmaTemplate t;
  return t;
}

const KernelTemplate &attentionMmaTemplate() {
  static const AttentionMmaTemplate t;
  return t;
}

} // namespace minijit::detail
