//===- compiler/templates/pointwise/PointwiseInternal.h - pointwise and transpose -*- C++ -*-===//
// Used only inside compiler/templates/pointwise/: the family's rules
// (PointwiseSchedule.cpp, TransposeSchedule.cpp), its bodies (Pointwise.cpp,
// Transpose.cpp) and what they share; PointwiseTemplates.cpp puts them
// behind the KernelTemplate interface.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/emit/KernelEmitter.h"
#include "compiler/schedule/Schedule.h"

#include <optional>

namespace minijit {

/// The body of each template, after KernelEmitter::header.
void emitPointwise(KernelEmitter &e, const PointwiseSchedule &s);
void emitTranspose(KernelEmitter &e, const TransposeSchedule &s);

/// The element index of a transpose kernel's domain in the tile's
/// coordinates, variables of `ctx` named `ca` (along s.axis), `cc` (the
/// innermost axis) and `outer` (the other axes, flattened row-major).
IndexExpr transposeElement(IndexContext &ctx, const LoweredKernel &k, const TransposeSchedule &s);

namespace detail {

/// The family's rules: the transpose template where some load crosses the
/// innermost axis (transposeSchedule), else vectors of elements. Refuses an
/// override value the kernel cannot take.
Expected<Schedule> pointwiseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o);

/// Pointwise kernels whose loads cross the innermost axis: the tiled
/// template, or nullopt when no load does (or the tiles would be mostly empty).
Expected<std::optional<Schedule>> transposeSchedule(const LoweredKernel &k,
                                                    const DeviceProperties &dev,
                                                    const ScheduleOverrides &o);

} // namespace detail

} // namespace minijit
