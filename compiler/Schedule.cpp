//===- compiler/Schedule.cpp - fixed kernel templates and their knobs -----===//
// The rules follow what fast hand-written kernels do on Hopper: 16-byte
// accesses, several in flight per thread, at least a few blocks per SM; rows
// up to ~1K elements reduced by a sub-warp or warp, longer ones by a block,
// with the row kept in registers while it fits.
//===----------------------------------------------------------------------===//
#include "compiler/Schedule.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <map>
#include <optional>

namespace minijit {

namespace {

/// Registers (in elements) one thread may spend on cached row values.
constexpr int64_t kCacheBudget = 64;

unsigned pow2Ceil(int64_t x) {
  return static_cast<unsigned>(llvm::PowerOf2Ceil(static_cast<uint64_t>(std::max<int64_t>(x, 1))));
}

/// The widest vector whose accesses of the kernel's widest type are 16 bytes.
unsigned maxVecFor(const LoweredKernel &k) {
  unsigned widest = 1;
  for (const KParam &p : k.params)
    widest = std::max(widest, dtypeSize(p.dtype));
  return std::min(8u, 16u / widest);
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
  if (same)
    a.kind = LaneAccess::Kind::Same;
  else if (contiguous && aligned)
    a.kind = LaneAccess::Kind::Contiguous;
  else
    a.kind = LaneAccess::Kind::Gather;
  return a;
}

namespace {

Schedule pointwiseSchedule(const LoweredKernel &k, const DeviceProperties &dev) {
  Schedule s;
  s.kind = ScheduleKind::Pointwise;
  s.block = 256;
  IndexContext ctx = k.ctx;
  for (unsigned vec = maxVecFor(k); vec >= 2; vec /= 2) {
    int64_t numVec = k.numel / vec;
    if (numVec == 0)
      continue;
    bool ok = true, anyContiguous = false;
    for (const KStore &st : k.stores) {
      LaneAccess a = analyzeLanes(ctx, st.offset, k.elem, numVec * vec, vec, "v");
      ok = ok && a.kind == LaneAccess::Kind::Contiguous;
      anyContiguous = true;
    }
    if (ok && anyContiguous) {
      s.vec = vec;
      break;
    }
  }
  s.numVec = k.numel / s.vec;
  s.tail = k.numel % s.vec != 0;
  // One vector per thread and a grid as large as the data: measured on the
  // H200 (2026-11-29, GeLU over 2^26 f32), 256 threads x 1 vector reached 97%
  // of the copy bandwidth, against 93% with 4 vectors per thread.
  s.items = 1;
  s.grid = std::max<int64_t>(1, (s.numVec + int64_t(s.block) * s.items - 1) /
                                    (int64_t(s.block) * s.items));
  return s;
}

/// The element load reading the most data: it decides the layout.
int primaryLoad(const LoweredKernel &k) {
  int best = -1;
  int64_t bestSize = -1;
  std::vector<bool> need = neededValues(k);
  for (size_t i = 0; i < k.values.size(); ++i) {
    const KValue &v = k.values[i];
    if (v.kind != KValue::Kind::Load || v.perRow || !need[i])
      continue;
    int64_t size = k.params[v.param].numel;
    if (size > bestSize) {
      bestSize = size;
      best = static_cast<int>(i);
    }
  }
  return best;
}

/// Loads needed in more than one pass are kept in registers (a fully
/// unrolled loop over the row's items); they must fit the budget.
bool fitsInRegisters(const LoweredKernel &k, const Schedule &s) {
  std::vector<uint32_t> use = passesUsing(k);
  int cachedLoads = 0;
  for (size_t i = 0; i < k.values.size(); ++i)
    if (k.values[i].kind == KValue::Kind::Load && llvm::countPopulation(use[i]) > 1)
      ++cachedLoads;
  int64_t perThread = int64_t(s.itemsPerThread) * s.vec;
  return perThread * std::max(1, cachedLoads) <= kCacheBudget;
}

/// Few long rows leave most SMs idle with a block per row: a one-pass
/// reduction splits each row over several blocks, about four blocks per SM
/// in all, each with at least four vectors per thread.
void splitLongRows(const LoweredKernel &k, const DeviceProperties &dev, Schedule &s) {
  s.splits = 1;
  s.chunk = 0;
  int64_t kv = k.K / s.vec;
  if (s.threadsPerRow <= 32 || k.passes != 1 || k.rows >= dev.smCount)
    return;
  int64_t wanted = (4 * int64_t(dev.smCount) + k.rows - 1) / k.rows;
  int64_t most = kv / (4 * int64_t(s.threadsPerRow));
  int64_t splits = std::min<int64_t>({wanted, most, s.threadsPerRow});
  if (splits < 2)
    return;
  s.chunk = (kv + splits - 1) / splits;
  s.splits = static_cast<unsigned>((kv + s.chunk - 1) / s.chunk);
  s.cached = false;
  s.itemsPerThread = static_cast<unsigned>((s.chunk + s.threadsPerRow - 1) / s.threadsPerRow);
  s.grid = k.rows * s.splits;
}

Schedule reductionSchedule(const LoweredKernel &k, const DeviceProperties &dev) {
  Schedule s;
  IndexContext ctx = k.ctx;
  int primary = primaryLoad(k);
  if (primary >= 0) {
    const IndexExpr &off = k.values[primary].offset;
    if (ctx.isAffine(off) && ctx.coefficient(off, k.row) == 1 &&
        ctx.coefficient(off, k.k) != 1 && k.rows >= 32) {
      s.kind = ScheduleKind::OuterCol;
      s.parts = 8;
      s.block = 32 * s.parts;
      s.grid = (k.rows + 31) / 32;
      return s;
    }
  }
  s.kind = ScheduleKind::InnerRow;
  // Vector width along the row: the primary load and every element store
  // must be contiguous.
  for (unsigned vec = maxVecFor(k); vec >= 2; vec /= 2) {
    if (k.K % vec != 0)
      continue;
    bool ok = primary >= 0;
    if (ok)
      ok = analyzeLanes(ctx, k.values[primary].offset, k.k, k.K, vec, "kv").kind ==
           LaneAccess::Kind::Contiguous;
    for (const KStore &st : k.stores)
      if (!st.perRow)
        ok = ok && analyzeLanes(ctx, st.offset, k.k, k.K, vec, "kv").kind ==
                       LaneAccess::Kind::Contiguous;
    if (ok) {
      s.vec = vec;
      break;
    }
  }
  int64_t kv = k.K / s.vec;
  unsigned t;
  if (kv <= 32)
    t = std::min(32u, pow2Ceil((kv + 3) / 4));
  else if (kv <= 512)
    t = 32;
  else // a block per row, about four vectors per thread, at most 512 threads (measured on
       // the H200: 1024-thread blocks leave the SM idle while they synchronise)
    t = std::clamp(pow2Ceil((kv + 3) / 4), 64u,
                   std::min(512u, static_cast<unsigned>(dev.maxThreadsPerBlock)));
  s.threadsPerRow = t;
  s.itemsPerThread = static_cast<unsigned>((kv + t - 1) / t);
  s.cached = fitsInRegisters(k, s);
  if (t <= 32) {
    s.block = 256;
    s.rowsPerBlock = s.block / t;
  } else {
    s.block = t;
    s.rowsPerBlock = 1;
  }
  s.grid = (k.rows + s.rowsPerBlock - 1) / s.rowsPerBlock;
  splitLongRows(k, dev, s);
  return s;
}

} // namespace

namespace {

/// Matmul tiles: the largest whose tile count fills the SMs (a grid smaller
/// than the machine leaves SMs idle; smaller tiles cost reuse). Overrides
/// (tile, bn, bk, stages, wm, wn) set the parameters by hand for tuning.
Schedule matmulSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                        const std::map<std::string, int64_t> &kv) {
  const KMatmul &mm = *k.matmul;
  Schedule s;
  bool tensorCores = mm.dtype != DType::F32;
  s.kind = tensorCores ? ScheduleKind::MatmulMma : ScheduleKind::MatmulSimt;
  struct Tile {
    unsigned bm, bn, bk, tm, tn, warpsM, warpsN, stages, frag = 1;
  };
  // f32: a thread computes tm x tn outputs from registers; the last tile,
  // for small products (the lecture's 128-wide MLP), takes a 64-deep slice
  // of k per step so few steps remain. f16/bf16: each warp a 64x64 (or
  // 32x32) part of the tile, `stages` k-slices in flight.
  std::vector<Tile> tiles = tensorCores
                                ? std::vector<Tile>{{128, 128, 32, 0, 0, 2, 2, 4},
                                                    {64, 64, 32, 0, 0, 2, 2, 3}}
                                : std::vector<Tile>{{128, 128, 8, 8, 8, 0, 0, 2},
                                                    {64, 64, 16, 4, 4, 0, 0, 2},
                                                    {32, 32, 32, 2, 2, 0, 0, 2},
                                                    {16, 16, 64, 1, 1, 0, 0, 2}};
  auto get = [&](const char *key) -> std::optional<int64_t> {
    auto it = kv.find(key);
    return it == kv.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  auto bad = [](const std::string &why) { throw CompileError("schedule override: " + why); };
  Tile pick = tiles.back();
  if (auto forced = get("tile")) {
    auto it = llvm::find_if(tiles, [&](const Tile &t) { return t.bm == *forced; });
    if (it == tiles.end()) {
      std::string known;
      for (const Tile &t : tiles)
        known += (known.empty() ? "" : ", ") + std::to_string(t.bm);
      bad("tile must be one of " + known + " for this matmul");
    }
    pick = *it;
  } else {
    for (const Tile &t : tiles) {
      int64_t count = ((mm.M + t.bm - 1) / t.bm) * ((mm.N + t.bn - 1) / t.bn) * mm.batch;
      if (count >= dev.smCount) {
        pick = t;
        break;
      }
    }
  }
  if (tensorCores) {
    if (auto v = get("bm")) {
      if (*v != 64 && *v != 128 && *v != 256)
        bad("bm must be 64, 128 or 256");
      pick.bm = static_cast<unsigned>(*v);
    }
    if (auto v = get("bn")) {
      if (*v != 64 && *v != 128 && *v != 256)
        bad("bn must be 64, 128 or 256");
      pick.bn = static_cast<unsigned>(*v);
    }
    if (auto v = get("bk")) {
      if (*v != 16 && *v != 32 && *v != 64)
        bad("bk must be 16, 32 or 64");
      pick.bk = static_cast<unsigned>(*v);
    }
    if (auto v = get("stages")) {
      if (*v < 2 || *v > 6)
        bad("stages must be 2..6");
      pick.stages = static_cast<unsigned>(*v);
    }
    if (auto v = get("frag")) {
      if (*v != 1 && *v != 2)
        bad("frag must be 1 or 2");
      pick.frag = static_cast<unsigned>(*v);
    }
    if (auto v = get("wm"))
      pick.warpsM = static_cast<unsigned>(*v);
    if (auto v = get("wn"))
      pick.warpsN = static_cast<unsigned>(*v);
    unsigned wtm = pick.warpsM ? pick.bm / pick.warpsM : 0, wtn = pick.warpsN ? pick.bn / pick.warpsN : 0;
    if (!pick.warpsM || !pick.warpsN || pick.bm % pick.warpsM || pick.bn % pick.warpsN ||
        wtm % 16 || wtn % 16 || pick.warpsM * pick.warpsN > 16)
      bad("wm and wn must split the tile into at most 16 warps of a multiple of 16x16");
  }
  s.bm = pick.bm;
  s.bn = pick.bn;
  s.bk = pick.bk;
  s.tm = pick.tm;
  s.tn = pick.tn;
  s.warpsM = pick.warpsM;
  s.warpsN = pick.warpsN;
  s.stages = pick.stages;
  s.fragBuffers = pick.frag;
  s.block = tensorCores ? 32 * s.warpsM * s.warpsN : (s.bm / s.tm) * (s.bn / s.tn);
  s.tilesM = (mm.M + s.bm - 1) / s.bm;
  s.tilesN = (mm.N + s.bn - 1) / s.bn;
  s.grid = s.tilesM * s.tilesN * mm.batch;
  // 16-byte copies need rows of whole 16-byte chunks, aligned, and a whole
  // number of them per thread.
  IndexContext ctx = k.ctx;
  int64_t da = ctx.divisibility(mm.aBase), db = ctx.divisibility(mm.bBase);
  int64_t per16 = tensorCores ? 8 : 4;
  auto divides = [&](int64_t d) { return d == 0 || d % per16 == 0; };
  s.vecA = mm.aStrideK == 1 && mm.aStrideM % per16 == 0 && mm.K % per16 == 0 && divides(da) &&
           (s.bm * s.bk / per16) % s.block == 0;
  s.vecB = mm.bStrideN == 1 && mm.bStrideK % per16 == 0 && mm.N % per16 == 0 && divides(db) &&
           (s.bk * s.bn / per16) % s.block == 0;
  if (tensorCores) {
    s.sharedBytes = s.stages * (s.bm * (s.bk + 8) + s.bk * (s.bn + 8)) * 2;
    if (s.sharedBytes > dev.sharedPerBlockOptin)
      bad(llvm::formatv("a {0}x{1}x{2} tile in {3} stages needs {4} bytes of shared memory; the "
                        "device allows {5}",
                        s.bm, s.bn, s.bk, s.stages, s.sharedBytes, dev.sharedPerBlockOptin)
              .str());
  }
  return s;
}

std::map<std::string, int64_t> parseOverrides(const std::string &text) {
  std::map<std::string, int64_t> kv;
  llvm::SmallVector<llvm::StringRef, 8> parts;
  llvm::StringRef(text).split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    auto [key, value] = p.trim().split('=');
    int64_t v = 0;
    static const char *known[] = {"block", "vec",    "items", "tpr",  "cached", "parts", "tile",
                                  "bm",    "bn",     "bk",    "stages", "frag", "wm",    "wn"};
    if (!llvm::is_contained(known, key))
      throw CompileError("schedule override: unknown key '" + key.str() +
                         "' (known: block, vec, items, tpr, cached, parts, tile, bm, bn, bk, "
                         "stages, frag, wm, wn)");
    if (value.getAsInteger(10, v) || v < 0)
      throw CompileError("schedule override: '" + p.str() + "' needs a non-negative integer");
    kv[key.str()] = v;
  }
  return kv;
}

bool isPow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

void applyOverrides(Schedule &s, const LoweredKernel &k, const DeviceProperties &dev,
                    const std::map<std::string, int64_t> &kv) {
  auto get = [&](const char *key) -> std::optional<int64_t> {
    auto it = kv.find(key);
    if (it == kv.end())
      return std::nullopt;
    return it->second;
  };
  auto bad = [](const std::string &why) { throw CompileError("schedule override: " + why); };
  if (auto v = get("vec")) {
    if (!isPow2(*v) || *v > 16)
      bad("vec must be a power of two up to 16");
    unsigned widest = 1;
    for (const KParam &p : k.params)
      widest = std::max(widest, dtypeSize(p.dtype));
    if (*v * widest > 16)
      bad("vec=" + std::to_string(*v) + " makes " + std::to_string(*v * widest) +
          "-byte accesses of this kernel's " + std::to_string(widest) +
          "-byte elements; at most 16 bytes");
    int64_t extent = s.kind == ScheduleKind::Pointwise ? k.numel : k.K;
    if (s.kind == ScheduleKind::InnerRow && extent % *v != 0)
      bad("vec=" + std::to_string(*v) + " does not divide the row length " +
          std::to_string(extent));
    if (s.kind != ScheduleKind::OuterCol)
      s.vec = static_cast<unsigned>(*v);
  }
  switch (s.kind) {
  case ScheduleKind::Pointwise:
    if (auto v = get("block")) {
      if (*v < 32 || *v > 1024 || *v % 32)
        bad("block must be a multiple of 32 up to 1024");
      s.block = static_cast<unsigned>(*v);
    }
    if (auto v = get("items")) {
      if (*v < 1 || *v > 16)
        bad("items must be 1..16");
      s.items = static_cast<unsigned>(*v);
    }
    s.numVec = k.numel / s.vec;
    s.tail = k.numel % s.vec != 0;
    s.grid = std::max<int64_t>(1, (s.numVec + int64_t(s.block) * s.items - 1) /
                                      (int64_t(s.block) * s.items));
    return;
  case ScheduleKind::InnerRow: {
    if (auto v = get("tpr")) {
      if (!isPow2(*v) || *v > 1024)
        bad("tpr must be a power of two up to 1024");
      s.threadsPerRow = static_cast<unsigned>(*v);
    }
    unsigned t = s.threadsPerRow;
    if (t <= 32) {
      s.block = 256;
      if (auto v = get("block")) {
        if (*v < 32 || *v > 1024 || *v % t)
          bad("block must be a multiple of tpr up to 1024");
        s.block = static_cast<unsigned>(*v);
      }
      s.rowsPerBlock = s.block / t;
    } else {
      s.block = t;
      s.rowsPerBlock = 1;
    }
    int64_t kvecs = k.K / s.vec;
    s.itemsPerThread = static_cast<unsigned>((kvecs + t - 1) / t);
    s.cached = fitsInRegisters(k, s);
    s.grid = (k.rows + s.rowsPerBlock - 1) / s.rowsPerBlock;
    splitLongRows(k, dev, s);
    if (auto v = get("cached"))
      s.cached = *v != 0 && s.splits == 1;
    return;
  }
  case ScheduleKind::MatmulSimt:
  case ScheduleKind::MatmulMma:
    return;
  case ScheduleKind::OuterCol:
    if (auto v = get("parts")) {
      if (*v < 1 || *v > 32)
        bad("parts must be 1..32");
      s.parts = static_cast<unsigned>(*v);
      s.block = 32 * s.parts;
    }
    return;
  }
}

} // namespace

Schedule chooseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                        const std::string &overrides) {
  std::map<std::string, int64_t> kv;
  if (!overrides.empty())
    kv = parseOverrides(overrides);
  if (k.kind == KernelKind::Matmul)
    return matmulSchedule(k, dev, kv);
  Schedule s = k.kind == KernelKind::Pointwise ? pointwiseSchedule(k, dev) : reductionSchedule(k, dev);
  if (!kv.empty())
    applyOverrides(s, k, dev, kv);
  return s;
}

