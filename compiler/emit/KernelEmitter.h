//===- compiler/emit/KernelEmitter.h - what every template shares -*- C++ -*-===//
// Used inside compiler/emit/ and by the template families
// (compiler/templates/*/), whose bodies are built from it. One KernelEmitter
// writes one kernel: the header comment and signature, then the template's
// body, built from the pieces here: element work (loads as 16-byte vectors,
// gathers or one value for all lanes; the arithmetic of one element per
// lane; accumulation; stores), per-row values and stores, and the
// reductions' accumulators.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/emit/CodeWriter.h"
#include "compiler/lower/Lowering.h"
#include "compiler/schedule/Schedule.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace minijit {

/// How element work addresses the lanes of one thread's vector.
struct LaneCtx {
  /// One element at a time: element index `x`, named `var`, over `extent`.
  static LaneCtx elements(std::string var, IndexExpr x, int64_t extent) {
    LaneCtx lc;
    lc.var = std::move(var);
    lc.x = std::move(x);
    lc.extent = extent;
    return lc;
  }

  std::string var;      ///< the vector (or element) index: vi, kv, k, i, n
  IndexExpr x;          ///< the element index it splits: LoweredKernel::elem or ::k
  int64_t extent;       ///< elements covered, a multiple of vec
  unsigned vec = 1;
  bool cached = false;  ///< loads used in several passes live in registers, indexed by `it`
  /// When set, offsets are rewritten with the element index (`elem`, the
  /// kernel's) replaced by this expression of a tile's coordinates; `x` is
  /// then one of those coordinates.
  std::optional<IndexExpr> elemIs;
  IndexExpr elem;
  /// Values read from elsewhere (a tile in shared memory, a matmul's
  /// accumulators): value -> the text, which may name the lane `j`.
  std::map<int, std::string> readFrom;
  /// Rows that start mid-vector (RowSchedule::alignedTo): the offset whose
  /// rows align the vectors, and the row length. The vector at `var` holds
  /// positions k0 .. k0+vec-1 of the row (k0 = var * vec - h, h where the
  /// row starts in its first vector); loads and stores at that offset move
  /// whole vectors, others one lane at a time; lanes outside the row are
  /// masked.
  std::optional<IndexExpr> alignedOffset;
  int64_t rowLength = 0;
  /// With alignedOffset: code true where the vector at `var` is inside the
  /// row for every lane, whatever the row's start (a held row's middle
  /// items, `it >= 1 && it < N`, a constant once the loop is unrolled): its
  /// loads and stores then skip mj_load_row's test. Empty: they test.
  std::string whole;
  /// Online sums whose values go to a group's array instead (a row loop
  /// that loads several vectors ahead, RowSchedule::ahead): reduction -> the
  /// element's text, which may name the lane `j`; the caller declares the
  /// array and updates the sum once for the group.
  std::map<int, std::string> onlineInto;
};

/// Who combines the threads' partial results of a reduction.
enum class ReduceScope {
  Warp,   ///< the threads of a row within one warp (mj_warp_reduce)
  Block,  ///< the whole block (mj_block_reduce)
  Column, ///< the parts of one column (mj_col_reduce)
};

class KernelEmitter {
public:
  KernelEmitter(const LoweredKernel &k, const Schedule &s, const std::string &name);

  /// The header comment (`schedule`: the schedule's description) and the
  /// signature; the body follows at indent 1.
  void header(const std::string &schedule);

  /// The work of pass `pass` for the vector (or element) at lc.var, with
  /// `storeGuard` predicating element stores.
  void elementWork(int pass, const LaneCtx &lc, const std::string &storeGuard);
  /// True when elementWork(pass, lc, ...) reads lc.var: some load it makes
  /// or some store (a cached load after its first pass does not).
  bool elementWorkUsesIndex(int pass, const LaneCtx &lc) const;
  /// The loads of pass `pass` worth issuing ahead of the work on them (a
  /// row loop over groups of vectors, RowSchedule::ahead): those that move
  /// the row's data (vectors, lanes gathered, lanes of rows that start
  /// mid-vector; with one-element vectors every load), none where loads
  /// read indices computed per element.
  std::vector<int> aheadLoads(int pass, const LaneCtx &lc);
  /// The load of value `i` for the vector at lc.var into `dst` (an array of
  /// lc.vec elements), as elementWork would make it; elementWork then reads
  /// it through lc.readFrom. Rows that start mid-vector need `k0` defined.
  void loadAhead(int i, const std::string &dst, const LaneCtx &lc);
  /// Loads kept in registers across passes (LaneCtx::cached), each named
  /// once: their declarations, `itemsPerThread` x `vec` elements each. With
  /// the caches, the values computed once and kept in a load's registers
  /// (cachedStashes) are read back in the later passes, not computed again.
  std::vector<std::string> cacheDeclarations(unsigned itemsPerThread, unsigned vec);

