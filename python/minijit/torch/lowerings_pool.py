"""The table's entries for pooling: max and average pooling over the last 1 to 3
axes (any stride, overlapping windows, padding, dilation, ceil_mode, the max's
indices), and adaptive pooling where its windows are all of one size.

A window's max or sum is separable: the max over a kh x kw window is the max over
kh of the max over kw. So each spatial axis is reduced on its own, innermost
first, by k strided slices of the padded input, one per window offset: slice j
holds the elements at i * stride + j * dilation for each output i. That is k
slices an axis (kh + kw, not kh * kw), all views in minijit (pad and slice are
index arithmetic), and the first of equal maxima in PyTorch's row-major scan of
the window wins, as in PyTorch.

Where the windows tile the input (stride == kernel, no dilation: the pooling of
most networks, and every adaptive pooling taken here), the values need no
slices: the padded input reshaped as [.., out, kernel] an axis is reduced over
its kernel axes in one reduction kernel, each window a row.
"""

import operator

import torch

from .emitter import FLOATS, Unsupported
from .lowerings import aten, kw, lowers, outDtype, outVal, shapeOf


class Window:
    """The windows along one spatial axis: their count and the padding they need."""

    def __init__(self, size, kernel, stride, pad, dilation, ceil):
        if not isinstance(size, int):
            raise Unsupported(f"pooling along the named dimension {size}")
        self.size, self.kernel, self.stride, self.pad, self.dilation = size, kernel, stride, pad, dilation
        span = dilation * (kernel - 1) + 1
        out = (size + 2 * pad - span + (stride - 1 if ceil else 0)) // stride + 1
        if ceil and (out - 1) * stride >= size + pad:
            out -= 1  # PyTorch drops a last window that would start in the padding
        if out < 1 or kernel < 1 or stride < 1:
            raise Unsupported("a pooling window larger than its padded input")
        self.out = out
        # Behind the input: the padding, and more where ceil_mode's last window reaches past it.
        self.after = max(0, (out - 1) * stride + span - (size + pad))

    def slices(self, e, v, axis):
        """v's k slices along `axis` (padded), one per window offset."""
        last = (self.out - 1) * self.stride + 1
        return [e.slice(v, axis, j * self.dilation, j * self.dilation + last, self.stride)
                for j in range(self.kernel)]

    def counts(self, includePad):
        """The number of elements each window averages (PyTorch's avg_pool divisor)."""
        result = []
        for i in range(self.out):
            start = i * self.stride - self.pad
            end = min(start + self.kernel, self.size + self.pad)
            result.append(end - start if includePad else min(end, self.size) - max(start, 0))
        return result


def ints(value, nd, name):
    """A pooling parameter (an int or a list of 1 or nd ints) as nd ints."""
    values = [value] if isinstance(value, int) else list(value)
    if len(values) == 1:
        values = values * nd
    if len(values) != nd or not all(isinstance(v, int) for v in values):
        raise Unsupported(f"the pooling {name} {value!r}")
    return values


def windows(x, nd, kernel, stride, padding, dilation, ceil):
    if x.rank < nd + 1 or x.dtype not in FLOATS:
        raise Unsupported(f"pooling of a {x.dtype} value of rank {x.rank}")
    kernel = ints(kernel, nd, "kernel")
    stride = ints(stride, nd, "stride") if stride else kernel
    padding, dilation = ints(padding, nd, "padding"), ints(dilation, nd, "dilation")
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise Unsupported("a pooling pad over half the kernel")
    spatial = x.shape[x.rank - nd:]
    return [Window(*args, bool(ceil)) for args in zip(spatial, kernel, stride, padding, dilation)]


def padSpatial(e, v, ws, value):
    lead = v.rank - len(ws)
    return e.pad(v, [0] * lead + [w.pad for w in ws], [0] * lead + [w.after for w in ws], value)


def tiles(ws):
    """Whether the windows tile every axis: each as far from the next as it is
    long (stride == kernel, no dilation), the pooling of most networks."""
    return all(w.stride == w.kernel and w.dilation == 1 for w in ws)


