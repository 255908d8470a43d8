//===- ir/ErrorBound.h - how far a correct kernel may be from the reference -*- C++ -*-===//
// A forward error analysis that runs with the CPU reference: per element of
// each value, a bound on how far a correct evaluation in the kernel's
// precision (f32 arithmetic, the CUDA math functions the emitter calls,
// f16/bf16 where values are stored) may be from the exact result. The bound
// follows each op's condition (|df/dx| times the operand's bound, so a
// difference of nearly equal values keeps the size of its terms), adds the
// op's own rounding or documented ulp error, and for reductions the rounding
// of an f32 sum in any order of the threads. The GPU tests accept a value
// within a small multiple of it (Tolerance::safety).
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Evaluator.h"

#include "llvm/ADT/ArrayRef.h"

namespace minijit {

/// Unit roundoff of a dtype's arithmetic or storage (half its ulp at 1):
/// 2^-24 for f32, 2^-11 for f16, 2^-8 for bf16, 0 for i32 and bool.
double unitRoundoff(DType t);

/// The error of rounding a value of size `magnitude` to `t`: unitRoundoff
/// times the magnitude, plus half the smallest subnormal (f16's 2^-25).
double roundingError(DType t, double magnitude);

/// The error a correct f32 sum of `terms` values may have, whose absolute
/// values add to `sumAbs`, in any order of the threads: u (log2 n + 2 sqrt n
/// + 2) sum |x_i| with u = 2^-24. The square root covers each thread's
/// sequential run (rounding errors of random sign grow with its square root;
/// a run is at most n / 32 long in every reduction schedule), the logarithm
/// the tree that joins the threads.
double sumRoundingError(int64_t terms, double sumAbs);

/// Whether every value within Tolerance::safety * `bound` of `pre` rounds
/// to `rounded` in `t` (f16 or bf16): then a correct kernel stores exactly
/// the reference's value.
bool certainRounding(DType t, double rounded, double pre, double bound);

/// The bound on one elementwise op's result (unary, binary, where, cast) of
/// node `n`: `args` are the operands as the reference holds them, `errors`
/// their bounds, `value` the reference's result (its size sets the op's
/// rounding). Includes the op's own error in f32 (the CUDA function's ulps;
/// the __expf-style intrinsics for an f16/bf16 result, as the emitter calls
/// them) but not the rounding to n's dtype when stored: the caller adds
/// that. Infinite where an operand's bound reaches a pole (log, division).
double elementwiseErrorBound(const Node &n, DType operandType, llvm::ArrayRef<double> args,
                             llvm::ArrayRef<double> errors, double value);

/// The reference's values and, per output, a tensor (f32, the output's
/// shape) of the bounds on each element's error.
struct BoundedOutputs {
  std::vector<HostTensor> values;
  std::vector<HostTensor> bounds;
};

/// Evaluates `g` like evaluate() (the same options: which values are stored)
/// and bounds each output element's error. Arguments and literals are exact.
/// `certainRoundings` false: no stored value is taken as certain (for when
/// the `stored` flags may not say exactly what the program stores).
BoundedOutputs evaluateWithBounds(const Graph &g, llvm::ArrayRef<HostTensor> inputs,
                                  const EvalOptions &options = {}, bool certainRoundings = true);

} // namespace minijit
