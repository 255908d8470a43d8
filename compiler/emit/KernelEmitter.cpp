//===- compiler/emit/KernelEmitter.cpp - what every template shares -------===//
// The header, per-row values and stores, and the reductions' accumulators
// (element work is in ElementWork.cpp).
//===----------------------------------------------------------------------===//
#include "compiler/emit/KernelEmitter.h"

#include "compiler/emit/CudaEmitter.h"
#include "compiler/emit/ExprEmitter.h"
#include "compiler/lower/CudaNames.h"
#include "ir/Printer.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace minijit {

KernelEmitter::KernelEmitter(const LoweredKernel &k, const Schedule &s, const std::string &name)
    : K(k), S(s), Name(name), Ctx(k.ctx), Need(neededValues(k)), Use(passesUsing(k)),
      Idx(k.index64 ? "long long" : "int") {
  for (const KParam &p : K.params)
    W.reserve(p.name);
  // A named size is a parameter of its own name, where that is free.
  if (K.symbolic)
    for (const std::string &n : K.symbolic->names)
      SizeParams.push_back(W.unique(isReservedName(n) ? "dim_" + n : n));
  // A gather's index in an offset is the local holding it (widened with
  // 64-bit indices, so the product with a stride does not overflow).
  Ctx.setValueNamer([this](int v) { return K.index64 ? "(long long)" + ref(v) : ref(v); });
  Names.resize(K.values.size());
  for (size_t i = 0; i < K.values.size(); ++i) {
    const KValue &v = K.values[i];
    switch (v.kind) {
    case KValue::Kind::Literal: break;
    case KValue::Kind::Load: Names[i] = W.unique(K.params[v.param].name + "_v"); break;
    case KValue::Kind::Compute:
    case KValue::Kind::ReduceResult:
    case KValue::Kind::MatmulResult:
    case KValue::Kind::Index: Names[i] = W.unique(cudaIdentifier(v.name)); break;
    case KValue::Kind::InRange: Names[i] = W.unique(cudaIdentifier(v.name) + "_in"); break;
    }
  }
}

namespace {

/// The outer extent in words: its expression for a symbolic kernel
/// ("B rows"), else the number ("4096 rows").
std::string extentWords(const LoweredKernel &k, int64_t value, const char *what) {
  if (k.symbolic)
    return k.symbolic->extent.str() + " " + what + "s";
  return std::to_string(value) + " " + what + (value == 1 ? "" : "s");
}

/// What the kernel computes, for the first line of its header.
std::string kernelSummary(const LoweredKernel &k) {
  switch (k.kind) {
  case KernelKind::Pointwise: return "pointwise over " + typeText(k.dtype, k.domain);
  case KernelKind::Reduction:
    return llvm::formatv("reduction of {0} over axes {1} ({2} of {3})", k.domain.str(),
                         Shape(k.reducedAxes).str(), extentWords(k, k.rows, "row"), k.K)
        .str();
  case KernelKind::Scan:
    return llvm::formatv("scan of {0} along axis {1} ({2} of {3})", k.domain.str(),
                         k.reducedAxes[0], extentWords(k, k.rows, "row"), k.K)
        .str();
  case KernelKind::Matmul: {
    bool epilogue = llvm::any_of(k.held, [](const KHeld &h) { return isElementwise(h.op); });
    std::string m = k.symbolic ? k.symbolic->extent.str() : std::to_string(k.matmul->M);
    return llvm::formatv("matmul, {0} x [{1}, {2}] @ [{2}, {3}]{4}", k.matmul->batch, m,
                         k.matmul->K, k.matmul->N, epilogue ? ", with its elementwise epilogue" : "")
        .str();
  }
  case KernelKind::Attention:
    return llvm::formatv("attention, {0} x softmax([{1}, {2}] @ [{2}, {3}]) @ [{3}, {4}]",
                         k.matmul->batch, k.matmul->M, k.matmul->K, k.matmul->N,
                         k.attention->valueDim)
        .str();
  case KernelKind::AttentionBackwardKV:
  case KernelKind::AttentionBackwardQ:
    return llvm::formatv("attention backward ({0}), {1} x softmax([{2}, {3}] @ [{3}, {4}]) @ [{4}, "
                         "{5}], FlashAttention-2's",
                         k.kind == KernelKind::AttentionBackwardQ ? "dQ" : "dK, dV",
                         k.matmul->batch, k.matmul->M, k.matmul->K, k.matmul->N,
                         k.attention->valueDim)
        .str();
  }
  llvm_unreachable("bad kernel kind");
}

/// The local a symbolic kernel computes its outer extent in.
const char *extentLocal(KernelKind kind) {
  switch (kind) {
  case KernelKind::Pointwise: return "mj_numel";
  case KernelKind::Reduction:
  case KernelKind::Scan: return "mj_rows";
  case KernelKind::Matmul:
  case KernelKind::Attention:
  case KernelKind::AttentionBackwardKV:
  case KernelKind::AttentionBackwardQ: return "mj_m";
  }
  llvm_unreachable("bad kernel kind");
}

} // namespace

