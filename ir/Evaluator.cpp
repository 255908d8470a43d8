//===- ir/Evaluator.cpp - the CPU reference --------------------------------===//
// Straightforward loops, parallel over chunks of the output; values are read
// and computed as doubles and rounded to their dtype when stored; i64 values
// are read and computed as int64_t (exact, wrapping as the GPU does).
//===----------------------------------------------------------------------===//
#include "ir/Evaluator.h"

#include "ir/Autodiff.h"
#include "ir/Bind.h"
#include "ir/Error.h"
#include "ir/EvaluatorInternal.h"
#include "ir/Philox.h"
#include "ir/Printer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <cmath>
#include <limits>
#include <new>

namespace minijit {

namespace {

using detail::wrap32;

/// Integer arithmetic on values held as doubles: i32 wraps modulo 2^32, i64
/// modulo 2^64 (exact while the values fit a double; the evaluator computes
/// i64 tensors in int64_t, elementwiseI64, and folded literals are at most
/// 2^53).
double applyInt(OpKind op, llvm::ArrayRef<double> args, bool is64) {
  int64_t a = toInt64(args[0]);
  int64_t b = args.size() > 1 ? toInt64(args[1]) : 0;
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  auto wrap = [&](uint64_t v) -> double {
    return is64 ? static_cast<double>(static_cast<int64_t>(v))
                : wrap32(static_cast<int64_t>(v));
  };
  switch (op) {
  case OpKind::Neg: return wrap(0 - ua);
  case OpKind::Abs: return a < 0 ? wrap(0 - ua) : wrap(ua);
  case OpKind::Relu: return static_cast<double>(a > 0 ? a : 0);
  case OpKind::Add: return wrap(ua + ub);
  case OpKind::Sub: return wrap(ua - ub);
  case OpKind::Mul: return wrap(ua * ub);
  case OpKind::Div: return b == 0 ? 0 : b == -1 ? wrap(0 - ua) : wrap(static_cast<uint64_t>(a / b));
  case OpKind::Maximum: return static_cast<double>(std::max(a, b));
  case OpKind::Minimum: return static_cast<double>(std::min(a, b));
  default: break;
  }
  llvm_unreachable("not an integer arithmetic op");
}

/// Two's-complement wrapping arithmetic in 64 bits (unsigned, so no overflow).
int64_t wrap64(uint64_t v) { return static_cast<int64_t>(v); }

/// An elementwise op of i64 operands (or a cast to or from i64), exact.
/// Arguments are int64 except a cast's float operand, passed in `fa`.
int64_t applyI64(const Node &n, DType from, llvm::ArrayRef<int64_t> args, double fa,
                 double &floatResult, bool &isFloatResult) {
  int64_t a = args[0], b = args.size() > 1 ? args[1] : 0;
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  isFloatResult = false;
  switch (n.op) {
  case OpKind::Neg: return wrap64(0 - ua);
  case OpKind::Abs: return a < 0 ? wrap64(0 - ua) : a;
  case OpKind::Relu: return a > 0 ? a : 0;
  case OpKind::Add: return wrap64(ua + ub);
  case OpKind::Sub: return wrap64(ua - ub);
  case OpKind::Mul: return wrap64(ua * ub);
  case OpKind::Div: return b == 0 ? 0 : b == -1 ? wrap64(0 - ua) : a / b;
  case OpKind::Maximum: return std::max(a, b);
  case OpKind::Minimum: return std::min(a, b);
  case OpKind::Eq: return a == b;
  case OpKind::Ne: return a != b;
  case OpKind::Lt: return a < b;
  case OpKind::Le: return a <= b;
  case OpKind::Gt: return a > b;
  case OpKind::Ge: return a >= b;
  case OpKind::Where: return args[0] != 0 ? args[1] : args[2];
  case OpKind::Cast:
    if (n.dtype == DType::I64) // from a float saturates (cvt.rzi.s64); from i32 or bool exact
      return isFloat(from) ? toInt64(fa) : a;
    if (n.dtype == DType::I32) // keeps the low 32 bits, as C, numpy and PyTorch do
      return static_cast<int32_t>(static_cast<uint32_t>(ua));
    if (n.dtype == DType::Bool)
      return a != 0;
    // to a float: one rounding to f32 (cvt.rn.f32.s64), then to f16/bf16
    isFloatResult = true;
    floatResult = roundToDType(static_cast<double>(static_cast<float>(a)), n.dtype);
    return 0;
  default: break;
  }
  llvm_unreachable("not an op of i64 operands");
}

} // namespace

double applyElementwise(const Node &n, DType operandType, std::span<const double> operands) {
  llvm::ArrayRef<double> args(operands.data(), operands.size());
  double a = args.empty() ? 0 : args[0];
  double b = args.size() > 1 ? args[1] : 0;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  bool intArith = isInteger(operandType), is64 = operandType == DType::I64;
  switch (n.op) {
  case OpKind::Neg: return intArith ? applyInt(n.op, args, is64) : -a;
  case OpKind::Abs: return intArith ? applyInt(n.op, args, is64) : std::fabs(a);
  case OpKind::Exp: return std::exp(a);
  case OpKind::Exp2: return std::exp2(a);
  case OpKind::Expm1: return std::expm1(a);
  case OpKind::Log: return std::log(a);
  case OpKind::Log2: return std::log2(a);
  case OpKind::Log1p: return std::log1p(a);
  case OpKind::Sqrt: return std::sqrt(a);
  case OpKind::Rsqrt: return 1.0 / std::sqrt(a);
  case OpKind::Sin: return std::sin(a);
  case OpKind::Cos: return std::cos(a);
  case OpKind::Tanh: return std::tanh(a);
  case OpKind::Sigmoid: return 1.0 / (1.0 + std::exp(-a));
  case OpKind::Erf: return std::erf(a);
  case OpKind::Relu:
    if (intArith)
      return applyInt(n.op, args, is64);
    return std::isnan(a) ? a : (a > 0 ? a : 0.0);
  case OpKind::Recip: return 1.0 / a;
  case OpKind::Floor: return std::floor(a);
  case OpKind::Ceil: return std::ceil(a);
  case OpKind::RoundTf32: return roundToTf32(static_cast<float>(a));
  case OpKind::Not: return a == 0 ? 1 : 0;
#ifdef MINIJIT_TEST_FAKE_OP
  case OpKind::FakeCbrt: return std::cbrt(a);
#endif
  case OpKind::Add: return intArith ? applyInt(n.op, args, is64) : a + b;
  case OpKind::Sub: return intArith ? applyInt(n.op, args, is64) : a - b;
  case OpKind::Mul: return intArith ? applyInt(n.op, args, is64) : a * b;
  case OpKind::Div: return intArith ? applyInt(n.op, args, is64) : a / b;
  case OpKind::Pow: return std::pow(a, b);
  case OpKind::Maximum:
    if (intArith)
      return applyInt(n.op, args, is64);
    return (std::isnan(a) || std::isnan(b)) ? nan : std::max(a, b);
  case OpKind::Minimum:
    if (intArith)
      return applyInt(n.op, args, is64);
    return (std::isnan(a) || std::isnan(b)) ? nan : std::min(a, b);
  case OpKind::Eq: return a == b;
  case OpKind::Ne: return a != b;
  case OpKind::Lt: return a < b;
  case OpKind::Le: return a <= b;
  case OpKind::Gt: return a > b;
  case OpKind::Ge: return a >= b;
  case OpKind::And: return (a != 0 && b != 0) ? 1 : 0;
  case OpKind::Or: return (a != 0 || b != 0) ? 1 : 0;
  case OpKind::Where: return args[0] != 0 ? args[1] : args[2];
  case OpKind::Cast:
    if (is64 && n.dtype == DType::I32) // the low 32 bits, as elementwiseI64
      return wrap32(toInt64(a));
    return roundToDType(a, n.dtype);
  case OpKind::Input:
  case OpKind::Constant:
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Prod:
  case OpKind::Argmax:
  case OpKind::Argmin:
  case OpKind::Cumsum:
  case OpKind::Cumprod:
  case OpKind::Reshape:
  case OpKind::Permute:
  case OpKind::Broadcast:
  case OpKind::Slice:
  case OpKind::Pad:
  case OpKind::Concat:
  case OpKind::Iota:
  case OpKind::Full:
  case OpKind::Flip:
  case OpKind::Rand:
  case OpKind::Randn:
  case OpKind::Dropout:
  case OpKind::Take:
  case OpKind::TakeAlongAxis:
  case OpKind::Matmul:
  case OpKind::Grad:
  case OpKind::Vjp:
    break;
  }
  llvm_unreachable("applyElementwise on a non-elementwise op");
}

namespace {

using detail::broadcastStrides;
using detail::viewReadStrides;
using detail::forRange;
using detail::parallelChunks;
using detail::Strides;

class Evaluator {
public:
  Evaluator(const Graph &g, const EvalOptions &opt) : G(g), Opt(opt), Values(g.size()) {}

