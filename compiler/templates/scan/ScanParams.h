//===- compiler/templates/scan/ScanParams.h - the scan's parameters -*- C++ -*-===//
// The parameters of the scan template (cumsum, cumprod along rows). Read by
// every stage from scheduling on (compiler/templates/LaunchGeometry.h).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/LaunchGeometry.h"

namespace minijit {

/// A block per row; each tile of block * items elements: every thread scans
/// its `items` consecutive elements, a warp scan (shuffles) and a block scan
/// (shared memory, one value per warp) combine them, a carry joins the tiles.
struct ScanSchedule : LaunchGeometry {
  unsigned items = 1; ///< consecutive elements per thread per tile
};

} // namespace minijit
