"""The torch run path's Python side, without torch or a GPU: a stand-in torch
module and a recording stand-in for the C call check what reaches C (the
addresses, dtypes and shapes of inputs and outputs, the stream), that plans
are reused per shape, and the refusals. The real run is test_gpu.py's."""
import sys
import types

import pytest

import minijit
from minijit import _lib, compiled

ROWS = "graph rows(%x: f32[B, 8], %w: f32[8]) {\n  %y = mul %x, %w\n  %s = sum %y axes=[1]\n  return %y, %s\n}\n"


class FakeTensor:
    """What the run path reads of a torch.Tensor."""

    def __init__(self, torch, shape, dtype, device=0, contiguous=True, ptr=4096):
        self.shape, self.dtype, self._device, self._contiguous = tuple(shape), dtype, device, contiguous
        self._ptr = ptr
        self.is_cuda = True
        self.device = "cuda:%d" % device

    def get_device(self):
        return self._device

    def is_contiguous(self):
        return self._contiguous

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return (1, self.shape[0])

    def clone(self):
        return FakeTensor(None, self.shape, self.dtype, self._device, ptr=(self._ptr + 0x10000) & ~15)

    def record_stream(self, s):
        self.recorded = s


@pytest.fixture
def fake(monkeypatch):
    torch = types.ModuleType("torch")
    torch.float32, torch.float16, torch.bfloat16 = "torch.float32", "torch.float16", "torch.bfloat16"
    torch.int32, torch.bool, torch.float64 = "torch.int32", "torch.bool", "torch.float64"
    torch.int64 = "torch.int64"
    torch.Tensor = FakeTensor
    torch.device = lambda kind, index: "%s:%d" % (kind, index)
    allocated = []

    def empty(shape, dtype, device):
        t = FakeTensor(torch, shape, dtype, int(device.split(":")[1]), ptr=1 << 20 + len(allocated))
        allocated.append(t)
        return t

    torch.empty = empty
    torch.cuda = types.SimpleNamespace(ExternalStream=lambda s: ("external", s))
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda ordinal: 0xABC0 + ordinal)
    monkeypatch.setitem(sys.modules, "torch", torch)
    calls = []

    def enqueue(exe, n_in, ins, n_out, outs, stream):
        def refs(arr, n):
            return [(arr[i].data, _lib.DTYPE_NAMES[arr[i].dtype],
                     tuple(arr[i].dims[d] for d in range(arr[i].rank))) for i in range(n)]
        calls.append((exe, refs(ins, n_in), refs(outs, n_out), stream))

    monkeypatch.setattr(compiled.lib, "mjExecutableEnqueue", enqueue)
    monkeypatch.setattr(compiled.CompiledGraph, "_executable", lambda self, ordinal: "exe%d" % ordinal)
    return torch, calls


def test_what_reaches_c(fake):
    torch, calls = fake
    c = minijit.compile(ROWS)
    x = FakeTensor(torch, (5, 8), torch.float32, ptr=0x1000)
    w = FakeTensor(torch, (8,), torch.float32, ptr=0x2000)
    y, s = c.run(x, w)
    assert (y.shape, y.dtype, s.shape) == ((5, 8), torch.float32, (5,))
    exe, ins, outs, stream = calls[-1]
    assert exe == "exe0" and stream == 0xABC0
    assert ins == [(0x1000, "f32", (5, 8)), (0x2000, "f32", (8,))]
    assert outs == [(y.data_ptr(), "f32", (5, 8)), (s.data_ptr(), "f32", (5,))]
    # Another batch: a plan of its own; the first is reused unchanged.
    x2 = FakeTensor(torch, (3, 8), torch.float32, ptr=0x3000)
    side = types.SimpleNamespace(cuda_stream=0x77)
    y2, s2 = c.run(x2, w, stream=side)
    assert calls[-1][1][0] == (0x3000, "f32", (3, 8)) and calls[-1][3] == 0x77
    # outputs of the current stream's pool written on another are recorded on it
    assert y2.recorded is side and s2.recorded is side
    c.run(x, w, out=[y, s])
    assert calls[-1][2] == outs
    assert len(c._plans) == 2