  std::vector<HostTensor> run(std::span<const HostTensor> inputs) {
    if (inputs.size() != G.inputs().size())
      throw GraphError(llvm::formatv("graph '{0}' takes {1} inputs, got {2}", G.name(),
                                     G.inputs().size(), inputs.size())
                           .str());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Node &n = G.node(G.inputs()[i]);
      if (inputs[i].dtype() != n.dtype || inputs[i].shape() != n.shape)
        throw GraphError(llvm::formatv("input %{0}: expected {1}, got {2}", n.name,
                                       typeText(n.dtype, n.shape),
                                       typeText(inputs[i].dtype(), inputs[i].shape()))
                             .str());
      Values[G.inputs()[i]] = inputs[i];
    }
    // Free each value after its last use.
    std::vector<size_t> lastUse(G.size(), 0);
    for (size_t i = 0; i < G.size(); ++i)
      for (ValueId o : G.nodes()[i].operands)
        lastUse[o] = i;
    for (ValueId o : G.outputs())
      lastUse[o] = G.size();
    for (size_t i = 0; i < G.size(); ++i) {
      const Node &n = G.nodes()[i];
      if (n.op != OpKind::Input)
        Values[i] = compute(static_cast<ValueId>(i));
      if (Opt.observe)
        Opt.observe(static_cast<ValueId>(i), Values);
      for (ValueId o : n.operands)
        if (lastUse[o] == i)
          Values[o] = HostTensor();
    }
    std::vector<HostTensor> outs;
    for (ValueId o : G.outputs()) {
      const Node &n = G.node(o);
      const HostTensor &v = Values[o];
      if (v.dtype() == n.dtype) {
        outs.push_back(v);
        continue;
      }
      HostTensor r(n.dtype, n.shape);
      parallelChunks(r.numel(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          r.set(i, v.get(i));
      });
      outs.push_back(std::move(r));
    }
    return outs;
  }

private:
  /// The dtype a value is held in: its own, or f32 for an f16/bf16 value a
  /// fused kernel keeps in registers.
  DType heldType(ValueId id) const {
    const Node &n = G.node(id);
    if (!Opt.stored || (*Opt.stored)[id] || !isFloat(n.dtype))
      return n.dtype;
    return DType::F32;
  }

