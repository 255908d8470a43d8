"""The GPU run path against the CPU reference (SKIPPED without a GPU)."""
import numpy as np
import pytest

import minijit
from conftest import sample

ROWS = "graph rows(%x: f32[B, 256]) {\n  %s = sum %x axes=[1] keepdim=true\n  %y = div %x, %s\n  return %y\n}\n"


def test_numpy_run_matches_the_reference(gpu):
    c = minijit.compile(sample("softmax.mj"))
    (x,) = minijit.random_inputs(sample("softmax.mj"), seed=1)
    (y,) = c.run(x)
    (ref,) = minijit.evaluate(sample("softmax.mj"), x)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)


def test_devices_list_the_gpu(gpu):
    d = minijit.devices()
    assert d and d[0]["ordinal"] == 0 and d[0]["arch"].startswith("sm_")


def test_torch_run_on_the_current_stream(gpu):
    torch = pytest.importorskip("torch")
    c = minijit.compile(sample("mlp.mj"), name="mlp_layer")
    x, w = minijit.random_inputs(c.graph, seed=2)
    xt, wt = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        (y,) = c.run(xt, wt)
        assert isinstance(y, torch.Tensor) and y.device == xt.device
    s.synchronize()
    (ref,) = minijit.evaluate(c.graph, x, w)
    np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-4, atol=1e-5)


def test_torch_named_dims_and_refusals(gpu):
    torch = pytest.importorskip("torch")
    c = minijit.compile(ROWS)
    for b in (3, 64):
        x = torch.rand(b, 256, device="cuda") + 0.5
        (y,) = c.run(x)
        torch.cuda.synchronize()
        (ref,) = minijit.evaluate(ROWS, x.cpu().numpy())
        np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-5, atol=1e-7)
    with pytest.raises(minijit.GraphError, match="not contiguous"):
        c.run(torch.rand(256, 8, device="cuda").t())
    with pytest.raises(minijit.GraphError, match="float64"):
        c.run(torch.rand(4, 256, device="cuda", dtype=torch.float64))
    with pytest.raises(minijit.GraphError, match="B is given as 5"):
        c.run(torch.rand(4, 256, device="cuda"), dims={"B": 5})


def test_dlpack_object_runs_in_place(gpu):
    torch = pytest.importorskip("torch")

    class Foreign:  # only __dlpack__ and __dlpack_device__, as CuPy or JAX give
        def __init__(self, t):
            self.t, self.shape = t, tuple(t.shape)

        def __dlpack__(self, **kw):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    c = minijit.compile(sample("softmax.mj"))
    (x,) = minijit.random_inputs(sample("softmax.mj"), seed=4)
    (out,) = c.run(Foreign(torch.from_numpy(x).cuda()))
    torch.cuda.synchronize()
    (ref,) = minijit.evaluate(sample("softmax.mj"), x)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-7)


def test_compare_gives_both_runs(gpu):
    r = minijit.compare(sample("softmax.mj"), seed=0)
    assert [run["label"] for run in r["runs"]] == ["fused", "unfused"]
    assert all(run["ok"] for run in r["runs"])
    assert r["runs"][0]["kernels"] == 1 and r["runs"][1]["kernels"] > 1
    assert r["profile"]["schema"] == 1
