//===- compiler/templates/matmul/MatmulTemplates.cpp - the three matmuls ---===//
// The matmul templates: f32 on the CUDA cores (MatmulSimt.cpp), f16/bf16
// on the tensor cores through mma.sync (MatmulMma.cpp), and Hopper's wgmma
// with TMA and a persistent grid (MatmulWgmma.cpp). Their rules
// (MatmulSchedule.cpp) are reached through the CUDA cores' template.
//===----------------------------------------------------------------------===//
#include "compiler/templates/TemplatesInternal.h"
#include "compiler/templates/matmul/MatmulInternal.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit::detail {

namespace {

using Overrides = ScheduleOverrides;

/// A block per tile: the tiles along m of the kernel's own m.
bool sizeTiles(MatmulTile &t, const KMatmul &mm) {
  t.tilesM = ceilDiv(mm.M, t.bm);
  t.grid = t.tilesM * t.tilesN * mm.batch;
  return true;
}

class MatmulSimtTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::MatmulSimt; }
  llvm::StringRef name() const override { return "matmul_simt"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"tile", "frag", "tn", "cpasync", "krows", "split3"};
    return keys;
  }
  bool tilesComeInWaves() const override { return true; }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<MatmulSimtSchedule>();
    std::string pipeline =
        s.stages > 2 ? llvm::formatv("{0} stages through cp.async", s.stages).str()
                     : std::string("double-buffered through registers");
    return llvm::formatv("matmul on CUDA cores: {0}x{1} tile, k step {2}, {3}x{4} outputs per "
                         "thread ({5} threads), {11}{10}, A {6}, "
                         "B {7}, {8}{9}",
                         s.bm, s.bn, s.bk, s.tm, s.tn, s.block,
                         s.kRowsA  ? "by float4, kept [m][k]"
                         : s.vecA  ? "by float4"
                         : s.vecAT ? "by float4 along m (stored transposed)"
                                   : "by elements",
                         s.vecB     ? "by float4"
                         : s.kRowsB ? "by float4 along k (stored transposed), kept [n][k]"
                         : s.vecBT  ? "by float4 along k (stored transposed)"
                                    : "by elements",
                         gridWords(s.grid, grid), tileWords(s.tilesM, s.tilesN, grid),
                         s.fragBuffers == 2 ? ", fragments too (frag=2)" : "", pipeline)
        .str();
  }

  std::vector<Overrides> candidates(const LoweredKernel &, const ScheduledKernel &,
                                    const DeviceProperties &) const override {
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
    // on Hopper, three TF32 products split in the kernel (refused elsewhere)
    out.push_back({.split3 = 1});
    return out;
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitMatmulSimt(e, s.as<MatmulSimtSchedule>());
  }

  /// Matmuls: on the CUDA cores, through mma.sync or through wgmma.
  std::vector<KernelKind> rulesFor() const override { return {KernelKind::Matmul}; }
  bool sizeGridForExtent(Schedule &s, const LoweredKernel &k,
                         const DeviceProperties &) const override {
    return sizeTiles(std::get<MatmulSimtSchedule>(s.params), *k.matmul);
  }
  Expected<Schedule> choose(const LoweredKernel &k, const DeviceProperties &dev,
                            const ScheduleOverrides &o, const Target &target) const override {
    return matmulSchedule(k, dev, o, target.hasWgmma());
  }
};

class MatmulMmaTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::MatmulMma; }
  llvm::StringRef name() const override { return "matmul_mma"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"tile", "bm", "bn", "bk", "stages", "frag", "wm", "wn", "wgmma"};
    return keys;
  }
  bool tilesComeInWaves() const override { return true; }
  bool usesTensorCores() const override { return true; }

  std::string describe(const Schedule &sched, GridText grid) const override {
    const auto &s = sched.as<MatmulMmaSchedule>();
    return llvm::formatv("matmul on tensor cores (mma.sync m16n8k16): {0}x{1} tile, k step {2}, "
                         "{3}x{4} warps, {5} stages in {6} bytes of shared memory, A {7}, B {8}, "
                         "{9}{10}",
                         s.bm, s.bn, s.bk, s.warpsM, s.warpsN, s.stages, s.sharedBytes,
                         s.vecA    ? "by 16-byte cp.async"
                         : s.vecAT ? "by 16-byte cp.async along m (stored transposed)"
                                   : "by elements",
                         s.vecB    ? "by 16-byte cp.async"
                         : s.vecBT ? "by 16-byte cp.async along k (stored transposed)"
                                   : "by elements",
                         gridWords(s.grid, grid), tileWords(s.tilesM, s.tilesN, grid))
        .str();
  }

  std::vector<Overrides> candidates(const LoweredKernel &, const ScheduledKernel &,
                                    const DeviceProperties &) const override {
    std::vector<Overrides> out;
    for (int64_t tile : {128, 64})
      for (int64_t stages : {2, 3, 4, 5})
        for (int64_t frag : {1, 2})
          out.push_back({.tile = tile, .stages = stages, .frag = frag});
    return out;
  }

  bool sizeGridForExtent(Schedule &s, const LoweredKernel &k,
                         const DeviceProperties &) const override {
    return sizeTiles(std::get<MatmulMmaSchedule>(s.params), *k.matmul);
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    emitMatmulMma(e, s.as<MatmulMmaSchedule>());
  }
};

