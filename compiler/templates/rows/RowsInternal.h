//===- compiler/templates/rows/RowsInternal.h - inner rows and outer columns -*- C++ -*-===//
// Used only inside compiler/templates/rows/: the reductions' rules
// (ReductionSchedule.cpp) and bodies (RowReduction.cpp, ColumnReduction.cpp);
// ReductionTemplates.cpp puts them behind the KernelTemplate interface.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/emit/KernelEmitter.h"
#include "compiler/schedule/Schedule.h"

namespace minijit {

/// The body of each template, after KernelEmitter::header.
void emitRowReduction(KernelEmitter &e, const RowSchedule &s);
void emitColumnReduction(KernelEmitter &e, const ColumnSchedule &s);

namespace detail {

/// Inner rows or outer columns, whichever the layout of the largest load asks
/// for; `clusters`: the target has clusters of blocks (sm_90), over which
/// long rows may be split. Refuses an override value the kernel cannot take.
Expected<Schedule> reductionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o, bool clusters);

} // namespace detail

} // namespace minijit
