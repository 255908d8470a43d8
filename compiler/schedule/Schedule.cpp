//===- compiler/schedule/Schedule.cpp - kernel templates and their parameters ---===//
// What every template's schedule shares: how accesses split across a
// vector's lanes, the checks of the override keys several templates read,
// the launch's occupancy and the split reductions' workspace. The rules of
// each template live in its family's folder (compiler/templates/*/).
//===----------------------------------------------------------------------===//
#include "compiler/schedule/Schedule.h"

#include "compiler/schedule/ScheduleInternal.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace minijit {

namespace detail {

Refusal refuse(const std::string &why) { return Refusal{"schedule override: " + why}; }

unsigned maxVecFor(const LoweredKernel &k) {
  if (k.elementIndexed)
    return 1; // loads at indices read per element: one element per thread
  unsigned widest = 1;
  for (const KParam &p : k.params)
    widest = std::max(widest, dtypeSize(p.dtype));
  return std::min(8u, 16u / widest);
}

bool isPow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::optional<int64_t> valueAt(IndexContext &ctx, const IndexExpr &e,
                               const std::vector<std::pair<std::string, int64_t>> &vars) {
  IndexExpr v = ctx.substitute(e, [&](const std::string &n) -> std::optional<IndexExpr> {
    for (const auto &[name, value] : vars)
      if (n == name)
        return IndexExpr::constant(value);
    return IndexExpr::constant(0);
  });
  if (!v.isConstant())
    return std::nullopt;
  return v.constantTerm();
}

Expected<std::optional<unsigned>> vecOverride(const LoweredKernel &k, const ScheduleOverrides &o) {
  if (!o.vec)
    return std::optional<unsigned>();
  int64_t v = *o.vec;
  if (!isPow2(v) || v > 16)
    return refuse("vec must be a power of two up to 16");
  if (k.elementIndexed && v > 1)
    return refuse("vec=" + std::to_string(v) + ": this kernel loads at indices it reads per "
                  "element (a gather), one element per thread; only vec=1");
  unsigned widest = 1;
  for (const KParam &p : k.params)
    widest = std::max(widest, dtypeSize(p.dtype));
  if (v * widest > 16)
    return refuse("vec=" + std::to_string(v) + " makes " + std::to_string(v * widest) +
                  "-byte accesses of this kernel's " + std::to_string(widest) +
                  "-byte elements; at most 16 bytes");
  return std::optional<unsigned>(static_cast<unsigned>(v));
}

} // namespace detail

namespace {

/// The lanes of a vector that read an operand of a concat or a pad through
/// a clamp (lowering keeps its index in bounds where the predicate does not
/// hold; where it does not, the value read is not used). When the lanes'
/// offsets differ only in one clamp term, coefficient 1, whose argument
/// steps by one a lane from a multiple of `vec` and whose range ends at one
/// (hi + 1 a multiple of `vec`), the lanes are inside the operand all
/// together or none: the vector at rest + clamp(a0, hi + 1 - vec) is their
/// elements where they are used, and in bounds where they are not. Returns
/// that offset of lane 0, if aligned to `vec`.
std::optional<IndexExpr> clampedVectorBase(IndexContext &ctx, llvm::ArrayRef<IndexExpr> perLane,
                                           unsigned vec) {
  using Term = IndexContext::ClampTerm;
  auto keyOf = [](const Term &t) {
    return std::to_string(t.coef) + "*" + std::to_string(t.hi) + ":" + t.arg.key();
  };
  auto withoutClamps = [&](IndexExpr e, const std::vector<Term> &ts) {
    for (const Term &t : ts)
      e = ctx.add(e, ctx.mul(ctx.clamp(t.arg, t.hi), -t.coef));
    return e;
  };
  std::vector<Term> first = ctx.clampTerms(perLane[0]);
  IndexExpr rest = withoutClamps(perLane[0], first);
  std::optional<Term> stepping;
  for (unsigned j = 1; j < vec; ++j) {
    std::vector<Term> here = ctx.clampTerms(perLane[j]);
    if (here.size() != first.size() ||
        withoutClamps(perLane[j], here).key() != rest.key())
      return std::nullopt;
    // the one term of lane 0 that lane j does not have, and lane j's in its place
    std::vector<Term> gone, came;
    for (const Term &t : first)
      if (llvm::none_of(here, [&](const Term &h) { return keyOf(h) == keyOf(t); }))
        gone.push_back(t);
    for (const Term &h : here)
      if (llvm::none_of(first, [&](const Term &t) { return keyOf(h) == keyOf(t); }))
        came.push_back(h);
    if (gone.size() != 1 || came.size() != 1 || gone[0].coef != 1 || came[0].coef != 1 ||
        gone[0].hi != came[0].hi ||
        came[0].arg.key() != ctx.add(gone[0].arg, IndexExpr::constant(j)).key() ||
        (stepping && keyOf(*stepping) != keyOf(gone[0])))
      return std::nullopt;
    stepping = gone[0];
  }
  if (!stepping || (stepping->hi + 1) % vec != 0 || stepping->hi + 1 < int64_t(vec))
    return std::nullopt;
  int64_t argDiv = ctx.divisibility(stepping->arg);
  IndexExpr others = ctx.add(perLane[0], ctx.mul(ctx.clamp(stepping->arg, stepping->hi), -1));
  int64_t othersDiv = ctx.divisibility(others);
  if ((argDiv != 0 && argDiv % vec != 0) || (othersDiv != 0 && othersDiv % vec != 0))
    return std::nullopt;
  return ctx.add(others, ctx.clamp(stepping->arg, stepping->hi + 1 - vec));
}

} // namespace

