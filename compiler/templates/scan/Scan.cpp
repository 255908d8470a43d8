//===- compiler/templates/scan/Scan.cpp - cumsum/cumprod, a block per row ---===//
// The row in tiles of block * items elements. The threads compute the
// tile's inputs (the prologue, by element work) at consecutive elements, so a
// warp's loads are whole lines, into a tile in shared memory; each thread
// then scans its `items` consecutive ones in registers, a warp scan of the
// threads' totals (shuffles) and a block scan of the warps' totals (shared
// memory) give each thread the prefix before its elements, and the results
// go back into the tile, read again at consecutive elements for the epilogue
// and the stores. A carry holds the tiles before. A reversed scan walks the
// row from its end: slot 0 of the first tile is the row's last element. The tile is padded by one
// element in 32, so a thread's consecutive elements fall in distinct banks.
// Chained (ScanSchedule::chained()), a block scans one tile, taken by a ticket
// in the order the blocks start, and its first warp finds the carry by the
// decoupled look-back of the preamble (chainedScanPreamble).
// Sums and products accumulate in f32 (f16/bf16 too), int or long long (i64).
//===----------------------------------------------------------------------===//
#include "compiler/emit/ExprEmitter.h"
#include "compiler/templates/scan/ScanInternal.h"

#include "ir/Printer.h"

