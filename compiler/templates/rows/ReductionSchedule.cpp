//===- compiler/templates/rows/ReductionSchedule.cpp - inner rows, outer columns ---===//
// The rules follow what fast hand-written kernels do on Hopper: rows up to
// ~1K elements reduced by a sub-warp or warp, longer ones by a block, with the
// row kept in registers while it fits, few long rows split across blocks;
// strided (column) reductions by 32 columns per block. Rows too long for a
// warp, or too few to fill the device, take more threads; splits over blocks
// stop at a whole wave. Checked over bench/row_spread.py's spread of shapes.
//===----------------------------------------------------------------------===//
#include "compiler/templates/rows/RowsInternal.h"

#include "compiler/schedule/ScheduleInternal.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace minijit::detail {

namespace {

/// Threads a whole wave of the device holds: every SM full.
int64_t waveThreads(const DeviceProperties &dev) {
  return int64_t(dev.smCount) * dev.maxThreadsPerSM;
}

/// Registers (in elements) one thread may spend on cached row values; half
/// of it when two blocks of 512 threads must fit an SM (64 registers each).
constexpr int64_t kCacheBudget = 64;

unsigned pow2Ceil(int64_t x) {
  return static_cast<unsigned>(llvm::PowerOf2Ceil(static_cast<uint64_t>(std::max<int64_t>(x, 1))));
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
bool fitsInRegisters(const LoweredKernel &k, const RowSchedule &s, int64_t budget = kCacheBudget) {
  std::vector<uint32_t> use = passesUsing(k);
  int cachedLoads = 0;
  for (size_t i = 0; i < k.values.size(); ++i)
    if (k.values[i].kind == KValue::Kind::Load && llvm::countPopulation(use[i]) > 1)
      ++cachedLoads;
  int64_t perThread = int64_t(s.itemsPerThread) * s.vec;
  return perThread * std::max(1, cachedLoads) <= budget;
}

/// Blocks per SM a split row with several passes asks to have resident (its
/// launch bounds): its blocks wait for each other, so the grid is at most
/// this many per SM.
constexpr unsigned kWaitingBlocksPerSM = 2;

/// Whether the kernel is argmax or argmin alone over the rows of one tensor
/// (its reductions all argmax or argmin, of one element load and what an
/// elementwise prologue makes of it): a greedy decoding step once its
/// softmax is rewritten away (simplify/ArgmaxRewrites.h). Such a kernel
/// needs few registers: 32 a thread with four vectors in flight, so four
/// blocks of 512 threads fit an SM. (One that reads more tensors along the
/// row needs more: three of them spill at 32.)
bool argRowsOfOneLoad(const LoweredKernel &k) {
  if (k.reductions.empty() ||
      !llvm::all_of(k.reductions, [](const KReduction &r) { return isArgReduction(r.op); }))
    return false;
  std::vector<bool> need = neededValues(k);
  int loads = 0;
  for (size_t i = 0; i < k.values.size(); ++i)
    if (k.values[i].kind == KValue::Kind::Load && !k.values[i].perRow && need[i])
      ++loads;
  return loads == 1;
}

/// Some reduction of `k` accumulates i64 values (a sum, or an argmax over
/// them): its partials would take two words of mj_partial, so it is never
/// split over blocks.
bool holdsLongReduction(const LoweredKernel &k) {
  return llvm::any_of(k.reductions, [&](const KReduction &r) {
    return (isArgReduction(r.op) ? k.values[r.input].dtype : r.dtype) == DType::I64;
  });
}

/// Few long rows leave most SMs idle with a block per row: the row is split
/// over several blocks, each with at least four vectors per thread. A
/// one-pass reduction takes at most four blocks per SM in all (rounded
/// down, as columns are: a grid just past a wave leaves a last wave of few
/// blocks), and the last block of a row combines; a reduction of several
/// passes takes at most kWaitingBlocksPerSM per SM, all resident, meeting
/// after each pass.
/// One pass of argmax or argmin alone over one tensor's rows
/// (argRowsOfOneLoad) runs in one wave: as many blocks as the SMs
/// hold at once, rounded down to whole rows and asked for in the launch
/// bounds. Four per SM rounded up would put a few blocks past the wave (64
/// rows of 128256: 576 blocks of 512 threads where 528 are resident), which
/// read their chunks after it with the SMs nearly idle. `splits` sets the
/// number of blocks a row by hand (where a block holds one row).
MaybeRefusal splitLongRows(const LoweredKernel &k, const DeviceProperties &dev,
                           const ScheduleOverrides &o, RowSchedule &s) {
  if (holdsLongReduction(k)) {
    if (o.splits && *o.splits > 1)
      return refuse("splits=" + std::to_string(*o.splits) + ": a reduction of i64 values is not "
                    "split over blocks (its partials are 32-bit words)");
    return std::nullopt;
  }
  int64_t kv = s.vectorsPerRow(k.K);
  if (s.threadsPerRow <= 32 || (k.rows >= dev.smCount && !o.splits))
    return std::nullopt;
  bool waits = k.passes > 1;
  bool oneWave = !waits && argRowsOfOneLoad(k);
  unsigned resident = std::max(1u, static_cast<unsigned>(dev.maxThreadsPerSM) / s.threadsPerRow);
  int64_t wanted = waits     ? int64_t(kWaitingBlocksPerSM) * dev.smCount / k.rows
                   : oneWave ? int64_t(resident) * dev.smCount / k.rows
                             : std::max<int64_t>(1, 4 * int64_t(dev.smCount) / k.rows);
  int64_t most = kv / (4 * int64_t(s.threadsPerRow));
  int64_t splits = std::min<int64_t>({wanted, most, s.threadsPerRow});
  if (o.splits) {
    // The last block (or every block, waiting) combines the partials, a
    // thread each; waiting blocks must all be resident.
    int64_t limit = std::min<int64_t>(s.threadsPerRow, kv);
    if (*o.splits < 1 || *o.splits > limit)
      return refuse("splits must be 1.." + std::to_string(limit) + " for rows of " +
                    std::to_string(kv) + " vectors on " + std::to_string(s.threadsPerRow) +
                    " threads");
    if (waits && *o.splits > 1 && k.rows * *o.splits > int64_t(kWaitingBlocksPerSM) * dev.smCount)
      return refuse("splits=" + std::to_string(*o.splits) + ": " + std::to_string(k.rows) +
                    " rows read in several passes fit at most " +
                    std::to_string(int64_t(kWaitingBlocksPerSM) * dev.smCount / k.rows) +
                    " blocks a row, all resident");
    splits = *o.splits;
  }
  if (splits < 2)
    return std::nullopt;
  s.chunk = (kv + splits - 1) / splits;
  s.splits = static_cast<unsigned>((kv + s.chunk - 1) / s.chunk);
  s.itemsPerThread = static_cast<unsigned>((s.chunk + s.threadsPerRow - 1) / s.threadsPerRow);
  s.waits = waits;
  s.minBlocksPerSM = waits ? kWaitingBlocksPerSM : oneWave ? resident : 0;
  // 64 registers a thread: at most 32 cached elements in at most 8 vectors
  // (each vector's address takes registers of its own; 32 scalars spill).
  s.cached = waits && s.itemsPerThread <= 8 && fitsInRegisters(k, s, kCacheBudget / 2);
  s.grid = k.rows * s.splits;
  return std::nullopt;
}

/// `rowcluster` (sm_90, a block per row): each row split over a cluster of 2,
/// 4 or 8 blocks, which hold their chunks in registers where 8 vectors and
/// 32 elements a thread take them (two blocks of 512 an SM), and meet at the
/// cluster's barrier after each pass, their partials passed through global
/// memory. Unlike splitLongRows, any number of rows may be split: the
/// hardware runs a cluster's blocks at once. A tuning key, a candidate of
/// `minijit tune`, and the rules' choice for many long f32 rows where the
/// chunks fill the registers (ruleCluster). Over rows whose chunks are read
/// again, or are short, it was slower than a block a row on the H200
/// (docs/PERFORMANCE_LOG.md, "Rows over clusters of blocks, measured and
/// left to the tuner").
MaybeRefusal clusterLongRows(const LoweredKernel &k, const DeviceProperties &dev,
                             const ScheduleOverrides &o, bool clusters, RowSchedule &s) {
  if (!o.rowcluster)
    return std::nullopt;
  if (*o.rowcluster != 1 && *o.rowcluster != 2 && *o.rowcluster != 4 && *o.rowcluster != 8)
    return refuse("rowcluster must be 1, 2, 4 or 8");
  unsigned c = static_cast<unsigned>(*o.rowcluster);
  if (c == 1)
    return std::nullopt;
  if (!clusters)
    return refuse("rowcluster=" + std::to_string(c) + " needs an sm_90 target");
  if (holdsLongReduction(k))
    return refuse("rowcluster=" + std::to_string(c) + ": a reduction of i64 values is not split "
                  "over blocks (its partials are 32-bit words)");
  if (s.splits > 1)
    return refuse("rowcluster=" + std::to_string(c) + ": these few rows are split over the grid "
                  "(splits=1 to take a block a row first)");
  if (s.rowsPerBlock != 1 || k.symbolic)
    return refuse("rowcluster=" + std::to_string(c) + " needs a block per row (tpr of 64 or more) "
                  "and rows of a fixed count");
  int64_t kv = s.vectorsPerRow(k.K), chunk = (kv + c - 1) / c;
  if ((kv + chunk - 1) / chunk != c)
    return refuse("rowcluster=" + std::to_string(c) + ": rows of " + std::to_string(kv) +
                  " vectors do not make " + std::to_string(c) + " chunks");
  unsigned t = s.threadsPerRow;
  s.chunk = chunk;
  s.splits = c;
  s.cluster = c;
  s.waits = true;
  s.itemsPerThread = static_cast<unsigned>((chunk + t - 1) / t);
  s.cached = s.itemsPerThread <= 8 && fitsInRegisters(k, s, kCacheBudget / 2);
  if (t <= 512 && 2 * int64_t(t) <= dev.maxThreadsPerSM)
    s.minBlocksPerSM = 2; // 64 registers a thread: the cached chunk's budget
  s.grid = k.rows * s.splits;
  return std::nullopt;
}

/// The shortest row the cluster rule takes (elements): twice what a block
/// of 512 holds in registers; shorter rows were not measured over clusters.
constexpr int64_t kMeasuredClusterRow = 65536;

/// The cluster the rules split each of many long rows over (sm_90, a block
/// per row, several passes): where a block of the rules' threads cannot
/// keep its row in registers and reads it again in each pass (from DRAM:
/// the rows in flight pass the L2), the smallest cluster of 2, 4 or 8
/// blocks of 512 threads whose chunks stay in registers (at most 8 vectors
/// and 32 elements a thread: two blocks an SM, so that one block's loads
/// overlap the other's barrier and stores), else of 8 blocks of 1024 (rows
/// up to 262144 f32). The row then crosses DRAM once each way. Only over
/// what was measured (docs/PERFORMANCE_LOG.md, "Long rows held over a
/// cluster of blocks by rule"): f32 rows of 65536 elements or more (twice
/// what a block holds) whose chunks fill 7 or 8 of a thread's 8 vectors,
/// where softmax and norm rows of 65536 to 262144, aligned or not, ran
/// 1-38 % faster on the H100; shorter rows, smaller chunks (more barrier
/// per byte) and 16-bit rows (which lost over clusters in an older form of
/// the kernel) keep a block a row. The schedule over the cluster
/// (clusterLongRows'), or none.
std::optional<RowSchedule> ruleCluster(const LoweredKernel &k, const DeviceProperties &dev,
                                       const ScheduleOverrides &o, bool clusters,
                                       const RowSchedule &s) {
  if (!clusters || o.rowcluster || o.tpr || o.splits || k.passes < 2 ||
      k.symbolic || holdsLongReduction(k) || s.splits != 1 || s.rowsPerBlock != 1 || s.cached ||
      k.rows < dev.smCount || k.K < kMeasuredClusterRow)
    return std::nullopt;
  if (int p = primaryLoad(k); p < 0 || k.values[p].dtype != DType::F32)
    return std::nullopt;
  // {threads, blocks} in the order tried: blocks of 512 first (two an SM);
  // of 1024 only 8 (a cluster of 512s of half the size holds as much)
  const std::pair<unsigned, unsigned> forms[] = {{512, 2}, {512, 4}, {512, 8}, {1024, 8}};
  for (auto [t, c] : forms) {
    if (int64_t(t) > dev.maxThreadsPerBlock)
      continue;
    RowSchedule held = s;
    held.threadsPerRow = held.block = t;
    ScheduleOverrides asked = o;
    asked.rowcluster = c;
    if (clusterLongRows(k, dev, asked, clusters, held) || !held.cached)
      continue; // not c chunks, or chunks too long for the registers
    if (held.itemsPerThread >= 7)
      return held;
    return std::nullopt;
  }
  return std::nullopt;
}

/// The widest vector along the row for which the primary load and every
/// element store are contiguous.
unsigned rowVector(const LoweredKernel &k, int primary) {
  IndexContext ctx = k.ctx;
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
    if (ok)
      return vec;
  }
  return 1;
}

/// Whether the load at `off` steps through memory one element for each
/// position along the row (its rows contiguous, wherever they start).
bool unitStrideAlongRow(const LoweredKernel &k, const IndexExpr &off) {
  if (k.K < 2)
    return false;
  IndexContext ctx = k.ctx;
  std::string kName = ctx.str(k.k);
  IndexExpr t = ctx.var("mj_t", k.K - 1);
  auto at = [&](const IndexExpr &pos) {
    return ctx.substitute(off, [&](const std::string &n) -> std::optional<IndexExpr> {
      if (n == kName)
        return pos;
      return std::nullopt;
    });
  };
  return at(ctx.add(t, IndexExpr::constant(1))).key() ==
         ctx.add(at(t), IndexExpr::constant(1)).key();
}

/// Whether 32-bit indices still hold a row's last vector when rows start
/// mid-vector: it may begin up to 2 * vec - 2 elements past the tensor's end.
bool midVectorIndexFits(const LoweredKernel &k, unsigned vec) {
  if (k.index64)
    return true;
  int64_t most = k.rows * k.K;
  for (const KParam &p : k.params)
    most = std::max(most, p.numel);
  return most + 2 * int64_t(vec) < (int64_t(1) << 31);
}

/// Rows whose length no vector width divides: the widest vector, when the
/// primary load runs along the row one element a step (its rows then start
/// mid-vector, RowSchedule::alignedTo); 1 for rows under 16 vectors, whose
/// masked lanes at the ends would be much of the work.
unsigned midVectorWidth(const LoweredKernel &k, int primary) {
  unsigned vec = maxVecFor(k);
  if (primary < 0 || vec < 2 || k.K < 16 * int64_t(vec) || !midVectorIndexFits(k, vec))
    return 1;
  return unitStrideAlongRow(k, k.values[primary].offset) ? vec : 1;
}

/// Threads per row for rows of `kv` vectors.
unsigned rowThreads(int64_t kv, const DeviceProperties &dev) {
  if (kv <= 32)
    return std::min(32u, pow2Ceil((kv + 3) / 4));
  if (kv <= 512)
    return 32;
  // A block per row, about four vectors per thread, at most 512 threads
  // (measured on the H200: 1024-thread blocks leave the SM idle while they
  // synchronise).
  return std::clamp(pow2Ceil((kv + 3) / 4), 64u,
                    std::min(512u, static_cast<unsigned>(dev.maxThreadsPerBlock)));
}

/// Vectors a thread loads before it works on them, in a row read in a loop.
/// One at a time, a warp issues its next load only after the work on the
/// last (in order), so while it computes it has nothing in flight; an SM of
/// 2048 threads holds 32 KB in flight at most, the least that covers HBM's
/// latency at its bandwidth (Little's law: 4.2 TB/s x ~1 us over 132 SMs).
/// Where the work per element is heavy, each thread loads four vectors (64
/// bytes with 16-byte vectors), or as many as it has, before the work on
/// them: an online sum (an exp, a running max; the group is rescaled once),
/// and the passes of a row read again after its first (a softmax's
/// normalizing division, whose slow path is a branch the loads cannot be
/// hoisted over), and an argmax or argmin alone of one tensor's rows split
/// over blocks (argRowsOfOneLoad: its compare-and-select chain on a (value,
/// position) pair is serial, and each thread has only a few vectors, whose
/// last ones one at a time would have nothing else in flight). A one-pass
/// reduction of light work (a sum, a product with a vector) keeps one vector
/// at a time unless `ahead` is set: the unrolled loop of a split row, and
/// the many warps of an SM, keep enough in flight there. Loads at indices
/// read per element stay in value order.
MaybeRefusal chooseAhead(const LoweredKernel &k, const ScheduleOverrides &o, RowSchedule &s) {
  s.ahead = 1;
  if (s.cached || k.elementIndexed)
    return std::nullopt;
  bool splitArgs = s.splits > 1 && argRowsOfOneLoad(k);
  if (k.passes > 1 || splitArgs ||
      llvm::any_of(k.reductions, [](const KReduction &r) { return r.onlineMax >= 0; }))
    s.ahead = std::clamp(s.itemsPerThread, 1u, 4u);
  // Welford's merges hold registers of their own: two vectors a thread keep
  // a block of 512 within 32 registers, four blocks an SM.
  if (llvm::any_of(k.reductions, [](const KReduction &r) { return r.welfordMean >= 0; }))
    s.ahead = std::min(s.ahead, 2u);
  if (!o.ahead)
    return std::nullopt;
  if (*o.ahead < 1 || *o.ahead > 16)
    return refuse("ahead must be 1..16");
  s.ahead = static_cast<unsigned>(*o.ahead);
  return std::nullopt;
}

/// Rows of a warp each (33 to 512 vectors) that are long for a warp, or
/// too few to fill the device: more threads share each row, a block of 64
/// to 512, until the rows hold two waves of threads, each thread keeping at
/// least two vectors. Long: 256 vectors or more, eight or more a lane, whose
/// loads and shuffles make a long chain for one warp. Too few: under a
/// quarter of a wave a warp a row. Other warp rows stay a warp each: a block
/// pays its barriers (the rows of 640 and 768 floats measured ran slower on
/// 64 threads than on a warp). Chosen over a spread of 30 graphs
/// (bench/row_spread.py; docs/PERFORMANCE_LOG.md, "Row and column schedules over
/// a spread of shapes").
unsigned fillingRowThreads(int64_t rows, int64_t kv, unsigned t, const DeviceProperties &dev) {
  if (t != 32)
    return t;
  bool longForAWarp = kv >= 8 * 32;
  bool fewRows = rows * 32 < waveThreads(dev) / 4;
  if (!longForAWarp && !fewRows)
    return t;
  unsigned most = std::min(512u, static_cast<unsigned>(dev.maxThreadsPerBlock));
  while (rows * t < 2 * waveThreads(dev) && kv >= 4 * int64_t(t) && 2 * t <= most)
    t *= 2;
  return t;
}

/// Rows of a warp or less share blocks of 256 threads, or fewer when the
/// rows are too few to give every SM a block (at least a warp a block).
unsigned smallRowsBlock(int64_t rows, unsigned t, const DeviceProperties &dev) {
  int64_t perSM = rows * t / std::max(1, dev.smCount);
  unsigned block = 256;
  while (block > std::max(32u, t) && block > perSM)
    block /= 2;
  return block;
}

Expected<Schedule> rowSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                               const ScheduleOverrides &o, int primary, bool clusters) {
  RowSchedule s;
  s.vec = rowVector(k, primary);
  if (unsigned mid = s.vec == 1 ? midVectorWidth(k, primary) : 1; mid > 1) {
    s.vec = mid;
    s.alignedTo = primary;
  }
  Expected<std::optional<unsigned>> vecSet = vecOverride(k, o);
  if (!vecSet)
    return vecSet.refusal();
  if (std::optional<unsigned> vec = *vecSet) {
    s.alignedTo.reset();
    if (k.K % *vec != 0) {
      if (primary < 0 || !unitStrideAlongRow(k, k.values[primary].offset) ||
          !midVectorIndexFits(k, static_cast<unsigned>(*vec)))
        return refuse("vec=" + std::to_string(*vec) + " does not divide the row length " +
                      std::to_string(k.K) + ", and the rows are not contiguous");
      s.alignedTo = primary;
    }
    s.vec = *vec;
  }
  int64_t kv = s.vectorsPerRow(k.K);
  s.threadsPerRow = fillingRowThreads(k.rows, kv, rowThreads(kv, dev), dev);
  if (o.tpr) {
    if (!isPow2(*o.tpr) || *o.tpr > 1024)
      return refuse("tpr must be a power of two up to 1024");
    s.threadsPerRow = static_cast<unsigned>(*o.tpr);
  } else if (k.passes > 1) {
    // A row that does not fit its threads' registers is read again in each
    // pass: more threads per row (up to a block of 512) keep it there.
    auto fits = [&](unsigned t) {
      RowSchedule probe = s;
      probe.itemsPerThread = static_cast<unsigned>((kv + t - 1) / t);
      return fitsInRegisters(k, probe);
    };
    unsigned most = std::min(512u, static_cast<unsigned>(dev.maxThreadsPerBlock));
    unsigned t = s.threadsPerRow;
    while (t >= 32 && t < most && !fits(t))
      t *= 2;
    if (fits(t))
      s.threadsPerRow = t;
  }
  // A one-pass row with an online sum does more arithmetic per element
  // than it loads: fewer threads, each with at least 16 vectors, share the
  // row and its combine (cross-entropy's logsumexp over 32000: 256).
  bool online = llvm::any_of(k.reductions, [](const KReduction &r) { return r.onlineMax >= 0; });
  if (!o.tpr && online && k.passes == 1 && s.threadsPerRow > 64)
    s.threadsPerRow = std::clamp(static_cast<unsigned>(llvm::PowerOf2Floor(uint64_t(kv / 16))), 64u,
                                 s.threadsPerRow);
  unsigned t = s.threadsPerRow;
  if (t <= 32) {
    s.block = smallRowsBlock(k.rows, t, dev);
    if (o.block) {
      if (*o.block < 32 || *o.block > 1024 || *o.block % t)
        return refuse("block must be a multiple of tpr up to 1024");
      s.block = static_cast<unsigned>(*o.block);
    }
    s.rowsPerBlock = s.block / t;
  } else {
    s.block = t;
    s.rowsPerBlock = 1;
  }
  s.itemsPerThread = static_cast<unsigned>((kv + t - 1) / t);
  s.cached = fitsInRegisters(k, s);
  // One pass keeps nothing for later: its unrolled loop only issues the
  // loads at once, which past 8 vectors a thread costs more registers (and
  // blocks per SM) than it hides.
  if (k.passes == 1 && s.itemsPerThread > 8)
    s.cached = false;
  s.grid = (k.rows + s.rowsPerBlock - 1) / s.rowsPerBlock;
  if (MaybeRefusal no = splitLongRows(k, dev, o, s))
    return *no;
  if (std::optional<RowSchedule> held = ruleCluster(k, dev, o, clusters, s))
    s = *held;
  else if (MaybeRefusal no = clusterLongRows(k, dev, o, clusters, s))
    return *no;
  if (o.cached)
    s.cached = *o.cached && (s.splits == 1 || s.waits);
  if (MaybeRefusal no = chooseAhead(k, o, s))
    return *no;
  return Schedule{s};
}

} // namespace