def tileReduce(e, v, ws, op):
    """v (padded) pooled by windows that tile it: each spatial axis cut to out *
    kernel and split as [out, kernel], then one reduction (`op`) over the kernel
    axes. One reduction kernel whose rows are the windows, so that neighbouring
    threads read neighbouring elements; the k slices an axis of the general form
    make a pointwise kernel whose threads each read a window, kernel elements
    apart."""
    lead = v.rank - len(ws)
    shape = list(v.shape[:lead])
    for a, w in enumerate(ws):
        v = e.slice(v, lead + a, 0, w.out * w.kernel, 1)
        shape += [w.out, w.kernel]
    v = e.reshape(v, shape)
    return e.reduce(op, v, [lead + 2 * a + 1 for a in range(len(ws))], False)


def sliceReduce(e, v, ws, op):
    """v (padded) pooled axis by axis, innermost first: the k slices of each axis
    combined by the binary `op`."""
    nd = len(ws)
    for a in reversed(range(nd)):
        parts = ws[a].slices(e, v, v.rank - nd + a)
        v = parts[0]
        for p in parts[1:]:
            v = e.binary(op, v, p)
    return v


def pool(e, v, ws, reduction, binary):
    """v (padded) pooled: one reduction where the windows tile it, else slices
    combined by `binary`."""
    return tileReduce(e, v, ws, reduction) if tiles(ws) else sliceReduce(e, v, ws, binary)


def checkShape(node, index, value):
    if value.shape != shapeOf(outVal(node, index)):
        raise Unsupported(f"internal: pooling to {list(value.shape)} where PyTorch has "
                          f"{list(shapeOf(outVal(node, index)))}")


def flatIndex(e, ws):
    """[H, W] (i32): each position's index in its plane, h * W + w, as PyTorch's
    max pooling returns it; padded as the input is."""
    spatial = tuple(w.size for w in ws)
    plane = 1
    for d in spatial:
        plane *= d
    if plane >= 2**31:
        raise Unsupported("max pooling indices past i32 in one plane")
    return padSpatial(e, flatPositions(e, spatial), ws, 0)


def flatPositions(e, spatial):
    """[H, W] (i32): each position's index in its plane, h * W + w."""
    plane = 1
    for d in spatial:
        plane *= d
    idx, stride = None, plane
    for a, d in enumerate(spatial):
        stride //= d
        term = e.iota(spatial, a, "i32")
        term = e.binary("mul", term, stride) if stride != 1 else term
        idx = term if idx is None else e.binary("add", idx, term)
    return idx


def maxWithIndices(e, v, ws, idx):
    """Max pooling that also keeps where each max came from: per axis, candidate
    j replaces the best so far where it is greater or NaN (PyTorch keeps the last
    NaN) and lies in the input (padding never wins, even over -inf)."""
    nd = len(ws)
    needValid = any(w.pad or w.after for w in ws)
    valid = padSpatial(e, e.full(tuple(w.size for w in ws), True, "bool"), ws, False) if needValid else None
    for a in reversed(range(nd)):
        w = ws[a]
        values = w.slices(e, v, v.rank - nd + a)
        places = w.slices(e, idx, idx.rank - nd + a)
        oks = w.slices(e, valid, a) if valid is not None else None
        best, bestIdx, bestOk = values[0], places[0], oks[0] if oks else None
        for j in range(1, w.kernel):
            take = e.binary("or", e.binary("gt", values[j], best), e.binary("ne", values[j], values[j]))
            if oks:
                take = e.binary("and", oks[j], e.binary("or", take, e.unary("not", bestOk)))
                bestOk = e.binary("or", bestOk, oks[j])
            best = e.where(take, values[j], best)
            bestIdx = e.where(take, places[j], bestIdx)
        v, idx, valid = best, bestIdx, bestOk
    return v, e.broadcast(idx, v.shape)


