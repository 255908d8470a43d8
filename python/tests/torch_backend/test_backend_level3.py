"""What KernelBench's level 3 (whole models: ViT, attention, RNNs, Mamba2) met in
the backend, beyond test_backend_ops.py's single ops: outputs that are views no
permutation gives, and recurrent layers traced into the graph."""

import torch

from torch_helpers import compileCpu, reportCount, reportsSince


def islands(start):
    return [i for r in reportsSince(start) for i in r.islands]


def failed(start):
    return [m for r in reportsSince(start) for m in r.failed]


def test_an_output_viewing_part_of_a_result_comes_back_contiguous():
    """Mamba2 returns new_states[:, -1]: a view whose strides are the whole
    result's. The island computes it and returns it contiguous, the same values."""

    def fn(a):
        return (a.exp() * 2)[:, -1]

    x = torch.randn(3, 4, 5)
    start = reportCount()
    got = compileCpu(fn)(x)
    assert not failed(start), failed(start)
    assert len(islands(start)) == 1
    torch.testing.assert_close(got, fn(x))


def test_an_expanded_output_comes_back_materialized():
    def fn(a):
        return (a.exp() * 2).expand(3, 4, 5)

    x = torch.randn(4, 1)
    start = reportCount()
    got = compileCpu(fn)(x)
    assert not failed(start), failed(start)
    assert len(islands(start)) == 1
    torch.testing.assert_close(got, fn(x))


def leftOut(start):
    return {op: reason for r in reportsSince(start) for op, reason in r.leftOut}


def compareRnn(make, inputs):
    """A recurrent layer traced into the graph (Dynamo's allow_rnn), eager and through
    the backend from the same weights: every output, its shape and values."""
    torch.manual_seed(5)
    layer = make().eval()
    start = reportCount()
    with torch.no_grad(), torch._dynamo.config.patch(allow_rnn=True):
        got = compileCpu(layer)(*inputs)
        expected = layer(*inputs)
    flat = lambda o: [t for x in o for t in flat(x)] if isinstance(o, tuple) else [o]
    for g, e in zip(flat(got), flat(expected), strict=True):
        assert g.shape == e.shape
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    return start


def test_lstm_final_states_have_their_shape():
    """torch 2.11's LSTM decomposition returns h_n and c_n as [layers, 1, batch,
    hidden]; the backend traces a mended one (and with oneDNN off, so that the CPU
    gets the GPU's products rather than mkldnn_rnn_layer), and puts torch's back."""
    op = torch.ops.aten.lstm.input
    kernels = dict(op.py_kernels)
    x, h, c = torch.randn(3, 4, 6), torch.randn(4, 3, 5), torch.randn(4, 3, 5)
    start = compareRnn(lambda: torch.nn.LSTM(6, 5, 2, batch_first=True, bidirectional=True), (x, (h, c)))
    assert not failed(start), failed(start)
    assert islands(start) and not any("mkldnn" in op for op in leftOut(start)), leftOut(start)
    assert dict(op.py_kernels) == kernels


def test_gru_runs_on_minijit():
    x, h = torch.randn(4, 3, 6), torch.randn(2, 3, 5)
    start = compareRnn(lambda: torch.nn.GRU(6, 5, 2), (x, h))
    assert not failed(start) and not leftOut(start), (failed(start), leftOut(start))
    assert len(islands(start)) == 1


def test_a_long_unrolled_recurrence_is_split_within_minijits_depth():
    """KernelBench's VanillaRNNHidden: a Python loop over 256 steps, one chain of
    ops deeper than a minijit graph may be (1024), and a cat of every step's
    output (more operands than one concat takes). The chain becomes islands of
    bands of depth, with room for minijit's rewrites; the cat stays in PyTorch."""
    import torch.nn.functional as F
    from minijit.torch.emitter import MAX_DEPTH

    steps = 180  # six ops deep a step

    def fn(x, w, b):
        h = torch.zeros(x.shape[1], w.shape[0])
        outs = []
        for t in range(steps):  # VanillaRNNHidden's step, deeper
            h = torch.tanh(torch.sigmoid(F.linear(torch.cat((x[t], h), 1), w, b)) * 2.0 - 1.0)
            outs.append(h)
        return torch.cat(outs, 0), h

    # A product as long as 1024 is deepened by minijit's own rewrites: the bands leave room.
    x, w, b = torch.randn(steps, 2, 1020), torch.randn(4, 1024) * 0.03, torch.randn(4)
    start = reportCount()
    got = compileCpu(fn)(x, w, b)
    assert not failed(start), failed(start)
    assert leftOut(start) == {"aten.cat": "a concat of 180 operands (minijit takes 64)"}
    pieces = islands(start)
    assert len(pieces) >= 2
    for island in pieces:
        depths = island.translation.emitter.depths
        assert max(depths.values()) <= MAX_DEPTH
    for g, e in zip(got, fn(x, w, b), strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def test_large_graphs_are_partitioned_by_barriers(monkeypatch):
    """Past LARGE_GRAPH call nodes the nodes minijit takes are grouped by how many
    nodes left to PyTorch lie on a path to them (linear memory, where the
    CapabilityBasedPartitioner's grows with the square of a chain's length): the
    float64 detour in the middle splits the graph in two islands, without a cycle."""
    from minijit.torch import compiler

    def fn(x):
        y = x.exp()
        z = y.double().sin().float()
        return (y * 2 + z).relu(), x + 1

    monkeypatch.setattr(compiler, "LARGE_GRAPH", 0)
    x = torch.randn(4, 5)
    start = reportCount()
    got = compileCpu(fn)(x)
    assert not failed(start), failed(start)
    pieces = islands(start)
    assert len(pieces) == 2
    assert {str(op) for op in pieces[0].ops()} >= {"aten.exp.default", "aten.add.Tensor"}
    assert {str(op) for op in pieces[1].ops()} >= {"aten.relu.default"}
    for g, e in zip(got, fn(x), strict=True):
        torch.testing.assert_close(g, e)
