//===- compiler/templates/scan/ScanInternal.h - cumulative sums and products -*- C++ -*-===//
// Used only inside compiler/templates/scan/: the scan's rules
// (ScanSchedule.cpp) and body (Scan.cpp); ScanTemplate.cpp puts them behind
// the KernelTemplate interface.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/emit/KernelEmitter.h"
#include "compiler/schedule/Schedule.h"

namespace minijit {

/// The body, after KernelEmitter::header.
void emitScan(KernelEmitter &e, const ScanSchedule &s);

namespace detail {

/// cumsum/cumprod: a block per row. Refuses an override value the kernel
/// cannot take.
Expected<Schedule> scanSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                const ScheduleOverrides &o);

} // namespace detail

} // namespace minijit
