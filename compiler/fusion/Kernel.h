//===- compiler/fusion/Kernel.h - what the fusion pass decides --------*- C++ -*-===//
// A FusionPlan is data: which values each kernel computes and stores, over
// which iteration domain, and why every stored intermediate is stored. It is
// printed by `minijit compile --emit=fused` and tested directly.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/fusion/FusionReason.h"
#include "ir/Graph.h"

#include <string>
#include <vector>

namespace minijit {

enum class KernelKind {
  Pointwise, ///< one element per thread (or vector lane) over the domain
  Reduction, ///< rows of the domain reduced over `reducedAxes`, with prologue and epilogue
  Matmul,    ///< one matmul over the domain (its result's shape), with an elementwise epilogue
  Scan,      ///< rows of the domain scanned along `reducedAxes` (one axis), with a prologue
  /// softmax(g(A @ B)) @ V over the domain (O's shape), the scores never
  /// stored (compiler/fusion/Attention.h); `matmul` is the last product
  Attention,
  /// The backward of an Attention (compiler/fusion/AttentionBackward.h),
  /// `matmul` its product with V: dK and dV, a block per tile of keys
  AttentionBackwardKV,
  /// dQ, a block per tile of queries
  AttentionBackwardQ,
};

/// An attention's backward kernels.
inline bool isAttentionBackward(KernelKind k) {
  return k == KernelKind::AttentionBackwardKV || k == KernelKind::AttentionBackwardQ;
}

/// The attention template's kernels, forward and backward: they end at the
/// values they store (no epilogue joins them).
inline bool isAttentionKind(KernelKind k) {
  return k == KernelKind::Attention || isAttentionBackward(k);
}

/// What a kernel needs before it can be built: `node` stored by a kernel of
/// its own (a reduction read at another row's index, a kernel too large, ...).
struct StoreRequest {
  ValueId node;
  FusionReason reason;
  ValueId root = -1; ///< the stored value whose lowering ran into it
};

/// Reduction and scan kernels work row by row: `row` and `k` index them.
inline bool isRowKernel(KernelKind k) { return k == KernelKind::Reduction || k == KernelKind::Scan; }

/// One kernel of the plan.
struct KernelGroup {
  KernelKind kind = KernelKind::Pointwise;
  /// Pointwise: the shape of the stored values. Reduction: the shape of the
  /// reduced tensor (every reduction in the kernel reduces this shape).
  Shape domain;
  DimVector reducedAxes;       ///< Reduction only, sorted
  ValueId matmul = -1;         ///< Matmul: the matmul node; Attention: the product with V
  std::vector<ValueId> roots;  ///< values the kernel stores, in graph order
  std::vector<ValueId> held;   ///< every value it computes (roots and inlined), in graph order
  std::vector<ValueId> reads;  ///< stored values and inputs it loads, in graph order

  int64_t rows() const;        ///< Reduction: product of the kept dims; Pointwise: 1
  int64_t reducedSize() const; ///< Reduction: product of the reduced dims; Pointwise: 1
};

struct FusionPlan {
  bool fusion = true;
  std::vector<KernelGroup> kernels; ///< in launch order
  /// Per graph value: the kernel that stores it, or -1 (inputs, inlined values).
  std::vector<int> storedBy;
  /// Per graph value: why it is stored in memory (graph output, fusion is
  /// off, a reduction read outside its row ...); empty when it is not.
  /// describeReason prints one.
  std::vector<FusionReason> storeReason;
  /// Per graph value: why it was kept out of the kernel that computes a value
  /// it reads (empty when it was not).
  std::vector<FusionReason> apartReason;
  /// Per graph value: why an attention-shaped product (the value) keeps the
  /// unfused kernels (findAttention); empty for every other value.
  std::vector<FusionReason> notAttention;
};

} // namespace minijit