def maxPool(ctx, node, nd, kernel, stride, padding, dilation, ceil):
    """(values, indices); the indices only where the graph reads them."""
    x = ctx.tensor(node.args[0])
    ws = windows(x, nd, kernel, stride, padding, dilation, ceil)
    e = ctx.e
    v = padSpatial(e, x, ws, float("-inf"))
    if any(u.target is operator.getitem and u.args[1] == 1 for u in node.users):
        values, indices = maxWithIndices(e, v, ws, flatIndex(e, ws))
        indices = e.cast(indices, outDtype(node, 1))
    else:
        # NaN where any element of the window is NaN, as PyTorch's max pooling
        values, indices = pool(e, v, ws, "max", "maximum"), None
    checkShape(node, 0, values)
    return e.cast(values, outDtype(node, 0)), indices


@lowers(aten.max_pool2d_with_indices.default, aten.max_pool3d_with_indices.default)
def lowerMaxPool(ctx, node):
    nd = 2 if node.target is aten.max_pool2d_with_indices.default else 3
    return maxPool(ctx, node, nd, node.args[1], kw(node, 2, "stride", []), kw(node, 3, "padding", 0),
                   kw(node, 4, "dilation", 1), kw(node, 5, "ceil_mode", False))


def divisor(e, ws, includePad):
    """The avg_pool divisor: a number where every window holds as many elements,
    else a tensor over the spatial axes made of runs of equal counts."""
    number, tensor = 1, None
    for a, w in enumerate(ws):
        counts = w.counts(includePad)
        if len(set(counts)) == 1:
            number *= counts[0]
            continue
        runs, start = [], 0
        for i in range(1, len(counts) + 1):
            if i == len(counts) or counts[i] != counts[start]:
                runs.append(e.full((i - start,), float(counts[start]), "f32"))
                start = i
        vector = e.reshape(e.concat(runs, 0), (w.out,) + (1,) * (len(ws) - 1 - a))
        tensor = vector if tensor is None else e.binary("mul", tensor, vector)
    if tensor is not None and number != 1:
        tensor = e.binary("mul", tensor, float(number))
    return tensor if tensor is not None else number


def avgPool(ctx, node, nd, kernel, stride, padding, ceil, includePad, override):
    x = ctx.tensor(node.args[0])
    if isinstance(override, torch.fx.Node):
        raise Unsupported("a pooling divisor computed at run time")
    ws = windows(x, nd, kernel, stride, padding, 1, ceil)
    e = ctx.e
    v = padSpatial(e, e.cast(x, "f32"), ws, 0)
    v = pool(e, v, ws, "sum", "add")
    v = e.binary("div", v, float(override) if override else divisor(e, ws, bool(includePad)))
    checkShape(node, None, v)
    return e.cast(v, outDtype(node))


@lowers(aten.avg_pool2d.default, aten.avg_pool3d.default)
def lowerAvgPool(ctx, node):
    nd = 2 if node.target is aten.avg_pool2d.default else 3
    return avgPool(ctx, node, nd, node.args[1], kw(node, 2, "stride", []), kw(node, 3, "padding", 0),
                   kw(node, 4, "ceil_mode", False), kw(node, 5, "count_include_pad", True),
                   kw(node, 6, "divisor_override"))