  /// `offset` with lc.elem replaced by lc.elemIs, when set.
  IndexExpr offsetIn(const IndexExpr &offset, const LaneCtx &lc);

  // ---- reductions
  void declareAccumulators(int pass);
  /// Combines the threads' partial results of this pass's reductions over
  /// `scope` (`width` threads: per row, per block or parts per column) and
  /// defines their values (`define` false: only combines).
  void finishReductions(int pass, ReduceScope scope, unsigned width, bool define = true);
  /// Finishes this pass's reductions (a mean divides by the row length) and
  /// defines the values that read them.
  void defineReductions(int pass);
  /// Per-row values (loads and arithmetic that do not depend on k) known
  /// once `stage` passes are done.
  void rowValues(int stage);
  /// The per-row stores, by the threads `who` selects.
  void rowStores(const std::string &who);
  /// "// pass 1: %s = sum, then store".
  std::string passTitle(int pass) const;
  /// Whether the kernel has float and int (i32) reductions (their shared memory).
  bool hasReductionOf(bool isInt) const;
  std::string accName(int r);
  /// The accumulated value is an int or a long long (an argmax's over i32
  /// or i64 values too).
  bool accIsInt(int r) const;
  /// The accumulated value is a long long (of i64 values).
  bool accIsLong(int r) const;
  /// The accumulator's register type: float, int or long long.
  std::string accType(int r) const;
  /// Some reduction accumulates i64 values: its block or column scratch is
  /// mj_smem_l or mj_col_l.
  bool hasLongReduction() const;
  /// The shared scratch a block (or, with `column`, a column) combine of
  /// reduction r uses: mj_smem_f, mj_smem_i, mj_smem_l (mj_col_*).
  std::string scratchName(int r, bool column) const;
  /// Some reduction is an argmax or argmin: it also needs int scratch for the index.
  bool hasArgReduction() const;
  /// Some reduction is an online sum (KReduction::onlineMax): its block
  /// combine needs scratch for the maxes too.
  bool hasOnlineSum() const;
  /// Some reduction is a Welford sum of squared deviations
  /// (KReduction::welfordMean): its block combine needs scratch for the
  /// threads' means and counts too.
  bool hasWelford() const;
  /// A Welford reduction's running mean and count of the elements it has
  /// seen (beside accName's sum of squared deviations from that mean).
  std::string accWelfordMeanName(int r);
  std::string accWelfordCountName(int r);
  /// An argmax's or argmin's index accumulator (beside accName's value).
  std::string accIndexName(int r);
  /// An online sum's own running max, which its sum is relative to.
  std::string accOnlineMaxName(int r);
  /// The online sum (KReduction::onlineMax) whose running max is max
  /// reduction r, in r's pass, or -1: r is then not accumulated apart but
  /// takes that max once the sum is combined (the same value: the max of
  /// the same elements, NaN where one is).
  int trackingSum(int r) const;
  /// The identity reduction r's accumulator starts from (an argmax's: the
  /// identity of max).
  std::string accIdentity(int r) const;

  // ---- the partials of a reduction split over blocks (SplitWorkspace)
  /// The lines that leave reduction r's accumulators in mj_partial: its
  /// value at at(r) and its further words (extraWords: an online sum's max,
  /// an argmax's position, a Welford sum's mean and count) from
  /// at(secondWordSlot(r)) on.
  void storePartial(int r, const std::function<std::string(int)> &at);
  /// Reduction r's partial as read back from mj_partial (through the L2,
  /// addressed like storePartial): an expression a word, in the order of
  /// partialLocals.
  std::vector<std::string> loadedPartial(int r, const std::function<std::string(int)> &at);
  /// The locals that hold reduction r's partial, a word each (its
  /// accumulator first), and the identities they start from.
  std::vector<std::string> partialLocals(int r);
  std::vector<std::string> partialIdentities(int r) const;
  /// The local holding the second word of reduction r and its identity.
  std::string secondName(int r);
  std::string secondIdentity(int r) const;
  /// `e` with lc's element index for this lane (in the lane loop `j`), or as
  /// lowered without `lc`.
  std::string laneIndexText(const IndexExpr &e, const LaneCtx *lc);