std::string KernelEmitter::extent() const {
  return K.symbolic ? std::string(extentLocal(K.kind)) : std::to_string(outerExtent(K));
}

std::string KernelEmitter::extentMinus1() const {
  if (K.symbolic)
    return extent() + " - 1";
  return std::to_string(std::stoll(extent()) - 1);
}

void KernelEmitter::header(const std::string &schedule) {
  W.line("// kernel k" + std::to_string(K.index) + " " + Name + ": " + kernelSummary(K));
  W.line("// schedule: " + schedule);
  for (const KHeld &h : K.held)
    W.line("//   " + h.text);
  std::string reads, writes;
  for (const KParam &p : K.params) {
    std::string &list = p.written ? writes : reads;
    list += (list.empty() ? "%" : ", %") + p.irName;
  }
  W.line("// reads " + (reads.empty() ? std::string("nothing") : reads) + "; writes " + writes);
  std::string bounds = std::to_string(S.geometry().block);
  if (S.geometry().minBlocksPerSM)
    bounds += ", " + std::to_string(S.geometry().minBlocksPerSM);
  // A cluster's size is part of the kernel: any launch groups its blocks so.
  unsigned blocks = S.geometry().cluster;
  std::string cluster =
      blocks > 1 ? "__cluster_dims__(" + std::to_string(blocks) + ", 1, 1) " : "";
  std::string sig = "extern \"C\" __global__ void " + cluster + "__launch_bounds__(" + bounds +
                    ") " + Name + "(";
  for (size_t i = 0; i < K.params.size(); ++i) {
    const KParam &p = K.params[i];
    sig += i ? ", " : "";
    sig += (p.written ? "" : "const ") + std::string(storageCType(p.dtype)) + " *__restrict__ " + p.name;
  }
  for (const std::string &n : SizeParams)
    sig += (sig.back() == '(' ? "" : ", ") + std::string("const long long ") + n;
  if (workspaceBytes(K, S) > 0)
    sig += std::string(sig.back() == '(' ? "" : ", ") + "unsigned *__restrict__ mj_work";
  if (S.kind() == ScheduleKind::MatmulWgmma) // A's and B's TMA descriptors, encoded by the host
    sig += ", const __grid_constant__ MjTensorMap mj_tmA, const __grid_constant__ MjTensorMap mj_tmB";
  W.raw(sig + ") {\n");
  W.setIndent(1);
  if (!K.symbolic)
    return;
  // The extent from the named sizes, as this launch binds them.
  const DimExpr &x = K.symbolic->extent;
  std::string value = x.coef == 1 ? "" : std::to_string(x.coef);
  for (const std::string &n : x.names) {
    size_t at = llvm::find(K.symbolic->names, n) - K.symbolic->names.begin();
    value += (value.empty() ? "" : " * ") + SizeParams[at];
  }
  W.line("const " + Idx + " " + extent() + " = (" + Idx + ")(" + value + "); // " + x.str() +
         ", bound at launch");
}

std::string KernelEmitter::ref(int i) const {
  const KValue &v = K.values[i];
  if (v.kind == KValue::Kind::Literal) {
    auto as = LiteralAs.find(i);
    return literalOf(as == LiteralAs.end() ? v.literal : as->second, v.dtype);
  }
  return Names[i];
}

std::string KernelEmitter::parenIdx(const IndexExpr &e) {
  std::string s = idx(e);
  return s.find(' ') == std::string::npos ? s : "(" + s + ")";
}

std::string KernelEmitter::comment(int i) const {
  const KValue &v = K.values[i];
  if (v.kind == KValue::Kind::Load)
    return " // %" + v.name;
  return " // " + v.text;
}

