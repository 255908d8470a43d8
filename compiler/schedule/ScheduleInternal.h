//===- compiler/schedule/ScheduleInternal.h - one function per template -*- C++ -*-===//
// Used only inside compiler/schedule/: each template's rules, and the checks
// of the override keys several templates share.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/schedule/Schedule.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minijit::detail {

// Each template's rules refuse (a returned Refusal) an override value the
// kernel cannot take.
Expected<Schedule> pointwiseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o);
/// Inner rows or outer columns, whichever the layout of the largest load asks
/// for; `clusters`: the target has clusters of blocks (sm_90), over which
/// long rows may be split.
Expected<Schedule> reductionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o, bool clusters);
/// `wgmma`: the target has it (Target::hasWgmma), so f16/bf16 take the Hopper
/// template where TMA can read both operands.
Expected<Schedule> matmulSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                  const ScheduleOverrides &o, bool wgmma);
/// cumsum/cumprod: a block per row (schedule/ScanSchedule.cpp).
Expected<Schedule> attentionBackwardSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                             const ScheduleOverrides &o);
Expected<Schedule> attentionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o);
Expected<Schedule> scanSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                const ScheduleOverrides &o);

/// The refusal "schedule override: WHY".
Refusal refuse(const std::string &why);

/// What a step that adjusts a schedule in place returns: nothing, or why
/// the override it applies does not fit.
using MaybeRefusal = std::optional<Refusal>;

/// The widest vector whose accesses of the kernel's widest type are 16 bytes.
unsigned maxVecFor(const LoweredKernel &k);

/// The `vec` override checked against the kernel (a power of two, at most 16
/// bytes of its widest element); nullopt when not set.
Expected<std::optional<unsigned>> vecOverride(const LoweredKernel &k, const ScheduleOverrides &o);

bool isPow2(int64_t v);

/// The value of `e` with the named variables set (the others 0); nullopt
/// when that does not fix it.
std::optional<int64_t> valueAt(IndexContext &ctx, const IndexExpr &e,
                               const std::vector<std::pair<std::string, int64_t>> &vars);

/// Pointwise kernels whose loads cross the innermost axis: the tiled
/// template, or nullopt when no load does (or the tiles would be mostly empty).
Expected<std::optional<Schedule>> transposeSchedule(const LoweredKernel &k,
                                                    const DeviceProperties &dev,
                                                    const ScheduleOverrides &o);

} // namespace minijit::detail
