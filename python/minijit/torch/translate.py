"""An FX graph of ATen ops (one island of the partition) as one minijit graph.

translateIsland() walks the island's nodes in order, lowering each through the
table in lowerings.py, and describes how to call the result: which inputs are
tensors, which named dimension each symbolic size binds to, and how each
output's buffer becomes a tensor with the strides PyTorch expects (meta["val"]).
"""

import re

import torch

from ..compiled import contiguous_strides
from .emitter import Emitter, Unsupported, Value
from .lowerings import LOWERINGS, Context, dimOf, mjDtype, shapeOf


def factors(dim):
    """A dimension of the text as its factors: 4*s0 -> [4, s0]; 8 -> [8]."""
    if isinstance(dim, int):
        return [dim]
    return [int(f) if f.isdigit() else f for f in dim.split("*")]


def hintInt(size):
    if isinstance(size, int):
        return size
    hint = size.node.hint
    if hint is None:
        raise Unsupported(f"the size {size} has no hint")
    return int(hint)


class InputSpec:
    """One placeholder of the island: a tensor argument or a SymInt."""

    def __init__(self, kind, dtype=None, shape=None, symbol=None, order=None):
        self.kind = kind  # "tensor" or "symint"
        self.order = order  # a tensor passed as tensor.permute(order), None: as it is
        self.declared = None  # the factored shape the graph declares, None: the shape itself
        self.dtype = dtype  # torch dtype of a tensor input
        self.shape = shape  # its dimensions in the text (ints or names)
        self.symbol = symbol  # the name a SymInt input binds, or None


class OutputSpec:
    """One output: how the graph's buffer becomes the tensor PyTorch expects."""

    def __init__(self, val, perm):
        self.dtype = val.dtype  # torch dtype to return (argmax's i32 comes back as int64)
        self.device = val.device
        self.perm = perm  # None: contiguous; else the buffer holds permute(perm)
        self.inverse = None if perm is None else [perm.index(i) for i in range(len(perm))]
        self.stride = tuple(hintInt(s) for s in val.stride())
        self.symbolicSize = tuple(dimOf(s) for s in val.shape)



def layoutOf(val):
    """The permutation whose contiguous buffer has val's strides, None if val is
    contiguous; raises Unsupported for layouts no permutation gives."""
    sizes = [hintInt(s) for s in val.shape]
    strides = [hintInt(s) for s in val.stride()]
    if all(s == t or n == 1 for s, t, n in zip(strides, contiguous_strides(sizes), sizes)):
        return None
    order = sorted(range(len(sizes)), key=lambda i: (-strides[i], i))
    physical = [sizes[i] for i in order]
    expected = contiguous_strides(physical)
    if all(strides[i] == expected[k] or sizes[i] == 1 for k, i in enumerate(order)):
        return order
    raise Unsupported(f"an output with strides {strides} (sizes {sizes})")


class Translation:
    def __init__(self, text, inputs, outputs, bindings, emitter, nodes, hintDims, deviceIndex):
        self.text = text
        self.hintDims = hintDims  # each named dimension's size when traced
        self.deviceIndex = deviceIndex  # the CUDA ordinal of the inputs, or None
        self.inputs = inputs
        self.outputs = outputs
        self.bindings = bindings  # name -> ("tensor", input, axis) or ("symint", input)
        self.emitter = emitter
        self.nodes = nodes

    def nodeOfError(self, message):
        """The ATen node whose statement a minijit error message points at."""
        match = re.search(r":(\d+):\d+", message)
        if match:
            return self.emitter.ownerOfLine(int(match.group(1)))
        return None