std::vector<std::string> KernelEmitter::cacheDeclarations(unsigned itemsPerThread, unsigned vec) {
  Stashes = cachedStashes(K);
  Use = passesUsing(K, Stashes);
  // Named in the order element work first reads them: by pass, then value.
  std::vector<std::string> decls;
  for (int pass = 0; pass < K.passes; ++pass)
    for (size_t i = 0; i < K.values.size(); ++i) {
      const KValue &v = K.values[i];
      if (!Need[i] || v.kind != KValue::Kind::Load || llvm::countPopulation(Use[i]) < 2 ||
          static_cast<int>(llvm::countTrailingZeros(Use[i])) != pass)
        continue;
      const KParam &p = K.params[v.param];
      std::string n = W.unique(p.name + "_c");
      CacheNames[static_cast<int>(i)] = n;
      decls.push_back("alignas(16) " + std::string(storageCType(p.dtype)) + " " + n + "[" +
                      std::to_string(itemsPerThread) + "][" + std::to_string(vec) + "];");
    }
  return decls;
}

std::string KernelEmitter::computeText(int i) const {
  const KValue &v = K.values[i];
  llvm::SmallVector<std::string, 3> args;
  llvm::SmallVector<DType, 3> types;
  for (int a : v.args) {
    args.push_back(ref(a));
    types.push_back(K.values[a].dtype);
  }
  return elementwiseExpr(v.op, v.dtype, args, types);
}

std::string KernelEmitter::laneIndexText(const IndexExpr &e, const LaneCtx *lc) {
  if (!lc)
    return idx(e);
  // In a tiled kernel the element index stands for the tile's coordinates.
  IndexExpr in = offsetIn(e, *lc);
  // The element index of this lane: x = var * vec + j.
  std::string xName = Ctx.str(lc->x);
  IndexExpr lane = Ctx.var(lc->var, std::max<int64_t>(1, lc->extent / lc->vec));
  if (lc->alignedOffset)
    lane = Ctx.var("kj", lc->rowLength); // the lane's position, defined in the lane loop
  else if (lc->vec > 1)
    lane = Ctx.add(Ctx.mul(lane, lc->vec), Ctx.var("j", lc->vec));
  return idx(Ctx.substitute(in, [&](const std::string &n) -> std::optional<IndexExpr> {
    if (n == xName)
      return lane;
    return std::nullopt;
  }));
}

std::string KernelEmitter::indexValueText(int i, const LaneCtx *lc) {
  const KValue &v = K.values[i];
  auto text = [&](const IndexExpr &e) { return laneIndexText(e, lc); };
  if (v.kind == KValue::Kind::Index)
    return elementwiseExpr(OpKind::Iota, v.dtype, {text(v.offset)}, {DType::I32});
  std::string all;
  for (const KValue::Test &t : v.tests) {
    auto [lo, hi] = Ctx.range(t.e);
    std::string e = text(t.e);
    if (lo < t.lo)
      all += (all.empty() ? "" : " && ") + e + " >= " + std::to_string(t.lo);
    if (hi > t.hi)
      all += (all.empty() ? "" : " && ") + e + " <= " + std::to_string(t.hi);
  }
  return all;
}

// ---- reductions

std::string KernelEmitter::reductionLocal(std::map<int, std::string> &names, int r,
                                          const std::string &suffix) {
  auto it = names.find(r);
  if (it != names.end())
    return it->second;
  std::string n = W.unique(cudaIdentifier(K.reductions[r].name) + suffix);
  names[r] = n;
  return n;
}

std::string KernelEmitter::accName(int r) { return reductionLocal(AccNames, r, "_acc"); }

bool KernelEmitter::accIsInt(int r) const {
  const KReduction &red = K.reductions[r];
  if (isArgReduction(red.op))
    return isInteger(K.values[red.input].dtype);
  return isInteger(red.dtype);
}

bool KernelEmitter::accIsLong(int r) const {
  const KReduction &red = K.reductions[r];
  if (isArgReduction(red.op))
    return K.values[red.input].dtype == DType::I64;
  return red.dtype == DType::I64;
}

std::string KernelEmitter::accType(int r) const {
  return accIsLong(r) ? "long long" : accIsInt(r) ? "int" : "float";
}

bool KernelEmitter::hasArgReduction() const {
  return llvm::any_of(K.reductions, [](const KReduction &r) { return isArgReduction(r.op); });
}

