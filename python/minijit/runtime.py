"""GPUs: minijit.devices(), the opened devices, device buffers, and compare."""
import json
from ctypes import byref, c_int, c_size_t, c_void_p

from . import _lib
from .errors import CudaError
from .graph import Graph
from ._lib import lib

_opened = {}


def device_count():
    """GPUs the driver reports; 0 without a driver."""
    n = c_int()
    try:
        lib.mjDeviceCount(byref(n))
    except CudaError:
        return 0
    return n.value


class Device:
    """One GPU, opened once per ordinal (Device.get) and kept for the process."""

    def __init__(self, ordinal):
        h = c_void_p()
        lib.mjDeviceOpen(ordinal, byref(h))
        self._h = h
        self.ordinal = ordinal
        self.name = _lib.text_of(lib.mjDeviceName(h))
        major, minor, sms, total = c_int(), c_int(), c_int(), c_size_t()
        lib.mjDeviceProperties(h, byref(major), byref(minor), byref(sms), byref(total))
        self.compute_capability = (major.value, minor.value)
        self.arch = "sm_%d%d" % self.compute_capability
        self.sms = sms.value
        self.memory = total.value

    @staticmethod
    def get(ordinal=0):
        d = _opened.get(ordinal)
        if d is None:
            d = _opened[ordinal] = Device(ordinal)
        return d

    def synchronize(self):
        lib.mjDeviceSynchronize(self._h)

    def as_dict(self):
        return {"ordinal": self.ordinal, "name": self.name, "arch": self.arch, "sms": self.sms,
                "memory": self.memory}

    def __repr__(self):
        return "<minijit.Device %d: %s (%s)>" % (self.ordinal, self.name, self.arch)


def devices():
    """[{ordinal, name, arch, sms, memory}] of every GPU; [] without a driver."""
    return [Device.get(i).as_dict() for i in range(device_count())]


class Buffer:
    """A dense tensor in device memory that minijit allocated (for numpy runs)."""

    def __init__(self, device, dtype_code, shape):
        self.device = device
        self.dtype_code = dtype_code
        self.shape = tuple(shape)
        self._dims = (_lib.c_int64 * max(len(shape), 1))(*shape)
        h = c_void_p()
        lib.mjBufferCreate(device._h, dtype_code, len(shape), self._dims, byref(h))
        self._h = h
        self.ptr = lib.mjBufferPointer(h)

    def __del__(self):
        if lib is not None and getattr(self, "_h", None):
            lib.mjBufferDestroy(self._h)
            self._h = None

    @property
    def dtype(self):
        """minijit's dtype name: "f32", "f16", "bf16", "i32", "i64" or "bool"."""
        return _lib.DTYPE_NAMES[self.dtype_code]

    def write(self, array):
        """Copies a contiguous numpy array of the buffer's size in, and waits."""
        lib.mjBufferWrite(self._h, array.ctypes.data, array.nbytes)

    def read(self, array):
        """Copies the buffer out into a contiguous numpy array of its size, and waits."""
        lib.mjBufferRead(self._h, array.ctypes.data, array.nbytes)

    def numpy(self):
        """A host copy (bf16 as float32). Waits for the legacy default stream's
        work, which a run on another stream must be finished before."""
        import numpy as np
        if self.dtype_code == _lib.BF16:
            raw = np.empty(self.shape, dtype=np.uint16)
            self.read(raw)
            return (raw.astype(np.uint32) << 16).view(np.float32)
        a = np.empty(self.shape, dtype=_NUMPY_TYPES[self.dtype_code])
        self.read(a)
        return a

    @property
    def __cuda_array_interface__(self):
        """The buffer for CuPy, Numba or torch.as_tensor, without a copy (bf16 has
        no typestr: refused)."""
        if self.dtype_code not in _TYPESTRS:
            raise TypeError("minijit: a bf16 buffer has no __cuda_array_interface__ typestr")
        return {"shape": self.shape, "typestr": _TYPESTRS[self.dtype_code],
                "data": (self.ptr, False), "version": 3, "strides": None}

    def __repr__(self):
        return "<minijit.Buffer %s%s on device %d>" % (self.dtype, list(self.shape),
                                                      self.device.ordinal)


_NUMPY_TYPES = {_lib.F32: "float32", _lib.F16: "float16", _lib.I32: "int32", _lib.BOOL: "bool",
                _lib.I64: "int64"}
_TYPESTRS = {_lib.F32: "<f4", _lib.F16: "<f2", _lib.I32: "<i4", _lib.BOOL: "|b1"}


def compare(graph, *, seed=0, dims=None, device=0, name=None):
    """Fused against unfused on the GPU (as `minijit compare`): each run on
    seeded random inputs, checked against the CPU reference, timed and
    profiled. Returns a dict: graph, device, seed, copy_gbps, speedup (unfused
    time over fused), runs (per mode: label, kernels, bytes_moved, median_us,
    min_us, ok, check) and profile (the profile JSON, docs/PROFILE_JSON.md).
    Raises CudaError without a GPU."""
    g = Graph.of(graph, name)
    d = Device.get(device)
    s = c_void_p()
    b, _keep = _lib.bindings_arg(dims)
    lib.mjCompare(d._h, g._h, seed, b, byref(s))
    try:
        return json.loads(_lib.text_of(lib.mjStringData(s)))
    finally:
        lib.mjStringDestroy(s)
