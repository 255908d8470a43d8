//===- compiler/templates/LaunchGeometry.h - what every template's launch shares -*- C++ -*-===//
// The base of every template's parameter struct (templates/<family>/*Params.h):
// the block, the grid, the launch bounds and the cluster. With the families'
// parameter headers and Templates.def it is the templates' lowest layer, read
// by every stage from scheduling on (scripts/check_layering.py).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace minijit {

/// Every template launches `grid` blocks of `block` threads.
///
/// A parameter struct may also have these members, which the schedule stage
/// asks of every schedule that has them (compiler/schedule/Schedule.cpp):
/// `sharedBytes` (dynamic shared memory of the launch), `staticSharedBytes()`
/// (the kernel's static shared memory), `estimatedRegisters()` (registers a
/// thread needs, before ptxas says; else 32) and `walked()` (the units of
/// work a persistent grid walks in rounds).
struct LaunchGeometry {
  unsigned block = 256; ///< threads per block
  int64_t grid = 1;     ///< blocks
  unsigned minBlocksPerSM = 0; ///< __launch_bounds__'s second argument; 0: none
  /// Blocks per cluster (sm_90: __cluster_dims__(cluster, 1, 1), the grid a
  /// multiple of it): blocks the hardware runs at once, on the SMs of one
  /// GPC, which may wait for each other at a barrier; 1: no clusters.
  unsigned cluster = 1;
};

} // namespace minijit