/// `off` at row `r` and position `kk` of the row, when those fix it.
std::optional<int64_t> offsetAt(IndexContext &ctx, const IndexExpr &off, const LoweredKernel &k,
                                int64_t r, int64_t kk) {
  return valueAt(ctx, off, {{ctx.str(k.row), r}, {ctx.str(k.k), kk}});
}

/// Whether the load at `off` reads columns: neighbouring rows are
/// neighbours in memory and neighbouring positions of a row are not (a sum
/// over the leading axis, or over a middle one, whose rows are the other
/// axes). Sampled at 16 places, so that a row index split over several
/// axes (`row % 1024 + row / 1024 * 524288`) counts, and so do odd sizes
/// whose rows step over a gap now and then. The places are spread by a
/// multiplicative hash, not evenly, so that they do not fall in step with
/// the gaps.
bool readsColumns(const LoweredKernel &k, const IndexExpr &off) {
  if (k.rows < 32 || k.K < 2)
    return false;
  IndexContext ctx = k.ctx;
  constexpr int kSamples = 16;
  int columnLike = 0;
  for (uint64_t i = 0; i < kSamples; ++i) {
    int64_t r = static_cast<int64_t>((i * 2654435761u) % uint64_t(k.rows - 1));
    int64_t kk = static_cast<int64_t>((i * 40503u) % uint64_t(k.K - 1));
    std::optional<int64_t> here = offsetAt(ctx, off, k, r, kk),
                           nextRow = offsetAt(ctx, off, k, r + 1, kk),
                           nextK = offsetAt(ctx, off, k, r, kk + 1);
    if (!here || !nextRow || !nextK)
      return false;
    if (*nextRow - *here == 1 && *nextK - *here != 1)
      ++columnLike;
  }
  return columnLike >= kSamples * 3 / 4;
}

