//===- compiler/simplify/MatmulTf32Rewrites.cpp - f32 products in TF32 forms ===//
// The rewrites that prepare f32 products for Hopper's TF32 wgmma
// (MatmulRewrites.h): operands copied k-major (rewriteTf32Operands) and a
// product split into three TF32 products of its operands' parts (tf32x3).
//===----------------------------------------------------------------------===//
#include "compiler/simplify/MatmulRewritesInternal.h"

#include "llvm/ADT/ArrayRef.h"

namespace minijit::detail {

std::optional<ValueId> Rewriter::tf32Operands(const Node &n, ValueId a, ValueId b) {
  const Shape &sa = out(a).shape, &sb = out(b).shape;
  if (n.dtype != DType::F32 || n.shape.hasNames() || sa.hasNames() || sb.hasNames())
    return std::nullopt;
  int64_t K = sa[sa.rank() - 1];
  if (n.shape.numel() * K < (int64_t(1) << 24))
    return std::nullopt;
  OperandRows ra = operandRows(a), rb = operandRows(b);
  bool padK = K % 4 != 0;
  bool copyA = padK || ra.transposed, copyB = padK || !rb.transposed;
  if ((!copyA && !copyB) || (copyA && !paddable(ra)) || (copyB && !paddable(rb)))
    return std::nullopt;
  NodeSpec s = specOf(n);
  s.operands = {copyA ? kMajorCopy(ra, true, K) : a, copyB ? kMajorCopy(rb, false, K) : b};
  std::string what = copyA && copyB ? "both" : copyA ? "A" : "B";
  if (padK)
    what += ", k padded with zeros to " + std::to_string((K + 3) / 4 * 4);
  else
    what += " transposed";
  Applied.push_back({MatmulRewriteKind::Tf32Operands, n.name, what});
  return add(s);
}

std::optional<ValueId> Rewriter::tf32x3Split(const Node &n, ValueId a, ValueId b) {
  const Shape &sa = out(a).shape, &sb = out(b).shape;
  if (n.dtype != DType::F32 || n.shape.hasNames() || sa.hasNames() || sb.hasNames())
    return std::nullopt;
  int64_t M = sa[sa.rank() - 2], K = sa[sa.rank() - 1], N = sb[sb.rank() - 1];
  if (M == 0 || N == 0 || K == 0)
    return std::nullopt;
  int64_t batch = n.shape.numel() / (M * N);
  // An operand shared by the batch (a 3-D tensor times a matrix) is copied
  // into parts once: the product pays as one of all the batch's rows.
  int64_t payM = sb.rank() == 2 ? batch * M : M, payN = sa.rank() == 2 ? batch * N : N;
  if (!Tf32x3Always && !tf32x3Pays(payM, payN, K))
    return std::nullopt;
  // A product of too few tiles stays on the CUDA cores, split along k where
  // split-K runs: its sums of slices are as accurate as cuBLAS's SGEMM's,
  // which splits such products too, where three TF32 products run unsplit
  // have up to 2.6 times SGEMM's error (docs/PERFORMANCE.md, "Matmul in f32");
  // and one of less than a round of tiles is too small for the copies.
  if (splitKSlices(n, a, b) > 1 || (FewTiles && FewTiles(batch, M, N, K)))
    return std::nullopt;
  OperandRows ra = operandRows(a), rb = operandRows(b);
  // (the parts of a broadcast operand would be copied out in full)
  if (viewOfBroadcast(ra.src) || viewOfBroadcast(rb.src))
    return std::nullopt;
  int64_t Kp = (K + 3) / 4 * 4;
  NodeSpec s = specOf(n);
  s.operands = {tf32Parts(ra, true, K, n.name + ".a"), tf32Parts(rb, false, K, n.name + ".b")};
  std::string what = "k " + std::to_string(K) + " as 3 x " + std::to_string(Kp);
  if (Kp != K)
    what += ", each part padded with zeros";
  Applied.push_back({MatmulRewriteKind::Tf32x3, n.name, what});
  return add(s);
}

bool Rewriter::viewOfBroadcast(ValueId v) const {
  for (const Node *n = &out(v); n->cls() == OpClass::View; n = &out(n->operands[0]))
    if (n->op == OpKind::Broadcast)
      return true;
  return false;
}

ValueId Rewriter::tf32Parts(const OperandRows &r, bool isA, int64_t K, const std::string &name) {
  // (named after the product: its kernel is found by its operands' names,
  // tf32x3PartsNames, which no fresh name can take)
  auto named = [&](NodeSpec s, const char *what) {
    s.name = name + "." + what;
    return add(s);
  };
  ValueId v = r.src;
  if (isA == r.transposed) // stored [.., K, M] (A) or [.., K, N] (B)
    v = swapLast2(v, name + ".k_major");
  Shape s = out(v).shape;
  size_t rank = s.rank();
  int64_t Kp = (K + 3) / 4 * 4;
  if (Kp != K) {
    NodeSpec pad;
    pad.op = OpKind::Pad;
    pad.operands = {v};
    pad.before.assign(rank, 0);
    pad.after.assign(rank, 0);
    pad.after[rank - 1] = Kp - K;
    v = named(pad, "padded");
  }
  DimVector d(s.dims().begin(), s.dims().end());
  d[rank - 1] = 1;
  d.push_back(Kp);
  ValueId one = reshape(v, Shape(llvm::ArrayRef<int64_t>(d)), name + ".row"); // [.., rows, 1, Kp]
  d[rank - 1] = 3;
  NodeSpec bc;
  bc.op = OpKind::Broadcast;
  bc.operands = {one};
  bc.shape = Shape(llvm::ArrayRef<int64_t>(d)); // [.., rows, 3, Kp]
  ValueId x = named(bc, "x3");
  auto roundTf32 = [&](ValueId y, const char *what) {
    NodeSpec u;
    u.op = OpKind::RoundTf32;
    u.operands = {y};
    return named(u, what);
  };
  // hi, except where rounding overflows a finite x (within 2^-11 of the
  // largest f32): there x itself (TF32 reads it cut); lo = round_tf32(x -
  // hi), and 0 where x == hi, so that an infinite x gives hi = x, lo = 0
  // (its products infinite, as the product as written), not inf - inf.
  // Finite: v - v == 0 (false for inf and NaN).
  auto finite = [&](ValueId v, const char *what) {
    return binary(OpKind::Eq, binary(OpKind::Sub, v, v, name + "." + what + "_d"),
                  Out.constant(0, DType::F32), name + "." + what);
  };
  auto select = [&](ValueId c, ValueId a, ValueId b, const char *what) {
    NodeSpec w;
    w.op = OpKind::Where;
    w.operands = {c, a, b};
    return named(w, what);
  };
  ValueId rounded = roundTf32(x, "rounded");
  NodeSpec overflow;
  overflow.op = OpKind::Not;
  overflow.operands = {finite(rounded, "rounded_finite")};
  ValueId xFinite = finite(x, "x_finite");
  ValueId overflowed =
      binary(OpKind::And, named(overflow, "rounded_not_finite"), xFinite, name + ".overflow");
  ValueId hi = select(overflowed, x, rounded, "hi");
  ValueId rest = select(binary(OpKind::Eq, x, hi, name + ".exact"), Out.constant(0, DType::F32),
                        binary(OpKind::Sub, x, hi, name + ".rest_d"), "rest");
  ValueId lo = roundTf32(rest, "lo");
  // The hi that meets the other operand's lo: 0 where x is not finite, so
  // that an infinite x times a lo of the other sign (or of 0) does not
  // make inf - inf (or inf * 0) of a product that is infinite as written.
  ValueId hiCross = select(xFinite, hi, Out.constant(0, DType::F32), "hi_cross");
  NodeSpec part;
  part.op = OpKind::Iota;
  part.shape = Shape{3, 1};
  part.axis = 0;
  part.dtype = DType::I32;
  ValueId index = named(part, "part");
  // A: [hi, hi_cross, lo]; B: [hi, lo, hi_cross]
  ValueId isLo = binary(OpKind::Eq, index, Out.constant(isA ? 2 : 1, DType::I32), name + ".is_lo");
  ValueId isCross =
      binary(OpKind::Eq, index, Out.constant(isA ? 1 : 2, DType::I32), name + ".is_cross");
  ValueId pick = select(isLo, lo, select(isCross, hiCross, hi, "hi_or_cross"), "parts3");
  d[rank - 1] = 3 * Kp;
  d.pop_back();
  ValueId parts = reshape(pick, Shape(llvm::ArrayRef<int64_t>(d)),
                          name + ".parts"); // [.., rows, 3 Kp]
  return isA ? parts : swapLast2(parts, name + ".parts_t");
}

ValueId Rewriter::kMajorCopy(const OperandRows &r, bool isA, int64_t K) {
  ValueId v = r.src;
  if (isA == r.transposed) // stored [.., K, M] (A) or [.., K, N] (B)
    v = swapLast2(v);
  size_t rank = out(v).shape.rank();
  NodeSpec pad;
  pad.op = OpKind::Pad;
  pad.operands = {v};
  pad.before.assign(rank, 0);
  pad.after.assign(rank, 0);
  pad.after[rank - 1] = (K + 3) / 4 * 4 - K;
  ValueId copy = add(pad);
  return isA ? copy : swapLast2(copy);
}

} // namespace minijit::detail
