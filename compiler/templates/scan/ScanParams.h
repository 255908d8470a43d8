//===- compiler/templates/scan/ScanParams.h - the scan's parameters -*- C++ -*-===//
// The parameters of the scan template (cumsum, cumprod along rows). Read by
// every stage from scheduling on (compiler/templates/LaunchGeometry.h).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/LaunchGeometry.h"

namespace minijit {

/// Tiles of block * items elements: every thread scans its `items`
/// consecutive elements, a warp scan (shuffles) and a block scan (shared
/// memory, one value per warp) combine them. A block walks a row's tiles,
/// a carry joining them; or, chained(), a block scans one tile and adds
/// the tiles before it by a decoupled look-back (Merrill and Garland's
/// single-pass scan), where rows are too few to fill the machine a block
/// each.
struct ScanSchedule : LaunchGeometry {
  unsigned items = 1; ///< consecutive elements per thread per tile
  /// Blocks a row: 1, or its tiles' count where they are chained (the split
  /// workspace holds a status word per tile and the blocks' ticket counter).
  unsigned splits = 1;
  bool chained() const { return splits > 1; }
};

} // namespace minijit
