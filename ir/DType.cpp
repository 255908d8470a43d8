//===- ir/DType.cpp - element types ---------------------------------------===//
// Names, sizes and the bit-exact f16/bf16 conversions the CPU reference uses
// to round values the way the GPU stores them.
//===----------------------------------------------------------------------===//
#include "ir/DType.h"

#include "llvm/Support/ErrorHandling.h"

#include <bit>
#include <cmath>
#include <limits>

namespace minijit {

std::string_view dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::I32: return "i32";
  case DType::Bool: return "bool";
  case DType::I64: return "i64";
  }
  llvm_unreachable("bad dtype");
}

std::string_view dtypeCppName(DType t) {
  switch (t) {
  case DType::F32: return "DType::F32";
  case DType::F16: return "DType::F16";
  case DType::BF16: return "DType::BF16";
  case DType::I32: return "DType::I32";
  case DType::Bool: return "DType::Bool";
  case DType::I64: return "DType::I64";
  }
  llvm_unreachable("bad dtype");
}

std::optional<DType> parseDType(std::string_view s) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool, DType::I64})
    if (s == dtypeName(t))
      return t;
  return std::nullopt;
}

unsigned dtypeSize(DType t) {
  switch (t) {
  case DType::F32: return 4;
  case DType::F16: return 2;
  case DType::BF16: return 2;
  case DType::I32: return 4;
  case DType::Bool: return 1;
  case DType::I64: return 8;
  }
  llvm_unreachable("bad dtype");
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

bool isInteger(DType t) { return t == DType::I32 || t == DType::I64; }

std::string_view storageCType(DType t) {
  switch (t) {
  case DType::F32: return "float";
  case DType::F16: return "unsigned short";
  case DType::BF16: return "unsigned short";
  case DType::I32: return "int";
  case DType::Bool: return "unsigned char";
  case DType::I64: return "long long";
  }
  llvm_unreachable("bad dtype");
}

uint16_t floatToHalfBits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (absx < 0x38800000u) { // below the smallest normal half: subnormal or zero
    if (absx < 0x33000000u) // below half of the smallest subnormal
      return static_cast<uint16_t>(sign);
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(absx >> 23); // 14..24
    // value = mant * 2^(e-150) and the subnormal unit is 2^-24.
    uint32_t kept = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (kept & 1u)))
      ++kept;
    return static_cast<uint16_t>(sign | kept);
  }
  uint32_t e = (absx >> 23) - 112; // rebias 127 -> 15
  uint32_t mant = absx & 0x7fffffu;
  uint32_t h = (e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    ++h; // may carry into the exponent, which is still correct
  return static_cast<uint16_t>(sign | h);
}

float halfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (e == 0x1f)
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (e == 0) {
    if (mant == 0)
      return std::bit_cast<float>(sign);
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (mant << 13));
}

uint16_t floatToBFloat16Bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16BitsToFloat(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

float roundToTf32(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7f800000u) == 0x7f800000u) // inf and NaN
    return f;
  // Half of the last kept bit added to the magnitude's bits: a carry rounds
  // up (away from zero, ties too), and may carry into the exponent.
  return std::bit_cast<float>((x + 0x1000u) & 0xffffe000u);
}

double roundToDType(double v, DType t) {
  switch (t) {
  case DType::F32: return static_cast<float>(v);
  case DType::F16: return halfBitsToFloat(floatToHalfBits(static_cast<float>(v)));
  case DType::BF16: return bfloat16BitsToFloat(floatToBFloat16Bits(static_cast<float>(v)));
  case DType::I32: {
    if (std::isnan(v))
      return 0;
    double tr = std::trunc(v);
    if (tr >= 2147483647.0)
      return 2147483647.0;
    if (tr <= -2147483648.0)
      return -2147483648.0;
    return tr;
  }
  case DType::Bool: return (v != 0 || std::isnan(v)) ? 1 : 0;
  case DType::I64: return static_cast<double>(toInt64(v));
  }
  llvm_unreachable("bad dtype");
}

int64_t toInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9223372036854775808.0) // 2^63
    return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v); // truncates toward zero
}

} // namespace minijit
