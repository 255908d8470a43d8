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
  ValueId dOut = -1;     ///< dO, the gradient of O (what dV and dP read)
  ValueId dProbs = -1;   ///< dP = dO @ V^T
  ValueId dShifted = -1; ///< dS = P * (dP - rowsum(dP * P)), the softmax's backward
  ValueId dLogits = -1;  ///< dS plus the max's share (zero but for rounding)
  ValueId dScores = -1;  ///< dS through the score work's derivative
  /// The products the kernels would store, -1 where autodiff made none (an
  /// operand that needs no gradient): dQ = dScores @ K, dK = dScores^T @ Q,
  /// dV = P^T @ dO.
  ValueId dq = -1, dk = -1, dv = -1;
  /// From the logits down to the scores (the logits first).
  std::vector<ScoreWorkStep> steps;
  /// Every value of the backward that reads the forward's scores or their
  /// gradients (the products dq, dk, dv and dP included), in graph order.
  std::vector<ValueId> values;
  bool scale = false, mask = false, softcap = false;
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
/// memory, keeps the scores: what its backward's recognition or kernels do
/// not take, when a backward reads them; else `stored` itself.
FusionReason attentionBackwardReason(const Graph &g, const AttentionMatch &fwd,
                                     const FusionReason &stored);

/// True when `fwd` has a backward the fused kernels take: the forward then
/// stores its rows' max and sum for it.
bool attentionBackwardFuses(const Graph &g, const AttentionMatch &fwd);

/// Why the fused kernels (f32 on the CUDA cores) do not take backward `b`
/// of `fwd`; empty when they do.
FusionReason attentionBackwardKernelsRefusal(const Graph &g, const AttentionMatch &fwd,
                                             const AttentionBackwardMatch &b);

/// A value's part in an attention whose backward the fused kernels take.
struct AttentionPart {
  /// The kernel that stores it: Attention (O, the rows' max and sum),
  /// AttentionBackwardKV (dK, dV) or AttentionBackwardQ (dQ); Pointwise for
  /// a value no attention kernel stores.
  KernelKind kind = KernelKind::Pointwise;
  ValueId out = -1;    ///< the attention's product with V
  FusionReason stored; ///< why fusion stores it from the start (empty: it need not)
};

/// Per value of `g` (sized g.size()): its part in each attention whose
/// backward the fused kernels take. The forward stores its max and sum for
/// the backward; dO, O and the products dQ, dK, dV are stored.
std::vector<AttentionPart> attentionParts(const Graph &g);

/// "dQ %dq, dK %dk, dV %dv, scale, causal mask" for --emit=fused.
std::string describeAttentionBackward(const Graph &g, const AttentionMatch &fwd,
                                      const AttentionBackwardMatch &b);

} // namespace minijit
