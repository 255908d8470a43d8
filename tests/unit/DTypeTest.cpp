// Element types: names and sizes, the bit-exact f16/bf16 conversions and roundToDType.
#include "ir/DType.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace minijit;

namespace {

float bitsToFloat(uint32_t b) { return std::bit_cast<float>(b); }
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

bool isHalfNaN(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool isBFloatNaN(uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

} // namespace

TEST(DType, NamesParseBack) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool}) {
    std::optional<DType> back = parseDType(dtypeName(t));
    ASSERT_TRUE(back.has_value()) << std::string(dtypeName(t));
    EXPECT_EQ(*back, t);
  }
  EXPECT_EQ(dtypeName(DType::BF16), "bf16");
  EXPECT_EQ(dtypeName(DType::Bool), "bool");
}

TEST(DType, UnknownSpellingsDoNotParse) {
  EXPECT_FALSE(parseDType("f64").has_value());
  EXPECT_FALSE(parseDType("F32").has_value());
  EXPECT_FALSE(parseDType("").has_value());
  EXPECT_FALSE(parseDType("f32 ").has_value());
}

TEST(DType, SizesAndStorageTypes) {
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
  EXPECT_EQ(storageCType(DType::F32), "float");
  EXPECT_EQ(storageCType(DType::F16), "unsigned short");
  EXPECT_EQ(storageCType(DType::BF16), "unsigned short");
  EXPECT_EQ(storageCType(DType::I32), "int");
  EXPECT_EQ(storageCType(DType::Bool), "unsigned char");
}

TEST(DType, IsFloatOnlyForTheThreeFloatTypes) {
  EXPECT_TRUE(isFloat(DType::F32));
  EXPECT_TRUE(isFloat(DType::F16));
  EXPECT_TRUE(isFloat(DType::BF16));
  EXPECT_FALSE(isFloat(DType::I32));
  EXPECT_FALSE(isFloat(DType::Bool));
}

// ---- f16

TEST(Half, ExactValuesConvert) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3C00u);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xC000u);
  EXPECT_EQ(floatToHalfBits(0.5f), 0x3800u);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7BFFu);
  EXPECT_EQ(floatToHalfBits(0.0f), 0x0000u);
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000u);
  EXPECT_EQ(halfBitsToFloat(0x3555u), 0.333251953125f);
  EXPECT_EQ(halfBitsToFloat(0xC000u), -2.0f);
  EXPECT_EQ(std::signbit(halfBitsToFloat(0x8000u)), true);
}

TEST(Half, EveryNonNaNPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    auto bits = static_cast<uint16_t>(h);
    if (isHalfNaN(bits))
      continue;
    ASSERT_EQ(floatToHalfBits(halfBitsToFloat(bits)), bits) << std::hex << h;
  }
}

TEST(Half, TiesRoundToEven) {
  // 1 + 2^-11 lies halfway between 1 (even) and 1 + 2^-10 (odd).
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3C00u);
  // 1 + 3*2^-11 lies halfway between 0x3C01 (odd) and 0x3C02 (even).
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02u);
  // Just above a tie rounds up.
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01u);
  // Just below a tie rounds down.
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11) - std::ldexp(1.0f, -20)), 0x3C01u);
}

TEST(Half, RoundsToNearest) {
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(1.0f / 3.0f)), 0.333251953125f);
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(2.718281828f)), 2.71875f);
  EXPECT_EQ(halfBitsToFloat(floatToHalfBits(-1.0f / 3.0f)), -0.333251953125f);
}

TEST(Half, Subnormals) {
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001u);    // smallest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -14)), 0x0400u);    // smallest normal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.0f, -24)), 0x03FFu); // largest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000u);    // tie with 0: even
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -25)), 0x0002u);    // tie 1|2: even
  EXPECT_EQ(floatToHalfBits(std::ldexp(5.0f, -25)), 0x0002u);    // tie 2|3: even
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -26)), 0x0001u);    // 0.75 ulp: up
  EXPECT_EQ(floatToHalfBits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001u);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -26)), 0x0000u);  // underflow to 0
  EXPECT_EQ(floatToHalfBits(-std::ldexp(1.0f, -26)), 0x8000u); // keeps the sign
  EXPECT_EQ(floatToHalfBits(-std::ldexp(1.0f, -24)), 0x8001u);
  EXPECT_EQ(halfBitsToFloat(0x0001u), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x03FFu), std::ldexp(1023.0f, -24));
  // The largest subnormal plus half an ulp rounds up to the smallest normal.
  EXPECT_EQ(floatToHalfBits(std::ldexp(2047.0f, -25)), 0x0400u);
}

TEST(Half, OverflowsToInfinity) {
  EXPECT_EQ(floatToHalfBits(65519.99f), 0x7BFFu);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7C00u); // the tie with 2^16 goes to even (inf)
  EXPECT_EQ(floatToHalfBits(1e6f), 0x7C00u);
  EXPECT_EQ(floatToHalfBits(-65520.0f), 0xFC00u);
  EXPECT_EQ(floatToHalfBits(3.0e38f), 0x7C00u);
  EXPECT_EQ(floatToHalfBits(kInf), 0x7C00u);
  EXPECT_EQ(floatToHalfBits(-kInf), 0xFC00u);
  EXPECT_EQ(halfBitsToFloat(0x7C00u), kInf);
  EXPECT_EQ(halfBitsToFloat(0xFC00u), -kInf);
}

