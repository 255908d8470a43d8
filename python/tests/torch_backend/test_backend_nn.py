"""The norms, activations and pools the KernelBench trial left to PyTorch, beyond
test_backend_ops.py's forward cases: training steps through their backward (group
norm, ELU, instance norm with running statistics), max pooling's indices where
windows hold NaN, -inf or padding only, the pools' gradients, and what still
stays in PyTorch and why."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import minijit
from torch_helpers import compileCpu, islandOps, reportCount, reportsSince


def leftOut(reports):
    return {op: reason for r in reports for op, reason in r.leftOut}


def trainAndCompare(make, inputs, steps=3, tol=1e-5):
    """SGD steps of a fresh model, eager and through the backend from the same
    weights: the losses, the parameters and the buffers after each step match.
    Returns the compile reports."""
    torch.manual_seed(3)
    eager = make()
    compiled = make()
    compiled.load_state_dict(eager.state_dict())
    run = compileCpu(compiled)
    start = reportCount()
    for model, fn in ((eager, eager), (compiled, run)):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.losses = []
        for _ in range(steps):
            opt.zero_grad()
            loss = fn(*inputs).square().mean()
            loss.backward()
            opt.step()
            model.losses.append(loss.detach())
    for e, g in zip(eager.losses, compiled.losses):
        torch.testing.assert_close(g, e, rtol=tol, atol=tol)
    for (name, pe), pg in zip(eager.state_dict().items(), compiled.state_dict().values()):
        torch.testing.assert_close(pg, pe, rtol=tol, atol=tol, msg=lambda m: f"{name}: {m}")
    return reportsSince(start)


def test_group_norm_trains_like_eager():
    """GroupNorm (affine) between two Linears; its backward through AOTAutograd."""

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(7, 15)
            self.norm = nn.GroupNorm(5, 15)
            self.out = nn.Linear(15, 3)

        def forward(self, x):
            return self.out(F.hardtanh(self.norm(self.fc(x))))

    reports = trainAndCompare(Model, (torch.randn(9, 7),))
    assert "aten.native_group_norm.default" in islandOps([r for r in reports if r.kind == "forward"])
    backward = [r for r in reports if r.kind == "backward"]
    assert backward and all(r.islands and not r.leftOut for r in backward), [r.leftOut for r in backward]


def test_group_norm_on_images_trains_like_eager():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.GroupNorm(3, 9)
            self.scale = nn.Parameter(torch.randn(9, 1, 1))

        def forward(self, x):
            return self.norm(x) * self.scale

    reports = trainAndCompare(Model, (torch.randn(3, 9, 5, 7),))
    assert "aten.native_group_norm.default" in islandOps(reports)


def test_elu_and_selu_train_like_eager():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(11, 13)
            self.fc2 = nn.Linear(13, 5)

        def forward(self, x):
            return self.fc2(F.elu(self.fc1(x), alpha=0.6)) + F.selu(x[:, :5])

    reports = trainAndCompare(Model, (torch.randn(7, 11) * 2,))
    assert "aten.elu.default" in islandOps([r for r in reports if r.kind == "forward"])
    backward = [r for r in reports if r.kind == "backward"]
    assert backward and all(r.islands and not r.leftOut for r in backward), [r.leftOut for r in backward]


def test_instance_norm_with_running_statistics_trains_like_eager():
    """InstanceNorm2d(affine, track_running_stats) in training: the statistics per
    sample and channel, and the running ones (repeat, mean, copy) as in eager."""

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.InstanceNorm2d(5, affine=True, track_running_stats=True)

        def forward(self, x):
            return self.norm(x) * 2

    reports = trainAndCompare(Model, (torch.randn(3, 5, 7, 9),))
    forward = [r for r in reports if r.kind == "forward"]
    assert {"aten._native_batch_norm_legit_functional.default", "aten.repeat.default"} <= islandOps(forward)


def test_max_pool_indices_with_nan_inf_and_padding():
    """PyTorch's choices: the first of equal maxima in row-major order, the last NaN
    of a window, and an input position (never the padding) where all are -inf."""
    x = torch.randn(2, 3, 9, 11)
    x[0, 0, :3, :3] = -math.inf  # windows of -inf only, at the padded corner
    x[0, 1, 4, 4] = x[0, 1, 5, 6] = math.nan  # two NaNs in some windows
    x[1, 2, 2:6, 3:7] = 1.5  # ties
    x[1, 1, 2, 4] = x[1, 1, 3, 2] = 5.0  # a tie that row-major and column-major order break apart
    x[1, 0, 0, :] = math.inf

    def fn(a):
        return F.max_pool2d(a, 3, 2, 1, return_indices=True), F.max_pool2d(a, (2, 4), 1, (1, 2), return_indices=True)

    (ev, ei), (ev2, ei2) = fn(x)
    start = reportCount()
    (gv, gi), (gv2, gi2) = compileCpu(fn)(x)
    assert "aten.max_pool2d_with_indices.default" in islandOps(reportsSince(start))
    for e, g in ((ev, gv), (ev2, gv2)):
        torch.testing.assert_close(g, e, equal_nan=True)
    for e, g in ((ei, gi), (ei2, gi2)):
        assert g.dtype == torch.int64 and torch.equal(g, e)


def test_max_pool_values_propagate_nan():
    x = torch.randn(2, 3, 8, 8)
    x[1, 1, 3, 3] = math.nan

    def fn(a):
        return F.max_pool2d(a, 3, 1, 1) + 1

    torch.testing.assert_close(compileCpu(fn)(x), fn(x), equal_nan=True)


TILED_POOLS = [
    ("max_2x2", lambda a: F.max_pool2d(a, 2), (2, 3, 9, 11)),  # the odd last row and column dropped
    ("avg_11x11", lambda a: F.avg_pool2d(a, 11), (1, 2, 37, 25)),  # KernelBench's window, odd sizes
    ("avg_padded_ceil", lambda a: F.avg_pool2d(a, 3, padding=1, ceil_mode=True), (2, 3, 10, 8)),
    ("avg_exclude_pad", lambda a: F.avg_pool2d(a, (2, 3), padding=1, count_include_pad=False), (2, 3, 7, 9)),
    ("max_padded_ceil", lambda a: F.max_pool2d(a, 3, padding=1, ceil_mode=True), (2, 3, 10, 8)),
    ("max_1d", lambda a: F.max_pool1d(a, 4), (3, 4, 19)),
    ("avg_1d", lambda a: F.avg_pool1d(a, 5), (3, 4, 23)),
    ("avg_3d", lambda a: F.avg_pool3d(a, 2), (2, 3, 7, 5, 9)),
    ("max_3d_rect", lambda a: F.max_pool3d(a, (1, 2, 3)), (2, 3, 4, 6, 9)),
    ("adaptive_global", lambda a: F.adaptive_avg_pool2d(a, 1), (2, 5, 7, 7)),
    ("adaptive_max", lambda a: F.adaptive_max_pool2d(a, (2, 3)), (2, 5, 8, 9)),
    ("avg_bf16", lambda a: F.avg_pool2d(a.bfloat16(), 2).float(), (2, 3, 9, 11)),
]


@pytest.mark.parametrize("name,fn,shape", TILED_POOLS, ids=[p[0] for p in TILED_POOLS])
def test_tiling_windows_pool_in_one_reduction(name, fn, shape):
    """Windows as far apart as they are long are one reduction over the kernel
    axes of the input reshaped [.., out, kernel] an axis: no strided slices, one
    kernel, the result eager's (NaN included)."""
    x = torch.randn(*shape)
    x.view(-1)[7] = math.nan
    start = reportCount()
    got = compileCpu(fn)(x)
    torch.testing.assert_close(got, fn(x), equal_nan=True, rtol=1e-5, atol=1e-5)
    islands = [i for r in reportsSince(start) for i in r.islands]
    assert len(islands) == 1
    text = islands[0].text
    assert " step=" not in text and any(f"= {op} " in text for op in ("sum", "max", "mean")), text
    fused = minijit.compile(text).emit("fused")
    assert "1 kernel" in fused.splitlines()[0] and "reduction of" in fused, fused