  HostTensor compute(ValueId id) {
    const Node &n = G.node(id);
    switch (n.cls()) {
    case OpClass::Input: llvm_unreachable("inputs are bound, not computed");
    case OpClass::Constant: {
      HostTensor t(heldType(id), n.shape);
      t.set(0, n.value);
      return t;
    }
    case OpClass::Unary:
    case OpClass::Binary:
    case OpClass::Select:
    case OpClass::Cast: return elementwise(id);
    case OpClass::Iota: return iota(id);
    case OpClass::Concat: return concat(id);
    case OpClass::Gather: return gather(id);
    case OpClass::Scan: return detail::scanValues(n, Values[n.operands[0]], heldType(id));
    case OpClass::Reduce:
      return detail::reduceValues(n, Values[n.operands[0]], G.node(n.operands[0]).shape,
                                  heldType(id), Opt.magnitudes);
    case OpClass::View:
      if (n.op == OpKind::Slice || n.op == OpKind::Pad || n.op == OpKind::Flip)
        return sliceOrPad(id);
      return view(id);
    case OpClass::Matmul:
      return detail::matmulValues(n, G.node(n.operands[0]), G.node(n.operands[1]),
                                  Values[n.operands[0]], Values[n.operands[1]], heldType(id),
                                  Opt.magnitudes);
    case OpClass::Random: return random(id);
    case OpClass::Derivative: llvm_unreachable("evaluate() expands grad and vjp first");
    }
    llvm_unreachable("bad op class");
  }

