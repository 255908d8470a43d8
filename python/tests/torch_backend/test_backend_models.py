"""Whole models through the backend on the CPU reference: forward, a training
step through AOTAutograd's backward, KernelBench-style reference models, and a
batch size that Dynamo makes symbolic."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_helpers import compileCpu, islandOps, reportCount, reportsSince


class Mlp(nn.Module):
    """The lecture's MLP: Linear, GELU, Linear, LayerNorm, then a loss."""

    def __init__(self, d=16, h=32):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(self.fc2(F.gelu(self.fc1(x))))


def test_mlp_forward_matches_eager():
    model = Mlp()
    x = torch.randn(8, 16)
    with torch.no_grad():
        expected = model(x)
        start = reportCount()
        got = compileCpu(model)(x)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    reports = reportsSince(start)
    assert [r.kind for r in reports] == ["inference"]
    assert {"aten.addmm.default", "aten.native_layer_norm.default"} <= islandOps(reports)
    assert not reports[0].leftOut, reports[0].leftOut


def trainSteps(model, x, target, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses


def test_mlp_training_steps_match_eager():
    torch.manual_seed(1)
    eager = Mlp()
    compiled = Mlp()
    compiled.load_state_dict(eager.state_dict())
    x, target = torch.randn(8, 16), torch.randn(8, 16)
    start = reportCount()
    expected = trainSteps(eager, x, target, 3)
    got = trainSteps(compileCpu(compiled), x, target, 3)
    reports = reportsSince(start)
    assert {r.kind for r in reports} == {"forward", "backward"}
    backward = [r for r in reports if r.kind == "backward"][0]
    assert backward.islands and "aten.mm.default" in islandOps([backward])
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    for pe, pg in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(pg, pe, rtol=1e-5, atol=1e-5)


def test_classifier_cross_entropy_training_matches_eager():
    """Embedding, log-softmax and a gather through the loss, forward and backward."""

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 8)
            self.fc = nn.Linear(8, 5)

        def forward(self, ids, labels):
            h = self.emb(ids).mean(1)
            return F.cross_entropy(self.fc(torch.tanh(h)), labels)

    torch.manual_seed(2)
    eager, compiled = Classifier(), Classifier()
    compiled.load_state_dict(eager.state_dict())
    ids, labels = torch.randint(0, 20, (6, 4)), torch.randint(0, 5, (6,))
    run = compileCpu(compiled)
    start = reportCount()
    for model, fn in ((eager, eager), (compiled, run)):
        loss = fn(ids, labels)
        loss.backward()
        model.loss = loss.detach()
    # minijit ran the forward and the backward (not PyTorch alone)
    reports = reportsSince(start)
    assert {r.kind for r in reports} >= {"forward", "backward"}
    assert all(r.islands for r in reports), [r.kind for r in reports if not r.islands]
    torch.testing.assert_close(compiled.loss, eager.loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compiled.fc.weight.grad, eager.fc.weight.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compiled.emb.weight.grad, eager.emb.weight.grad, rtol=1e-5, atol=1e-6)


# KernelBench-style reference models, written as KernelBench writes them.
class GemmSwishScale(nn.Module):
    """Level-2 style: a Linear, Swish, a scaling, then a row softmax."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        x = self.gemm(x)
        x = x * torch.sigmoid(x)
        x = x * self.scale
        return torch.softmax(x, dim=1)


class RmsNormModel(nn.Module):
    """Level-1 style: RMS normalization over the feature axis."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms


class MatmulReduceModel(nn.Module):
    """Level-2 style: a matmul, a max over one axis, then a sum and a subtraction."""

    def forward(self, a, b):
        c = torch.matmul(a, b)
        return c.amax(dim=-1, keepdim=True) - c.sum(dim=-1, keepdim=True) / c.shape[-1]


def gemmInputs():
    return [torch.randn(16, 32)]


def rmsInputs():
    return [torch.randn(4, 8, 6, 5)]


def matmulInputs():
    return [torch.randn(3, 8, 16), torch.randn(3, 16, 12)]


def test_kernelbench_style_models_match_eager():
    cases = [(GemmSwishScale(32, 24, 2.0), gemmInputs), (RmsNormModel(8), rmsInputs),
             (MatmulReduceModel(), matmulInputs)]
    for model, getInputs in cases:
        torch._dynamo.reset()
        for seed in range(2):
            torch.manual_seed(seed)
            inputs = getInputs()
            with torch.no_grad():
                expected = model(*inputs)
                start = reportCount()
                got = compileCpu(model)(*inputs)
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
            assert all(r.islands for r in reportsSince(start))


def test_symbolic_batch_size_becomes_a_named_dimension():
    model = Mlp()
    run = compileCpu(model)
    start = reportCount()
    with torch.no_grad():
        for batch in (4, 6, 9):
            x = torch.randn(batch, 16)
            torch.testing.assert_close(run(x), model(x), rtol=1e-5, atol=1e-5)
    reports = reportsSince(start)
    texts = [island.text for r in reports for island in r.islands]
    # batch 4 compiles static; batch 6 recompiles with the batch symbolic; batch 9 reuses it
    assert len(reports) == 2, [r.kind for r in reports]
    assert "f32[4, 16]" in texts[0]
    header = texts[1].splitlines()[0]
    assert "f32[s" in header and "16]" in header, header
    assert reports[1].islands[0].lastDims and 9 in reports[1].islands[0].lastDims.values()