/// Blocks of 256 threads an SM a column reduction of several passes split
/// over blocks asks to have resident (its launch bounds: 64 registers a
/// thread; blocks of more threads, `parts` by hand, as many as an SM's
/// threads hold): its blocks wait for each other, so the grid is at most
/// this many per SM.
constexpr unsigned kWaitingColumnBlocksPerSM = 4;

/// Few, long columns read in several passes (a batch norm's mean, then its
/// variance, over [204800, 32]: one group of 32 columns, a block on one SM
/// for the whole tensor), their groups for fewer than half the SMs: the
/// columns' positions split over blocks, all
/// resident (kWaitingColumnBlocksPerSM an SM), which meet at a barrier
/// after each pass, each combining the partials in the same order; each
/// thread keeps 32 positions or more. Not for i64 sums (their partials are
/// two words) nor a kernel of named sizes (its column length is not known).
/// `splits` sets the blocks a group by hand. True where `s` is that
/// schedule.
Expected<bool> waitingColumns(const LoweredKernel &k, const DeviceProperties &dev,
                              const ScheduleOverrides &o, ColumnSchedule &s) {
  if (k.passes < 2 || (o.splits && *o.splits <= 1))
    return false;
  std::string asked = o.splits ? "splits=" + std::to_string(*o.splits) + ": " : std::string();
  if (holdsLongReduction(k) || k.symbolic) {
    if (!o.splits)
      return false;
    return refuse(asked + (k.symbolic ? "columns of named sizes read in several passes are not "
                                        "split over blocks"
                                      : "a reduction of i64 values is not split over blocks "
                                        "(its partials are 32-bit words)"));
  }
  int64_t groups = (k.rows + 31) / 32;
  // (groups for half the SMs or more keep a block a group: up to 32 warps
  // a column, as before; the split's barriers have not been measured
  // against them)
  if (!o.splits && 2 * groups >= int64_t(dev.smCount))
    return false;
  unsigned parts = o.parts ? static_cast<unsigned>(*o.parts) : 8;
  if (parts < 1 || parts > 32)
    return refuse("parts must be 1..32");
  // (blocks of more threads: as many as an SM's threads hold)
  unsigned resident =
      std::max(1u, std::min(kWaitingColumnBlocksPerSM,
                            static_cast<unsigned>(dev.maxThreadsPerSM) / (32 * parts)));
  int64_t slots = int64_t(resident) * dev.smCount;
  if (o.splits && (*o.splits > k.K || groups * *o.splits > slots))
    return refuse("splits must be 1.." +
                  std::to_string(std::max<int64_t>(1, std::min(k.K, slots / groups))) + " for " +
                  std::to_string(groups) +
                  " groups of columns read in several passes (all resident, " +
                  std::to_string(resident) + " blocks an SM)");
  int64_t splits =
      o.splits ? *o.splits : std::min<int64_t>({slots / groups, k.K / (32 * int64_t(parts)), 1024});
  if (splits < 2)
    return false;
  s.parts = parts;
  s.block = 32 * parts;
  s.chunk = (k.K + splits - 1) / splits;
  s.splits = static_cast<unsigned>((k.K + s.chunk - 1) / s.chunk);
  s.waits = true;
  s.minBlocksPerSM = resident;
  s.grid = groups * s.splits;
  return true;
}