/// The product split in the kernel (MatmulWgmmaSchedule::splitInKernel).
std::string describeSplit(const MatmulWgmmaSchedule &s, GridText grid) {
  return llvm::formatv("exact f32 as three TF32 products split in the kernel (wgmma m64n{0}k8 "
                       "with B's rows from registers, sm_90a): {0}x{1} tile, k step 32, TMA "
                       "loads into {2} stages of {3} bytes, the producer warpgroup splitting A's "
                       "tile into two stages of parts, 2 consumer warpgroups splitting their 64 "
                       "rows of B each, each k-slice's product added to the sum by the CUDA "
                       "cores, a block a tile: {4} over {5} tiles",
                       s.bm, s.bn, s.stages, s.stageBytes(), gridWords(s.grid, grid),
                       grid == GridText::AtLaunch ? std::string("the")
                                                  : std::to_string(s.tiles))
      .str();
}

std::string describeWgmma(const MatmulWgmmaSchedule &s, GridText grid) {
  if (s.splitInKernel)
    return describeSplit(s, grid);
  auto layout = [](const WgmmaOperand &w, const char *mn) {
    return llvm::formatv("{0}-major{1}", w.kMajor ? "k" : mn,
                         w.kMajor ? "" : " (transposed in the wgmma)")
        .str();
  };
  return llvm::formatv("matmul on tensor cores (wgmma m64n{1}k{13}, sm_90a): {0}x{1} tile, k "
                       "step {2}, TMA loads with 128-byte swizzle into {3} stages of {4} bytes "
                       "(mbarriers), 1 producer + 2 consumer warpgroups ({12}), A {5}, B {6}, "
                       "{14}persistent {7} over {8} tiles ({9}x{10}{11})",
                       s.bm, s.bn, s.bk, s.stages, s.stageBytes(), layout(s.a, "m"),
                       layout(s.b, "n"), gridWords(s.grid, grid),
                       grid == GridText::AtLaunch ? std::string("the") : std::to_string(s.tiles),
                       grid == GridText::AtLaunch ? std::string("m in tiles")
                                                  : std::to_string(s.tilesM),
                       s.tilesN,
                       s.tiles == s.tilesM * s.tilesN
                           ? std::string()
                           : llvm::formatv(" x {0} batches", s.tiles / (s.tilesM * s.tilesN))
                                 .str(),
                       s.pingpong       ? "ping-pong: every other tile each"
                       : s.cluster == 2 ? "cooperative: 64 rows each; clusters of 2 blocks "
                                          "on tiles m, m + 1, B's tile multicast by TMA"
                                        : "cooperative: 64 rows each",
                       s.elementBytes == 4 ? llvm::formatv("{0} TF32", s.kStep()).str()
                                           : std::to_string(s.kStep()),
                       std::string(s.promote ? "each k-slice's product added to the sum by "
                                               "the CUDA cores (rounded to nearest), "
                                             : "") +
                           (s.stagedEpilogue ? "epilogue staged through shared memory, " : ""))
      .str();
}

class MatmulWgmmaTemplate final : public KernelTemplate {
public:
  ScheduleKind kind() const override { return ScheduleKind::MatmulWgmma; }
  llvm::StringRef name() const override { return "matmul_wgmma"; }
  llvm::ArrayRef<llvm::StringRef> overrideKeys() const override {
    static const llvm::StringRef keys[] = {"bn",    "stages",  "pingpong", "cluster", "staged",
                                           "wgmma", "promote", "split3"};
    return keys;
  }
  bool tilesComeInWaves() const override { return true; }
  bool usesTensorCores() const override { return true; }

