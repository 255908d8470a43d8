"""The one table from ATen ops to minijit ops.

`LOWERINGS[op]` is a function `(ctx, node) -> Value | tuple[Value, ...]` that emits
the minijit ops computing the ATen node `node` through `ctx.e` (an Emitter). It
raises Unsupported with a reason when this particular node cannot be taken (a
dtype, a mode, a shape): the partitioner asks the same function, so a node is
offered to minijit exactly when its lowering succeeds.

Dtypes follow the node's `meta["val"]`: operands are cast to the dtype PyTorch
computes in (type promotion is explicit in minijit); int64 is minijit's i64.
"""

import math
import operator

import torch

from .emitter import FLOATS, Unsupported, Value, dimProduct, normAxis

aten = torch.ops.aten

TORCH_TO_MJ = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
}


def mjDtype(dtype):
    if dtype not in TORCH_TO_MJ:
        raise Unsupported(f"dtype {str(dtype).replace('torch.', '')}")
    return TORCH_TO_MJ[dtype]


def dimOf(size):
    """An int or SymInt size as a dimension of the text format."""
    if isinstance(size, int):
        return size
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        if expr.is_Integer:
            return int(expr)
        if expr.is_Symbol:
            return str(expr)
        if expr.is_Mul and all(a.is_Symbol or a.is_Integer for a in expr.args):
            return dimProduct([int(a) if a.is_Integer else str(a) for a in expr.args])
        raise Unsupported(f"the size {expr} (minijit names products of sizes only)")
    raise Unsupported(f"the size {size!r}")


def shapeOf(val):
    return tuple(dimOf(s) for s in val.shape)


def outVal(node, index=None):
    val = node.meta.get("val")
    if index is not None:
        val = val[index]
    if not isinstance(val, torch.Tensor):
        raise Unsupported("no tensor metadata on the node")
    return val


class Context:
    """What a lowering sees: the emitter and the Values of the node's inputs."""

    def __init__(self, emitter, env):
        self.e = emitter
        self.env = env

    def v(self, arg):
        """An argument as a Value, a Python number, or a list of them."""
        if isinstance(arg, torch.fx.Node):
            if arg not in self.env:
                raise Unsupported(f"the input {arg.name} is not a tensor minijit holds")
            return self.env[arg]
        if isinstance(arg, (list, tuple)):
            return [self.v(a) for a in arg]
        if isinstance(arg, (bool, int, float)):
            return arg
        if arg is None:
            return None
        raise Unsupported(f"an argument of type {type(arg).__name__}")

    def tensor(self, arg):
        x = self.v(arg)
        if not isinstance(x, Value):
            raise Unsupported("a scalar where a tensor is expected")
        return x

    def to(self, x, dtype):
        return self.e.cast(x, dtype) if isinstance(x, Value) else x