std::string KernelEmitter::accIndexName(int r) { return reductionLocal(AccIndexNames, r, "_at"); }

bool KernelEmitter::hasReductionOf(bool isInt) const {
  for (size_t r = 0; r < K.reductions.size(); ++r)
    if (accIsInt(static_cast<int>(r)) == isInt && !accIsLong(static_cast<int>(r)))
      return true;
  return false;
}

bool KernelEmitter::hasLongReduction() const {
  for (size_t r = 0; r < K.reductions.size(); ++r)
    if (accIsLong(static_cast<int>(r)))
      return true;
  return false;
}

std::string KernelEmitter::scratchName(int r, bool column) const {
  if (accIsLong(r))
    return column ? "mj_col_l" : "mj_smem_l";
  if (accIsInt(r))
    return column ? "mj_col_i" : "mj_smem_i";
  return column ? "mj_col_f" : "mj_smem_f";
}

void KernelEmitter::declareAccumulators(int pass) {
  for (size_t r = 0; r < K.reductions.size(); ++r) {
    const KReduction &red = K.reductions[r];
    if (red.pass != pass)
      continue;
    W.line(accType(static_cast<int>(r)) + " " + accName(static_cast<int>(r)) + " = " +
           accIdentity(static_cast<int>(r)) + ";");
    if (isArgReduction(red.op)) {
      W.line("int " + accIndexName(static_cast<int>(r)) + " = " +
             secondIdentity(static_cast<int>(r)) + "; // its position");
      continue;
    }
    if (red.onlineMax >= 0)
      W.line("float " + accOnlineMaxName(static_cast<int>(r)) + " = " +
             reduceText(OpKind::Max, false).identity + "; // the max it is relative to");
    if (red.welfordMean >= 0)
      W.line("float " + accWelfordMeanName(static_cast<int>(r)) + " = 0.0f, " +
             accWelfordCountName(static_cast<int>(r)) +
             " = 0.0f; // the mean and count of the elements seen (Welford)");
  }
}

std::string KernelEmitter::accWelfordMeanName(int r) {
  return reductionLocal(WelfordMeanNames, r, "_mean");
}

std::string KernelEmitter::accWelfordCountName(int r) {
  return reductionLocal(WelfordCountNames, r, "_n");
}

std::string KernelEmitter::accOnlineMaxName(int r) {
  return reductionLocal(OnlineMaxNames, r, "_max");
}

std::string KernelEmitter::accIdentity(int r) const {
  const KReduction &red = K.reductions[r];
  OpKind op = red.op == OpKind::Argmax ? OpKind::Max : red.op == OpKind::Argmin ? OpKind::Min : red.op;
  return reduceText(op, accIsInt(r), accIsLong(r)).identity;
}

std::string KernelEmitter::secondName(int r) {
  return isArgReduction(K.reductions[r].op) ? accIndexName(r) : accOnlineMaxName(r);
}

std::string KernelEmitter::secondIdentity(int r) const {
  return isArgReduction(K.reductions[r].op) ? "2147483647" : reduceText(OpKind::Max, false).identity;
}

std::vector<std::string> KernelEmitter::partialLocals(int r) {
  const KReduction &red = K.reductions[r];
  if (red.welfordMean >= 0)
    return {accName(r), accWelfordMeanName(r), accWelfordCountName(r)};
  if (hasSecondWord(red))
    return {accName(r), secondName(r)};
  return {accName(r)};
}

std::vector<std::string> KernelEmitter::partialIdentities(int r) const {
  const KReduction &red = K.reductions[r];
  if (red.welfordMean >= 0)
    return {"0.0f", "0.0f", "0.0f"}; // the empty triple
  if (hasSecondWord(red))
    return {accIdentity(r), secondIdentity(r)};
  return {accIdentity(r)};
}

namespace {

/// Where word `w` of reduction r's partial lies among a block's words.
int partialSlot(const LoweredKernel &k, int r, int w) {
  return w == 0 ? r : secondWordSlot(k, r) + w - 1;
}

} // namespace

