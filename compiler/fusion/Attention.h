//===- compiler/fusion/Attention.h - attention written as plain ops -*- C++ -*-===//
// Finds, in the fused graph, an attention written as plain ops: a product
// S = A @ B, elementwise work on S (a scale, a mask from iota and where, a
// bias, a soft-cap), a softmax over S's last axis as max, sub, exp, sum and
// div, and the product of the probabilities with V. Fusion makes it one
// kernel of the attention template; a shape the template cannot take keeps
// today's kernels and says why (a FusionReason, printed by --emit=fused).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/fusion/Kernel.h"
#include "ir/Graph.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace minijit {

/// The head dims (of Q and K, and of V) the attention template takes.
constexpr int64_t kAttentionMinHeadDim = 32, kAttentionMaxHeadDim = 256;
/// Head dims are whole vectors of this many elements.
constexpr int64_t kAttentionHeadDimMultiple = 4;
/// Rows of fewer keys than this keep the unfused kernels: a tile of the
/// template would be mostly empty.
constexpr int64_t kAttentionMinKeys = 16;

/// The nodes of one attention, O = softmax(g(A @ B)) @ V, softmax spelled
/// as ir/Builder.h's softmax does (keepdim max and sum over the last axis).
struct AttentionMatch {
  ValueId scores = -1;  ///< S = matmul A, B
  ValueId logits = -1;  ///< g(S): what the softmax reads (S itself without score work)
  ValueId max = -1, shifted = -1, exps = -1, sum = -1, probs = -1;
  ValueId out = -1;     ///< O = matmul probs, V
  /// The probabilities cast to V's 16-bit type before the product, when the
  /// softmax runs in f32 (-1: none): the kernel rounds P so anyway.
  ValueId probsCast = -1;
  /// The values computing the logits from S and what S's work reads (views,
  /// iota, literals, elementwise ops), in graph order, S not included.
  std::vector<ValueId> scoreWork;
  /// The values A, B and V are read from (through views): inputs or stored.
  ValueId q = -1, k = -1, v = -1;
  /// What the score work holds, for --emit=fused.
  bool scale = false, mask = false, bias = false, softcap = false;
  /// The logits are where(key <= query, x, -inf) over i32 iota positions
  /// (top-left): every key past a tile's last query row is masked, so the
  /// kernel stops its walk over the keys there.
  bool causal = false;
  /// The logits keep only keys less than `window` before the query (a
  /// condition q - k < window over the same positions, in the mask or
  /// and-ed into it): keys before a tile's first row's window are masked
  /// for every row of it, so the walk starts there. 0: no window.
  int64_t window = 0;
  /// K or V is read by fewer batches than the scores have (grouped heads
  /// broadcast along a batch axis): batches of S and those of K and V.
  int64_t batches = 1, kBatches = 1, vBatches = 1;
  int64_t queries = 0, keys = 0, headDim = 0, valueDim = 0;
};

/// What findAttention makes of a product.
struct AttentionCandidate {
  /// Set when the product is attention the template takes (with `store`
  /// empty) or would take once `store` is in memory.
  std::optional<AttentionMatch> match;
  /// A value the kernel must read from memory (an operand computed by a
  /// matmul, a reduction ...): stored first, then the match is tried again.
  std::optional<StoreRequest> store;
  /// Why the template refuses an attention-shaped product (match unset).
  FusionReason refused;
};

/// Reads product `pv` as the last node of an attention. nullopt when it is
/// not attention-shaped at all (then nothing about it changes); otherwise
/// the match, an operand to store first, or the reason the template refuses.
/// `stored` says which values fusion stores so far: a stored score, max,
/// sum or probability (autodiff's backward reads the probabilities) keeps
/// the unfused kernels.
std::optional<AttentionCandidate> findAttention(const Graph &g, ValueId pv,
                                                llvm::function_ref<bool(ValueId)> stored);

/// Per value of `g`: true for the scores product and the product with V of
/// each attention the template takes (findAttention, nothing stored), and
/// the products of its backward where the fused kernels take that. The
/// matmul rewrites leave them as written (MatmulRewriteOptions::keptProducts).
std::vector<bool> attentionProducts(const Graph &g);

/// Why each attention-shaped product `plan` computes in a matmul kernel is
/// not an attention kernel (FusionPlan::notAttention): the first reason
/// fusion met (`firstRefusal`, before the values its refusal stored), else
/// findAttention's with the values `stored`.
void noteRefusedAttention(const Graph &g, FusionPlan &plan,
                          const std::map<ValueId, FusionReason> &firstRefusal,
                          llvm::function_ref<bool(ValueId)> stored);

/// The header line of an attention kernel (forward or backward) for
/// --emit=fused: "attention %o: S = ..." or "attention backward ...".
std::string describeAttentionKernel(const Graph &g, const KernelGroup &kg);

/// One line for --emit=fused: "S = %q @ %kt [8, 32, 512, 512],
/// scale, mask, softmax over 512 keys, @ %v [8, 32, 512, 64]".
std::string describeAttention(const Graph &g, const AttentionMatch &m);

} // namespace minijit