LaneAccess analyzeLanes(IndexContext &ctx, const IndexExpr &offset, const IndexExpr &x,
                        int64_t extent, unsigned vec, const std::string &vecName) {
  LaneAccess a;
  std::string xName = ctx.str(x);
  IndexExpr xv = ctx.var(vecName, std::max<int64_t>(1, extent / vec));
  for (unsigned j = 0; j < vec; ++j) {
    IndexExpr lane = ctx.add(ctx.mul(xv, vec), IndexExpr::constant(j));
    a.perLane.push_back(ctx.substitute(offset, [&](const std::string &n) -> std::optional<IndexExpr> {
      if (n == xName)
        return lane;
      return std::nullopt;
    }));
  }
  a.base = a.perLane[0];
  bool same = true, contiguous = true;
  for (unsigned j = 1; j < vec; ++j) {
    same = same && a.perLane[j].key() == a.base.key();
    contiguous = contiguous &&
                 a.perLane[j].key() == ctx.add(a.base, IndexExpr::constant(j)).key();
  }
  int64_t div = ctx.divisibility(a.base);
  bool aligned = div == 0 || div % vec == 0;
  if (same) {
    a.kind = LaneAccess::Kind::Same;
    return a;
  }
  if (contiguous && aligned) {
    a.kind = LaneAccess::Kind::Contiguous;
    return a;
  }
  a.kind = LaneAccess::Kind::Gather;
  if (std::optional<IndexExpr> base = contiguous ? std::nullopt : clampedVectorBase(ctx, a.perLane, vec)) {
    a.kind = LaneAccess::Kind::Contiguous;
    a.base = *base;
    for (unsigned j = 0; j < vec; ++j)
      a.perLane[j] = ctx.add(a.base, IndexExpr::constant(j));
  }
  return a;
}

const LaunchGeometry &Schedule::geometry() const {
  return std::visit([](const auto &s) -> const LaunchGeometry & { return s; }, params);
}

unsigned Schedule::dynamicSharedBytes() const {
  // Every schedule with a `sharedBytes` asks for that much at launch: a new
  // template's cannot be left out (a launch with less than its kernel's
  // layout reads and writes past the block's shared memory).
  return std::visit(
      [](const auto &p) -> unsigned {
        if constexpr (requires { p.sharedBytes; })
          return p.sharedBytes;
        else
          return 0;
      },
      params);
}

namespace {

/// Registers per thread a template needs, before ptxas says: its
/// parameters' estimatedRegisters() where they have one (a matmul's
/// accumulators and fragments), else 32.
unsigned estimatedRegisters(const Schedule &s) {
  return std::visit(
      [](const auto &p) -> unsigned {
        if constexpr (requires { p.estimatedRegisters(); })
          return p.estimatedRegisters();
        else
          return 32;
      },
      s.params);
}

/// Static shared memory of the kernel (the SIMT matmul's tiles).
unsigned staticSharedBytes(const Schedule &s) {
  return std::visit(
      [](const auto &p) -> unsigned {
        if constexpr (requires { p.staticSharedBytes(); })
          return p.staticSharedBytes();
        else
          return 0;
      },
      s.params);
}

/// The units of work a persistent grid walks in rounds (the Hopper
/// matmul's tiles or pairs of tiles), or none.
std::optional<int64_t> walkedWork(const Schedule &s) {
  return std::visit(
      [](const auto &p) -> std::optional<int64_t> {
        if constexpr (requires { p.walked(); })
          return p.walked();
        else
          return std::nullopt;
      },
      s.params);
}

} // namespace

