//===- compiler/emit/RowReduction.cpp - reductions over contiguous rows ---===//
// T threads reduce one row (a sub-warp, a warp, or the block), one pass per
// chain of dependent reductions; with `cached` the row's loads stay in
// registers between passes. Few long rows are split across blocks: with one
// pass the last block of a row to finish combines the partial results; with
// several the row's blocks meet at a barrier after each pass and each
// combines them.
//===----------------------------------------------------------------------===//
#include "compiler/emit/KernelEmitter.h"

#include "compiler/emit/ExprEmitter.h"

namespace minijit {

namespace {

class RowEmitter {
public:
  RowEmitter(KernelEmitter &e, const RowSchedule &s)
      : E(e), W(e.W), K(e.K), S(s), Idx(e.Idx), Block(s.threadsPerRow > 32),
        Partial(K.rows % s.rowsPerBlock != 0) {}

  void run() {
    sharedAndRow();
    LaneCtx lc;
    lc.vec = S.vec;
    lc.x = K.k;
    lc.extent = S.vectorsPerRow(K.K) * S.vec;
    lc.var = S.vec > 1 ? "kv" : "k";
    lc.cached = S.cached && K.passes > 1;
    if (S.alignedTo) {
      lc.alignedOffset = K.values[*S.alignedTo].offset;
      lc.rowLength = K.K;
      rowLead(*lc.alignedOffset);
    }
    // The caches are named and declared before the first pass reads them.
    if (lc.cached)
      for (const std::string &d : E.cacheDeclarations(S.itemsPerThread, S.vec))
        W.line(d);
    E.rowValues(0);
    for (int p = 0; p < K.passes; ++p) {
      W.line(E.passTitle(p));
      E.declareAccumulators(p);
      rowLoop(p, lc);
      if (S.splits > 1 && S.waits) {
        if (reducesIn(p)) {
          E.finishReductions(p, ReduceScope::Block, S.block, false);
          exchangePartials(p, barriers++);
          E.defineReductions(p);
        }
      } else if (S.splits > 1) {
        E.finishReductions(p, ReduceScope::Block, S.block, false);
        combineSplits(p);
        E.defineReductions(p);
      } else if (Block) {
        E.finishReductions(p, ReduceScope::Block, S.block);
      } else {
        E.finishReductions(p, ReduceScope::Warp, S.threadsPerRow);
      }
      E.rowValues(p + 1);
    }
    E.rowStores(Partial ? "lane == 0 && rowValid" : S.waits ? "lane == 0 && part == 0" : "lane == 0");
    W.raw("}\n");
  }

private:
  /// Shared memory for block reductions, then which row (and lane) is this thread's.
  void sharedAndRow() {
    unsigned t = S.threadsPerRow;
    if (Block && E.hasReductionOf(false))
      W.line("__shared__ float mj_smem_f[32];");
    if (Block && E.hasReductionOf(true))
      W.line("__shared__ int mj_smem_i[32];");
    if (Block && E.hasArgReduction())
      W.line("__shared__ int mj_smem_at[32]; // argmax/argmin positions");
    if (Block && E.hasOnlineSum())
      W.line("__shared__ float mj_smem_m[32]; // the maxes of the online sums");
    if (S.splits > 1) {
      if (!S.waits)
        W.line("__shared__ bool mj_last; // this block is the last of its row to finish");
      W.line("const int lane = threadIdx.x;");
      W.line("const " + Idx + " row = blockIdx.x / " + std::to_string(S.splits) + ";");
      W.line("const " + Idx + " part = blockIdx.x % " + std::to_string(S.splits) +
             "; // this block's chunk of the row");
      return;
    }
    if (Block) {
      W.line("const int lane = threadIdx.x;");
      W.line("const " + Idx + " row = blockIdx.x;");
      return;
    }
    W.line("const int lane = threadIdx.x % " + std::to_string(t) + ";");
    std::string raw = "(" + Idx + ")blockIdx.x * " + std::to_string(S.rowsPerBlock) +
                      " + threadIdx.x / " + std::to_string(t);
    if (!Partial) {
      W.line("const " + Idx + " row = " + raw + ";");
      return;
    }
    W.line("const " + Idx + " rowRaw = " + raw + ";");
    W.line("const bool rowValid = rowRaw < " + std::to_string(K.rows) + ";");
    W.line("const " + Idx + " row = rowValid ? rowRaw : " + std::to_string(K.rows - 1) +
           "; // spare lanes redo the last row but store nothing");
  }

