//===- compiler/simplify/MatmulRewrites.h - products in a cheaper form -*- C++ -*-===//
// Rewrites around matmul, after simplification and before fusion:
//   - a product with one output column (a matrix-vector product) or one
//     output row becomes an elementwise product and a sum over k, which the
//     reduction templates run at the copy-bandwidth limit, split over blocks
//     when few rows would leave SMs idle (a tile of a matmul template would
//     be 1/16 full and the grid a fraction of a wave); f16/bf16 operands are
//     multiplied and summed in f32, as the matmul templates do;
//   - a product over k = 1 (an outer product, [.., M, 1] @ [.., 1, N])
//     becomes an elementwise product of the column by the row, a pointwise
//     kernel that writes its output at the copy-bandwidth limit (no padding
//     of k, no tile of k-steps; exact, as the product's one term is);
//   - a product over a few k (2 <= k <= MatmulRewriteOptions::fewTermsUpTo,
//     kFewTermsUpTo by default) becomes the sum of k such column-by-row
//     products, j = 0 .. k-1 in order (the terms and order of the
//     templates' sums), one pointwise kernel: a tile would pad k to its
//     k-step and, where m or n is small, stay mostly empty;
//   - operands copied into padded rows where that lets the matmul templates
//     read them by 16-byte units: 16-bit ones for TMA (Hopper), f32 ones for
//     the CUDA cores' float4s (k padded with zeros on both sides);
//   - reassociating ones, which change the order of roundings and can be
//     switched off (CompileOptions::reassociate, --no-reassociate):
//     * an f32 product of too few 128x128 tiles to fill the SMs' block
//       slots is split along k (split-K): a batch of S products of k-slices
//       ([S, M, K/S] @ [S, K/S, N], k padded with zeros to whole slices) and
//       a sum over the batch, which takes the product's epilogue (where
//       SplitKOptions' rule says, or as it forces; the pipeline's rule
//       fills whole waves of the tile the schedule gives the batch,
//       compiler/schedule/SimtTiles.h);
//     * a sum (or mean) of a product over its output columns is the product
//       with the summed right operand: sum(A @ B, -1) = A @ sum(B, -1), a
//       matrix-vector product; over its rows, sum(A @ B, -2) = sum(A, -2) @ B;
//     * a sum reached through linear elementwise ops (P / c + b) is moved
//       onto the product first (SumThroughLinear.h), so it meets the rule above;
//     * a scalar factor of an operand moves after the product, into its
//       epilogue: (c * A) @ B = c * (A @ B).
// The CPU reference evaluates the graph as written; the checks compare with
// that. The record of a rewrite applied (MatmulRewrite) also names the
// argmax rewrite of ArgmaxRewrites.h, the other one --emit=fused lists.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace minijit {

enum class MatmulRewriteKind {
  NarrowProduct,    ///< one output row or column: a product and a sum over k
  OuterProduct,     ///< k = 1: an elementwise product of a column by a row
  FewTerms,         ///< 2 <= k <= a few: a sum of k columns times rows
  FewTermsSum,      ///< the same as a reduction over k (the views around allow no more)
  SumOfProduct,     ///< sum over the product's columns or rows: the operand summed first
  SumThroughLinear, ///< a sum of a product's linear function moved onto the product
                    ///< (SumThroughLinear.h)
  ScalarFactor,     ///< a scalar factor moved after the product
  AlignedRows,      ///< 16-bit operands padded to rows of whole 16-byte units
  Float4Rows,       ///< f32 operands padded to rows of whole float4s (k with zeros)
  MonotoneArg,      ///< an argmax (argmin) of a strictly monotone map of x, as one of x
                    ///< (ArgmaxRewrites.h)
  SplitK,           ///< an f32 product of few tiles as a batch of k-slices and a sum
  Tf32Operands,     ///< f32 operands copied k-major in whole 16-byte rows, for TF32's wgmma
  Tf32x3,           ///< an f32 product as three TF32 products of its operands' parts
};

/// The names of the operands of a product split into three TF32 products
/// (MatmulRewriteKind::Tf32x3) named `prefix` in the graph it was split in
/// (the record's value): its parts' nodes are named after it.
std::pair<std::string, std::string> tf32x3PartsNames(const std::string &prefix);

/// One rewrite applied, for --emit=fused.
struct MatmulRewrite {
  MatmulRewriteKind kind;
  std::string value; ///< the IR name of the value rewritten
  /// MonotoneArg: what the argmax read and reads now; SplitK: the slices;
  /// Tf32x3: the split of k
  std::string detail;
  std::string text() const;
};

struct MatmulRewriteResult {
  Graph graph;
  std::vector<MatmulRewrite> applied;
};

/// When split-K applies (a reassociating rewrite).
struct SplitKOptions {
  /// The slices the rule cuts the k of an f32 [m, k] @ [k, n] into, given
  /// the elements of the operands that slices not ending where k does would
  /// copy (the pipeline's: splitSlices of compiler/schedule/SimtTiles.h on
  /// the device); 1 leaves the product whole. None: no split chosen.
  std::function<int64_t(int64_t m, int64_t n, int64_t k, int64_t padCopies)> rule = {};
  /// The slices of an exact f32 product of x and nn.Linear's W (A k-major,
  /// B stored [n, k]) whose kernel splits it into three TF32 products, by
  /// that kernel's waves (splitInKernelSlices); 0 where the kernel would not
  /// split it: `rule` decides then. None: `rule` decides every product.
  std::function<int64_t(int64_t m, int64_t n, int64_t k, int64_t padCopies)> splitInKernel = {};
  /// A slice count for every f32 product whose layout allows it (tests,
  /// tuning; 1 leaves each whole); 0: chosen by the rule.
  int64_t force = 0;
  bool enabled() const { return rule || force > 1; }
};

