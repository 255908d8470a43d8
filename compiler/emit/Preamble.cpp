//===- compiler/emit/Preamble.cpp - helpers every kernel is compiled with ---===//
// Plain CUDA, no includes (NVRTC compiles it fast): 16-bit conversions,
// NaN-aware min/max, vector access and reductions; then, apart, the matmul
// templates' async copies and tensor-core fragments.
//===----------------------------------------------------------------------===//
#include "compiler/emit/CudaEmitter.h"

namespace minijit {

namespace {

const char *const kBasePreamble = R"(// ---- minijit preamble: 16-bit storage, NaN-aware min/max, vector access, reductions ----
#define MJ_INF __int_as_float(0x7f800000)
#define MJ_NAN __int_as_float(0x7fffffff)
__device__ __forceinline__ float mj_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short mj_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float mj_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ unsigned short mj_f2bf(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float mj_round_f16(float f) { return mj_h2f(mj_f2h(f)); }
__device__ __forceinline__ float mj_round_bf16(float f) { return mj_bf2f(mj_f2bf(f)); }
// f rounded to TF32's 10 bits of fraction, to nearest, ties away from zero (cvt.rna.tf32.f32)
__device__ __forceinline__ float mj_round_tf32(float f) {
  const unsigned x = __float_as_uint(f);
  return (x & 0x7f800000u) == 0x7f800000u ? f : __uint_as_float((x + 0x1000u) & 0xffffe000u);
}
__device__ __forceinline__ float mj_max(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ float mj_min(float a, float b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ float mj_relu(float a) { return (a > 0.0f || a != a) ? a : 0.0f; }
__device__ __forceinline__ float mj_tanh_fast(float a) { float r; asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }
__device__ __forceinline__ int mj_iadd(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ int mj_isub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
__device__ __forceinline__ int mj_imul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ int mj_idiv(int a, int b) { return b == 0 ? 0 : (b == -1 ? (int)(0u - (unsigned)a) : a / b); }
__device__ __forceinline__ int mj_ineg(int a) { return (int)(0u - (unsigned)a); }
// An index clamped into [0, hi]: where a pad or concat reads outside its operand.
template <typename I, typename B> __device__ __forceinline__ I mj_clamp(I a, B hi) { return a < (I)0 ? (I)0 : (a > (I)hi ? (I)hi : a); }

template <int BYTES> struct MjRaw;
template <> struct MjRaw<16> { typedef uint4 T; };
template <> struct MjRaw<8> { typedef uint2 T; };
template <> struct MjRaw<4> { typedef unsigned int T; };
template <> struct MjRaw<2> { typedef unsigned short T; };
// One vector access of N elements; the pointer is aligned to the vector's size.
template <typename T, int N> __device__ __forceinline__ void mj_load(T (&dst)[N], const T *src) {
  typedef typename MjRaw<sizeof(T) * N>::T R;
  *reinterpret_cast<R *>(dst) = *reinterpret_cast<const R *>(src);
}
template <typename T, int N> __device__ __forceinline__ void mj_store(T *dst, const T (&src)[N]) {
  typedef typename MjRaw<sizeof(T) * N>::T R;
  *reinterpret_cast<R *>(dst) = *reinterpret_cast<const R *>(src);
}
// The vector at `p` (aligned) holds positions k0 .. k0+N-1 of a row of n
// elements that starts mid-vector: whole, it is one access; at the row's ends
// each lane reads its position clamped into the row (the lanes outside it
// are masked by the caller) and writes only inside it. `whole`: the caller
// knows the vector is inside the row (a held row's middle items: a constant
// once the loop is unrolled, so no test is left).
template <typename T, int N, typename I> __device__ __forceinline__ void mj_load_row(T (&dst)[N], const T *p, I k0, I n, bool whole = false) {
  if (whole || (k0 >= 0 && k0 + N <= n)) { mj_load(dst, p); return; }
#pragma unroll
  for (int j = 0; j < N; ++j) dst[j] = p[mj_clamp(k0 + j, n - 1) - k0];
}
template <typename T, int N, typename I> __device__ __forceinline__ void mj_store_row(T *p, const T (&src)[N], I k0, I n, bool whole = false) {
  if (whole || (k0 >= 0 && k0 + N <= n)) { mj_store(p, src); return; }
#pragma unroll
  for (int j = 0; j < N; ++j)
    if (k0 + j >= 0 && k0 + j < n) p[j] = src[j];
}

struct MjSum { __device__ static float apply(float a, float b) { return a + b; } __device__ static int apply(int a, int b) { return mj_iadd(a, b); } };
struct MjProd { __device__ static float apply(float a, float b) { return a * b; } __device__ static int apply(int a, int b) { return mj_imul(a, b); } };
struct MjMax { __device__ static float apply(float a, float b) { return mj_max(a, b); } __device__ static int apply(int a, int b) { return max(a, b); } };
struct MjMin { __device__ static float apply(float a, float b) { return mj_min(a, b); } __device__ static int apply(int a, int b) { return min(a, b); } };
// Combines the values of WIDTH consecutive lanes; every lane gets the result.
template <typename Op, int WIDTH, typename T> __device__ __forceinline__ T mj_warp_reduce(T v) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o /= 2) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Combines the values of the whole block; every thread gets the result.
template <typename Op, int THREADS, typename T> __device__ __forceinline__ T mj_block_reduce(T v, T *smem) {
  v = mj_warp_reduce<Op, 32>(v);
  __syncthreads(); // the previous reduction may still be reading smem
  if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;
  __syncthreads();
  T r = smem[0];
#pragma unroll
  for (int w = 1; w < THREADS / 32; ++w) r = Op::apply(r, smem[w]);
  return r;
}
// Online softmax (Milakov and Gimelshein, 2018): the sum of exp(a - max) over a
// row in the pass that finds the max. s is the sum relative to m, the max of
// what it has seen; a vector of values (the lanes outside a row at -inf)
// rescales it once if it holds a larger one. NaN sticks to both. Without a
// branch: where M is finite, exp(-inf - M) is 0 (as are the sum and its
// rescale while m is -inf); where M is -inf every value was, and the sum is 0.
__device__ __forceinline__ float mj_online_rescale(float s, float m, float M) { return m == -MJ_INF ? 0.0f : s * expf(m - M); }
template <int N> __device__ __forceinline__ void mj_online_exp_sum(float &s, float &m, const float (&a)[N]) {
  float M = m;
#pragma unroll
  for (int j = 0; j < N; ++j) M = mj_max(M, a[j]);
  float t = 0.0f;
#pragma unroll
  for (int j = 0; j < N; ++j) t += expf(a[j] - M);
  const float r = s * expf(m - M);
  s = M == -MJ_INF ? 0.0f : r + t;
  m = M;
}
__device__ __forceinline__ void mj_online_exp_sum(float &s, float &m, float a) {
  const float one[1] = {a};
  mj_online_exp_sum(s, m, one);
}
// Combines the (sum, max) pairs of WIDTH consecutive lanes; every lane gets both.
template <int WIDTH> __device__ __forceinline__ void mj_warp_reduce_online(float &s, float &m) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o /= 2) {
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o), m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float M = mj_max(m, m2);
    s = mj_online_rescale(s, m, M) + mj_online_rescale(s2, m2, M);
    m = M;
  }
}
// The same over the whole block; smem_s and smem_m hold a pair per warp.
template <int THREADS> __device__ __forceinline__ void mj_block_reduce_online(float &s, float &m, float *smem_s, float *smem_m) {
  mj_warp_reduce_online<32>(s, m);
  __syncthreads(); // the previous reduction may still be reading smem
  if (threadIdx.x % 32 == 0) { smem_s[threadIdx.x / 32] = s; smem_m[threadIdx.x / 32] = m; }
  __syncthreads();
  float rs = smem_s[0], rm = smem_m[0];
#pragma unroll
  for (int w = 1; w < THREADS / 32; ++w) {
    const float M = mj_max(rm, smem_m[w]);
    rs = mj_online_rescale(rs, rm, M) + mj_online_rescale(smem_s[w], smem_m[w], M);
    rm = M;
  }
  s = rs;
  m = rm;
}
// The finished sum of exp(a - max): NaN where the max is not finite, as every
// exp(a - max) of the row is NaN there, or one of them.
__device__ __forceinline__ float mj_online_finish(float s, float m) { return isfinite(m) ? s : MJ_NAN; }
// Blocks sharing a row wait here until `expected` arrivals are counted (all
// of them resident: the schedule makes the grid fit). Thread 0 arrives for
// the block after the block's writes; the others read what the row's blocks
// wrote with __ldcg (from the L2, not a stale L1).
__device__ __forceinline__ void mj_row_barrier(unsigned *arrived, unsigned expected) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(arrived, 1u);
    while (*(volatile unsigned *)arrived < expected) __nanosleep(32);
    __threadfence();
  }
  __syncthreads();
}
// Past the final barrier: whichever of the row's `blocks` leaves last resets both counters.
__device__ __forceinline__ void mj_row_leave(unsigned *arrived, unsigned *left, unsigned blocks) {
  if (atomicAdd(left, 1u) == blocks - 1) { *arrived = 0u; *left = 0u; }
}
// Combines the PARTS values of one column (threads c, c+32, c+64, ...); all get the result.
template <typename Op, int PARTS, typename T> __device__ __forceinline__ T mj_col_reduce(T v, T (*smem)[33]) {
  __syncthreads();
  smem[threadIdx.x / 32][threadIdx.x % 32] = v;
  __syncthreads();
  T r = smem[0][threadIdx.x % 32];
#pragma unroll
  for (int p = 1; p < PARTS; ++p) r = Op::apply(r, smem[p][threadIdx.x % 32]);
  return r;
}
// The inclusive scan of the 32 lanes' values: lane i gets Op over lanes 0..i.
template <typename Op, typename T> __device__ __forceinline__ T mj_warp_scan(T v) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 1; o < 32; o *= 2) {
    const T u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v = Op::apply(u, v);
  }
  return v;
}
// argmax (MAX) / argmin: (a, ai) becomes (v, vi) when v is better, equal at a lower
// index, or NaN (the first NaN wins, as numpy's). Symmetric, so lanes agree.
// Bitwise on the conditions and selects: no branch in the element loop.
template <bool MAX, typename T> __device__ __forceinline__ void mj_arg_update(T &a, int &ai, T v, int vi) {
  const bool better = MAX ? v > a : v < a;
  const bool lower = vi < ai;
  const bool take = better | ((v == a) & lower) | ((v != v) & ((a == a) | lower));
  a = take ? v : a;
  ai = take ? vi : ai;
}
template <bool MAX, int WIDTH, typename T> __device__ __forceinline__ void mj_warp_argreduce(T &a, int &ai) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o /= 2) {
    const T v = __shfl_xor_sync(0xffffffffu, a, o);
    const int vi = __shfl_xor_sync(0xffffffffu, ai, o);
    mj_arg_update<MAX>(a, ai, v, vi);
  }
}
template <bool MAX, int THREADS, typename T> __device__ __forceinline__ void mj_block_argreduce(T &a, int &ai, T *smem, int *smemi) {
  mj_warp_argreduce<MAX, 32>(a, ai);
  __syncthreads();
  if (threadIdx.x % 32 == 0) { smem[threadIdx.x / 32] = a; smemi[threadIdx.x / 32] = ai; }
  __syncthreads();
  a = smem[0];
  ai = smemi[0];
#pragma unroll
  for (int w = 1; w < THREADS / 32; ++w) mj_arg_update<MAX>(a, ai, smem[w], smemi[w]);
}
template <bool MAX, int PARTS, typename T> __device__ __forceinline__ void mj_col_argreduce(T &a, int &ai, T (*smem)[33], int (*smemi)[33]) {
  __syncthreads();
  smem[threadIdx.x / 32][threadIdx.x % 32] = a;
  smemi[threadIdx.x / 32][threadIdx.x % 32] = ai;
  __syncthreads();
  a = smem[0][threadIdx.x % 32];
  ai = smemi[0][threadIdx.x % 32];
#pragma unroll
  for (int p = 1; p < PARTS; ++p) mj_arg_update<MAX>(a, ai, smem[p][threadIdx.x % 32], smemi[p][threadIdx.x % 32]);
}
)";

