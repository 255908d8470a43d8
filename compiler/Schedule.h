//===- compiler/Schedule.h - fixed kernel templates and their knobs -*- C++ -*-===//
// A schedule picks a template for a lowered kernel (pointwise, inner or outer
// reduction) and its parameters (block size, vector width, threads per row,
// items per thread) from the kernel's sizes and the device. Printable and
// deterministic: the same kernel and device give the same schedule.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Lowering.h"
#include "runtime/DeviceProperties.h"

#include <string>

namespace minijit {

enum class ScheduleKind {
  Pointwise, ///< vectors of elements, several per thread, scalar tail
  InnerRow,  ///< reduce contiguous rows: T threads per row (sub-warp, warp or block)
  OuterCol,  ///< reduce strided columns: 32 columns per block, the rows split over parts
  MatmulSimt, ///< f32 matmul on the CUDA cores: shared-memory tiles, a TM x TN block per thread
  MatmulMma,  ///< f16/bf16 matmul on the tensor cores: mma.sync m16n8k16, ldmatrix, cp.async
};

struct Schedule {
  ScheduleKind kind = ScheduleKind::Pointwise;
  unsigned block = 256;  ///< threads per block
  int64_t grid = 1;      ///< blocks
  unsigned vec = 1;      ///< elements per vector access (16 bytes of the widest type)
  // Pointwise
  unsigned items = 1;    ///< vectors per thread
  int64_t numVec = 0;    ///< vectors covered by the vector loop
  bool tail = false;     ///< numel % vec elements left for a scalar loop
  // InnerRow
  unsigned threadsPerRow = 32;
  unsigned rowsPerBlock = 1;
  unsigned itemsPerThread = 1; ///< vectors per thread per row, when cached
  bool cached = true;          ///< the row's loads are kept in registers across passes
  /// Blocks sharing one row (few, long rows): each reduces a chunk of
  /// `chunk` vectors, and the last block of the row to finish combines the
  /// partial results (in a fixed order) and runs what follows the reduction.
  unsigned splits = 1;
  int64_t chunk = 0;
  // OuterCol
  unsigned parts = 8;          ///< threads sharing one column
  // Matmul
  unsigned bm = 128, bn = 128, bk = 16; ///< block tile
  unsigned tm = 8, tn = 8;              ///< MatmulSimt: outputs per thread
  unsigned warpsM = 2, warpsN = 4;      ///< MatmulMma: warps per block
  unsigned stages = 2;                  ///< k-slices of the tiles in flight
  unsigned fragBuffers = 1;             ///< MatmulMma: 2 loads the next fragments during the mma
  unsigned sharedBytes = 0;             ///< MatmulMma: dynamic shared memory per block
  bool vecA = false, vecB = false;      ///< 16-byte loads of A / B tiles
  int64_t tilesM = 1, tilesN = 1;

  /// One line for --emit=fused, e.g. "inner row: 32 threads per row, ...".
  std::string describe() const;
};

/// Chooses the template and its parameters. `overrides` ("key=value,...",
/// from CompileOptions or $MINIJIT_SCHEDULE) sets parameters by hand for
/// experiments: block, vec, items (pointwise); tpr (threads per row), block,
/// vec, cached (inner rows); parts (outer columns); tile (the matmul block
/// tile's height, one of the template's tiles), and for tensor-core matmuls
/// bm, bn, bk, stages, frag, wm and wn (warps along m and n). Keys that do
/// not apply to a kernel's template are ignored; unknown keys or bad values
/// throw CompileError.
Schedule chooseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                        const std::string &overrides = "");

/// How an access behaves across the `vec` lanes of a vector, when the
/// element index `x` (LoweredKernel::elem or LoweredKernel::k) is split as
/// x = vec*xv + j.
struct LaneAccess {
  enum class Kind { Same, Contiguous, Gather } kind = Kind::Same;
  IndexExpr base;                   ///< offset at lane 0, over xv
  std::vector<IndexExpr> perLane;   ///< Gather: the offset of each lane
};

/// Splits `x` (extent `extent`, a multiple of `vec`) as vec*xv + j in `ctx`,
/// with `xv` named `vecName`, and classifies `offset`: the same element for
/// every lane, contiguous and aligned to `vec`, or a gather.
LaneAccess analyzeLanes(IndexContext &ctx, const IndexExpr &offset, const IndexExpr &x,
                        int64_t extent, unsigned vec, const std::string &vecName);

} // namespace minijit
