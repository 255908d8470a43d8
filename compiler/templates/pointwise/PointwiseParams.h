//===- compiler/templates/pointwise/PointwiseParams.h - pointwise parameters -*- C++ -*-===//
// The parameters of the pointwise family's templates: plain pointwise (vectors
// of elements) and the transpose (tiles through shared memory). Read by every
// stage from scheduling on (compiler/templates/LaunchGeometry.h).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/LaunchGeometry.h"

#include <vector>

namespace minijit {

struct PointwiseSchedule : LaunchGeometry {
  unsigned vec = 1;   ///< elements per vector access (16 bytes of the widest type)
  unsigned items = 1; ///< vectors per thread
  int64_t numVec = 0; ///< vectors covered by the vector loop
  bool tail = false;  ///< numel % vec elements left for a scalar loop
};

/// A pointwise kernel some of whose loads are contiguous along another axis
/// of the domain than its innermost one (a permute that moves the innermost
/// axis): the domain is cut into 32 x 32 tiles over that axis (`axis`, a
/// positions) and the innermost one (c positions). The block first reads
/// the transposed operands' tiles along `axis` (coalesced) into shared memory,
/// then does the element work along the innermost axis (coalesced stores),
/// reading those operands from the tiles. `outer` counts the tiles' other
/// coordinates (the domain's other axes, flattened).
struct TransposeSchedule : LaunchGeometry {
  int axis = 0;                  ///< the domain axis the transposed loads are contiguous along
  int64_t a = 1, c = 1, outer = 1; ///< extents: that axis, the innermost axis, the others
  unsigned tile = 32;            ///< tile edge
  unsigned rowsPerPass = 8;      ///< elements: block = tile x rowsPerPass threads
  /// 16-byte vectors: the tiled operands read `vec` positions along `axis`
  /// at a time, the element work `vec` along the innermost axis (1: elements)
  unsigned vec = 1;
  std::vector<int> tiled;        ///< the loads (LoweredKernel::values) staged in shared memory
  int64_t tilesA = 1, tilesC = 1;
};

} // namespace minijit
