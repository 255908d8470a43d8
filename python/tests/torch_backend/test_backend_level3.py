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
