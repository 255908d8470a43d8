//===- compiler/schedule/SizeBuckets.cpp - one schedule for a bucket of sizes ===//
// A kernel whose outer extent is a product of named dimensions
// (LoweredKernel::symbolic) computes that extent at launch. Its schedule is
// chosen for the bucket (the extent rounded up to a power of two), so that
// every size of the bucket gives the same kernel text, compiled once; the
// grid is then sized for the extent of this binding. Lowering made sure the
// names only count rows (no stride depends on them), so a schedule that is
// valid for the bucket's largest size is valid for every smaller one. The
// chooser that asks these (chooseScheduleForSizes) sits above the templates'
// rules, in compiler/templates/ScheduleKernel.cpp; each template sizes its
// grid for the extent (KernelTemplate::sizeGridForExtent).
//===----------------------------------------------------------------------===//
#include "compiler/schedule/Schedule.h"

#include "llvm/Support/MathExtras.h"

namespace minijit {

namespace {

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

} // namespace

LoweredKernel atBucketExtent(const LoweredKernel &k) {
  return withExtent(k, bucketExtent(k.symbolic->extent, outerExtent(k)));
}

} // namespace minijit