int blocksPerSM(const Schedule &s, const DeviceProperties &dev, unsigned registers) {
  const LaunchGeometry &g = s.geometry();
  unsigned regs = registers ? registers : estimatedRegisters(s);
  // ptxas keeps a kernel within what its launch bounds promise
  if (!registers && g.minBlocksPerSM > 0 && g.block > 0)
    regs = std::min<unsigned>(regs, dev.regsPerSM / (g.minBlocksPerSM * g.block) / 8 * 8);
  // registers are allocated per warp in units of 256
  int64_t perWarp = ((int64_t(regs) * 32 + 255) / 256) * 256;
  int64_t warps = (g.block + 31) / 32;
  int64_t byRegs = dev.regsPerSM / std::max<int64_t>(1, perWarp * warps);
  int64_t byThreads = dev.maxThreadsPerSM / std::max<unsigned>(1, g.block);
  // the driver reserves 1 KiB per block
  int64_t shared = s.dynamicSharedBytes() + staticSharedBytes(s) + 1024;
  int64_t byShared = dev.sharedPerSM / shared;
  return static_cast<int>(
      std::max<int64_t>(0, std::min<int64_t>({byRegs, byThreads, byShared, dev.maxBlocksPerSM})));
}

std::string wavesText(const Schedule &s, const DeviceProperties &dev, unsigned registers) {
  int perSM = std::max(1, blocksPerSM(s, dev, registers));
  int64_t capacity = int64_t(perSM) * dev.smCount, grid = s.geometry().grid;
  int64_t rest = grid % capacity;
  double fill = rest == 0 ? 1.0 : double(rest) / double(capacity);
  std::string text =
      llvm::formatv("{0:f2} waves of {1} blocks ({2} per SM{3}), the last {4:f0} % full",
                    double(grid) / double(capacity), capacity, perSM,
                    registers ? "" : ", registers estimated", 100 * fill)
          .str();
  // A persistent grid is one wave; its blocks walk the tiles in rounds,
  // which quantize as waves do.
  if (std::optional<int64_t> work = walkedWork(s)) {
    unsigned cluster = s.geometry().cluster;
    int64_t walkers = std::max<int64_t>(1, grid / cluster), walked = *work;
    int64_t left = walked % walkers;
    text += llvm::formatv("; {0} {1} over {2} {3}: {4:f2} rounds, the last {5:f0} % full", walked,
                          cluster == 1 ? "tiles" : "pairs of tiles", walkers,
                          cluster == 1 ? "blocks" : "clusters",
                          double(walked) / double(walkers),
                          left == 0 ? 100.0 : 100.0 * double(left) / double(walkers))
                .str();
  }
  return text;
}

int extraWords(const KReduction &r) {
  if (r.welfordMean >= 0)
    return 2;
  return r.onlineMax >= 0 || isArgReduction(r.op) ? 1 : 0;
}

bool hasSecondWord(const KReduction &r) { return extraWords(r) > 0; }

int secondWordSlot(const LoweredKernel &k, int r) {
  assert(hasSecondWord(k.reductions[r]) && "a partial of one word");
  int slot = static_cast<int>(k.reductions.size());
  for (int o = 0; o < r; ++o)
    slot += extraWords(k.reductions[o]);
  return slot;
}

namespace {

/// Words of one block's partials: one per reduction, and its extraWords.
int partialWords(const LoweredKernel &k) {
  int words = static_cast<int>(k.reductions.size());
  for (const KReduction &r : k.reductions)
    words += extraWords(r);
  return words;
}

} // namespace

SplitWorkspace splitWorkspace(const LoweredKernel &k, const RowSchedule &s) {
  // (a cluster's blocks meet at its barrier: no counters)
  int64_t counters = s.cluster > 1 ? 0 : s.waits ? 2 * k.rows : k.rows;
  return SplitWorkspace{k.rows, s.splits, partialWords(k), counters};
}

SplitWorkspace splitWorkspace(const LoweredKernel &k, const ColumnSchedule &s) {
  // a counter per group of 32 columns; two with barriers
  int64_t groups = (k.rows + 31) / 32;
  return SplitWorkspace{k.rows, s.splits, partialWords(k), s.waits ? 2 * groups : groups};
}

SplitWorkspace splitWorkspace(const LoweredKernel &k, const ScanSchedule &s) {
  return SplitWorkspace{k.rows, s.splits, 2, 2};
}

int64_t workspaceBytes(const LoweredKernel &k, const Schedule &s) {
  return std::visit(
      [&](const auto &p) -> int64_t {
        if constexpr (requires { splitWorkspace(k, p); })
          return p.splits > 1 ? splitWorkspace(k, p).bytes() : 0;
        else
          return 0;
      },
      s.params);
}

} // namespace minijit
