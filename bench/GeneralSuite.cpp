//===- bench/GeneralSuite.cpp - graphs nobody tuned for --------------------===//
// Each graph is written the way its PyTorch twin in bench/torch_general.py
// is (same name, same shapes, inputs in the same order and layout).
//===----------------------------------------------------------------------===//
#include "bench/GeneralSuite.h"

#include "ir/Builder.h"

namespace minijit::bench {

namespace {

Graph transposedAdd(int64_t n) {
  Graph g("transposed_add");
  Tensor x = g.input("x", DType::F32, {n, n}), y = g.input("y", DType::F32, {n, n});
  g.output(transpose(x) + y, "z");
  return g;
}

Graph headsToFront(DType t) { // [B, S, H, D] -> [B, H, S, D], scaled
  Graph g("heads_to_front");
  Tensor x = g.input("x", t, {8, 1024, 32, 128});
  g.output(permute(x, {0, 2, 1, 3}) * 0.125, "y");
  return g;
}

Graph axisSum(const Shape &s, std::vector<int64_t> axes, DType t = DType::F32) {
  Graph g("axis_sum");
  Tensor x = g.input("x", t, s);
  g.output(sum(t == DType::F32 ? x : x.cast(DType::F32), axes).cast(t), "y");
  return g;
}

Graph maskedSoftmax(int64_t b, int64_t s) { // batched rows, a broadcast mask
  Graph g("masked_softmax");
  Tensor x = g.input("x", DType::F32, {b, s, s}), m = g.input("mask", DType::F32, {s, s});
  g.output(softmax(x * 0.125 + m, -1), "y");
  return g;
}

Graph rowSoftmax(int64_t rows, int64_t cols, DType t = DType::F32) {
  Graph g("softmax");
  Tensor x = g.input("x", t, {rows, cols});
  Tensor xf = t == DType::F32 ? x : x.cast(DType::F32);
  g.output(softmax(xf, -1).cast(t), "y");
  return g;
}

Graph columnSoftmax(int64_t rows, int64_t cols) {
  Graph g("column_softmax");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  g.output(softmax(x, 0), "y");
  return g;
}

Graph layerNormRows(int64_t rows, int64_t cols, DType t = DType::F32) {
  Graph g("layernorm");
  Tensor x = g.input("x", t, {rows, cols});
  Tensor w = g.input("w", t, {cols}), b = g.input("b", t, {cols});
  auto f32 = [&](const Tensor &v) { return t == DType::F32 ? v : v.cast(DType::F32); };
  g.output(layerNorm(f32(x), f32(w), f32(b)).cast(t), "y");
  return g;
}

/// F.instance_norm of x [n, c, h, w] without weights: each (n, c) plane
/// normalized over its h * w elements.
Graph instanceNorm(const Shape &s) {
  Graph g("instance_norm");
  Tensor x = g.input("x", DType::F32, s);
  Tensor d = x - mean(x, {2, 3}, true);
  g.output(d * rsqrt(mean(d * d, {2, 3}, true) + 1e-5), "y");
  return g;
}

Graph rmsNormRows(int64_t rows, int64_t cols, DType t) {
  Graph g("rmsnorm");
  Tensor x = g.input("x", t, {rows, cols}), w = g.input("w", t, {cols});
  g.output((rmsNorm(x.cast(DType::F32), w.cast(DType::F32))).cast(t), "y");
  return g;
}

Graph divideBySum(int64_t rows, int64_t cols) { // x / x.sum()
  Graph g("divide_by_sum");
  Tensor x = g.input("x", DType::F32, {rows, cols});
  g.output(x / sum(x, {}, true), "y");
  return g;
}

Graph centerAll(int64_t n) { // x - x.mean()
  Graph g("center");
  Tensor x = g.input("x", DType::F32, {n, n});
  g.output(x - mean(x, {}, true), "y");
  return g;
}

Graph sumAndMax(int64_t rows, int64_t cols, DType t) { // two outputs
  Graph g("sum_and_max");
  Tensor x = g.input("x", t, {rows, cols});
  g.output(sum(x.cast(DType::F32), {1}), "s");
  g.output(max(x, {1}), "m");
  return g;
}

Graph broadcastMiddle() { // [64, 1, 1024] against [64, 512, 1024]
  Graph g("broadcast_middle");
  Tensor x = g.input("x", DType::F32, {64, 512, 1024}), b = g.input("b", DType::F32, {64, 1, 1024});
  g.output(x * sigmoid(b), "y");
  return g;
}

Graph product(int64_t m, int64_t k, int64_t n, DType t) {
  Graph g("matmul");
  Tensor x = g.input("x", t, {m, k}), w = g.input("w", t, {k, n});
  g.output(matmul(x, w), "y");
  return g;
}

Graph batchedProduct(int64_t batch, int64_t m, int64_t k, int64_t n, DType t) {
  Graph g("bmm");
  Tensor x = g.input("x", t, {batch, m, k}), w = g.input("w", t, {batch, k, n});
  g.output(matmul(x, w), "y");
  return g;
}

/// nn.Linear: W stored [out, in], y = gelu(x @ W.T + b).
Graph linearGelu(int64_t m, int64_t in, int64_t out, DType t) {
  Graph g("linear_gelu");
  Tensor x = g.input("x", t, {m, in}), w = g.input("w", t, {out, in}), b = g.input("b", t, {out});
  g.output(gelu(matmul(x, transpose(w)) + b), "y");
  return g;
}

Graph linear(int64_t m, int64_t in, int64_t out, DType t) {
  Graph g("linear");
  Tensor x = g.input("x", t, {m, in}), w = g.input("w", t, {out, in});
  g.output(matmul(x, transpose(w)), "y");
  return g;
}

Graph sumOfLinear(int64_t m, int64_t in, int64_t out) { // (x @ W.T).sum(1)
  Graph g("sum_of_linear");
  Tensor x = g.input("x", DType::F32, {m, in}), w = g.input("w", DType::F32, {out, in});
  g.output(sum(matmul(x, transpose(w)), {1}), "y");
  return g;
}

} // namespace

std::vector<GeneralWorkload> generalWorkloads() {
  const DType f32 = DType::F32, f16 = DType::F16, bf16 = DType::BF16;
  return {
      // permuted operands
      {"transposed add 8192^2", [] { return transposedAdd(8192); }, false},
      {"heads to front f16 8x1024x32x128", [=] { return headsToFront(f16); }, false},
      // reductions over middle, leading and non-adjacent axes
      {"sum middle axis 64x512x1024", [] { return axisSum({64, 512, 1024}, {1}); }, false},
      {"sum middle axis 63x511x1023", [] { return axisSum({63, 511, 1023}, {1}); }, false},
      {"sum leading axis 32768x4096", [] { return axisSum({32768, 4096}, {0}); }, false},
      {"sum axes 0,2 of 256x64x2048", [] { return axisSum({256, 64, 2048}, {0, 2}); }, false},
      {"sum middle axis bf16 128x1000x768", [=] { return axisSum({128, 1000, 768}, {1}, bf16); },
       false},
      // rows: batched with a mask, short, odd, vocabulary-long, few and huge
      {"masked softmax 32x1024x1024", [] { return maskedSoftmax(32, 1024); }, false},
      {"softmax 256x50257", [] { return rowSoftmax(256, 50257); }, false},
      {"softmax bf16 2048x50257", [=] { return rowSoftmax(2048, 50257, bf16); }, false},
      {"softmax 262144x32", [] { return rowSoftmax(262144, 32); }, false},
      {"softmax 8191x1023", [] { return rowSoftmax(8191, 1023); }, false},
      {"softmax 8x1048576", [] { return rowSoftmax(8, 1 << 20); }, false},
      {"softmax 512x393216", [] { return rowSoftmax(512, 393216); }, false},
      {"column softmax 4096x4096", [] { return columnSoftmax(4096, 4096); }, false},
      {"layernorm 16x4194304", [] { return layerNormRows(16, 1 << 22); }, false},
      {"layernorm bf16 4097x3001", [=] { return layerNormRows(4097, 3001, bf16); }, false},
      {"instance norm 8x64x512x512", [] { return instanceNorm({8, 64, 512, 512}); }, false},
      {"instance norm 3x111x317x1021", [] { return instanceNorm({3, 111, 317, 1021}); }, false},
      {"rmsnorm f16 16384x4096", [=] { return rmsNormRows(16384, 4096, f16); }, false},
      // a whole-tensor reduction that feeds the tensor again
      {"divide by sum 4096x4096", [] { return divideBySum(4096, 4096); }, false},
      {"center 8192^2", [] { return centerAll(8192); }, false},
      // two outputs, broadcasts
      {"sum and max bf16 8192x8192", [=] { return sumAndMax(8192, 8192, bf16); }, false},
      {"broadcast middle 64x512x1024", [] { return broadcastMiddle(); }, false},
      // matmul shape classes
      {"gemv f32 2048x131072", [=] { return product(2048, 131072, 1, f32); }, false},
      {"gemv bf16 2048x131072", [=] { return product(2048, 131072, 1, bf16); }, false},
      {"gevm f32 16384x16384", [=] { return product(1, 16384, 16384, f32); }, false},
      {"sum of linear 1024x8192x8192", [] { return sumOfLinear(1024, 8192, 8192); }, false},
      {"linear+gelu f32 1024x8192x8192", [=] { return linearGelu(1024, 8192, 8192, f32); }, false},
      {"matmul f32 8205x5921x2949", [=] { return product(8205, 5921, 2949, f32); }, false},
      {"matmul f32 32768x32x32768", [=] { return product(32768, 32, 32768, f32); }, false},
      {"linear f32 128x32768x32768", [=] { return linear(128, 32768, 32768, f32); }, false},
      {"linear bf16 128x32768x32768", [=] { return linear(128, 32768, 32768, bf16); }, false},
      {"linear+gelu f16 4096^3", [=] { return linearGelu(4096, 4096, 4096, f16); }, false},
      // rows of odd length (padded for TMA first), a batch of attention-sized products
      {"matmul f16 4097x4095x4093", [=] { return product(4097, 4095, 4093, f16); }, false},
      {"linear bf16 8192x1001x4096", [=] { return linear(8192, 1001, 4096, bf16); }, false},
      {"bmm f16 64x512x512x64", [=] { return batchedProduct(64, 512, 512, 64, f16); }, false},
  };
}

} // namespace minijit::bench
