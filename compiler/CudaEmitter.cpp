//===- compiler/CudaEmitter.cpp - readable CUDA C++ from a kernel ---------===//
// Three templates share one "element work" emitter: loads (16-byte vectors,
// gathers, or one value for all lanes), the arithmetic of one element per
// lane, accumulation into the pass's reductions, and stores.
//===----------------------------------------------------------------------===//
#include "compiler/CudaEmitter.h"

#include "ir/Printer.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace minijit {

const std::string &cudaPreamble() {
  static const std::string text = R"(// ---- minijit preamble: 16-bit storage, NaN-aware min/max, vector access, reductions ----
#define MJ_INF __int_as_float(0x7f800000)
#define MJ_NAN __int_as_float(0x7fffffff)
__device__ __forceinline__ float mj_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short mj_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float mj_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ unsigned short mj_f2bf(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float mj_round_f16(float f) { return mj_h2f(mj_f2h(f)); }
__device__ __forceinline__ float mj_round_bf16(float f) { return mj_bf2f(mj_f2bf(f)); }
__device__ __forceinline__ float mj_max(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ float mj_min(float a, float b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ float mj_relu(float a) { return (a > 0.0f || a != a) ? a : 0.0f; }
__device__ __forceinline__ float mj_tanh_fast(float a) { float r; asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }
__device__ __forceinline__ int mj_iadd(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ int mj_isub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
__device__ __forceinline__ int mj_imul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ int mj_idiv(int a, int b) { return b == 0 ? 0 : (b == -1 ? (int)(0u - (unsigned)a) : a / b); }
__device__ __forceinline__ int mj_ineg(int a) { return (int)(0u - (unsigned)a); }

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
// ---- matmul helpers (sm_80+): async copies, tensor-core fragments ----
__device__ __forceinline__ void mj_cp_async16(void *smem, const void *gmem, bool ok) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(gmem), "r"(ok ? 16 : 0));
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
// ---- end of preamble ----
)";
  return text;
}

namespace {

std::string floatLiteral(double v) {
  if (std::isnan(v))
    return "MJ_NAN";
  if (std::isinf(v))
    return v > 0 ? "MJ_INF" : "(-MJ_INF)";
  std::string s = literalText(v, DType::F32);
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

std::string intLiteral(int64_t v) {
  if (v == -2147483648LL)
    return "(-2147483647 - 1)";
  return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
}

std::string literalOf(double v, DType t) {
  switch (t) {
  case DType::F32:
  case DType::F16:
  case DType::BF16: return floatLiteral(v);
  case DType::I32: return intLiteral(static_cast<int64_t>(v));
  case DType::Bool: return v != 0 ? "true" : "false";
  }
  llvm_unreachable("bad dtype");
}

std::string regType(DType t) {
  switch (t) {
  case DType::F32:
  case DType::F16:
  case DType::BF16: return "float";
  case DType::I32: return "int";
  case DType::Bool: return "bool";
  }
  llvm_unreachable("bad dtype");
}

std::string loadConv(DType t, const std::string &raw) {
  switch (t) {
  case DType::F32:
  case DType::I32: return raw;
  case DType::F16: return "mj_h2f(" + raw + ")";
  case DType::BF16: return "mj_bf2f(" + raw + ")";
  case DType::Bool: return "(" + raw + " != 0)";
  }
  llvm_unreachable("bad dtype");
}

std::string storeConv(DType t, const std::string &v) {
  switch (t) {
  case DType::F32:
  case DType::I32: return v;
  case DType::F16: return "mj_f2h(" + v + ")";
  case DType::BF16: return "mj_f2bf(" + v + ")";
  case DType::Bool: return "(unsigned char)(" + v + ")";
  }
  llvm_unreachable("bad dtype");
}

struct ReduceText {
  std::string functor, identity;
};

ReduceText reduceText(OpKind op, bool isInt) {
  switch (op) {
  case OpKind::Sum:
  case OpKind::Mean: return {"MjSum", isInt ? "0" : "0.0f"};
  case OpKind::Prod: return {"MjProd", isInt ? "1" : "1.0f"};
  case OpKind::Max: return {"MjMax", isInt ? "(-2147483647 - 1)" : "(-MJ_INF)"};
  case OpKind::Min: return {"MjMin", isInt ? "2147483647" : "MJ_INF"};
  default: break;
  }
  llvm_unreachable("not a reduction");
}

/// How element work addresses the lanes of one thread's vector.
struct LaneCtx {
  std::string var;      ///< the vector (or element) index: v, kv, k, e
  IndexExpr x;          ///< the element index it splits: LoweredKernel::elem or ::k
  int64_t extent;       ///< elements covered, a multiple of vec
  unsigned vec = 1;
  bool cached = false;  ///< loads used in several passes live in registers, indexed by `it`
};

class Emitter {
public:
  Emitter(const Graph &g, const FusionPlan &plan, const LoweredKernel &k, const Schedule &s,
          const std::string &name)
      : G(g), Plan(plan), K(k), S(s), Name(name), Ctx(k.ctx), Need(neededValues(k)),
        Use(passesUsing(k)), Idx(k.index64 ? "long long" : "int") {
    for (const KParam &p : K.params)
      Used.insert(p.name);
    Names.resize(K.values.size());
    for (size_t i = 0; i < K.values.size(); ++i) {
      const KValue &v = K.values[i];
      switch (v.kind) {
      case KValue::Kind::Literal: break;
      case KValue::Kind::Load: Names[i] = unique(K.params[v.param].name + "_v"); break;
      case KValue::Kind::Compute:
      case KValue::Kind::ReduceResult:
      case KValue::Kind::MatmulResult: Names[i] = unique(cName(G.node(v.node).name)); break;
      }
    }
  }

  std::string run() {
    header();
    switch (S.kind) {
    case ScheduleKind::Pointwise: pointwise(); break;
    case ScheduleKind::InnerRow: innerRow(); break;
    case ScheduleKind::OuterCol: outerCol(); break;
    case ScheduleKind::MatmulSimt:
    case ScheduleKind::MatmulMma: matmul(); break;
    }
    return Out;
  }

private:
  // ---- text helpers
  void line(const std::string &s) { Out += std::string(2 * Indent, ' ') + s + "\n"; }
  void open(const std::string &s) {
    line(s + " {");
    ++Indent;
  }
  void close() {
    --Indent;
    line("}");
  }

  std::string cName(const std::string &ir) { return cudaIdentifier(ir); }
  /// `base`, or `base` with a number, so that no two locals share a name.
  std::string unique(const std::string &base) {
    std::string n = base;
    for (int i = 1; Used.count(n) || isReservedName(n); ++i)
      n = base + std::to_string(i);
    Used.insert(n);
    return n;
  }

  DType dtypeOf(int i) const { return G.node(K.values[i].node).dtype; }
  std::string ref(int i) const {
    const KValue &v = K.values[i];
    if (v.kind == KValue::Kind::Literal)
      return literalOf(G.node(v.node).value, G.node(v.node).dtype);
    return Names[i];
  }
  std::string idx(const IndexExpr &e) { return Ctx.str(e); }

  std::string opText(int i) {
    const KValue &v = K.values[i];
    const Node &n = G.node(v.node);
    DType operandType = dtypeOf(v.args.back());
    bool isInt = operandType == DType::I32;
    bool fast = n.dtype == DType::F16 || n.dtype == DType::BF16;
    std::string a = ref(v.args[0]);
    std::string b = v.args.size() > 1 ? ref(v.args[1]) : "";
    auto call = [&](const char *precise, const char *approx) {
      return std::string(fast && approx ? approx : precise) + "(" + a + ")";
    };
    switch (n.op) {
    case OpKind::Neg: return isInt ? "mj_ineg(" + a + ")" : "-" + a;
    case OpKind::Abs: return isInt ? "(" + a + " < 0 ? mj_ineg(" + a + ") : " + a + ")" : call("fabsf", nullptr);
    case OpKind::Exp: return call("expf", "__expf");
    case OpKind::Exp2: return call("exp2f", nullptr);
    case OpKind::Log: return call("logf", "__logf");
    case OpKind::Log2: return call("log2f", "__log2f");
    case OpKind::Sqrt: return call("sqrtf", nullptr);
    case OpKind::Rsqrt: return call("rsqrtf", nullptr);
    case OpKind::Sin: return call("sinf", "__sinf");
    case OpKind::Cos: return call("cosf", "__cosf");
    case OpKind::Tanh: return call("tanhf", "mj_tanh_fast");
    case OpKind::Sigmoid:
      return fast ? "__fdividef(1.0f, 1.0f + __expf(-" + a + "))"
                  : "1.0f / (1.0f + expf(-" + a + "))";
    case OpKind::Erf: return call("erff", nullptr);
    case OpKind::Relu: return isInt ? "(" + a + " > 0 ? " + a + " : 0)" : "mj_relu(" + a + ")";
    case OpKind::Recip: return fast ? "__fdividef(1.0f, " + a + ")" : "1.0f / " + a;
    case OpKind::Floor: return call("floorf", nullptr);
    case OpKind::Ceil: return call("ceilf", nullptr);
    case OpKind::Not: return "!" + a;
    case OpKind::Add: return isInt ? "mj_iadd(" + a + ", " + b + ")" : a + " + " + b;
    case OpKind::Sub: return isInt ? "mj_isub(" + a + ", " + b + ")" : a + " - " + b;
    case OpKind::Mul: return isInt ? "mj_imul(" + a + ", " + b + ")" : a + " * " + b;
    case OpKind::Div:
      if (isInt)
        return "mj_idiv(" + a + ", " + b + ")";
      return fast ? "__fdividef(" + a + ", " + b + ")" : a + " / " + b;
    // powf even for 16-bit results: __powf is exp2(b * log2(a)), NaN for a < 0.
    case OpKind::Pow: return "powf(" + a + ", " + b + ")";
    case OpKind::Maximum: return std::string(isInt ? "max(" : "mj_max(") + a + ", " + b + ")";
    case OpKind::Minimum: return std::string(isInt ? "min(" : "mj_min(") + a + ", " + b + ")";
    case OpKind::Eq: return a + " == " + b;
    case OpKind::Ne: return a + " != " + b;
    case OpKind::Lt: return a + " < " + b;
    case OpKind::Le: return a + " <= " + b;
    case OpKind::Gt: return a + " > " + b;
    case OpKind::Ge: return a + " >= " + b;
    case OpKind::And: return a + " && " + b;
    case OpKind::Or: return a + " || " + b;
    case OpKind::Where: return a + " ? " + b + " : " + ref(v.args[2]);
    case OpKind::Cast: return castText(dtypeOf(v.args[0]), n.dtype, a);
    default: break;
    }
    llvm_unreachable("not an elementwise op");
  }

  static std::string castText(DType from, DType to, const std::string &a) {
    if (to == DType::Bool)
      return from == DType::Bool ? a : "(" + a + " != 0)";
    if (to == DType::I32) {
      if (from == DType::Bool)
        return "(" + a + " ? 1 : 0)";
      return from == DType::I32 ? a : "(int)(" + a + ")";
    }
    std::string f = from == DType::Bool  ? "(" + a + " ? 1.0f : 0.0f)"
                    : from == DType::I32 ? "(float)(" + a + ")"
                                         : a;
    // Narrowing to a 16-bit type rounds the value, even in registers.
    bool narrows = (to == DType::F16 && from != DType::F16) || (to == DType::BF16 && from != DType::BF16);
    if (to == DType::F16 && narrows && from != DType::Bool)
      return "mj_round_f16(" + f + ")";
    if (to == DType::BF16 && narrows && from != DType::Bool)
      return "mj_round_bf16(" + f + ")";
    return f;
  }

  std::string comment(int i) {
    if (K.values[i].kind == KValue::Kind::Load)
      return " // %" + G.node(K.values[i].node).name;
    std::string s;
    llvm::raw_string_ostream os(s);
    printNode(os, G, K.values[i].node);
    return " // " + os.str();
  }

  // ---- header and signature
  void header() {
    const KernelGroup &kg = Plan.kernels[K.index];
    std::string what;
    switch (kg.kind) {
    case KernelKind::Pointwise:
      what = "pointwise over " + typeText(G.node(kg.roots[0]).dtype, kg.domain);
      break;
    case KernelKind::Reduction:
      what = llvm::formatv("reduction of {0} over axes {1} ({2} row{3} of {4})", kg.domain.str(),
                           Shape(kg.reducedAxes).str(), kg.rows(), kg.rows() == 1 ? "" : "s",
                           kg.reducedSize())
                 .str();
      break;
    case KernelKind::Matmul:
      what = llvm::formatv("matmul, {0} x [{1}, {2}] @ [{2}, {3}]{4}", K.matmul->batch,
                           K.matmul->M, K.matmul->K, K.matmul->N,
                           llvm::any_of(kg.held, [&](ValueId v) { return isElementwise(G.node(v).op); })
                               ? ", with its elementwise epilogue"
                               : "")
                 .str();
      break;
    }
    line("// kernel k" + std::to_string(K.index) + " " + Name + ": " + what);
    line("// schedule: " + S.describe());
    for (ValueId h : kg.held) {
      if (G.node(h).op == OpKind::Input)
        continue;
      std::string s;
      llvm::raw_string_ostream os(s);
      printNode(os, G, h);
      line("//   " + os.str());
    }
    std::string reads, writes;
    for (const KParam &p : K.params)
      (p.written ? writes : reads) += (p.written ? writes : reads).empty() ? "%" + G.node(p.node).name
                                                                          : ", %" + G.node(p.node).name;
    line("// reads " + (reads.empty() ? std::string("nothing") : reads) + "; writes " + writes);
    std::string sig = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(S.block) +
                      ") " + Name + "(";
    for (size_t i = 0; i < K.params.size(); ++i) {
      const KParam &p = K.params[i];
      sig += i ? ", " : "";
      sig += (p.written ? "" : "const ") + storageCType(p.dtype).str() + " *__restrict__ " + p.name;
    }
    if (S.splits > 1)
      sig += std::string(K.params.empty() ? "" : ", ") + "unsigned *__restrict__ mj_work";
    Out += sig + ") {\n";
    Indent = 1;
  }

  // ---- element work shared by every template
  /// Emits the work of pass `pass` for the vector (or element) at lc.var,
  /// with `guardStores` predicating element stores.
  void elementWork(int pass, const LaneCtx &lc, const std::string &storeGuard) {
    std::vector<int> values;
    for (size_t i = 0; i < K.values.size(); ++i)
      if (Need[i] && (Use[i] >> pass & 1u) && K.values[i].kind != KValue::Kind::Literal)
        values.push_back(static_cast<int>(i));
    std::vector<int> stores;
    for (size_t s = 0; s < K.stores.size(); ++s) {
      const KStore &st = K.stores[s];
      if (st.perRow)
        continue;
      int stage = K.kind == KernelKind::Pointwise ? 0 : K.values[st.value].stage;
      if (stage == pass)
        stores.push_back(static_cast<int>(s));
    }
    bool vec = lc.vec > 1;
    std::map<int, std::string> laneExpr; // value -> its per-lane expression
    // Loads.
    for (int i : values) {
      const KValue &v = K.values[i];
      if (v.kind != KValue::Kind::Load)
        continue;
      const KParam &p = K.params[v.param];
      std::string raw = storageCType(p.dtype).str();
      LaneAccess a = analyzeLanes(Ctx, v.offset, lc.x, lc.extent, lc.vec, lc.var);
      bool cached = lc.cached && llvm::countPopulation(Use[i]) > 1;
      if (cached) {
        std::string c = cacheName(i, raw);
        if (static_cast<int>(llvm::countTrailingZeros(Use[i])) == pass)
          loadInto(c + "[it]", p, a, lc.vec);
        laneExpr[i] = loadConv(p.dtype, c + "[it][" + (vec ? "j" : "0") + "]");
        continue;
      }
      if (!vec || a.kind == LaneAccess::Kind::Same) {
        line("const " + regType(p.dtype) + " " + Names[i] + " = " +
             loadConv(p.dtype, p.name + "[" + idx(a.base) + "]") + ";" + comment(i));
        continue;
      }
      std::string r = unique(p.name + "_r");
      line("alignas(16) " + raw + " " + r + "[" + std::to_string(lc.vec) + "];");
      loadInto(r, p, a, lc.vec);
      laneExpr[i] = loadConv(p.dtype, r + "[j]");
    }
    // Output vectors.
    std::map<int, std::string> outArray;
    std::map<int, LaneAccess> storeAccess;
    for (int s : stores) {
      const KStore &st = K.stores[s];
      storeAccess[s] = analyzeLanes(Ctx, st.offset, lc.x, lc.extent, lc.vec, lc.var);
      if (vec) {
        outArray[s] = unique(K.params[st.param].name + "_r");
        line("alignas(16) " + storageCType(K.params[st.param].dtype).str() + " " + outArray[s] +
             "[" + std::to_string(lc.vec) + "];");
      }
    }
    if (vec) {
      line("#pragma unroll");
      open("for (int j = 0; j < " + std::to_string(lc.vec) + "; ++j)");
    }
    for (int i : values) {
      const KValue &v = K.values[i];
      if (v.kind == KValue::Kind::Load) {
        auto it = laneExpr.find(i);
        if (it != laneExpr.end())
          line("const " + regType(K.params[v.param].dtype) + " " + Names[i] + " = " + it->second +
               ";");
        continue;
      }
      if (v.kind == KValue::Kind::Compute)
        line("const " + regType(dtypeOf(i)) + " " + Names[i] + " = " + opText(i) + ";" +
             comment(i));
    }
    for (size_t r = 0; r < K.reductions.size(); ++r)
      if (K.reductions[r].pass == pass)
        line(accumulate(static_cast<int>(r)));
    for (int s : stores) {
      const KStore &st = K.stores[s];
      const KParam &p = K.params[st.param];
      std::string val = storeConv(p.dtype, ref(st.value));
      if (vec)
        line(outArray[s] + "[j] = " + val + ";");
      else
        line(storeGuard + p.name + "[" + idx(storeAccess[s].base) + "] = " + val + ";");
    }
    if (vec)
      close();
    for (int s : stores) {
      if (!vec)
        break;
      const KStore &st = K.stores[s];
      const KParam &p = K.params[st.param];
      const LaneAccess &a = storeAccess[s];
      if (a.kind == LaneAccess::Kind::Contiguous) {
        line(storeGuard + "mj_store(" + p.name + " + " + parenIdx(a.base) + ", " + outArray[s] +
             ");");
      } else {
        for (unsigned j = 0; j < lc.vec; ++j)
          line(storeGuard + p.name + "[" + idx(a.perLane[j]) + "] = " + outArray[s] + "[" +
               std::to_string(j) + "];");
      }
    }
  }

  std::string parenIdx(const IndexExpr &e) {
    std::string s = idx(e);
    return s.find(' ') == std::string::npos ? s : "(" + s + ")";
  }

  void loadInto(const std::string &dst, const KParam &p, const LaneAccess &a, unsigned vec) {
    if (vec == 1) {
      line(dst + "[0] = " + p.name + "[" + idx(a.base) + "];");
      return;
    }
    if (a.kind == LaneAccess::Kind::Contiguous) {
      line("mj_load(" + dst + ", " + p.name + " + " + parenIdx(a.base) + ");");
      return;
    }
    for (unsigned j = 0; j < vec; ++j)
      line(dst + "[" + std::to_string(j) + "] = " + p.name + "[" + idx(a.perLane[j]) + "];");
  }

  std::string cacheName(int i, const std::string &raw) {
    auto it = CacheNames.find(i);
    if (it != CacheNames.end())
      return it->second;
    std::string n = unique(K.params[K.values[i].param].name + "_c");
    CacheNames[i] = n;
    CacheDecls.push_back("alignas(16) " + raw + " " + n + "[" + std::to_string(S.itemsPerThread) +
                         "][" + std::to_string(S.vec) + "];");
    return n;
  }

  // ---- reductions
  std::string accName(int r) {
    auto it = AccNames.find(r);
    if (it != AccNames.end())
      return it->second;
    std::string n = unique(cName(G.node(K.reductions[r].node).name) + "_acc");
    AccNames[r] = n;
    return n;
  }
  bool accIsInt(int r) const { return G.node(K.reductions[r].node).dtype == DType::I32; }
  std::string accumulate(int r) {
    const KReduction &red = K.reductions[r];
    std::string acc = accName(r), v = ref(red.input);
    bool isInt = accIsInt(r);
    switch (red.op) {
    case OpKind::Sum:
    case OpKind::Mean: return isInt ? acc + " = mj_iadd(" + acc + ", " + v + ");" : acc + " += " + v + ";";
    case OpKind::Prod: return isInt ? acc + " = mj_imul(" + acc + ", " + v + ");" : acc + " *= " + v + ";";
    case OpKind::Max: return acc + " = " + (isInt ? "max(" : "mj_max(") + acc + ", " + v + ");";
    case OpKind::Min: return acc + " = " + (isInt ? "min(" : "mj_min(") + acc + ", " + v + ");";
    default: break;
    }
    llvm_unreachable("not a reduction");
  }
  void declareAccumulators(int pass) {
    for (size_t r = 0; r < K.reductions.size(); ++r) {
      const KReduction &red = K.reductions[r];
      if (red.pass != pass)
        continue;
      bool isInt = accIsInt(static_cast<int>(r));
      line((isInt ? "int " : "float ") + accName(static_cast<int>(r)) + " = " +
           reduceText(red.op, isInt).identity + ";");
    }
  }
  /// Combines the threads' partial results of this pass's reductions and
  /// defines their values (`define` false: only combines).
  void finishReductions(int pass, const std::string &how, bool define = true) {
    for (size_t r = 0; r < K.reductions.size(); ++r) {
      const KReduction &red = K.reductions[r];
      if (red.pass != pass)
        continue;
      bool isInt = accIsInt(static_cast<int>(r));
      std::string acc = accName(static_cast<int>(r));
      std::string functor = reduceText(red.op, isInt).functor;
      if (how == "warp")
        line(acc + " = mj_warp_reduce<" + functor + ", " + std::to_string(S.threadsPerRow) + ">(" +
             acc + ");");
      else if (how == "block")
        line(acc + " = mj_block_reduce<" + functor + ", " + std::to_string(S.block) + ">(" + acc +
             ", " + (isInt ? "mj_smem_i" : "mj_smem_f") + ");");
      else
        line(acc + " = mj_col_reduce<" + functor + ", " + std::to_string(S.parts) + ">(" + acc +
             ", " + (isInt ? "mj_col_i" : "mj_col_f") + ");");
    }
    if (define)
      defineReductions(pass);
  }

  /// Finishes this pass's reductions (a mean divides by the row length) and
  /// defines the values that read them.
  void defineReductions(int pass) {
    for (size_t r = 0; r < K.reductions.size(); ++r) {
      const KReduction &red = K.reductions[r];
      if (red.pass != pass)
        continue;
      std::string acc = accName(static_cast<int>(r));
      if (red.op == OpKind::Mean)
        line(acc + " *= " + floatLiteral(1.0 / static_cast<double>(K.K)) + ";");
    }
    for (size_t i = 0; i < K.values.size(); ++i) {
      const KValue &v = K.values[i];
      if (v.kind == KValue::Kind::ReduceResult && Need[i] && K.reductions[v.reduction].pass == pass)
        line("const " + regType(dtypeOf(static_cast<int>(i))) + " " + Names[i] + " = " +
             accName(v.reduction) + ";" + comment(static_cast<int>(i)));
    }
  }

  /// Per-row values (loads and arithmetic that do not depend on k) known
  /// once `stage` passes are done.
  void rowValues(int stage) {
    for (size_t i = 0; i < K.values.size(); ++i) {
      const KValue &v = K.values[i];
      if (!Need[i] || !v.perRow || v.stage != stage)
        continue;
      if (v.kind == KValue::Kind::Load) {
        const KParam &p = K.params[v.param];
        line("const " + regType(p.dtype) + " " + Names[i] + " = " +
             loadConv(p.dtype, p.name + "[" + idx(v.offset) + "]") + ";" +
             comment(static_cast<int>(i)));
      } else if (v.kind == KValue::Kind::Compute) {
        line("const " + regType(dtypeOf(static_cast<int>(i))) + " " + Names[i] + " = " +
             opText(static_cast<int>(i)) + ";" + comment(static_cast<int>(i)));
      }
    }
  }

  void rowStores(const std::string &who) {
    std::vector<std::string> lines;
    for (const KStore &st : K.stores) {
      if (!st.perRow)
        continue;
      const KParam &p = K.params[st.param];
      lines.push_back(p.name + "[" + idx(st.offset) + "] = " + storeConv(p.dtype, ref(st.value)) +
                      ";");
    }
    if (lines.empty())
      return;
    open("if (" + who + ")");
    for (const std::string &l : lines)
      line(l);
    close();
  }

  std::string passTitle(int pass) {
    std::string s = "// pass " + std::to_string(pass);
    std::string what;
    for (const KReduction &r : K.reductions)
      if (r.pass == pass)
        what += (what.empty() ? ": " : ", ") + std::string("%") + G.node(r.node).name + " = " +
                opName(r.op).str();
    bool stores = llvm::any_of(K.stores, [&](const KStore &st) {
      return !st.perRow && K.values[st.value].stage == pass;
    });
    if (stores)
      what += (what.empty() ? ": " : ", then ") + std::string("store");
    return s + what;
  }

  std::string vectorComment() const {
    if (S.vec == 1)
      return " // element index";
    return " // vector index: elements vi * " + std::to_string(S.vec) + " .. vi * " +
           std::to_string(S.vec) + " + " + std::to_string(S.vec - 1);
  }

  /// Removes the line declaring `var` at `declPos` when the text after it
  /// never uses `var` (a pass with no loads or stores).
  void dropUnusedDecl(size_t declPos, const std::string &var) {
    size_t lineEnd = Out.find('\n', declPos);
    if (lineEnd == std::string::npos)
      return;
    std::string after = Out.substr(lineEnd + 1);
    for (size_t at = after.find(var); at != std::string::npos; at = after.find(var, at + 1)) {
      auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
      bool before = at > 0 && isWord(after[at - 1]);
      bool next = at + var.size() < after.size() && isWord(after[at + var.size()]);
      if (!before && !next)
        return;
    }
    Out.erase(declPos, lineEnd + 1 - declPos);
  }

  // ---- templates
  void pointwise() {
    unsigned b = S.block;
    LaneCtx lc;
    lc.vec = S.vec;
    lc.x = K.elem;
    lc.extent = S.numVec * S.vec;
    lc.var = S.vec > 1 ? "vi" : "i";
    std::string numVec = std::to_string(S.numVec);
    bool exact = S.numVec % (int64_t(b) * S.items) == 0;
    if (S.items > 1) {
      line("const " + Idx + " first = (" + Idx + ")blockIdx.x * " + std::to_string(b * S.items) +
           " + threadIdx.x;");
      line("#pragma unroll");
      open("for (int item = 0; item < " + std::to_string(S.items) + "; ++item)");
      line("const " + Idx + " " + lc.var + " = first + item * " + std::to_string(b) + ";" +
           vectorComment());
    } else {
      line("const " + Idx + " " + lc.var + " = (" + Idx + ")blockIdx.x * " + std::to_string(b) +
           " + threadIdx.x;" + vectorComment());
    }
    if (!exact)
      open("if (" + lc.var + " < " + numVec + ")");
    elementWork(0, lc, "");
    if (!exact)
      close();
    if (S.items > 1)
      close();
    if (S.tail) {
      int64_t rest = K.numel - S.numVec * S.vec;
      line("// the last " + std::to_string(rest) + (rest == 1 ? " element" : " elements, one per thread"));
      open("if (blockIdx.x == 0 && threadIdx.x < " +
           std::to_string(K.numel - S.numVec * S.vec) + ")");
      line("const " + Idx + " i = " + std::to_string(S.numVec * S.vec) + " + threadIdx.x;");
      LaneCtx t;
      t.vec = 1;
      t.x = K.elem;
      t.extent = K.numel;
      t.var = "i";
      elementWork(0, t, "");
      close();
    }
    Out += "}\n";
  }

  void innerRow() {
    unsigned t = S.threadsPerRow;
    bool block = t > 32;
    bool needsF = false, needsI = false;
    for (size_t r = 0; r < K.reductions.size(); ++r)
      (accIsInt(static_cast<int>(r)) ? needsI : needsF) = true;
    if (block && needsF)
      line("__shared__ float mj_smem_f[32];");
    if (block && needsI)
      line("__shared__ int mj_smem_i[32];");
    std::string rows = std::to_string(K.rows);
    bool partial = K.rows % S.rowsPerBlock != 0;
    if (S.splits > 1) {
      line("__shared__ bool mj_last; // this block is the last of its row to finish");
      line("const int lane = threadIdx.x;");
      line("const " + Idx + " row = blockIdx.x / " + std::to_string(S.splits) + ";");
      line("const " + Idx + " part = blockIdx.x % " + std::to_string(S.splits) +
           "; // this block's chunk of the row");
    } else if (block) {
      line("const int lane = threadIdx.x;");
      line("const " + Idx + " row = blockIdx.x;");
    } else {
      line("const int lane = threadIdx.x % " + std::to_string(t) + ";");
      std::string raw = "(" + Idx + ")blockIdx.x * " + std::to_string(S.rowsPerBlock) +
                        " + threadIdx.x / " + std::to_string(t);
      if (partial) {
        line("const " + Idx + " rowRaw = " + raw + ";");
        line("const bool rowValid = rowRaw < " + rows + ";");
        line("const " + Idx + " row = rowValid ? rowRaw : " + std::to_string(K.rows - 1) +
             "; // spare lanes redo the last row but store nothing");
      } else {
        line("const " + Idx + " row = " + raw + ";");
      }
    }
    // Caches are declared at the top of the kernel once element work names them.
    size_t declAt = Out.size();
    int indentAtDecl = Indent;
    rowValues(0);
    LaneCtx lc;
    lc.vec = S.vec;
    lc.x = K.k;
    lc.extent = K.K;
    lc.var = S.vec > 1 ? "kv" : "k";
    lc.cached = S.cached && K.passes > 1;
    int64_t kv = K.K / S.vec;
    std::string storeGuard = partial ? "if (rowValid) " : "";
    for (int p = 0; p < K.passes; ++p) {
      line(passTitle(p));
      declareAccumulators(p);
      if (S.cached) {
        bool exact = int64_t(S.itemsPerThread) * t == kv;
        line("#pragma unroll");
        open("for (int it = 0; it < " + std::to_string(S.itemsPerThread) + "; ++it)");
        size_t decl = Out.size();
        line("const " + Idx + " " + lc.var + " = it * " + std::to_string(t) + " + lane;");
        if (!exact)
          open("if (" + lc.var + " < " + std::to_string(kv) + ")");
        elementWork(p, lc, storeGuard);
        if (exact)
          dropUnusedDecl(decl, lc.var);
        if (!exact)
          close();
        close();
      } else if (S.splits > 1) {
        std::string chunk = std::to_string(S.chunk);
        line("const " + Idx + " first = part * " + chunk + ", end = min(first + " + chunk + ", (" +
             Idx + ")" + std::to_string(kv) + ");");
        line("#pragma unroll 4");
        open("for (" + Idx + " " + lc.var + " = first + lane; " + lc.var + " < end; " + lc.var +
             " += " + std::to_string(t) + ")");
        elementWork(p, lc, storeGuard);
        close();
      } else {
        open("for (" + Idx + " " + lc.var + " = lane; " + lc.var + " < " + std::to_string(kv) +
             "; " + lc.var + " += " + std::to_string(t) + ")");
        elementWork(p, lc, storeGuard);
        close();
      }
      if (S.splits > 1) {
        finishReductions(p, "block", false);
        combineSplits(p);
        defineReductions(p);
      } else {
        finishReductions(p, block ? "block" : "warp");
      }
      rowValues(p + 1);
    }
    rowStores(partial ? "lane == 0 && rowValid" : "lane == 0");
    std::string decls;
    for (const std::string &d : CacheDecls)
      decls += std::string(2 * indentAtDecl, ' ') + d + "\n";
    Out.insert(declAt, decls);
    Out += "}\n";
  }

  /// A row split over blocks: each block leaves its partial results in
  /// mj_work (after one counter per row) and counts itself done; the last
  /// block of the row reads the partials back, combines them in block order
  /// (the same result every run) and resets the counter for the next launch.
  void combineSplits(int pass) {
    std::string splits = std::to_string(S.splits);
    int nRed = 0;
    for (const KReduction &red : K.reductions)
      nRed += red.pass == pass;
    auto at = [&](const std::string &part, int r) {
      std::string i = "row * " + splits + " + " + part;
      return nRed == 1 ? i : "(" + i + ") * " + std::to_string(nRed) + " + " + std::to_string(r);
    };
    line("// the row's partial results meet in mj_work: a counter per row, then the partials");
    line("unsigned *const mj_count = mj_work, *const mj_partial = mj_work + " +
         std::to_string(K.rows) + ";");
    open("if (lane == 0)");
    int j = 0;
    for (size_t r = 0; r < K.reductions.size(); ++r) {
      if (K.reductions[r].pass != pass)
        continue;
      std::string acc = accName(static_cast<int>(r));
      line("mj_partial[" + at("part", j++) + "] = " +
           (accIsInt(static_cast<int>(r)) ? "(unsigned)" + acc : "__float_as_uint(" + acc + ")") +
           ";");
    }
    line("__threadfence(); // the partials are visible before the count says so");
    line("mj_last = atomicAdd(&mj_count[row], 1u) == " + std::to_string(S.splits - 1) + "u;");
    close();
    line("__syncthreads();");
    line("if (!mj_last) return;");
    line("__threadfence();");
    j = 0;
    for (size_t r = 0; r < K.reductions.size(); ++r) {
      const KReduction &red = K.reductions[r];
      if (red.pass != pass)
        continue;
      bool isInt = accIsInt(static_cast<int>(r));
      std::string acc = accName(static_cast<int>(r));
      std::string raw = "__ldcg(&mj_partial[" + at("lane", j++) + "])";
      std::string v = isInt ? "(int)" + raw : "__uint_as_float(" + raw + ")";
      line(acc + " = " +
           (S.splits == S.block ? v
                                : "lane < " + splits + " ? " + v + " : " +
                                      reduceText(red.op, isInt).identity) +
           ";");
    }
    finishReductions(pass, "block", false);
    line("if (lane == 0) mj_count[row] = 0u; // ready for the next launch");
  }

  void outerCol() {
    bool needsF = false, needsI = false;
    for (size_t r = 0; r < K.reductions.size(); ++r)
      (accIsInt(static_cast<int>(r)) ? needsI : needsF) = true;
    std::string parts = std::to_string(S.parts);
    if (needsF)
      line("__shared__ float mj_col_f[" + parts + "][33];");
    if (needsI)
      line("__shared__ int mj_col_i[" + parts + "][33];");
    line("const int part = threadIdx.x / 32; // this thread's share of each column");
    bool partial = K.rows % 32 != 0;
    std::string raw = "(" + Idx + ")blockIdx.x * 32 + threadIdx.x % 32";
    if (partial) {
      line("const " + Idx + " rowRaw = " + raw + ";");
      line("const bool rowValid = rowRaw < " + std::to_string(K.rows) + ";");
      line("const " + Idx + " row = rowValid ? rowRaw : " + std::to_string(K.rows - 1) + ";");
    } else {
      line("const " + Idx + " row = " + raw + ";");
    }
    rowValues(0);
    LaneCtx lc;
    lc.vec = 1;
    lc.x = K.k;
    lc.extent = K.K;
    lc.var = "k";
    std::string storeGuard = partial ? "if (rowValid) " : "";
    for (int p = 0; p < K.passes; ++p) {
      line(passTitle(p));
      declareAccumulators(p);
      open("for (" + Idx + " k = part; k < " + std::to_string(K.K) + "; k += " + parts + ")");
      elementWork(p, lc, storeGuard);
      close();
      finishReductions(p, "col");
      rowValues(p + 1);
    }
    rowStores(partial ? "part == 0 && rowValid" : "part == 0");
    Out += "}\n";
  }

  // ---- matmul
  /// Which tile this block computes, grouped 8 tiles tall so that blocks
  /// running together share rows of A and columns of B in the L2.
  void tileCoordinates() {
    std::string tiles = std::to_string(S.tilesM * S.tilesN);
    line("const int tile = blockIdx.x % " + tiles + ";");
    line("const " + Idx + " b = blockIdx.x / " + tiles + "; // batch");
    line("const int group = tile / " + std::to_string(8 * S.tilesN) + ", firstM = group * 8;");
    line("const int groupRows = min(" + std::to_string(S.tilesM) + " - firstM, 8);");
    line("const " + Idx + " m0 = (firstM + tile % groupRows) * " + std::to_string(S.bm) + ";");
    line("const " + Idx + " n0 = ((tile % " + std::to_string(8 * S.tilesN) + ") / groupRows) * " +
         std::to_string(S.bn) + ";");
  }

  /// One element of a tile from memory, zero outside the matrix.
  std::string operandLoad(const KParam &p, const std::string &batch, const std::string &row,
                          int64_t rowStride, const std::string &col, int64_t colStride,
                          const std::string &inBounds, bool toFloat) {
    std::string off = batch + " + " + row + " * " + std::to_string(rowStride) + " + " + col +
                      " * " + std::to_string(colStride);
    std::string zero = toFloat ? "0.0f" : "(unsigned short)0";
    std::string v = p.name + "[" + off + "]";
    return "(" + inBounds + ") ? " + (toFloat ? loadConv(p.dtype, v) : v) + " : " + zero;
  }

  /// How one operand's tile is read: A is bm x bk (rows m, columns k), B is
  /// bk x bn (rows k, columns n).
  struct Operand {
    const KParam *param;
    std::string name, batch, rowVar, colVar, rowExt, colExt, row0, col0;
    unsigned rows, cols;
    int64_t rowStride, colStride;
    bool vec;
  };
  Operand operand(bool isA) {
    const KMatmul &mm = *K.matmul;
    Operand o;
    o.param = &K.params[isA ? mm.aParam : mm.bParam];
    o.name = isA ? "A" : "B";
    o.batch = isA ? "aBatch" : "bBatch";
    o.rowVar = isA ? "gm" : "gk";
    o.colVar = isA ? "gk" : "gn";
    o.rowExt = std::to_string(isA ? mm.M : mm.K);
    o.colExt = std::to_string(isA ? mm.K : mm.N);
    o.row0 = isA ? "m0" : "k0";
    o.col0 = isA ? "k0" : "n0";
    o.rows = isA ? S.bm : S.bk;
    o.cols = isA ? S.bk : S.bn;
    o.rowStride = isA ? mm.aStrideM : mm.bStrideK;
    o.colStride = isA ? mm.aStrideK : mm.bStrideN;
    o.vec = isA ? S.vecA : S.vecB;
    return o;
  }

  /// The bounds check of a tile element at (rowVar, colVar): empty when
  /// every tile lies inside the matrix (the extents are whole tiles).
  std::string inBounds(const Operand &o) {
    bool isA = o.name == "A";
    int64_t rowExt = std::stoll(o.rowExt), colExt = std::stoll(o.colExt);
    bool rowsWhole = rowExt % (isA ? S.bm : S.bk) == 0;
    bool colsWhole = colExt % (isA ? S.bk : S.bn) == 0;
    std::string c;
    if (!rowsWhole)
      c = o.rowVar + " < " + o.rowExt;
    if (!colsWhole)
      c += (c.empty() ? "" : " && ") + o.colVar + " < " + o.colExt;
    return c;
  }

  /// Element e of a tile as (r, c): the fastest index follows the unit stride.
  void tileElement(const Operand &o, const std::string &e) {
    bool colFast = o.colStride == 1 || o.rowStride != 1;
    std::string rows = std::to_string(o.rows), cols = std::to_string(o.cols);
    if (colFast)
      line("const int r = " + e + " / " + cols + ", c = " + e + " % " + cols + ";");
    else
      line("const int r = " + e + " % " + rows + ", c = " + e + " / " + rows + ";");
    line("const " + Idx + " " + o.rowVar + " = " + o.row0 + " + r, " + o.colVar + " = " + o.col0 +
         " + c;");
  }

  void matmul() {
    const KMatmul &mm = *K.matmul;
    tileCoordinates();
    line("const " + Idx + " aBatch = " + idx(mm.aBase) + ", bBatch = " + idx(mm.bBase) + ";");
    if (S.kind == ScheduleKind::MatmulSimt)
      matmulSimt();
    else
      matmulMma();
    Out += "}\n";
  }

  /// f32 on the CUDA cores: each thread computes tm x tn outputs from values
  /// it reads out of shared memory; the next k-slice is fetched into
  /// registers while this one is used.
  void matmulSimt() {
    const KMatmul &mm = *K.matmul;
    std::string bm = std::to_string(S.bm), bn = std::to_string(S.bn), bk = std::to_string(S.bk);
    std::string TM = std::to_string(S.tm), TN = std::to_string(S.tn);
    unsigned threads = S.block;
    // With 8x8 outputs a thread takes two 4-wide groups of rows (and of
    // columns), half a tile apart, so that a warp's float4 reads of shared
    // memory fall in distinct banks.
    bool halves = S.tm == 8 && S.tn == 8;
    line("__shared__ alignas(16) float As[2][" + bk + "][" + bm + " + 4]; // A tiles, transposed: As[s][k][m]");
    line("__shared__ alignas(16) float Bs[2][" + bk + "][" + bn + " + 4]; // B tiles: Bs[s][k][n]");
    unsigned tx = S.bn / S.tn;
    line("const int tx = threadIdx.x % " + std::to_string(tx) + ", ty = threadIdx.x / " +
         std::to_string(tx) + ";");
    std::string rowOf = halves ? "(ii / 4) * " + std::to_string(S.bm / 2) + " + ty * 4 + ii % 4"
                               : "ty * " + TM + " + ii";
    std::string colOf = halves ? "(jj / 4) * " + std::to_string(S.bn / 2) + " + tx * 4 + jj % 4"
                               : "tx * " + TN + " + jj";
    line("// this thread's outputs: rows m0 + " + rowOf + ", columns n0 + " + colOf);
    line("float acc[" + TM + "][" + TN + "];");
    line("#pragma unroll");
    open("for (int ii = 0; ii < " + TM + "; ++ii)");
    line("#pragma unroll");
    line("for (int jj = 0; jj < " + TN + "; ++jj) acc[ii][jj] = 0.0f;");
    close();
    // Registers holding the next k-slice: float4s along the unit stride, or elements.
    Operand ops[2] = {operand(true), operand(false)};
    unsigned per[2];
    for (int i = 0; i < 2; ++i) {
      const Operand &o = ops[i];
      unsigned n = o.rows * o.cols / (o.vec ? 4 : 1);
      per[i] = (n + threads - 1) / threads;
      line((o.vec ? "float4 " : "float ") + o.name + "next[" + std::to_string(per[i]) + "]; // " +
           (o.vec ? "float4s" : "elements") + " of the next " + o.name + " tile");
    }
    line("// reads the k-slice at k0 from memory into registers");
    open("auto fetch = [&](" + Idx + " k0)");
    for (int i = 0; i < 2; ++i) {
      const Operand &o = ops[i];
      unsigned n = o.rows * o.cols / (o.vec ? 4 : 1);
      line("#pragma unroll");
      open("for (int i = 0; i < " + std::to_string(per[i]) + "; ++i)");
      line("const int e = threadIdx.x + i * " + std::to_string(threads) + ";");
      if (o.vec) {
        std::string cols4 = std::to_string(o.cols / 4);
        line("const int r = e / " + cols4 + ", c = e % " + cols4 + " * 4;");
        line("const " + Idx + " " + o.rowVar + " = " + o.row0 + " + r, " + o.colVar + " = " +
             o.col0 + " + c;");
        std::string load = "*reinterpret_cast<const float4 *>(" + o.param->name + " + " + o.batch +
                           " + " + o.rowVar + " * " + std::to_string(o.rowStride) + " + " +
                           o.colVar + ")";
        std::string ok = inBounds(o);
        line(o.name + "next[i] = " +
             (ok.empty() ? load : ok + " ? " + load + " : make_float4(0.0f, 0.0f, 0.0f, 0.0f)") +
             ";");
      } else {
        bool guard = n % threads != 0;
        if (guard)
          open("if (e < " + std::to_string(n) + ")");
        tileElement(o, "e");
        line(o.name + "next[i] = " +
             operandLoad(*o.param, o.batch, o.rowVar, o.rowStride, o.colVar, o.colStride,
                         o.rowVar + " < " + o.rowExt + " && " + o.colVar + " < " + o.colExt, true) +
             ";");
        if (guard)
          close();
      }
      close();
    }
    --Indent;
    line("};");
    line("// stores the fetched k-slice into stage s of the tiles");
    open("auto stash = [&](int s)");
    for (int i = 0; i < 2; ++i) {
      const Operand &o = ops[i];
      bool isA = i == 0;
      unsigned n = o.rows * o.cols / (o.vec ? 4 : 1);
      line("#pragma unroll");
      open("for (int i = 0; i < " + std::to_string(per[i]) + "; ++i)");
      line("const int e = threadIdx.x + i * " + std::to_string(threads) + ";");
      if (o.vec) {
        std::string cols4 = std::to_string(o.cols / 4);
        line("const int r = e / " + cols4 + ", c = e % " + cols4 + " * 4;");
        if (isA)
          line("As[s][c][r] = Anext[i].x, As[s][c + 1][r] = Anext[i].y, As[s][c + 2][r] = "
               "Anext[i].z, As[s][c + 3][r] = Anext[i].w;");
        else
          line("*reinterpret_cast<float4 *>(&Bs[s][r][c]) = Bnext[i];");
      } else {
        bool guard = n % threads != 0;
        if (guard)
          open("if (e < " + std::to_string(n) + ")");
        bool colFast = o.colStride == 1 || o.rowStride != 1;
        std::string rows = std::to_string(o.rows), cols = std::to_string(o.cols);
        if (colFast)
          line("const int r = e / " + cols + ", c = e % " + cols + ";");
        else
          line("const int r = e % " + rows + ", c = e / " + rows + ";");
        line(std::string(isA ? "As[s][c][r]" : "Bs[s][r][c]") + " = " + o.name + "next[i];");
        if (guard)
          close();
      }
      close();
    }
    --Indent;
    line("};");
    line("const int kTiles = (" + std::to_string(mm.K) + " + " + bk + " - 1) / " + bk + ";");
    line("fetch(0);");
    line("stash(0);");
    line("__syncthreads();");
    open("for (int t = 0; t < kTiles; ++t)");
    line("const int s = t % 2;");
    line("if (t + 1 < kTiles) fetch((" + Idx + ")(t + 1) * " + bk +
         "); // in flight while this slice is used");
    line("#pragma unroll");
    open("for (int p = 0; p < " + bk + "; ++p)");
    line("float ar[" + TM + "], br[" + TN + "];");
    auto readRow = [&](const std::string &dst, const std::string &tile, unsigned count,
                       unsigned width, const std::string &who, bool split) {
      if (count % 4 == 0) {
        for (unsigned g = 0; g < count / 4; ++g) {
          std::string at = split ? std::to_string(g * width / 2) + " + " + who + " * 4"
                                 : who + " * " + std::to_string(count) + " + " + std::to_string(4 * g);
          line("*reinterpret_cast<float4 *>(&" + dst + "[" + std::to_string(4 * g) +
               "]) = *reinterpret_cast<const float4 *>(&" + tile + "[s][p][" + at + "]);");
        }
      } else {
        line("#pragma unroll");
        line("for (int q = 0; q < " + std::to_string(count) + "; ++q) " + dst + "[q] = " + tile +
             "[s][p][" + who + " * " + std::to_string(count) + " + q];");
      }
    };
    readRow("ar", "As", S.tm, S.bm, "ty", halves);
    readRow("br", "Bs", S.tn, S.bn, "tx", halves);
    line("#pragma unroll");
    open("for (int ii = 0; ii < " + TM + "; ++ii)");
    line("#pragma unroll");
    line("for (int jj = 0; jj < " + TN + "; ++jj) acc[ii][jj] = fmaf(ar[ii], br[jj], acc[ii][jj]);");
    close();
    close();
    line("if (t + 1 < kTiles) stash(s ^ 1); // the other stage: everyone finished it last step");
    line("__syncthreads();");
    close();
    line("// epilogue: each output element in registers, then stored");
    line("#pragma unroll");
    open("for (int ii = 0; ii < " + TM + "; ++ii)");
    line("#pragma unroll");
    open("for (int jj = 0; jj < " + TN + "; ++jj)");
    line("const " + Idx + " m = m0 + " + rowOf + ", n = n0 + " + colOf + ";");
    epilogue("acc[ii][jj]");
    close();
    close();
  }

  /// Copies one operand's k-slice at k0 into stage s: 16-byte cp.async
  /// copies that fly while the tensor cores work, or element loads.
  void mmaTileCopy(const Operand &o) {
    std::string arr = o.name + "s[s][r][c]";
    if (o.vec) {
      std::string cols8 = std::to_string(o.cols / 8);
      line("#pragma unroll");
      open("for (int i = 0; i < " + std::to_string(o.rows * o.cols / 8 / S.block) + "; ++i)");
      line("const int e = threadIdx.x + i * " + std::to_string(S.block) + ";");
      line("const int r = e / " + cols8 + ", c = e % " + cols8 + " * 8;");
      line("const " + Idx + " " + o.rowVar + " = " + o.row0 + " + r, " + o.colVar + " = " +
           o.col0 + " + c;");
      std::string src = o.param->name + " + (" + o.batch + " + " + o.rowVar + " * " +
                        std::to_string(o.rowStride) + " + " + o.colVar + ")";
      std::string ok = inBounds(o);
      if (ok.empty()) {
        line("mj_cp_async16(&" + arr + ", " + src + ", true);");
      } else {
        line("const bool ok = " + ok + ";");
        line("mj_cp_async16(&" + arr + ", ok ? " + src + " : " + o.param->name + ", ok);");
      }
      close();
      return;
    }
    open("for (int e = threadIdx.x; e < " + std::to_string(o.rows * o.cols) + "; e += " +
         std::to_string(S.block) + ")");
    tileElement(o, "e");
    line(arr + " = " +
         operandLoad(*o.param, o.batch, o.rowVar, o.rowStride, o.colVar, o.colStride,
                     o.rowVar + " < " + o.rowExt + " && " + o.colVar + " < " + o.colExt, false) +
         ";");
    close();
  }

  /// f16/bf16 on the tensor cores: mma.sync m16n8k16 from fragments that
  /// ldmatrix reads out of shared memory, with `stages` k-slices in flight.
  void matmulMma() {
    const KMatmul &mm = *K.matmul;
    std::string bm = std::to_string(S.bm), bn = std::to_string(S.bn), bk = std::to_string(S.bk);
    std::string stages = std::to_string(S.stages);
    unsigned wtm = S.bm / S.warpsM, wtn = S.bn / S.warpsN, mi = wtm / 16, ni = wtn / 8;
    std::string MI = std::to_string(mi), NI = std::to_string(ni);
    line("// " + stages + " stages of the A and B tiles, rows padded by 8 halves against bank "
         "conflicts");
    line("extern __shared__ __align__(16) unsigned char mj_smem[];");
    line("auto As = reinterpret_cast<unsigned short (*)[" + bm + "][" + bk + " + 8]>(mj_smem);");
    line("auto Bs = reinterpret_cast<unsigned short (*)[" + bk + "][" + bn + " + 8]>(mj_smem + " +
         std::to_string(S.stages * S.bm * (S.bk + 8) * 2) + ");");
    line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
    line("const int wm = warp / " + std::to_string(S.warpsN) + ", wn = warp % " +
         std::to_string(S.warpsN) + "; // this warp's " + std::to_string(wtm) + "x" +
         std::to_string(wtn) + " part of the tile");
    line("float acc[" + MI + "][" + NI + "][4];");
    line("#pragma unroll");
    open("for (int mi = 0; mi < " + MI + "; ++mi)");
    line("#pragma unroll");
    line("for (int ni = 0; ni < " + NI + "; ++ni) acc[mi][ni][0] = acc[mi][ni][1] = "
         "acc[mi][ni][2] = acc[mi][ni][3] = 0.0f;");
    close();
    line("// copies the k-slice starting at k0 of both tiles into stage s");
    open("auto loadTiles = [&](int s, " + Idx + " k0)");
    mmaTileCopy(operand(true));
    mmaTileCopy(operand(false));
    --Indent;
    line("};");
    std::string mmaFn = mm.dtype == DType::BF16 ? "mj_mma_bf16" : "mj_mma_f16";
    line("const int kTiles = (" + std::to_string(mm.K) + " + " + bk + " - 1) / " + bk + ";");
    line("#pragma unroll");
    open("for (int s = 0; s < " + std::to_string(S.stages - 1) + "; ++s)");
    line("if (s < kTiles) loadTiles(s, (" + Idx + ")s * " + bk + ");");
    line("mj_cp_async_commit(); // one group per slice, empty ones included");
    close();
    open("for (int t = 0; t < kTiles; ++t)");
    line("mj_cp_async_wait<" + std::to_string(S.stages - 2) + ">(); // slice t has landed");
    line("__syncthreads(); // ... for every thread, and all are done with slice t - 1");
    line("const int next = t + " + std::to_string(S.stages - 1) + ";");
    line("if (next < kTiles) loadTiles(next % " + stages + ", (" + Idx + ")next * " + bk +
         "); // into the stage slice t - 1 used");
    line("mj_cp_async_commit();");
    line("const int s = t % " + stages + ";");
    bool two = S.fragBuffers == 2;
    std::string F = two ? "[f]" : "";
    // The fragments of one 16-deep step: A's rows and B's columns of this warp.
    auto loadFragments = [&](const std::string &f, const std::string &k16) {
      std::string at = two ? "[" + f + "]" : "";
      line("#pragma unroll");
      line("for (int mi = 0; mi < " + MI + "; ++mi) mj_ldmatrix_x4(af" + at + "[mi], &As[s][wm * " +
           std::to_string(wtm) + " + mi * 16 + lane % 16][" + k16 + " + lane / 16 * 8]);");
      line("#pragma unroll");
      open("for (int ni = 0; ni < " + NI + "; ni += 2)");
      line("unsigned r[4];");
      line("mj_ldmatrix_x4_trans(r, &Bs[s][" + k16 + " + lane % 16][wn * " + std::to_string(wtn) +
           " + ni * 8 + lane / 16 * 8]);");
      line("bfr" + at + "[ni][0] = r[0], bfr" + at + "[ni][1] = r[1], bfr" + at +
           "[ni + 1][0] = r[2], bfr" + at + "[ni + 1][1] = r[3];");
      close();
    };
    if (two) {
      line("unsigned af[2][" + MI + "][4], bfr[2][" + NI + "][2]; // this step's fragments and the next's");
      loadFragments("0", "0");
    }
    line("#pragma unroll");
    open("for (int k16 = 0; k16 < " + bk + "; k16 += 16)");
    if (two) {
      line("const int f = k16 / 16 % 2;");
      open("if (k16 + 16 < " + bk + ")");
      loadFragments("f ^ 1", "k16 + 16");
      close();
    } else {
      line("unsigned af[" + MI + "][4], bfr[" + NI + "][2];");
      loadFragments("", "k16");
    }
    line("#pragma unroll");
    open("for (int mi = 0; mi < " + MI + "; ++mi)");
    line("#pragma unroll");
    line("for (int ni = 0; ni < " + NI + "; ++ni) " + mmaFn + "(acc[mi][ni], af" + F + "[mi], bfr" +
         F + "[ni]);");
    close();
    close();
    close();
    line("// epilogue: accumulator c of fragment (mi, ni) holds row lane/4 (+8), column 2*(lane%4) (+1)");
    line("#pragma unroll");
    open("for (int mi = 0; mi < " + MI + "; ++mi)");
    line("#pragma unroll");
    open("for (int ni = 0; ni < " + NI + "; ++ni)");
    line("#pragma unroll");
    open("for (int c = 0; c < 4; ++c)");
    line("const " + Idx + " m = m0 + wm * " + std::to_string(wtm) +
         " + mi * 16 + lane / 4 + c / 2 * 8;");
    line("const " + Idx + " n = n0 + wn * " + std::to_string(wtn) +
         " + ni * 8 + lane % 4 * 2 + c % 2;");
    epilogue("acc[mi][ni][c]");
    close();
    close();
    close();
  }

  /// The epilogue of one output element (m, n): its matmul value, the
  /// elementwise ops after it, the stores.
  void epilogue(const std::string &accExpr) {
    const KMatmul &mm = *K.matmul;
    open("if (m < " + std::to_string(mm.M) + " && n < " + std::to_string(mm.N) + ")");
    for (size_t i = 0; i < K.values.size(); ++i)
      if (K.values[i].kind == KValue::Kind::MatmulResult && Need[i])
        line("const float " + Names[i] + " = " + accExpr + ";" + comment(static_cast<int>(i)));
    LaneCtx lc;
    lc.vec = 1;
    lc.x = K.n;
    lc.extent = mm.N;
    lc.var = "n";
    elementWork(0, lc, "");
    close();
  }

  const Graph &G;
  const FusionPlan &Plan;
  const LoweredKernel &K;
  const Schedule &S;
  std::string Name;
  IndexContext Ctx;
  std::vector<bool> Need;
  std::vector<uint32_t> Use;
  std::string Idx;
  std::string Out;
  int Indent = 0;
  std::vector<std::string> Names;
  llvm::StringSet<> Used;
  std::map<int, std::string> CacheNames, AccNames;
  std::vector<std::string> CacheDecls;
};

} // namespace

std::string kernelName(const Graph &g, const FusionPlan &plan, const LoweredKernel &k,
                       const Schedule &s) {
  const KernelGroup &kg = plan.kernels[k.index];
  std::set<OpKind> ops;
  std::vector<std::string> order;
  int reductions = 0, sums = 0;
  for (ValueId h : kg.held) {
    const Node &n = g.node(h);
    if (!isElementwise(n.op) && n.cls() != OpClass::Reduce)
      continue;
    if (n.cls() == OpClass::Reduce) {
      ++reductions;
      sums += n.op == OpKind::Sum || n.op == OpKind::Mean;
    }
    if (ops.insert(n.op).second)
      order.push_back(opName(n.op).str());
  }
  std::string suffix = "_k" + std::to_string(k.index);
  if (kg.kind == KernelKind::Matmul) {
    std::string n = "mm";
    for (size_t i = 0; i < order.size() && i < 4; ++i)
      n += "_" + order[i];
    return n + suffix;
  }
  if (kg.kind == KernelKind::Pointwise) {
    if (order.empty())
      return "copy" + suffix;
    std::string n = "poi";
    for (size_t i = 0; i < order.size() && i < 4; ++i)
      n += "_" + order[i];
    return n + suffix;
  }
  std::string what;
  auto has = [&](OpKind o) { return ops.count(o) > 0; };
  if (has(OpKind::Max) && has(OpKind::Exp) && has(OpKind::Sum) && has(OpKind::Div))
    what = "softmax";
  else if (has(OpKind::Max) && has(OpKind::Exp) && has(OpKind::Sum) && has(OpKind::Log))
    what = "logsumexp";
  else if (sums == 2 && reductions == 2 && has(OpKind::Rsqrt))
    what = "layernorm";
  else if (sums == 1 && reductions == 1 && has(OpKind::Rsqrt))
    what = "rmsnorm";
  else {
    what = "red";
    std::set<OpKind> seen;
    for (ValueId h : kg.held) {
      const Node &n = g.node(h);
      if (n.cls() == OpClass::Reduce && seen.insert(n.op).second)
        what += "_" + opName(n.op).str();
    }
  }
  return what + (s.kind == ScheduleKind::OuterCol ? "_col" : "_row") + suffix;
}

EmittedKernel emitKernel(const Graph &g, const FusionPlan &plan, const LoweredKernel &k,
                         const Schedule &s, const std::string &name) {
  Emitter e(g, plan, k, s, name);
  return EmittedKernel{name, e.run()};
}

} // namespace minijit