/// Used by templates/matmul/MatmulSimt.cpp and MatmulMma.cpp (sm_80 and newer).
const char *const kMatmulHelpers =
    R"(// ---- matmul helpers (sm_80+): async copies, tensor-core fragments ----
__device__ __forceinline__ void mj_cp_async16(void *smem, const void *gmem, bool ok) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(gmem), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void mj_cp_async4(void *smem, const void *gmem, bool ok) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(s), "l"(gmem), "r"(ok ? 4 : 0));
}
__device__ __forceinline__ void mj_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void mj_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }
__device__ __forceinline__ void mj_ldmatrix_x4(unsigned (&r)[4], const void *smem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
__device__ __forceinline__ void mj_ldmatrix_x4_trans(unsigned (&r)[4], const void *smem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
// d += a (16x16, row-major) * b (16x8, column-major), f32 accumulators.
__device__ __forceinline__ void mj_mma_f16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mj_mma_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// For the online softmax of the attention kernels on tensor cores, whose
// probabilities are rounded to 16 bits: the max that keeps NaN in one
// instruction (mj_max's meaning), and 2^x and e^x by ex2.approx with the
// results below 2^-126 flushed to 0 (no test for them).
__device__ __forceinline__ float mj_max_nan(float a, float b) { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ float mj_exp2_ftz(float a) { float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }
__device__ __forceinline__ float mj_exp_ftz(float a) { return mj_exp2_ftz(a * 1.44269504f); }
// ---- end of preamble ----
)";

} // namespace

const std::string &cudaPreamble() {
  static const std::string text = std::string(kBasePreamble) + kMatmulHelpers;
  return text;
}

const std::string &i64Preamble() {
  static const std::string text = R"(// ---- i64: wrapping 64-bit arithmetic and the reductions of long long ----
__device__ __forceinline__ long long mj_iadd(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
__device__ __forceinline__ long long mj_isub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
__device__ __forceinline__ long long mj_imul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
__device__ __forceinline__ long long mj_idiv(long long a, long long b) { return b == 0 ? 0 : (b == -1 ? (long long)(0ull - (unsigned long long)a) : a / b); }
__device__ __forceinline__ long long mj_ineg(long long a) { return (long long)(0ull - (unsigned long long)a); }
struct MjSumL { __device__ static long long apply(long long a, long long b) { return mj_iadd(a, b); } };
struct MjProdL { __device__ static long long apply(long long a, long long b) { return mj_imul(a, b); } };
struct MjMaxL { __device__ static long long apply(long long a, long long b) { return a > b ? a : b; } };
struct MjMinL { __device__ static long long apply(long long a, long long b) { return a < b ? a : b; } };
)";
  return text;
}

const std::string &randomPreamble() {
  static const std::string text =
      R"(// ---- random numbers: Philox4x32-10, as ir/Philox.h computes them ----
// Element i of a random op: the counter (i's low and high words, the offset,
// 0) encrypted under the key (the seed, 0).
__device__ __forceinline__ uint4 mj_philox(unsigned c0, unsigned c1, unsigned c2, unsigned c3, unsigned k0, unsigned k1) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    const unsigned lo0 = 0xD2511F53u * c0, hi0 = __umulhi(0xD2511F53u, c0);
    const unsigned lo1 = 0xCD9E8D57u * c2, hi1 = __umulhi(0xCD9E8D57u, c2);
    const unsigned n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
  }
  return make_uint4(c0, c1, c2, c3);
}
__device__ __forceinline__ uint4 mj_random_words(int seed, int offset, long long i) {
  const unsigned long long u = (unsigned long long)i;
  return mj_philox((unsigned)u, (unsigned)(u >> 32), (unsigned)offset, 0u, (unsigned)seed, 0u);
}
// [0, 1): the top 24 bits times 2^-24, exact in f32
__device__ __forceinline__ float mj_uniform(unsigned w) { return (float)(w >> 8) * 5.9604644775390625e-08f; }
// rand: the top `bits` bits times 2^-bits (24 for f32, 11 for f16, 8 for
// bf16), exact in the result's dtype, so never rounded to 1
__device__ __forceinline__ float mj_rand(int seed, int offset, long long i, int bits) {
  return ldexpf((float)(mj_random_words(seed, offset, i).x >> (32 - bits)), -bits);
}
// Box-Muller: u1 in (0, 1], u2 in [0, 1)
__device__ __forceinline__ float mj_randn(int seed, int offset, long long i) {
  const uint4 w = mj_random_words(seed, offset, i);
  const float u1 = (float)((w.x >> 8) + 1u) * 5.9604644775390625e-08f;
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * mj_uniform(w.y));
}
__device__ __forceinline__ float mj_dropout(float x, int seed, int offset, long long i, float p) {
  return mj_uniform(mj_random_words(seed, offset, i).x) >= p ? x * (1.0f / (1.0f - p)) : 0.0f;
}
)";
  return text;
}