TEST(Half, NaNIsPreserved) {
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(kNaN)));
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(-kNaN)));
  // A NaN whose payload lives only in the low f32 bits must not become inf.
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(bitsToFloat(0x7F800001u))));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7E00u)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7C01u)));
}

// ---- bf16

TEST(BFloat16, ExactValuesConvert) {
  EXPECT_EQ(floatToBFloat16Bits(1.0f), 0x3F80u);
  EXPECT_EQ(floatToBFloat16Bits(-2.0f), 0xC000u);
  EXPECT_EQ(floatToBFloat16Bits(-0.0f), 0x8000u);
  EXPECT_EQ(bfloat16BitsToFloat(0x3F80u), 1.0f);
  EXPECT_EQ(bfloat16BitsToFloat(0x7F7Fu), bitsToFloat(0x7F7F0000u));
}

TEST(BFloat16, EveryNonNaNPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    auto bits = static_cast<uint16_t>(h);
    if (isBFloatNaN(bits))
      continue;
    ASSERT_EQ(floatToBFloat16Bits(bfloat16BitsToFloat(bits)), bits) << std::hex << h;
  }
}

TEST(BFloat16, TiesRoundToEven) {
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x3F808000u)), 0x3F80u); // 1 + 2^-8: tie, even down
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x3F818000u)), 0x3F82u); // tie, even up
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x3F808001u)), 0x3F81u); // above the tie
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x3F817FFFu)), 0x3F81u); // below the tie
  EXPECT_EQ(bfloat16BitsToFloat(floatToBFloat16Bits(1.0f / 3.0f)), 0.333984375f);
}

TEST(BFloat16, Subnormals) {
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x00010000u)), 0x0001u);
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x00008000u)), 0x0000u); // tie with 0
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x00018000u)), 0x0002u); // tie 1|2
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x00008001u)), 0x0001u);
  EXPECT_EQ(bfloat16BitsToFloat(0x0001u), bitsToFloat(0x00010000u));
}

TEST(BFloat16, OverflowsToInfinity) {
  EXPECT_EQ(floatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7F80u);
  EXPECT_EQ(floatToBFloat16Bits(-std::numeric_limits<float>::max()), 0xFF80u);
  EXPECT_EQ(floatToBFloat16Bits(bitsToFloat(0x7F7F7FFFu)), 0x7F7Fu); // below the tie: stays finite
  EXPECT_EQ(floatToBFloat16Bits(kInf), 0x7F80u);
  EXPECT_EQ(floatToBFloat16Bits(-kInf), 0xFF80u);
}

TEST(BFloat16, NaNIsPreserved) {
  EXPECT_TRUE(isBFloatNaN(floatToBFloat16Bits(kNaN)));
  // Payload only in the low 16 bits: truncation alone would give inf.
  EXPECT_TRUE(isBFloatNaN(floatToBFloat16Bits(bitsToFloat(0x7F800001u))));
  EXPECT_TRUE(isBFloatNaN(floatToBFloat16Bits(bitsToFloat(0xFF800001u))));
  // Rounding must not carry a NaN into the next exponent.
  EXPECT_TRUE(isBFloatNaN(floatToBFloat16Bits(bitsToFloat(0x7FFFFFFFu))));
}

// ---- roundToDType

TEST(RoundToDType, F32RoundsToNearestFloat) {
  EXPECT_EQ(roundToDType(0.1, DType::F32), static_cast<double>(0.1f));
  EXPECT_EQ(roundToDType(1e39, DType::F32), std::numeric_limits<double>::infinity());
}

TEST(RoundToDType, HalfTypesRound) {
  EXPECT_EQ(roundToDType(1.0 / 3, DType::F16), 0.333251953125);
  EXPECT_EQ(roundToDType(1.0 / 3, DType::BF16), 0.333984375);
  EXPECT_EQ(roundToDType(70000, DType::F16), std::numeric_limits<double>::infinity());
  EXPECT_EQ(roundToDType(70000, DType::BF16), 70144);
}

TEST(RoundToDType, I32TruncatesTowardZero) {
  EXPECT_EQ(roundToDType(2.9, DType::I32), 2);
  EXPECT_EQ(roundToDType(-2.9, DType::I32), -2);
  EXPECT_EQ(roundToDType(-0.5, DType::I32), 0);
  EXPECT_EQ(roundToDType(7, DType::I32), 7);
}

TEST(RoundToDType, I32Saturates) {
  EXPECT_EQ(roundToDType(3e9, DType::I32), 2147483647);
  EXPECT_EQ(roundToDType(2147483647.9, DType::I32), 2147483647);
  EXPECT_EQ(roundToDType(-3e9, DType::I32), -2147483648.0);
  EXPECT_EQ(roundToDType(-2147483648.9, DType::I32), -2147483648.0);
  EXPECT_EQ(roundToDType(INFINITY, DType::I32), 2147483647);
  EXPECT_EQ(roundToDType(-INFINITY, DType::I32), -2147483648.0);
}

TEST(RoundToDType, I32NaNIsZero) { EXPECT_EQ(roundToDType(NAN, DType::I32), 0); }

TEST(RoundToDType, BoolIsNonzeroOrNaN) {
  EXPECT_EQ(roundToDType(0.0, DType::Bool), 0);
  EXPECT_EQ(roundToDType(-0.0, DType::Bool), 0);
  EXPECT_EQ(roundToDType(1e-30, DType::Bool), 1);
  EXPECT_EQ(roundToDType(-2, DType::Bool), 1);
  EXPECT_EQ(roundToDType(NAN, DType::Bool), 1);
}