  HostTensor elementwise(ValueId id) {
    const Node &n = G.node(id);
    HostTensor out(heldType(id), n.shape);
    llvm::SmallVector<Strides, 3> strides;
    llvm::SmallVector<const HostTensor *, 3> ins;
    for (ValueId o : n.operands) {
      strides.push_back(broadcastStrides(G.node(o).shape, n.shape));
      ins.push_back(&Values[o]);
    }
    DType operandType = G.node(n.operands.back()).dtype;
    if (operandType == DType::I64 || n.dtype == DType::I64)
      return elementwiseI64(n, std::move(out), strides, ins);
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      double args[3];
      forRange(n.shape, strides, b, e, [&](int64_t i, llvm::ArrayRef<int64_t> off) {
        for (size_t k = 0; k < ins.size(); ++k)
          args[k] = ins[k]->get(off[k]);
        out.set(i, applyElementwise(n, operandType, llvm::ArrayRef<double>(args, ins.size())));
      });
    });
    return out;
  }

  /// An elementwise op with an i64 operand or result: computed in int64_t.
  HostTensor elementwiseI64(const Node &n, HostTensor out, llvm::ArrayRef<Strides> strides,
                            llvm::ArrayRef<const HostTensor *> ins) {
    DType from = G.node(n.operands[0]).dtype;
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      int64_t args[3];
      forRange(n.shape, strides, b, e, [&](int64_t i, llvm::ArrayRef<int64_t> off) {
        for (size_t k = 0; k < ins.size(); ++k)
          args[k] = ins[k]->getI64(off[k]);
        double fa = ins[0]->get(off[0]), fr = 0;
        bool isFloatResult = false;
        int64_t r = applyI64(n, from, llvm::ArrayRef<int64_t>(args, ins.size()), fa, fr,
                             isFloatResult);
        if (isFloatResult)
          out.set(i, fr);
        else
          out.setI64(i, r);
      });
    });
    return out;
  }

  /// Calls f(i, idx) for each element i of `shape` in [b, e) with its
  /// multi-index.
  template <typename F>
  static void forIndices(const Shape &shape, int64_t b, int64_t e, F f) {
    DimVector idx(shape.rank(), 0);
    for (int64_t i = b; i < e; ++i) {
      int64_t rest = i;
      for (unsigned d = shape.rank(); d-- > 0;) {
        idx[d] = rest % shape[d];
        rest /= shape[d];
      }
      f(i, llvm::ArrayRef<int64_t>(idx));
    }
  }

  static int64_t offsetAt(const Shape &s, llvm::ArrayRef<int64_t> idx) {
    int64_t off = 0;
    for (unsigned d = 0; d < s.rank(); ++d)
      off = off * s[d] + idx[d];
    return off;
  }

  HostTensor iota(ValueId id) {
    const Node &n = G.node(id);
    HostTensor out(heldType(id), n.shape);
    if (n.op == OpKind::Full) {
      parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          out.set(i, n.value);
      });
      return out;
    }
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      forIndices(n.shape, b, e, [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
        out.set(i, roundToDType(static_cast<double>(idx[n.axis]), n.dtype));
      });
    });
    return out;
  }

  /// rand, randn, dropout: element i from Philox's words for (seed, offset,
  /// i), as the kernels compute them (ir/Philox.h).
  HostTensor random(ValueId id) {
    const Node &n = G.node(id);
    HostTensor out(heldType(id), n.shape);
    unsigned first = n.op == OpKind::Dropout ? 1 : 0;
    auto seed = static_cast<int32_t>(Values[n.operands[first]].get(0));
    auto offset = static_cast<int32_t>(Values[n.operands[first + 1]].get(0));
    const HostTensor *x = n.op == OpKind::Dropout ? &Values[n.operands[0]] : nullptr;
    float p = static_cast<float>(n.value), scale = dropoutScale(p);
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        std::array<uint32_t, 4> w = randomWords(seed, offset, i);
        if (n.op == OpKind::Rand)
          out.set(i, randOf(w[0], n.dtype));
        else if (n.op == OpKind::Randn)
          out.set(i, normalOf(w[0], w[1]));
        else // dropout: x * scale is exact in double, rounded once as in f32
          out.set(i, uniformOf(w[0]) >= p ? x->get(i) * static_cast<double>(scale) : 0.0);
      }
    });
    return out;
  }

  /// Each element from the operand whose stretch of the axis holds it.
  HostTensor concat(ValueId id) {
    const Node &n = G.node(id);
    HostTensor out(heldType(id), n.shape);
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      DimVector in;
      forIndices(n.shape, b, e, [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
        in.assign(idx.begin(), idx.end());
        for (ValueId o : n.operands) {
          const Shape &s = G.node(o).shape;
          if (in[n.axis] < s[n.axis]) {
            out.copyElement(i, Values[o], offsetAt(s, in));
            return;
          }
          in[n.axis] -= s[n.axis];
        }
        llvm_unreachable("the index is inside the concat's shape");
      });
    });
    return out;
  }

  /// take and take_along_axis, with indices clamped into 0..n-1.
  HostTensor gather(ValueId id) {
    const Node &n = G.node(id);
    const HostTensor &x = Values[n.operands[0]], &ix = Values[n.operands[1]];
    const Shape &xs = G.node(n.operands[0]).shape, &is = G.node(n.operands[1]).shape;
    int64_t size = xs[n.axis];
    auto clamped = [&](int64_t v) { return std::min<int64_t>(std::max<int64_t>(v, 0), size - 1); };
    HostTensor out(heldType(id), n.shape);
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      DimVector in, at;
      forIndices(n.shape, b, e, [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
        in.clear();
        at.clear();
        if (n.op == OpKind::Take) {
          unsigned r = is.rank();
          at.assign(idx.begin() + n.axis, idx.begin() + n.axis + r);
          in.assign(idx.begin(), idx.begin() + n.axis);
          in.push_back(clamped(ix.getI64(offsetAt(is, at))));
          in.insert(in.end(), idx.begin() + n.axis + r, idx.end());
        } else {
          for (unsigned d = 0; d < xs.rank(); ++d)
            at.push_back(is[d] == 1 ? 0 : idx[d]);
          for (unsigned d = 0; d < xs.rank(); ++d)
            in.push_back(d == n.axis ? clamped(ix.getI64(offsetAt(is, at)))
                                     : (xs[d] == 1 ? 0 : idx[d]));
        }
        out.copyElement(i, x, offsetAt(xs, in));
      });
    });
    return out;
  }

  /// slice, pad and flip: each element read at its index moved back into x.
  HostTensor sliceOrPad(ValueId id) {
    const Node &n = G.node(id);
    const HostTensor &x = Values[n.operands[0]];
    const Shape &xs = G.node(n.operands[0]).shape;
    HostTensor out(x.dtype(), n.shape);
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      DimVector in;
      forIndices(n.shape, b, e, [&](int64_t i, llvm::ArrayRef<int64_t> idx) {
        in.assign(idx.begin(), idx.end());
        if (n.op == OpKind::Slice) {
          in[n.axis] = n.start + n.step * idx[n.axis];
          out.copyElement(i, x, offsetAt(xs, in));
          return;
        }
        if (n.op == OpKind::Flip) {
          for (int64_t a : n.axes)
            in[a] = xs[a] - 1 - idx[a];
          out.copyElement(i, x, offsetAt(xs, in));
          return;
        }
        for (unsigned d = 0; d < xs.rank(); ++d) {
          in[d] -= n.before[d];
          if (in[d] < 0 || in[d] >= xs[d]) {
            out.set(i, n.value);
            return;
          }
        }
        out.copyElement(i, x, offsetAt(xs, in));
      });
    });
    return out;
  }

  HostTensor view(ValueId id) {
    const Node &n = G.node(id);
    const HostTensor &in = Values[n.operands[0]];
    const Shape &inShape = G.node(n.operands[0]).shape;
    HostTensor out(in.dtype(), n.shape);
    Strides s = viewReadStrides(n, inShape);
    parallelChunks(out.numel(), [&](int64_t b, int64_t e) {
      forRange(n.shape, {s}, b, e,
               [&](int64_t i, llvm::ArrayRef<int64_t> off) { out.copyElement(i, in, off[0]); });
    });
    return out;
  }

  const Graph &G;
  const EvalOptions &Opt;
  std::vector<HostTensor> Values;
};

} // namespace

