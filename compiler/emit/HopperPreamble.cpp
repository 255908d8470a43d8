//===- compiler/emit/HopperPreamble.cpp - helpers of the sm_90a matmul ----===//
// What the Hopper kernels (templates/matmul/MatmulWgmma*.cpp,
// templates/attention/AttentionWgmma.cpp) call, added after the common
// preamble to their sources only: mbarriers, TMA loads, shared-memory matrix
// descriptors, the wgmma fences, setmaxnreg, and the wgmma instructions the
// kernel uses (their n and dtype), written out with their accumulators.
//===----------------------------------------------------------------------===//
#include "compiler/emit/CudaEmitter.h"

#include <set>
#include <string>

namespace minijit {

namespace {

const char *const kHopperHelpers = R"(// ---- Hopper helpers (sm_90a): mbarriers, TMA, wgmma ----
// A TMA descriptor (CUtensorMap), encoded by the host, passed by value.
struct __align__(64) MjTensorMap { unsigned long long opaque[16]; };
__device__ __forceinline__ unsigned mj_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
// An mbarrier completes a phase once `count` threads arrived and the bytes
// announced with expect_tx have landed; waiters name the phase's parity.
__device__ __forceinline__ void mj_mbar_init(unsigned long long *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(mj_smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mj_fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void mj_mbar_expect_tx(unsigned long long *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(mj_smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mj_mbar_arrive(unsigned long long *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(mj_smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mj_mbar_wait(unsigned long long *bar, unsigned parity) {
  asm volatile("{\n.reg .pred done;\nwait:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra wait;\n}\n" :: "r"(mj_smem_addr(bar)), "r"(parity) : "memory");
}
// Whether the phase of parity `parity` has completed, without waiting.
__device__ __forceinline__ bool mj_mbar_test(unsigned long long *bar, unsigned parity) {
  unsigned done;
  asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(mj_smem_addr(bar)), "r"(parity) : "memory");
  return done != 0;
}
// A box of the tensor `map` at the coordinates (innermost first) into shared
// memory, swizzled as the map says; its bytes complete on `bar`.
__device__ __forceinline__ void mj_tma_load(void *dst, const MjTensorMap &map, unsigned long long *bar, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
               :: "r"(mj_smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(mj_smem_addr(bar)), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void mj_tma_load(void *dst, const MjTensorMap &map, unsigned long long *bar, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n"
               :: "r"(mj_smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(mj_smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
// A shared-memory matrix descriptor with the 128-byte swizzle: the start
// address, the leading and the stride byte offsets, each in 16-byte units.
// Adding n to it moves the start by 16 n bytes.
__device__ __forceinline__ unsigned long long mj_wgmma_desc(const void *smem, unsigned leading, unsigned stride) {
  return (unsigned long long)((mj_smem_addr(smem) & 0x3FFFF) >> 4) | (unsigned long long)(leading >> 4) << 16 |
         (unsigned long long)(stride >> 4) << 32 | 1ull << 62;
}
__device__ __forceinline__ void mj_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void mj_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void mj_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
// Registers move between warpgroups: the producer gives, the consumers take.
template <int N> __device__ __forceinline__ void mj_setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(N)); }
template <int N> __device__ __forceinline__ void mj_setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(N)); }
// The accumulators are written by the tensor cores until the wait: this keeps
// the compiler from reading them before it (each counts as changed here).
template <int R> __device__ __forceinline__ void mj_fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}
// The same for A fragments in registers (N of 4 registers each), which a
// wgmma reads until its wait: their writes stay before the wgmma's fence.
template <int N> __device__ __forceinline__ void mj_fence_frags(unsigned (&a)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(a[i][0]), "+r"(a[i][1]), "+r"(a[i][2]), "+r"(a[i][3]) :: "memory");
}
// Named barrier `id` (0 is __syncthreads's) of `threads` threads: this
// thread waits there, or arrives and goes on (the others wait for it).
__device__ __forceinline__ void mj_named_sync(int id, int threads) { asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(threads) : "memory"); }
__device__ __forceinline__ void mj_named_arrive(int id, int threads) { asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(threads) : "memory"); }
// The 128 threads of consumer warpgroup c meet (named barrier 1 + c; 0 is __syncthreads's).
__device__ __forceinline__ void mj_warpgroup_sync(int c) { asm volatile("bar.sync %0, 128;\n" :: "r"(1 + c) : "memory"); }
)";

const char *const kClusterHelpers = R"(// ---- clusters of blocks (sm_90): ranks, remote arrivals, multicast ----
__device__ __forceinline__ int mj_cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r)); return (int)r; }
__device__ __forceinline__ int mj_cluster_id() { unsigned r; asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r)); return (int)r; }
__device__ __forceinline__ int mj_cluster_count() { unsigned r; asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r)); return (int)r; }
// An arrival on the mbarrier at `bar`'s place in the shared memory of block
// `rank` of the cluster (release at the block's scope, as the local arrival:
// at the cluster's, each would wait for this thread's stores to be seen there).
__device__ __forceinline__ void mj_mbar_arrive_cluster(unsigned long long *bar, unsigned rank) {
  asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
               :: "r"(mj_smem_addr(bar)), "r"(rank) : "memory");
}
// A box of `map` into `dst`'s place in the shared memory of each block of the
// cluster in `mask`; its bytes complete on the mbarrier at `bar`'s place in each.
__device__ __forceinline__ void mj_tma_load_multicast(void *dst, const MjTensorMap &map, unsigned long long *bar, unsigned short mask, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;\n"
               :: "r"(mj_smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(mj_smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void mj_tma_load_multicast(void *dst, const MjTensorMap &map, unsigned long long *bar, unsigned short mask, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;\n"
               :: "r"(mj_smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(mj_smem_addr(bar)), "h"(mask), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
)";

} // namespace

const std::string &hopperHelpers() {
  static const std::string text = kHopperHelpers;
  return text;
}

namespace {

/// The PTX type of a wgmma's operands and its k.
const char *wgmmaType(DType dtype) {
  return dtype == DType::BF16 ? "bf16" : dtype == DType::F32 ? "tf32" : "f16";
}
unsigned wgmmaK(DType dtype) { return dtype == DType::F32 ? 8 : 16; }

} // namespace

std::string wgmmaName(unsigned n, DType dtype) {
  return "mj_wgmma_m64n" + std::to_string(n) + "k" + std::to_string(wgmmaK(dtype)) + "_" +
         wgmmaType(dtype);
}

std::string wgmmaFunction(unsigned n, DType dtype) {
  std::string t = wgmmaType(dtype), k = std::to_string(wgmmaK(dtype));
  bool tf32 = dtype == DType::F32;
  unsigned regs = n / 2;
  std::string r = std::to_string(regs);
  std::string s = "// d (+)= a (64x" + k + ") * b (" + k + "x" + std::to_string(n) +
                  ") from shared memory, f32 accumulators; TA / TB: A m-major / B n-major.\n";
  if (tf32)
    s += "// TF32: the f32 operands' low 13 bits of fraction are not read.\n";
  s += "template <int TA, int TB>\n__device__ __forceinline__ void " + wgmmaName(n, dtype) +
       "(float (&d)[" + r + "], unsigned long long a, unsigned long long b, int accumulate) {\n";
  if (tf32)
    s += "  static_assert(TA == 0 && TB == 0, \"TF32's wgmma reads both operands k-major\");\n";
  s += "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(regs + 2) +
       ", 0;\\n\"\n";
  s += "               \"wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" + k +
       ".f32." + t + "." + t + " {\"\n";
  for (unsigned i = 0; i < regs; i += 16) {
    s += "               \"";
    for (unsigned j = i; j < i + 16 && j < regs; ++j)
      s += "%" + std::to_string(j) + (j + 1 < regs ? ", " : "");
    s += "\"\n";
  }
  // (TF32 has no transpose operands: the scales of a and b only)
  s += "               \"}, %" + std::to_string(regs) + ", %" + std::to_string(regs + 1) +
       ", p, 1, 1" +
       (tf32 ? std::string()
             : ", %" + std::to_string(regs + 3) + ", %" + std::to_string(regs + 4)) +
       ";\\n}\\n\"\n";
  for (unsigned i = 0; i < regs; i += 8) {
    s += i == 0 ? "               : " : "                 ";
    for (unsigned j = i; j < i + 8 && j < regs; ++j)
      s += "\"+f\"(d[" + std::to_string(j) + "])" + (j + 1 < regs ? ", " : "");
    s += "\n";
  }
  s += tf32 ? "               : \"l\"(a), \"l\"(b), \"r\"(accumulate));\n}\n"
            : "               : \"l\"(a), \"l\"(b), \"r\"(accumulate), \"n\"(TA), \"n\"(TB));\n}\n";
  return s;
}

/// What a kernel adds that writes wgmma's operands into shared memory itself
/// (the product split in the kernel, attention's copies): the 128-byte
/// swizzle's address of a 16-byte chunk, and the fence that shows the
/// generic proxy's stores (cp.async's too) to wgmma.
const char *const kSwizzleHelpers = R"(// ---- operands written to shared memory for wgmma ----
// The byte offset of 16-byte chunk `chunk` (0..7) of row r of a tile of
// 128-byte rows in TMA's 128-byte swizzle (chunks XORed with r % 8).
__device__ __forceinline__ int mj_swizzle128(int r, int chunk) { return r * 128 + ((chunk ^ (r % 8)) * 16); }
// This thread's stores to shared memory, seen by the async proxy (wgmma).
__device__ __forceinline__ void mj_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
)";

/// What the product split in the kernel (MatmulWgmmaSchedule::splitInKernel)
/// adds besides: the split of an f32 value into TF32 parts as the graph's
/// tf32x3 rewrite makes them (MatmulTf32Rewrites.cpp).
const char *const kSplitHelpers = R"(// ---- three TF32 products split in the kernel ----
// x = hi + lo, each TF32; hi is x itself where rounding overflows a finite
// x; hi_cross, the hi that meets the other operand's lo, is 0 where x is not
// finite (so that inf * lo makes no inf - inf); lo is 0 where x == hi.
__device__ __forceinline__ void mj_split_tf32x3(float x, unsigned &hi, unsigned &cross, unsigned &lo) {
  float h = mj_round_tf32(x);
  const bool xFinite = x - x == 0.0f, hFinite = h - h == 0.0f;
  if (!hFinite && xFinite) h = x;
  hi = __float_as_uint(h);
  lo = __float_as_uint(mj_round_tf32(x == h ? 0.0f : x - h));
  cross = xFinite ? hi : 0u;
}
)";

/// MatmulWgmmaSchedule::promote's add: a k-slice's product, once its wgmmas
/// are done, into the tile's sum.
const char *const kPromoteHelper = R"(// ---- a k-slice's product into the sum (promote=1) ----
// sum += part, element by element, rounded to nearest as the CUDA cores add,
// once part's wgmmas are done (wgmma.wait_group).
template <int R> __device__ __forceinline__ void mj_add_acc(float (&sum)[R], float (&part)[R]) {
  mj_fence_acc(part);
#pragma unroll
  for (int i = 0; i < R; ++i) sum[i] = __fadd_rn(sum[i], part[i]);
}
)";