def translateIsland(gm, name="island"):
    """Lowers a GraphModule of ATen ops (placeholders, ops, one output) to text."""
    e = Emitter()
    env = {}
    inputs, bindings, hintDims = [], {}, {}
    products = []  # (input, axis, "4*s0", size): sizes bound from a product
    deviceIndex = None
    nodes = []
    outputNode = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = node.meta.get("val")
            if isinstance(val, torch.Tensor):
                shape = shapeOf(val)
                order = None
                if not shape:  # a 0-d input travels as [1] (see Island.forward)
                    env[node] = e.reshape(e.argument(mjDtype(val.dtype), (1,)), ())
                else:
                    try:
                        order = layoutOf(val)
                    except Unsupported:  # overlapping strides: copied contiguous at run time
                        order = None
                    # A permuted layout (a transpose) is read in place: the argument is
                    # the buffer in its physical order, permuted back in the graph.
                    physical = shape if order is None else [shape[i] for i in order]
                    # A product of sizes (4*s0) is declared as its factors, [4, s0], which
                    # hold the same elements in the same order: arguments take single names.
                    declared = [f for d in physical for f in factors(d)]
                    arg = e.reshape(e.argument(mjDtype(val.dtype), declared), physical)
                    env[node] = arg if order is None else \
                        e.permute(arg, [order.index(i) for i in range(len(order))])
                index = len(inputs)
                inputs.append(InputSpec("tensor", val.dtype, shape, order=order))
                if shape and any(len(factors(d)) > 1 for d in shape):
                    inputs[-1].declared = declared
                for axis, d in enumerate(shape):
                    if isinstance(d, str) and d.isidentifier() and d not in bindings:
                        bindings[d] = ("tensor", index, axis)
                        hintDims[d] = hintInt(val.shape[axis])
                    elif isinstance(d, str):
                        products.append((index, axis, d, hintInt(val.shape[axis])))
                if val.device.type == "cuda" and deviceIndex is None:
                    deviceIndex = val.device.index or 0
            elif isinstance(val, torch.SymInt):
                d = dimOf(val)
                symbol = d if isinstance(d, str) and d.isidentifier() else None
                inputs.append(InputSpec("symint", symbol=symbol))
                if symbol and symbol not in bindings:
                    bindings[symbol] = ("symint", len(inputs) - 1)
                    hintDims[symbol] = hintInt(val)
            else:
                raise Unsupported(f"the input {node.name} of type {type(val).__name__}")
        elif node.op == "call_function":
            fn = LOWERINGS.get(node.target)
            if fn is None:
                raise Unsupported(f"no lowering for {node.target}")
            e.owner = node
            env[node] = fn(Context(e, env), node)
            nodes.append(node)
        elif node.op == "output":
            outputNode = node
        else:
            raise Unsupported(f"a {node.op} node")
    for index, axis, d, size in products:
        unknown = [f for f in factors(d) if isinstance(f, str) and f not in bindings]
        if len(unknown) == 1:
            known = 1
            for f in factors(d):
                if f != unknown[0]:
                    known *= f if isinstance(f, int) else hintDims[f]
            bindings[unknown[0]] = ("product", index, axis, d, unknown[0])
            hintDims[unknown[0]] = size // known
    for spec in inputs:
        for d in getattr(spec, "declared", None) or ():
            if isinstance(d, str) and d not in bindings:
                raise Unsupported(f"the size {d} comes from no input alone")
    results = outputNode.args[0]
    if not isinstance(results, (list, tuple)):
        results = (results,)
    e.owner = None
    outValues, outputs = [], []
    for r in results:
        v = env.get(r)
        if not isinstance(v, Value):
            raise Unsupported(f"the output {r} is not a tensor")
        val = r.meta["val"]
        try:
            perm = layoutOf(val)
        except Unsupported:
            # A view into a larger buffer (a select of a result: Mamba2's new_states[:, -1])
            # or one that repeats elements (an expand): no permutation of a buffer gives
            # those strides, so it comes back contiguous, the same sizes and values.
            perm = None
        if perm is not None:
            v = e.permute(v, perm)
        outValues.append(v)
        outputs.append(OutputSpec(val, perm))
    for d in {d for v in outValues for d in v.shape if isinstance(d, str)}:
        for symbol in re.findall(r"[A-Za-z_]\w*", d):
            if symbol not in bindings:
                raise Unsupported(f"the size {symbol} comes from no input")
    return Translation(e.text(name, outValues), inputs, outputs, bindings, e, nodes, hintDims,
                       deviceIndex)


def checkNode(node):
    """Raises Unsupported (with the reason) unless `node` lowers on its own; returns
    the depth of its ops (the longest chain from its operands to its results)."""
    fn = LOWERINGS.get(node.target)
    if fn is None:
        raise Unsupported("no lowering")
    e = Emitter()
    env = {}
    for arg in node.all_input_nodes:
        val = arg.meta.get("val")
        if isinstance(val, torch.Tensor):
            env[arg] = Value(f"%in{len(env)}", mjDtype(val.dtype), shapeOf(val))
        elif isinstance(val, (tuple, list)) and node.target.__name__ == "getitem":
            env[arg] = tuple(Value("%t", mjDtype(t.dtype), shapeOf(t)) for t in val)
    vals = node.meta.get("val")
    multiple = isinstance(vals, (tuple, list))
    # Of a tuple, only the parts the graph reads (its getitems) must be minijit's.
    used = {u.args[1] for u in node.users
            if getattr(u.target, "__name__", None) == "getitem"} if multiple else {0}
    for i, val in enumerate(vals if multiple else (vals,)):
        if i not in used:
            continue
        if not isinstance(val, torch.Tensor):
            raise Unsupported("a result that is not a tensor")
        mjDtype(val.dtype)
        shapeOf(val)
    result = fn(Context(e, env), node)
    results = result if isinstance(result, tuple) else (result,)
    expected = vals if multiple else (vals,)
    for i, (r, val) in enumerate(zip(results, expected)):
        if i not in used:
            continue
        if r is None:
            raise Unsupported(f"result {i} is not computed by minijit")
        if r.rank != val.dim():
            raise Unsupported(f"internal: rank {r.rank} where PyTorch has {val.dim()}")
    return e.maxDepth
