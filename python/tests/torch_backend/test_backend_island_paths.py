"""The two ways an island runs a GPU call, checked without a GPU: a stand-in
for minijit.compile records what the island hands it and answers with the
CPU reference's results, and the partitioner is told the tensors are on a GPU.

- the direct path: no named sizes, inputs passed as they come (a
  non-contiguous one copied first), outputs returned as the buffers come;
- the general path: a rank-0 input reshaped to [1], a permuted layout, named
  sizes bound from the shapes."""

import pytest
import torch

from minijit.torch import island as islandModule
from minijit.torch import library, support
from torch_helpers import reportCount, reportsSince


class FakeCompiled:
    """What Island asks of a compiled graph, run on the CPU reference."""

    num_kernels = 1
    calls = []

    def __init__(self, text, dims):
        self.text, self.dims = text, dims

    def run(self, *tensors, dims=None):
        FakeCompiled.calls.append(([t.clone() for t in tensors], [t.is_contiguous() for t in tensors], dims))
        results = library.evaluate(self.text, [t.numpy() for t in tensors], dims or self.dims or {})
        return [torch.from_numpy(r.copy()) for r in results]

    def run_torch(self, tensors):
        return self.run(*tensors)


@pytest.fixture
def onFakeGpu(monkeypatch):
    monkeypatch.setattr(library, "compile", lambda text, dims=None, **o: FakeCompiled(text, dims))
    monkeypatch.setattr(support, "tensorDevices", lambda node: {"cuda"})
    FakeCompiled.calls = []
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def compiledOnGpu(fn, dynamic=False):
    return torch.compile(fn, backend="minijit", options={"device": "cuda"}, dynamic=dynamic)


def islands(start):
    return [i for r in reportsSince(start) for i in r.islands]


def test_direct_path_passes_inputs_as_they_come(onFakeGpu):
    def f(x, y):
        return torch.tanh(x) * y + 1.0

    x, y = torch.randn(5, 7), torch.randn(5, 7)
    start = reportCount()
    with torch.no_grad():
        got = compiledOnGpu(f)(x, y)
    torch.testing.assert_close(got, f(x, y))
    (isl,) = islands(start)
    assert isl.directInputs is not None
    (ins, contiguous, dims), = FakeCompiled.calls[-1:]
    assert all(contiguous) and dims is None
    torch.testing.assert_close(ins[0], x)
    # seen to come out as traced: later calls return the buffers as they are
    assert isl.outputsAsTraced
    x2 = torch.randn(5, 7)
    with torch.no_grad():
        torch.testing.assert_close(compiledOnGpu(f)(x2, y), f(x2, y))


def test_direct_path_shapes_outputs_that_differ_from_the_trace(onFakeGpu):
    def f(x):
        return (x * 2.0).t(), x.sum()  # the first: x's layout as traced, permuted back

    start = reportCount()
    with torch.no_grad():
        run = compiledOnGpu(f)
        for _ in range(2):  # the second call too: the outputs are reshaped and cast each time
            x = torch.randn(6, 5)
            got = run(x)
            assert got[0].shape == (5, 6) and got[0].stride() == (1, 5) and got[1].shape == ()
            torch.testing.assert_close(got[0], f(x)[0])
            torch.testing.assert_close(got[1], f(x)[1])
    (isl,) = islands(start)
    assert isl.directInputs is not None and not isl.outputsAsTraced


def test_direct_path_copies_a_non_contiguous_input(onFakeGpu):
    def f(x, y):
        return x * 2.0 + y

    base = torch.randn(7, 5)
    x, y = base.t(), torch.randn(5, 7)
    start = reportCount()
    with torch.no_grad():
        run = compiledOnGpu(f)
        got = run(x, y)
        isl = islands(start)[0]
        # the same island, handed a non-contiguous tensor of the traced layout's shape
        out = isl.forward(base.t(), y)
    torch.testing.assert_close(got, f(x, y))
    torch.testing.assert_close(out[0], f(x, y))
    assert all(FakeCompiled.calls[-1][1])


def test_general_path_for_a_rank_zero_input_and_named_sizes(onFakeGpu):
    def f(x, s):
        return x.sum(dim=1) * s

    x, s = torch.randn(6, 9), torch.tensor(3.0)
    start = reportCount()
    with torch.no_grad():
        got = compiledOnGpu(f)(x, s)
    torch.testing.assert_close(got, f(x, s))
    (isl,) = islands(start)
    assert isl.directInputs is None  # the rank-0 tensor takes the general path
    ins = FakeCompiled.calls[-1][0]
    assert [tuple(t.shape) for t in ins] == [(6, 9), (1,)]

    torch._dynamo.reset()
    start = reportCount()
    run = compiledOnGpu(lambda x: torch.relu(x) + 1.0, dynamic=True)
    with torch.no_grad():
        for rows in (4, 11):
            x = torch.randn(rows, 3)
            torch.testing.assert_close(run(x), torch.relu(x) + 1.0)
    assert all(i.directInputs is None for i in islands(start) if i.translation.bindings)
    assert FakeCompiled.calls[-1][2], "named sizes bound from the shapes"


def test_island_called_without_module_hooks(onFakeGpu):
    start = reportCount()
    with torch.no_grad():
        compiledOnGpu(lambda x: x * 3.0)(torch.randn(4))
    (isl,) = islands(start)
    assert isinstance(isl, islandModule.Island)
    assert type(isl).__call__ is islandModule.Island.__call__
