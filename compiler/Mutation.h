//===- compiler/Mutation.h - known miscompiles, injected for testing the tests -*- C++ -*-===//
// Not for users. $MINIJIT_MUTATION=<name> makes the compiler emit one known
// kind of wrong kernel, so the differential tests can show they catch it
// (scripts/mutation_run.sh, Mutation.EveryMutationIsCaught on the GPU). The
// emitter's mutations rewrite the CUDA it produced (one hook in
// Pipeline.cpp); the broadcast one changes an index in lowering (one hook in
// lower/ViewIndex.cpp). Unset or empty: nothing changes.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/Lowering.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace minijit {

enum class Mutation {
  None,
  IndexOffByOne,     ///< reads of a kernel's first input at index + 1
  ReductionIdentity, ///< accumulators start at 1 (sum, prod: 2), 0 (max, min)
  DroppedEpilogue,   ///< the first op after a reduction or matmul yields the value before it
  BroadcastStride,   ///< a broadcast operand read one element along (lowering)
  MissingBarrier,    ///< no barrier between a block reduction's shared stores and loads
  LostTail,          ///< loops over a row and pointwise tails stop one element early
  F16StoreTruncates, ///< f32 to f16/bf16 conversions round toward zero
};

/// Every mutation but None, in the order above.
llvm::ArrayRef<Mutation> allMutations();
/// "index-off-by-one", "reduction-identity", ... ("none" for None).
llvm::StringRef mutationName(Mutation m);

/// The mutation $MINIJIT_MUTATION names, read at each call (a test may set it
/// between compiles). Throws CompileError for a name that is not one.
Mutation activeMutation();

/// `cuda` (one kernel, as emitted) with the active emitter mutation applied.
std::string mutateKernel(std::string cuda);
/// The preamble with the active mutation applied (barriers, f16 stores).
std::string mutatePreamble(std::string preamble);
/// Lowering's options with the active lowering mutation set (BroadcastStride).
LoweringOptions mutatedLowering();
/// Counts `n` more sites a mutation changed (lowering reports its own).
void countMutationSites(unsigned n);

/// How many times a mutation changed a kernel, the preamble or an index in
/// this process (a mutation that never applies cannot be caught).
unsigned mutationSites();

} // namespace minijit
