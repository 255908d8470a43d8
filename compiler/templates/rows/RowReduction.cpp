//===- compiler/templates/rows/RowReduction.cpp - reductions over contiguous rows ---===//
// T threads reduce one row (a sub-warp, a warp, or the block), one pass per
// chain of dependent reductions; with `cached` the row's loads stay in
// registers between passes. Few long rows are split across blocks: with one
// pass the last block of a row to finish combines the partial results; with
// several the row's blocks meet at a barrier after each pass and each
// combines them. Many long rows are split over the blocks of a cluster
// (sm_90), which meet at the cluster's barrier.
//===----------------------------------------------------------------------===//
#include "compiler/templates/rows/RowsInternal.h"

#include "compiler/emit/ExprEmitter.h"
#include "compiler/lower/CudaNames.h"

namespace minijit {

namespace {

class RowEmitter {
public:
  RowEmitter(KernelEmitter &e, const RowSchedule &s)
      : E(e), W(e.W), K(e.K), S(s), Idx(e.Idx), Block(s.threadsPerRow > 32),
        Partial(e.symbolic() ? s.rowsPerBlock > 1 : K.rows % s.rowsPerBlock != 0) {}

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
    }
    // The caches are named and declared before the first pass reads them.
    if (lc.cached)
      for (const std::string &d : E.cacheDeclarations(S.itemsPerThread, S.vec))
        W.line(d);
    E.rowValues(0);
    // After the row's values: where the row starts may depend on one (a
    // take's index, an iota).
    if (lc.alignedOffset)
      rowLead(*lc.alignedOffset);
    for (int p = 0; p < K.passes; ++p) {
      W.line(E.passTitle(p));
      E.declareAccumulators(p);
      rowLoop(p, lc);
      if (S.splits > 1 && S.waits) {
        if (reducesIn(K, p)) {
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
    if (Block && E.hasLongReduction())
      W.line("__shared__ long long mj_smem_l[32];");
    if (Block && E.hasArgReduction())
      W.line("__shared__ int mj_smem_at[32]; // argmax/argmin positions");
    if (Block && E.hasOnlineSum())
      W.line("__shared__ float mj_smem_m[32]; // the maxes of the online sums");
    if (Block && E.hasWelford())
      W.line("__shared__ float mj_smem_wmean[32], mj_smem_wn[32]; // Welford's means and counts");
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
    W.line("const bool rowValid = rowRaw < " + E.extent() + ";");
    W.line("const " + Idx + " row = rowValid ? rowRaw : " + E.extentMinus1() +
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

  /// A held row's pass: the thread's items unrolled (`it`), each a vector
  /// kept in registers.
  void heldLoop(int p, const LaneCtx &lc, const std::string &storeGuard) {
    unsigned t = S.threadsPerRow;
    int64_t kv = S.vectorsPerRow(K.K);
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
      openItemTest(lc);
    LaneCtx item = lc;
    // Rows that start mid-vector: the items from the second on whose
    // vectors end before the row's last whole vector, for every lane and
    // every start, are whole; only the first and the last items test.
    if (lc.alignedOffset && !split) {
      int64_t wholeEnd = lc.rowLength / S.vec / t; // items 1 .. wholeEnd - 1
      if (wholeEnd >= 2)
        item.whole = "it >= 1 && it < " + std::to_string(wholeEnd);
    }
    E.elementWork(p, item, storeGuard);
    if (!exact)
      W.close();
    W.close();
  }

  /// Opens the test of a held item's index against the row's (or chunk's)
  /// end. The items every lane has inside (the last chunk, the shortest,
  /// for all) need none: the unrolled loop folds `it < full` away, so their
  /// loads issue together instead of one after another, each behind a
  /// branch on the one before.
  void openItemTest(const LaneCtx &lc) {
    unsigned t = S.threadsPerRow;
    int64_t kv = S.vectorsPerRow(K.K);
    bool split = S.splits > 1;
    int64_t shortest = split ? std::min<int64_t>(S.chunk, kv - int64_t(S.splits - 1) * S.chunk) : kv;
    int64_t full = shortest / t;
    std::string inside =
        lc.var + " < " +
        (split ? "min(first + " + std::to_string(S.chunk) + ", (" + Idx + ")" + std::to_string(kv) + ")"
               : std::to_string(kv));
    if (full == 0) {
      W.open("if (" + inside + ")");
      return;
    }
    W.line("// items 0.." + std::to_string(full - 1) + " are inside the " + (split ? "chunk" : "row") +
           " for every lane");
    W.open("if (it < " + std::to_string(full) + " || " + inside + ")");
  }

  /// The loop of pass `p` over this thread's vectors of the row.
  void rowLoop(int p, const LaneCtx &lc) {
    unsigned t = S.threadsPerRow;
    int64_t kv = S.vectorsPerRow(K.K);
    std::string storeGuard = Partial ? "if (rowValid) " : "";
    if (S.cached) {
      heldLoop(p, lc, storeGuard);
      return;
    }
    std::string start = "lane", bound = std::to_string(kv);
    if (S.splits > 1) {
      std::string chunk = std::to_string(S.chunk);
      if (p == 0)
        W.line("const " + Idx + " first = part * " + chunk + ", end = min(first + " + chunk +
               ", (" + Idx + ")" + std::to_string(kv) + ");");
      start = "first + lane";
      bound = "end";
    }
    if (S.ahead > 1) {
      groupLoop(p, lc, start, bound, storeGuard);
      return;
    }
    if (S.splits > 1)
      W.line("#pragma unroll 4");
    W.open("for (" + Idx + " " + lc.var + " = " + start + "; " + lc.var + " < " + bound + "; " +
           lc.var + " += " + std::to_string(t) + ")");
    E.elementWork(p, lc, storeGuard);
    W.close();
  }

  /// A looped row's pass over groups of S.ahead vectors a thread (t
  /// apart): a group's loads are all issued before the work on any of them,
  /// so they are in flight together, and an online sum takes the group's
  /// values at once (one rescale). Whole groups first, without a test; then
  /// the vectors past them, fewer than a group, as one group whose vectors
  /// past the row (or chunk) are neither loaded nor used.
  void groupLoop(int p, const LaneCtx &lc, const std::string &start, const std::string &bound,
                 const std::string &storeGuard) {
    unsigned t = S.threadsPerRow, u = S.ahead;
    std::string kb = W.unique("kb");
    W.line(Idx + " " + kb + " = " + start + "; // this thread's next group of " +
           std::to_string(u) + " vectors, " + std::to_string(t) + " apart");
    W.open("for (; " + kb + " + " + std::to_string(int64_t(u - 1) * t) + " < " + bound + "; " +
           kb + " += " + std::to_string(int64_t(u) * t) + ")");
    group(p, lc, kb, "", storeGuard);
    W.close();
    W.open("if (" + kb + " < " + bound + ")");
    W.line("// the last vectors, fewer than " + std::to_string(u));
    group(p, lc, kb, bound, storeGuard);
    W.close();
  }

  /// One group of S.ahead vectors from `kb`: the loads, then the work. With
  /// `bound`, only the vectors below it (the others' online values at -inf).
  void group(int p, const LaneCtx &lc, const std::string &kb, const std::string &bound,
             const std::string &storeGuard) {
    unsigned t = S.threadsPerRow;
    std::string us = std::to_string(S.ahead);
    std::string index = "const " + Idx + " " + lc.var + " = " + kb + " + u * " + std::to_string(t) + ";";
    std::string live = "if (" + lc.var + " < " + bound + ")";
    LaneCtx g = lc;
    std::vector<int> loads = E.aheadLoads(p, lc);
    std::vector<std::string> arrays;
    std::string lane = lc.vec > 1 ? "j" : "0";
    for (int i : loads) {
      const KParam &param = K.params[K.values[i].param];
      std::string a = W.unique(param.name + "_a");
      W.line("alignas(16) " + std::string(storageCType(param.dtype)) + " " + a + "[" + us + "][" +
             std::to_string(lc.vec) + "];");
      arrays.push_back(a);
      g.readFrom[i] = loadConv(param.dtype, a + "[u][" + lane + "]");
    }
    if (!loads.empty()) {
      W.line("#pragma unroll");
      W.open("for (int u = 0; u < " + us + "; ++u)");
      W.line(index);
      if (!bound.empty())
        W.open(live);
      if (lc.alignedOffset)
        W.line("const " + Idx + " k0 = " + lc.var + " * " + std::to_string(lc.vec) + " - lead;");
      for (size_t n = 0; n < loads.size(); ++n)
        E.loadAhead(loads[n], arrays[n] + "[u]", lc);
      if (!bound.empty())
        W.close();
      W.close();
    }
    std::map<int, std::string> groupIn;
    std::string values = std::to_string(int64_t(S.ahead) * lc.vec);
    for (size_t r = 0; r < K.reductions.size(); ++r)
      if (K.reductions[r].pass == p && K.reductions[r].onlineMax >= 0) {
        std::string in = W.unique(cudaIdentifier(K.reductions[r].name) + "_in");
        W.line("float " + in + "[" + values + "]; // the group's values for the online sum");
        if (!bound.empty()) {
          W.line("#pragma unroll");
          W.line("for (int i = 0; i < " + values + "; ++i) " + in +
                 "[i] = (-MJ_INF); // the vectors past the row add nothing");
        }
        groupIn[static_cast<int>(r)] = in;
        g.onlineInto[static_cast<int>(r)] =
            in + (lc.vec > 1 ? "[u * " + std::to_string(lc.vec) + " + j]" : "[u]");
      }
    W.line("#pragma unroll");
    W.open("for (int u = 0; u < " + us + "; ++u)");
    if (!bound.empty() || E.elementWorkUsesIndex(p, g))
      W.line(index);
    if (!bound.empty())
      W.open(live);
    E.elementWork(p, g, storeGuard);
    if (!bound.empty())
      W.close();
    W.close();
    for (const auto &[r, in] : groupIn)
      W.line("mj_online_exp_sum(" + E.accName(r) + ", " + E.accOnlineMaxName(r) + ", " + in + ");");
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
           countersText(ws) + ";");
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
  /// reduction r's accumulators (each word of a pair or triple); lanes past
  /// the row's blocks take the identities.
  void readPartial(const SplitWorkspace &ws, int r) {
    std::vector<std::string> words = E.loadedPartial(r, partialAt(ws, "lane"));
    std::vector<std::string> locals = E.partialLocals(r), identities = E.partialIdentities(r);
    for (size_t w = 0; w < words.size(); ++w)
      W.line(locals[w] + " = " +
             (S.splits == S.block ? words[w]
                                  : "lane < " + std::to_string(ws.splits) + " ? " + words[w] +
                                        " : " + identities[w]) +
             ";");
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
    bool cluster = S.cluster > 1;
    if (barrier == 0 && cluster) {
      W.line("// the row's blocks are a cluster: their partials meet in mj_work");
      W.line("unsigned *const mj_partial = mj_work;");
    } else if (barrier == 0) {
      W.line("// the row's blocks meet in mj_work: arrivals and departures per row, then the "
             "partials");
      W.line("unsigned *const mj_arrived = mj_work, *const mj_left = mj_work + " + E.extent() +
             ", *const mj_partial = mj_work + " + countersText(ws) + ";");
    }
    W.open("if (lane == 0)");
    for (size_t r = 0; r < K.reductions.size(); ++r)
      if (K.reductions[r].pass == pass)
        E.storePartial(static_cast<int>(r), partialAt(ws, "part"));
    W.close();
    if (cluster)
      W.line("mj_cluster_sync(); // all " + splits + " blocks of the row (the cluster) have left "
             "their partials");
    else
      W.line("mj_row_barrier(&mj_arrived[row], " +
             std::to_string(int64_t(S.splits) * (barrier + 1)) + "u); // all " + splits +
             " blocks of the row have left their partials");
    for (size_t r = 0; r < K.reductions.size(); ++r)
      if (K.reductions[r].pass == pass)
        readPartial(ws, static_cast<int>(r));
    E.finishReductions(pass, ReduceScope::Block, S.block, false);
    if (!cluster && !reducesAfter(K, pass))
      W.line("if (lane == 0) mj_row_leave(&mj_arrived[row], &mj_left[row], " + splits +
             "u); // the last block out resets the counters");
  }

  /// The words of counters before the partials (SplitWorkspace::counters):
  /// one per row, two with barriers.
  std::string countersText(const SplitWorkspace &ws) const {
    if (!E.symbolic())
      return std::to_string(ws.counters());
    return S.waits ? "2 * " + E.extent() : E.extent();
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
