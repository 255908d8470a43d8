//===- ir/Evaluator.h - the CPU reference ----------------------*- C++ -*-===//
// Runs a graph on the host, in double precision, rounding each value to its
// dtype as a kernel stores it. Every GPU result is checked against this.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/HostTensor.h"

#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

namespace minijit {

struct EvalOptions {
  /// When set (one flag per node), only values flagged true are rounded to
  /// their dtype, as a kernel that stores them does; the others keep f32
  /// precision, as a fused kernel keeps them in registers. When unset every
  /// value is rounded, as an eager framework stores each one.
  const std::vector<bool> *stored = nullptr;
  /// Stored values (flagged in `stored`) that a kernel also reads from its
  /// registers, unrounded: the reference gives their readers the rounded
  /// value, and evaluateWithBounds widens what their readers may be off by
  /// to cover both (the comparison of the value itself is unchanged).
  /// Values are not changed by it.
  const std::vector<bool> *readInRegisters = nullptr;
  /// Sums and means add |x| and matmuls |a| * |b|: an output then holds the
  /// size of the terms its reductions added, which bounds their rounding
  /// error where the terms cancel (the `scale` of compareTensors).
  bool magnitudes = false;
  /// f32 matmuls may read their operands as TF32 (10 bits of fraction, the
  /// rest cut off: CompileOptions::allowTf32 on tensor cores). The values
  /// are unchanged; evaluateWithBounds widens each product's bound for it.
  bool tf32Matmuls = false;
  /// f32 matmuls may run as three TF32 products (CompileOptions::tf32x3):
  /// each term within 2^-20.4 of exact, the sums of three times the terms.
  bool tf32x3Matmuls = false;
  /// Called after each value is computed (arguments included), with the
  /// values held so far: the new one and every operand it read are still
  /// there. The error bounds (ir/ErrorBound.h) are computed this way, in the
  /// same walk as the values.
  std::function<void(ValueId, std::span<const HostTensor>)> observe;
};

/// Evaluates `g` on `inputs` (one per graph input, in order) and returns one
/// tensor per graph output; grad and vjp nodes are expanded first (see
/// ir/Autodiff.h). Outputs that update an argument in place are returned like
/// any other (the host inputs are not changed). Throws GraphError when an
/// input's dtype or shape differs from the graph's.
std::vector<HostTensor> evaluate(const Graph &g, std::span<const HostTensor> inputs,
                                 const EvalOptions &options = {});
/// The same on a braced list of inputs: evaluate(g, {x, w}).
inline std::vector<HostTensor> evaluate(const Graph &g, std::initializer_list<HostTensor> inputs,
                                        const EvalOptions &options = {}) {
  return evaluate(g, std::span<const HostTensor>(inputs.begin(), inputs.size()), options);
}

/// One elementwise op (unary, binary, where, cast) of node `n` on scalar
/// operand values; `operandType` is the dtype of its (value) operands. The
/// result follows Ops.def's semantics (i32 wraps, NaN rules) but is not yet
/// rounded to n.dtype, except for cast. Constant folding uses it too.
double applyElementwise(const Node &n, DType operandType, std::span<const double> args);

/// How many of a gather's indices fall outside its operand's axis (they are
/// clamped when read; see Ops.def).
struct OutOfRangeIndices {
  ValueId gather;      ///< the take or take_along_axis node
  int64_t outside = 0; ///< indices < 0 or >= size
  int64_t total = 0;   ///< indices read
  int64_t size = 0;    ///< the operand's size along the axis
};
/// One entry per take / take_along_axis of `g`, in graph order, with its
/// indices evaluated on `inputs` by the CPU reference (empty without gathers;
/// a graph with derivatives is judged as expanded).
std::vector<OutOfRangeIndices> outOfRangeIndices(const Graph &g,
                                                 std::span<const HostTensor> inputs);
inline std::vector<OutOfRangeIndices> outOfRangeIndices(const Graph &g,
                                                        std::initializer_list<HostTensor> inputs) {
  return outOfRangeIndices(g, std::span<const HostTensor>(inputs.begin(), inputs.size()));
}

/// One seeded random tensor per graph input (see HostTensor::random); input i
/// uses a seed derived from `seed` and i. Inputs flagged in `skip` (one flag
/// per input) are left empty, for a caller that has them from elsewhere.
std::vector<HostTensor> randomInputs(const Graph &g, uint64_t seed,
                                     const std::vector<bool> *skip = nullptr);

/// The tolerance for comparing output `out` with the reference: 1e-5 for f32
/// (grown with the square root of the longest reduction or matmul K feeding
/// it), 1e-2 for f16/bf16, exact for i32 and bool.
Tolerance toleranceFor(const Graph &g, ValueId out);

} // namespace minijit
