//===- compiler/simplify/MatmulOperandCopies.cpp - operands copied for the templates' reads ===//
// The second walk's rewrites of a product's operands (MatmulRewrites.h):
// 16-bit rows padded to whole 16-byte units for TMA, f32 rows padded to
// whole float4s for the CUDA cores' tiles, and split-K's slices of k.
//===----------------------------------------------------------------------===//
#include "compiler/simplify/MatmulRewritesInternal.h"

namespace minijit::detail {

ValueId Rewriter::padRows(ValueId v, const OperandRows &r) {
  const Shape &s = out(r.src).shape;
  size_t rank = s.rank();
  int64_t last = s[rank - 1];
  NodeSpec pad;
  pad.op = OpKind::Pad;
  pad.operands = {r.src};
  pad.before.assign(rank, 0);
  pad.after.assign(rank, 0);
  pad.after[rank - 1] = (last + 7) / 8 * 8 - last;
  ValueId aligned = slice(add(pad), -1, 0, last);
  if (!r.transposed)
    return aligned;
  NodeSpec t = specOf(out(v));
  t.operands = {aligned};
  t.name.clear();
  return add(t);
}

std::optional<ValueId> Rewriter::alignedOperands(const Node &n, ValueId a, ValueId b) {
  if (n.dtype == DType::F32)
    return std::nullopt;
  const Shape &sa = out(a).shape;
  if (n.shape.numel() * sa[sa.rank() - 1] < (int64_t(1) << 24))
    return std::nullopt;
  OperandRows ra = operandRows(a), rb = operandRows(b);
  if ((ra.aligned && rb.aligned) || (!ra.aligned && !paddable(ra)) ||
      (!rb.aligned && !paddable(rb)))
    return std::nullopt;
  NodeSpec s = specOf(n);
  s.operands = {ra.aligned ? a : padRows(a, ra), rb.aligned ? b : padRows(b, rb)};
  Applied.push_back({MatmulRewriteKind::AlignedRows, n.name, ""});
  return add(s);
}

ValueId Rewriter::padToFloat4s(ValueId v, const OperandRows &r, const Float4Pad &p) {
  const Shape &s = out(r.src).shape;
  size_t rank = s.rank();
  int64_t rows = s[rank - 2], last = s[rank - 1];
  NodeSpec pad;
  pad.op = OpKind::Pad;
  pad.operands = {r.src};
  pad.before.assign(rank, 0);
  pad.after.assign(rank, 0);
  if (p.last)
    pad.after[rank - 1] = (last + 3) / 4 * 4 - last;
  if (p.rows)
    pad.after[rank - 2] = (rows + 3) / 4 * 4 - rows;
  ValueId padded = add(pad);
  if (p.sliceLast)
    padded = slice(padded, -1, 0, last);
  if (!r.transposed)
    return padded;
  NodeSpec t = specOf(out(v));
  t.operands = {padded};
  t.name.clear();
  return add(t);
}

std::optional<ValueId> Rewriter::float4Operands(const Node &n, ValueId a, ValueId b) {
  if (n.dtype != DType::F32)
    return std::nullopt;
  const Shape &sa = out(a).shape, &sb = out(b).shape; // ranks may differ (a batch broadcast)
  int64_t M = sa[sa.rank() - 2], K = sa[sa.rank() - 1], N = sb[sb.rank() - 1];
  OperandRows ra = operandRows(a), rb = operandRows(b);
  bool padK = K % 4 != 0;
  Float4Pad pa, pb;
  if (ra.transposed) // stored [.., K, M]
    pa = {M % 4 != 0, true, padK};
  else // stored [.., M, K]
    pa = {padK, false, false};
  if (rb.transposed) // stored [.., N, K]
    pb = {padK, false, false};
  else // stored [.., K, N]
    pb = {N % 4 != 0, true, padK};
  if ((!pa.any() && !pb.any()) || (pa.any() && !paddable(ra)) || (pb.any() && !paddable(rb)))
    return std::nullopt;
  // A padded operand's size, whose copy must pay.
  auto padded = [&](const OperandRows &r, const Float4Pad &p) -> int64_t {
    if (!p.any())
      return 0;
    const Shape &s = out(r.src).shape;
    int64_t rows = s[s.rank() - 2], last = s[s.rank() - 1];
    return s.numel() / (rows * last) * ((rows + 3) / 4 * 4) * ((last + 3) / 4 * 4);
  };
  int64_t work = n.shape.numel() * K; // multiply-adds
  if (work / 512 < padded(ra, pa) + padded(rb, pb))
    return std::nullopt;
  NodeSpec s = specOf(n);
  s.operands = {pa.any() ? padToFloat4s(a, ra, pa) : a, pb.any() ? padToFloat4s(b, rb, pb) : b};
  Applied.push_back({MatmulRewriteKind::Float4Rows, n.name, ""});
  return add(s);
}

int64_t Rewriter::splitKSlices(const Node &n, ValueId a, ValueId b) {
  if (!SplitK.enabled() || n.dtype != DType::F32 || n.shape.hasNames() ||
      out(a).shape.rank() != 2 || out(b).shape.rank() != 2)
    return 1;
  int64_t M = n.shape[0], N = n.shape[1], K = out(a).shape[1];
  OperandRows ra = operandRows(a), rb = operandRows(b);
  if (!paddable(ra) || !paddable(rb) || out(ra.src).shape.hasNames() ||
      out(rb.src).shape.hasNames())
    return 1;
  // The elements that padding k would copy: an operand whose rows run
  // along m or n (A stored transposed, B row-major) with that extent not
  // whole float4s is copied to whole ones anyway (splitOperand).
  auto padCopies = [&](const OperandRows &r, bool isA) -> int64_t {
    const Shape &src = out(r.src).shape;
    bool kRows = isA != r.transposed; // k is the contiguous axis
    return !kRows && src[1] % 4 != 0 ? 0 : src.numel();
  };
  int64_t copies = padCopies(ra, true) + padCopies(rb, false);
  // (a product the kernel splits into TF32 parts is sliced by that kernel's
  // waves, not by the CUDA cores' tiles)
  int64_t inKernel = !SplitK.force && SplitK.splitInKernel && !ra.transposed && rb.transposed
                         ? SplitK.splitInKernel(M, N, K, copies)
                         : 0;
  int64_t slices = SplitK.force > 0 ? SplitK.force
                   : inKernel > 0   ? inKernel
                   : SplitK.rule    ? SplitK.rule(M, N, K, copies)
                                    : 1;
  return slices < 2 || K < 8 * slices ? 1 : slices;
}

std::optional<ValueId> Rewriter::splitK(const Node &n, ValueId a, ValueId b) {
  int64_t slices = splitKSlices(n, a, b);
  if (slices < 2)
    return std::nullopt;
  int64_t K = out(a).shape[1];
  OperandRows ra = operandRows(a), rb = operandRows(b);
  int64_t ks = sliceDepth(K, slices);
  NodeSpec s = specOf(n);
  s.operands = {splitOperand(ra, true, slices, ks, K), splitOperand(rb, false, slices, ks, K)};
  s.name.clear();
  ValueId product = add(s);
  Applied.push_back({MatmulRewriteKind::SplitK, n.name,
                     std::to_string(slices) + " slices of " + std::to_string(ks)});
  return reduce(OpKind::Sum, product, 0, false, n.name);
}

ValueId Rewriter::splitOperand(const OperandRows &r, bool isA, int64_t slices, int64_t ks,
                               int64_t K) {
  ValueId v = r.src;
  const Shape &src = out(v).shape;
  int64_t kAxis = isA != r.transposed ? 1 : 0; // A [M, K], A^T [K, M], B [K, N], B^T [N, K]
  int64_t other = src[1 - kAxis];
  int64_t otherPad = kAxis == 0 ? (other + 3) / 4 * 4 - other : 0;
  if (slices * ks > K || otherPad > 0) {
    NodeSpec pad;
    pad.op = OpKind::Pad;
    pad.operands = {v};
    pad.before.assign(2, 0);
    pad.after.assign(2, 0);
    pad.after[kAxis] = slices * ks - K;
    pad.after[1 - kAxis] = otherPad;
    v = add(pad);
  }
  if (otherPad > 0) // [slices * ks, other] in rows of whole float4s
    v = slice(v, 1, 0, other);
  auto permute = [&](ValueId x, DimVector perm) {
    NodeSpec p;
    p.op = OpKind::Permute;
    p.operands = {x};
    p.perm = std::move(perm);
    return add(p);
  };
  if (kAxis == 1) { // [other, S, ks]
    ValueId r3 = reshape(v, Shape({other, slices, ks}));
    return isA ? permute(r3, DimVector{1, 0, 2}) : permute(r3, DimVector{1, 2, 0});
  }
  ValueId r3 = reshape(v, Shape({slices, ks, other})); // [S, ks, other]
  return isA ? permute(r3, DimVector{0, 2, 1}) : r3;
}

} // namespace minijit::detail
