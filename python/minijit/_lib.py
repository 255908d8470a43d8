"""Finds and loads libminijit_c.so and declares the C API's functions (ctypes).

The library is looked for, in order:
  1. the file $MINIJIT_LIBRARY names;
  2. the package's folder (where ``pip install .`` puts it);
  3. the build tree of a clone: build/lib/ beside python/.
"""
import ctypes
import os
from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int32, c_int64, c_size_t,
                    c_uint, c_uint64, c_void_p)

from . import errors

_NAME = "libminijit_c.so"

MAX_RANK = 8

# mjDType
F32, F16, BF16, I32, BOOL, I64 = range(6)
DTYPE_NAMES = {F32: "f32", F16: "f16", BF16: "bf16", I32: "i32", BOOL: "bool", I64: "i64"}
DTYPE_CODES = {v: k for k, v in DTYPE_NAMES.items()}

# mjStage
STAGES = {"graph": 0, "fused": 1, "cuda": 2, "ptx": 3, "resources": 4, "dot": 5, "lowered": 6}


class TensorRef(Structure):
    _fields_ = [("data", c_void_p), ("dtype", c_int), ("rank", c_int32),
                ("dims", POINTER(c_int64))]


class DimBindings(Structure):
    _fields_ = [("count", c_size_t), ("names", POINTER(c_char_p)), ("sizes", POINTER(c_int64))]


class OpAttributes(Structure):
    _fields_ = [("numAxes", c_int32), ("axes", POINTER(c_int64)), ("keepdim", c_int),
                ("axis", c_int64), ("rank", c_int32), ("shape", POINTER(c_int64)),
                ("dtype", c_int), ("start", c_int64), ("end", c_int64), ("step", c_int64),
                ("numPad", c_int32), ("before", POINTER(c_int64)), ("after", POINTER(c_int64)),
                ("value", c_double), ("reverse", c_int)]


