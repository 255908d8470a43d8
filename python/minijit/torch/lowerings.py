"""The one table from ATen ops to minijit ops.

`LOWERINGS[op]` is a function `(ctx, node) -> Value | tuple[Value, ...]` that emits
the minijit ops computing the ATen node `node` through `ctx.e` (an Emitter). It
raises Unsupported with a reason when this particular node cannot be taken (a
dtype, a mode, a shape): the partitioner asks the same function, so a node is
offered to minijit exactly when its lowering succeeds.

Dtypes follow the node's `meta["val"]`: operands are cast to the dtype PyTorch
computes in (type promotion is explicit in minijit); int64 is minijit's i64.

This file holds the table, its helpers, the elementwise ops and the constants;
lowerings_nn.py (reductions, normalizations), lowerings_pool.py (pooling) and
lowerings_shape.py (products, views, gathers) add their entries to the same table.
"""

import math

import torch

from .emitter import FLOATS, Unsupported, Value, dimProduct

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
    (aten.floor.default, "floor"), (aten.ceil.default, "ceil"), (aten.log1p.default, "log1p"),
    (aten.expm1.default, "expm1"),
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


@lowers(aten.elu.default)
def lowerElu(ctx, node):
    """scale * x where x > 0, else alpha * scale * expm1(x * input_scale); selu is
    elu with its two constants, celu reaches the table as expm1 and where."""
    x = ctx.tensor(node.args[0])
    alpha, scale, inputScale = kw(node, 1, "alpha", 1.0), kw(node, 2, "scale", 1.0), kw(node, 3, "input_scale", 1.0)
    if any(isinstance(a, torch.fx.Node) for a in (alpha, scale, inputScale)):
        raise Unsupported("elu with coefficients computed at run time")
    e = ctx.e
    out = outDtype(node)
    xf = e.cast(x, "f32")
    negative = e.unary("expm1", e.binary("mul", xf, float(inputScale)) if inputScale != 1 else xf)
    negative = e.binary("mul", negative, float(alpha) * float(scale))
    positive = e.binary("mul", xf, float(scale)) if scale != 1 else xf
    return e.cast(e.where(e.binary("gt", xf, 0), positive, negative), out)


@lowers(aten.isnan.default, aten.isinf.default)
def lowerIsNanInf(ctx, node):
    """isnan: x != x; isinf: |x| == inf; both false for integers and bools."""
    x = ctx.tensor(node.args[0])
    if x.dtype not in FLOATS or node.target is aten.isnan.default:
        return ctx.e.binary("ne", x, x)
    return ctx.e.binary("eq", ctx.e.unary("abs", x), math.inf)


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


@lowers(aten.copy.default)
def lowerCopyInto(ctx, node):
    """The functional copy(self, src): src broadcast to self's shape in self's dtype
    (what an in-place `copy_` of a buffer, a running statistic, becomes)."""
    src = ctx.tensor(node.args[1])
    return ctx.e.cast(ctx.e.broadcast(src, shapeOf(outVal(node))), outDtype(node))


# Constants -----------------------------------------------------------------

FILL_VALUES = {aten.zeros_like.default: 0, aten.ones_like.default: 1, aten.new_zeros.default: 0,
               aten.new_ones.default: 1}


@lowers(aten.full.default, aten.scalar_tensor.default, aten.full_like.default, aten.zeros_like.default,
        aten.ones_like.default, aten.new_full.default, aten.new_zeros.default, aten.new_ones.default)
def lowerFull(ctx, node):
    """A tensor of one value, its shape and dtype as PyTorch traced them (the
    *_like and new_* forms read no element of their tensor argument)."""
    if node.target in FILL_VALUES:
        value = FILL_VALUES[node.target]
    elif node.target is aten.scalar_tensor.default:
        value = node.args[0]
    else:
        value = node.args[2] if node.target is aten.new_full.default else node.args[1]
    if isinstance(value, torch.fx.Node):
        raise Unsupported("a fill value computed at run time")
    val = outVal(node)
    dtype = mjDtype(val.dtype)
    shape = shapeOf(val)
    if dtype != "i64":
        return ctx.e.reshape(ctx.e.full(shape if shape else (1,), value, dtype), shape)
    # minijit's full has no i64: iota * 0 + value.
    zero = ctx.e.binary("mul", ctx.e.iota(shape if shape else (1,), 0, "i32"), 0)
    return ctx.e.reshape(ctx.e.binary("add", ctx.e.cast(zero, dtype), value), shape)


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



# PyTorch's fused attention kernels, which the trace reaches only where
# compiler.sdpaAsOps leaves scaled_dot_product_attention to PyTorch.
ATTENTION_LEFT = ("attention in f32, with a gradient or with dropout stays PyTorch's fused kernel "
                  "(minijit's f32 attention on the CUDA cores trails it at most head dims; the backward reads the "
                  "kernel's own statistics); in f16 and bf16 without them minijit runs it as one "
                  "attention kernel")

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
    "_scaled_dot_product_flash_attention": ATTENTION_LEFT,
    "_scaled_dot_product_efficient_attention": ATTENTION_LEFT,
    "_scaled_dot_product_cudnn_attention": ATTENTION_LEFT,
    "_scaled_dot_product_flash_attention_for_cpu": ATTENTION_LEFT,
}


# The table's other parts register their entries into LOWERINGS when imported.
from . import lowerings_nn, lowerings_pool, lowerings_shape  # noqa: E402,F401
