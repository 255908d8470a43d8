//===- compiler/schedule/SizeBuckets.cpp - one schedule for a bucket of sizes ===//
// A kernel whose outer extent is a product of named dimensions
// (LoweredKernel::symbolic) computes that extent at launch. Its schedule is
// chosen for the bucket (the extent rounded up to a power of two), so that
// every size of the bucket gives the same kernel text, compiled once; the
// grid is then sized for the extent of this binding. Lowering made sure the
// names only count rows (no stride depends on them), so a schedule that is
// valid for the bucket's largest size is valid for every smaller one. The
// chooser that asks these (chooseScheduleForSizes) sits above the templates'
// rules, in compiler/templates/ScheduleKernel.cpp.
//===----------------------------------------------------------------------===//
#include "compiler/schedule/Schedule.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace minijit {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// `k` as the rules see it at outer extent `extent`.
LoweredKernel withExtent(const LoweredKernel &k, int64_t extent) {
  LoweredKernel r = k;
  switch (k.kind) {
  case KernelKind::Pointwise: r.numel = extent; break;
  case KernelKind::Reduction:
  case KernelKind::Scan: r.rows = extent; break;
  case KernelKind::Matmul:
  case KernelKind::Attention:
  case KernelKind::AttentionBackwardKV:
  case KernelKind::AttentionBackwardQ:
    r.matmul->M = extent;
    r.numel = r.matmul->batch * extent * r.matmul->N;
    break;
  }
  return r;
}

void sizeTiles(MatmulTile &t, const KMatmul &mm) {
  t.tilesM = ceilDiv(mm.M, t.bm);
  t.grid = t.tilesM * t.tilesN * mm.batch;
}

} // namespace

LoweredKernel atBucketExtent(const LoweredKernel &k) {
  return withExtent(k, bucketExtent(k.symbolic->extent, outerExtent(k)));
}

bool sizeGridForExtent(Schedule &s, const LoweredKernel &k, const DeviceProperties &dev) {
  switch (s.kind()) {
  case ScheduleKind::Pointwise: {
    auto &p = std::get<PointwiseSchedule>(s.params);
    p.numVec = k.numel / p.vec;
    p.tail = k.numel % p.vec != 0;
    p.grid = std::max<int64_t>(1, ceilDiv(p.numVec, int64_t(p.block) * p.items));
    return true;
  }
  case ScheduleKind::InnerRow: {
    auto &r = std::get<RowSchedule>(s.params);
    r.grid = r.splits > 1 ? k.rows * r.splits : ceilDiv(k.rows, r.rowsPerBlock);
    return true;
  }
  case ScheduleKind::MatmulSimt:
    sizeTiles(std::get<MatmulSimtSchedule>(s.params), *k.matmul);
    return true;
  case ScheduleKind::MatmulMma:
    sizeTiles(std::get<MatmulMmaSchedule>(s.params), *k.matmul);
    return true;
  case ScheduleKind::MatmulWgmma: {
    auto &w = std::get<MatmulWgmmaSchedule>(s.params);
    w.tilesM = ceilDiv(k.matmul->M, w.bm);
    w.tiles = w.tilesM * w.tilesN * k.matmul->batch;
    w.grid = w.persistentGrid(dev.smCount);
    return true;
  }
  case ScheduleKind::OuterCol:
  case ScheduleKind::Transpose:
  case ScheduleKind::Scan:
  case ScheduleKind::Attention:
  case ScheduleKind::AttentionMma:
  case ScheduleKind::AttentionBackward: return false;
  }
  llvm_unreachable("bad schedule kind");
}

} // namespace minijit