def adaptiveKernel(x, sizes, nd):
    """Adaptive pooling as plain pooling: each axis a multiple of its output size."""
    sizes = ints(sizes, nd, "output size")
    spatial = x.shape[x.rank - nd:]
    if not all(isinstance(d, int) and o > 0 and d % o == 0 for d, o in zip(spatial, sizes)):
        raise Unsupported(f"adaptive pooling of {list(spatial)} to {sizes}: windows of unequal sizes "
                          "(an input size not a multiple of the output's) are not one strided window")
    return [d // o for d, o in zip(spatial, sizes)]


@lowers(aten._adaptive_avg_pool2d.default, aten._adaptive_avg_pool3d.default)
def lowerAdaptiveAvgPool(ctx, node):
    nd = 2 if node.target is aten._adaptive_avg_pool2d.default else 3
    kernel = adaptiveKernel(ctx.tensor(node.args[0]), node.args[1], nd)
    return avgPool(ctx, node, nd, kernel, kernel, 0, False, True, None)


@lowers(aten.adaptive_max_pool2d.default, aten.adaptive_max_pool3d.default)
def lowerAdaptiveMaxPool(ctx, node):
    nd = 2 if node.target is aten.adaptive_max_pool2d.default else 3
    kernel = adaptiveKernel(ctx.tensor(node.args[0]), node.args[1], nd)
    return maxPool(ctx, node, nd, kernel, kernel, 0, 1, False)


# Gradients ------------------------------------------------------------------
# A window's gradient goes back to the elements it read. g is first spread by the
# stride (output i at i * stride, zeros between: `dilate`); window offset j then
# read input position q + j * dilation - pad for each spread position q, so its
# share is the spread g shifted by that much (`shift`: a pad, and a slice where it
# leaves the input). Few views in a row: minijit bounds a chain of them.

def dilate(e, g, ws):
    """g with stride - 1 zeros after each output along every spatial axis."""
    lead = g.rank - len(ws)
    if all(w.stride == 1 for w in ws):
        return g
    split = list(g.shape[:lead])
    for w in ws:
        split += [w.out, 1] if w.stride > 1 else [w.out]
    g = e.reshape(g, split)
    after = [0] * lead
    for w in ws:
        after += [0, w.stride - 1] if w.stride > 1 else [0]
    g = e.pad(g, [0] * len(after), after, 0)
    return e.reshape(g, g.shape[:lead] + tuple(w.out * w.stride for w in ws))


def shift(e, g, ws, offsets):
    """The dilated g moved to where window offsets `offsets` (None: axis untouched)
    read the input, cut to the input's size; None when it reads only padding."""
    lead = g.rank - len(ws)
    before, after = [0] * g.rank, [0] * g.rank
    for a, (w, j) in enumerate(zip(ws, offsets)):
        if j is None:
            continue
        axis, length = lead + a, g.shape[lead + a]
        start = j * w.dilation - w.pad
        lo, hi = max(0, -start), min(length, w.size - start)
        if hi <= lo:
            return None
        g = e.slice(g, axis, lo, hi, 1)
        before[axis], after[axis] = max(0, start), w.size - max(0, start) - (hi - lo)
    return e.pad(g, before, after, 0)


def spread(e, g, ws, fill):
    """For windows that tile the input: each window's value of g to every input
    element it covers, `fill` where none does (the tail past the last window).
    g reshaped [.., out, 1] an axis, broadcast to [.., out, kernel], merged, and
    moved from padded coordinates to the input's: views only, each element reads
    one value of g."""
    lead = g.rank - len(ws)
    ones, tiles = list(g.shape[:lead]), list(g.shape[:lead])
    for w in ws:
        ones += [w.out, 1]
        tiles += [w.out, w.kernel]
    v = e.broadcast(e.reshape(g, ones), tiles)
    v = e.reshape(v, list(g.shape[:lead]) + [w.out * w.kernel for w in ws])
    after = [0] * v.rank
    for a, w in enumerate(ws):
        end = min(w.out * w.kernel, w.pad + w.size)  # the covered part of the input, padded coordinates
        v = e.slice(v, lead + a, w.pad, end, 1)
        after[lead + a] = w.size - (end - w.pad)
    return e.pad(v, [0] * v.rank, after, fill)


def addAll(e, parts):
    parts = [p for p in parts if p is not None]
    total = parts[0]
    for p in parts[1:]:
        total = e.binary("add", total, p)
    return total


@lowers(aten.avg_pool2d_backward.default, aten.avg_pool3d_backward.default)
def lowerAvgPoolBackward(ctx, node):
    """(grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad,
    divisor_override): each window's g / divisor to every element it averaged,
    one spatial axis at a time."""
    nd = 2 if node.target is aten.avg_pool2d_backward.default else 3
    override = node.args[7]
    if isinstance(override, torch.fx.Node):
        raise Unsupported("a pooling divisor computed at run time")
    x = ctx.tensor(node.args[1])
    ws = windows(x, nd, node.args[2], node.args[3], node.args[4], 1, node.args[5])
    return avgGradient(ctx.e, ctx.tensor(node.args[0]), ws, override, bool(node.args[6]), outDtype(node))


def avgGradient(e, g, ws, override, includePad, dtype):
    g = e.binary("div", e.cast(g, "f32"), float(override) if override else divisor(e, ws, includePad))
    if tiles(ws):
        return e.cast(spread(e, g, ws, 0.0), dtype)
    g = dilate(e, g, ws)
    for a, w in enumerate(ws):
        offsets = [None] * len(ws)
        g = addAll(e, [shift(e, g, ws, offsets[:a] + [j] + offsets[a + 1:]) for j in range(w.kernel)])
    return e.cast(g, dtype)


def offsetsOf(ws):
    combos = [[]]
    for w in ws:
        combos = [c + [j] for c in combos for j in range(w.kernel)]
    return combos


def maxGradient(e, g, idx, ws, dtype):
    """Each window's g to the element its max came from: per window offset, the
    dilated g where the index equals the input position that offset read
    (position q + j * dilation - pad along each axis), shifted there."""
    plane = 1
    for w in ws:
        plane *= w.size
    if plane >= 2**31:
        raise Unsupported("max pooling indices past i32 in one plane")
    if tiles(ws):
        # one window an element: its g where the window's max came from it
        here = spread(e, e.cast(idx, "i32"), ws, -1)
        position = flatPositions(e, tuple(w.size for w in ws))
        return e.cast(e.where(e.binary("eq", here, position), spread(e, e.cast(g, "f32"), ws, 0.0), 0.0), dtype)
    g, idx = dilate(e, e.cast(g, "f32"), ws), dilate(e, e.cast(idx, "i32"), ws)
    # idx minus the flat index of q itself, so that each offset compares with a number.
    base, stride = None, plane
    for a, w in enumerate(ws):
        stride //= w.size
        term = e.iota(g.shape[g.rank - len(ws):], a, "i32")
        term = e.binary("mul", term, stride) if stride != 1 else term
        base = term if base is None else e.binary("add", base, term)
    relative = e.binary("sub", idx, base)
    parts = []
    for offsets in offsetsOf(ws):
        step, place = plane, 0
        for w, j in zip(ws, offsets):
            step //= w.size
            place += (j * w.dilation - w.pad) * step
        parts.append(shift(e, e.where(e.binary("eq", relative, place), g, 0.0), ws, offsets))
    return e.cast(addAll(e, parts), dtype)


@lowers(aten.max_pool2d_with_indices_backward.default, aten.max_pool3d_with_indices_backward.default)
def lowerMaxPoolBackward(ctx, node):
    """(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices)."""
    nd = 2 if node.target is aten.max_pool2d_with_indices_backward.default else 3
    x = ctx.tensor(node.args[1])
    ws = windows(x, nd, node.args[2], node.args[3], node.args[4], node.args[5], node.args[6])
    return maxGradient(ctx.e, ctx.tensor(node.args[0]), ctx.tensor(node.args[7]), ws, outDtype(node))


@lowers(aten._adaptive_avg_pool2d_backward.default, aten._adaptive_avg_pool3d_backward.default)
def lowerAdaptiveAvgPoolBackward(ctx, node):
    g, x = ctx.tensor(node.args[0]), ctx.tensor(node.args[1])
    nd = 2 if node.target is aten._adaptive_avg_pool2d_backward.default else 3
    kernel = adaptiveKernel(x, g.shape[g.rank - nd:], nd)
    return avgGradient(ctx.e, g, windows(x, nd, kernel, kernel, 0, 1, False), None, True, outDtype(node))


@lowers(aten.adaptive_max_pool2d_backward.default, aten.adaptive_max_pool3d_backward.default)
def lowerAdaptiveMaxPoolBackward(ctx, node):
    g, x = ctx.tensor(node.args[0]), ctx.tensor(node.args[1])
    nd = 2 if node.target is aten.adaptive_max_pool2d_backward.default else 3
    kernel = adaptiveKernel(x, g.shape[g.rank - nd:], nd)
    ws = windows(x, nd, kernel, kernel, 0, 1, False)
    return maxGradient(ctx.e, g, ctx.tensor(node.args[2]), ws, outDtype(node))
