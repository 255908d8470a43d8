//===- compiler/lower/Lowering.h - a kernel as loads, math and stores -*- C++ -*-===//
// Lowers one kernel of a FusionPlan to a small SSA over index expressions:
// loads from buffers at symbolic offsets, arithmetic, reductions split into
// passes, and stores. Views disappear into the offsets. The schedule and the
// CUDA emitter work from this form alone: it carries the names, dtypes, ops and
// printed IR they show, so neither reads the Graph or the FusionPlan.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/IndexExpr.h"
#include "compiler/fusion/Kernel.h"
#include "compiler/fusion/FusionReason.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace minijit {

/// A value of the kernel.
struct KValue {
  /// Index: `offset` as a value (an iota). InRange: true where every one of
  /// `tests` holds (a pad's or concat's predicate). Compute of a pad or a
  /// concat: args are the predicate, the operand's value and the value
  /// elsewhere.
  enum class Kind { Load, Literal, Compute, ReduceResult, MatmulResult, Index, InRange };
  Kind kind = Kind::Literal;
  ValueId node = -1;  ///< the graph value it is (Load: the value loaded)
  OpKind op = OpKind::Constant; ///< the node's op
  DType dtype = DType::F32;     ///< the node's dtype
  std::string name;   ///< the node's IR name
  std::string text;   ///< the node printed as IR (Compute, results), for comments
  double literal = 0; ///< Literal: the constant's value
  int param = -1;     ///< Load: the kernel parameter read
  IndexExpr offset;   ///< Load: element offset into the parameter; Index: the value
  /// InRange: lo <= e <= hi for each (e, lo, hi).
  struct Test {
    IndexExpr e;
    int64_t lo, hi;
  };
  std::vector<Test> tests;
  /// Compute: operand values. Load: the index values (a gather's) its
  /// offset reads, which must be known before it.
  llvm::SmallVector<int, 3> args;
  int reduction = -1; ///< ReduceResult: index into LoweredKernel::reductions
  /// Reduction kernels: the value depends on the row only, not on the
  /// reduced index, so it is computed once per row.
  bool perRow = false;
  /// Reduction kernels: the number of reduction passes that must finish
  /// before it can be computed.
  int stage = 0;
};

/// A reduction, or a scan (Cumsum, Cumprod) of a Scan kernel, whose result
/// is per element.
struct KReduction {
  ValueId node;  ///< the reduce node
  std::string name; ///< its IR name
  DType dtype;   ///< its result's dtype
  OpKind op;     ///< Sum, Mean, Max, Min, Prod, Argmax, Argmin; Cumsum, Cumprod
  int input;     ///< the element value reduced
  int pass;      ///< the pass that accumulates it (= the input's stage)
  /// A Sum of exp(input - max), where the max is reduction `onlineMax` of
  /// `input` in the same pass (online softmax, sumExpsOnline): -1 for a
  /// plain reduction of `input`.
  int onlineMax = -1;
  /// A Sum or Mean of (input - mean)^2, where the mean is reduction
  /// `welfordMean` (a Mean of `input`) in the same pass (sumSquaresOnline):
  /// accumulated by Welford's update, each thread's count, mean and sum of
  /// squared deviations combined by Chan's formula; -1 for a plain reduction.
  int welfordMean = -1;
  /// Cumsum, Cumprod: from the row's last element to its first (every scan
  /// of a kernel goes the same way).
  bool reverse = false;
};

/// The matmul of a Matmul kernel: C[b, m, n] = sum over kk of A[b, m, kk] * B[b, kk, n],
/// its operands read at  base(b) + row * rowStride + col * colStride.
struct KMatmul {
  ValueId node;
  DType dtype;           ///< of the operands (f32, f16, bf16); accumulation is f32
  int aParam, bParam;
  IndexExpr aBase, bBase; ///< offsets of the batch's first element, over `b`
  int64_t aStrideM, aStrideK, bStrideK, bStrideN;
  int64_t M, N, K, batch;
  /// f32 operands may be read as TF32 on tensor cores
  /// (CompileOptions::allowTf32); the schedule decides where it can.
  bool tf32 = false;
  /// The product multiplies the parts of an f32 product split into three
  /// TF32 products (CompileOptions::tf32x3): the Hopper schedule adds each
  /// k-slice's sum on the CUDA cores (MatmulWgmmaSchedule::promote).
  bool threeParts = false;
  /// An exact f32 product that three TF32 products may stand for
  /// (CompileOptions::tf32x3, not the override tf32x3=0): where its
  /// operands were not split into parts, the Hopper schedule may split them
  /// in the kernel (MatmulWgmmaSchedule::splitInKernel).
  bool splitAllowed = false;
};

