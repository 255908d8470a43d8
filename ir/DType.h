//===- ir/DType.h - element types ------------------------------*- C++ -*-===//
// The element types a tensor can hold, their sizes and names, and the exact
// conversions between f32 and the two 16-bit storage types.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace minijit {

/// Element types. f16 and bf16 are storage types: arithmetic on them happens
/// in f32 and the result is rounded (to nearest, ties to even) when stored.
enum class DType : uint8_t { F32, F16, BF16, I32, Bool, I64 };

/// The spelling used by the text format: "f32", "f16", "bf16", "i32", "bool",
/// "i64".
std::string_view dtypeName(DType t);
/// The C++ API's spelling, for messages: "DType::F32", "DType::Bool".
std::string_view dtypeCppName(DType t);
/// Parses a spelling of dtypeName; std::nullopt for anything else.
std::optional<DType> parseDType(std::string_view s);
/// Bytes per element as stored in memory (bool is one byte holding 0 or 1).
unsigned dtypeSize(DType t);
/// f32, f16, bf16.
bool isFloat(DType t);
/// i32, i64.
bool isInteger(DType t);
/// The C++ (and CUDA) type that holds the stored value: float, unsigned short,
/// int, unsigned char, long long.
std::string_view storageCType(DType t);

/// Rounds an f32 to the nearest f16 (ties to even; overflow to inf; NaN kept)
/// and returns its bits.
uint16_t floatToHalfBits(float f);
float halfBitsToFloat(uint16_t h);
/// Rounds an f32 to the nearest bf16 (ties to even; NaN kept) and returns its bits.
uint16_t floatToBFloat16Bits(float f);
float bfloat16BitsToFloat(uint16_t h);
/// Rounds an f32 to TF32's precision, 10 bits of fraction (to nearest, ties
/// away from zero, as cvt.rna.tf32.f32; inf and NaN kept; a value past the
/// largest TF32 one becomes inf). The result is an f32 whose low 13 bits are 0.
float roundToTf32(float f);

/// Rounds a value to what the dtype can store, as the GPU does when it stores
/// it: f32 rounding, f16/bf16 rounding, i32 conversion (truncation toward zero,
/// saturating, NaN to 0, as cvt.rzi.s32.f32 does), bool (nonzero or NaN is 1).
/// i64 the same in 64 bits; as a double it is exact only up to 2^53 (the
/// evaluator keeps i64 values exact through toInt64 and HostTensor::getI64).
double roundToDType(double v, DType t);
/// `v` converted to i64 as cvt.rzi.s64.f64 does: truncated toward zero,
/// saturating at the i64 range, NaN to 0.
int64_t toInt64(double v);

} // namespace minijit