namespace minijit {

namespace {

/// One scan of the kernel: its accumulator's type and combiner, and the
/// names of its registers and shared arrays.
struct One {
  int r;
  std::string type, functor, identity, v, carry, smem, tile;
};

std::vector<One> scansOf(KernelEmitter &e) {
  std::vector<One> scans;
  for (size_t r = 0; r < e.K.reductions.size(); ++r) {
    const KReduction &red = e.K.reductions[r];
    bool isInt = e.accIsInt(static_cast<int>(r));
    ReduceText rt = reduceText(red.op == OpKind::Cumsum ? OpKind::Sum : OpKind::Prod, isInt,
                               e.accIsLong(static_cast<int>(r)));
    std::string base = e.accName(static_cast<int>(r));
    scans.push_back({static_cast<int>(r), e.accType(static_cast<int>(r)), rt.functor, rt.identity,
                     e.W.unique(base + "_v"), e.W.unique(base + "_carry"),
                     e.W.unique(base + "_warps"), e.W.unique(base + "_tile")});
  }
  return scans;
}

/// The row's element k at a tile's `slot` (from `first`), and the block
/// that holds what is done with it: k counts up from the row's start, or
/// down from its end for a reversed scan (the tiles then walk the row back,
/// and the prologue's loads and the stores read and write it from the end).
void openElement(KernelEmitter &e, bool reverse) {
  std::string K = std::to_string(e.K.K);
  if (!reverse) {
    e.W.line("const " + e.Idx + " k = first + slot;");
    e.W.open("if (k < " + K + ")");
    return;
  }
  e.W.line("const " + e.Idx + " k = " + K + " - 1 - (first + slot); // from the row's end");
  e.W.open("if (k >= 0)");
}

/// A chained scan's ticket: the blocks number their tiles in the order they
/// start, so the tiles before a block's have all started and the look-back
/// waits on running blocks only. The counter runs on across launches; each
/// launch takes the grid's worth, its epoch, which marks the status words it
/// writes (zero, the fresh workspace's, is no launch's).
void takeTicket(KernelEmitter &e, const ScanSchedule &s) {
  CodeWriter &w = e.W;
  std::string tiles = std::to_string(s.splits), total = std::to_string(s.grid);
  w.line("__shared__ unsigned long long ticketShared;");
  w.line("if (threadIdx.x == 0) ticketShared = atomicAdd(reinterpret_cast<unsigned long long "
         "*>(mj_work), 1ull);");
  w.line("__syncthreads();");
  w.line("const unsigned long long ticket = ticketShared;");
  w.line("const unsigned epoch = (unsigned)(ticket / " + total +
         "ull % 0x7fffffffull) + 1u; // this launch's");
  w.line("const " + e.Idx + " row = (" + e.Idx + ")(ticket % " + total + "ull / " + tiles + ");");
  w.line("const " + e.Idx + " tileOfRow = (" + e.Idx + ")(ticket % " + tiles + "ull);");
  w.line("unsigned long long *const status = reinterpret_cast<unsigned long long *>(mj_work) + 1 "
         "+ row * " + tiles + "; // the row's tiles' status words");
}

/// Scan `o` of the tile in registers: each thread's elements, a warp scan of
/// the threads' totals, a block scan of the warps' (warp 0, which for a
/// chained scan also looks back for the tiles before, into `carried`), then
/// the prefix before each thread's elements added to them.
void scanTile(KernelEmitter &e, const ScanSchedule &s, const One &o, const std::string &carried) {
  CodeWriter &w = e.W;
  const LoweredKernel &k = e.K;
  std::string items = std::to_string(s.items), warps = std::to_string(s.block / 32);
  w.line("// %" + k.reductions[o.r].name + " = " + std::string(opName(k.reductions[o.r].op)) +
         ": the tile's scan");
  w.line("#pragma unroll");
  w.line("for (int it = 1; it < " + items + "; ++it) " + o.v + "[it] = " + o.functor +
         "::apply(" + o.v + "[it - 1], " + o.v + "[it]);");
  std::string incl = w.unique(o.v + "_incl"), before = w.unique(o.v + "_before");
  w.line("const " + o.type + " " + incl + " = mj_warp_scan<" + o.functor + ">(" + o.v + "[" +
         std::to_string(s.items - 1) + "]);");
  w.line("if (lane == 31) " + o.smem + "[warp] = " + incl + ";");
  w.line("__syncthreads();");
  w.open("if (warp == 0)");
  std::string t = w.unique("scanned"), lanes = w.unique("lanesBefore");
  w.line("const " + o.type + " " + t + " = mj_warp_scan<" + o.functor + ">(lane < " + warps +
         " ? " + o.smem + "[lane] : " + o.identity + ");");
  w.line(o.smem + "[lane] = " + t + ";");
  if (s.chained()) {
    std::string aggregate = w.unique("tileTotal");
    w.line("const " + o.type + " " + aggregate + " = __shfl_sync(0xffffffffu, " + t + ", " +
           warps + " - 1);");
    w.line("const " + o.type + " prefix = mj_scan_look_back<" + o.functor +
           ">(status, tileOfRow, epoch, " + aggregate + ", " + o.identity + ");");
    w.line("if (lane == 0) " + carried + " = prefix;");
  }
  w.close();
  w.line("__syncthreads();");
  if (s.chained())
    w.line("const " + o.type + " " + o.carry + " = " + carried + ";");
  // The prefix before this thread's elements: the tiles before, the warps
  // before, the lanes before.
  w.line("const " + o.type + " " + lanes + " = __shfl_up_sync(0xffffffffu, " + incl + ", 1);");
  w.line("const " + o.type + " " + before + " = " + o.functor + "::apply(" + o.carry + ", " +
         o.functor + "::apply(warp == 0 ? " + o.identity + " : " + o.smem +
         "[warp - 1], lane == 0 ? " + o.identity + " : " + lanes + "));");
  if (!s.chained()) {
    w.line(o.carry + " = " + o.functor + "::apply(" + o.carry + ", " + o.smem + "[" + warps +
           " - 1]);");
    w.line("__syncthreads(); // the next tile writes " + o.smem);
  }
  w.line("#pragma unroll");
  w.line("for (int it = 0; it < " + items + "; ++it) " + o.v + "[it] = " + o.functor +
         "::apply(" + before + ", " + o.v + "[it]);");
}

} // namespace

void emitScan(KernelEmitter &e, const ScanSchedule &s) {
  CodeWriter &w = e.W;
  const LoweredKernel &k = e.K;
  const std::string &Idx = e.Idx;
  std::string items = std::to_string(s.items), tile = std::to_string(int64_t(s.block) * s.items);
  std::string K = std::to_string(k.K), warps = std::to_string(s.block / 32);
  std::vector<One> scans = scansOf(e);
  const bool reverse = !k.reductions.empty() && k.reductions[0].reverse;
  int64_t tileSize = int64_t(s.block) * s.items;
  std::string padded = std::to_string(tileSize + tileSize / 32);
  for (const One &o : scans) {
    w.line("__shared__ " + o.type + " " + o.smem + "[32]; // each warp's total, then their scan");
    w.line("__shared__ " + o.type + " " + o.tile + "[" + padded +
           "]; // the tile, one element in 32 left out (no bank conflicts)");
  }
  std::string carried;
  if (s.chained()) {
    carried = w.unique(scans[0].carry + "_shared");
    w.line("__shared__ " + scans[0].type + " " + carried + "; // the tiles before, found by warp 0");
    takeTicket(e, s);
  } else {
    w.line("const " + Idx + " row = blockIdx.x;");
  }
  w.line("const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;");
  e.rowValues(0);
  if (s.chained()) {
    w.line("const " + Idx + " first = tileOfRow * " + tile + "; // this block's tile");
  } else {
    for (const One &o : scans)
      w.line(o.type + " " + o.carry + " = " + o.identity + "; // the tiles before");
    w.open("for (" + Idx + " first = 0; first < " + K + "; first += " + tile + ")");
  }
  LaneCtx lc = LaneCtx::elements("k", k.k, k.K);
  std::string block = std::to_string(s.block);
  // The tile's inputs at consecutive elements a warp, into the tile.
  w.line("#pragma unroll");
  w.open("for (int it = 0; it < " + items + "; ++it)");
  w.line("const int slot = it * " + block + " + threadIdx.x;");
  openElement(e, reverse);
  e.elementWork(0, lc, "");
  for (const One &o : scans)
    w.line(o.tile + "[slot + slot / 32] = " + e.ref(k.reductions[o.r].input) + ";");
  w.close();
  w.open("else");
  for (const One &o : scans)
    w.line(o.tile + "[slot + slot / 32] = " + o.identity + ";");
  w.close();
  w.close();
  w.line("__syncthreads();");
  // Each thread's consecutive elements, from the tile.
  for (const One &o : scans)
    w.line(o.type + " " + o.v + "[" + items + "];");
  w.line("#pragma unroll");
  w.open("for (int it = 0; it < " + items + "; ++it)");
  w.line("const int slot = threadIdx.x * " + items + " + it;");
  for (const One &o : scans)
    w.line(o.v + "[it] = " + o.tile + "[slot + slot / 32];");
  w.close();
  for (const One &o : scans)
    scanTile(e, s, o, carried);
  // The results back into the tile, then read at consecutive elements a
  // warp: what is computed from them (an epilogue) and the stores.
  w.line("#pragma unroll");
  w.open("for (int it = 0; it < " + items + "; ++it)");
  w.line("const int slot = threadIdx.x * " + items + " + it;");
  for (const One &o : scans)
    w.line(o.tile + "[slot + slot / 32] = " + o.v + "[it];");
  w.close();
  w.line("__syncthreads();");
  w.line("#pragma unroll");
  w.open("for (int it = 0; it < " + items + "; ++it)");
  w.line("const int slot = it * " + block + " + threadIdx.x;");
  openElement(e, reverse);
  for (const One &o : scans)
    for (size_t i = 0; i < k.values.size(); ++i) {
      const KValue &v = k.values[i];
      if (v.kind == KValue::Kind::ReduceResult && v.reduction == o.r && e.Need[i])
        w.line("const " + regType(v.dtype) + " " + e.Names[i] + " = " + o.tile +
               "[slot + slot / 32];" + e.comment(static_cast<int>(i)));
    }
  e.elementWork(1, lc, "");
  w.close();
  w.close();
  if (!s.chained()) {
    w.line("__syncthreads(); // the next tile writes the tile");
    w.close();
  }
  w.raw("}\n");
}

} // namespace minijit
