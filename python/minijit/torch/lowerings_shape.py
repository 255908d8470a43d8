"""The table's entries for products, views, slices, concats, pads and gathers
(the table itself, its helpers and the elementwise ops: lowerings.py)."""

import operator

import torch

from .emitter import Unsupported, dimProduct, normAxis
from .lowerings import aten, kw, lowers, outDtype, outVal, shapeOf

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


@lowers(aten.flip.default)
def lowerFlip(ctx, node):
    return ctx.e.flip(ctx.tensor(node.args[0]), list(node.args[1]))


@lowers(aten.unfold.default)
def lowerUnfold(ctx, node):
    """x.unfold(axis, size, step): the windows x[i * step + j] along `axis`, i over
    the axis (count = (n - size) // step + 1), j in a new last axis of `size`.
    Windows that do not overlap (step >= size, a ViT's patches) are a view: the
    axis cut (or padded) to count * step, split into [count, step], the first
    `size` of each kept and moved last. Overlapping ones are `size` strided
    slices, one per offset j, joined along the new axis."""
    x = ctx.tensor(node.args[0])
    axis, size, step = normAxis(node.args[1], x.rank), node.args[2], node.args[3]
    if not all(isinstance(a, int) for a in (size, step)):
        raise Unsupported("an unfold whose window is computed at run time")
    n = x.shape[axis]
    if not isinstance(n, int):
        raise Unsupported(f"an unfold along the named dimension {n}")
    count = (n - size) // step + 1
    e = ctx.e
    if step >= size:
        span = count * step
        if span <= n:
            x = e.slice(x, axis, 0, span, 1)
        else:  # the last window's stride reaches past the axis: padding no window reads
            x = e.pad(x, [0] * x.rank, [span - n if a == axis else 0 for a in range(x.rank)], 0)
        split = e.reshape(x, x.shape[:axis] + (count, step) + x.shape[axis + 1:])
        y = e.slice(split, axis + 1, 0, size, 1)
    else:
        last = (count - 1) * step + 1
        parts = [e.slice(x, axis, j, j + last, step) for j in range(size)]
        y = e.concat([e.reshape(p, p.shape[:axis + 1] + (1,) + p.shape[axis + 1:]) for p in parts], axis + 1)
    perm = [a for a in range(y.rank) if a != axis + 1] + [axis + 1]
    return e.permute(y, perm)


@lowers(aten.repeat.default)
def lowerRepeat(ctx, node):
    """x tiled: each repeated axis d as [1, d] broadcast to [r, d], then merged to r*d."""
    x = ctx.tensor(node.args[0])
    repeats = list(node.args[1])
    if any(not isinstance(r, int) for r in repeats):
        raise Unsupported("repeat counts computed at run time")
    shape = (1,) * (len(repeats) - x.rank) + x.shape
    split = [d for r, s in zip(repeats, shape) for d in ((1, s) if r != 1 else (s,))]
    spread = [d for r, s in zip(repeats, shape) for d in ((r, s) if r != 1 else (s,))]
    y = ctx.e.broadcast(ctx.e.reshape(x, split), spread)
    return ctx.e.reshape(y, [dimProduct([r, s]) for r, s in zip(repeats, shape)])


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

