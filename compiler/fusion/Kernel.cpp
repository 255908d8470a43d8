//===- compiler/fusion/Kernel.cpp - a kernel of the fusion plan ------------===//
#include "compiler/fusion/Kernel.h"

#include "llvm/ADT/STLExtras.h"

namespace minijit {

int64_t KernelGroup::rows() const {
  if (!isRowKernel(kind))
    return 1;
  int64_t r = 1;
  for (unsigned d = 0; d < domain.rank(); ++d)
    if (!llvm::is_contained(reducedAxes, d))
      r *= domain[d];
  return r;
}

int64_t KernelGroup::reducedSize() const {
  if (!isRowKernel(kind))
    return 1;
  int64_t k = 1;
  for (int64_t a : reducedAxes)
    k *= domain[a];
  return k;
}

} // namespace minijit
