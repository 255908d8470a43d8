//===- ir/ErrorBoundInternal.h - what the bound rules and pass share -*- C++ -*-===//
// Constants and the ulp measure that the per-op rules (ErrorBoundRules.cpp)
// and the pass that applies them tensor by tensor (ErrorBound.cpp) share.
// Used only inside ir/.
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <limits>

namespace minijit::detail {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// f32's unit roundoff, 2^-24.
constexpr double kU32 = 0x1p-24;

/// `ulps` ulps of an f32 result of size `y` (an ulp is at most 2^-23 |y|,
/// and 2^-149 among subnormals).
inline double ulpsOf(double ulps, double y) { return ulps * (0x1p-23 * std::fabs(y) + 0x1p-149); }

} // namespace minijit::detail
