//===- samples/Lecture.cpp - the lecture's graphs, built in C++ -----------===//
#include "samples/Lecture.h"

#include <string>

namespace minijit::lecture {

namespace {
Tensor geluOf(const Tensor &x) {
  return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}
} // namespace

Graph gelu(int64_t n, DType dtype) {
  Graph g("gelu");
  Tensor x = g.input("x", dtype, {n});
  g.output(geluOf(x), "y");
  return g;
}

Graph softmax(int64_t rows, int64_t cols, DType dtype) {
  Graph g("softmax");
  Tensor x = g.input("x", dtype, {rows, cols});
  Tensor m = max(x, {1}, /*keepdim=*/true);
  Tensor e = exp(x - m);
  g.output(e / sum(e, {1}, /*keepdim=*/true), "y");
  return g;
}

Graph layernorm(int64_t rows, int64_t cols, DType dtype) {
  Graph g("layernorm");
  Tensor x = g.input("x", dtype, {rows, cols});
  Tensor w = g.input("w", dtype, {cols});
  Tensor b = g.input("b", dtype, {cols});
  Tensor mu = mean(x, {1}, true);
  Tensor d = x - mu;
  Tensor var = mean(d * d, {1}, true);
  g.output(d * rsqrt(var + 1e-5) * w + b, "y");
  return g;
}

Graph rmsnorm(int64_t rows, int64_t cols, DType dtype) {
  Graph g("rmsnorm");
  Tensor x = g.input("x", dtype, {rows, cols});
  Tensor w = g.input("w", dtype, {cols});
  g.output(x * rsqrt(mean(x * x, {1}, true) + 1e-6) * w, "y");
  return g;
}

Graph mlp(int64_t dim, int layers, int64_t batch, DType dtype) {
  Graph g("mlp");
  Tensor x = g.input("x", dtype, {batch, dim});
  for (int i = 0; i < layers; ++i) {
    Tensor w = g.input("w" + std::to_string(i), dtype, {dim, dim});
    x = geluOf(matmul(x, w));
  }
  g.output(x, "y");
  return g;
}

} // namespace minijit::lecture
