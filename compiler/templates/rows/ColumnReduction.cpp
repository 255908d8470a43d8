//===- compiler/templates/rows/ColumnReduction.cpp - reductions over strided columns ---===//
// A block reduces 32 neighbouring columns (one per lane, so the loads of a
// warp are contiguous); `parts` warps split the rows of each column and meet
// in shared memory. Few, long columns are split across blocks too: with one
// pass the last block of a group of columns to finish combines the partial
// results; with several the group's blocks meet at a barrier after each
// pass and each combines them.
//===----------------------------------------------------------------------===//
#include "compiler/templates/rows/RowsInternal.h"

#include "compiler/emit/ExprEmitter.h"

namespace minijit {

namespace {

/// Where word `slot` of split `split`'s partial of this thread's column lives
/// in mj_partial: that word of one split's partials of all columns side by
/// side, so that a warp (a column a lane) stores and loads one line, where a
/// column's splits side by side put its lanes a split count apart (a 32-byte
/// sector a lane: each block's combine of a 528-way split read eight times
/// the partials' bytes through L2).
std::function<std::string(int)> columnPartialAt(const SplitWorkspace &ws,
                                                const std::string &split) {
  return [ws, split](int slot) {
    std::string at = slot == 0 ? split : std::to_string(int64_t(slot) * ws.splits) + " + " + split;
    return "(" + at + ") * " + std::to_string(ws.rows) + " + row";
  };
}

/// This block's partials of pass `pass`'s reductions into mj_partial, by
/// the first part of each column.
void storePartials(KernelEmitter &e, const SplitWorkspace &ws, int pass, bool partial) {
  e.W.open(partial ? "if (part == 0 && rowValid)" : "if (part == 0)");
  for (size_t r = 0; r < e.K.reductions.size(); ++r)
    if (e.K.reductions[r].pass == pass)
      e.storePartial(static_cast<int>(r), columnPartialAt(ws, "split"));
  e.W.close();
}

/// Pass `pass`'s reductions from the partials of all the group's blocks:
/// the parts of a column take every parts-th block, in block order, then
/// combine (the same result every run, in every block that does it).
void combinePartials(KernelEmitter &e, const ColumnSchedule &s, const SplitWorkspace &ws,
                     int pass) {
  CodeWriter &w = e.W;
  const LoweredKernel &k = e.K;
  std::string splits = std::to_string(ws.splits);
  for (size_t r = 0; r < k.reductions.size(); ++r) {
    const KReduction &red = k.reductions[r];
    if (red.pass != pass)
      continue;
    int ri = static_cast<int>(r);
    std::vector<std::string> words = e.loadedPartial(ri, columnPartialAt(ws, "p"));
    const std::string &value = words[0];
    std::string position = words.size() > 1 ? words[1] : std::string();
    std::string acc = e.accName(ri);
    w.line(acc + " = " + e.accIdentity(ri) + ";");
    if (isArgReduction(red.op))
      w.line(e.accIndexName(ri) + " = " + e.secondIdentity(ri) + ";");
    w.line("#pragma unroll 4 // (the partials' loads in flight together)");
    w.open("for (int p = part; p < " + splits + "; p += " + std::to_string(s.parts) + ")");
    if (isArgReduction(red.op)) // the better (value, position) of the two, numpy's ties
      w.line(std::string("mj_arg_update<") + (red.op == OpKind::Argmax ? "true" : "false") +
             ">(" + acc + ", " + e.accIndexName(ri) + ", " + value + ", " + position + ");");
    else
      w.line(acc + " = " + reduceText(red.op, e.accIsInt(ri), e.accIsLong(ri)).functor + "::apply(" + acc + ", " +
             value + ");");
    w.close();
  }
  e.finishReductions(pass, ReduceScope::Column, s.parts, false);
}

/// Columns split over blocks, one pass: each block leaves its partial
/// results in mj_work (laid out as SplitWorkspace says) and counts itself
/// done; the last block of the group reads the partials back, combines
/// them in block order (the same result every run) and resets the counter
/// for the next launch.
void combineColumnSplits(KernelEmitter &e, const ColumnSchedule &s, bool partial) {
  CodeWriter &w = e.W;
  SplitWorkspace ws = splitWorkspace(e.K, s);
  w.line("// the columns' partial results meet in mj_work: a counter per group, then the partials");
  w.line("unsigned *const mj_count = mj_work, *const mj_partial = mj_work + " +
         std::to_string(ws.counters()) + ";");
  storePartials(e, ws, 0, partial);
  w.line("__threadfence(); // the partials are visible before the count says so");
  w.line("__syncthreads();");
  w.line("if (threadIdx.x == 0) mj_last = atomicAdd(&mj_count[group], 1u) == " +
         std::to_string(s.splits - 1) + "u;");
  w.line("__syncthreads();");
  w.line("if (!mj_last) return;");
  w.line("__threadfence();");
  combinePartials(e, s, ws, 0);
  w.line("if (threadIdx.x == 0) mj_count[group] = 0u; // ready for the next launch");
}

/// Columns split over blocks that meet after pass `pass` (barrier number
/// `barrier`; `last`: no reduction follows): each block leaves its partials
/// of the pass in mj_work and arrives; once all blocks of the group have,
/// every block reads the partials back and combines them in block order,
/// so all get the same value. After the last barrier the last block out
/// resets the group's counters for the next launch.
void exchangeColumnPartials(KernelEmitter &e, const ColumnSchedule &s, bool partial, int pass,
                            int barrier, bool last) {
  CodeWriter &w = e.W;
  SplitWorkspace ws = splitWorkspace(e.K, s);
  std::string splits = std::to_string(ws.splits);
  if (barrier == 0) {
    w.line("// the group's blocks meet in mj_work: arrivals and departures per group, then the "
           "partials");
    w.line("unsigned *const mj_arrived = mj_work, *const mj_left = mj_work + " +
           std::to_string(ws.counters() / 2) + ", *const mj_partial = mj_work + " +
           std::to_string(ws.counters()) + ";");
  }
  storePartials(e, ws, pass, partial);
  w.line("__threadfence(); // (the partials of every column, not only thread 0's)");
  w.line("mj_row_barrier(&mj_arrived[group], " + std::to_string(int64_t(s.splits) * (barrier + 1)) +
         "u); // all " + splits + " blocks of the group have left their partials");
  combinePartials(e, s, ws, pass);
  if (last)
    w.line("if (threadIdx.x == 0) mj_row_leave(&mj_arrived[group], &mj_left[group], " + splits +
           "u); // the last block out resets the counters");
}

} // namespace

void emitColumnReduction(KernelEmitter &e, const ColumnSchedule &s) {
  CodeWriter &w = e.W;
  const LoweredKernel &k = e.K;
  const std::string &Idx = e.Idx;
  std::string parts = std::to_string(s.parts);
  if (e.hasReductionOf(false))
    w.line("__shared__ float mj_col_f[" + parts + "][33];");
  if (e.hasReductionOf(true))
    w.line("__shared__ int mj_col_i[" + parts + "][33];");
  if (e.hasLongReduction())
    w.line("__shared__ long long mj_col_l[" + parts + "][33];");
  if (e.hasArgReduction())
    w.line("__shared__ int mj_col_at[" + parts + "][33]; // argmax/argmin positions");
  w.line("const int part = threadIdx.x / 32; // this thread's share of each column");
  bool split = s.splits > 1;
  std::string group = "blockIdx.x";
  if (split) {
    if (!s.waits)
      w.line("__shared__ bool mj_last; // this block is the last of its columns to finish");
    w.line("const " + Idx + " group = blockIdx.x / " + std::to_string(s.splits) +
           "; // the block's 32 columns");
    w.line("const " + Idx + " split = blockIdx.x % " + std::to_string(s.splits) +
           "; // the block's share of their positions");
    group = "group";
  }
  bool partial = k.rows % 32 != 0;
  std::string raw = "(" + Idx + ")" + group + " * 32 + threadIdx.x % 32";
  if (partial) {
    w.line("const " + Idx + " rowRaw = " + raw + ";");
    w.line("const bool rowValid = rowRaw < " + std::to_string(k.rows) + ";");
    w.line("const " + Idx + " row = rowValid ? rowRaw : " + std::to_string(k.rows - 1) + ";");
  } else {
    w.line("const " + Idx + " row = " + raw + ";");
  }
  e.rowValues(0);
  LaneCtx lc = LaneCtx::elements("k", k.k, k.K);
  std::string storeGuard = partial ? "if (rowValid) " : "";
  std::string first = "part", end = std::to_string(k.K);
  if (split) {
    std::string chunk = std::to_string(s.chunk);
    w.line("const " + Idx + " first = split * " + chunk + ", end = min(first + " + chunk + ", (" +
           Idx + ")" + std::to_string(k.K) + "); // this block's positions");
    first = "first + part";
    end = "end";
  }
  int barriers = 0;
  for (int p = 0; p < k.passes; ++p) {
    w.line(e.passTitle(p));
    e.declareAccumulators(p);
    // four loads in flight a thread: one at a time leaves DRAM waiting
    // (docs/PERFORMANCE_LOG.md, "Where three TF32 products pay; column
    // reductions four loads deep")
    w.line("#pragma unroll 4");
    w.open("for (" + Idx + " k = " + first + "; k < " + end + "; k += " + parts + ")");
    e.elementWork(p, lc, storeGuard);
    w.close();
    if (split && s.waits) {
      if (reducesIn(k, p)) {
        e.finishReductions(p, ReduceScope::Column, s.parts, false);
        exchangeColumnPartials(e, s, partial, p, barriers++, !reducesAfter(k, p));
        e.defineReductions(p);
      }
    } else if (split) {
      e.finishReductions(p, ReduceScope::Column, s.parts, false);
      combineColumnSplits(e, s, partial);
      e.defineReductions(p);
    } else {
      e.finishReductions(p, ReduceScope::Column, s.parts);
    }
    e.rowValues(p + 1);
  }
  // (every block of a group has the columns' values; the first stores them)
  std::string who = s.waits ? "part == 0 && split == 0" : "part == 0";
  e.rowStores(partial ? who + " && rowValid" : who);
  w.raw("}\n");
}

} // namespace minijit
