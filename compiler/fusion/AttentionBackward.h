//===- compiler/fusion/AttentionBackward.h - attention's backward -*- C++ -*-===//
// Reads, in the fused graph, the backward that autodiff (ir/Autodiff.cpp)
// makes of an attention findAttention recognises: dV = P^T dO, dP = dO V^T,
// the softmax's backward, the score work's derivative, dQ = dS K and
// dK = dS^T Q. It is FlashAttention-2's backward, which recomputes P from
// Q, K and the row's log-sum-exp instead of storing the scores; a backward
// it does not take gets a typed reason (a FusionReason) instead.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/fusion/Attention.h"

#include <optional>
#include <vector>

namespace minijit {

/// One step of the score work's derivative, from the logits' gradient back
/// to the scores': the gradient of op's scores operand.
struct ScoreWorkStep {
  ValueId forward = -1;  ///< the score work's value (an op on the scores' path)
  ValueId gradient = -1; ///< the gradient it gives the scores' path below it
  /// A scale by a literal that the matmul rewrites moved after dQ's and
  /// dK's products (`gradient` is then the unscaled one it passes on).
  bool movedAfterProducts = false;
};

/// The backward of one attention, as autodiff writes it.
struct AttentionBackwardMatch {
  ValueId dOut = -1;    ///< dO, the gradient of O (what dV and dP read)
  ValueId dProbs = -1;  ///< dP = dO @ V^T
  ValueId dShifted = -1; ///< dS = P * (dP - rowsum(dP * P)), the softmax's backward
  ValueId dLogits = -1; ///< dS plus the max's share (zero but for rounding)
  ValueId dScores = -1; ///< dS through the score work's derivative
  /// The products the kernels would store, -1 where autodiff made none (an
  /// operand that needs no gradient): dQ = dScores @ K, dK = dScores^T @ Q,
  /// dV = P^T @ dO.
  ValueId dq = -1, dk = -1, dv = -1;
  /// From the logits down to the scores (the logits first).
  std::vector<ScoreWorkStep> steps;
  /// Every value of the backward that reads the forward's scores or their
  /// gradients (the products dq, dk, dv and dP included), in graph order.
  std::vector<ValueId> values;
  bool scale = false, mask = false;
};

/// What findAttentionBackward makes of an attention's backward.
struct AttentionBackwardCandidate {
  std::optional<AttentionBackwardMatch> match; ///< set when the backward is recognised
  FusionReason refused;                        ///< why not, when match is unset
};

/// The backward of attention `fwd` in `g`: nullopt when nothing but the
/// forward reads its scores and probabilities, or when one of them is a
/// graph output (then the scores are stored for that, not for a backward).
std::optional<AttentionBackwardCandidate> findAttentionBackward(const Graph &g,
                                                                const AttentionMatch &fwd);

/// Why attention `fwd`, refused because `stored` (AttentionStored) is in
/// memory, keeps the scores: its backward's reason (recognised, or what
/// it does not take) when a backward reads them, else `stored` itself.
FusionReason attentionBackwardReason(const Graph &g, const AttentionMatch &fwd,
                                     const FusionReason &stored);

/// "dQ %dq, dK %dk, dV %dv, scale, causal mask" for --emit=fused.
std::string describeAttentionBackward(const Graph &g, const AttentionMatch &fwd,
                                      const AttentionBackwardMatch &b);

} // namespace minijit