const std::string &chainedScanPreamble() {
  static const std::string text =
      R"(// ---- a scan whose tiles are chained over blocks: the decoupled look-back ----
// (Merrill and Garland, "Single-pass Parallel Prefix Scan with Decoupled
// Look-back", 2016.) A status word per tile: the launch's epoch (bits 63-33),
// whether the value is the tile's inclusive prefix or only its own total
// (bit 32), and the value's 32 bits. One 64-bit store publishes both, so a
// reader sees a value with its flag; words of another epoch are not yet written.
__device__ __forceinline__ unsigned mj_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned mj_bits(int v) { return (unsigned)v; }
__device__ __forceinline__ void mj_from_bits(float &v, unsigned b) { v = __uint_as_float(b); }
__device__ __forceinline__ void mj_from_bits(int &v, unsigned b) { v = (int)b; }
__device__ __forceinline__ void mj_tile_publish(unsigned long long *status, unsigned epoch, bool inclusive, unsigned bits) {
  *(volatile unsigned long long *)status = ((unsigned long long)epoch << 33) | ((unsigned long long)inclusive << 32) | bits;
}
// Called by a whole warp once the tile's total is known: publishes it (as the
// inclusive prefix for a row's first tile), reads the tiles before, 32 at a
// time (lane 0 the nearest), waiting for each to publish, until one holds its
// inclusive prefix; combines what it read up to that tile, publishes this
// tile's inclusive prefix and returns the combine of the tiles before.
template <typename Op, typename T>
__device__ T mj_scan_look_back(unsigned long long *status, long long tile, unsigned epoch, T total, T identity) {
  const int lane = threadIdx.x % 32;
  if (lane == 0) mj_tile_publish(status + tile, epoch, tile == 0, mj_bits(total));
  T prefix = identity;
  for (long long end = tile; end > 0; end -= 32) {
    const long long j = end - 1 - lane;
    bool inclusive = true; // before the row's first tile: nothing, as an inclusive prefix
    T v = identity;
    if (j >= 0) {
      unsigned long long word;
      do {
        word = *(volatile const unsigned long long *)(status + j);
      } while ((unsigned)(word >> 33) != epoch);
      inclusive = (word >> 32) & 1ull;
      mj_from_bits(v, (unsigned)word);
    }
    const unsigned found = __ballot_sync(0xffffffffu, inclusive);
    if (found != 0u && lane > __ffs(found) - 1) v = identity; // past the nearest inclusive prefix
    v = __shfl_sync(0xffffffffu, mj_warp_scan<Op>(v), 31);
    prefix = Op::apply(v, prefix);
    if (found != 0u) break;
  }
  if (lane == 0 && tile > 0) mj_tile_publish(status + tile, epoch, true, mj_bits(Op::apply(prefix, total)));
  return prefix;
}
)";
  return text;
}

