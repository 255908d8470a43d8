//===- compiler/templates/rows/RowsInternal.h - inner rows and outer columns -*- C++ -*-===//
// Used only inside compiler/templates/rows/: the reductions' rules
// (ReductionSchedule.cpp) and bodies (RowReduction.cpp, ColumnReduction.cpp);
// ReductionTemplates.cpp puts them behind the KernelTemplate interface.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/emit/KernelEmitter.h"
#include "compiler/schedule/Schedule.h"

#include <functional>
#include <string>

namespace minijit {

/// The body of each template, after KernelEmitter::header.
void emitRowReduction(KernelEmitter &e, const RowSchedule &s);
void emitColumnReduction(KernelEmitter &e, const ColumnSchedule &s);

/// Whether some reduction of `k` is finished in pass `pass`, or after it.
inline bool reducesIn(const LoweredKernel &k, int pass) {
  for (const KReduction &r : k.reductions)
    if (r.pass == pass)
      return true;
  return false;
}
inline bool reducesAfter(const LoweredKernel &k, int pass) {
  for (const KReduction &r : k.reductions)
    if (r.pass > pass)
      return true;
  return false;
}

/// Where mj_partial holds word `slot` of block `part`'s partials of this
/// row (column): the blocks of a row in order, each its words.
inline std::function<std::string(int)> partialAt(const SplitWorkspace &ws,
                                                 const std::string &part) {
  return [ws, part](int slot) {
    std::string i = "row * " + std::to_string(ws.splits) + " + " + part;
    return ws.words == 1
               ? i
               : "(" + i + ") * " + std::to_string(ws.words) + " + " + std::to_string(slot);
  };
}

namespace detail {

/// Inner rows or outer columns, whichever the layout of the largest load asks
/// for; `clusters`: the target has clusters of blocks (sm_90), over which
/// long rows may be split. Refuses an override value the kernel cannot take.
Expected<Schedule> reductionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o, bool clusters);

} // namespace detail

} // namespace minijit
