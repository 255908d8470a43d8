"""The GPU path (device="cuda"): islands compiled by minijit.compile and run on
PyTorch's tensors and stream, against eager. SKIPPED without a CUDA device."""

import pytest
import torch

from test_backend_ops import CASES
from torch_helpers import islandOps, reportCount, reportsSince

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device: the GPU path is not tested here")


def tolerance(out):
    if out.dtype == torch.bfloat16:
        return dict(rtol=2e-2, atol=2e-2)
    if out.dtype == torch.float16:
        return dict(rtol=2e-3, atol=2e-3)
    return dict(rtol=1e-4, atol=1e-5)


@pytest.fixture(autouse=True)
def noTf32():
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = saved


# Cases whose factory calls Dynamo traces on the CPU even under torch.device("cuda")
# (arange in torch 2.11): the same ops, the device given.
ON_THE_INPUTS_DEVICE = {
    "full_arange": lambda a: a + torch.full((4,), 2.5, device=a.device) * torch.arange(4, device=a.device),
}


@pytest.mark.parametrize("name,fn,inputs,op", CASES, ids=[c[0] for c in CASES])
def test_op_on_the_gpu_matches_eager(name, fn, inputs, op):
    inputs = [x.cuda() for x in inputs]
    fn = ON_THE_INPUTS_DEVICE.get(name, fn)
    with torch.device("cuda"):  # the tensors a case makes (full, arange, a mask) on the inputs' device
        expected = fn(*inputs)
        start = reportCount()
        got = torch.compile(fn, backend="minijit")(*inputs)
    reports = reportsSince(start)
    assert op in islandOps(reports), f"{op} did not reach minijit: {[r.leftOut for r in reports]}"
    assert not any(r.failed for r in reports), [r.failed for r in reports]
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for e, g in zip(expected, got):
        assert g.device == e.device and g.dtype == e.dtype and g.shape == e.shape and g.stride() == e.stride()
        if e.is_floating_point():
            torch.testing.assert_close(g, e, **tolerance(e))
        else:
            assert torch.equal(g, e)


@pytest.mark.parametrize("replay", [False, True], ids=["launches", "graph_replay"])
def test_mlp_training_on_the_gpu_matches_eager(replay):
    from test_backend_models import Mlp, trainSteps
    torch.manual_seed(1)
    eager, compiled = Mlp().cuda(), Mlp().cuda()
    compiled.load_state_dict(eager.state_dict())
    x, target = torch.randn(64, 16, device="cuda"), torch.randn(64, 16, device="cuda")
    expected = trainSteps(eager, x, target, 3)
    run = torch.compile(compiled, backend="minijit", options={"graph_replay": replay})
    got = trainSteps(run, x, target, 3)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)
    for pe, pg in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(pg, pe, rtol=1e-4, atol=1e-5)


def test_symbolic_batch_on_the_gpu():
    from test_backend_models import Mlp
    model = Mlp().cuda()
    run = torch.compile(model, backend="minijit")
    with torch.no_grad():
        for batch in (4, 6, 9, 33):
            x = torch.randn(batch, 16, device="cuda")
            torch.testing.assert_close(run(x), model(x), rtol=1e-4, atol=1e-5)


def test_runs_on_the_current_stream():
    def fn(a, b):
        return torch.softmax(a @ b, -1) * 2.0

    a, b = torch.randn(256, 128, device="cuda"), torch.randn(128, 64, device="cuda")
    run = torch.compile(fn, backend="minijit")
    run(a, b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = run(a, b)
    torch.cuda.current_stream().wait_stream(side)
    torch.testing.assert_close(got, fn(a, b), rtol=1e-4, atol=1e-5)


def test_ddp_with_nccl_on_the_gpu_trains_like_eager(tmp_path):
    """DistributedDataParallel over NCCL (one process, one GPU): Dynamo splits the
    graph at the gradient buckets; each piece runs on minijit, the all-reduce on
    NCCL, and two training steps match eager's."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from test_backend_models import TanhStack, trainSteps

    if not dist.is_available() or not dist.is_nccl_available():
        pytest.skip("torch.distributed with NCCL is not available")
    dist.init_process_group("nccl", init_method=f"file://{tmp_path}/rendezvous", rank=0, world_size=1)
    try:
        torch.manual_seed(4)
        eager, compiled = TanhStack().cuda(), TanhStack().cuda()
        compiled.load_state_dict(eager.state_dict())
        ddpEager = DistributedDataParallel(eager, bucket_cap_mb=1)
        ddpCompiled = DistributedDataParallel(compiled, bucket_cap_mb=1)
        run = torch.compile(ddpCompiled, backend="minijit")
        x, target = torch.randn(8, 256, device="cuda"), torch.randn(8, 256, device="cuda")
        start = reportCount()
        expected = trainSteps(ddpEager, x, target, 2)
        got = trainSteps(run, x, target, 2)
        for e, g in zip(expected, got):
            torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)
        for pe, pg in zip(eager.parameters(), compiled.parameters()):
            torch.testing.assert_close(pg, pe, rtol=1e-4, atol=1e-5)
        forwards = [r for r in reportsSince(start) if r.kind == "forward"]
        assert len(forwards) >= 2, "DDP's optimizer should have split the graph at a bucket"
        assert all(r.islands for r in forwards)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("causal,gqa", [(False, False), (True, False), (True, True)],
                         ids=["plain", "causal", "grouped"])
def test_sdpa_without_gradient_is_one_attention_kernel_on_the_gpu(dtype, causal, gqa):
    """F.scaled_dot_product_attention under no_grad: minijit's attention kernel
    (Hopper's, or mma.sync's before sm_90) against PyTorch's own, at a
    sequence length that is not a multiple of the tiles."""
    import minijit
    g = torch.Generator(device="cuda").manual_seed(5)
    heads, kv = 8, (2 if gqa else 8)
    q = torch.randn(2, heads, 300, 64, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(2, kv, 300, 64, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(2, kv, 300, 64, device="cuda", dtype=dtype, generator=g)

    def fn(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    with torch.no_grad():
        start = reportCount()
        compiled = torch.compile(fn, backend="minijit")
        compiled(q, k, v)  # the compile; then fresh inputs, so nothing of the first call can pass
        q, k, v = (torch.randn(t.shape, device="cuda", dtype=dtype, generator=g) for t in (q, k, v))
        expected = fn(q, k, v)
        out = compiled(q, k, v)
    reports = reportsSince(start)
    assert not any(r.failed or r.leftOut for r in reports), [(r.failed, r.leftOut) for r in reports]
    islands = [island for r in reports for island in r.islands]
    assert len(islands) == 1
    fused = minijit.compile(islands[0].text).emit("fused")
    assert ": 1 kernel" in fused.splitlines()[0] and "attention %" in fused, fused
    torch.testing.assert_close(out, expected, **tolerance(expected))


def test_sdpa_in_f32_stays_in_pytorch_on_the_gpu():
    q, k, v = (torch.randn(2, 4, 100, 64, device="cuda") for _ in range(3))

    def fn(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) * 2

    with torch.no_grad():
        start = reportCount()
        got = torch.compile(fn, backend="minijit")(q, k, v)
    left = {op: reason for r in reportsSince(start) for op, reason in r.leftOut}
    assert any(op.startswith("aten._scaled_dot_product") and "in f32" in reason
               for op, reason in left.items()), left
    torch.testing.assert_close(got, fn(q, k, v), rtol=1e-4, atol=1e-5)