void KernelEmitter::storePartial(int r, const std::function<std::string(int)> &at) {
  assert(!accIsLong(r) && "i64 reductions are not split over blocks (noSplitReductions)");
  std::vector<std::string> locals = partialLocals(r);
  for (int w = 0; w < static_cast<int>(locals.size()); ++w) {
    // the value of an int reduction and an argmax's position are ints, the rest floats
    bool isInt = w == 0 ? accIsInt(r) : isArgReduction(K.reductions[r].op);
    W.line("mj_partial[" + at(partialSlot(K, r, w)) + "] = " +
           (isInt ? "(unsigned)" + locals[w] : "__float_as_uint(" + locals[w] + ")") + ";");
  }
}

std::vector<std::string> KernelEmitter::loadedPartial(int r,
                                                      const std::function<std::string(int)> &at) {
  std::vector<std::string> words;
  for (int w = 0; w < 1 + extraWords(K.reductions[r]); ++w) {
    std::string raw = "__ldcg(&mj_partial[" + at(partialSlot(K, r, w)) + "])";
    bool isInt = w == 0 ? accIsInt(r) : isArgReduction(K.reductions[r].op);
    words.push_back(isInt ? "(int)" + raw : "__uint_as_float(" + raw + ")");
  }
  return words;
}

bool KernelEmitter::hasOnlineSum() const {
  return llvm::any_of(K.reductions, [](const KReduction &r) { return r.onlineMax >= 0; });
}

bool KernelEmitter::hasWelford() const { return holdsWelford(K); }

int KernelEmitter::trackingSum(int r) const {
  for (size_t s = 0; s < K.reductions.size(); ++s)
    if (K.reductions[s].onlineMax == r && K.reductions[s].pass == K.reductions[r].pass)
      return static_cast<int>(s);
  return -1;
}

void KernelEmitter::finishReductions(int pass, ReduceScope scope, unsigned width, bool define) {
  std::string n = std::to_string(width);
  for (size_t r = 0; r < K.reductions.size(); ++r) {
    const KReduction &red = K.reductions[r];
    if (red.pass != pass || trackingSum(static_cast<int>(r)) >= 0)
      continue;
    bool isInt = accIsInt(static_cast<int>(r)), isLong = accIsLong(static_cast<int>(r));
    std::string smem = scratchName(static_cast<int>(r), false);
    std::string col = scratchName(static_cast<int>(r), true);
    std::string acc = accName(static_cast<int>(r));
    if (red.onlineMax >= 0) {
      std::string max = accOnlineMaxName(static_cast<int>(r));
      switch (scope) {
      case ReduceScope::Warp:
        W.line("mj_warp_reduce_online<" + n + ">(" + acc + ", " + max + ");");
        break;
      case ReduceScope::Block:
        W.line("mj_block_reduce_online<" + n + ">(" + acc + ", " + max +
               ", mj_smem_f, mj_smem_m);");
        break;
      case ReduceScope::Column: llvm_unreachable("online sums run in row kernels only");
      }
      continue;
    }
    if (red.welfordMean >= 0) {
      std::string triple = acc + ", " + accWelfordMeanName(static_cast<int>(r)) + ", " +
                           accWelfordCountName(static_cast<int>(r));
      switch (scope) {
      case ReduceScope::Warp: W.line("mj_warp_reduce_welford<" + n + ">(" + triple + ");"); break;
      case ReduceScope::Block:
        W.line("mj_block_reduce_welford<" + n + ">(" + triple +
               ", mj_smem_f, mj_smem_wmean, mj_smem_wn);");
        break;
      case ReduceScope::Column: llvm_unreachable("Welford sums run in row kernels only");
      }
      continue;
    }
    if (isArgReduction(red.op)) {
      std::string args = std::string("<") + (red.op == OpKind::Argmax ? "true" : "false") + ", " +
                         n + ">(" + acc + ", " + accIndexName(static_cast<int>(r));
      switch (scope) {
      case ReduceScope::Warp: W.line("mj_warp_argreduce" + args + ");"); break;
      case ReduceScope::Block:
        W.line("mj_block_argreduce" + args + ", " + smem +
               ", mj_smem_at);");
        break;
      case ReduceScope::Column:
        W.line("mj_col_argreduce" + args + ", " + col +
               ", mj_col_at);");
        break;
      }
      continue;
    }
    std::string functor = reduceText(red.op, isInt, isLong).functor;
    switch (scope) {
    case ReduceScope::Warp:
      W.line(acc + " = mj_warp_reduce<" + functor + ", " + n + ">(" + acc + ");");
      break;
    case ReduceScope::Block:
      W.line(acc + " = mj_block_reduce<" + functor + ", " + n + ">(" + acc + ", " +
             smem + ");");
      break;
    case ReduceScope::Column:
      W.line(acc + " = mj_col_reduce<" + functor + ", " + n + ">(" + acc + ", " +
             col + ");");
      break;
    }
  }
  // A max that an online sum tracks is that sum's max, combined with it.
  for (size_t r = 0; r < K.reductions.size(); ++r)
    if (K.reductions[r].pass == pass && trackingSum(static_cast<int>(r)) >= 0)
      W.line(accName(static_cast<int>(r)) + " = " + accOnlineMaxName(trackingSum(static_cast<int>(r))) +
             "; // the max the online sum is relative to");
  if (define)
    defineReductions(pass);
}

