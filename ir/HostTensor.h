//===- ir/HostTensor.h - tensors in host memory ----------------*- C++ -*-===//
// Dense row-major tensors on the host: the inputs and outputs of the CPU
// reference evaluator and of GPU runs, seeded random inputs, the NaN poison
// that marks unwritten outputs, and the comparison every GPU test uses.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/Shape.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace minijit {

class HostTensor {
public:
  HostTensor() = default;
  /// A zero-filled tensor. Throws ResourceError when it would take more than
  /// maxHostTensorBytes() or the allocation fails.
  HostTensor(DType dtype, const Shape &shape);

  /// A tensor holding a copy of `bytes` bytes at `data`: the elements in
  /// row-major order, in the dtype's own layout (f16/bf16 as their 16 bits,
  /// bool as one byte of 0 or 1). Throws GraphError when `bytes` is not
  /// shape.numel() * dtypeSize(dtype).
  static HostTensor fromData(DType dtype, const Shape &shape, const void *data, size_t bytes);
  /// The same from typed host data: an f32 or an i32 tensor.
  static HostTensor fromData(const Shape &shape, std::span<const float> values);
  static HostTensor fromData(const Shape &shape, std::span<const int32_t> values);
  static HostTensor fromData(const Shape &shape, std::span<const int64_t> values);
  /// The tensor in a numpy .npy file (see ir/Npy.h for the element types);
  /// throws GraphError for a file that does not hold one.
  static HostTensor fromNpy(std::string_view path);

  DType dtype() const { return Type; }
  const Shape &shape() const { return Dims; }
  int64_t numel() const { return Dims.numel(); }
  size_t bytes() const { return Data.size(); }
  void *data() { return Data.data(); }
  const void *data() const { return Data.data(); }

  /// Element `i` (row-major) as a double: floats exactly, i32 as an integer,
  /// bool as 0 or 1. Throws GraphError when `i` is outside [0, numel()).
  double get(int64_t i) const;
  /// Stores `v` at element `i`, rounded to the dtype (see roundToDType).
  /// Throws GraphError when `i` is outside [0, numel()).
  void set(int64_t i, double v);
  /// Element `i` of an i64 tensor, exact (get rounds beyond 2^53); of any
  /// other dtype, get(i) converted as toInt64 does.
  int64_t getI64(int64_t i) const;
  /// Stores `v` at element `i` of an i64 tensor exactly; of any other dtype,
  /// as set(i, v) (the conversion an i64 to f32 cast does).
  void setI64(int64_t i, int64_t v);
  /// Stores element `j` of `from` at element `i`: the bytes when the dtypes
  /// agree (exact for every dtype), else set(i, from.get(j)).
  void copyElement(int64_t i, const HostTensor &from, int64_t j);

  /// Values from a generator seeded with `seed`: standard normal for floats
  /// (rounded to the dtype), integers uniform in [-16, 16] for i32 and i64, true or
  /// false with equal odds for bool.
  static HostTensor random(DType dtype, const Shape &shape, uint64_t seed);

  /// Fills every element with the poison pattern: a NaN with a payload no
  /// computation produces (0x7FC0DEAD for f32, 0x7E5A f16, 0x7FDA bf16), or
  /// 0x7FC0DEAD for i32, 0x7FC0DEAD7FC0DEAD for i64 and 0xAB for bool.
  void poison();
  /// True when element `i` still holds the poison pattern.
  bool isPoisoned(int64_t i) const;

private:
  [[noreturn]] void outOfRange(int64_t i) const;

  DType Type = DType::F32;
  Shape Dims;
  int64_t Count = 0; ///< numel(), kept for the bounds checks of get and set
  std::vector<uint8_t> Data;
};

/// The most bytes one host tensor may take: the smaller of the host's
/// physical memory and the address-space limit (ulimit -v), when known.
int64_t maxHostTensorBytes();

/// Allowed error: |got - ref| <= rtol * (|ref| + scale), where scale is the
/// root mean square of the reference (so values near zero in a tensor of
/// large values are judged against the tensor's size). rtol 0 means exact.
struct Tolerance {
  double rtol = 1e-5;
  /// With an error bound (ir/ErrorBound.h), an element that misses rtol
  /// still passes when |got - ref| <= safety * bound. Two of the four are
  /// the reference's own error (it is an f32 evaluation too), the rest slack
  /// for what the model leaves out.
  double safety = 4;
};

struct CompareResult {
  bool ok = true;
  int64_t mismatches = 0; ///< elements out of tolerance (NaN where ref is not, ...)
  int64_t unwritten = 0;  ///< elements still holding the poison
  int64_t firstBad = -1;  ///< index of the first bad element
  double gotAtFirstBad = 0, refAtFirstBad = 0;
  double maxRelError = 0; ///< max |got-ref| / (|ref| + scale) over finite elements
  /// With an error bound: max |got-ref| / bound over the elements out of
  /// rtol (how many bounds the worst missed by; infinite for a bound of 0).
  double maxBounds = 0;
  /// With an error bound: elements within it that rtol alone would fail.
  int64_t savedByBound = 0;
  /// "ok (max rel error 3.1e-07)" or "3 of 4096 elements differ; first at [2, 17]: got 1.5, expected 1.25 ...".
  std::string summary;
};

/// Compares a GPU (or other) result with the reference. NaN never passes
/// unless the reference is NaN at the same place; infinities must match;
/// a poisoned element always fails. An element passes when
/// |got - ref| <= rtol * (|ref| + scale), scale being the output's RMS or,
/// when larger, |magnitude| there (an evaluation with
/// EvalOptions::magnitudes: the size of the terms a sum added). With
/// `bound` (evaluateWithBounds), an element out of rtol passes when
/// |got - ref| <= tol.safety * bound there, and an infinity is accepted where
/// the bound is infinite; NaN still never passes. An f16/bf16 element whose
/// bound is 0 (a certain rounding, see certainRounding) must equal the
/// reference exactly, whatever rtol allows.
CompareResult compareTensors(const HostTensor &got, const HostTensor &ref, Tolerance tol,
                             const HostTensor *magnitude = nullptr,
                             const HostTensor *bound = nullptr);

} // namespace minijit
