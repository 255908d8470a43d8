//===- samples/gpt2_block.cpp - a GPT-2 block, forward and a training step -===//
// minGPT's Block written with the builder API as samples/gpt2_block.mj and
// samples/gpt2_block_train.mj write it in the text format: layer norm, the
// QKV product, causal self-attention over the heads as plain ops (the
// scores, a mask from iota positions, a softmax, the product with V), the
// output projection and residual, layer norm, an MLP with GeLU (tanh) and
// the second residual. The training step weighs the output by dy and takes
// the gradients of x and of every weight and bias. Fused, the attention is
// one kernel of the attention template (and two for its backward); the
// sample prints the kernels, then on a GPU runs each graph fused and one
// kernel per op, checks both against the CPU reference and prints kernels,
// bytes and times.
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "tools/Harness.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>

using namespace minijit;

namespace {

/// The block's sizes: x is [batch, seq, embd], `heads` heads of embd / heads.
struct BlockSizes {
  int64_t batch = 2, seq = 256, embd = 256, heads = 4;
  int64_t headDim() const { return embd / heads; }
};

/// nn.Linear on [B, T, in] with weight [out, in] and bias [out]: the leading
/// axes merged, x @ W^T + b, the axes split again.
Tensor linear(const Tensor &x, const Tensor &w, const Tensor &b, const BlockSizes &s) {
  int64_t in = w.shape()[1], out = w.shape()[0];
  Tensor y = matmul(x.reshape({s.batch * s.seq, in}), w.permute({1, 0})) + b;
  return y.reshape({s.batch, s.seq, out});
}

/// Causal self-attention on q, k, v [B, H, T, D], as samples/attention.mj.
Tensor causalAttention(Graph &g, const Tensor &q, const Tensor &k, const Tensor &v,
                       const BlockSizes &s) {
  Tensor scores = matmul(q, k.permute({0, 1, 3, 2})) * (1.0 / std::sqrt(double(s.headDim())));
  Tensor qpos = iota(g, {s.seq, s.seq}, 0), kpos = iota(g, {s.seq, s.seq}, 1);
  Tensor masked = where(le(kpos, qpos), scores, -INFINITY);
  Tensor e = exp(masked - max(masked, {3}, /*keepdim=*/true));
  Tensor p = e / sum(e, {3}, /*keepdim=*/true);
  return matmul(p, v).named("o");
}

/// The block; with `train`, also the loss sum(y * dy) and the gradients of
/// x and of each parameter (in the order of the inputs).
Graph gpt2Block(const BlockSizes &s, bool train) {
  Graph g(train ? "gpt2_block_train" : "gpt2_block");
  int64_t c = s.embd;
  Tensor x = g.input("x", DType::F32, {s.batch, s.seq, c});
  auto param = [&](const char *name, Shape shape) { return g.input(name, DType::F32, shape); };
  Tensor ln1w = param("ln1_w", {c}), ln1b = param("ln1_b", {c});
  Tensor attnw = param("attn_w", {3 * c, c}), attnb = param("attn_b", {3 * c});
  Tensor projw = param("proj_w", {c, c}), projb = param("proj_b", {c});
  Tensor ln2w = param("ln2_w", {c}), ln2b = param("ln2_b", {c});
  Tensor fcw = param("fc_w", {4 * c, c}), fcb = param("fc_b", {4 * c});
  Tensor fc2w = param("fc2_w", {c, 4 * c}), fc2b = param("fc2_b", {c});
  // q, k and v of every head from one product: [B, T, 3, H, D] to [3, B, H, T, D].
  Tensor qkv = linear(layerNorm(x, ln1w, ln1b), attnw, attnb, s)
                   .reshape({s.batch, s.seq, 3, s.heads, s.headDim()})
                   .permute({2, 0, 3, 1, 4});
  auto head = [&](int64_t i) {
    return slice(qkv, 0, i, i + 1).reshape({s.batch, s.heads, s.seq, s.headDim()});
  };
  Tensor o = causalAttention(g, head(0), head(1), head(2), s);
  Tensor merged = o.permute({0, 2, 1, 3}).reshape({s.batch, s.seq, c});
  Tensor x1 = x + linear(merged, projw, projb, s);
  Tensor hidden = gelu(linear(layerNorm(x1, ln2w, ln2b), fcw, fcb, s), GeluForm::Tanh);
  Tensor y = (x1 + linear(hidden, fc2w, fc2b, s)).named("y");
  g.output(y);
  if (!train)
    return g;
  Tensor dy = g.input("dy", DType::F32, {s.batch, s.seq, c});
  Tensor loss = sum(y * dy).named("loss");
  std::vector<Tensor> wrt{x,     ln1w, ln1b, attnw, attnb, projw, projb,
                          ln2w,  ln2b, fcw,  fcb,   fc2w,  fc2b};
  std::vector<Tensor> grads = grad(loss, wrt);
  for (size_t i = 0; i < wrt.size(); ++i)
    g.output(grads[i], "d" + wrt[i].node().name);
  return g;
}

/// Random inputs at the scales a trained block sees: x and dy normal, the
/// products' weights normal over sqrt(fan-in) (nn.Linear's scale), the
/// layer norms' weights near 1 and every bias small.
std::vector<HostTensor> blockInputs(const Graph &g, uint64_t seed) {
  std::vector<HostTensor> ins = randomInputs(g, seed);
  for (size_t i = 0; i < ins.size(); ++i) {
    const Node &n = g.node(g.inputs()[i]);
    bool matrix = n.shape.rank() == 2, lnWeight = n.name == "ln1_w" || n.name == "ln2_w";
    double scale = matrix ? 1.0 / std::sqrt(double(n.shape[1])) : n.shape.rank() == 1 ? 0.1 : 1.0;
    for (int64_t e = 0; e < ins[i].numel(); ++e)
      ins[i].set(e, ins[i].get(e) * scale + (lnWeight ? 1.0 : 0.0));
  }
  return ins;
}

/// The kernels of a compiled graph, one line each with the bytes they move;
/// the attention kernels with their schedule.
void printKernels(const CompiledGraph &c) {
  for (const KernelSummary &k : c.kernelSummaries()) {
    llvm::outs() << llvm::formatv("  {0,-28} {1,10} bytes", k.name, k.bytesRead + k.bytesWritten);
    if (k.name.rfind("attn", 0) == 0)
      llvm::outs() << "  " << k.schedule;
    llvm::outs() << "\n";
  }
}

/// Runs `g` fused and one kernel per op on the GPU, each checked against the
/// CPU reference, and prints kernels, bytes and times. 0, or 1 on a mismatch.
int runBoth(const Graph &g, const Device &gpu) {
  std::vector<HostTensor> ins = blockInputs(g, 7);
  int status = 0;
  llvm::outs() << llvm::formatv("{0,-20} {1,8} {2,14} {3,10}  {4}\n", "", "kernels", "bytes moved",
                                "time (us)", "vs reference");
  for (bool fused : {false, true}) {
    CheckedRun r = runAndCheck(g, gpu, fused, 7, &ins);
    size_t bad = llvm::count_if(r.compare, [](const CompareResult &c) { return !c.ok; });
    std::vector<DeviceTensor> din;
    for (const HostTensor &h : ins)
      din.push_back(DeviceTensor::fromHost(gpu, h));
    std::vector<DeviceTensor> dout = r.executable->allocateOutputs();
    RunTiming t = timeExecutable(*r.executable, din, dout, 100, 10);
    std::string check = "ok";
    if (bad)
      for (const CompareResult &c : r.compare)
        if (!c.ok)
          check = std::to_string(bad) + " of " + std::to_string(r.compare.size()) +
                  " outputs MISMATCH: " + c.summary;
    llvm::outs() << llvm::formatv("{0,-20} {1,8} {2,14} {3,10:f1}  {4}\n",
                                  fused ? "fused (minijit)" : "one kernel per op",
                                  r.executable->program().kernels.size(),
                                  r.executable->program().bytesMoved(), t.medianUs, check);
    status |= bad ? 1 : 0;
  }
  return status;
}

int run(const BlockSizes &s, bool train, std::optional<Device> &gpu) {
  Graph g = gpt2Block(s, train);
  llvm::outs() << llvm::formatv("--- GPT-2 block{0}: x [{1}, {2}, {3}] f32, {4} heads of {5} ---\n",
                                train ? " training step (forward, sum(y * dy), 13 gradients)" : "",
                                s.batch, s.seq, s.embd, s.heads, s.headDim());
  CompileOptions opt;
  opt.compileKernels = gpu.has_value();
  if (gpu)
    opt.device = gpu->properties();
  CompiledGraph fused = compileGraph(g, opt);
  opt.fusion = false;
  CompiledGraph eager = compileGraph(g, opt);
  llvm::outs() << "fused: " << fused.numKernels() << " kernels (one kernel per op: "
               << eager.numKernels() << "):\n";
  printKernels(fused);
  if (!gpu) {
    llvm::outs() << "No GPU here: nothing to run.\n\n";
    return 0;
  }
  int status = runBoth(g, *gpu);
  llvm::outs() << "\n";
  return status;
}

} // namespace

int main() {
  try {
    std::string why;
    std::optional<Device> gpu;
    if (Device::available(&why))
      gpu = Device::open();
    else
      llvm::outs() << "(no GPU: " << why << ")\n";
    BlockSizes s;
    int status = run(s, /*train=*/false, gpu);
    status |= run(s, /*train=*/true, gpu);
    return status;
  } catch (const Error &e) {
    llvm::errs() << "error: " << e.what() << "\n";
    return 1;
  }
}
