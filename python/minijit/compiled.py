"""minijit.compile: a graph compiled, its stage texts, and runs on tensors."""
import ctypes
import sys
from ctypes import byref, c_char_p, c_int64, c_void_p

from . import _lib
from .errors import GraphError
from .graph import Graph
from .reference import host_array, np
from .runtime import Buffer, Device, device_count
from ._lib import lib

_STAGE_LIST = ", ".join(_lib.STAGES)
_TORCH_DTYPES = None  # torch dtype -> minijit dtype name, made on first torch run

_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]


def _current_stream(torch, ordinal):
    """torch's current CUstream on GPU `ordinal`, as an int."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:  # what Inductor's generated code calls: no Stream object made
        return raw(ordinal)
    return torch.cuda.current_stream(ordinal).cuda_stream


def _fast_empty(torch):
    """(allocate, current device) where this torch has the allocation Inductor's
    generated code calls (sizes, strides and dtype, on the current GPU: no
    argument parsing, a fraction of torch.empty's host time), else None."""
    guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    allocate = getattr(guards, "_empty_strided_cuda", None)
    device = getattr(torch._C, "_cuda_getDevice", None)
    return (allocate, device) if allocate is not None and device is not None else None


def contiguous_strides(shape):
    """The strides, in elements, of a contiguous tensor of `shape` (a size 0 or
    1 counted as 1, as torch gives them)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _torch_dtypes(torch):
    """torch's dtypes to minijit's, for this torch module (the tests pass a stand-in of their own)."""
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None or _TORCH_DTYPES[0] is not torch:
        _TORCH_DTYPES = (torch, {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
                                 torch.int32: "i32", torch.int64: "i64", torch.bool: "bool"})
    return _TORCH_DTYPES[1]


def _options(fusion, reassociate, allow_tf32, tf32x3, arch, tuning, schedule, threads):
    h = c_void_p()
    lib.mjCompileOptionsCreate(byref(h))
    lib.mjCompileOptionsSetFusion(h, bool(fusion))
    lib.mjCompileOptionsSetReassociate(h, bool(reassociate))
    lib.mjCompileOptionsSetAllowTf32(h, bool(allow_tf32))
    lib.mjCompileOptionsSetTf32x3(h, bool(tf32x3))
    lib.mjCompileOptionsSetTuning(h, bool(tuning))
    if arch:
        lib.mjCompileOptionsSetArch(h, arch.encode())
    if schedule:
        lib.mjCompileOptionsSetSchedule(h, schedule.encode())
    if threads:
        lib.mjCompileOptionsSetThreads(h, threads)
    return h


class _Plan:
    """What runs of one set of input shapes reuse: the executable, the
    TensorRef arrays (only their addresses change per run), the outputs'
    shapes and dtypes."""

    __slots__ = ("exe", "ordinal", "ins", "outs", "out_shapes", "out_dtypes", "in_dtypes",
                 "keep", "torch_device", "torch_out_dtypes", "torch_in_dtypes", "buffers",
                 "torch_out_layouts", "fast_empty")


def _refs(shapes, dtypes, keep):
    refs = (_lib.TensorRef * max(len(shapes), 1))()
    for i, (s, d) in enumerate(zip(shapes, dtypes)):
        dims = (c_int64 * max(len(s), 1))(*s)
        keep.append(dims)
        refs[i].dtype = _lib.DTYPE_CODES[d]
        refs[i].rank = len(s)
        refs[i].dims = dims
    return refs


class CompiledGraph:
    """A graph compiled by minijit.compile: ``emit(stage)``, ``num_kernels``,
    ``kernels`` and ``run(*tensors)``."""

    def __init__(self, graph, options, dims, device):
        self.graph = graph
        self._opts = options
        self._dims = dict(dims) if dims else None
        self._device = device
        self._compiled = None
        self._exes = {}
        self._plans = {}
        if not graph.has_named_dims or self._dims:
            self._compile()

    def __del__(self):
        if lib is None:  # the interpreter is shutting down
            return
        for e in getattr(self, "_exes", {}).values():
            lib.mjExecutableDestroy(e)
        if getattr(self, "_compiled", None):
            lib.mjCompiledDestroy(self._compiled)
        if getattr(self, "_opts", None):
            lib.mjCompileOptionsDestroy(self._opts)

    def _compile(self):
        if self._compiled is None:
            if self.graph.has_named_dims and not self._dims:
                raise GraphError("graph '%s' has named dimensions (%s): give their sizes to "
                                 "minijit.compile(..., dims={...}) to see its stages"
                                 % (self.graph.name, self._dim_names()))
            h = c_void_p()
            b, _keep = _lib.bindings_arg(self._dims)
            lib.mjCompile(self.graph._h, self._opts, b, byref(h))
            self._compiled = h
        return self._compiled

    def _dim_names(self):
        names = set()
        for _, _, shape in self.graph.inputs:
            names.update(d for d in shape if isinstance(d, str))
        return ", ".join(sorted(names))

    def emit(self, stage="cuda"):
        """The text of `stage`: "graph", "fused", "cuda", "ptx", "resources" or "dot"."""
        if stage not in _lib.STAGES:
            raise ValueError("minijit: unknown stage %r (one of %s)" % (stage, _STAGE_LIST))
        t = c_char_p()
        lib.mjCompiledText(self._compile(), _lib.STAGES[stage], byref(t))
        return _lib.text_of(t.value)

    @property
    def num_kernels(self):
        """Kernels the graph became (launches per run)."""
        return lib.mjCompiledNumKernels(self._compile())

    @property
    def kernels(self):
        """[{name, schedule, bytes_read, bytes_written}] in launch order."""
        c = self._compile()
        out = []
        for k in range(lib.mjCompiledNumKernels(c)):
            name, sched, r, w = c_char_p(), c_char_p(), c_int64(), c_int64()
            lib.mjCompiledKernel(c, k, byref(name), byref(sched), byref(r), byref(w))
            out.append({"name": _lib.text_of(name.value), "schedule": _lib.text_of(sched.value),
                        "bytes_read": r.value, "bytes_written": w.value})
        return out

    # ---- runs
    def _executable(self, ordinal):
        e = self._exes.get(ordinal)
        if e is not None:
            return e
        d = Device.get(ordinal)
        h = c_void_p()
        if self.graph.has_named_dims or self._device != ordinal:
            lib.mjExecutableCreate(d._h, self.graph._h, self._opts, byref(h))
        else:
            lib.mjExecutableLoad(d._h, self._compile(), byref(h))
        self._exes[ordinal] = h
        return h

    def set_graph_replay(self, on=True, device=None):
        """CUDA-graph replay of the launches (one driver call per run)."""
        lib.mjExecutableSetGraphReplay(self._executable(self._ordinal(device)), bool(on))

    def _ordinal(self, device):
        return self._device if device is None else device

    def _plan(self, key, shapes, in_dtypes, ordinal, dims):
        inputs = self.graph.inputs
        if len(shapes) != len(inputs):
            raise GraphError("run: graph '%s' has %d inputs, %d tensors were given"
                             % (self.graph.name, len(inputs), len(shapes)))
        for (name, want, _), got in zip(inputs, in_dtypes):
            if got != want:
                raise GraphError("run: input %%%s is %s, but the graph declares %s"
                                 % (name, got, want))
        p = _Plan()
        p.exe = self._executable(ordinal)
        p.ordinal = ordinal
        outs = self.graph.output_shapes(shapes, dims)
        p.out_dtypes = [d for d, _ in outs]
        p.out_shapes = [s for _, s in outs]
        p.in_dtypes = list(in_dtypes)
        p.keep = []
        p.ins = _refs(shapes, in_dtypes, p.keep)
        p.outs = _refs(p.out_shapes, p.out_dtypes, p.keep)
        p.buffers = None
        self._plans[key] = p
        return p

    def run(self, *tensors, dims=None, stream=None, out=None, device=None):
        """Runs the compiled graph on `tensors`, one per input.

        - torch CUDA tensors (contiguous, of the graph's dtypes, on one GPU):
          run in place on torch's current stream (or `stream`: a
          torch.cuda.Stream or a raw CUstream int), outputs allocated with
          torch.empty on that device (or written into `out`: contiguous
          tensors of the outputs' shapes and dtypes, 16-byte aligned, else
          GraphError), returned as a list of torch tensors. Nothing waits. An
          input that starts mid-vector (a view such as x[1:]) is copied first.
        - numpy arrays (or torch CPU tensors): copied to the GPU (`device`,
          default 0), run, waited for and copied back: a list of numpy arrays
          (torch CPU tensors for torch inputs).
        - anything else with ``__dlpack__`` (CuPy, JAX...): read in place; the
          outputs are minijit Buffers (``.numpy()``,
          ``__cuda_array_interface__``), written on `stream` (default: the
          legacy default stream), and the run is waited for (the inputs may
          be temporaries the caller frees).
        Named dimensions are bound from the shapes (and `dims`, which must agree).
        """
        torch = sys.modules.get("torch")
        if tensors and torch is not None and isinstance(tensors[0], torch.Tensor):
            if tensors[0].is_cuda:
                return self.run_torch(tensors, dims, stream, out)
            res = self._run_host([t.numpy() for t in tensors], dims, device)
            return [torch.from_numpy(r) for r in res]
        if np is not None and (not tensors or isinstance(tensors[0], np.ndarray)):
            return self._run_host(tensors, dims, device)
        if tensors and hasattr(tensors[0], "__dlpack__"):
            return self._run_dlpack(tensors, dims, stream, device)
        return self._run_host(tensors, dims, device)

    def run_torch(self, tensors, dims=None, stream=None, out=None):
        """run() on a sequence of torch CUDA tensors, without run()'s look at
        what kind of tensors they are: the torch backend's call."""
        return self._run_torch(sys.modules["torch"], tensors, dims, stream, out)

    def _run_torch(self, torch, tensors, dims, stream, out):
        key = tuple([t.shape for t in tensors])
        if dims:
            key += tuple(sorted(dims.items()))
        p = self._plans.get(key)
        if p is None:
            tdt = _torch_dtypes(torch)
            for t in tensors:
                if t.dtype not in tdt:
                    raise GraphError("run: %s tensors are not one of minijit's dtypes (float32, "
                                     "float16, bfloat16, int32, int64, bool)" % t.dtype)
            p = self._plan(key, [tuple(t.shape) for t in tensors],
                           [tdt[t.dtype] for t in tensors], tensors[0].get_device(), dims)
            inv = {v: k for k, v in tdt.items()}
            p.torch_in_dtypes = [t.dtype for t in tensors]
            p.torch_out_dtypes = [inv[d] for d in p.out_dtypes]
            p.torch_device = torch.device("cuda", p.ordinal)
            p.torch_out_layouts = [(tuple(s), contiguous_strides(s), d)
                                   for s, d in zip(p.out_shapes, p.torch_out_dtypes)]
            p.fast_empty = _fast_empty(torch)
        ordinal = p.ordinal
        ins = p.ins
        if stream is None:
            s = _current_stream(torch, ordinal)
            other = None
        else:
            s = getattr(stream, "cuda_stream", stream)
            other = stream if hasattr(stream, "cuda_stream") else torch.cuda.ExternalStream(s)
        copies = []
        for i, t in enumerate(tensors):
            if t.dtype is not p.torch_in_dtypes[i] or t.get_device() != ordinal \
                    or not t.is_contiguous():
                self._refuse_torch(t, i, p)
            ptr = t.data_ptr()
            if ptr % 16:  # a view that starts mid-vector: the kernels read by 16 bytes
                t = t.clone()
                copies.append(t)
                ptr = t.data_ptr()
            ins[i].data = ptr
        if out is None:
            fast = p.fast_empty
            if fast is not None and fast[1]() == ordinal:
                out = [fast[0](s, st, d) for s, st, d in p.torch_out_layouts]
            else:
                dev = p.torch_device
                out = [torch.empty(s, dtype=d, device=dev)
                       for s, d in zip(p.out_shapes, p.torch_out_dtypes)]
        else:
            self._check_out(torch, out, p)
        outs = p.outs
        for i, t in enumerate(out):
            outs[i].data = t.data_ptr()
        status = lib.mjExecutableEnqueue(p.exe, len(tensors), ins, len(out), outs, s)
        if status:
            _lib._check(status, None, None)
        if other is not None:  # memory of the current stream's pool, used on another
            for t in copies + list(out):
                t.record_stream(other)
        return out

    def _check_out(self, torch, out, p):
        """`out=` as the graph's outputs need them, or GraphError."""
        if len(out) != len(p.out_shapes):
            raise GraphError("run: out= has %d tensors; the graph has %d outputs"
                             % (len(out), len(p.out_shapes)))
        for i, (t, s, d) in enumerate(zip(out, p.out_shapes, p.torch_out_dtypes)):
            if tuple(t.shape) != tuple(s) or t.dtype is not d or t.get_device() != p.ordinal \
                    or not t.is_contiguous() or t.data_ptr() % 16:
                raise GraphError("run: out[%d] must be a contiguous %s tensor of shape %s on "
                                 "cuda:%d, 16-byte aligned; it is %s %s on %s"
                                 % (i, d, tuple(s), p.ordinal, t.dtype, tuple(t.shape), t.device))

    def _refuse_torch(self, t, i, p):
        name = self.graph.inputs[i][0]
        if t.get_device() != p.ordinal:
            raise GraphError("run: input %%%s is on %s but the graph's other inputs are on "
                             "cuda:%d" % (name, t.device, p.ordinal))
        if not t.is_contiguous():
            raise GraphError("run: input %%%s is not contiguous (strides %s); pass "
                             "t.contiguous()" % (name, tuple(t.stride())))
        raise GraphError("run: input %%%s is %s, but the graph declares %s"
                         % (name, t.dtype, p.in_dtypes[i]))

    def _run_host(self, arrays, dims, device):
        if device_count() == 0:
            from .errors import CudaError
            raise CudaError("run: no GPU (no CUDA driver found); minijit.evaluate runs the "
                            "graph on the CPU reference")
        ordinal = self._ordinal(device)
        inputs = self.graph.inputs
        if len(arrays) != len(inputs):
            raise GraphError("run: graph '%s' has %d inputs, %d arrays were given"
                             % (self.graph.name, len(inputs), len(arrays)))
        held = [host_array(a, d, "run: input %%%s" % n) for a, (n, d, _) in zip(arrays, inputs)]
        key = ("host", ordinal) + tuple(a.shape for a in held)
        if dims:
            key += tuple(sorted(dims.items()))
        p = self._plans.get(key)
        if p is None:
            p = self._plan(key, [a.shape for a in held], [d for _, d, _ in inputs], ordinal, dims)
            dev = Device.get(ordinal)
            p.buffers = ([Buffer(dev, _lib.DTYPE_CODES[d], a.shape)
                          for a, (_, d, _) in zip(held, inputs)],
                         [Buffer(dev, _lib.DTYPE_CODES[d], s)
                          for d, s in zip(p.out_dtypes, p.out_shapes)])
        bin, bout = p.buffers
        for i, (a, b) in enumerate(zip(held, bin)):
            b.write(a)
            p.ins[i].data = b.ptr
        for i, b in enumerate(bout):
            p.outs[i].data = b.ptr
        lib.mjExecutableRun(p.exe, len(bin), p.ins, len(bout), p.outs)
        results = []
        for b, d, s in zip(bout, p.out_dtypes, p.out_shapes):
            if d == "bf16":
                raw = np.empty(s, dtype=np.uint16)
                b.read(raw)
                results.append((raw.astype(np.uint32) << 16).view(np.float32))
                continue
            a = np.empty(s, dtype={"f32": np.float32, "f16": np.float16, "i32": np.int32,
                                   "i64": np.int64, "bool": np.bool_}[d])
            b.read(a)
            results.append(a)
        return results

    def _run_dlpack(self, tensors, dims, stream, device):
        # The producer orders its pending writes before `stream` (legacy
        # default when none), where it takes one.
        s = getattr(stream, "cuda_stream", stream)
        capsules = []
        for t in tensors:
            try:
                capsules.append(t.__dlpack__() if s is None else t.__dlpack__(stream=int(s)))
            except TypeError:  # a producer without the stream argument
                capsules.append(t.__dlpack__())
        ptrs = (c_void_p * len(capsules))(*[_PyCapsule_GetPointer(c, b"dltensor")
                                            for c in capsules])
        ordinal = self._ordinal(device)
        if hasattr(tensors[0], "__dlpack_device__"):
            ordinal = tensors[0].__dlpack_device__()[1]
        shapes = [tuple(t.shape) for t in tensors]
        outs_info = self.graph.output_shapes(shapes, dims)
        dev = Device.get(ordinal)
        outs = [Buffer(dev, _lib.DTYPE_CODES[d], s) for d, s in outs_info]
        optrs = (c_void_p * max(len(outs), 1))()
        keep = []
        for i, b in enumerate(outs):
            optrs[i] = _buffer_dlpack(b, keep)
        exe = self._executable(ordinal)
        lib.mjExecutableEnqueueDLPack(exe, len(capsules), ptrs, len(outs), optrs, s)
        # The inputs may be temporaries of the caller's, freed when this
        # returns: the run is waited for before the capsules go.
        dev.synchronize()
        del capsules  # not consumed: their deleters run now (DLPack's rule)
        return outs


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device_type", ctypes.c_int), ("device_id", ctypes.c_int),
                ("ndim", ctypes.c_int), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(c_int64)),
                ("strides", ctypes.POINTER(c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


_DL_CODES = {_lib.F32: (2, 32), _lib.F16: (2, 16), _lib.BF16: (4, 16), _lib.I32: (0, 32),
             _lib.BOOL: (6, 8), _lib.I64: (0, 64)}


def _buffer_dlpack(b, keep):
    """A borrowed DLManagedTensor describing Buffer `b` (kept alive by `keep`)."""
    m = _DLManagedTensor()
    code, bits = _DL_CODES[b.dtype_code]
    m.dl_tensor.data = b.ptr
    m.dl_tensor.device_type = 2  # kDLCUDA
    m.dl_tensor.device_id = b.device.ordinal
    m.dl_tensor.ndim = len(b.shape)
    m.dl_tensor.code, m.dl_tensor.bits, m.dl_tensor.lanes = code, bits, 1
    m.dl_tensor.shape = b._dims
    keep.append(m)
    return ctypes.addressof(m)


def compile(source, *, fusion=True, arch=None, allow_tf32=False, tf32x3=None, exact_f32=False,
            reassociate=True, tuning=True, schedule=None, threads=0, dims=None, device=None,
            name=None):
    """Compiles a graph: a Graph, text in the format, or a path to a .mj file
    (the graph called `name`, or the first). Options as ``minijit compile``'s:
    `fusion`, `arch` ("sm_90a"; None: the device's), `allow_tf32`,
    `exact_f32` (every f32 product on the CUDA cores; by default large ones
    run as three TF32 products on Hopper, no less accurate than SGEMM where
    measured; `tf32x3=False` says the same, `tf32x3=True` the default),
    `reassociate`, `tuning` (the tuning database), `schedule` (hand-set
    parameters), `threads` (NVRTC's). With a GPU the schedules are sized for
    GPU `device` (default 0); without one for an H200. A graph with named
    dimensions compiles per binding on each run's first use of it; `dims`
    ({"B": 4096}) gives the sizes its stage texts are shown for. Raises
    ParseError, GraphError, CompileError; ValueError for tf32x3=True with
    exact_f32=True."""
    if tf32x3 and exact_f32:
        raise ValueError("compile: tf32x3=True and exact_f32=True contradict each other")
    tf32x3 = not exact_f32 if tf32x3 is None else tf32x3
    g = Graph.of(source, name)
    opts = _options(fusion, reassociate, allow_tf32, tf32x3, arch, tuning, schedule, threads)
    ordinal = 0 if device is None else device
    if device is not None or device_count() > 0:
        lib.mjCompileOptionsSetDevice(opts, Device.get(ordinal)._h)
        if arch:
            lib.mjCompileOptionsSetArch(opts, arch.encode())
    return CompiledGraph(g, opts, dims, ordinal)