/// The attention of an Attention kernel, O = softmax(g(S)) @ V: S is the
/// kernel's matmul (LoweredKernel::matmul, its m the query and n the key),
/// the values compute g(S) at (b, m, n) as a matmul's epilogue would, and
/// the softmax and the product with V are the template's. V and O are read
/// and written at base(b) + key or query * strideRow + d * strideD, d over
/// the value dim (the variable `dd`).
/// A matrix per batch read or written by an attention kernel: element
/// (row, col) of batch b at base(b) + row * strideRow + col * strideCol.
struct KRows {
  int param = -1; ///< -1: the kernel has none
  IndexExpr base;
  int64_t strideRow = 0, strideCol = 0;
};

/// A step of the score work's derivative: a scale by a literal (mul or
/// div), or tanh's (times 1 - y * y, y the value `value` of the kernel).
struct KScaleStep {
  OpKind op;
  double literal = 0;
  int value = -1; ///< Tanh: the kernel's value of the tanh
};

struct KAttention {
  ValueId node;        ///< O, the product with V
  int score = -1;      ///< the value of g(S), what the softmax reads
  int vParam = -1, outParam = -1;
  IndexExpr dd;        ///< the value dim's variable
  IndexExpr vBase, outBase;
  int64_t vStrideN = 0, vStrideD = 0, outStrideM = 0, outStrideD = 0;
  int64_t valueDim = 0;
  DType vDtype = DType::F32; ///< V's (and the probabilities') dtype
  /// What the score work holds, for the description (compiler/fusion/Attention.h).
  bool scale = false, mask = false, bias = false, softcap = false;
  /// The mask is causal (AttentionMatch::causal): keys past a query tile's
  /// last row are skipped.
  bool causal = false;
  /// Keys this many or more before a query are masked (AttentionMatch::window):
  /// the tiles before a query tile's first row's window are skipped. 0: none.
  int64_t window = 0;
  int64_t kBatches = 1, vBatches = 1; ///< fewer than the batches: heads broadcast
  /// The rows' max and sum of the softmax (one column): written by the
  /// forward when a fused backward reads them, read by the backward.
  KRows max, sum;
  // The backward kernels (AttentionBackwardKV, AttentionBackwardQ).
  KRows dOut, out;    ///< dO and O at (query, dd), read
  KRows dq, dk, dv;   ///< written: dQ at (query, kk), dK at (key, kk), dV at (key, dd)
  /// The score work's derivative applied to dS, from the logits to the
  /// scores (a mask's is not: its probabilities are 0; a bias's is 1).
  std::vector<KScaleStep> scaleSteps;
  /// A scale the matmul rewrites moved after the products dQ and dK: applied
  /// as they are stored.
  std::optional<KScaleStep> productScale;
};

struct KStore {
  int param;
  IndexExpr offset;
  int value;
  bool perRow = false; ///< stored once per row
};

/// A kernel parameter: a buffer read or written.
struct KParam {
  ValueId node;     ///< the graph value held by the buffer
  bool written = false;
  std::string name; ///< the C++ parameter name
  std::string irName; ///< the graph value's name
  DType dtype;
  int64_t numel;
};

/// An op the kernel holds, for its header comment and its name.
struct KHeld {
  OpKind op;
  std::string text; ///< the node printed as IR
};

/// A kernel whose outer extent (a pointwise kernel's elements, a row
/// kernel's rows, a matmul's m) is a product of named dimensions: the
/// kernel computes the extent from those sizes, passed as parameters, so one
/// compiled kernel serves every binding that gives the same kernel text
/// (docs/GUIDE.md, "Named dimensions").
struct KSymbolic {
  DimExpr extent;                 ///< e.g. 1024*B
  std::vector<std::string> names; ///< its names, distinct and sorted: the size parameters
  std::vector<int64_t> values;    ///< their bound values, in the same order
};

struct LoweredKernel {
  KernelKind kind = KernelKind::Pointwise;
  int index = 0;        ///< position in the plan
  /// The plan's domain and reduced axes, and the dtype of the first stored
  /// value, for the header comment.
  Shape domain;
  DimVector reducedAxes;
  DType dtype = DType::F32;
  std::vector<KHeld> held; ///< the ops it computes (no inputs), in graph order
  IndexContext ctx;
  /// Pointwise: `i`, the element index over the domain. Reduction: `row` and
  /// `k`, the row and the position within the reduced elements.
  IndexExpr elem, row, k;
  /// Matmul: `b` (flat batch index), `m`, `n` (the output element) and `kk`.
  IndexExpr b, m, n, kk;
  std::optional<KMatmul> matmul;
  std::optional<KAttention> attention; ///< Attention kernels
  int64_t numel = 1;    ///< Pointwise: domain elements
  int64_t rows = 1, K = 1; ///< Reduction
  std::vector<KParam> params;
  std::vector<KValue> values;
  std::vector<KReduction> reductions;
  std::vector<KStore> stores;
  int passes = 1; ///< Reduction: passes over the row; the last one stores
  bool index64 = false; ///< some offset or extent needs 64-bit arithmetic
  /// Some load's offset reads a value computed per element (a gather's index
  /// that is not per row): element work runs one element per thread in value
  /// order, loads among the arithmetic.
  bool elementIndexed = false;
  int64_t flopsPerElement = 0; ///< arithmetic ops per domain element
  /// Set when the outer extent depends on named dimensions.
  std::optional<KSymbolic> symbolic;
  /// Reads LoweringOptions::misreadBroadcasts changed (a test hook).
  unsigned misreadReads = 0;
};

