//===- compiler/fusion/FusionReason.cpp - why a value is stored -----------===//
// The one place where fusion reasons become words.
//===----------------------------------------------------------------------===//
#include "compiler/fusion/FusionReason.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

namespace minijit {

namespace {

/// "%a, %b, ...": the reason's values from `first` on.
std::string valueList(const Graph &g, const FusionReason &r, unsigned first) {
  std::string list;
  for (unsigned i = first; i < r.values.size(); ++i)
    list += (i == first ? "%" : ", %") + g.node(r.values[i]).name;
  return list;
}

} // namespace

std::string describeReason(const Graph &g, const FusionReason &r) {
  auto name = [&](unsigned i) { return g.node(r.values[i]).name; };
  auto shape = [&](unsigned i) { return g.node(r.values[i]).shape.str(); };
  auto input = [&](unsigned i) { return g.node(g.node(r.values[i]).operands[0]); };
  auto axes = [&](unsigned i) { return Shape(g.node(r.values[i]).axes).str(); };
  auto kernels = [&](unsigned first) {
    return llvm::formatv("k{0} and k{1}", r.numbers[first], r.numbers[first + 1]).str();
  };
  switch (r.kind) {
  case FusionReasonKind::None: return "";
  case FusionReasonKind::GraphOutput: return "graph output";
  case FusionReasonKind::FusionOff: return "fusion is off: every op is its own kernel";
  case FusionReasonKind::MatmulOperand:
    return llvm::formatv("%{0} is an operand of matmul %{1}: matmul operands are read from memory",
                         name(0), name(1));
  case FusionReasonKind::MatmulFeedsMatmul:
    return llvm::formatv("matmul %{0} feeds matmul %{1}; one matmul per kernel", name(0), name(1));
  case FusionReasonKind::MatmulMeetsReduction:
    return llvm::formatv("matmul %{0} and reduction %{1} meet in %{2}; the matmul's result is "
                         "stored",
                         name(0), name(1), name(2));
  case FusionReasonKind::MatmulShape:
    return llvm::formatv("%{0} has shape {1}, not the shape {2} of matmul %{3}", name(0), shape(0),
                         shape(1), name(1));
  case FusionReasonKind::ScanOwnKernel:
    return llvm::formatv("%{0} is stored: a scan kernel holds scans of one shape, axis and direction, their "
                         "prologue and an epilogue of their shape, and reads a scan's input "
                         "from memory when it is computed from another scan",
                         name(0));
  case FusionReasonKind::MatmulOwnKernel:
    return llvm::formatv("matmul %{0} runs in a kernel of its own", name(0));
  case FusionReasonKind::MatmulMoved:
    return llvm::formatv("matmul %{0} is read at another element than the one it computes (a "
                         "view moves it)",
                         name(0));
  case FusionReasonKind::MatmulLayout:
    return llvm::formatv("%{0}, an operand of matmul %{1}, has no row and column strides (a "
                         "reshape mixes them); it is stored first",
                         name(0), name(1));
  case FusionReasonKind::ReductionFeedsOtherDomain:
    return llvm::formatv("reduction %{0} (over {1} axes {2}) feeds %{3}, a reduction over another "
                         "domain ({4} axes {5})",
                         name(0), input(0).shape.str(), axes(0), name(1), input(1).shape.str(),
                         axes(1));
  case FusionReasonKind::RootShape:
    return llvm::formatv("%{0} has shape {1}, neither the reduction's domain {2} nor its result {3}",
                         name(0), shape(0), input(1).shape.str(), shape(1));
  case FusionReasonKind::ReductionOtherDomain:
    return llvm::formatv("reduction %{0} reduces {1} over axes {2}, another domain than its "
                         "consumer's kernel",
                         name(0), input(0).shape.str(), axes(0));
  case FusionReasonKind::ReductionOtherRow:
    return llvm::formatv("reduction %{0} is read at another row than the one it reduces (a view "
                         "moves its rows)",
                         name(0));
  case FusionReasonKind::TooManyPasses:
    return llvm::formatv("reduction %{0} would be pass {1} of one kernel; a kernel makes at most "
                         "{2} passes over its rows",
                         name(0), r.numbers[0], r.numbers[1]);
  case FusionReasonKind::SharedReduction:
    return llvm::formatv("reduction %{0} is needed by kernels {1}; it is computed once and stored",
                         name(0), kernels(0));
  case FusionReasonKind::CostlyRecompute:
    return llvm::formatv("%{0} costs {1} ops to recompute and is needed by kernels {2}; storing it "
                         "is cheaper",
                         name(0), r.numbers[0], kernels(1));
  case FusionReasonKind::KernelTooLarge:
    return llvm::formatv("%{0} is stored to split a kernel (with %{1}) whose ops weigh {2}, more "
                         "than the {3} one kernel may: NVRTC's time grows faster than a kernel's "
                         "size (compiler/fusion/CodeWeight.h)",
                         name(0), name(1), r.numbers[0], r.numbers[1]);
  case FusionReasonKind::AttentionOperand:
    return llvm::formatv("%{0} is an operand of attention %{1}: its operands are read from memory",
                         name(0), name(1));
  case FusionReasonKind::AttentionOwnKernel:
    return llvm::formatv("attention %{0} runs in a kernel of its own", name(0));
  case FusionReasonKind::AttentionStored:
    return llvm::formatv("%{0}, inside attention %{1}, is stored, so the scores leave the kernel",
                         name(0), name(1));
  case FusionReasonKind::AttentionNamedSizes:
    return llvm::formatv("attention %{0} has named sizes; the template takes numbers", name(0));
  case FusionReasonKind::AttentionHeadDim:
    return llvm::formatv("attention %{0} has head dim {1}; the template takes {2} to {3}, a "
                         "multiple of {4}",
                         name(0), r.numbers[0], r.numbers[1], r.numbers[2], r.numbers[3]);
  case FusionReasonKind::AttentionShortRows:
    return llvm::formatv("attention %{0} has rows of {1} keys; the template takes {2} or more",
                         name(0), r.numbers[0], r.numbers[1]);
  case FusionReasonKind::AttentionBackward:
    return llvm::formatv("%{0}, inside attention %{1}, is stored for its backward ({2}): "
                         "FlashAttention-2's, whose fused kernels take f32 so far",
                         name(1), name(0), valueList(g, r, 2));
  case FusionReasonKind::AttentionBackwardSoftCap:
    return llvm::formatv("the backward of attention %{1} differentiates the soft-cap %{0}; the "
                         "fused backward takes a scale, masks and biases",
                         name(0), name(1));
  case FusionReasonKind::AttentionBackwardScoreWork:
    return llvm::formatv("the backward of attention %{1} differentiates %{0} ({2}); the fused "
                         "backward takes a scale by a literal, masks and biases",
                         name(0), name(1), opName(g.node(r.values[0]).op));
  case FusionReasonKind::AttentionBackwardBias:
    return llvm::formatv("%{0} reads the gradient of a bias of attention %{1}, which has the "
                         "scores' shape; the fused backward does not make it",
                         name(0), name(1));
  case FusionReasonKind::AttentionBackwardRead:
    return llvm::formatv("%{0} reads the scores of attention %{1} or their gradient, and is not "
                         "the backward autodiff writes for them",
                         name(0), name(1));
  case FusionReasonKind::AttentionBackwardStats:
    return llvm::formatv("%{0}, a row statistic of attention %{1}, is stored by its kernel: its "
                         "fused backward computes the probabilities again from it",
                         name(0), name(1));
  case FusionReasonKind::AttentionBackwardValue:
    return llvm::formatv("%{0} is read or written by the fused backward of attention %{1}",
                         name(0), name(1));
  }
  llvm_unreachable("bad fusion reason");
}

} // namespace minijit
