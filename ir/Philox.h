//===- ir/Philox.h - the counter-based random numbers of rand, randn, dropout -*- C++ -*-===//
// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011), the generator PyTorch and JAX use on GPUs. The
// numbers of element i of a random op are a pure function of (seed, offset,
// i): the CPU reference calls these functions, and the CUDA preamble
// (compiler/emit/Preamble.cpp, randomPreamble) spells the same arithmetic, so
// a fused kernel and the reference draw the same bits.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"

#include <array>
#include <cmath>
#include <cstdint>

namespace minijit {

/// Philox4x32 with 10 rounds: the counter `c` encrypted under the key (k0, k1).
inline std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k0 += 0x9E3779B9u; // the golden ratio's and sqrt(3) - 1's bits: the key schedule
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    auto hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    auto hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
  }
  return c;
}

/// The four words element `i` of a random op draws: the counter is (the low
/// and high words of i, the offset, 0), the key (the seed, 0). A new offset
/// is a new stream: a replay with the offset advanced draws fresh numbers.
inline std::array<uint32_t, 4> randomWords(int32_t seed, int32_t offset, int64_t i) {
  auto u = static_cast<uint64_t>(i);
  return philox4x32({static_cast<uint32_t>(u), static_cast<uint32_t>(u >> 32),
                     static_cast<uint32_t>(offset), 0u},
                    static_cast<uint32_t>(seed), 0u);
}

/// A uniform number in [0, 1): the word's top 24 bits times 2^-24, exact in f32.
inline float uniformOf(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }

/// The bits of a word `rand` of dtype `t` keeps: as many as `t` holds
/// exactly below 1 (f32 24, f16 11, bf16 8), so that rounding the number to
/// `t` never gives 1.
inline int randomBits(DType t) {
  return t == DType::F16 ? 11 : t == DType::BF16 ? 8 : 24;
}

/// `rand`'s number of dtype `t`: the word's top randomBits(t) bits times
/// 2^-bits, in [0, 1) and exact in `t`.
inline float randOf(uint32_t w, DType t) {
  int bits = randomBits(t);
  return std::ldexp(static_cast<float>(w >> (32 - bits)), -bits);
}

/// A standard normal number by Box-Muller from two words: u1 in (0, 1] (so
/// its log is finite), u2 in [0, 1); sqrt(-2 ln u1) cos(2 pi u2), in double.
/// The kernels compute it in f32 (logf, sqrtf, cospif): a few ulps apart.
inline double normalOf(uint32_t w0, uint32_t w1) {
  double u1 = static_cast<double>((w0 >> 8) + 1) * 0x1p-24;
  double u2 = static_cast<double>(w1 >> 8) * 0x1p-24;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

/// Dropout's scale for a drop probability p, as the kernels compute it in f32.
inline float dropoutScale(float p) { return 1.0f / (1.0f - p); }

} // namespace minijit