namespace {

/// `g` with its named dimensions bound by the inputs' shapes.
Graph boundByInputs(const Graph &g, std::span<const HostTensor> inputs) {
  std::vector<Shape> shapes;
  for (const HostTensor &t : inputs)
    shapes.push_back(t.shape());
  return bindDims(g, bindingsFromInputs(g, shapes));
}

/// Refuses, before anything is allocated, a graph with a value larger than
/// the host can hold (a float value may be held in f32).
void checkHostMemory(const Graph &g) {
  int64_t limit = maxHostTensorBytes();
  for (const Node &n : g.nodes()) {
    int64_t bytes = n.shape.numel() * static_cast<int64_t>(std::max(
                                           dtypeSize(n.dtype), isFloat(n.dtype) ? 4u : 1u));
    if (bytes > limit)
      throw ResourceError(llvm::formatv("%{0} ({1}): {2} bytes, more than the {3} this host can "
                                        "give one tensor (its memory, or ulimit -v); the CPU "
                                        "reference cannot evaluate graph '{4}'",
                                        n.name, typeText(n.dtype, n.shape), bytes, limit, g.name())
                              .str());
  }
}

} // namespace

std::vector<HostTensor> evaluate(const Graph &g, std::span<const HostTensor> inputs,
                                 const EvalOptions &options) {
  if (hasUnboundDims(g)) {
    assert(!options.stored && "`stored` flags the nodes of a bound graph");
    return evaluate(boundByInputs(g, inputs), inputs, options);
  }
  if (hasDerivatives(g)) {
    assert(!options.stored && "`stored` flags the nodes of a graph without derivatives");
    return evaluate(expandAutodiff(g), inputs, options);
  }
  if (g.outputs().empty())
    throw GraphError(llvm::formatv("graph '{0}' has no outputs", g.name()).str());
  checkHostMemory(g);
  try {
    Evaluator e(g, options);
    return e.run(inputs);
  } catch (const std::bad_alloc &) {
    throw ResourceError(llvm::formatv("the CPU reference ran out of memory evaluating graph '{0}'",
                                      g.name())
                            .str());
  }
}

