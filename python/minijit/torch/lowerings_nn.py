"""The table's entries for reductions, scans and the normalizations (softmax,
layer, batch, group and instance norm); pooling is in lowerings_pool.py."""

import math

import torch

from .emitter import FLOATS, Unsupported, Value, dimProduct, normAxis
from .lowerings import LOWERINGS, aten, kw, lowers, outDtype

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


@lowers(aten.linalg_vector_norm.default)
def lowerVectorNorm(ctx, node):
    """The p-norm over `dim` (all axes when None), in f32: p = 2, 1, inf, -inf, 0
    (the count of non-zeros) and any other p as (sum |x|^p)^(1/p)."""
    x = ctx.tensor(node.args[0])
    order = kw(node, 1, "ord", 2)
    dims, keep = reduceDims(node, 2), bool(kw(node, 3, "keepdim", False))
    if isinstance(order, torch.fx.Node):
        raise Unsupported("a norm order computed at run time")
    e = ctx.e
    xf = e.cast(x, "f32")
    if order == 2:
        y = e.unary("sqrt", e.reduce("sum", e.binary("mul", xf, xf), dims, keep))
    elif order == 0:
        y = e.reduce("sum", e.cast(e.binary("ne", xf, 0), "f32"), dims, keep)
    elif order in (math.inf, -math.inf):
        y = e.reduce("max" if order > 0 else "min", e.unary("abs", xf), dims, keep)
    elif order == 1:
        y = e.reduce("sum", e.unary("abs", xf), dims, keep)
    else:
        y = e.binary("pow", e.reduce("sum", e.binary("pow", e.unary("abs", xf), float(order)), dims, keep),
                     1.0 / float(order))
    return e.cast(y, outDtype(node))


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


def normalize(e, xf, axes, eps):
    """(x - mean) * rsqrt(var + eps) over `axes` (the biased variance), and the mean,
    variance and rstd kept as size-1 axes: what every norm below computes."""
    mean = e.reduce("mean", xf, axes, True)
    d = e.binary("sub", xf, mean)
    var = e.reduce("mean", e.binary("mul", d, d), axes, True)
    rstd = e.unary("rsqrt", e.binary("add", var, float(eps)))
    return e.binary("mul", d, rstd), mean, var, rstd


def affine(e, y, weight, bias):
    """y * weight + bias, each where given (f32 Values shaped to broadcast over y)."""
    if weight is not None:
        y = e.binary("mul", y, weight)
    if bias is not None:
        y = e.binary("add", y, bias)
    return y


@lowers(aten.native_layer_norm.default)
def lowerLayerNorm(ctx, node):
    x = ctx.tensor(node.args[0])
    normalized = list(node.args[1])
    weight, bias, eps = ctx.v(node.args[2]), ctx.v(node.args[3]), node.args[4]
    e = ctx.e
    axes = list(range(x.rank - len(normalized), x.rank))
    y, mu, _, rstd = normalize(e, e.cast(x, "f32"), axes, eps)
    y = affine(e, y, e.cast(weight, "f32") if isinstance(weight, Value) else None,
               e.cast(bias, "f32") if isinstance(bias, Value) else None)
    return (e.cast(y, outDtype(node, 0)), e.cast(mu, outDtype(node, 1)), e.cast(rstd, outDtype(node, 2)))


