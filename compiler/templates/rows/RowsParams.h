//===- compiler/templates/rows/RowsParams.h - reductions' parameters -*- C++ -*-===//
// The parameters of the reduction family's templates: inner rows (contiguous
// rows, T threads each) and outer columns (strided columns, 32 a block).
// Read by every stage from scheduling on (compiler/templates/LaunchGeometry.h).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/LaunchGeometry.h"

#include <optional>

namespace minijit {

struct RowSchedule : LaunchGeometry {
  unsigned vec = 1;
  unsigned threadsPerRow = 32;
  unsigned rowsPerBlock = 1;
  unsigned itemsPerThread = 1; ///< vectors per thread per row, when cached
  bool cached = true;          ///< the row's loads are kept in registers across passes
  /// A row read in a loop (not cached): each thread loads this many of its
  /// vectors (t apart) before it works on them, so their loads are in
  /// flight together and an online sum rescales once for all of them; 1:
  /// one vector at a time.
  unsigned ahead = 1;
  /// Blocks sharing one row (few, long rows): each reduces a chunk of
  /// `chunk` vectors. With one pass the last block of the row to finish
  /// combines the partial results (in a fixed order) and runs what follows
  /// the reduction. With several (`waits`), the row's blocks meet at a
  /// barrier after each pass, every one combines the partials in the same
  /// order and goes on with its chunk: all of the grid must be resident at
  /// once, so the kernel asks for `minBlocksPerSM` in its launch bounds and
  /// the grid is at most that many blocks per SM.
  /// With `cluster` (of LaunchGeometry) = splits, the row's blocks are a
  /// cluster (sm_90) and meet at the cluster's barrier: no more of the grid
  /// need be resident, so rows too long for one block's registers are split
  /// over the SMs of a cluster and kept in registers there (`waits` too).
  unsigned splits = 1;
  int64_t chunk = 0;
  bool waits = false;
  /// Rows whose length no vector width divides (50257, 3001) start anywhere
  /// in a vector. Set, the vectors are aligned to memory as the rows of this
  /// load (a value of the kernel) fall: a row's first and last vectors hold
  /// lanes of its neighbours, which are masked. Unset, every row starts at a
  /// vector.
  std::optional<int> alignedTo;

  /// Vectors one row covers: K / vec; when rows start mid-vector, at most
  /// ceil((K + vec - 1) / vec), for a row that starts up to vec - 1 elements
  /// into its first vector.
  int64_t vectorsPerRow(int64_t rowLength) const {
    return alignedTo ? (rowLength + 2 * int64_t(vec) - 2) / vec : rowLength / vec;
  }
};

struct ColumnSchedule : LaunchGeometry {
  unsigned parts = 8; ///< threads sharing one column
  /// Blocks sharing one group of 32 columns (few, long columns): each
  /// reduces `chunk` positions of the columns. With one pass the last
  /// block of the group to finish combines the partial results in a fixed
  /// order. With several (`waits`), the group's blocks meet at a barrier
  /// after each pass and every one combines the partials in the same order:
  /// all of the grid is resident at once (`minBlocksPerSM` in the launch
  /// bounds, the grid at most that many blocks an SM).
  unsigned splits = 1;
  int64_t chunk = 0;
  bool waits = false;
};

} // namespace minijit