void KernelEmitter::defineReductions(int pass) {
  for (size_t r = 0; r < K.reductions.size(); ++r) {
    const KReduction &red = K.reductions[r];
    if (red.pass == pass && red.op == OpKind::Mean)
      W.line(accName(static_cast<int>(r)) + " *= " +
             floatLiteral(1.0 / static_cast<double>(K.K)) + ";");
    if (red.pass == pass && red.onlineMax >= 0)
      W.line(accName(static_cast<int>(r)) + " = mj_online_finish(" +
             accName(static_cast<int>(r)) + ", " + accOnlineMaxName(static_cast<int>(r)) +
             "); // now relative to the row's max");
  }
  for (size_t i = 0; i < K.values.size(); ++i) {
    const KValue &v = K.values[i];
    if (v.kind == KValue::Kind::ReduceResult && Need[i] && K.reductions[v.reduction].pass == pass)
      W.line("const " + regType(v.dtype) + " " + Names[i] + " = " +
             (isArgReduction(v.op) ? accIndexName(v.reduction) : accName(v.reduction)) + ";" +
             comment(static_cast<int>(i)));
  }
}

void KernelEmitter::rowValues(int stage) {
  for (size_t i = 0; i < K.values.size(); ++i) {
    const KValue &v = K.values[i];
    if (!Need[i] || !v.perRow || v.stage != stage)
      continue;
    if (v.kind == KValue::Kind::Load) {
      const KParam &p = K.params[v.param];
      W.line("const " + regType(p.dtype) + " " + Names[i] + " = " +
             loadConv(p.dtype, p.name + "[" + idx(v.offset) + "]") + ";" +
             comment(static_cast<int>(i)));
    } else if (v.kind == KValue::Kind::Compute) {
      W.line("const " + regType(v.dtype) + " " + Names[i] + " = " +
             computeText(static_cast<int>(i)) + ";" + comment(static_cast<int>(i)));
    } else if (v.kind == KValue::Kind::Index || v.kind == KValue::Kind::InRange) {
      W.line("const " + regType(v.dtype) + " " + Names[i] + " = " +
             indexValueText(static_cast<int>(i), nullptr) + ";" + comment(static_cast<int>(i)));
    }
  }
}

void KernelEmitter::rowStores(const std::string &who) {
  std::vector<std::string> lines;
  for (const KStore &st : K.stores) {
    if (!st.perRow)
      continue;
    const KParam &p = K.params[st.param];
    lines.push_back(p.name + "[" + idx(st.offset) + "] = " + storeConv(p.dtype, ref(st.value)) +
                    ";");
  }
  if (lines.empty())
    return;
  W.open("if (" + who + ")");
  for (const std::string &l : lines)
    W.line(l);
  W.close();
}

std::string KernelEmitter::passTitle(int pass) const {
  std::string what;
  for (const KReduction &r : K.reductions)
    if (r.pass == pass)
      what += (what.empty() ? ": " : ", ") + std::string("%") + r.name + " = " + std::string(opName(r.op)) +
              (r.onlineMax >= 0 ? " of exp(x - %" + K.reductions[r.onlineMax].name + "), online"
               : r.welfordMean >= 0
                   ? " of (x - %" + K.reductions[r.welfordMean].name + ")^2, Welford"
                   : std::string());
  bool stores = llvm::any_of(K.stores, [&](const KStore &st) {
    return !st.perRow && K.values[st.value].stage == pass;
  });
  if (stores)
    what += (what.empty() ? ": " : ", then ") + std::string("store");
  return "// pass " + std::to_string(pass) + what;
}

} // namespace minijit
