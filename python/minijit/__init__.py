"""minijit from Python: compile graphs, read each stage's text, run them on
torch tensors, numpy arrays or anything with __dlpack__, and check them on
the CPU reference. A pure-Python package over the C API (libminijit_c.so,
minijit-c/minijit.h) through ctypes; docs/PYTHON.md describes it.

    import minijit
    c = minijit.compile("samples/softmax.mj")
    print(c.emit("cuda"), c.num_kernels)
    y, = minijit.evaluate("samples/softmax.mj", x)      # the CPU reference
    y, = c.run(x_cuda)                                  # on the GPU
"""
from ._lib import lib as _clib
from .compiled import CompiledGraph, compile
from .errors import (CompileError, CudaError, Error, GraphError, InvalidArgumentError,
                     ParseError)
from .graph import Graph, Value
from .reference import evaluate, random_inputs
from .runtime import Buffer, Device, compare, device_count, devices

__version__ = _clib.mjVersion().decode()

__all__ = ["Buffer", "CompileError", "CompiledGraph", "CudaError", "Device", "Error", "Graph",
           "GraphError", "InvalidArgumentError", "ParseError", "Value", "compare", "compile",
           "device_count", "devices", "evaluate", "random_inputs"]
