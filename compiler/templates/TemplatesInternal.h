//===- compiler/templates/TemplatesInternal.h - shared by the template families -*- C++ -*-===//
// Inside compiler/templates/ and its family folders only: each template's
// getter (one line of Templates.def, defined in its family's folder), and
// the pieces their descriptions and candidates share.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/KernelTemplate.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace minijit::detail {

// One getter per template, defined in its family's folder: its one object.
#define MINIJIT_TEMPLATE(KIND, PARAMS, GETTER) const KernelTemplate &GETTER();
#include "compiler/templates/Templates.def"

/// a / b rounded up (a >= 0, b > 0).
inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// "grid 512", or "grid sized at launch" for a kernel that serves many sizes.
std::string gridWords(int64_t grid, GridText how);
/// " (32x16 tiles)", or " (m in tiles x 16)" where the tile count is sized
/// at launch.
std::string tileWords(int64_t tilesM, int64_t tilesN, GridText how);

/// Powers of two from `lo` to `hi`, `center` first, then outwards (the
/// nearest to the rules' choice first).
std::vector<int64_t> pow2Around(int64_t center, int64_t lo, int64_t hi);
/// Each of `bases` with `field` set to `value`.
std::vector<ScheduleOverrides> eachWith(const std::vector<ScheduleOverrides> &bases,
                                        std::optional<int64_t> ScheduleOverrides::*field,
                                        int64_t value);

} // namespace minijit::detail
