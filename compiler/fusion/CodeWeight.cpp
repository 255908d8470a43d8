//===- compiler/fusion/CodeWeight.cpp - what a kernel costs NVRTC --------===//
// The weights come from chains of one op compiled alone, in quarter
// milliseconds rounded to a power of two (docs/HARDENING.md, "The kernel
// weight limit"). A switch with a default rather than a column of Ops.def
// while the weights are few: ops not listed are cheap.
//===----------------------------------------------------------------------===//
#include "compiler/fusion/CodeWeight.h"

namespace minijit {

int64_t codeWeight(OpKind op) {
  switch (op) {
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Randn: return 256;
  case OpKind::Pow:
  case OpKind::Rand:
  case OpKind::Dropout: return 128;
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Expm1:
  case OpKind::Log1p: return 64;
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Erf:
  case OpKind::Div: return 32;
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Recip: return 16;
  case OpKind::Exp:
  case OpKind::Exp2: return 8;
  default: return 1; // arithmetic, comparisons, views, and the loops of a reduction
  }
}

} // namespace minijit
