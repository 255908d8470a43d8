//===- samples/Lecture.cpp - the lecture's graphs, built in C++ -----------===//
#include "samples/Lecture.h"

#include <string>
#include <vector>

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

Graph softmax(Dim rows, int64_t cols, DType dtype) {
  Graph g("softmax");
  Tensor x = g.input("x", dtype, {rows, cols});
  Tensor m = max(x, {1}, /*keepdim=*/true).named("m");
  Tensor e = exp(x - m).named("e");
  g.output(e / sum(e, {1}, /*keepdim=*/true).named("s"), "y");
  return g;
}

Graph layernorm(Dim rows, int64_t cols, DType dtype) {
  Graph g("layernorm");
  Tensor x = g.input("x", dtype, {rows, cols});
  Tensor w = g.input("w", dtype, {cols});
  Tensor b = g.input("b", dtype, {cols});
  Tensor mu = mean(x, {1}, true).named("mu");
  Tensor d = (x - mu).named("d");
  Tensor var = mean(d * d, {1}, true).named("var");
  g.output(d * rsqrt(var + 1e-5).named("rstd") * w + b, "y");
  return g;
}

Graph rmsnorm(int64_t rows, int64_t cols, DType dtype) {
  Graph g("rmsnorm");
  Tensor x = g.input("x", dtype, {rows, cols});
  Tensor w = g.input("w", dtype, {cols});
  Tensor ms = mean(x * x, {1}, true).named("ms");
  g.output(x * rsqrt(ms + 1e-6).named("r") * w, "y");
  return g;
}

Graph rope(int64_t b, int64_t s, int64_t h, int64_t d, DType dtype) {
  Graph g("rope");
  Tensor x = g.input("x", dtype, {b, s, h, d});
  // [s, 1, d]: one angle per position and feature, broadcast over b and h.
  Tensor c = g.input("cos", dtype, {s, d}).reshape({s, 1, d});
  Tensor sn = g.input("sin", dtype, {s, d}).reshape({s, 1, d});
  Tensor rot = concat({-slice(x, 3, d / 2, d), slice(x, 3, 0, d / 2)}, 3).named("rot");
  g.output(x * c + rot * sn, "y");
  return g;
}

Graph embeddingLayerNorm(int64_t tokens, int64_t vocab, int64_t dim, DType dtype) {
  Graph g("embedding_ln");
  Tensor table = g.input("table", dtype, {vocab, dim});
  Tensor ids = g.input("ids", DType::I32, {tokens});
  Tensor w = g.input("w", dtype, {dim});
  Tensor b = g.input("b", dtype, {dim});
  g.output(layerNorm(take(table, ids, 0).named("e"), w, b), "y");
  return g;
}

Graph crossEntropy(int64_t rows, int64_t vocab, DType dtype) {
  Graph g("cross_entropy");
  Tensor logits = g.input("logits", dtype, {rows, vocab});
  Tensor labels = g.input("labels", DType::I32, {rows});
  Tensor m = max(logits, {1}, true).named("m");
  Tensor lse = (log(sum(exp(logits - m), {1}, true)) + m).named("lse");
  Tensor picked = takeAlongAxis(logits, labels.reshape({rows, 1}), 1).named("picked");
  g.output((lse - picked).reshape({rows}), "loss");
  return g;
}

Graph greedyDecode(int64_t rows, int64_t vocab, DType dtype) {
  Graph g("greedy_decode");
  Tensor logits = g.input("logits", dtype, {rows, vocab});
  g.output(argmax(softmax(logits, 1).named("p"), 1), "token");
  return g;
}

Graph mlp(int64_t dim, int layers, Dim batch, DType dtype) {
  Graph g("mlp");
  Tensor x = g.input("x", dtype, {batch, dim});
  for (int i = 0; i < layers; ++i) {
    Tensor w = g.input("w" + std::to_string(i), dtype, {dim, dim});
    x = geluOf(matmul(x, w));
  }
  g.output(x, "y");
  return g;
}

Graph mlpTrain(int64_t dim, int layers, int64_t batch, TrainStep step, DType dtype, double lr) {
  Graph g(step == TrainStep::Gradients    ? "mlp_grads"
          : step == TrainStep::Accumulate ? "mlp_train"
                                          : "mlp_sgd");
  Tensor x = g.input("x", dtype, {batch, dim});
  std::vector<Tensor> params;
  for (int i = 0; i < layers; ++i) {
    Tensor w = g.input("w" + std::to_string(i), dtype, {dim, dim});
    Tensor b = g.input("b" + std::to_string(i), dtype, {dim});
    params.push_back(w);
    params.push_back(b);
    Tensor h = (matmul(x, w.permute({1, 0})) + b).named("h" + std::to_string(i));
    x = (0.5 * h * (1.0 + erf(h * 0.7071067811865476))).named("a" + std::to_string(i));
  }
  Tensor loss = mean(x).named("loss");
  g.output(loss);
  std::vector<Tensor> accumulators;
  if (step == TrainStep::Accumulate)
    for (const Tensor &p : params)
      accumulators.push_back(g.input("g" + p.node().name, dtype, p.shape()));
  std::vector<Tensor> grads = grad(loss, params);
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string &name = params[i].node().name;
    switch (step) {
    case TrainStep::Gradients: g.output(grads[i], "d" + name); break;
    case TrainStep::Accumulate:
      g.update(accumulators[i], (accumulators[i] + grads[i]).named("g" + name + ".next"));
      break;
    case TrainStep::Sgd: g.update(params[i], (params[i] - lr * grads[i]).named(name + ".next")); break;
    }
  }
  return g;
}

} // namespace minijit::lecture
