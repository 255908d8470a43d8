#!/usr/bin/env python3
"""KernelBench-style reference models through torch.compile(backend="minijit"),
checked against eager as KernelBench checks them (5 seeds, fresh inputs each,
no_grad, atol = rtol = 1e-4 in fp32), timed beside eager and Inductor.

    PYTHONPATH=python MINIJIT_LIBRARY=build/lib/libminijit_c.so \\
        python3 samples/python/kernelbench_model.py [--problem KernelBench/level1/23_Softmax.py ...]

Without --problem it runs the built-in problems below, written as KernelBench
writes its reference files (class Model, get_inputs, get_init_inputs) after one
shared PRELUDE (the imports, and get_init_inputs for a Model without arguments). With
--problem, each file is loaded unchanged. Prints per problem what stayed in
PyTorch (explain), the worst difference over the seeds, and on a GPU the time
of a call for eager, minijit and Inductor, then the geometric mean of
Inductor's time over minijit's. Exit status 1 when a problem differs from
eager beyond the tolerance. Without a GPU the built-in problems run small on
minijit's CPU reference, untimed.
"""

import argparse
import importlib.util
import io
import math
import sys
import types

import backend_common as common
import torch

import minijit.torch  # noqa: F401

TOLERANCE = 1e-4
SEEDS = 5

# What every built-in problem starts with; a problem whose Model takes arguments
# defines its own get_init_inputs after it.
PRELUDE = '''
import torch
import torch.nn as nn


def get_init_inputs():
    return []
'''

BUILTIN = {
    "level1_softmax": '''
class Model(nn.Module):
    """Simple model that performs a Softmax activation."""
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)

batch_size = BATCH
dim = 16384

def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]
''',
    "level1_layernorm": '''
class Model(nn.Module):
    """Simple model that performs Layer Normalization."""
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)

batch_size = BATCH
features = 64
dim1 = 64
dim2 = 64

def get_inputs():
    x = torch.randn(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [(features, dim1, dim2)]
''',
    "level1_matmul": '''
class Model(nn.Module):
    """Simple model that performs a single square matrix multiplication (C = A * B)"""
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)

N = 8 * BATCH

def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]
''',
    "level1_rmsnorm": '''
class Model(nn.Module):
    """Simple model that performs RMS Normalization."""
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms

batch_size = BATCH
features = 64
dim1 = 256
dim2 = 256

def get_inputs():
    x = torch.randn(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [features]
''',
    "level2_gemm_gelu_softmax": '''
class Model(nn.Module):
    """Simple model that performs a matrix multiplication, applies GELU, and then applies Softmax."""
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = torch.nn.functional.gelu(x)
        x = torch.nn.functional.softmax(x, dim=1)
        return x

batch_size = 8 * BATCH
in_features = 100
out_features = 10

def get_inputs():
    return [torch.randn(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features]
''',
    "level2_matmul_sum_max_logsumexp": '''
class Model(nn.Module):
    """Model that performs a matrix multiplication, summation, max, average pooling-free reductions."""
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = torch.sum(x, dim=1, keepdim=True)
        x = torch.max(x, dim=1, keepdim=True)[0]
        x = torch.mean(x, dim=1, keepdim=True)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        return x

batch_size = 8 * BATCH
in_features = 10
out_features = 5

def get_inputs():
    return [torch.randn(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features]
''',
}


def load(name, source=None, path=None):
    module = types.ModuleType(name)
    if path is not None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        exec(compile(source, name, "exec"), module.__dict__)
    return module


def toDevice(values, dev):
    return [v.to(dev) if isinstance(v, torch.Tensor) else v for v in values]


def check(problem, dev):
    """Worst relative difference of minijit's outputs against eager over the seeds."""
    torch.manual_seed(42)
    model = problem.Model(*problem.get_init_inputs()).to(dev).eval()
    compiled = torch.compile(model, backend="minijit")
    worst = 0.0
    with torch.no_grad():
        for seed in range(SEEDS):
            torch.manual_seed(seed)
            inputs = toDevice(problem.get_inputs(), dev)
            expected, got = model(*inputs), compiled(*inputs)
            if got.shape != expected.shape:
                return math.inf, model, compiled, inputs
            close = torch.allclose(got, expected, atol=TOLERANCE, rtol=TOLERANCE)
            d = (got - expected).abs() / (expected.abs() + 1)
            worst = max(worst, d.max().item() if close else max(d.max().item(), 2 * TOLERANCE))
    return worst, model, compiled, inputs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", action="append", default=[], help="a KernelBench reference file")
    ap.add_argument("--no-inductor", action="store_true")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = common.device()
    batch = "16" if dev == "cuda" else "2"
    problems = [(p, load(f"problem{i}", path=p)) for i, p in enumerate(a.problem)]
    if not problems:
        problems = [(n, load(n, PRELUDE + s.replace("BATCH", batch))) for n, s in BUILTIN.items()]
    failed, ratios = [], []
    for name, problem in problems:
        print(f"== {name}")
        torch._dynamo.reset()
        try:
            worst, model, compiled, inputs = check(problem, dev)
        except Exception as e:  # a backend failure is a failed problem, the run goes on
            print(f"   ERROR {type(e).__name__}: {e}")
            failed.append(name)
            continue
        ok = worst <= TOLERANCE
        if not ok:
            failed.append(name)
        with torch.no_grad():
            text = minijit.torch.explain(model, *inputs, file=io.StringIO())
        torch._dynamo.reset()
        for line in text.splitlines():
            if "left to PyTorch" in line or "fell back" in line or line.startswith("total"):
                print("   " + line.strip())
        line = f"   {SEEDS} seeds: worst |diff| / (|eager| + 1) = {worst:.2e} ({'ok' if ok else 'FAILED'})"
        if dev == "cuda":
            with torch.no_grad():
                times = {"eager": common.timeStep(lambda: model(*inputs))[0],
                         "minijit": common.timeStep(lambda: compiled(*inputs))[0]}
                if not a.no_inductor:
                    inductor = torch.compile(model)
                    times["inductor"] = common.timeStep(lambda: inductor(*inputs))[0]
                    ratios.append(times["inductor"] / times["minijit"])
            line += "; us: " + ", ".join(f"{k} {v:.1f}" for k, v in times.items())
        print(line)
    if ratios:
        print(f"geomean of Inductor's time over minijit's: "
              f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f} over {len(ratios)} problems")
    print(f"{len(problems) - len(failed)} of {len(problems)} problems match eager"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
