//===- compiler/fusion/FusionReason.h - why a value is stored ---*- C++ -*-===//
// Every boundary between kernels has a reason: an enumerator naming the rule,
// the values (and numbers) it is about, and one function that prints it. The
// fusion pass and lowering produce them; `--emit=fused` prints them.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/SmallVector.h"

#include <string>

namespace minijit {

/// The rule that stores a value (or keeps a root apart). The comment of each
/// enumerator lists its `values` and `numbers`, in order.
enum class FusionReasonKind {
  None,                ///< not stored
  GraphOutput,         ///< -
  FusionOff,           ///< -
  MatmulOperand,       ///< operand, matmul: operands are read from memory
  MatmulFeedsMatmul,   ///< producer matmul, consumer matmul
  MatmulMeetsReduction, ///< matmul, reduction, the root where they meet
  MatmulShape,         ///< root, matmul: the root is not over the matmul's shape
  MatmulOwnKernel,     ///< matmul: read by a kernel that is not its own
  MatmulMoved,         ///< matmul: read at another element (a view moves it)
  MatmulLayout,        ///< operand, matmul: no row and column strides
  ReductionFeedsOtherDomain, ///< reduction, the kernel's reduction it feeds
  RootShape,           ///< root, the kernel's reduction: neither domain nor row shaped
  ReductionOtherDomain, ///< reduction: reduces another domain than its consumer's kernel
  ReductionOtherRow,   ///< reduction: read at another row than it reduces
  TooManyPasses,       ///< reduction; numbers: the pass it would be, the most passes
  SharedReduction,     ///< reduction; numbers: two kernels that need it
  CostlyRecompute,     ///< value; numbers: its cost in ops, two kernels that need it
  ScanOwnKernel,       ///< value: a scan (or a scan's input) stored for the scan kernel
  KernelTooLarge,      ///< value, a root of the kernel it splits; numbers: the kernel's code weight, the most
  AttentionOperand,    ///< operand, attention product: its operands are read from memory
  AttentionOwnKernel,  ///< attention product: its kernel ends at the product
  // Why an attention-shaped product keeps the unfused kernels (findAttention,
  // FusionPlan::notAttention): not a reason to store anything.
  AttentionStored,     ///< value inside the attention, attention product
  AttentionNamedSizes, ///< attention product
  AttentionHeadDim,    ///< attention product; numbers: the head dim, the least, the most, its multiple
  AttentionShortRows,  ///< attention product; numbers: its keys, the least
  // Why the backward of an attention (compiler/fusion/AttentionBackward.h)
  // keeps the scores stored.
  AttentionBackward,   ///< attention product, the stored value, then its dQ, dK, dV products made
  AttentionBackwardSoftCap,   ///< the tanh, attention product
  AttentionBackwardScoreWork, ///< the score work's value, attention product
  AttentionBackwardBias,      ///< what reads the bias's gradient, attention product
  AttentionBackwardRead,      ///< what reads a value of the backward, attention product
  // Stored for an attention's fused backward.
  AttentionBackwardStats,     ///< the rows' max or sum, attention product
  AttentionBackwardValue,     ///< what it reads or writes, attention product
};

struct FusionReason {
  FusionReasonKind kind = FusionReasonKind::None;
  llvm::SmallVector<ValueId, 3> values;
  llvm::SmallVector<int64_t, 3> numbers;

  bool empty() const { return kind == FusionReasonKind::None; }
};

/// The reason in words, as `--emit=fused` prints it ("graph output", "reduction
/// %m is needed by kernels k0 and k1; it is computed once and stored"); empty
/// for FusionReasonKind::None.
std::string describeReason(const Graph &g, const FusionReason &r);

} // namespace minijit
