// The heads-to-front permute ([B, S, H, D] -> [B, H, S, D], f16, D = 128, times 0.125)
// beside cudaMemcpy of the same 128 MiB, with other mappings of threads to elements
// (docs/PERFORMANCE_LOG.md, "Issue 14's last targets, profiled"). A one-off measurement,
// not part of the build:
//
//     nvcc -O3 -arch=sm_90 -std=c++17 --extended-lambda -o permute_variants bench/permute_variants.cu
//     ./permute_variants
//
// v1 is the mapping minijit emits (one 16-byte vector a thread, in output order).
#include <cstdio>
#include <cuda_fp16.h>
#include <vector>
#include <algorithm>
constexpr int B = 8, S = 1024, H = 32, D = 128;
constexpr long N = (long)B * S * H * D;
struct alignas(16) V8 { __half2 h[4]; };
__device__ __forceinline__ V8 scale(V8 v) { for (int j = 0; j < 4; ++j) v.h[j] = __hmul2(v.h[j], __float2half2_rn(0.125f)); return v; }
// output index o (in 8-vectors) -> input index
__device__ __forceinline__ long srcOf(long o) {
  long e = o * 8; int d = e % D; long r = e / D; int s = r % S; long r2 = r / S; int h = r2 % H; int b = r2 / H;
  return (((long)b * S + s) * H + h) * D + d;
}
// 1: output order, one vector per thread
__global__ void __launch_bounds__(256) v1(const V8* x, V8* y) { long o = (long)blockIdx.x * 256 + threadIdx.x; y[o] = scale(x[srcOf(o) / 8]); }
// 2: output order, K vectors per thread, loads first (block covers K*256 consecutive vectors)
template <int K> __global__ void __launch_bounds__(256) v2(const V8* x, V8* y) {
  long base = (long)blockIdx.x * 256 * K + threadIdx.x; V8 r[K];
  #pragma unroll
  for (int k = 0; k < K; ++k) r[k] = x[srcOf(base + k * 256) / 8];
  #pragma unroll
  for (int k = 0; k < K; ++k) y[base + k * 256] = scale(r[k]);
}
// 3: input order (coalesced reads, 256-byte writes)
__global__ void __launch_bounds__(256) v3(const V8* x, V8* y) {
  long i = (long)blockIdx.x * 256 + threadIdx.x; long e = i * 8; int d = e % D; long r = e / D; int h = r % H; long r2 = r / H; int s = r2 % S; int b = r2 / S;
  y[((((long)b * H + h) * S + s) * D + d) / 8] = scale(x[i]);
}
// 4: tiled: a block covers TS rows of s by TH heads (16 vectors per row of D); K vectors per thread
template <int TS, int TH> __global__ void __launch_bounds__(256) v4(const V8* x, V8* y) {
  constexpr int per = TS * TH * 16 / 256; // vectors per thread
  int tilesS = S / TS, tilesH = H / TH; long t = blockIdx.x; int ts = t % tilesS; long t2 = t / tilesS; int th = t2 % tilesH; int b = t2 / tilesH;
  V8 r[per]; long dst[per];
  #pragma unroll
  for (int k = 0; k < per; ++k) {
    int v = k * 256 + threadIdx.x; int dv = v % 16; int rr = v / 16; int hh = rr % TH; int ss = rr / TH; // read order: h fastest (input contiguous)
    int s = ts * TS + ss, h = th * TH + hh;
    r[k] = x[((((long)b * S + s) * H + h) * D) / 8 + dv];
    dst[k] = ((((long)b * H + h) * S + s) * D) / 8 + dv;
  }
  #pragma unroll
  for (int k = 0; k < per; ++k) y[dst[k]] = scale(r[k]);
}
__global__ void copyk(const V8* x, V8* y) { long i = (long)blockIdx.x * 256 + threadIdx.x; y[i] = x[i]; }
template <class F> float timeIt(F f, const char* name, V8** xs, V8** ys, int nb, const V8* ref) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> t;
  for (int it = 0; it < 60; ++it) { int i = it % nb; cudaEventRecord(a); f(xs[i], ys[i]); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); if (it >= 10) t.push_back(ms * 1000); }
  std::sort(t.begin(), t.end());
  bool ok = true;
  if (ref) { std::vector<V8> h1(N / 8), h2(N / 8); cudaMemcpy(h1.data(), ys[0], N * 2, cudaMemcpyDeviceToHost); cudaMemcpy(h2.data(), ref, N * 2, cudaMemcpyDeviceToHost); ok = memcmp(h1.data(), h2.data(), N * 2) == 0; }
  printf("%-28s median %8.2f us  %6.2f TB/s  %s\n", name, t[t.size() / 2], 2.0 * N * 2 / (t[t.size() / 2] * 1e-6) / 1e12, ref ? (ok ? "ok" : "WRONG") : "");
  return t[t.size() / 2];
}
int main() {
  const int nb = 3; V8 *xs[nb], *ys[nb], *ref;
  for (int i = 0; i < nb; ++i) { cudaMalloc(&xs[i], N * 2); cudaMalloc(&ys[i], N * 2); }
  cudaMalloc(&ref, N * 2);
  std::vector<__half> h(N); for (long i = 0; i < N; ++i) h[i] = __float2half((float)((i * 2654435761u) % 1000) / 100.0f);
  for (int i = 0; i < nb; ++i) cudaMemcpy(xs[i], h.data(), N * 2, cudaMemcpyHostToDevice);
  const long nv = N / 8;
  v1<<<nv / 256, 256>>>(xs[0], ref); cudaDeviceSynchronize();
  timeIt([&](V8* x, V8* y) { cudaMemcpyAsync(y, x, N * 2, cudaMemcpyDeviceToDevice); }, "cudaMemcpy D2D", xs, ys, nb, nullptr);
  timeIt([&](V8* x, V8* y) { copyk<<<nv / 256, 256>>>(x, y); }, "copy kernel 1 vec", xs, ys, nb, nullptr);
  timeIt([&](V8* x, V8* y) { v1<<<nv / 256, 256>>>(x, y); }, "v1 output order (today)", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v2<2><<<nv / 512, 256>>>(x, y); }, "v2 output order x2", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v2<4><<<nv / 1024, 256>>>(x, y); }, "v2 output order x4", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v3<<<nv / 256, 256>>>(x, y); }, "v3 input order", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v4<4, 4><<<nv / 256, 256>>>(x, y); }, "v4 tile 4s x 4h", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v4<8, 4><<<nv / 512, 256>>>(x, y); }, "v4 tile 8s x 4h", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v4<4, 8><<<nv / 512, 256>>>(x, y); }, "v4 tile 4s x 8h", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v4<8, 8><<<nv / 1024, 256>>>(x, y); }, "v4 tile 8s x 8h", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v4<16, 8><<<nv / 2048, 256>>>(x, y); }, "v4 tile 16s x 8h", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v4<2, 8><<<nv / 256, 256>>>(x, y); }, "v4 tile 2s x 8h", xs, ys, nb, ref);
  timeIt([&](V8* x, V8* y) { v4<8, 2><<<nv / 256, 256>>>(x, y); }, "v4 tile 8s x 2h", xs, ys, nb, ref);
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
