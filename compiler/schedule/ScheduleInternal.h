//===- compiler/schedule/ScheduleInternal.h - one function per template -*- C++ -*-===//
// Used only inside compiler/schedule/: each template's rules, and the checks
// of the override keys several templates share.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/schedule/Schedule.h"

#include <optional>
#include <string>

namespace minijit::detail {

Schedule pointwiseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                           const ScheduleOverrides &o);
/// Inner rows or outer columns, whichever the layout of the largest load asks for.
Schedule reductionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                           const ScheduleOverrides &o);
Schedule matmulSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                        const ScheduleOverrides &o);
/// cumsum/cumprod: a block per row (schedule/ScanSchedule.cpp).
Schedule scanSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                      const ScheduleOverrides &o);

/// Throws CompileError "schedule override: WHY".
[[noreturn]] void badOverride(const std::string &why);

/// The widest vector whose accesses of the kernel's widest type are 16 bytes.
unsigned maxVecFor(const LoweredKernel &k);

/// The `vec` override checked against the kernel (a power of two, at most 16
/// bytes of its widest element); nullopt when not set.
std::optional<unsigned> vecOverride(const LoweredKernel &k, const ScheduleOverrides &o);

bool isPow2(int64_t v);

} // namespace minijit::detail
