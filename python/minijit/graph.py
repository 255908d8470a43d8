"""Graphs: parsed from the text format or a file, or built op by op."""
import ctypes
import os
from ctypes import byref, c_char_p, c_int, c_int32, c_int64, c_void_p

from . import _lib
from ._lib import lib

_DTYPES = {"f32": _lib.F32, "f16": _lib.F16, "bf16": _lib.BF16, "i32": _lib.I32,
           "bool": _lib.BOOL, "i64": _lib.I64}


def _dtype_code(dtype):
    """The mjDType of "f32", a numpy dtype or a torch dtype."""
    name = str(dtype).replace("torch.", "")
    name = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
            "int64": "i64", "bool_": "bool"}.get(name, name)
    if name not in _DTYPES:
        raise _lib.errors.GraphError("dtype %s is not one of minijit's (f32, f16, bf16, i32, i64, bool)"
                                     % (dtype,))
    return _DTYPES[name]


def _looks_like_text(s):
    return "graph" in s and "{" in s


class Value:
    """One value of a Graph (a builder's handle); ops are Graph.op(...)."""

    __slots__ = ("graph", "id")

    def __init__(self, graph, id):
        self.graph = graph
        self.id = id

    @property
    def dtype(self):
        return self.graph._info(self.id)[1]

    @property
    def shape(self):
        return self.graph._info(self.id)[2]

    def __repr__(self):
        name, dtype, shape = self.graph._info(self.id)
        return "<minijit.Value %%%s: %s%s>" % (name, dtype, list(shape))