  /// Rows that start mid-vector: where this row starts in its first vector,
  /// from `offset` at the row's position 0.
  void rowLead(const IndexExpr &offset) {
    IndexContext &ctx = E.Ctx;
    std::string k = ctx.str(K.k);
    IndexExpr start = ctx.substitute(offset, [&](const std::string &n) -> std::optional<IndexExpr> {
      if (n == k)
        return IndexExpr::constant(0);
      return std::nullopt;
    });
    W.line("const int lead = (int)(" + E.parenIdx(start) + " % " + std::to_string(S.vec) +
           "); // the row starts this many elements into its first vector");
  }

  /// The loop of pass `p` over this thread's vectors of the row.
  void rowLoop(int p, const LaneCtx &lc) {
    unsigned t = S.threadsPerRow;
    int64_t kv = S.vectorsPerRow(K.K);
    std::string storeGuard = Partial ? "if (rowValid) " : "";
    if (S.cached) {
      bool split = S.splits > 1;
      int64_t span = split ? S.chunk : kv; // the vectors this block covers
      bool exact = int64_t(S.itemsPerThread) * t == span && (!split || kv % S.chunk == 0);
      if (split && p == 0)
        W.line("const " + Idx + " first = part * " + std::to_string(S.chunk) + ";");
      W.line("#pragma unroll");
      W.open("for (int it = 0; it < " + std::to_string(S.itemsPerThread) + "; ++it)");
      // A pass that reads only cached values needs no index when no lane is idle.
      if (!exact || E.elementWorkUsesIndex(p, lc))
        W.line("const " + Idx + " " + lc.var + " = " + (split ? "first + " : "") + "it * " +
               std::to_string(t) + " + lane;");
      if (!exact)
        W.open("if (" + lc.var + " < " +
               (split ? "min(first + " + std::to_string(S.chunk) + ", (" + Idx + ")" +
                            std::to_string(kv) + ")"
                      : std::to_string(kv)) +
               ")");
      E.elementWork(p, lc, storeGuard);
      if (!exact)
        W.close();
      W.close();
      return;
    }
    if (S.splits > 1) {
      std::string chunk = std::to_string(S.chunk);
      if (p == 0)
        W.line("const " + Idx + " first = part * " + chunk + ", end = min(first + " + chunk +
               ", (" + Idx + ")" + std::to_string(kv) + ");");
      W.line("#pragma unroll 4");
      W.open("for (" + Idx + " " + lc.var + " = first + lane; " + lc.var + " < end; " + lc.var +
             " += " + std::to_string(t) + ")");
      E.elementWork(p, lc, storeGuard);
      W.close();
      return;
    }
    W.open("for (" + Idx + " " + lc.var + " = lane; " + lc.var + " < " + std::to_string(kv) +
           "; " + lc.var + " += " + std::to_string(t) + ")");
    E.elementWork(p, lc, storeGuard);
    W.close();
  }

  /// A row split over blocks: each block leaves its partial results in
  /// mj_work (laid out as SplitWorkspace says) and counts itself done; the
  /// last block of the row reads the partials back, combines them in block
  /// order (the same result every run) and resets the counter for the next
  /// launch.
  void combineSplits(int pass) {
    SplitWorkspace ws = splitWorkspace(K, S);
    W.line("// the row's partial results meet in mj_work: a counter per row, then the partials");
    W.line("unsigned *const mj_count = mj_work, *const mj_partial = mj_work + " +
           std::to_string(ws.counters()) + ";");
    W.open("if (lane == 0)");
    for (size_t r = 0; r < K.reductions.size(); ++r)
      E.storePartial(static_cast<int>(r), partialAt(ws, "part"));
    W.line("__threadfence(); // the partials are visible before the count says so");
    W.line("mj_last = atomicAdd(&mj_count[row], 1u) == " + std::to_string(S.splits - 1) + "u;");
    W.close();
    W.line("__syncthreads();");
    W.line("if (!mj_last) return;");
    W.line("__threadfence();");
    for (size_t r = 0; r < K.reductions.size(); ++r)
      readPartial(ws, static_cast<int>(r));
    E.finishReductions(pass, ReduceScope::Block, S.block, false);
    W.line("if (lane == 0) mj_count[row] = 0u; // ready for the next launch");
  }