/// The lowered kernel, or the value that must be stored first.
using LoweringResult = std::variant<LoweredKernel, StoreRequest>;

/// The outer extent of a kernel (what KSymbolic::extent counts): a
/// pointwise kernel's elements, a row kernel's rows, a matmul's m.
int64_t outerExtent(const LoweredKernel &k);

/// The largest extent of the bucket of `extent` (`value` bound), an outer
/// extent with named sizes (LoweredKernel::symbolic): the product of its
/// names rounded up to a power of two, at least 2 (a named size of 1 is not
/// folded away), times its number. A symbolic kernel's index arithmetic is
/// simplified, and its schedule chosen, for that extent, so every size of a
/// bucket gets one kernel text and one compile (docs/GUIDE.md, "Named
/// dimensions"). A number is its own bucket.
int64_t bucketExtent(const DimExpr &extent, int64_t value);
/// The bucket in words: "B in 2049..4096" (the names' product; "B in 1..2"
/// for the first).
std::string bucketText(const DimExpr &extent, int64_t value);

/// How lowering deviates from the graph's meaning: only for testing the tests.
struct LoweringOptions {
  /// Broadcast operands read one element along (compiler/Mutation.h's
  /// BroadcastStride, set by the pipeline when that mutation is active).
  bool misreadBroadcasts = false;
};

/// Lowers kernel `index` of `plan`. Fusion stores what a StoreRequest names
/// and forms the kernels again.
LoweringResult lowerKernel(const Graph &g, const FusionPlan &plan, int index,
                           const LoweringOptions &options = {});

/// lowerKernel for an Attention kernel (compiler/lower/AttentionLowering.cpp):
/// the scores and their work lowered as a matmul kernel with that epilogue,
/// then V and O described beside them (LoweredKernel::attention).
LoweringResult lowerAttention(const Graph &g, const FusionPlan &plan, int index,
                              const LoweringOptions &options);

} // namespace minijit

namespace minijit {

/// The most passes one reduction kernel makes over its rows (one bit each in
/// passesUsing); a longer chain of reductions is split into kernels.
constexpr int kMaxPasses = 32;

/// Finds the sums of exp(x - max(x)) of a row kernel whose max is over the
/// same x and rows one pass earlier, and accumulates each in the pass of its
/// max with a running rescale (online softmax): a softmax reads its rows
/// once before the stores instead of twice, a logsumexp once in all. Returns
/// the rewritten kernel, or nullopt where no sum qualifies.
std::optional<LoweredKernel> sumExpsOnline(const LoweredKernel &k);

/// Finds the sums (or means) of (x - mean(x))^2 of a row kernel whose mean is
/// over the same x and rows one pass earlier, and accumulates each in the
/// pass of its mean by Welford's update: a variance or a norm reads its rows
/// once before the stores instead of twice. Returns the rewritten kernel, or
/// nullopt where none qualifies.
std::optional<LoweredKernel> sumSquaresOnline(const LoweredKernel &k);

/// sumExpsOnline, then sumSquaresOnline: the kernel with every reduction
/// that can run a pass earlier so rewritten, or nullopt where none can.
std::optional<LoweredKernel> reduceOnline(const LoweredKernel &k);

/// Some reduction of the kernel is kept online (onlineMax or welfordMean).
bool hasOnlineReduction(const LoweredKernel &k);

/// The passes a reduction kernel makes over its rows: one per reduction
/// stage, the last one also storing what is known only after it.
int passesOf(const LoweredKernel &k);

/// For each value of a reduction kernel, a bit per pass (bit p: pass p) in
/// which its element-wise form is needed; 0 for per-row values and unused
/// ones. For pointwise kernels everything used is in pass 0.
std::vector<uint32_t> passesUsing(const LoweredKernel &k);

/// True for values some store or reduction needs.
std::vector<bool> neededValues(const LoweredKernel &k);

/// A value a row kernel that keeps its loads in registers between passes
/// (RowSchedule::cached) computes once, in `pass`, and keeps in the
/// registers of `load`, which the passes after it no longer read: there
/// `value` is read back, not computed again (softmax's exp(x - max), which
/// the sum's pass computes and the store's pass needs).
struct KStash {
  int value, load, pass;
};

/// The stashes of a reduction kernel whose loads used in several passes stay
/// in registers: at most one per f32 load, of the latest f32 element value
/// computed from it such that the passes after the value's first one need
/// the load only through it. None where a load would then be read in one
/// pass only (it would not be kept).
std::vector<KStash> cachedStashes(const LoweredKernel &k);

/// passesUsing, with each stash's value read (not computed from its
/// operands) in the passes after its own.
std::vector<uint32_t> passesUsing(const LoweredKernel &k, const std::vector<KStash> &stashes);

} // namespace minijit
