"""An empty batch through the backend on the CPU reference (issue 42): minijit
takes tensors with a dimension of 0 (they fell back to PyTorch before), and
its results match eager's: empty activations, zero sums over the batch, a NaN
mean, zero gradients."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_helpers import compileCpu, islandOps, reportCount, reportsSince


class Head(nn.Module):
    def __init__(self, d=17, h=13):
        super().__init__()
        self.fc = nn.Linear(d, h)
        self.norm = nn.LayerNorm(h)

    def forward(self, x):
        y = self.norm(F.relu(self.fc(x)))
        return torch.softmax(y, -1), y.sum(0), y.mean()


def test_an_empty_batch_runs_on_minijit_and_matches_eager():
    model = Head()
    x = torch.randn(0, 17)
    with torch.no_grad():
        expected = model(x)
        start = reportCount()
        got = compileCpu(model)(x)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        torch.testing.assert_close(g, e, equal_nan=True)
    reports = reportsSince(start)
    assert reports and all(r.islands for r in reports), [r.kind for r in reports]
    assert "aten.addmm.default" in islandOps(reports)


def test_training_on_an_empty_batch_gives_zero_gradients():
    torch.manual_seed(2)
    eager, compiled = nn.Linear(17, 5), nn.Linear(17, 5)
    compiled.load_state_dict(eager.state_dict())
    x = torch.randn(0, 17)
    run = compileCpu(compiled)
    for model, fn in ((eager, eager), (compiled, run)):
        model.zero_grad()
        fn(x).sum().backward()
    torch.testing.assert_close(compiled.weight.grad, eager.weight.grad)
    torch.testing.assert_close(compiled.bias.grad, torch.zeros(5))