  /// Lane `lane` takes the partial of block `lane` of the row into
  /// reduction r's accumulators (both words of a pair); lanes past the
  /// row's blocks take the identities.
  void readPartial(const SplitWorkspace &ws, int r) {
    auto [value, second] = E.loadedPartial(r, partialAt(ws, "lane"));
    auto orIdentity = [&](const std::string &v, const std::string &identity) {
      return S.splits == S.block ? v
                                 : "lane < " + std::to_string(ws.splits) + " ? " + v + " : " +
                                       identity;
    };
    W.line(E.accName(r) + " = " + orIdentity(value, E.accIdentity(r)) + ";");
    if (!second.empty())
      W.line(E.secondName(r) + " = " + orIdentity(second, E.secondIdentity(r)) + ";");
  }

  bool reducesIn(int pass) const {
    for (const KReduction &r : K.reductions)
      if (r.pass == pass)
        return true;
    return false;
  }

  /// Where mj_partial holds word `slot` of block `part`'s partials of this row.
  std::function<std::string(int)> partialAt(const SplitWorkspace &ws, const std::string &part) const {
    return [ws, part](int slot) {
      std::string i = "row * " + std::to_string(ws.splits) + " + " + part;
      return ws.words == 1 ? i
                           : "(" + i + ") * " + std::to_string(ws.words) + " + " +
                                 std::to_string(slot);
    };
  }

  /// A row split over blocks that meet after pass `pass` (barrier number
  /// `barrier`): each block leaves its partials of the pass in mj_work and
  /// arrives; once all blocks of the row have, every block reads the
  /// partials back and combines them in block order, so all get the same
  /// value (the same every run). The last barrier counts the blocks past it
  /// too, and the last of them resets both counters for the next launch.
  void exchangePartials(int pass, int barrier) {
    SplitWorkspace ws = splitWorkspace(K, S);
    std::string splits = std::to_string(ws.splits);
    if (barrier == 0) {
      W.line("// the row's blocks meet in mj_work: arrivals and departures per row, then the "
             "partials");
      W.line("unsigned *const mj_arrived = mj_work, *const mj_left = mj_work + " +
             std::to_string(K.rows) + ", *const mj_partial = mj_work + " +
             std::to_string(ws.counters()) + ";");
    }
    W.open("if (lane == 0)");
    for (size_t r = 0; r < K.reductions.size(); ++r)
      if (K.reductions[r].pass == pass)
        E.storePartial(static_cast<int>(r), partialAt(ws, "part"));
    W.close();
    W.line("mj_row_barrier(&mj_arrived[row], " + std::to_string(int64_t(S.splits) * (barrier + 1)) +
           "u); // all " + splits + " blocks of the row have left their partials");
    for (size_t r = 0; r < K.reductions.size(); ++r)
      if (K.reductions[r].pass == pass)
        readPartial(ws, static_cast<int>(r));
    E.finishReductions(pass, ReduceScope::Block, S.block, false);
    if (!reducesAfter(pass))
      W.line("if (lane == 0) mj_row_leave(&mj_arrived[row], &mj_left[row], " + splits +
             "u); // the last block out resets the counters");
  }

  bool reducesAfter(int pass) const {
    for (const KReduction &r : K.reductions)
      if (r.pass > pass)
        return true;
    return false;
  }

  int barriers = 0; ///< barriers emitted so far

  KernelEmitter &E;
  CodeWriter &W;
  const LoweredKernel &K;
  const RowSchedule &S;
  const std::string &Idx;
  const bool Block;   ///< the whole block reduces one row
  const bool Partial; ///< the last block has spare rows
};

} // namespace

void emitRowReduction(KernelEmitter &e, const RowSchedule &s) {
  assert((s.splits == 1 || s.waits || e.K.passes == 1) &&
         "a split reduction of several passes needs its blocks to meet");
  RowEmitter(e, s).run();
}

} // namespace minijit
