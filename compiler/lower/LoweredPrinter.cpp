//===- compiler/lower/LoweredPrinter.cpp - the lowered kernel as text -----===//
#include "compiler/lower/LoweredPrinter.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <cstdlib>

namespace minijit {

namespace {

std::string_view kindName(KernelKind k) {
  switch (k) {
  case KernelKind::Pointwise: return "pointwise";
  case KernelKind::Reduction: return "reduction";
  case KernelKind::Matmul: return "matmul";
  case KernelKind::Scan: return "scan";
  case KernelKind::Attention: return "attention";
  case KernelKind::AttentionBackwardKV: return "attention backward (dK, dV)";
  case KernelKind::AttentionBackwardQ: return "attention backward (dQ)";
  }
  llvm_unreachable("bad kernel kind");
}

/// The shortest text that reads back as the same double.
std::string literalText(double v) {
  char buf[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

class Printer {
public:
  Printer(llvm::raw_ostream &os, const LoweredKernel &k) : OS(os), K(k) {}

  void print(std::string_view name) {
    OS << "kernel " << name << ": " << kindName(K.kind) << " over " << K.domain.str();
    if (!K.reducedAxes.empty()) {
      OS << " reducing axes [";
      for (size_t i = 0; i < K.reducedAxes.size(); ++i)
        OS << (i ? ", " : "") << K.reducedAxes[i];
      OS << "]";
    }
    if (K.index64)
      OS << ", 64-bit indices";
    OS << "\n";
    printExtents();
    for (size_t i = 0; i < K.params.size(); ++i) {
      const KParam &p = K.params[i];
      OS << llvm::formatv("  param {0} {1}: {2}[{3}] %{4}{5}\n", i, p.name, dtypeName(p.dtype),
                          p.numel, p.irName, p.written ? ", written" : "");
    }
    if (K.matmul)
      printMatmul(*K.matmul);
    for (size_t i = 0; i < K.values.size(); ++i)
      printValue(static_cast<int>(i), K.values[i]);
    for (size_t i = 0; i < K.reductions.size(); ++i) {
      const KReduction &r = K.reductions[i];
      OS << llvm::formatv("  reduce {0} %{1} = {2} of v{3}, pass {4}", i, r.name, opName(r.op),
                          r.input, r.pass);
      if (r.onlineMax >= 0)
        OS << llvm::formatv(" (online: exp(v{0} - reduction {1}))", r.input, r.onlineMax);
      if (r.welfordMean >= 0)
        OS << llvm::formatv(" (Welford: (v{0} - reduction {1})^2)", r.input, r.welfordMean);
      OS << "\n";
    }
    for (const KStore &s : K.stores)
      OS << llvm::formatv("  store v{0} -> {1}[{2}]{3}\n", s.value, K.params[s.param].name,
                          K.ctx.str(s.offset), s.perRow ? " (once per row)" : "");
  }

private:
  void printExtents() {
    switch (K.kind) {
    case KernelKind::Pointwise:
      OS << llvm::formatv("  i in [0, {0})\n", K.numel);
      return;
    case KernelKind::Reduction:
    case KernelKind::Scan:
      OS << llvm::formatv("  row in [0, {0}), k in [0, {1}), {2} pass{3}\n", K.rows, K.K,
                          K.passes, K.passes == 1 ? "" : "es");
      return;
    case KernelKind::Matmul:
    case KernelKind::Attention:
    case KernelKind::AttentionBackwardKV:
    case KernelKind::AttentionBackwardQ:
      if (K.matmul)
        OS << llvm::formatv("  b in [0, {0}), m in [0, {1}), n in [0, {2}), kk in [0, {3})\n",
                            K.matmul->batch, K.matmul->M, K.matmul->N, K.matmul->K);
      if (K.attention && K.kind == KernelKind::Attention)
        OS << llvm::formatv("  softmax over n of value {0}, then @ V = {1}[{2}] into {3}[{4}]\n",
                            K.attention->score, K.params[K.attention->vParam].name,
                            offsetText(K.attention->vBase, {{"n", K.attention->vStrideN},
                                                            {"dd", K.attention->vStrideD}}),
                            K.params[K.attention->outParam].name,
                            offsetText(K.attention->outBase, {{"m", K.attention->outStrideM},
                                                              {"dd", K.attention->outStrideD}}));
      return;
    }
  }

  void printMatmul(const KMatmul &mm) {
    OS << "  product: " << dtypeName(mm.dtype) << " operands; A = " << K.params[mm.aParam].name
       << "[" << offsetText(mm.aBase, {{"m", mm.aStrideM}, {"kk", mm.aStrideK}}) << "], B = "
       << K.params[mm.bParam].name << "["
       << offsetText(mm.bBase, {{"kk", mm.bStrideK}, {"n", mm.bStrideN}}) << "]\n";
  }

  /// `base + var * stride ...`, leaving out a zero base and unit factors.
  std::string offsetText(const IndexExpr &base,
                         std::initializer_list<std::pair<const char *, int64_t>> terms) const {
    std::string s = base.isConstant() && base.constantTerm() == 0 ? "" : K.ctx.str(base);
    for (auto [var, stride] : terms) {
      if (stride == 0)
        continue;
      s += (s.empty() ? "" : " + ") + std::string(var);
      if (stride != 1)
        s += " * " + std::to_string(stride);
    }
    return s.empty() ? "0" : s;
  }

  void printValue(int i, const KValue &v) {
    OS << llvm::formatv("  v{0}: {1} = ", i, dtypeName(v.dtype));
    switch (v.kind) {
    case KValue::Kind::Load:
      OS << "load " << K.params[v.param].name << "[" << K.ctx.str(v.offset) << "]";
      break;
    case KValue::Kind::Literal:
      OS << "literal " << literalText(v.literal);
      break;
    case KValue::Kind::Compute:
      OS << opName(v.op);
      for (size_t a = 0; a < v.args.size(); ++a)
        OS << (a ? ", v" : " v") << v.args[a];
      break;
    case KValue::Kind::ReduceResult:
      OS << "result of reduce " << v.reduction;
      break;
    case KValue::Kind::MatmulResult:
      OS << "the product's element (m, n)";
      break;
    case KValue::Kind::Index:
      OS << "index " << K.ctx.str(v.offset);
      break;
    case KValue::Kind::InRange:
      OS << "in range";
      for (size_t t = 0; t < v.tests.size(); ++t)
        OS << (t ? " and " : " ")
           << llvm::formatv("{0} <= {1} <= {2}", v.tests[t].lo, K.ctx.str(v.tests[t].e),
                            v.tests[t].hi);
      break;
    }
    if (!v.name.empty())
      OS << "  ; %" << v.name;
    if (v.perRow && isRowKernel(K.kind))
      OS << ", once per row";
    if (v.stage > 0)
      OS << ", after pass " << v.stage;
    OS << "\n";
  }

  llvm::raw_ostream &OS;
  const LoweredKernel &K;
};

} // namespace

void printLoweredKernel(llvm::raw_ostream &os, const LoweredKernel &k, std::string_view name) {
  Printer(os, k).print(name);
}

} // namespace minijit
