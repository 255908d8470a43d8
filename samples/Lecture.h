//===- samples/Lecture.h - the lecture's graphs, built in C++ --*- C++ -*-===//
// GeLU, softmax, layernorm, rmsnorm and the MLP, written with the builder API
// the way the lecture writes them in PyTorch. Used by the samples and the
// benchmark suite.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Builder.h"

namespace minijit::lecture {

/// y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), elementwise over [n].
Graph gelu(int64_t n, DType dtype = DType::F32);
/// Softmax over the last axis of [rows, cols]: exp(x - max) / sum. `rows`
/// may be a named size (Dim("B")): one graph for every batch size.
Graph softmax(Dim rows, int64_t cols, DType dtype = DType::F32);
/// Layer normalization over the last axis of [rows, cols], with weight and
/// bias; `rows` may be a named size.
Graph layernorm(Dim rows, int64_t cols, DType dtype = DType::F32);
/// RMS normalization over the last axis of [rows, cols], with a weight.
Graph rmsnorm(int64_t rows, int64_t cols, DType dtype = DType::F32);
/// Rotary position embedding of x: [b, s, h, d] with cos and sin tables
/// [s, d] (each angle twice, as in Llama): y = x * cos + rotate_half(x) * sin,
/// rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2]). One kernel fused.
Graph rope(int64_t b, int64_t s, int64_t h, int64_t d, DType dtype = DType::F32);
/// An embedding lookup and its layer norm: table [vocab, dim], ids [tokens]
/// (i32, clamped into the table), weight and bias [dim]. One kernel fused.
Graph embeddingLayerNorm(int64_t tokens, int64_t vocab, int64_t dim, DType dtype = DType::F32);
/// Cross-entropy forward per row: logsumexp(logits[n]) - logits[n, labels[n]],
/// logits [rows, vocab], labels [rows] (i32). One kernel fused.
Graph crossEntropy(int64_t rows, int64_t vocab, DType dtype = DType::F32);
/// A greedy decoding step: the i32 token argmax(softmax(logits)) per row of
/// [rows, vocab]. One kernel fused.
Graph greedyDecode(int64_t rows, int64_t vocab, DType dtype = DType::F32);
/// The lecture's MLP forward: `layers` times (x @ W_i, then GeLU), x: [batch,
/// dim]; `batch` may be a named size.
Graph mlp(int64_t dim, int layers, Dim batch, DType dtype = DType::F32);

/// What a training step does with the gradients.
enum class TrainStep {
  Gradients,  ///< returns the loss and every parameter's gradient
  Accumulate, ///< adds each gradient into an accumulator input, in place (loss.backward())
  Sgd,        ///< updates each parameter in place: p - lr * grad
};

/// The lecture's run_mlp step: `layers` times nn.Linear(dim, dim) (x @ W.T + b,
/// W stored [out, in]) then F.gelu (the erf form), loss = mean of the output,
/// and the gradient of the loss with respect to every W_i and b_i. Inputs: x,
/// then w0, b0, w1, b1, ...; for Accumulate also gw0, gb0, ... (the
/// accumulators). Outputs: the loss, then per parameter its gradient
/// (Gradients), its accumulator updated in place (Accumulate) or the
/// parameter updated in place (Sgd, with learning rate `lr`).
Graph mlpTrain(int64_t dim, int layers, int64_t batch, TrainStep step, DType dtype = DType::F32,
               double lr = 0.01);

} // namespace minijit::lecture