const std::string &welfordPreamble() {
  static const std::string text =
      R"(// ---- variance in one pass: Welford's update, Chan's combine ----
// A thread keeps (m2, mean, n): the count n of the elements it has seen,
// their mean, and the sum m2 of their squared deviations from that mean.
// Two such triples combine into the triple of all their elements (Chan,
// Golub and LeVeque, 1979); an empty one changes nothing.
__device__ __forceinline__ void mj_welford_merge(float &m2, float &mean, float &n, float m2b, float meanb, float nb) {
  if (nb == 0.0f) return;
  if (n == 0.0f) { m2 = m2b; mean = meanb; n = nb; return; }
  const float total = n + nb, w = nb / total, delta = meanb - mean;
  mean += delta * w;
  m2 += m2b + delta * delta * n * w;
  n = total;
}
// One element (Welford, 1962).
__device__ __forceinline__ void mj_welford_push(float &m2, float &mean, float &n, float a) {
  n += 1.0f;
  const float d = a - mean;
  mean += d / n;
  m2 += d * (a - mean);
}
// A vector of N elements: its own mean and squared deviations first, then
// one merge, without a branch (N > 0; while n is 0, w is 1 and the product
// of the deviations' weights is 0).
template <int N> __device__ __forceinline__ void mj_welford_add(float &m2, float &mean, float &n, const float (&a)[N]) {
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < N; ++j) s += a[j];
  const float mv = s * (1.0f / N);
  float q = 0.0f;
#pragma unroll
  for (int j = 0; j < N; ++j) q += (a[j] - mv) * (a[j] - mv);
  const float total = n + (float)N, w = (float)N * __frcp_rn(total), delta = mv - mean;
  mean += delta * w;
  m2 += q + delta * (delta * (n * w));
  n = total;
}
// A vector whose lanes are positions k0.. of a row of `len`: merged whole
// where it lies inside the row, else its lanes inside the row one at a time.
template <int N, typename I, typename J> __device__ __forceinline__ void mj_welford_add_row(float &m2, float &mean, float &n, const float (&a)[N], I k0, J len) {
  if (k0 >= 0 && k0 + N <= len) { mj_welford_add(m2, mean, n, a); return; }
#pragma unroll
  for (int j = 0; j < N; ++j)
    if (k0 + j >= 0 && k0 + j < len) mj_welford_push(m2, mean, n, a[j]);
}
// Combines the triples of WIDTH consecutive lanes; every lane gets the same
// triple (each pair merges the lower lane's first).
template <int WIDTH> __device__ __forceinline__ void mj_warp_reduce_welford(float &m2, float &mean, float &n) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o /= 2) {
    const float m2b = __shfl_xor_sync(0xffffffffu, m2, o), meanb = __shfl_xor_sync(0xffffffffu, mean, o),
                nb = __shfl_xor_sync(0xffffffffu, n, o);
    if (threadIdx.x & o) {
      float lm2 = m2b, lmean = meanb, ln = nb;
      mj_welford_merge(lm2, lmean, ln, m2, mean, n);
      m2 = lm2; mean = lmean; n = ln;
    } else {
      mj_welford_merge(m2, mean, n, m2b, meanb, nb);
    }
  }
}
// The same over the whole block, the warps' triples in order through shared memory.
template <int THREADS> __device__ __forceinline__ void mj_block_reduce_welford(float &m2, float &mean, float &n, float *smem_m2, float *smem_mean, float *smem_n) {
  mj_warp_reduce_welford<32>(m2, mean, n);
  __syncthreads(); // the previous reduction may still be reading smem
  if (threadIdx.x % 32 == 0) { smem_m2[threadIdx.x / 32] = m2; smem_mean[threadIdx.x / 32] = mean; smem_n[threadIdx.x / 32] = n; }
  __syncthreads();
  float rm2 = smem_m2[0], rmean = smem_mean[0], rn = smem_n[0];
#pragma unroll
  for (int w = 1; w < THREADS / 32; ++w) mj_welford_merge(rm2, rmean, rn, smem_m2[w], smem_mean[w], smem_n[w]);
  m2 = rm2; mean = rmean; n = rn;
}
)";
  return text;
}

const std::string &clusterPreamble() {
  static const std::string text =
      R"(// ---- a cluster of blocks (sm_90) ----
// Every thread of the cluster arrives, then waits for the others: what each
// wrote before (shared or global memory) is seen by all after (release and
// acquire at the cluster's scope).
__device__ __forceinline__ void mj_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
)";
  return text;
}

} // namespace minijit
