//===- compiler/emit/ElementWork.cpp - one element's loads, math and stores -===//
// Element work is the same for every template: loads (16-byte vectors,
// gathers, or one value for all lanes), the arithmetic of one element per
// lane, accumulation into the pass's reductions, and stores. Its phases share
// the per-lane names through ElementWork.
//===----------------------------------------------------------------------===//
#include "compiler/emit/KernelEmitter.h"

#include "compiler/emit/ExprEmitter.h"
#include "compiler/lower/CudaNames.h"

#include "llvm/Support/MathExtras.h"

namespace minijit {

bool KernelEmitter::isCachedLoad(int i, const LaneCtx &lc) const {
  return lc.cached && llvm::countPopulation(Use[i]) > 1;
}

const KStash *KernelEmitter::stashOf(int i, const LaneCtx &lc) const {
  if (!lc.cached)
    return nullptr;
  for (const KStash &st : Stashes)
    if (st.value == i)
      return &st;
  return nullptr;
}

bool KernelEmitter::elementWorkUsesIndex(int pass, const LaneCtx &lc) const {
  if (lc.alignedOffset)
    return true; // the lanes outside the row are masked by position
  // argmax and argmin remember the position of the value they keep
  for (const KReduction &r : K.reductions)
    if (r.pass == pass && isArgReduction(r.op))
      return true;
  for (size_t i = 0; i < K.values.size(); ++i) {
    const KValue &v = K.values[i];
    if (Need[i] && (Use[i] >> pass & 1u) &&
        (v.kind == KValue::Kind::Index || v.kind == KValue::Kind::InRange))
      return true;
    if (!Need[i] || !(Use[i] >> pass & 1u) || K.values[i].kind != KValue::Kind::Load ||
        lc.readFrom.count(static_cast<int>(i)))
      continue;
    bool loadedEarlier = isCachedLoad(static_cast<int>(i), lc) &&
                         static_cast<int>(llvm::countTrailingZeros(Use[i])) != pass;
    if (!loadedEarlier)
      return true;
  }
  return llvm::any_of(K.stores, [&](const KStore &st) {
    return !st.perRow && (K.kind == KernelKind::Pointwise ? 0 : K.values[st.value].stage) == pass;
  });
}

void KernelEmitter::loadInto(const std::string &dst, const KParam &p, const LaneAccess &a,
                             unsigned vec) {
  if (vec == 1) {
    W.line(dst + "[0] = " + p.name + "[" + idx(a.base) + "];");
    return;
  }
  if (a.kind == LaneAccess::Kind::Contiguous) {
    W.line("mj_load(" + dst + ", " + p.name + " + " + parenIdx(a.base) + ");");
    return;
  }
  for (unsigned j = 0; j < vec; ++j)
    W.line(dst + "[" + std::to_string(j) + "] = " + p.name + "[" + idx(a.perLane[j]) + "];");
}

IndexExpr KernelEmitter::atRowPosition(const IndexExpr &offset, const LaneCtx &lc,
                                      const std::string &position) {
  std::string x = Ctx.str(lc.x);
  IndexExpr pos = Ctx.var(position, lc.rowLength);
  return Ctx.substitute(offset, [&](const std::string &n) -> std::optional<IndexExpr> {
    if (n == x)
      return pos;
    return std::nullopt;
  });
}

void KernelEmitter::loadRowLanes(const std::string &dst, const KParam &p, const IndexExpr &offset,
                                 const LaneCtx &lc) {
  std::string n = (K.index64 ? "(long long)" : "") + std::to_string(lc.rowLength);
  if (offset.key() == lc.alignedOffset->key()) {
    W.line("mj_load_row(" + dst + ", " + p.name + " + " + parenIdx(atRowPosition(offset, lc, "k0")) +
           ", k0, " + n + (lc.whole.empty() ? "" : ", " + lc.whole) + ");");
    return;
  }
  W.line("#pragma unroll");
  W.open("for (int j = 0; j < " + std::to_string(lc.vec) + "; ++j)");
  W.line("const " + Idx + " kj = mj_clamp(k0 + j, " + std::to_string(lc.rowLength - 1) +
         "); // outside the row: a position inside it, masked");
  W.line(dst + "[j] = " + p.name + "[" + idx(atRowPosition(offset, lc, "kj")) + "];");
  W.close();
}

std::vector<int> KernelEmitter::aheadLoads(int pass, const LaneCtx &lc) {
  std::vector<int> out;
  if (K.elementIndexed)
    return out; // loads at indices read per element come in value order
  for (size_t i = 0; i < K.values.size(); ++i) {
    const KValue &v = K.values[i];
    if (!Need[i] || !(Use[i] >> pass & 1u) || v.kind != KValue::Kind::Load ||
        lc.readFrom.count(static_cast<int>(i)) || isCachedLoad(static_cast<int>(i), lc))
      continue;
    LaneAccess a = analyzeLanes(Ctx, offsetIn(v.offset, lc), lc.x, lc.extent, lc.vec, lc.var);
    bool byLane = lc.alignedOffset && (a.kind != LaneAccess::Kind::Same ||
                                       Ctx.mentions(offsetIn(v.offset, lc), lc.x));
    if (lc.vec == 1 || byLane || a.kind != LaneAccess::Kind::Same)
      out.push_back(static_cast<int>(i));
  }
  return out;
}

void KernelEmitter::loadAhead(int i, const std::string &dst, const LaneCtx &lc) {
  const KValue &v = K.values[i];
  const KParam &p = K.params[v.param];
  IndexExpr offset = offsetIn(v.offset, lc);
  LaneAccess a = analyzeLanes(Ctx, offset, lc.x, lc.extent, lc.vec, lc.var);
  bool byLane =
      lc.alignedOffset && (a.kind != LaneAccess::Kind::Same || Ctx.mentions(offset, lc.x));
  if (byLane)
    loadRowLanes(dst, p, offset, lc);
  else
    loadInto(dst, p, a, lc.vec);
}

IndexExpr KernelEmitter::offsetIn(const IndexExpr &offset, const LaneCtx &lc) {
  if (!lc.elemIs)
    return offset;
  std::string x = Ctx.str(lc.elem);
  return Ctx.substitute(offset, [&](const std::string &n) -> std::optional<IndexExpr> {
    if (n == x)
      return *lc.elemIs;
    return std::nullopt;
  });
}

void KernelEmitter::elementWork(int pass, const LaneCtx &lc, const std::string &storeGuard) {
  ElementWork w(pass, lc);
  for (size_t i = 0; i < K.values.size(); ++i)
    if (Need[i] && (Use[i] >> pass & 1u) && K.values[i].kind != KValue::Kind::Literal)
      w.values.push_back(static_cast<int>(i));
  for (size_t s = 0; s < K.stores.size(); ++s) {
    const KStore &st = K.stores[s];
    if (st.perRow)
      continue;
    int stage = K.kind == KernelKind::Pointwise ? 0 : K.values[st.value].stage;
    if (stage == pass)
      w.stores.push_back(static_cast<int>(s));
  }
  w.vec = lc.vec > 1;
  assert(!(w.vec && K.elementIndexed) && "a gather's per-element loads run one element per thread");
  // Rows that start mid-vector: this vector's lanes are positions k0.. of the row.
  w.midRow = lc.alignedOffset.has_value();
  if (w.midRow)
    W.line("const " + Idx + " k0 = " + lc.var + " * " + std::to_string(lc.vec) +
           " - lead; // the position in the row of this vector's first lane");
  elementLoads(w);
  elementOutputs(w);
  if (w.vec) {
    W.line("#pragma unroll");
    W.open("for (int j = 0; j < " + std::to_string(lc.vec) + "; ++j)");
  }
  if (w.midRow) {
    W.line("const " + Idx + " kj = k0 + j; // this lane's position in the row");
    std::string inside = "kj >= 0 && kj < " + std::to_string(lc.rowLength);
    // (a whole vector's lanes are all in the row: the test folds away)
    W.line("const bool inRow = " +
           (lc.whole.empty() ? inside : "(" + lc.whole + ") || (" + inside + ")") + ";");
    w.laneGuard = "if (inRow) ";
  }
  laneValues(w);
  laneAccumulations(w);
  laneStores(w, storeGuard);
  if (!w.vec)
    return;
  W.close();
  vectorStores(w, storeGuard);
}

void KernelEmitter::elementLoads(ElementWork &w) {
  const LaneCtx &lc = w.lc;
  const int pass = w.pass;
  const bool vec = w.vec, midRow = w.midRow;
  // Loads: all first, or in value order among the arithmetic when an offset
  // reads a value computed per element (a gather's index).
  for (int i : w.values) {
    const KValue &v = K.values[i];
    if (v.kind != KValue::Kind::Load || K.elementIndexed)
      continue;
    const KParam &p = K.params[v.param];
    std::string raw = std::string(storageCType(p.dtype));
    if (auto from = lc.readFrom.find(i); from != lc.readFrom.end()) {
      if (vec)
        w.laneExpr[i] = from->second; // per lane, inside the lane loop
      else
        W.line("const " + regType(p.dtype) + " " + Names[i] + " = " + from->second + ";" +
               comment(i));
      continue;
    }
    LaneAccess a = analyzeLanes(Ctx, offsetIn(v.offset, lc), lc.x, lc.extent, lc.vec, lc.var);
    bool byLane =
        midRow && (a.kind != LaneAccess::Kind::Same || Ctx.mentions(offsetIn(v.offset, lc), lc.x));
    if (isCachedLoad(i, lc)) {
      const std::string &c = CacheNames.at(i);
      if (static_cast<int>(llvm::countTrailingZeros(Use[i])) == pass) {
        if (byLane)
          loadRowLanes(c + "[it]", p, offsetIn(v.offset, lc), lc);
        else
          loadInto(c + "[it]", p, a, lc.vec);
      }
      w.laneExpr[i] = loadConv(p.dtype, c + "[it][" + (vec ? "j" : "0") + "]");
      continue;
    }
    if (!vec || a.kind == LaneAccess::Kind::Same) {
      W.line("const " + regType(p.dtype) + " " + Names[i] + " = " +
             loadConv(p.dtype, p.name + "[" + idx(a.base) + "]") + ";" + comment(i));
      continue;
    }
    std::string r = W.unique(p.name + "_r");
    W.line("alignas(16) " + raw + " " + r + "[" + std::to_string(lc.vec) + "];");
    if (byLane)
      loadRowLanes(r, p, offsetIn(v.offset, lc), lc);
    else
      loadInto(r, p, a, lc.vec);
    w.laneExpr[i] = loadConv(p.dtype, r + "[j]");
  }
}

void KernelEmitter::elementOutputs(ElementWork &w) {
  const LaneCtx &lc = w.lc;
  const int pass = w.pass;
  const bool vec = w.vec, midRow = w.midRow;
  // Output vectors.
  for (int s : w.stores) {
    const KStore &st = K.stores[s];
    w.storeAccess[s] = analyzeLanes(Ctx, offsetIn(st.offset, lc), lc.x, lc.extent, lc.vec, lc.var);
    if (vec && (!midRow || w.aligned(offsetIn(st.offset, lc)))) {
      w.outArray[s] = W.unique(K.params[st.param].name + "_r");
      W.line("alignas(16) " + std::string(storageCType(K.params[st.param].dtype)) + " " + w.outArray[s] +
             "[" + std::to_string(lc.vec) + "];");
    }
  }
  // An online sum takes the vector's values at once (one rescale a vector).
  if (vec)
    for (size_t r = 0; r < K.reductions.size(); ++r)
      if (K.reductions[r].pass == pass && K.reductions[r].onlineMax >= 0 &&
          !lc.onlineInto.count(static_cast<int>(r))) {
        w.onlineIn[static_cast<int>(r)] = W.unique(cudaIdentifier(K.reductions[r].name) + "_in");
        W.line("float " + w.onlineIn[static_cast<int>(r)] + "[" + std::to_string(lc.vec) +
               "]; // the lanes' values for the online sum");
      }
  // So does a Welford sum (one merge a vector; where some lanes lie outside
  // the row, its lanes inside it one at a time).
  if (vec)
    for (size_t r = 0; r < K.reductions.size(); ++r)
      if (K.reductions[r].pass == pass && K.reductions[r].welfordMean >= 0) {
        w.welfordIn[static_cast<int>(r)] = W.unique(cudaIdentifier(K.reductions[r].name) + "_in");
        W.line("float " + w.welfordIn[static_cast<int>(r)] + "[" + std::to_string(lc.vec) +
               "]; // the lanes' values for Welford's update");
      }
}

void KernelEmitter::laneValues(ElementWork &w) {
  const LaneCtx &lc = w.lc;
  const int pass = w.pass;
  for (int i : w.values) {
    const KValue &v = K.values[i];
    if (v.kind == KValue::Kind::MatmulResult) {
      if (auto from = lc.readFrom.find(i); from != lc.readFrom.end())
        W.line("const float " + Names[i] + " = " + from->second + ";" + comment(i));
      continue;
    }
    if (v.kind == KValue::Kind::Load && K.elementIndexed) {
      const KParam &p = K.params[v.param];
      LaneAccess a = analyzeLanes(Ctx, offsetIn(v.offset, lc), lc.x, lc.extent, 1, lc.var);
      std::string src = p.name + "[" + idx(a.base) + "]";
      if (isCachedLoad(i, lc)) {
        const std::string &c = CacheNames.at(i);
        if (static_cast<int>(llvm::countTrailingZeros(Use[i])) == pass)
          W.line(c + "[it][0] = " + src + ";");
        src = c + "[it][0]";
      }
      W.line("const " + regType(p.dtype) + " " + Names[i] + " = " + loadConv(p.dtype, src) + ";" +
             comment(i));
      continue;
    }
    if (v.kind == KValue::Kind::Load) {
      auto it = w.laneExpr.find(i);
      if (it != w.laneExpr.end())
        W.line("const " + regType(K.params[v.param].dtype) + " " + Names[i] + " = " + it->second +
               ";");
      continue;
    }
    if (v.kind == KValue::Kind::Compute)
      computeValue(w, i);
    if (v.kind == KValue::Kind::Index || v.kind == KValue::Kind::InRange)
      W.line("const " + regType(v.dtype) + " " + Names[i] + " = " + indexValueText(i, &lc) + ";" +
             comment(i));
  }
}

void KernelEmitter::computeValue(ElementWork &w, int i) {
  const KValue &v = K.values[i];
  std::string local = "const " + regType(v.dtype) + " " + Names[i] + " = ";
  const KStash *st = stashOf(i, w.lc);
  if (!st) {
    W.line(local + computeText(i) + ";" + comment(i));
    return;
  }
  std::string kept = CacheNames.at(st->load) + "[it][" + (w.vec ? "j" : "0") + "]";
  if (w.pass > st->pass) {
    W.line(local + kept + ";" + comment(i) + " (kept from pass " + std::to_string(st->pass) + ")");
    return;
  }
  W.line(local + computeText(i) + ";" + comment(i));
  // the later passes read it in place of its load
  W.line(kept + " = " + Names[i] + "; // kept for the passes after this one, in place of %" +
         K.values[st->load].name);
}

void KernelEmitter::laneAccumulations(ElementWork &w) {
  const LaneCtx &lc = w.lc;
  const int pass = w.pass;
  const bool vec = w.vec, midRow = w.midRow;
  for (size_t r = 0; r < K.reductions.size(); ++r) {
    const KReduction &red = K.reductions[r];
    if (red.pass != pass || isScan(red.op)) // a scan combines after the element work
      continue;
    if (trackingSum(static_cast<int>(r)) >= 0) // the online sum's max is this max
      continue;
    if (red.onlineMax >= 0) {
      std::string in = midRow ? "inRow ? " + ref(red.input) + " : (-MJ_INF)" : ref(red.input);
      if (auto into = lc.onlineInto.find(static_cast<int>(r)); into != lc.onlineInto.end())
        W.line(into->second + " = " + in + ";"); // the caller updates the sum once per group
      else if (vec)
        W.line(w.onlineIn[static_cast<int>(r)] + "[j] = " + in + ";");
      else
        W.line("mj_online_exp_sum(" + accName(static_cast<int>(r)) + ", " +
               accOnlineMaxName(static_cast<int>(r)) + ", " + ref(red.input) + ");");
      continue;
    }
    if (red.welfordMean >= 0) {
      std::string triple = accName(static_cast<int>(r)) + ", " +
                           accWelfordMeanName(static_cast<int>(r)) + ", " +
                           accWelfordCountName(static_cast<int>(r));
      if (auto in = w.welfordIn.find(static_cast<int>(r)); in != w.welfordIn.end())
        W.line(in->second + "[j] = " + ref(red.input) + ";");
      else
        W.line(w.laneGuard + "mj_welford_push(" + triple + ", " + ref(red.input) + ");");
      continue;
    }
    if (isArgReduction(red.op)) {
      // The position along the reduced axis is the element's k.
      W.line(w.laneGuard + "mj_arg_update<" + (red.op == OpKind::Argmax ? "true" : "false") +
             ">(" + accName(static_cast<int>(r)) + ", " + accIndexName(static_cast<int>(r)) +
             ", " + ref(red.input) + ", (int)(" + laneIndexText(K.k, &lc) + "));");
      continue;
    }
    W.line(w.laneGuard + accumulateText(red.op, accIsInt(static_cast<int>(r)),
                                      accName(static_cast<int>(r)), ref(red.input)));
  }
}

void KernelEmitter::laneStores(ElementWork &w, const std::string &storeGuard) {
  const LaneCtx &lc = w.lc;
  const bool vec = w.vec, midRow = w.midRow;
  for (int s : w.stores) {
    const KStore &st = K.stores[s];
    const KParam &p = K.params[st.param];
    std::string val = storeConv(p.dtype, ref(st.value));
    if (midRow && !w.outArray.count(s)) {
      // not aligned with the vectors: lane by lane, inside the row only
      std::string guard = storeGuard.empty() ? "if (inRow) "
                                             : storeGuard.substr(0, storeGuard.size() - 2) +
                                                   " && inRow) ";
      W.line(guard + p.name + "[" + idx(atRowPosition(offsetIn(st.offset, lc), lc, "kj")) +
             "] = " + val + ";");
    } else if (vec)
      W.line(w.outArray[s] + "[j] = " + val + ";");
    else
      W.line(storeGuard + p.name + "[" + idx(w.storeAccess[s].base) + "] = " + val + ";");
  }
}

void KernelEmitter::vectorStores(ElementWork &w, const std::string &storeGuard) {
  const LaneCtx &lc = w.lc;
  const bool midRow = w.midRow;
  for (const auto &[r, in] : w.onlineIn)
    W.line("mj_online_exp_sum(" + accName(r) + ", " + accOnlineMaxName(r) + ", " + in + ");");
  for (const auto &[r, in] : w.welfordIn)
    W.line("mj_welford_add" + std::string(midRow ? "_row" : "") + "(" + accName(r) + ", " +
           accWelfordMeanName(r) + ", " + accWelfordCountName(r) + ", " + in +
           (midRow ? ", k0, " + std::to_string(lc.rowLength) : std::string()) + ");");
  for (int s : w.stores) {
    const KStore &st = K.stores[s];
    const KParam &p = K.params[st.param];
    const LaneAccess &a = w.storeAccess[s];
    if (midRow) {
      if (w.outArray.count(s))
        W.line(storeGuard + "mj_store_row(" + p.name + " + " +
               parenIdx(atRowPosition(offsetIn(st.offset, lc), lc, "k0")) + ", " + w.outArray[s] +
               ", k0, " + (K.index64 ? "(long long)" : "") + std::to_string(lc.rowLength) +
               (lc.whole.empty() ? "" : ", " + lc.whole) + ");");
      continue;
    }
    if (a.kind == LaneAccess::Kind::Contiguous) {
      W.line(storeGuard + "mj_store(" + p.name + " + " + parenIdx(a.base) + ", " + w.outArray[s] +
             ");");
      continue;
    }
    for (unsigned j = 0; j < lc.vec; ++j)
      W.line(storeGuard + p.name + "[" + idx(a.perLane[j]) + "] = " + w.outArray[s] + "[" +
             std::to_string(j) + "];");
  }
}

} // namespace minijit
