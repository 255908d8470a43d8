//===- compiler/emit/ColumnReduction.cpp - reductions over strided columns ===//
// A block reduces 32 neighbouring columns (one per lane, so the loads of a
// warp are contiguous); `parts` warps split the rows of each column and meet
// in shared memory.
//===----------------------------------------------------------------------===//
#include "compiler/emit/KernelEmitter.h"

namespace minijit {

void emitColumnReduction(KernelEmitter &e, const ColumnSchedule &s) {
  CodeWriter &w = e.W;
  const LoweredKernel &k = e.K;
  const std::string &Idx = e.Idx;
  std::string parts = std::to_string(s.parts);
  if (e.hasReductionOf(false))
    w.line("__shared__ float mj_col_f[" + parts + "][33];");
  if (e.hasReductionOf(true))
    w.line("__shared__ int mj_col_i[" + parts + "][33];");
  if (e.hasArgReduction())
    w.line("__shared__ int mj_col_at[" + parts + "][33]; // argmax/argmin positions");
  w.line("const int part = threadIdx.x / 32; // this thread's share of each column");
  bool partial = k.rows % 32 != 0;
  std::string raw = "(" + Idx + ")blockIdx.x * 32 + threadIdx.x % 32";
  if (partial) {
    w.line("const " + Idx + " rowRaw = " + raw + ";");
    w.line("const bool rowValid = rowRaw < " + std::to_string(k.rows) + ";");
    w.line("const " + Idx + " row = rowValid ? rowRaw : " + std::to_string(k.rows - 1) + ";");
  } else {
    w.line("const " + Idx + " row = " + raw + ";");
  }
  e.rowValues(0);
  LaneCtx lc;
  lc.vec = 1;
  lc.x = k.k;
  lc.extent = k.K;
  lc.var = "k";
  std::string storeGuard = partial ? "if (rowValid) " : "";
  for (int p = 0; p < k.passes; ++p) {
    w.line(e.passTitle(p));
    e.declareAccumulators(p);
    w.open("for (" + Idx + " k = part; k < " + std::to_string(k.K) + "; k += " + parts + ")");
    e.elementWork(p, lc, storeGuard);
    w.close();
    e.finishReductions(p, ReduceScope::Column, s.parts);
    e.rowValues(p + 1);
  }
  e.rowStores(partial ? "part == 0 && rowValid" : "part == 0");
  w.raw("}\n");
}

} // namespace minijit