/// The largest k a product is written as a sum of k outer products by
/// default (MatmulRewriteKind::FewTerms): each output then reads k elements
/// of each operand (A's broadcast along a row, B's along a column). On the
/// H100, [8192, k] @ [k, 4096] ran 1.1-1.4x faster so in f32 up to k = 8
/// and in f16 and bf16 up to k = 6, but 0.82-0.89x at k = 8 in 16 bits,
/// where the tensor cores' template keeps up (docs/PERFORMANCE.md).
constexpr int64_t kFewTermsUpTo = 8;
constexpr int64_t kFewTermsUpTo16Bit = 6;

/// The depth of one of `slices` slices of k: whole k-steps of 8 (the f32
/// template's; whole float4s).
int64_t sliceDepth(int64_t k, int64_t slices);

/// Whether an f32 product of [m, k] @ [k, n] (per batch) runs faster as
/// three TF32 products (`tf32x3` of rewriteMatmuls) than on the CUDA cores,
/// its operands' copies counted: where mn / (m + n) > 300 (a square product
/// past 600, a wide one whose smaller side is past 300) and the product has
/// 2^24 multiply-adds or more.
bool tf32x3Pays(int64_t m, int64_t n, int64_t k);

/// Which of the rewrites rewriteMatmuls applies beyond the first ones (a
/// narrow product, an outer product), which always apply, and a product of
/// few terms (up to fewTermsUpTo). The pipeline fills it from
/// CompileOptions, the target and the schedule overrides `pad`, `splitk`,
/// `terms` and `wgmma` (matmulRewriteOptions in compiler/Pipeline.cpp).
struct MatmulRewriteOptions {
  /// The reassociating rewrites (CompileOptions::reassociate); split-K only
  /// with them.
  bool reassociate = true;
  /// Products over k from 2 to this as sums of k outer products (FewTerms);
  /// under 2 none. The pipeline's: kFewTermsUpTo, or the override `terms`.
  int64_t fewTermsUpTo = 0;
  /// The same for f16 and bf16 products (kFewTermsUpTo16Bit, or `terms`).
  int64_t fewTermsUpTo16Bit = 0;
  /// 16-bit operands padded to rows of whole 16-byte units (TMA's reads).
  bool alignRows = false;
  /// f32 operands padded to rows of whole float4s (the CUDA cores' tiles).
  bool float4Rows = false;
  SplitKOptions splitK = {};
  /// f32 products as three TF32 products, where tf32x3Pays.
  bool tf32x3 = false;
  /// With tf32x3: past tf32x3Pays's line too (the `tf32x3=1` override), the
  /// error rules still applying.
  bool tf32x3Always = false;
  /// Whether an f32 product of `batch` [m, k] @ [k, n] has too few tiles to
  /// fill the SMs whole: fewer 128 x 128 tiles than SMs (the product is too
  /// small for its parts' copies to pay), or split-K's rule would slice it
  /// (unsplit, three TF32 products have up to 2.6 times the error of
  /// SGEMM, which splits it; docs/PERFORMANCE.md). Such a product stays
  /// off three TF32 products. Unset: none is.
  std::function<bool(int64_t batch, int64_t m, int64_t n, int64_t k)> fewTiles;
  /// Per value of the graph the last walks (padding, split-K, TF32 parts)
  /// take: true for a product they leave as written. The pipeline marks
  /// attention's two products (compiler/fusion/Attention.h), which fusion
  /// makes one kernel that reads rows of any length. Unset: none.
  std::function<std::vector<bool>(const Graph &)> keptProducts;
};

/// Applies the rewrites `options` enable to `g`; the values keep their
/// names. With `tf32x3` (CompileOptions::tf32x3, Hopper), an f32 product
/// where tf32x3Pays is split into TF32 parts first: each operand x is hi +
/// lo + r, hi = round_tf32(x), lo = round_tf32(x - hi), |r| <= 2^-22 |x|,
/// and A @ B is computed as Ahi@Bhi + Ahi@Blo + Alo@Bhi (Alo@Blo, at most
/// 2^-22 of each term, is left out), as one TF32 product of the parts side
/// by side along k, [Ahi, Ahi, Alo] @ [Bhi; Blo; Bhi], accumulated in f32.
/// Each term a*b is then within 2^-20.4 |a b| of exact, against 2^-24 for an
/// f32 multiply-add (the tensor cores' sums round more coarsely than the CUDA
/// cores'). The caller runs those products as TF32, finding each by its
/// operands' names (tf32x3PartsNames).
MatmulRewriteResult rewriteMatmuls(const Graph &g, const MatmulRewriteOptions &options);

/// For f32 products in TF32 (CompileOptions::allowTf32) on Hopper, whose
/// wgmma reads both operands k-major ([.., M, K] and [.., N, K] in memory)
/// in rows of whole 16-byte units: where an f32 product's operands are not
/// so and it is large enough for copies to pay (2^24 multiply-adds), they
/// are copied first. An operand stored the other way is transposed (a pad
/// of nothing along k, which a copy kernel stores; the caller does not
/// simplify the result, which would drop it); with k not a multiple of 4
/// both operands gain zeros along k (the sums gain terms 0 * 0).
MatmulRewriteResult rewriteTf32Operands(const Graph &g);

} // namespace minijit