  // ---- named sizes
  /// The kernel's outer extent as code: a pointwise kernel's elements, a
  /// row kernel's rows, a matmul's m. A number, or in a kernel whose extent
  /// is a product of named dimensions (LoweredKernel::symbolic) the local
  /// the header computes from the size parameters (mj_numel, mj_rows, mj_m).
  std::string extent() const;
  /// `extent() - 1`, folded for a number.
  std::string extentMinus1() const;
  /// The extent is computed from named sizes at run time.
  bool symbolic() const { return K.symbolic.has_value(); }

  // ---- text
  std::string ref(int i) const;
  std::string idx(const IndexExpr &e) { return Ctx.str(e); }
  /// idx(e), parenthesized when it is not one token.
  std::string parenIdx(const IndexExpr &e);
  std::string comment(int i) const;
  /// The expression of Compute value `i`.
  std::string computeText(int i) const;
  /// The expression of Index or InRange value `i`, with `lc`'s element
  /// index per lane (in the lane loop `j`), or as lowered without `lc`.
  std::string indexValueText(int i, const LaneCtx *lc);

  CodeWriter W;
  const LoweredKernel &K;
  const Schedule &S;
  const std::string Name;
  IndexContext Ctx;
  const std::vector<bool> Need;
  /// passesUsing, with the stashes of the caches once they are declared.
  std::vector<uint32_t> Use;
  const std::string Idx; ///< the index type: int or long long
  std::vector<std::string> Names; ///< per value: its local's name
  /// Literals written as another value than the graph's: the attention
  /// kernels' scale times log2(e), their scores in log2 units
  /// (attentionScoresInLog2).
  std::map<int, double> LiteralAs;
  /// Per name of LoweredKernel::symbolic, the kernel parameter holding its size.
  std::vector<std::string> SizeParams;

private:
  /// The local named for reduction r in `names` (its IR name + suffix),
  /// chosen the first time it is asked for.
  std::string reductionLocal(std::map<int, std::string> &names, int r, const std::string &suffix);
  void loadInto(const std::string &dst, const KParam &p, const LaneAccess &a, unsigned vec);
  /// A row that starts mid-vector: `offset` with the position along the row
  /// (lc.x) named `position`, a variable defined by the emitted code.
  IndexExpr atRowPosition(const IndexExpr &offset, const LaneCtx &lc, const std::string &position);
  /// Loads this vector of a row that starts mid-vector into `dst`: whole
  /// (mj_load_row) at the offset that aligns the vectors, else lane by lane.
  void loadRowLanes(const std::string &dst, const KParam &p, const IndexExpr &offset,
                    const LaneCtx &lc);
  bool isCachedLoad(int i, const LaneCtx &lc) const;
  /// The stash of value `i` (cachedStashes), if the caches keep it.
  const KStash *stashOf(int i, const LaneCtx &lc) const;
  std::vector<KStash> Stashes;

  /// What the phases of one elementWork call share: the values and stores of
  /// the pass, and the per-lane names the loads and output vectors get.
  struct ElementWork {
    ElementWork(int pass, const LaneCtx &lc) : pass(pass), lc(lc) {}
    int pass;
    const LaneCtx &lc;
    std::vector<int> values, stores;
    bool vec = false;    ///< lanes of lc.vec > 1 elements
    bool midRow = false; ///< rows start mid-vector (lc.alignedOffset)
    std::string laneGuard; ///< predicates a lane's accumulation ("if (inRow) ")
    std::map<int, std::string> laneExpr; ///< value -> its per-lane expression
    std::map<int, std::string> outArray; ///< store -> its output vector
    std::map<int, LaneAccess> storeAccess;
    std::map<int, std::string> onlineIn; ///< online sum -> the lanes' values
    std::map<int, std::string> welfordIn; ///< Welford reduction -> the lanes' values
    /// `offset` is the one that aligns the vectors of a mid-row start.
    bool aligned(const IndexExpr &offset) const {
      return midRow && offset.key() == lc.alignedOffset->key();
    }
  };
  /// elementWork's phases, in order: loads, output vectors, then in the lane
  /// loop the values, accumulations and stores, then the vectors stored.
  void elementLoads(ElementWork &w);
  void elementOutputs(ElementWork &w);
  void laneValues(ElementWork &w);
  /// Compute value `i` in this lane: computed, or read back where a cache
  /// keeps it from an earlier pass (and kept where this pass is its stash's).
  void computeValue(ElementWork &w, int i);
  void laneAccumulations(ElementWork &w);
  void laneStores(ElementWork &w, const std::string &storeGuard);
  void vectorStores(ElementWork &w, const std::string &storeGuard);

  std::map<int, std::string> CacheNames, AccNames, AccIndexNames, OnlineMaxNames;
  std::map<int, std::string> WelfordMeanNames, WelfordCountNames;
};

} // namespace minijit
