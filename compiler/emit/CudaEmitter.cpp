//===- compiler/emit/CudaEmitter.cpp - readable CUDA C++ from a kernel ----===//
// Names the kernel. The templates' bodies (in their family folders,
// compiler/templates/*/) are built from the shared pieces of
// emit/KernelEmitter.cpp and reached through compiler/templates/
// (emitKernel).
//===----------------------------------------------------------------------===//
#include "compiler/emit/CudaEmitter.h"

#include "compiler/emit/KernelEmitter.h"

#include "llvm/Support/ErrorHandling.h"

#include <set>

namespace minijit {

bool holdsRandom(const LoweredKernel &k) {
  return llvm::any_of(k.held, [](const KHeld &h) { return opClass(h.op) == OpClass::Random; });
}

bool holdsWelford(const LoweredKernel &k) {
  for (const KReduction &r : k.reductions)
    if (r.welfordMean >= 0)
      return true;
  return false;
}

bool holdsI64(const LoweredKernel &k) {
  auto isI64 = [](DType t) { return t == DType::I64; };
  return llvm::any_of(k.values, [&](const KValue &v) { return isI64(v.dtype); }) ||
         llvm::any_of(k.params, [&](const KParam &p) { return isI64(p.dtype); }) ||
         llvm::any_of(k.reductions, [&](const KReduction &r) { return isI64(r.dtype); });
}

std::string kernelName(const LoweredKernel &k, const Schedule &s) {
  std::set<OpKind> ops;
  std::vector<std::string> order;
  int reductions = 0, sums = 0;
  for (const KHeld &h : k.held) {
    bool reduce = opClass(h.op) == OpClass::Reduce;
    bool computes = opClass(h.op) == OpClass::Concat || opClass(h.op) == OpClass::Iota ||
                    opClass(h.op) == OpClass::Gather || opClass(h.op) == OpClass::Random;
    if (!isElementwise(h.op) && !reduce && !computes)
      continue;
    if (reduce) {
      ++reductions;
      sums += h.op == OpKind::Sum || h.op == OpKind::Mean;
    }
    if (ops.insert(h.op).second)
      order.push_back(std::string(opName(h.op)));
  }
  std::string suffix = "_k" + std::to_string(k.index);
  if (k.kind == KernelKind::Attention)
    return "attn" + suffix;
  if (k.kind == KernelKind::AttentionBackwardKV)
    return "attn_bwd_kv" + suffix;
  if (k.kind == KernelKind::AttentionBackwardQ)
    return "attn_bwd_q" + suffix;
  if (k.kind == KernelKind::Matmul) {
    std::string n = "mm";
    for (size_t i = 0; i < order.size() && i < 4; ++i)
      n += "_" + order[i];
    return n + suffix;
  }
  if (k.kind == KernelKind::Pointwise) {
    if (order.empty())
      return "copy" + suffix;
    std::string n = "poi";
    for (size_t i = 0; i < order.size() && i < 4; ++i)
      n += "_" + order[i];
    return n + suffix;
  }
  if (k.kind == KernelKind::Scan) {
    std::string n = "scan";
    for (const KHeld &h : k.held)
      if (opClass(h.op) == OpClass::Scan && n.find(opName(h.op)) == std::string::npos)
        n += "_" + std::string(opName(h.op));
    return n + suffix;
  }
  std::string what;
  auto has = [&](OpKind o) { return ops.count(o) > 0; };
  if (has(OpKind::Max) && has(OpKind::Exp) && has(OpKind::Sum) && has(OpKind::Div))
    what = "softmax";
  else if (has(OpKind::Max) && has(OpKind::Exp) && has(OpKind::Sum) && has(OpKind::Log))
    what = "logsumexp";
  else if (sums == 2 && reductions == 2 && has(OpKind::Rsqrt))
    what = "layernorm";
  else if (sums == 1 && reductions == 1 && has(OpKind::Rsqrt))
    what = "rmsnorm";
  else {
    what = "red";
    std::set<OpKind> seen;
    for (const KHeld &h : k.held)
      if (opClass(h.op) == OpClass::Reduce && seen.insert(h.op).second)
        what += "_" + std::string(opName(h.op));
  }
  return what + (s.kind() == ScheduleKind::OuterCol ? "_col" : "_row") + suffix;
}

} // namespace minijit
