"""Writes one minijit graph in the text format (docs/FORMAT.md), value by value.

The emitter knows minijit's ops and their shape rules, so that a lowering can
chain several ops and still know each intermediate's dtype and shape. A shape is
a tuple of dimensions, each an int or a named-dimension expression (a str such
as "s0" or "2*s0"), exactly as the text format spells it.
"""

import math


class Unsupported(Exception):
    """A node minijit cannot take; the message says why (shown by explain())."""


class Value:
    """A minijit value: its name in the text (with the %), dtype and shape."""

    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype, shape):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(shape)

    @property
    def rank(self):
        return len(self.shape)

    def __repr__(self):
        return f"{self.name}: {typeText(self.dtype, self.shape)}"


FLOATS = ("f32", "f16", "bf16")
CONCAT_OPERANDS = 64  # the most operands of one concat (kMaxConcatOperands, ir/Limits.h)
MAX_DEPTH = 1024  # the longest chain of ops a graph may hold (kMaxDepth, ir/Limits.h)
NUMERIC = FLOATS + ("i32", "i64")


def typeText(dtype, shape):
    return f"{dtype}[{', '.join(str(d) for d in shape)}]"


def literalText(number, dtype):
    """A scalar operand spelled as a literal of `dtype` (the weak-scalar rule)."""
    if dtype == "bool":
        return "true" if bool(number) else "false"
    if dtype == "i32":
        if isinstance(number, float) and not number.is_integer():
            raise Unsupported(f"the literal {number} in an i32 op")
        value = int(number)
        if not -(2**31) <= value < 2**31:
            raise Unsupported(f"the literal {value} does not fit in i32")
        return str(value)
    if dtype == "i64":
        if isinstance(number, float) and not number.is_integer():
            raise Unsupported(f"the literal {number} in an i64 op")
        value = int(number)
        if abs(value) > 2**53:  # minijit's literals are doubles
            raise Unsupported(f"the i64 literal {value} (past 2^53)")
        return str(value)
    value = float(number)
    if math.isnan(value):
        return "nan"
    if math.isinf(value) or abs(value) > 3.4028234663852886e38:
        return "inf" if value > 0 else "-inf"
    return repr(value)


def dimProduct(dims):
    """The product of dimensions as one dimension (an int when all are ints)."""
    number = 1
    names = []
    for d in dims:
        if isinstance(d, int):
            number *= d
        else:
            names.append(d)
    if not names:
        return number
    if number == 0:
        return 0
    parts = ([str(number)] if number != 1 else []) + names
    return "*".join(parts)


def broadcastShapes(a, b):
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise Unsupported(f"shapes {list(a)} and {list(b)} do not broadcast")
    return tuple(out)


def normAxis(axis, rank):
    axis = int(axis)
    if axis < 0:
        axis += rank
    if not 0 <= axis < max(rank, 1):
        raise Unsupported(f"axis {axis} out of range for rank {rank}")
    return axis