def batchNormParts(ctx, x, weight, bias):
    """Channel axis 1: per-channel values broadcast as [C, 1, ...] over x."""
    if x.rank < 2:
        raise Unsupported("a norm over channels of a vector")
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
    e, axes, spread, (w, b) = batchNormParts(ctx, x, weight, bias)
    count = dimProduct([x.shape[a] for a in axes])
    if not isinstance(count, int):
        raise Unsupported("batch norm over a named dimension (the running variance's n / (n - 1))")
    y, mean, var, rstd = normalize(e, e.cast(x, "f32"), axes, eps)
    y = affine(e, y, w, b)
    channels = (x.shape[1],)
    meanC, varC, rstdC = (e.reshape(v, channels) for v in (mean, var, rstd))
    unbiased = e.binary("mul", varC, count / max(count - 1, 1))
    newMean = e.binary("add", e.binary("mul", e.cast(runMean, "f32"), 1.0 - momentum),
                       e.binary("mul", meanC, float(momentum)))
    newVar = e.binary("add", e.binary("mul", e.cast(runVar, "f32"), 1.0 - momentum),
                      e.binary("mul", unbiased, float(momentum)))
    return (e.cast(y, outDtype(node, 0)), e.cast(meanC, outDtype(node, 1)), e.cast(rstdC, outDtype(node, 2)),
            e.cast(newMean, outDtype(node, 3)), e.cast(newVar, outDtype(node, 4)))


@lowers(aten._native_batch_norm_legit.no_stats)
def lowerBatchNormNoStats(ctx, node):
    """Batch statistics and no running ones: instance norm, which PyTorch writes as
    a batch norm of x viewed [1, N*C, ...]; (out, save_mean, save_rstd)."""
    x = ctx.tensor(node.args[0])
    weight, bias = ctx.v(node.args[1]), ctx.v(node.args[2])
    training, eps = node.args[3], node.args[5]
    if not training:
        raise Unsupported("batch norm with neither running statistics nor training")
    e, axes, spread, (w, b) = batchNormParts(ctx, x, weight, bias)
    y, mean, _, rstd = normalize(e, e.cast(x, "f32"), axes, eps)
    y = affine(e, y, w, b)
    channels = (x.shape[1],)
    return (e.cast(y, outDtype(node, 0)), e.cast(e.reshape(mean, channels), outDtype(node, 1)),
            e.cast(e.reshape(rstd, channels), outDtype(node, 2)))


@lowers(aten._native_batch_norm_legit_no_training.default)
def lowerBatchNormEval(ctx, node):
    """BatchNorm in eval mode: the running statistics; the two saved outputs are
    empty tensors, which only PyTorch can make (a graph that reads them keeps
    the node in PyTorch)."""
    x = ctx.tensor(node.args[0])
    weight, bias = ctx.v(node.args[1]), ctx.v(node.args[2])
    runMean, runVar, eps = ctx.tensor(node.args[3]), ctx.tensor(node.args[4]), node.args[6]
    e, axes, spread, (w, b) = batchNormParts(ctx, x, weight, bias)
    rstd = e.unary("rsqrt", e.binary("add", spread(runVar), float(eps)))
    y = e.binary("mul", e.binary("sub", e.cast(x, "f32"), spread(runMean)), rstd)
    return (e.cast(affine(e, y, w, b), outDtype(node, 0)), None, None)


@lowers(aten.native_group_norm.default)
def lowerGroupNorm(ctx, node):
    """Statistics per sample and group of C/G channels (all positions of them):
    x viewed [N, G, C/G, positions]; (out, mean [N, G], rstd [N, G])."""
    x = ctx.tensor(node.args[0])
    weight, bias = ctx.v(node.args[1]), ctx.v(node.args[2])
    groups, eps = node.args[6], node.args[7]
    e, _, _, (w, b) = batchNormParts(ctx, x, weight, bias)
    channels = x.shape[1]
    if not isinstance(channels, int) or not isinstance(groups, int):
        raise Unsupported("group norm over a named number of channels or groups")
    grouped = (x.shape[0], groups, channels // groups, dimProduct(x.shape[2:]))
    y, mean, _, rstd = normalize(e, e.reshape(e.cast(x, "f32"), grouped), [2, 3], eps)
    y = affine(e, e.reshape(y, x.shape), w, b)
    stats = (x.shape[0], groups)
    return (e.cast(y, outDtype(node, 0)), e.cast(e.reshape(mean, stats), outDtype(node, 1)),
            e.cast(e.reshape(rstd, stats), outDtype(node, 2)))