POOLS = [
    ("max_2d", lambda a: F.max_pool2d(a, 3, 2, 1), (2, 3, 9, 11)),
    ("max_2d_overlap_ceil", lambda a: F.max_pool2d(a, (4, 3), 1, (2, 1), dilation=(1, 2), ceil_mode=True),
     (2, 3, 7, 9)),
    ("max_1d", lambda a: F.max_pool1d(a, 5, 3, 2, ceil_mode=True), (3, 4, 17)),
    ("max_3d", lambda a: F.max_pool3d(a, 3, 2, 1, dilation=2), (2, 3, 7, 5, 9)),
    ("avg_2d", lambda a: F.avg_pool2d(a, 3, 2, 1), (2, 3, 9, 11)),
    ("avg_2d_exclude_ceil", lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     (2, 3, 8, 9)),
    ("avg_2d_divisor", lambda a: F.avg_pool2d(a, (2, 3), (1, 2), divisor_override=5), (2, 3, 7, 9)),
    ("avg_1d", lambda a: F.avg_pool1d(a, 4, 1, 2), (3, 4, 13)),
    ("avg_3d", lambda a: F.avg_pool3d(a, 3, 2, 1), (2, 3, 7, 5, 9)),
    ("adaptive", lambda a: F.adaptive_avg_pool2d(a, (3, 5)) + F.adaptive_max_pool2d(a, (3, 1)), (2, 3, 9, 10)),
    # windows that tile the input: the gradient spread by views, one window an element
    ("max_2d_tiles", lambda a: F.max_pool2d(a, 2), (2, 3, 9, 11)),
    ("max_1d_tiles_padded_ceil", lambda a: F.max_pool1d(a, 4, padding=2, ceil_mode=True), (3, 4, 19)),
    ("avg_2d_tiles_exclude_ceil", lambda a: F.avg_pool2d(a, 3, padding=1, ceil_mode=True, count_include_pad=False),
     (2, 3, 10, 8)),
    ("avg_3d_tiles", lambda a: F.avg_pool3d(a, (1, 2, 3)), (2, 3, 4, 6, 10)),
]