std::string Schedule::describe() const {
  switch (kind) {
  case ScheduleKind::Pointwise:
    return llvm::formatv("pointwise: {0} threads per block, {1}-wide vectors, {2} per thread, "
                         "grid {3}{4}",
                         block, vec, items, grid, tail ? ", scalar tail" : "")
        .str();
  case ScheduleKind::InnerRow: {
    std::string who = threadsPerRow == 1    ? std::string("1 thread")
                      : threadsPerRow < 32  ? llvm::formatv("{0} threads", threadsPerRow).str()
                      : threadsPerRow == 32 ? std::string("a warp")
                                            : llvm::formatv("a block of {0}", threadsPerRow).str();
    return llvm::formatv("inner row: {0} per row, {1} row{2} per block ({3} threads), {4}-wide "
                         "vectors, {5}, grid {6}",
                         who, rowsPerBlock, rowsPerBlock == 1 ? "" : "s", block, vec,
                         splits > 1 ? llvm::formatv("split over {0} blocks per row ({1} vectors "
                                                    "each), the last to finish combines them",
                                                    splits, chunk)
                                          .str()
                         : cached ? llvm::formatv("{0} per thread held in registers",
                                                  itemsPerThread)
                                        .str()
                                  : std::string("looped over the row (read again in each pass)"),
                         grid)
        .str();
  }
  case ScheduleKind::OuterCol:
    return llvm::formatv("outer column: 32 columns x {0} parts per block ({1} threads), grid {2}",
                         parts, block, grid)
        .str();
  case ScheduleKind::MatmulSimt:
    return llvm::formatv("matmul on CUDA cores: {0}x{1} tile, k step {2}, {3}x{4} outputs per "
                         "thread ({5} threads), double-buffered through registers, A {6}, B {7}, "
                         "grid {8} ({9}x{10} tiles)",
                         bm, bn, bk, tm, tn, block, vecA ? "by float4" : "by elements",
                         vecB ? "by float4" : "by elements", grid, tilesM, tilesN)
        .str();
  case ScheduleKind::MatmulMma:
    return llvm::formatv("matmul on tensor cores (mma.sync m16n8k16): {0}x{1} tile, k step {2}, "
                         "{3}x{4} warps, {5} stages in {6} bytes of shared memory, A {7}, B {8}, "
                         "grid {9} ({10}x{11} tiles)",
                         bm, bn, bk, warpsM, warpsN, stages, sharedBytes,
                         vecA ? "by 16-byte cp.async" : "by elements",
                         vecB ? "by 16-byte cp.async" : "by elements", grid, tilesM, tilesN)
        .str();
  }
  return "";
}

} // namespace minijit