class Graph:
    """A minijit graph. ``Graph.parse(text)``, ``Graph.load(path)`` or
    ``Graph("name")`` and the builder methods; ``str(g)`` is its text."""

    def __init__(self, name="main", _handle=None):
        if _handle is None:
            h = c_void_p()
            lib.mjGraphCreate(name.encode(), byref(h))
            _handle = h
        self._h = _handle

    def __del__(self):
        if lib is not None and getattr(self, "_h", None):
            lib.mjGraphDestroy(self._h)
            self._h = None

    @classmethod
    def parse(cls, text, name=None, file="<python>"):
        """The graph named `name` (None: the first) of `text`. Raises ParseError."""
        h = c_void_p()
        lib.mjGraphParse(text.encode(), file.encode(), name.encode() if name else None, byref(h))
        return cls(_handle=h)

    @classmethod
    def load(cls, path, name=None):
        """The graph named `name` (None: the first) of the file at `path`."""
        h = c_void_p()
        lib.mjGraphParseFile(os.fspath(path).encode(), name.encode() if name else None, byref(h))
        return cls(_handle=h)

    @classmethod
    def of(cls, source, name=None):
        """A Graph as given: a Graph, text in the format, or a path to a .mj file."""
        if isinstance(source, Graph):
            return source
        if isinstance(source, os.PathLike):
            return cls.load(source, name)
        if not isinstance(source, str):
            raise TypeError("minijit: expected a Graph, text or a path, got %s"
                            % type(source).__name__)
        if not _looks_like_text(source) and (os.path.exists(source) or source.endswith(".mj")):
            return cls.load(source, name)
        return cls.parse(source, name)

    # ---- inspection
    @property
    def name(self):
        return _lib.text_of(lib.mjGraphName(self._h))

    def __str__(self):
        t = c_char_p()
        lib.mjGraphPrint(self._h, byref(t))
        return _lib.text_of(t.value)

    def _info(self, v):
        name, dtype, rank = c_char_p(), c_int(), c_int32()
        dims = (c_int64 * _lib.MAX_RANK)()
        lib.mjGraphValueInfo(self._h, v, byref(name), byref(dtype), byref(rank), dims)
        shape = []
        for d in range(rank.value):
            if dims[d] >= 0:  # a number (0: an empty dimension); -1: a name not bound
                shape.append(dims[d])
                continue
            dn = c_char_p()
            lib.mjGraphValueDimName(self._h, v, d, byref(dn))
            shape.append(_lib.text_of(dn.value))
        return _lib.text_of(name.value), _lib.DTYPE_NAMES[dtype.value], tuple(shape)

    @property
    def inputs(self):
        """[(name, dtype, shape)] of the arguments; a named dimension is its name."""
        return [self._info(lib.mjGraphInput(self._h, i))
                for i in range(lib.mjGraphNumInputs(self._h))]

    @property
    def outputs(self):
        """[(name, dtype, shape)] of the results."""
        return [self._info(lib.mjGraphOutput(self._h, i))
                for i in range(lib.mjGraphNumOutputs(self._h))]

    @property
    def has_named_dims(self):
        return bool(lib.mjGraphHasNamedDims(self._h))

    # ---- the builder
    def input(self, name, dtype, shape):
        """Declares an argument; a str in `shape` is a named dimension."""
        rank = len(shape)
        dims = (c_int64 * max(rank, 1))(*[d if isinstance(d, int) else 0 for d in shape])
        names = None
        if any(isinstance(d, str) for d in shape):
            names = (c_char_p * rank)(*[d.encode() if isinstance(d, str) else None
                                        for d in shape])
        v = c_int32()
        lib.mjGraphAddInput(self._h, name.encode(), _dtype_code(dtype), rank, dims, names,
                            byref(v))
        return Value(self, v.value)

    def constant(self, value, dtype="f32"):
        v = c_int32()
        lib.mjGraphAddConstant(self._h, float(value), _dtype_code(dtype), byref(v))
        return Value(self, v.value)

    def op(self, op, *operands, name=None, axes=None, keepdim=False, axis=None, shape=None,
           perm=None, dtype=None, start=None, end=None, step=1, before=None, after=None,
           value=None, reverse=False):
        """Appends op `op` (its text-format name: "exp", "add", "sum", "matmul",
        "reshape", ...) with the attributes docs/FORMAT.md gives it. A number
        among the operands becomes a literal of the first Value's dtype."""
        first = next((o for o in operands if isinstance(o, Value)), None)
        ids = []
        for o in operands:
            if isinstance(o, Value):
                ids.append(o.id)
            else:
                ids.append(self.constant(o, first.dtype if first else "f32").id)
        a = _lib.OpAttributes()
        lib.mjOpAttributesInit(byref(a))
        keep = []

        def arr(xs):
            c = (c_int64 * max(len(xs), 1))(*xs)
            keep.append(c)
            return c

        listed = perm if perm is not None else axes
        if listed is not None:
            listed = [listed] if isinstance(listed, int) else list(listed)
            a.numAxes, a.axes = len(listed), arr(listed)
        a.keepdim = bool(keepdim)
        a.reverse = bool(reverse)
        if axis is not None:
            a.axis = axis
        if shape is not None:
            a.rank, a.shape = len(shape), arr(list(shape))
        if dtype is not None:
            a.dtype = _dtype_code(dtype)
        if start is not None:
            a.start = start
        if end is not None:
            a.end = end
        a.step = step
        if before is not None:
            a.numPad, a.before, a.after = len(before), arr(list(before)), arr(list(after))
        if value is not None:
            a.value = value
        v = c_int32()
        lib.mjGraphAddOp(self._h, op.encode(), len(ids), (c_int32 * max(len(ids), 1))(*ids),
                         byref(a), name.encode() if name else None, byref(v))
        return Value(self, v.value)

    def output(self, value, name=None):
        """Marks `value` as a result (named `name`)."""
        lib.mjGraphSetOutput(self._h, value.id, name.encode() if name else None)

    def update(self, input, value):
        """Marks `value` as a result written into the argument `input` in place."""
        lib.mjGraphSetUpdate(self._h, input.id, value.id)

    def output_shapes(self, shapes, dims=None):
        """[(dtype, shape)] of the outputs for inputs of `shapes`, named
        dimensions bound by them (and `dims`, which must agree)."""
        n = len(shapes)
        refs = (_lib.TensorRef * max(n, 1))()
        keep = []
        for i, s in enumerate(shapes):
            d = (c_int64 * max(len(s), 1))(*s)
            keep.append(d)
            refs[i].rank, refs[i].dims, refs[i].dtype = len(s), d, 0
        m = lib.mjGraphNumOutputs(self._h)
        ranks = (c_int32 * max(m, 1))()
        out = (c_int64 * (max(m, 1) * _lib.MAX_RANK))()
        dts = (c_int * max(m, 1))()
        b, _keep = _lib.bindings_arg(dims)
        lib.mjGraphOutputShapes(self._h, n, refs, b, m, ranks, out, dts)
        return [(_lib.DTYPE_NAMES[dts[o]],
                 tuple(out[o * _lib.MAX_RANK + d] for d in range(ranks[o]))) for o in range(m)]