std::string wgmmaRsName(unsigned n, DType dtype) { return wgmmaName(n, dtype) + "_rs"; }

std::string wgmmaRsFunction(unsigned n, DType dtype) {
  bool tf32 = dtype == DType::F32;
  std::string t = wgmmaType(dtype), k = std::to_string(wgmmaK(dtype));
  unsigned regs = n / 2;
  std::string r = std::to_string(regs);
  std::string s = "// d (+)= a (64x" + k + ", from registers: this thread's fragment) * b (" + k +
                  "x" + std::to_string(n) + ", shared memory), " +
                  (tf32 ? std::string("TF32") : t) + ", f32 accumulators" +
                  (tf32 ? "" : "; TB: B n-major") + ".\n";
  if (!tf32)
    s += "template <int TB>\n";
  s += "__device__ __forceinline__ void " + wgmmaRsName(n, dtype) + "(float (&d)[" + r +
       "], const unsigned (&a)[4], unsigned long long b, int accumulate) {\n";
  s += "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(regs + 5) +
       ", 0;\\n\"\n";
  s += "               \"wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" + k +
       ".f32." + t + "." + t + " {\"\n";
  for (unsigned i = 0; i < regs; i += 16) {
    s += "               \"";
    for (unsigned j = i; j < i + 16 && j < regs; ++j)
      s += "%" + std::to_string(j) + (j + 1 < regs ? ", " : "");
    s += "\"\n";
  }
  // (TF32 has no transpose operand: the scales of a and b only)
  s += "               \"}, {%" + std::to_string(regs) + ", %" + std::to_string(regs + 1) + ", %" +
       std::to_string(regs + 2) + ", %" + std::to_string(regs + 3) + "}, %" +
       std::to_string(regs + 4) + ", p, 1, 1" + (tf32 ? "" : ", %" + std::to_string(regs + 6)) +
       ";\\n}\\n\"\n";
  for (unsigned i = 0; i < regs; i += 8) {
    s += i == 0 ? "               : " : "                 ";
    for (unsigned j = i; j < i + 8 && j < regs; ++j)
      s += "\"+f\"(d[" + std::to_string(j) + "])" + (j + 1 < regs ? ", " : "");
    s += "\n";
  }
  s += "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b), "
       "\"r\"(accumulate)" +
       std::string(tf32 ? "" : ", \"n\"(TB)") + ");\n}\n";
  return s;
}