  std::string describe(const Schedule &s, GridText grid) const override {
    return describeWgmma(s.as<MatmulWgmmaSchedule>(), grid);
  }

  std::vector<Overrides> candidates(const LoweredKernel &k, const ScheduledKernel &,
                                    const DeviceProperties &) const override {
    std::vector<Overrides> out;
    // A product split in the kernel: its ring's depth, or the CUDA cores
    if (k.matmul && k.matmul->dtype == DType::F32 && !k.matmul->tf32) {
      for (int64_t stages : {4, 3, 2})
        out.push_back({.stages = stages, .split3 = 1});
      out.push_back({.split3 = 0});
      return out;
    }
    // Three TF32 products keep their promoted sums, which 256-wide tiles
    // and ping-pong do not hold: faster, with up to 200 times SGEMM's error.
    bool promoted = k.matmul && k.matmul->threeParts;
    std::vector<int64_t> wide = promoted ? std::vector<int64_t>{128}
                                         : std::vector<int64_t>{256, 128};
    std::vector<int64_t> widths = wide;
    widths.push_back(64);
    // cooperative in single blocks and in clusters of two sharing B's
    // tile (either may be the rule's choice), then ping-pong
    for (int64_t bn : widths)
      for (int64_t stages : {4, 3, 5, 6, 2})
        for (int64_t cluster : {1, 2})
          out.push_back({.bn = bn, .stages = stages, .pingpong = 0, .cluster = cluster});
    if (!promoted)
      for (int64_t bn : {128, 64})
        for (int64_t stages : {4, 3, 5, 6, 2})
          out.push_back({.bn = bn, .stages = stages, .pingpong = 1});
    // the epilogue staged through shared memory or not (the rule stages
    // every 16-bit product and TF32 ones of a short k), with as many stages
    // as fit
    for (int64_t bn : wide)
      for (int64_t staged : {1, 0})
        for (int64_t cluster : {1, 2})
          out.push_back({.bn = bn, .pingpong = 0, .cluster = cluster, .staged = staged});
    out.push_back({.wgmma = 0});
    return out;
  }

  void emit(KernelEmitter &e, const Schedule &s) const override {
    const auto &w = s.as<MatmulWgmmaSchedule>();
    if (w.splitInKernel)
      emitMatmulWgmmaSplit(e, w);
    else
      emitMatmulWgmma(e, w);
  }

  /// wgmma and setmaxnreg need the architecture-specific target.
  Target compileTarget(const Target &target) const override { return target.specific(); }
  /// The tiles of the kernel's own m, walked by a persistent grid.
  bool sizeGridForExtent(Schedule &s, const LoweredKernel &k,
                         const DeviceProperties &dev) const override {
    auto &w = std::get<MatmulWgmmaSchedule>(s.params);
    w.tilesM = ceilDiv(k.matmul->M, w.bm);
    w.tiles = w.tilesM * w.tilesN * k.matmul->batch;
    w.grid = w.launchGrid(dev.smCount);
    return true;
  }

  /// grid = min(tiles, SMs) blocks walk the tiles.
  bool persistent() const override { return true; }
  /// The operands are read through TMA descriptors.
  std::vector<TensorMapSpec> tensorMaps(const LoweredKernel &k, const Schedule &s) const override {
    return wgmmaTensorMaps(k, s.as<MatmulWgmmaSchedule>());
  }
  bool readsF32AsTf32(const LoweredKernel &k) const override {
    return k.matmul->dtype == DType::F32;
  }
  /// 168 a thread at launch, which setmaxnreg splits as 40 for the
  /// producer's 128 threads and 232 for the consumers' 256 (with fewer, the
  /// consumers' setmaxnreg.inc would wait for registers the block does not
  /// have).
  unsigned requiredRegisters() const override { return 168; }
};

} // namespace

const KernelTemplate &matmulSimtTemplate() {
  static const MatmulSimtTemplate t;
  return t;
}

const KernelTemplate &matmulMmaTemplate() {
  static const MatmulMmaTemplate t;
  return t;
}

const KernelTemplate &matmulWgmmaTemplate() {
  static const MatmulWgmmaTemplate t;
  return t;
}

} // namespace minijit::detail
