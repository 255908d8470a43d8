//===- compiler/simplify/MatmulRewritesInternal.h - the walk that rewrites products -*- C++ -*-===//
// Used only inside compiler/simplify/: the walk behind rewriteMatmuls and
// rewriteTf32Operands, which copies a graph and replaces the products a
// rewrite applies to. Its rewrites live by job: the walk and the products in
// a cheaper form (MatmulRewrites.cpp), operands copied or split for the
// templates' reads (MatmulOperandCopies.cpp), the TF32 forms
// (MatmulTf32Rewrites.cpp).
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/simplify/MatmulRewrites.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minijit::detail {

class Rewriter {
public:
  /// A walk over `g` that applies the rewrites `options` enable; with
  /// `tf32`, the copies of rewriteTf32Operands.
  Rewriter(const Graph &g, const MatmulRewriteOptions &options, bool tf32 = false);

  MatmulRewriteResult run();

private:
  const Node &out(ValueId v) const { return Out.node(v); }

  /// Adds `s`; a name already taken (by a fresh name of a node this pass
  /// made) is left for the graph to choose.
  ValueId add(NodeSpec s);
  ValueId cast(ValueId v, DType t, const std::string &name = "");
  ValueId reshape(ValueId v, const Shape &shape, const std::string &name = "");
  ValueId binary(OpKind op, ValueId a, ValueId b, const std::string &name = "");
  ValueId reduce(OpKind op, ValueId v, int64_t axis, bool keepdim, const std::string &name = "");
  /// `v` as `t`, named `name` (a cast to the same type would be dropped, so
  /// a name that must stay is put on a reshape that changes nothing).
  ValueId finish(ValueId v, DType t, const Shape &shape, const std::string &name);

  static Shape withLast2(const Shape &s, int64_t a, int64_t b);

  ValueId copy(ValueId id);

  /// The product of f32 operands [.., M, K] @ [.., K, 1] (or [.., 1, K] @
  /// [.., K, N]) as an elementwise product and a sum over k, with keepdim.
  /// The sum is named `name` (empty: a fresh name).
  ValueId sumOverK(ValueId fa, ValueId fb, const std::string &name);

  /// [.., M, K] @ [.., K, 1] or [.., 1, K] @ [.., K, N]: an elementwise
  /// product in f32 and a sum over k.
  std::optional<ValueId> narrowProduct(ValueId id, ValueId a, ValueId b);

  /// [.., M, 1] @ [.., 1, N]: the column times the row, broadcast, in f32
  /// (each output is the one product a * b, as the matmul templates form
  /// it), then rounded to a 16-bit product's type.
  std::optional<ValueId> outerProduct(ValueId id, ValueId a, ValueId b);

  /// [.., M, K] @ [.., K, N] with 2 <= K <= FewTermsUpTo (f16 and bf16:
  /// FewTermsUpTo16Bit): the sum of K outer products, A's column j times
  /// B's row j for j = 0 .. K-1 in order (a pointwise kernel; the same
  /// terms and order as the matmul templates' sums), in f32, then rounded
  /// to a 16-bit product's type.
  /// Where the views before and after the product would make a chain
  /// longer than ir/Limits.h allows (the slices add one, and the product no
  /// longer starts a fresh index), the same terms as a product [.., M, K, 1]
  /// * [.., 1, K, N] and a sum over K (a reduction, which starts one).
  std::optional<ValueId> fewTerms(ValueId id, ValueId a, ValueId b);
  /// `v` sliced to [start, end) along `axis` (negative: from the end).
  ValueId slice(ValueId v, int64_t axis, int64_t start, int64_t end);

  /// Whether a value put in place of G's value `id` that ends a chain of
  /// `views` views (since the last reduction or matmul) and `ops` ops keeps
  /// every chain through it within ir/Limits.h, the views and ops after it
  /// in G counted (a rewrite must not make a graph the limits refuse).
  bool chainsFit(ValueId id, unsigned views, unsigned ops) const;
  /// Whether G's product `id` stays as written (keptProducts: attention's).
  bool kept(ValueId id);
  /// Out's chains ending at `v`, after a cast to f32 where `v` is not f32.
  unsigned viewsOf(ValueId v) const { return Out.viewChain(v); }
  unsigned opsAsF32(ValueId v) const { return Out.depth(v) + (out(v).dtype != DType::F32); }

  /// sum(A @ B, -1) = A @ sum(B, -1) and sum(A @ B, -2) = sum(A, -2) @ B
  /// (mean likewise), when the product has no other use. The operand is
  /// summed in f32, and the narrow product that results is formed as
  /// narrowProduct does.
  std::optional<ValueId> sumOfProduct(const Node &n, ValueId p);

  /// The literal a scalar product `v` (c * x or x * c, one use) scales by,
  /// and its other operand.
  std::optional<std::pair<ValueId, ValueId>> scalarProduct(ValueId v, ValueId original) const;

  bool viewOfLiteral(ValueId v) const;

  /// (c * A) @ B = c * (A @ B) and A @ (c * B) likewise.
  std::optional<ValueId> scalarFactor(const Node &n, ValueId a, ValueId b);

  /// How a matmul operand lies in memory, as far as the graph says: the
  /// value it reads (through a transpose of its last two axes, if it is one)
  /// and whether that value's rows are whole 16-byte units (or need none:
  /// a single row or column has no stride to speak of).
  struct OperandRows {
    ValueId src;
    bool transposed, aligned;
  };
  OperandRows operandRows(ValueId v) const;

  /// Whether padding `r.src`'s rows is a plain copy of the operand: not of a
  /// view (a broadcast, a reshape), which would copy more than it.
  bool paddable(const OperandRows &r) const;

  /// The operand with its rows padded to the next 8 elements and sliced
  /// back: the pad is a copy kernel, the slice a view the matmul reads with
  /// the padded row stride; a transposed operand is transposed again.
  ValueId padRows(ValueId v, const OperandRows &r);

  /// A 16-bit product big enough for the pads to pay (2^24 multiply-adds,
  /// batches counted: a few microseconds on the tensor cores), one of whose
  /// operands has unaligned rows, when both can then be read by TMA: each is
  /// aligned already or paddable.
  std::optional<ValueId> alignedOperands(const Node &n, ValueId a, ValueId b);

  /// How float4Operands pads one operand's stored source [.., rows, cols]:
  /// its last axis up to whole float4s (then sliced back to its length, or
  /// kept: k), its rows up to a multiple of 4 (k, with zeros).
  struct Float4Pad {
    bool last = false, sliceLast = false, rows = false;
    bool any() const { return last || rows; }
  };

  /// Pads r.src as `p` says, then slices and transposes back as needed.
  ValueId padToFloat4s(ValueId v, const OperandRows &r, const Float4Pad &p);

  /// An f32 product on the CUDA cores reads a tile by float4s only where
  /// the operand's rows are whole float4s (tileGeometry's vecA, vecB, ...).
  /// Where they are not, and each element copied serves at least 512
  /// multiply-adds (so the copies cost a few percent of the product at
  /// most), the operands are copied into padded rows first: along k both
  /// gain zeros up to a multiple of 4 (the sums gain terms 0 * 0); a
  /// row-major B whose n is not a multiple of 4 (an A stored transposed
  /// whose m is not) is padded along it and sliced back, so that the last
  /// vector of a tile row reads into the padding, for outputs no one stores.
  std::optional<ValueId> float4Operands(const Node &n, ValueId a, ValueId b);

  /// Split-K (see splitSlices) where the layout allows it: both operands
  /// rank 2 and plain values (not views, which a pad or reshape would copy).
  /// k is padded with zeros to S whole slices of a multiple of 8 (the
  /// template's k-step; whole float4s); a row-major B whose n is not whole
  /// float4s (an A stored transposed whose m is not) has its rows padded too
  /// and sliced back, as float4Operands does. Each operand becomes a view of
  /// its padded copy with the slices as a batch.
  std::optional<ValueId> splitK(const Node &n, ValueId a, ValueId b);
  /// The slices split-K cuts product `n` of operands a and b into (1: none,
  /// where the rule or the operands' layout says so).
  int64_t splitKSlices(const Node &n, ValueId a, ValueId b);

  /// One operand of a split product: its stored source (rank 2) padded with
  /// zeros along k to slices * ks (and, where m or n is its contiguous axis,
  /// that axis to whole float4s, sliced back), reshaped and permuted to
  /// [S, M, ks] (A) or [S, ks, N] (B), a view.
  ValueId splitOperand(const OperandRows &r, bool isA, int64_t slices, int64_t ks, int64_t K);

  /// See rewriteTf32Operands.
  std::optional<ValueId> tf32Operands(const Node &n, ValueId a, ValueId b);

  /// See rewriteMatmuls (tf32x3): the product of the operands' TF32 parts
  /// side by side along k, [Ahi, Ahi, Alo] @ [Bhi; Blo; Bhi], both k-major
  /// (the layout TF32's wgmma reads) with k padded to whole 16-byte units.
  std::optional<ValueId> tf32x3Split(const Node &n, ValueId a, ValueId b);

  /// Whether `v` is a broadcast, or a view (a reshape, permute, slice) of one.
  bool viewOfBroadcast(ValueId v) const;

  /// One operand's parts side by side along k, k-major: [.., rows, 3 Kp] in
  /// memory, each part padded with zeros to Kp (a multiple of 4); A holds
  /// [hi, hi, lo], B (a transposed view of it, [.., 3 Kp, N]) [hi, lo, hi]
  /// (the hi that meets the other's lo is 0 where x is not finite).
  /// Written as [.., rows, 3, Kp], the part chosen by its index, so each
  /// element reads the operand once (a concat would read every part).
  ValueId tf32Parts(const OperandRows &r, bool isA, int64_t K, const std::string &name);

  /// `v` with its last two axes swapped (a view).
  ValueId swapLast2(ValueId v, const std::string &name = "");

  /// One operand copied k-major: [.., rows, Kp] in memory, Kp = k up to a
  /// multiple of 4 with zeros after it; as A that copy, as B a transposed
  /// view of it ([.., Kp, N]).
  ValueId kMajorCopy(const OperandRows &r, bool isA, int64_t K);

  const Graph &G;
  bool Reassociate, AlignRows, Float4Rows, Tf32, Tf32x3, Tf32x3Always;
  int64_t FewTermsUpTo, FewTermsUpTo16Bit;
  SplitKOptions SplitK;
  std::function<bool(int64_t, int64_t, int64_t, int64_t)> FewTiles;
  std::function<std::vector<bool>(const Graph &)> KeptProducts;
  Graph Out;
  std::vector<ValueId> Map;
  std::vector<int> Uses; ///< of each value of G, outputs counted
  std::vector<int> OutputUses; ///< of each value of G, as a graph output
  std::vector<MatmulRewrite> Applied;
  /// Per value of G: a product the rewrites leave as written (KeptProducts
  /// of G, found when first asked: most graphs have no product it matters to)
  std::optional<std::vector<bool>> Kept;
  /// Per value of G: the most views after it in a chain of its users up to
  /// a reduction or matmul (or an output), and the most ops after it.
  std::vector<unsigned> ViewsBelow, OpsBelow;
};

} // namespace minijit::detail