def test_a_view_that_starts_mid_vector_is_copied_and_out_is_checked(fake):
    torch, calls = fake
    c = minijit.compile(ROWS)
    x = FakeTensor(torch, (5, 8), torch.float32, ptr=0x1004)  # x[1:]-like: 4 bytes in
    w = FakeTensor(torch, (8,), torch.float32, ptr=0x2000)
    c.run(x, w)
    assert calls[-1][1][0] == (0x11000, "f32", (5, 8))  # the clone's address
    with pytest.raises(minijit.GraphError, match=r"out= has 1 tensors; the graph has 2"):
        c.run(x, w, out=[FakeTensor(torch, (5, 8), torch.float32)])
    with pytest.raises(minijit.GraphError, match=r"out\[1\] must be a contiguous"):
        c.run(x, w, out=[FakeTensor(torch, (5, 8), torch.float32), FakeTensor(torch, (4,), torch.float32)])
    assert len(calls) == 1


def test_refusals(fake):
    torch, calls = fake
    c = minijit.compile(ROWS)
    w = FakeTensor(torch, (8,), torch.float32)
    with pytest.raises(minijit.GraphError, match="not contiguous"):
        c.run(FakeTensor(torch, (5, 8), torch.float32, contiguous=False), w)
    # A dtype refused when the plan of these shapes is made, and when it is reused.
    with pytest.raises(minijit.GraphError, match="torch.float64 tensors are not one of minijit's"):
        c.run(FakeTensor(torch, (6, 8), torch.float64), w)
    with pytest.raises(minijit.GraphError, match="input %x is f16, but the graph declares f32"):
        c.run(FakeTensor(torch, (7, 8), torch.float16), w)
    with pytest.raises(minijit.GraphError, match="input %x is torch.float16, but the graph declares f32"):
        c.run(FakeTensor(torch, (5, 8), torch.float16), w)
    with pytest.raises(minijit.GraphError, match="input %w is on cuda:1"):
        c.run(FakeTensor(torch, (5, 8), torch.float32), FakeTensor(torch, (8,), torch.float32, 1))
    with pytest.raises(minijit.GraphError, match=r"\[4\]"):
        c.run(FakeTensor(torch, (5, 8), torch.float32), FakeTensor(torch, (4,), torch.float32))
    with pytest.raises(minijit.GraphError, match="B is given as 2 but the inputs make it 5"):
        c.run(FakeTensor(torch, (5, 8), torch.float32), w, dims={"B": 2})
    assert calls == []


def test_outputs_made_by_the_fast_allocation_on_the_current_gpu_only(fake):
    """Where torch has Inductor's allocation (sizes, strides, dtype, on the current
    GPU), the outputs come from it, contiguous; on another GPU, torch.empty."""
    torch, calls = fake
    fast, current = [], [0]  # what was allocated fast; the current GPU

    def emptyStrided(shape, strides, dtype):
        fast.append((shape, strides, dtype))
        return FakeTensor(torch, shape, dtype, current[0], ptr=0x9000 + 0x100 * len(fast))

    torch._C._dynamo = types.SimpleNamespace(guards=types.SimpleNamespace(_empty_strided_cuda=emptyStrided))
    torch._C._cuda_getDevice = lambda: current[0]
    c = minijit.compile(ROWS)
    w = FakeTensor(torch, (8,), torch.float32)
    y, s = c.run(FakeTensor(torch, (5, 8), torch.float32), w)
    assert fast == [((5, 8), (8, 1), torch.float32), ((5,), (1,), torch.float32)]
    assert calls[-1][2] == [(y.data_ptr(), "f32", (5, 8)), (s.data_ptr(), "f32", (5,))]
    # An empty batch: strides as torch gives them, never a zero.
    c.run(FakeTensor(torch, (0, 8), torch.float32), w)
    assert fast[-2] == ((0, 8), (8, 1), torch.float32)
    # Inputs on GPU 1 while GPU 0 is current: torch.empty, on GPU 1.
    y1, _ = c.run(FakeTensor(torch, (6, 8), torch.float32, 1), FakeTensor(torch, (8,), torch.float32, 1))
    assert len(fast) == 4 and y1.get_device() == 1