std::vector<OutOfRangeIndices> outOfRangeIndices(const Graph &g,
                                                 std::span<const HostTensor> inputs) {
  if (hasUnboundDims(g))
    return outOfRangeIndices(boundByInputs(g, inputs), inputs);
  if (hasDerivatives(g))
    return outOfRangeIndices(expandAutodiff(g), inputs);
  std::vector<OutOfRangeIndices> found;
  Graph probe = g; // the same values, their indices returned too
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.nodes()[i];
    if (n.cls() != OpClass::Gather)
      continue;
    found.push_back({static_cast<ValueId>(i), 0, 0, g.node(n.operands[0]).shape[n.axis]});
    probe.output(n.operands[1]);
  }
  if (found.empty())
    return found;
  std::vector<HostTensor> outs = evaluate(probe, inputs);
  size_t first = g.outputs().size();
  for (size_t k = 0; k < found.size(); ++k) {
    const HostTensor &idx = outs[first + k];
    found[k].total = idx.numel();
    for (int64_t e = 0; e < idx.numel(); ++e) {
      double v = idx.get(e);
      found[k].outside += v < 0 || v >= static_cast<double>(found[k].size);
    }
  }
  return found;
}

std::vector<HostTensor> randomInputs(const Graph &g, uint64_t seed, const std::vector<bool> *skip) {
  if (hasUnboundDims(g))
    throw GraphError("graph '" + g.name() + "' has named dimensions without sizes (" +
                     llvm::join(dimNames(g), ", ") +
                     "): bind them first (bindDims, or --dim NAME=SIZE)");
  std::vector<HostTensor> ins;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Node &n = g.node(g.inputs()[i]);
    if (skip && (*skip)[i]) {
      ins.emplace_back();
      continue;
    }
    try {
      ins.push_back(HostTensor::random(n.dtype, n.shape, seed * 1000003ull + i));
    } catch (const ResourceError &e) {
      throw ResourceError("random input %" + n.name + ": " + e.what());
    }
  }
  return ins;
}

