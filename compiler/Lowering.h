//===- compiler/Lowering.h - a kernel as loads, math and stores -*- C++ -*-===//
// Lowers one kernel of a FusionPlan to a small SSA over index expressions:
// loads from buffers at symbolic offsets, arithmetic, reductions split into
// passes, and stores. Views disappear into the offsets. The schedule and the
// CUDA emitter work from this form alone.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/IndexExpr.h"
#include "compiler/Kernel.h"

#include <optional>
#include <string>
#include <vector>

namespace minijit {

/// A value of the kernel.
struct KValue {
  enum class Kind { Load, Literal, Compute, ReduceResult, MatmulResult };
  Kind kind = Kind::Literal;
  ValueId node = -1;  ///< the graph value it is (Load: the value loaded)
  int param = -1;     ///< Load: the kernel parameter read
  IndexExpr offset;   ///< Load: element offset into the parameter
  llvm::SmallVector<int, 3> args; ///< Compute: operand values
  int reduction = -1; ///< ReduceResult: index into LoweredKernel::reductions
  /// Reduction kernels: the value depends on the row only, not on the
  /// reduced index, so it is computed once per row.
  bool perRow = false;
  /// Reduction kernels: the number of reduction passes that must finish
  /// before it can be computed.
  int stage = 0;
};

struct KReduction {
  ValueId node;  ///< the reduce node
  OpKind op;     ///< Sum, Mean, Max, Min, Prod
  int input;     ///< the element value reduced
  int pass;      ///< the pass that accumulates it (= the input's stage)
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
  DType dtype;
  int64_t numel;
};

struct LoweredKernel {
  KernelKind kind = KernelKind::Pointwise;
  int index = 0;        ///< position in the plan
  IndexContext ctx;
  /// Pointwise: `i`, the element index over the domain. Reduction: `row` and
  /// `k`, the row and the position within the reduced elements.
  IndexExpr elem, row, k;
  /// Matmul: `b` (flat batch index), `m`, `n` (the output element) and `kk`.
  IndexExpr b, m, n, kk;
  std::optional<KMatmul> matmul;
  int64_t numel = 1;    ///< Pointwise: domain elements
  int64_t rows = 1, K = 1; ///< Reduction
  std::vector<KParam> params;
  std::vector<KValue> values;
  std::vector<KReduction> reductions;
  std::vector<KStore> stores;
  int passes = 1; ///< Reduction: passes over the row; the last one stores
  bool index64 = false; ///< some offset or extent needs 64-bit arithmetic
  int64_t flopsPerElement = 0; ///< arithmetic ops per domain element
};

/// Thrown while lowering when a value must be stored by its own kernel for
/// this kernel to work (a reduction read at another row's index, ...).
struct NeedsStore {
  ValueId node;
  std::string reason;
  ValueId root = -1; ///< the stored value whose lowering ran into it
};

/// Lowers kernel `index` of `plan`. Throws NeedsStore (fusion catches it and
/// stores the value) or CompileError for what no kernel can do yet.
LoweredKernel lowerKernel(const Graph &g, const FusionPlan &plan, int index);

} // namespace minijit

namespace minijit {

/// A C++ identifier for an IR name: '.' becomes '_', a leading digit gets a
/// 'v', and names the preamble owns (mj_*, MJ_*) or reserved ones (__*) get
/// 'v_' in front. The result may still be a keyword; see isReservedName.
std::string cudaIdentifier(llvm::StringRef irName);
/// C++ and CUDA keywords, CUDA built-ins, and the emitter's own locals.
bool isReservedName(llvm::StringRef name);

/// The most passes one reduction kernel makes over its rows (one bit each in
/// passesUsing); a longer chain of reductions is split into kernels.
constexpr int kMaxPasses = 32;

/// For each value of a reduction kernel, a bit per pass (bit p: pass p) in
/// which its element-wise form is needed; 0 for per-row values and unused
/// ones. For pointwise kernels everything used is in pass 0.
std::vector<uint32_t> passesUsing(const LoweredKernel &k);

/// True for values some store or reduction needs.
std::vector<bool> neededValues(const LoweredKernel &k);

} // namespace minijit