def _candidates():
    env = os.environ.get("MINIJIT_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, _NAME)
    # An editable install keeps the library in site-packages' minijit/ while
    # this file stays in the clone: every folder of the package's path.
    from . import __path__ as package_path
    for folder in package_path:
        yield os.path.join(folder, _NAME)
    repo = os.path.dirname(os.path.dirname(here))
    yield os.path.join(repo, "build", "lib", _NAME)


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        tried.append(path)
    raise ImportError("minijit: " + _NAME + " not found (looked at " + ", ".join(tried) +
                      "); build it (cmake --build build --target minijit_c), install the "
                      "package (pip install .) or set MINIJIT_LIBRARY")


lib = _load()

_ERRORS = {1: errors.InvalidArgumentError, 2: errors.ParseError, 3: errors.GraphError,
           4: errors.CompileError, 5: errors.CudaError, 6: errors.Error}


def _check(status, func, args):
    if status == 0:
        return status
    message = lib.mjGetLastError().decode("utf-8", "replace")
    cls = _ERRORS.get(status, errors.Error)
    if cls is errors.ParseError:
        line, column = c_uint(), c_uint()
        lib.mjGetLastErrorLocation(ctypes.byref(line), ctypes.byref(column))
        raise errors.ParseError(message, line.value, column.value)
    raise cls(message)


def _declare(name, argtypes, restype=c_int, checked=True):
    f = getattr(lib, name)
    f.argtypes = argtypes
    f.restype = restype
    if checked:
        f.errcheck = _check
    return f


P = POINTER
H = c_void_p  # every handle
_declare("mjGetLastError", [], c_char_p, False)
_declare("mjGetLastErrorLocation", [P(c_uint), P(c_uint)], None, False)
_declare("mjVersion", [], c_char_p, False)
_declare("mjStringData", [H], c_char_p, False)
_declare("mjStringDestroy", [H], None, False)

_declare("mjGraphParse", [c_char_p, c_char_p, c_char_p, P(H)])
_declare("mjGraphParseFile", [c_char_p, c_char_p, P(H)])
_declare("mjGraphDestroy", [H], None, False)
_declare("mjGraphPrint", [H, P(c_char_p)])
_declare("mjGraphName", [H], c_char_p, False)
_declare("mjGraphNumInputs", [H], c_size_t, False)
_declare("mjGraphNumOutputs", [H], c_size_t, False)
_declare("mjGraphInput", [H, c_size_t], c_int32, False)
_declare("mjGraphOutput", [H, c_size_t], c_int32, False)
_declare("mjGraphValueInfo", [H, c_int32, P(c_char_p), P(c_int), P(c_int32), P(c_int64)])
_declare("mjGraphValueDimName", [H, c_int32, c_int32, P(c_char_p)])
_declare("mjGraphHasNamedDims", [H], c_int, False)
_declare("mjGraphOutputShapes", [H, c_size_t, P(TensorRef), P(DimBindings), c_size_t, P(c_int32),
                                 P(c_int64), P(c_int)])
_declare("mjGraphCreate", [c_char_p, P(H)])
_declare("mjGraphAddInput", [H, c_char_p, c_int, c_int32, P(c_int64), P(c_char_p), P(c_int32)])
_declare("mjGraphAddConstant", [H, c_double, c_int, P(c_int32)])
_declare("mjGraphAddOp", [H, c_char_p, c_size_t, P(c_int32), P(OpAttributes), c_char_p,
                          P(c_int32)])
_declare("mjOpAttributesInit", [P(OpAttributes)], None, False)
_declare("mjGraphSetOutput", [H, c_int32, c_char_p])
_declare("mjGraphSetUpdate", [H, c_int32, c_int32])

_declare("mjCompileOptionsCreate", [P(H)])
_declare("mjCompileOptionsDestroy", [H], None, False)
for _flag in ("Fusion", "Reassociate", "AllowTf32", "Tf32x3", "Tuning"):
    _declare("mjCompileOptionsSet" + _flag, [H, c_int])
_declare("mjCompileOptionsSetArch", [H, c_char_p])
_declare("mjCompileOptionsSetSchedule", [H, c_char_p])
_declare("mjCompileOptionsSetThreads", [H, c_uint])
_declare("mjCompileOptionsSetStopAfter", [H, c_int])
_declare("mjCompileOptionsSetDevice", [H, H])
_declare("mjCompile", [H, H, P(DimBindings), P(H)])
_declare("mjCompiledDestroy", [H], None, False)
_declare("mjCompiledText", [H, c_int, P(c_char_p)])
_declare("mjCompiledNumKernels", [H], c_size_t, False)
_declare("mjCompiledKernel", [H, c_size_t, P(c_char_p), P(c_char_p), P(c_int64), P(c_int64)])

_declare("mjDeviceCount", [P(c_int)])
_declare("mjDeviceOpen", [c_int, P(H)])
_declare("mjDeviceDestroy", [H], None, False)
_declare("mjDeviceName", [H], c_char_p, False)
_declare("mjDeviceProperties", [H, P(c_int), P(c_int), P(c_int), P(c_size_t)])
_declare("mjDeviceSynchronize", [H])
_declare("mjBufferCreate", [H, c_int, c_int32, P(c_int64), P(H)])
_declare("mjBufferDestroy", [H], None, False)
_declare("mjBufferPointer", [H], c_void_p, False)
_declare("mjBufferWrite", [H, c_void_p, c_size_t])
_declare("mjBufferRead", [H, c_void_p, c_size_t])

_declare("mjExecutableCreate", [H, H, H, P(H)])
_declare("mjExecutableLoad", [H, H, P(H)])
_declare("mjExecutableDestroy", [H], None, False)
_declare("mjExecutableSetGraphReplay", [H, c_int])
# Its status is checked by its caller (compiled.py): the run path's hot call,
# where an errcheck would cost a Python call a run.
_declare("mjExecutableEnqueue", [H, c_size_t, P(TensorRef), c_size_t, P(TensorRef), c_void_p],
         checked=False)
_declare("mjExecutableEnqueueDLPack", [H, c_size_t, P(c_void_p), c_size_t, P(c_void_p), c_void_p])
_declare("mjExecutableRun", [H, c_size_t, P(TensorRef), c_size_t, P(TensorRef)])
_declare("mjExecutableSynchronize", [H])
_declare("mjCompare", [H, H, c_uint64, P(DimBindings), P(H)])

_declare("mjEvaluate", [H, c_size_t, P(TensorRef), P(DimBindings), P(H)])
_declare("mjRandomInputs", [H, c_uint64, P(DimBindings), P(H)])
_declare("mjHostTensorsCount", [H], c_size_t, False)
_declare("mjHostTensorsGet", [H, c_size_t, P(TensorRef)])
_declare("mjHostTensorsDestroy", [H], None, False)


def dim_bindings(dims):
    """A DimBindings for a dict {"B": 4096} (None: a null pointer), and what keeps it alive."""
    if not dims:
        return None
    names = (c_char_p * len(dims))(*[str(k).encode() for k in dims])
    sizes = (c_int64 * len(dims))(*[int(v) for v in dims.values()])
    b = DimBindings(len(dims), names, sizes)
    b._keep = (names, sizes)
    return ctypes.byref(b), b


def bindings_arg(dims):
    made = dim_bindings(dims)
    return (made[0], made) if made else (None, None)


def text_of(p):
    return p.decode("utf-8", "replace") if p is not None else ""