class Emitter:
    """Collects the statements of one graph; each method emits one minijit op."""

    def __init__(self):
        self.args = []
        self.lines = []
        self.lineOwners = []
        self.owner = None
        self.counter = 0
        # Each value's depth: the longest chain of ops from an argument to it, which
        # minijit bounds (kMaxDepth, ir/Limits.h); the partitioner splits deeper islands.
        self.depths = {}
        self.maxDepth = 0

    # Graph structure.
    def argument(self, dtype, shape):
        for d in shape:
            if not isinstance(d, int) and not str(d).isidentifier():
                raise Unsupported(f"an input dimension {d} is an expression (minijit "
                                  "takes numbers or single names there)")
        v = Value(f"%a{len(self.args)}", dtype, shape)
        self.args.append(v)
        return v

    def text(self, name, outputs):
        header = ", ".join(f"{a.name}: {typeText(a.dtype, a.shape)}" for a in self.args)
        body = "".join(f"  {line}\n" for line in self.lines)
        ret = ", ".join(o.name for o in outputs)
        return f"graph {name}({header}) {{\n{body}  return {ret}\n}}\n"

    def ownerOfLine(self, lineNumber):
        """The node that emitted a line of text() (1-based), or None."""
        index = lineNumber - 2
        if 0 <= index < len(self.lineOwners):
            return self.lineOwners[index]
        return None

    def _emit(self, dtype, shape, op, operands, attrs=""):
        if len(shape) > 8:
            raise Unsupported(f"rank {len(shape)} exceeds minijit's 8 dimensions")
        name = f"%v{self.counter}"
        self.counter += 1
        depth = 1 + max((self.depths.get(o, 0) for o in operands), default=0)
        self.depths[name] = depth
        self.maxDepth = max(self.maxDepth, depth)
        ops = ", ".join(operands)
        stmt = f"{name} = {op}"
        if ops:
            stmt += " " + ops
        if attrs:
            stmt += " " + attrs
        self.lines.append(stmt)
        self.lineOwners.append(self.owner)
        return Value(name, dtype, shape)

    # Elementwise.
    def unary(self, op, x):
        if op in ("exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh",
                  "sigmoid", "erf", "recip", "floor", "ceil") and x.dtype not in FLOATS:
            x = self.cast(x, "f32")
        if op in ("neg", "abs", "relu") and x.dtype not in NUMERIC:
            raise Unsupported(f"{op} of a {x.dtype} value")
        return self._emit(x.dtype, x.shape, op, [x.name])

    def binary(self, op, a, b):
        """a and b: Values or Python numbers (not both numbers)."""
        if not isinstance(a, Value) and not isinstance(b, Value):
            raise Unsupported(f"{op} of two scalars")
        ref = a if isinstance(a, Value) else b
        dtype = ref.dtype
        if isinstance(a, Value) and isinstance(b, Value):
            if a.dtype != b.dtype:
                raise Unsupported(f"{op} of {a.dtype} and {b.dtype} (internal: cast first)")
            shape = broadcastShapes(a.shape, b.shape)
        else:
            shape = ref.shape
        aText = a.name if isinstance(a, Value) else literalText(a, dtype)
        bText = b.name if isinstance(b, Value) else literalText(b, dtype)
        compare = op in ("eq", "ne", "lt", "le", "gt", "ge")
        return self._emit("bool" if compare else dtype, shape, op, [aText, bText])

    def where(self, cond, a, b):
        if cond.dtype != "bool":
            cond = self.binary("ne", cond, 0)
        ref = a if isinstance(a, Value) else b
        if not isinstance(ref, Value):
            raise Unsupported("where of two scalars")
        shape = broadcastShapes(cond.shape, ref.shape)
        if isinstance(a, Value) and isinstance(b, Value):
            shape = broadcastShapes(shape, b.shape)
        aText = a.name if isinstance(a, Value) else literalText(a, ref.dtype)
        bText = b.name if isinstance(b, Value) else literalText(b, ref.dtype)
        return self._emit(ref.dtype, shape, "where", [cond.name, aText, bText])

    def cast(self, x, dtype):
        if x.dtype == dtype:
            return x
        return self._emit(dtype, x.shape, "cast", [x.name], f"to={dtype}")

    def iota(self, shape, axis, dtype="i32"):
        return self._emit(dtype, shape, "iota", [],
                          f"shape=[{', '.join(str(d) for d in shape)}] axis={axis} dtype={dtype}")

    def full(self, shape, value, dtype):
        if dtype not in FLOATS + ("i32", "bool"):
            raise Unsupported(f"a full of {dtype} (minijit's full takes floats, i32 and bool)")
        return self._emit(dtype, shape, "full", [],
                          f"shape=[{', '.join(str(d) for d in shape)}] value={literalText(value, dtype)} "
                          f"dtype={dtype}")

    # Reductions and scans.
    def reduce(self, op, x, axes, keepdim):
        axes = sorted({normAxis(a, x.rank) for a in axes}) if axes is not None else list(range(x.rank))
        if x.rank == 0 or not axes:
            return x  # a reduction over no axis is the value itself
        if op == "mean" and x.dtype not in FLOATS:
            raise Unsupported(f"mean of a {x.dtype} value")
        if x.dtype == "bool":
            raise Unsupported(f"{op} of a bool value")
        shape = []
        for i, d in enumerate(x.shape):
            if i in axes:
                if keepdim:
                    shape.append(1)
            else:
                shape.append(d)
        attrs = f"axes=[{', '.join(str(a) for a in axes)}]" + (" keepdim=true" if keepdim else "")
        return self._emit(x.dtype, shape, op, [x.name], attrs)

    def argReduce(self, op, x, axis, keepdim):
        axis = normAxis(axis, x.rank)
        shape = [d for i, d in enumerate(x.shape) if i != axis or keepdim]
        if keepdim:
            shape[axis] = 1
        return self._emit("i32", shape, op, [x.name],
                          f"axis={axis}" + (" keepdim=true" if keepdim else ""))

    def scan(self, op, x, axis):
        return self._emit(x.dtype, x.shape, op, [x.name], f"axis={normAxis(axis, x.rank)}")

    # Views.
    def reshape(self, x, shape):
        shape = tuple(shape)
        if shape == x.shape:
            return x
        return self._emit(x.dtype, shape, "reshape", [x.name],
                          f"shape=[{', '.join(str(d) for d in shape)}]")

    def permute(self, x, perm):
        perm = [normAxis(p, x.rank) for p in perm]
        if perm == list(range(x.rank)):
            return x
        return self._emit(x.dtype, [x.shape[p] for p in perm], "permute", [x.name],
                          f"perm=[{', '.join(str(p) for p in perm)}]")

    def flip(self, x, axes):
        axes = sorted({normAxis(a, x.rank) for a in axes})
        for a in axes:
            if not isinstance(x.shape[a], int):
                raise Unsupported(f"a flip along the named dimension {x.shape[a]}")
        axes = [a for a in axes if x.shape[a] != 1]
        if not axes:
            return x
        return self._emit(x.dtype, x.shape, "flip", [x.name], f"axes=[{', '.join(map(str, axes))}]")

    def broadcast(self, x, shape):
        shape = tuple(shape)
        if shape == x.shape:
            return x
        broadcastShapes(x.shape, shape)
        return self._emit(x.dtype, shape, "broadcast", [x.name],
                          f"shape=[{', '.join(str(d) for d in shape)}]")

    def slice(self, x, axis, start, end, step):
        axis = normAxis(axis, x.rank)
        size = x.shape[axis]
        if not isinstance(size, int):
            raise Unsupported(f"a slice along the named dimension {size}")
        start, end, step = int(start), int(end), int(step)
        if step < 1:
            raise Unsupported(f"a slice with step {step}")
        start = max(0, min(size, start + size if start < 0 else start))
        end = max(0, min(size, end + size if end < 0 else end))
        if end <= start:
            raise Unsupported("an empty slice (minijit has no empty tensors)")
        if start == 0 and end == size and step == 1:
            return x
        count = (end - start + step - 1) // step
        shape = list(x.shape)
        shape[axis] = count
        return self._emit(x.dtype, shape, "slice", [x.name],
                          f"axis={axis} start={start} end={end}" + (f" step={step}" if step != 1 else ""))

    def pad(self, x, before, after, value):
        for i, (b, a) in enumerate(zip(before, after)):
            if (b or a) and not isinstance(x.shape[i], int):
                raise Unsupported(f"a pad along the named dimension {x.shape[i]}")
        if not any(before) and not any(after):
            return x
        shape = [d + b + a if isinstance(d, int) else d for d, b, a in zip(x.shape, before, after)]
        return self._emit(x.dtype, shape, "pad", [x.name],
                          f"before=[{', '.join(map(str, before))}] after=[{', '.join(map(str, after))}] "
                          f"value={literalText(value, x.dtype)}")

    def concat(self, values, axis):
        axis = normAxis(axis, values[0].rank)
        sizes = [v.shape[axis] for v in values]
        if not all(isinstance(s, int) for s in sizes):
            raise Unsupported("a concat along a named dimension")
        if len(values) == 1:
            return values[0]
        if len(values) > CONCAT_OPERANDS:
            # Not a concat of concats: its kernel would select among all the operands in
            # every element, CUDA that grows with their number (512 of them: 12000 lines
            # and a minute of NVRTC), where PyTorch's cat copies each once.
            raise Unsupported(f"a concat of {len(values)} operands (minijit takes {CONCAT_OPERANDS})")
        shape = list(values[0].shape)
        shape[axis] = sum(sizes)
        return self._emit(values[0].dtype, shape, "concat", [v.name for v in values], f"axis={axis}")

    # Gathers.
    def take(self, table, idx, axis):
        axis = normAxis(axis, table.rank)
        shape = table.shape[:axis] + idx.shape + table.shape[axis + 1:]
        return self._emit(table.dtype, shape, "take", [table.name, idx.name], f"axis={axis}")

    def takeAlongAxis(self, x, idx, axis):
        axis = normAxis(axis, x.rank)
        if x.rank != idx.rank:
            raise Unsupported("take_along_axis with indices of another rank")
        others = [d for i, d in enumerate(x.shape) if i != axis]
        otherIdx = [d for i, d in enumerate(idx.shape) if i != axis]
        shape = list(broadcastShapes(others, otherIdx))
        shape.insert(axis, idx.shape[axis])
        return self._emit(x.dtype, shape, "take_along_axis", [x.name, idx.name], f"axis={axis}")

    def matmul(self, a, b):
        if a.dtype not in FLOATS:
            raise Unsupported(f"a matmul of {a.dtype} values")
        if a.rank < 2 or b.rank < 2:
            raise Unsupported("a matmul of a vector")
        if a.shape[-1] != b.shape[-2]:
            raise Unsupported(f"a matmul whose K differ ({a.shape[-1]} and {b.shape[-2]})")
        batch = broadcastShapes(a.shape[:-2], b.shape[:-2])
        return self._emit(a.dtype, batch + (a.shape[-2], b.shape[-1]), "matmul", [a.name, b.name])