std::set<std::string> hopperPieces(const LoweredKernel &k, const Schedule &sched) {
  if (const AttentionWgmmaSchedule *a = sched.getIf<AttentionWgmmaSchedule>())
    // S = Q K^T from shared memory, bc keys wide; O += P V, P from registers
    return {wgmmaFunction(a->bc, k.matmul->dtype),
            wgmmaRsFunction(static_cast<unsigned>(k.attention->valueDim), k.matmul->dtype),
            kSwizzleHelpers};
  const MatmulWgmmaSchedule *w = sched.getIf<MatmulWgmmaSchedule>();
  if (!w)
    return {};
  const MatmulWgmmaSchedule &s = *w;
  if (s.splitInKernel)
    return {wgmmaRsFunction(s.bm, DType::F32), kSwizzleHelpers, kSplitHelpers, kPromoteHelper};
  std::set<std::string> extra{wgmmaFunction(s.bn, k.matmul->dtype)};
  if (s.cluster > 1)
    extra.insert(kClusterHelpers);
  if (s.promote)
    extra.insert(kPromoteHelper);
  return extra;
}

std::string kernelPreamble(const LoweredKernel &k, const Schedule &s) {
  std::string cluster = s.geometry().cluster > 1 ? clusterPreamble() : std::string();
  std::string random = holdsRandom(k) ? randomPreamble() : std::string();
  std::string i64 = holdsI64(k) ? i64Preamble() : std::string();
  std::string welford = holdsWelford(k) ? welfordPreamble() : std::string();
  const ScanSchedule *scan = s.getIf<ScanSchedule>();
  std::string chained = scan && scan->chained() ? chainedScanPreamble() : std::string();
  return cudaPreamble() + cluster + random + i64 + welford + chained +
         hopperPreamble(hopperPieces(k, s));
}

std::string hopperPreamble(const std::set<std::string> &wgmmas) {
  if (wgmmas.empty())
    return "";
  std::string s = hopperHelpers();
  for (const std::string &f : wgmmas)
    s += f;
  return s + "// ---- end of Hopper helpers ----\n";
}

} // namespace minijit