Tolerance toleranceFor(const Graph &g, ValueId out) {
  if (hasDerivatives(g)) { // judge the nodes that compute it
    auto it = llvm::find(g.outputs(), out);
    assert(it != g.outputs().end() && "the tolerance of a graph output");
    Graph expanded = expandAutodiff(g);
    return toleranceFor(expanded, expanded.outputs()[it - g.outputs().begin()]);
  }
  const Node &o = g.node(out);
  if (!isFloat(o.dtype))
    return Tolerance{0};
  if (o.dtype != DType::F32)
    return Tolerance{1e-2};
  // Per value: the longest reduction (or matmul K) feeding it and how many
  // reductions are chained on the way; f32 rounding grows with both.
  std::vector<int64_t> longest(g.size(), 1);
  std::vector<int> depth(g.size(), 0);
  bool anyHalf = false;
  std::vector<bool> cone(g.size(), false);
  cone[out] = true;
  for (size_t i = g.size(); i-- > 0;)
    if (cone[i])
      for (ValueId p : g.nodes()[i].operands)
        cone[p] = true;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!cone[i])
      continue;
    const Node &n = g.nodes()[i];
    if (n.dtype == DType::F16 || n.dtype == DType::BF16)
      anyHalf = true;
    for (ValueId p : n.operands) {
      longest[i] = std::max(longest[i], longest[p]);
      depth[i] = std::max(depth[i], depth[p]);
    }
    int64_t k = 0;
    if (n.cls() == OpClass::Reduce) {
      k = 1;
      for (int64_t a : n.axes)
        k *= g.node(n.operands[0]).shape[a];
    } else if (n.cls() == OpClass::Scan) {
      k = n.shape[n.axis];
    } else if (n.cls() == OpClass::Matmul) {
      const Shape &as = g.node(n.operands[0]).shape;
      k = as[as.rank() - 1];
    }
    if (k > 0) {
      longest[i] = std::max(longest[i], k);
      ++depth[i];
    }
  }
  if (anyHalf) // an f32 result computed from 16-bit values inherits their error
    return Tolerance{1e-2};
  double perStage = 1e-5 * std::max(1.0, std::sqrt(static_cast<double>(longest[out])) / 8);
  return Tolerance{perStage * std::max(1, depth[out])};
}

} // namespace minijit