Expected<Schedule> reductionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o, bool clusters) {
  int primary = primaryLoad(k);
  bool columns = primary >= 0 && readsColumns(k, k.values[primary].offset);
  if (!columns)
    return rowSchedule(k, dev, o, primary, clusters);
  // checked, though columns are read one element at a time
  if (Expected<std::optional<unsigned>> vec = vecOverride(k, o); !vec)
    return vec.refusal();
  ColumnSchedule s;
  int64_t groups = (k.rows + 31) / 32;
  if (Expected<bool> waits = waitingColumns(k, dev, o, s); !waits)
    return waits.refusal();
  else if (*waits)
    return Schedule{s};
  // A reduction of several passes over groups of columns that fill the
  // SMs (or too short to split): when its groups do not fill the SMs'
  // threads, more warps share each column (up to 32: a block of 1024
  // threads).
  // One pass over groups of columns enough for two waves of blocks of 512
  // takes 16 warps a group (left whole: 5 % faster than 8,
  // docs/PERFORMANCE_LOG.md, "Where three TF32 products pay; column
  // reductions four loads deep").
  s.parts = 8;
  if (k.passes > 1)
    while (s.parts < 32 && groups * 32 * s.parts < waveThreads(dev) &&
           k.K / (2 * s.parts) >= 32)
      s.parts *= 2;
  else if (!o.splits && groups * 32 * 16 >= 2 * waveThreads(dev))
    s.parts = 16;
  // Columns shorter than the parts would leave threads without a position
  // (a product's few terms summed over k = 3): at most one part a position,
  // two at least (a block of 64 threads; 32 blocks of 32 would fill half
  // an SM's threads).
  while (s.parts > 2 && s.parts > k.K)
    s.parts /= 2;
  if (o.parts) {
    if (*o.parts < 1 || *o.parts > 32)
      return refuse("parts must be 1..32");
    s.parts = static_cast<unsigned>(*o.parts);
  }
  s.block = 32 * s.parts;
  s.grid = groups;
  // Few, long columns leave SMs idle: with one pass, split the columns'
  // positions over blocks, as many as one wave holds (eight blocks of 256
  // per SM), each thread with at least 32 positions. Rounded down: a grid
  // just past a wave leaves a last wave of few blocks that takes as long as
  // a full one (docs/PERFORMANCE_LOG.md, "Row and column schedules over a
  // spread of shapes").
  int64_t wave = waveThreads(dev) / s.block;
  int64_t wanted = std::max<int64_t>(1, wave / groups);
  int64_t most = k.K / (32 * int64_t(s.parts));
  int64_t splits = std::min<int64_t>({wanted, most, 1024});
  if (o.splits) {
    if (*o.splits < 1 || *o.splits > k.K)
      return refuse("splits must be 1.." + std::to_string(k.K));
    splits = *o.splits;
  }
  if (holdsLongReduction(k) && o.splits && *o.splits > 1)
    return refuse("splits=" + std::to_string(*o.splits) + ": a reduction of i64 values is not "
                  "split over blocks (its partials are 32-bit words)");
  if (k.passes == 1 && splits >= 2 && !holdsLongReduction(k)) {
    s.chunk = (k.K + splits - 1) / splits;
    s.splits = static_cast<unsigned>((k.K + s.chunk - 1) / s.chunk);
    s.grid = groups * s.splits;
  }
  return Schedule{s};
}

} // namespace minijit::detail
