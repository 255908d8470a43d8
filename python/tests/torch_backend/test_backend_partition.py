"""Partition decisions: what stays in PyTorch and why, explain(), fallback of a
subgraph minijit refuses, and the backend's registration."""

import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import minijit.torch as mt
from torch_helpers import compileCpu, islandOps, reportCount, reportsSince

aten = torch.ops.aten


def test_unsupported_ops_stay_in_pytorch():
    conv = nn.Conv1d(3, 4, 3)

    def fn(x):
        y = torch.relu(conv(x)) * 2.0  # the convolution stays, relu and mul go to minijit
        return y.to(torch.float64).sum(-1)  # float64: left to PyTorch

    x = torch.randn(2, 3, 10)
    start = reportCount()
    with torch.no_grad():
        got = compileCpu(fn)(x)
        expected = fn(x)
    torch.testing.assert_close(got, expected)
    reports = reportsSince(start)
    left = dict(reports[0].leftOut)
    assert left["aten.convolution"] == "convolutions are not in minijit"
    assert "float64" in left["aten.sum.dim_IntList"]
    assert {"aten.relu.default", "aten.mul.Tensor"} <= islandOps(reports)


def test_dropout_stays_in_pytorch_in_training():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Tanh())
    x = torch.randn(4, 8)
    start = reportCount()
    compileCpu(model)(x).sum().backward()
    reports = reportsSince(start)
    leftOps = {op for r in reports for op, _ in r.leftOut}
    assert any("rand" in op or "bernoulli" in op for op in leftOps), leftOps
    assert any(r.islands for r in reports)


def test_explain_names_islands_kernels_and_fallbacks(capsys):
    conv = nn.Conv1d(2, 2, 3)

    def fn(x):
        return torch.softmax(conv(x) * 3.0, -1)

    text = mt.explain(fn, torch.randn(1, 2, 8), options={"device": "cpu"})
    printed = capsys.readouterr().out
    assert text in printed
    assert "inference graph: 1 minijit subgraph(s)" in text or "forward graph: 1 minijit subgraph(s)" in text
    assert "aten._softmax" in text and "kernel(s)" in text
    assert "left to PyTorch: aten.convolution: convolutions are not in minijit" in text
    assert "total: 1 minijit subgraph(s)" in text


def test_a_subgraph_minijit_refuses_falls_back_with_a_warning(monkeypatch):
    from minijit.torch import lowerings

    def broken(ctx, node):  # emits an op minijit does not have
        return ctx.e._emit("f32", ctx.tensor(node.args[0]).shape, "no_such_op", [ctx.tensor(node.args[0]).name])

    monkeypatch.setitem(lowerings.LOWERINGS, aten.exp.default, broken)

    def fn(x):
        return torch.exp(x) + 1.0

    x = torch.randn(5)
    start = reportCount()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compileCpu(fn)(x)
    torch.testing.assert_close(got, fn(x))
    messages = [str(w.message) for w in caught if "falls back" in str(w.message)]
    assert messages and "aten.exp" in messages[0], [str(w.message) for w in caught]
    reports = reportsSince(start)
    assert reports[0].failed and not reports[0].islands


def test_min_ops_drops_small_islands():
    def fn(x):
        return torch.relu(x)

    start = reportCount()
    compileCpu(fn, min_ops=2)(torch.randn(4))
    reports = reportsSince(start)
    assert not reports[0].islands
    assert reports[0].leftOut == [("aten.relu", "an island too small to be worth a kernel")]


def test_registered_under_its_name():
    from torch._dynamo.backends.registry import list_backends, lookup_backend
    assert "minijit" in list_backends()
    assert lookup_backend("minijit") is mt.backend


def test_bad_device_option_is_a_clear_error():
    with pytest.raises(Exception, match="device must be 'cpu' or 'cuda'"):
        torch.compile(lambda x: x + 1, backend="minijit", options={"device": "tpu"})(torch.randn(3))


def test_text_of_an_island_is_minijit_text():
    def fn(x, w):
        return F.layer_norm(x @ w, (4,))

    start = reportCount()
    with torch.no_grad():
        compileCpu(fn)(torch.randn(3, 5), torch.randn(5, 4))
    text = reportsSince(start)[0].islands[0].text
    assert text.startswith("graph minijit_0(%a0: f32[3, 5], %a1: f32[5, 4]) {")
    assert "matmul %a0, %a1" in text and "rsqrt" in text


@pytest.mark.parametrize("importFirst", [False, True])
def test_entry_point_finds_the_backend(tmp_path, importFirst):
    """An installed package publishes the backend as an entry point: Dynamo finds
    it by name, whether or not minijit.torch was imported first."""
    import os
    import pathlib
    import subprocess
    import sys

    info = tmp_path / "minijit_probe-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: minijit-probe\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[torch_dynamo_backends]\nminijit = minijit.torch:backend\n")
    script = f"""
import sys, torch
from torch._dynamo.backends.registry import list_backends, lookup_backend
if {importFirst}:
    import minijit.torch
assert "minijit" in list_backends(), list_backends()
assert ("minijit.torch" in sys.modules) == {importFirst}
fn = lookup_backend("minijit")
import minijit.torch as mt
assert fn is mt.backend
x = torch.randn(5)
y = torch.compile(lambda x: x * 2 + 1, backend="minijit")(x)
torch.testing.assert_close(y, x * 2 + 1)
print("ok")
"""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(pathlib.Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_gpu_only_options_are_accepted_in_cpu_mode():
    x = torch.randn(6)
    got = compileCpu(lambda x: torch.tanh(x) * 2, graph_replay=True)(x)
    torch.testing.assert_close(got, torch.tanh(x) * 2)


def test_an_island_that_fails_at_run_time_runs_in_pytorch(monkeypatch):
    """A minijit error when an island runs (a compile for new sizes, a tensor
    the package refuses) runs the island's own ATen ops instead, with a warning."""
    import minijit
    from minijit.torch import library

    def fn(x, w):
        return torch.tanh(x @ w) * 2

    run = compileCpu(fn, min_ops=1)
    x, w = torch.randn(5, 6), torch.randn(6, 3)
    torch.testing.assert_close(run(x, w), fn(x, w))  # compiled, run by minijit

    def refuse(*args, **kwargs):
        raise minijit.GraphError("refused for the test")

    monkeypatch.setattr(library, "evaluate", refuse)
    with pytest.warns(RuntimeWarning, match="runs in PyTorch this time: refused for the test"):
        got = run(x, w)
    torch.testing.assert_close(got, fn(x, w))