def test_dynamic_true_from_the_start():
    def fn(x, y):
        return torch.softmax(x @ y, -1).sum(0)

    run = torch.compile(fn, backend="minijit", dynamic=True, options={"device": "cpu"})
    start = reportCount()
    for n in (3, 5):
        x, y = torch.randn(n, 7), torch.randn(7, n + 1)
        torch.testing.assert_close(run(x, y), fn(x, y), rtol=1e-5, atol=1e-5)
    # one compile with named sizes served both, and minijit ran it
    reports = reportsSince(start)
    assert len(reports) == 1 and reports[0].islands
    assert "aten.mm.default" in islandOps(reports)


def test_gpt2_block_forward_and_backward_match_eager():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    config = transformers.GPT2Config(n_embd=32, n_head=4, n_layer=1, n_positions=8, resid_pdrop=0.0,
                                     embd_pdrop=0.0, attn_pdrop=0.0)
    config._attn_implementation = "eager"
    torch.manual_seed(3)
    eager = GPT2Block(config, layer_idx=0)
    compiled = GPT2Block(config, layer_idx=0)
    compiled.load_state_dict(eager.state_dict())
    h = torch.randn(2, 8, 32)

    def first(out):
        return out[0] if isinstance(out, (tuple, list)) else out

    start = reportCount()
    expected = first(eager(h))
    got = first(compileCpu(compiled)(h))
    expected.square().mean().backward()
    got.square().mean().backward()
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    for (name, pe), pg in zip(eager.named_parameters(), compiled.parameters()):
        torch.testing.assert_close(pg.grad, pe.grad, rtol=1e-4, atol=1e-5, msg=name)
    reports = reportsSince(start)
    assert {"aten.bmm.default", "aten._softmax.default", "aten.native_layer_norm.default"} <= islandOps(reports)


class TanhStack(nn.Module):
    """Six Linear(256, 256) with tanh: 1.5 MB of parameters, two 1 MB buckets."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(256, 256) for _ in range(6))

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


def test_ddp_with_gloo_trains_like_eager(tmp_path):
    """DistributedDataParallel (one process, gloo): Dynamo splits the graph at the
    gradient buckets and compiles each piece with FakeTensor inputs."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/rendezvous", rank=0, world_size=1)
    try:
        torch.manual_seed(4)
        eager = TanhStack()
        compiled = TanhStack()
        compiled.load_state_dict(eager.state_dict())
        ddpEager = DistributedDataParallel(eager, bucket_cap_mb=1)
        ddpCompiled = DistributedDataParallel(compiled, bucket_cap_mb=1)
        run = compileCpu(ddpCompiled)
        x, target = torch.randn(8, 256), torch.randn(8, 256)
        start = reportCount()
        expected = trainSteps(ddpEager, x, target, 2)
        got = trainSteps(run, x, target, 2)
        for e, g in zip(expected, got):
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
        for pe, pg in zip(eager.parameters(), compiled.parameters()):
            torch.testing.assert_close(pg, pe, rtol=1e-5, atol=1e-5)
        forwards = [r for r in reportsSince(start) if r.kind == "forward"]
        assert len(forwards) >= 2, "DDP's optimizer should have split the graph at a bucket"
        assert all(r.islands for r in forwards)
    finally:
        dist.destroy_process_group()


def test_an_input_whose_size_is_a_product_of_sizes():
    """A subgraph input of size 2*s0 (a view made in another subgraph) is declared
    as its factors [2, s0] and reshaped in the graph."""

    def fn(x):
        y = torch.tanh(x.reshape(-1, 8))  # [2*s0, 8]
        z = (y.to(torch.float64) * 3).to(torch.float32)  # float64 stays in PyTorch
        return torch.softmax(z + 1, -1).sum(0)

    run = compileCpu(fn)
    start = reportCount()
    for n in (3, 5):
        x = torch.randn(n, 16)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(run(x), fn(x), rtol=1e-5, atol=1e-5)
    reports = reportsSince(start)
    texts = [i.text for r in reports for i in r.islands]
    assert any("[2, s" in t.splitlines()[0] for t in texts), texts
    assert "aten._softmax.default" in islandOps(reports)


def test_batch_norm_training_and_eval_match_eager():
    """Level-2 style Gemm + BatchNorm1d: batch statistics and running-stat updates
    in training (the backward too), running statistics in eval."""
    torch.manual_seed(5)
    eager = nn.Sequential(nn.Linear(12, 8), nn.BatchNorm1d(8), nn.ReLU())
    compiled = nn.Sequential(nn.Linear(12, 8), nn.BatchNorm1d(8), nn.ReLU())
    compiled.load_state_dict(eager.state_dict())
    x, target = torch.randn(16, 12), torch.randn(16, 8)
    start = reportCount()
    expected = trainSteps(eager, x, target, 2)
    got = trainSteps(compileCpu(compiled), x, target, 2)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    for (name, te), tg in zip(eager.state_dict().items(), compiled.state_dict().values()):
        torch.testing.assert_close(tg.float(), te.float(), rtol=1e-5, atol=1e-5, msg=name)
    assert "aten._native_batch_norm_legit_functional.default" in islandOps(reportsSince(start))
    eager.eval()
    compiled.eval()
    torch._dynamo.reset()
    start = reportCount()
    with torch.no_grad():
        torch.testing.assert_close(compileCpu(compiled)(x), eager(x), rtol=1e-5, atol=1e-5)
    assert "aten._native_batch_norm_legit_no_training.default" in islandOps(reportsSince(start))
