//===- compiler/fusion/CodeWeight.cpp - what a kernel costs NVRTC --------===//
// The weights are the Weight column of ir/Ops.def, from chains of one op
// compiled alone (docs/HARDENING.md, "The kernel weight limit").
//===----------------------------------------------------------------------===//
#include "compiler/fusion/CodeWeight.h"

namespace minijit {

int64_t codeWeight(OpKind op) { return opInfo(op).weight; }

} // namespace minijit