def kw(node, index, name, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def computeDtype(node, *args):
    """The dtype PyTorch computes a pointwise op in, from its operands."""
    samples = []
    for a in args:
        if isinstance(a, torch.fx.Node):
            val = a.meta.get("val")
            if isinstance(val, torch.Tensor):
                samples.append(torch.empty((1,) if val.dim() else (), dtype=val.dtype))
            else:
                raise Unsupported(f"the operand {a.name} is not a tensor")
        else:
            samples.append(a)
    tensors = [s for s in samples if isinstance(s, torch.Tensor)]
    if not tensors:
        raise Unsupported("no tensor operand")
    result = tensors[0].dtype
    if len(samples) > 1:
        result = torch.result_type(samples[0], samples[1])
    for s in samples[2:]:
        result = torch.promote_types(result, torch.result_type(tensors[0], s))
    return result


def outDtype(node, index=None):
    return mjDtype(outVal(node, index).dtype)


# Elementwise ---------------------------------------------------------------

LOWERINGS = {}


def lowers(*ops):
    def register(fn):
        for op in ops:
            LOWERINGS[op] = fn
        return fn
    return register


def unaryLowering(mjOp):
    def lower(ctx, node):
        x = ctx.tensor(node.args[0])
        out = outDtype(node)
        return ctx.e.cast(ctx.e.unary(mjOp, ctx.e.cast(x, out if out != "bool" else x.dtype)), out)
    return lower


for _op, _mj in [
    (aten.neg.default, "neg"), (aten.abs.default, "abs"), (aten.exp.default, "exp"),
    (aten.exp2.default, "exp2"), (aten.log.default, "log"), (aten.log2.default, "log2"),
    (aten.sqrt.default, "sqrt"), (aten.rsqrt.default, "rsqrt"), (aten.sin.default, "sin"),
    (aten.cos.default, "cos"), (aten.tanh.default, "tanh"), (aten.sigmoid.default, "sigmoid"),
    (aten.erf.default, "erf"), (aten.relu.default, "relu"), (aten.reciprocal.default, "recip"),
    (aten.floor.default, "floor"), (aten.ceil.default, "ceil"),
]:
    LOWERINGS[_op] = unaryLowering(_mj)


@lowers(aten.logical_not.default, aten.bitwise_not.default)
def lowerNot(ctx, node):
    x = ctx.tensor(node.args[0])
    if x.dtype != "bool":
        if node.target is aten.bitwise_not.default:
            raise Unsupported("bitwise_not of an integer")
        x = ctx.e.binary("ne", x, 0)
    return ctx.e.unary("not", x)


def binaryLowering(mjOp, reverse=False):
    def lower(ctx, node):
        a, b = node.args[0], node.args[1]
        alpha = node.kwargs.get("alpha", 1)
        dtype = mjDtype(computeDtype(node, a, b))
        x, y = ctx.to(ctx.v(a), dtype), ctx.to(ctx.v(b), dtype)
        if reverse:  # rsub(a, b, alpha) = b - alpha * a
            x, y = y, x
        if alpha != 1:
            y = ctx.e.binary("mul", y, alpha) if isinstance(y, Value) else y * alpha
        result = ctx.e.binary(mjOp, x, y)
        return ctx.e.cast(result, outDtype(node))
    return lower


for _ops, _mj in [
    ((aten.add.Tensor, aten.add.Scalar), "add"),
    ((aten.sub.Tensor, aten.sub.Scalar), "sub"),
    ((aten.mul.Tensor, aten.mul.Scalar), "mul"),
    ((aten.maximum.default,), "maximum"),
    ((aten.minimum.default,), "minimum"),
    ((aten.eq.Tensor, aten.eq.Scalar), "eq"), ((aten.ne.Tensor, aten.ne.Scalar), "ne"),
    ((aten.lt.Tensor, aten.lt.Scalar), "lt"), ((aten.le.Tensor, aten.le.Scalar), "le"),
    ((aten.gt.Tensor, aten.gt.Scalar), "gt"), ((aten.ge.Tensor, aten.ge.Scalar), "ge"),
]:
    for _op in _ops:
        LOWERINGS[_op] = binaryLowering(_mj)
LOWERINGS[aten.rsub.Scalar] = binaryLowering("sub", reverse=True)
LOWERINGS[aten.rsub.Tensor] = binaryLowering("sub", reverse=True)


@lowers(aten.pow.Tensor_Scalar)
def lowerPowScalar(ctx, node):
    x, p = ctx.tensor(node.args[0]), node.args[1]
    out = outDtype(node)
    if out not in FLOATS:
        raise Unsupported("pow of integers")
    x = ctx.e.cast(x, out)
    if p == 2:
        return ctx.e.binary("mul", x, x)
    if p == 1:
        return x
    if p == 0.5:
        return ctx.e.unary("sqrt", x)
    if p == -0.5:
        return ctx.e.unary("rsqrt", x)
    if p == -1:
        return ctx.e.unary("recip", x)
    if p == 3:
        return ctx.e.binary("mul", ctx.e.binary("mul", x, x), x)
    return ctx.e.binary("pow", x, p)


@lowers(aten.pow.Tensor_Tensor)
def lowerPowTensor(ctx, node):
    out = outDtype(node)
    if out not in FLOATS:
        raise Unsupported("pow of integers")
    return binaryLowering("pow")(ctx, node)


@lowers(aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.true_divide.Tensor)
def lowerDiv(ctx, node):
    a, b = node.args[0], node.args[1]
    mode = kw(node, 2, "rounding_mode") if node.target is aten.div.Tensor_mode else None
    out = outDtype(node)
    dtype = out if mode is None else mjDtype(computeDtype(node, a, b))
    if mode is not None and dtype not in FLOATS:
        raise Unsupported(f"integer division with rounding_mode={mode}")
    x, y = ctx.to(ctx.v(a), dtype), ctx.to(ctx.v(b), dtype)
    q = ctx.e.binary("div", x, y)
    if mode == "floor":
        q = ctx.e.unary("floor", q)
    elif mode == "trunc":
        q = ctx.e.where(ctx.e.binary("lt", q, 0), ctx.e.unary("ceil", q), ctx.e.unary("floor", q))
    return ctx.e.cast(q, out)


@lowers(aten.logical_and.default, aten.logical_or.default, aten.bitwise_and.Tensor,
        aten.bitwise_or.Tensor, aten.logical_xor.default, aten.bitwise_xor.Tensor)
def lowerLogical(ctx, node):
    a, b = ctx.tensor(node.args[0]), ctx.tensor(node.args[1])
    bitwise = node.target in (aten.bitwise_and.Tensor, aten.bitwise_or.Tensor, aten.bitwise_xor.Tensor)
    if bitwise and (a.dtype != "bool" or b.dtype != "bool"):
        raise Unsupported("bitwise ops on integers")
    a = a if a.dtype == "bool" else ctx.e.binary("ne", a, 0)
    b = b if b.dtype == "bool" else ctx.e.binary("ne", b, 0)
    name = node.target.overloadpacket.__name__
    if "xor" in name:
        return ctx.e.binary("ne", a, b)
    return ctx.e.binary("and" if "and" in name else "or", a, b)


@lowers(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def lowerWhere(ctx, node):
    cond = ctx.tensor(node.args[0])
    dtype = outDtype(node)
    a, b = ctx.to(ctx.v(node.args[1]), dtype), ctx.to(ctx.v(node.args[2]), dtype)
    if not isinstance(a, Value) and not isinstance(b, Value):
        raise Unsupported("where of two scalars")
    return ctx.e.where(cond, a, b)


@lowers(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default, aten.hardtanh.default)
def lowerClamp(ctx, node):
    x = ctx.tensor(node.args[0])
    out = outDtype(node)
    x = ctx.e.cast(x, out)
    if node.target is aten.clamp_max.default:
        lo, hi = None, node.args[1]
    elif node.target is aten.clamp_min.default:
        lo, hi = node.args[1], None
    elif node.target is aten.hardtanh.default:
        lo, hi = kw(node, 1, "min_val", -1.0), kw(node, 2, "max_val", 1.0)
    else:
        lo, hi = kw(node, 1, "min"), kw(node, 2, "max")
    if isinstance(lo, torch.fx.Node) or isinstance(hi, torch.fx.Node):
        raise Unsupported("clamp with tensor bounds")
    if lo is not None:
        x = ctx.e.binary("maximum", x, lo)
    if hi is not None:
        x = ctx.e.binary("minimum", x, hi)
    return x


@lowers(aten.leaky_relu.default)
def lowerLeakyRelu(ctx, node):
    x = ctx.tensor(node.args[0])
    slope = kw(node, 1, "negative_slope", 0.01)
    return ctx.e.where(ctx.e.binary("gt", x, 0), x, ctx.e.binary("mul", x, slope))


@lowers(aten.gelu.default)
def lowerGelu(ctx, node):
    x = ctx.tensor(node.args[0])
    approximate = node.kwargs.get("approximate", kw(node, 1, "approximate", "none"))
    out = x.dtype
    e = ctx.e
    x = e.cast(x, "f32")
    if approximate == "tanh":
        inner = e.binary("mul", e.binary("add", x, e.binary("mul", e.binary("mul", e.binary("mul", x, x), x),
                                                             0.044715)), math.sqrt(2.0 / math.pi))
        t = e.unary("tanh", inner)
    else:
        t = e.unary("erf", e.binary("mul", x, 1.0 / math.sqrt(2.0)))
    y = e.binary("mul", e.binary("mul", x, 0.5), e.binary("add", t, 1.0))
    return e.cast(y, out)


@lowers(aten.silu.default)
def lowerSilu(ctx, node):
    x = ctx.tensor(node.args[0])
    return ctx.e.cast(ctx.e.binary("mul", ctx.e.cast(x, "f32"), ctx.e.unary("sigmoid", ctx.e.cast(x, "f32"))),
                      x.dtype)


@lowers(aten._to_copy.default, aten.clone.default, aten.alias.default, aten.detach.default,
        aten.lift_fresh_copy.default)
def lowerCopy(ctx, node):
    x = ctx.tensor(node.args[0])
    source = node.args[0].meta.get("val")
    if isinstance(source, torch.Tensor) and source.device != outVal(node).device:
        raise Unsupported("a copy between devices")
    return ctx.e.cast(x, outDtype(node))


if hasattr(torch.ops, "prims") and hasattr(torch.ops.prims, "convert_element_type"):
    @lowers(torch.ops.prims.convert_element_type.default)
    def lowerConvert(ctx, node):
        return ctx.e.cast(ctx.tensor(node.args[0]), outDtype(node))


# Constants -----------------------------------------------------------------

@lowers(aten.full.default, aten.scalar_tensor.default)
def lowerFull(ctx, node):
    value = node.args[1] if node.target is aten.full.default else node.args[0]
    if isinstance(value, torch.fx.Node):
        raise Unsupported("a fill value computed at run time")
    val = outVal(node)
    dtype = mjDtype(val.dtype)
    shape = shapeOf(val)
    # A constant is iota * 0 + value: minijit's literals are operands only.
    zero = ctx.e.iota(shape if shape else (1,), 0, "i32" if dtype in ("i32", "bool") else "f32")
    zero = ctx.e.binary("mul", zero, 0)
    if dtype == "bool":
        c = ctx.e.binary("ne", zero, 1 if value else 0)
    else:
        c = ctx.e.binary("add", ctx.e.cast(zero, dtype), value)
    return ctx.e.reshape(c, shape)


@lowers(aten.arange.start_step, aten.arange.default, aten.arange.start)
def lowerArange(ctx, node):
    val = outVal(node)
    if node.target is aten.arange.default:
        start, step = 0, 1
    else:
        start = node.args[0]
        step = kw(node, 2, "step", 1) if node.target is aten.arange.start_step else 1
    if isinstance(start, torch.fx.Node) or isinstance(step, torch.fx.Node):
        raise Unsupported("arange bounds computed at run time")
    dtype = mjDtype(val.dtype)
    shape = shapeOf(val)
    base = ctx.e.iota(shape, 0, dtype if dtype in ("i32", "i64") else "f32")
    if step != 1:
        base = ctx.e.binary("mul", base, step)
    if start != 0:
        base = ctx.e.binary("add", base, start)
    return ctx.e.cast(base, dtype)


# Reductions ----------------------------------------------------------------

def reduceDims(node, index=1):
    dims = kw(node, index, "dim")
    if dims is None or dims == []:
        return None
    if isinstance(dims, int):
        return [dims]
    return list(dims)


def reductionLowering(mjOp):
    def lower(ctx, node):
        x = ctx.tensor(node.args[0])
        out = outDtype(node)
        keep = bool(kw(node, 2, "keepdim", False))
        if node.target in (aten.sum.default, aten.mean.default, aten.prod.default, aten.amax.default,
                           aten.amin.default):
            dims, keep = None, False
            if node.target in (aten.amax.default, aten.amin.default):
                dims = reduceDims(node)
                keep = bool(kw(node, 2, "keepdim", False))
        else:
            dims = reduceDims(node)
        if node.target is aten.prod.dim_int:
            dims = [node.args[1]]
        if mjOp == "mean" or out in FLOATS:
            x = ctx.e.cast(x, out if out in FLOATS else "f32")
        elif x.dtype == "bool":
            x = ctx.e.cast(x, "i64" if out == "i64" else "i32")
        y = ctx.e.reduce(mjOp, x, dims, keep)
        return ctx.e.cast(y, out)
    return lower


for _ops, _mj in [
    ((aten.sum.dim_IntList, aten.sum.default), "sum"),
    ((aten.mean.dim, aten.mean.default), "mean"),
    ((aten.amax.default,), "max"),
    ((aten.amin.default,), "min"),
    ((aten.prod.default, aten.prod.dim_int), "prod"),
]:
    for _op in _ops:
        LOWERINGS[_op] = reductionLowering(_mj)


@lowers(aten.any.dim, aten.any.dims, aten.any.default, aten.all.dim, aten.all.default)
def lowerAnyAll(ctx, node):
    x = ctx.tensor(node.args[0])
    isAny = node.target.overloadpacket is aten.any
    flags = ctx.e.cast(x if x.dtype == "bool" else ctx.e.binary("ne", x, 0), "i32")
    dims = None if node.target in (aten.any.default, aten.all.default) else reduceDims(node)
    keep = bool(kw(node, 2, "keepdim", False)) if dims is not None else False
    y = ctx.e.reduce("max" if isAny else "min", flags, dims, keep)
    return ctx.e.binary("ne", y, 0)


@lowers(aten.var.correction, aten.var.dim)
def lowerVar(ctx, node):
    x = ctx.tensor(node.args[0])
    out = outDtype(node)
    dims = reduceDims(node)
    if node.target is aten.var.dim:
        correction = 1 if kw(node, 2, "unbiased", True) else 0
        keep = bool(kw(node, 3, "keepdim", False))
    else:
        correction = node.kwargs.get("correction", 1)
        correction = 1 if correction is None else correction
        keep = bool(node.kwargs.get("keepdim", False))
    e = ctx.e
    xf = e.cast(x, "f32")
    axes = [normAxis(d, x.rank) for d in dims] if dims is not None else list(range(x.rank))
    count = dimProduct([x.shape[a] for a in axes])
    if not isinstance(count, int):
        raise Unsupported("a variance over a named dimension")
    mu = e.reduce("mean", xf, axes, True)
    d = e.binary("sub", xf, mu)
    s = e.reduce("sum", e.binary("mul", d, d), axes, keep)
    return e.cast(e.binary("div", s, max(count - correction, 0)), out)


@lowers(aten.argmax.default, aten.argmin.default)
def lowerArg(ctx, node):
    x = ctx.tensor(node.args[0])
    dim = kw(node, 1, "dim")
    keep = bool(kw(node, 2, "keepdim", False))
    if dim is None:
        x = ctx.e.reshape(x, (dimProduct(x.shape),))
        dim, keep = 0, False
    if x.dtype == "bool":
        x = ctx.e.cast(x, "i32")
    return ctx.e.argReduce("argmax" if node.target is aten.argmax.default else "argmin", x, dim, keep)


@lowers(aten.max.dim, aten.min.dim)
def lowerMaxDim(ctx, node):
    x = ctx.tensor(node.args[0])
    dim, keep = node.args[1], bool(kw(node, 2, "keepdim", False))
    isMax = node.target is aten.max.dim
    values = ctx.e.reduce("max" if isMax else "min", x, [dim], keep)
    return values, ctx.e.argReduce("argmax" if isMax else "argmin", x, dim, keep)


@lowers(aten.cumsum.default, aten.cumprod.default)
def lowerScan(ctx, node):
    x = ctx.tensor(node.args[0])
    out = outDtype(node)
    if x.dtype == "bool" or out != x.dtype:
        x = ctx.e.cast(x, out)
    return ctx.e.scan("cumsum" if node.target is aten.cumsum.default else "cumprod", x, node.args[1])


@lowers(aten._softmax.default, aten._log_softmax.default)
def lowerSoftmax(ctx, node):
    x = ctx.tensor(node.args[0])
    dim = node.args[1]
    out = outDtype(node)
    e = ctx.e
    xf = e.cast(x, "f32")
    m = e.reduce("max", xf, [dim], True)
    d = e.binary("sub", xf, m)
    ex = e.unary("exp", d)
    s = e.reduce("sum", ex, [dim], True)
    if node.target is aten._softmax.default:
        y = e.binary("div", ex, s)
    else:
        y = e.binary("sub", d, e.unary("log", s))
    return e.cast(y, out)


@lowers(aten.native_layer_norm.default)
def lowerLayerNorm(ctx, node):
    x = ctx.tensor(node.args[0])
    normalized = list(node.args[1])
    weight, bias, eps = ctx.v(node.args[2]), ctx.v(node.args[3]), node.args[4]
    e = ctx.e
    axes = list(range(x.rank - len(normalized), x.rank))
    xf = e.cast(x, "f32")
    mu = e.reduce("mean", xf, axes, True)
    d = e.binary("sub", xf, mu)
    var = e.reduce("mean", e.binary("mul", d, d), axes, True)
    rstd = e.unary("rsqrt", e.binary("add", var, float(eps)))
    y = e.binary("mul", d, rstd)
    if isinstance(weight, Value):
        y = e.binary("mul", y, e.cast(weight, "f32"))
    if isinstance(bias, Value):
        y = e.binary("add", y, e.cast(bias, "f32"))
    return (e.cast(y, outDtype(node, 0)), e.cast(mu, outDtype(node, 1)), e.cast(rstd, outDtype(node, 2)))


def batchNormParts(ctx, x, weight, bias):
    """Channel axis 1: per-channel values broadcast as [C, 1, ...] over x."""
    e = ctx.e
    channels = x.shape[1]
    perChannel = (channels,) + (1,) * (x.rank - 2)
    axes = [a for a in range(x.rank) if a != 1]

    def spread(v):
        return e.reshape(e.cast(v, "f32"), perChannel)
    return e, axes, spread, (spread(weight) if isinstance(weight, Value) else None,
                             spread(bias) if isinstance(bias, Value) else None)


@lowers(aten._native_batch_norm_legit_functional.default)
def lowerBatchNormTraining(ctx, node):
    """BatchNorm in training: batch statistics, and the running ones updated
    (out, save_mean, save_rstd, new running_mean, new running_var)."""
    x = ctx.tensor(node.args[0])
    weight, bias = ctx.v(node.args[1]), ctx.v(node.args[2])
    runMean, runVar = ctx.tensor(node.args[3]), ctx.tensor(node.args[4])
    training, momentum, eps = node.args[5], node.args[6], node.args[7]
    if not training:
        raise Unsupported("batch norm with training=False in its functional form")
    if x.rank < 2:
        raise Unsupported("batch norm of a vector")
    e, axes, spread, (w, b) = batchNormParts(ctx, x, weight, bias)
    count = dimProduct([x.shape[a] for a in axes])
    if not isinstance(count, int):
        raise Unsupported("batch norm over a named dimension (the running variance's n / (n - 1))")
    xf = e.cast(x, "f32")
    mean = e.reduce("mean", xf, axes, True)
    d = e.binary("sub", xf, mean)
    var = e.reduce("mean", e.binary("mul", d, d), axes, True)
    rstd = e.unary("rsqrt", e.binary("add", var, float(eps)))
    y = e.binary("mul", d, rstd)
    if w is not None:
        y = e.binary("mul", y, w)
    if b is not None:
        y = e.binary("add", y, b)
    channels = (x.shape[1],)
    meanC, varC, rstdC = (e.reshape(v, channels) for v in (mean, var, rstd))
    unbiased = e.binary("mul", varC, count / max(count - 1, 1))
    newMean = e.binary("add", e.binary("mul", e.cast(runMean, "f32"), 1.0 - momentum),
                       e.binary("mul", meanC, float(momentum)))
    newVar = e.binary("add", e.binary("mul", e.cast(runVar, "f32"), 1.0 - momentum),
                      e.binary("mul", unbiased, float(momentum)))
    return (e.cast(y, outDtype(node, 0)), e.cast(meanC, outDtype(node, 1)), e.cast(rstdC, outDtype(node, 2)),
            e.cast(newMean, outDtype(node, 3)), e.cast(newVar, outDtype(node, 4)))


@lowers(aten._native_batch_norm_legit_no_training.default)
def lowerBatchNormEval(ctx, node):
    """BatchNorm in eval mode: the running statistics; the two saved outputs are
    empty tensors, which only PyTorch can make (a graph that reads them keeps
    the node in PyTorch)."""
    x = ctx.tensor(node.args[0])
    weight, bias = ctx.v(node.args[1]), ctx.v(node.args[2])
    runMean, runVar, eps = ctx.tensor(node.args[3]), ctx.tensor(node.args[4]), node.args[6]
    if x.rank < 2:
        raise Unsupported("batch norm of a vector")
    e, axes, spread, (w, b) = batchNormParts(ctx, x, weight, bias)
    rstd = e.unary("rsqrt", e.binary("add", spread(runVar), float(eps)))
    y = e.binary("mul", e.binary("sub", e.cast(x, "f32"), spread(runMean)), rstd)
    if w is not None:
        y = e.binary("mul", y, w)
    if b is not None:
        y = e.binary("add", y, b)
    return (e.cast(y, outDtype(node, 0)), None, None)


# Matmuls -------------------------------------------------------------------

@lowers(aten.mm.default, aten.bmm.default)
def lowerMatmul(ctx, node):
    a, b = ctx.tensor(node.args[0]), ctx.tensor(node.args[1])
    if a.dtype != b.dtype:
        raise Unsupported(f"a matmul of {a.dtype} and {b.dtype}")
    return ctx.e.matmul(a, b)


@lowers(aten.addmm.default, aten.baddbmm.default)
def lowerAddmm(ctx, node):
    bias, a, b = ctx.tensor(node.args[0]), ctx.tensor(node.args[1]), ctx.tensor(node.args[2])
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    e = ctx.e
    y = e.matmul(a, b)
    if alpha != 1:
        y = e.binary("mul", y, alpha)
    if beta == 0:
        return y
    bias = e.cast(bias, y.dtype)
    if beta != 1:
        bias = e.binary("mul", bias, beta)
    return e.binary("add", y, bias)


# Views ---------------------------------------------------------------------

@lowers(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def lowerView(ctx, node):
    return ctx.e.reshape(ctx.tensor(node.args[0]), shapeOf(outVal(node)))


@lowers(aten.expand.default)
def lowerExpand(ctx, node):
    return ctx.e.broadcast(ctx.tensor(node.args[0]), shapeOf(outVal(node)))


@lowers(aten.permute.default)
def lowerPermute(ctx, node):
    return ctx.e.permute(ctx.tensor(node.args[0]), list(node.args[1]))


@lowers(aten.t.default, aten.transpose.int, aten.numpy_T.default)
def lowerTranspose(ctx, node):
    x = ctx.tensor(node.args[0])
    if x.rank < 2:
        return x
    perm = list(range(x.rank))
    if node.target is aten.transpose.int:
        i, j = normAxis(node.args[1], x.rank), normAxis(node.args[2], x.rank)
    else:
        i, j = x.rank - 2, x.rank - 1
        if node.target is aten.numpy_T.default:
            perm = perm[::-1]
            return ctx.e.permute(x, perm)
    perm[i], perm[j] = perm[j], perm[i]
    return ctx.e.permute(x, perm)


@lowers(aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def lowerSqueeze(ctx, node):
    return ctx.e.reshape(ctx.tensor(node.args[0]), shapeOf(outVal(node)))


@lowers(aten.slice.Tensor)
def lowerSlice(ctx, node):
    x = ctx.tensor(node.args[0])
    dim = kw(node, 1, "dim", 0)
    start, end, step = kw(node, 2, "start", None), kw(node, 3, "end", None), kw(node, 4, "step", 1)
    if any(isinstance(a, torch.fx.Node) for a in (start, end, step)):
        raise Unsupported("slice bounds computed at run time")
    axis = normAxis(dim, x.rank)
    size = x.shape[axis]
    start = 0 if start is None else start
    if end is None or (isinstance(size, int) and end >= size) or end >= 2**62:
        if start == 0 and step == 1:
            return x
        if not isinstance(size, int):
            raise Unsupported(f"a slice along the named dimension {size}")
        end = size
    return ctx.e.slice(x, axis, start, end, step)


@lowers(aten.select.int)
def lowerSelect(ctx, node):
    x = ctx.tensor(node.args[0])
    axis = normAxis(node.args[1], x.rank)
    index = node.args[2]
    if isinstance(index, torch.fx.Node):
        raise Unsupported("a select at an index computed at run time")
    size = x.shape[axis]
    if not isinstance(size, int):
        raise Unsupported(f"a select along the named dimension {size}")
    index = index + size if index < 0 else index
    y = ctx.e.slice(x, axis, index, index + 1, 1)
    return ctx.e.reshape(y, x.shape[:axis] + x.shape[axis + 1:])


@lowers(aten.split_with_sizes.default, aten.split.Tensor)
def lowerSplit(ctx, node):
    x = ctx.tensor(node.args[0])
    dim = normAxis(kw(node, 2, "dim", 0), x.rank)
    size = x.shape[dim]
    if not isinstance(size, int):
        raise Unsupported(f"a split along the named dimension {size}")
    if node.target is aten.split.Tensor:
        chunk = node.args[1]
        sizes = [min(chunk, size - s) for s in range(0, size, chunk)]
    else:
        sizes = list(node.args[1])
    outs, start = [], 0
    for s in sizes:
        outs.append(ctx.e.slice(x, dim, start, start + s, 1))
        start += s
    return tuple(outs)


@lowers(aten.cat.default)
def lowerCat(ctx, node):
    values = [ctx.tensor(a) for a in node.args[0]]
    dim = kw(node, 1, "dim", 0)
    dtype = outDtype(node)
    values = [ctx.e.cast(v, dtype) for v in values]
    return ctx.e.concat(values, dim)


@lowers(aten.constant_pad_nd.default)
def lowerPad(ctx, node):
    x = ctx.tensor(node.args[0])
    pads = list(node.args[1])
    value = kw(node, 2, "value", 0)
    before, after = [0] * x.rank, [0] * x.rank
    for i in range(len(pads) // 2):
        axis = x.rank - 1 - i
        before[axis], after[axis] = pads[2 * i], pads[2 * i + 1]
    # Negative pads crop: slice first, then pad the rest.
    for axis in range(x.rank):
        if before[axis] < 0 or after[axis] < 0:
            size = x.shape[axis]
            if not isinstance(size, int):
                raise Unsupported(f"a pad along the named dimension {size}")
            lo, hi = max(0, -before[axis]), size - max(0, -after[axis])
            x = ctx.e.slice(x, axis, lo, hi, 1)
            before[axis], after[axis] = max(0, before[axis]), max(0, after[axis])
    return ctx.e.pad(x, before, after, value)


# Gathers -------------------------------------------------------------------

def indexValue(ctx, arg):
    idx = ctx.tensor(arg)
    if idx.dtype not in ("i32", "i64"):
        raise Unsupported(f"indices of dtype {idx.dtype}")
    return idx


@lowers(aten.embedding.default)
def lowerEmbedding(ctx, node):
    table, idx = ctx.tensor(node.args[0]), indexValue(ctx, node.args[1])
    return ctx.e.take(table, idx, 0)


@lowers(aten.index_select.default)
def lowerIndexSelect(ctx, node):
    x, idx = ctx.tensor(node.args[0]), indexValue(ctx, node.args[2])
    return ctx.e.take(x, idx, node.args[1])


@lowers(aten.gather.default)
def lowerGather(ctx, node):
    x, idx = ctx.tensor(node.args[0]), indexValue(ctx, node.args[2])
    axis = normAxis(node.args[1], x.rank)
    # torch.gather reads x only where idx has elements: crop x's other axes to idx's.
    for a in range(x.rank):
        if a != axis and idx.shape[a] != x.shape[a]:
            if not isinstance(idx.shape[a], int) or not isinstance(x.shape[a], int):
                raise Unsupported("a gather whose index is smaller along a named dimension")
            x = ctx.e.slice(x, a, 0, idx.shape[a], 1)
    return ctx.e.takeAlongAxis(x, idx, axis)


# Tuples --------------------------------------------------------------------

@lowers(operator.getitem)
def lowerGetitem(ctx, node):
    parts = ctx.v(node.args[0])
    if not isinstance(parts, (list, tuple)):
        raise Unsupported("getitem of a tensor")
    return parts[node.args[1]]


# Ops that never go to minijit, with the reason explain() prints.
LEFT_TO_PYTORCH = {
    "native_dropout": "random numbers: minijit's own (Philox) differ from PyTorch's stream, so a result would not match eager",
    "rand": "random numbers: minijit's own (Philox) differ from PyTorch's stream, so a result would not match eager",
    "rand_like": "random numbers: minijit's own (Philox) differ from PyTorch's stream, so a result would not match eager",
    "randn": "random numbers: minijit's own (Philox) differ from PyTorch's stream, so a result would not match eager",
    "bernoulli": "random numbers: minijit's own (Philox) differ from PyTorch's stream, so a result would not match eager",
    "convolution": "convolutions are not in minijit",
    "convolution_backward": "convolutions are not in minijit",
    "index_put": "a scatter (minijit has no scatter)",
    "scatter": "a scatter (minijit has no scatter)",
    "scatter_add": "a scatter (minijit has no scatter)",
    "copy_": "an in-place update of a graph input",
    "_scaled_dot_product_flash_attention": "fused attention stays in PyTorch",
    "_scaled_dot_product_efficient_attention": "fused attention stays in PyTorch",
    "_scaled_dot_product_cudnn_attention": "fused attention stays in PyTorch",
}