@pytest.mark.parametrize("name,fn,shape", POOLS, ids=[p[0] for p in POOLS])
def test_pool_gradients_match_eager(name, fn, shape):
    """The input's gradient through the pool, the backward op on minijit (and its
    graph through minijit.compile down to PTX); the weights make every window's
    gradient differ, ties send it where PyTorch does."""
    x = torch.randn(*shape)
    x[..., 1, :] = x[..., 2, :]  # equal maxima in some windows
    weight = torch.randn_like(fn(x))
    xe, xg = x.clone().requires_grad_(), x.clone().requires_grad_()
    (fn(xe) * weight).sum().backward()
    start = reportCount()
    (compileCpu(fn)(xg) * weight).sum().backward()
    reports = reportsSince(start)
    backward = [r for r in reports if r.kind == "backward"]
    assert backward and all(r.islands and not r.leftOut for r in backward), [r.leftOut for r in backward]
    assert any("pool" in str(op) and "backward" in str(op) for op in islandOps(backward)), islandOps(backward)
    torch.testing.assert_close(xg.grad, xe.grad, rtol=1e-5, atol=1e-5)
    for island in backward[0].islands:
        assert ".entry" in minijit.compile(island.text, dims=island.translation.hintDims or None).emit("ptx")


def test_what_still_stays_in_pytorch_says_why():
    """Adaptive pools of unequal windows and rand_like."""

    def adaptive(a):
        return F.adaptive_avg_pool2d(a, (2, 4)) * 2

    x = torch.randn(2, 3, 7, 9)
    start = reportCount()
    torch.testing.assert_close(compileCpu(adaptive)(x), adaptive(x))
    reason = leftOut(reportsSince(start))["aten._adaptive_avg_pool2d"]
    assert "unequal sizes" in reason, reason

    def noisy(a):
        return torch.rand_like(a) * 0 + a.exp()

    start = reportCount()
    torch.testing.assert_close(compileCpu(noisy)(x), x.exp())
    assert "Philox" in leftOut(reportsSince(start))["aten.rand_like"]
