//===- compiler/schedule/ScheduleInternal.h - what the templates' rules share -*- C++ -*-===//
// Used by compiler/schedule/ and by the templates' rules (in their family
// folders, compiler/templates/*/): refusals, the checks of the override
// keys several templates share, and small helpers of the rules. Each rule
// refuses (a returned Refusal) an override value the kernel cannot take.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/schedule/Schedule.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minijit::detail {

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

} // namespace minijit::detail
