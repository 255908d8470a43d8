"""The CPU reference on numpy arrays: minijit.evaluate."""
import ctypes
from ctypes import byref, c_int64, c_void_p

from . import _lib
from .errors import GraphError
from .graph import Graph
from ._lib import lib

try:
    import numpy as np
except ImportError:  # evaluate needs numpy; the rest of the package does not
    np = None

_NUMPY = {_lib.F32: "float32", _lib.F16: "float16", _lib.I32: "int32", _lib.BOOL: "bool",
          _lib.I64: "int64"}


def _numpy():
    if np is None:
        raise ImportError("minijit.evaluate needs numpy (pip install numpy)")
    return np


def to_numpy(ref):
    """A numpy copy of a host TensorRef; bf16 becomes float32 (numpy has no bf16)."""
    np = _numpy()
    shape = tuple(ref.dims[d] for d in range(ref.rank))
    count = 1
    for d in shape:
        count *= d
    if count == 0:  # an empty tensor: no bytes to copy (its data pointer may be null)
        return np.zeros(shape, dtype=np.float32 if ref.dtype == _lib.BF16 else _NUMPY[ref.dtype])
    if ref.dtype == _lib.BF16:
        raw = np.ctypeslib.as_array((ctypes.c_uint16 * max(count, 1)).from_address(ref.data))
        bits = raw[:count].astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape).copy()
    dtype = np.dtype(_NUMPY[ref.dtype])
    buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(ref.data)
    return np.frombuffer(buf, dtype=dtype).reshape(shape).copy()


def _bf16_bits(a):
    """float32 values as bf16 bit patterns (rounded to nearest even)."""
    np = _numpy()
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(a), np.uint16(0x7FC0), rounded)


def host_array(a, dtype, what):
    """`a` as a contiguous numpy array holding minijit's `dtype` ("f32", ...)."""
    np = _numpy()
    if dtype == "bf16":
        return _bf16_bits(np.asarray(a, dtype=np.float32))
    want = np.dtype({"f32": "float32", "f16": "float16", "i32": "int32", "bool": "bool",
                     "i64": "int64"}[dtype])
    if isinstance(a, np.ndarray) and a.dtype != want:
        raise GraphError("%s: a %s array for an argument of dtype %s; convert it first "
                         "(x.astype(numpy.%s))" % (what, a.dtype, dtype, want))
    return np.ascontiguousarray(a, dtype=want)


def _held(handle):
    """The tensors of an mjHostTensors handle as numpy arrays; frees the handle."""
    try:
        out = []
        for i in range(lib.mjHostTensorsCount(handle)):
            ref = _lib.TensorRef()
            lib.mjHostTensorsGet(handle, i, byref(ref))
            out.append(to_numpy(ref))
        return out
    finally:
        lib.mjHostTensorsDestroy(handle)


def random_inputs(graph, seed=0, dims=None):
    """The seeded random inputs minijit's CLI and tests use, as numpy arrays."""
    g = Graph.of(graph)
    h = c_void_p()
    b, _keep = _lib.bindings_arg(dims)
    lib.mjRandomInputs(g._h, seed, b, byref(h))
    return _held(h)


def evaluate(graph, *arrays, seed=None, dims=None, name=None):
    """Runs `graph` (a Graph, text or a .mj path) on the CPU reference.

    `arrays` are one per argument, in order (numpy arrays or anything
    numpy.asarray takes; an ndarray must have the argument's dtype, bf16
    arguments take float32 values). With no arrays and a `seed`, seeded
    random inputs are used (minijit.random_inputs). Named dimensions are bound
    from the arrays' shapes and `dims` ({"B": 4}), which must agree. Returns
    one numpy array per output (bf16 outputs as float32).
    """
    g = Graph.of(graph, name)
    inputs = g.inputs
    if not arrays and seed is not None and inputs:
        arrays = random_inputs(g, seed, dims)
    if len(arrays) != len(inputs):
        raise GraphError("evaluate: graph '%s' has %d inputs, %d arrays were given"
                         % (g.name, len(inputs), len(arrays)))
    held = [host_array(a, dtype, "evaluate: input %%%s" % n)
            for a, (n, dtype, _) in zip(arrays, inputs)]
    refs = (_lib.TensorRef * max(len(held), 1))()
    keep = []
    for i, (a, (_, dtype, _)) in enumerate(zip(held, inputs)):
        dims_arr = (c_int64 * max(a.ndim, 1))(*a.shape)
        keep.append(dims_arr)
        refs[i].data = a.ctypes.data
        refs[i].dtype = _lib.DTYPE_CODES[dtype]
        refs[i].rank = a.ndim
        refs[i].dims = dims_arr
    h = c_void_p()
    b, _keep = _lib.bindings_arg(dims)
    lib.mjEvaluate(g._h, len(held), refs, b, byref(h))
    return _held(h)
