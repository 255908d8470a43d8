#!/usr/bin/env python3
"""The lecture's MLP training step through torch.compile(backend="minijit"),
beside eager PyTorch and Inductor (torch.compile's default backend).

The model is the C++ sample's (samples/mlp_train.mj): 16 x (nn.Linear(128, 128),
then F.gelu in its erf form), x [128, 128], loss = model(x).mean(), then
loss.backward(). Each variant starts from the same weights; the loss and every
gradient are compared with eager's (TF32 off, tolerance 1e-4 relative to the
largest value). Prints per variant (eager, minijit, minijit with CUDA-graph replay, Inductor)
the time of a step (synchronized median), the host time of the call alone, and
the CUDA kernels a step launches. Then each whole step (Python, Dynamo and
autograd's launches, minijit's islands among them) captured once in a CUDA graph
(torch.cuda.graph, the input in a static tensor) and replayed: what a step costs
without its host time, beside eager's and Inductor's steps captured the same way;
and the same with the SGD update after the backward (torch.optim.SGD, lr 0.01,
PyTorch's foreach kernels under every backend), to set beside the C++ sample's
replayed step (sample_mlp_train: the gradients accumulated in place inside its
fused kernels).

    PYTHONPATH=python MINIJIT_LIBRARY=build/lib/libminijit_c.so python3 samples/python/mlp_backend.py

Exit status 0 when minijit's step matches eager, 1 when it does not. Without a
GPU it runs minijit's CPU reference (device="cpu") and times nothing.
"""

import argparse
import copy
import sys

import backend_common as common
import torch
import torch.nn as nn
import torch.nn.functional as F

import minijit.torch  # noqa: F401  (registers backend="minijit")

LAYERS, WIDTH, BATCH, TOLERANCE, LR = 16, 128, 128, 1e-4, 0.01


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = F.gelu(layer(x))
        return x


def step(model, x):
    for p in model.parameters():
        p.grad = None
    loss = model(x).mean()
    loss.backward()
    return loss


def captured(run, model, x, sgd=False):
    """A replay of one step of `run` captured in a CUDA graph: the warm-up and
    the capture on one side stream (the islands' last runs were on it), the
    gradients allocated in the graph's pool; with sgd, the update by
    torch.optim.SGD (lr LR) captured after the backward (the warm-up leaves the
    weights as they were). Returns the replay and the loss."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            step(run, x)
    torch.cuda.current_stream().wait_stream(stream)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, foreach=True) if sgd else None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        loss = step(run, x)
        if optimizer is not None:
            optimizer.step()
    return graph.replay, loss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--no-inductor", action="store_true", help="skip Inductor (it needs Triton)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = common.device()
    torch.manual_seed(0)
    base = Mlp().to(dev)
    x = torch.randn(BATCH, WIDTH, device=dev)

    eager = copy.deepcopy(base)
    refLoss = step(eager, x)
    refGrads = [p.grad.clone() for p in eager.parameters()]
    scale = max([refLoss.abs().item()] + [g.abs().max().item() for g in refGrads])

    print(f"minijit.torch.explain (one training step, {dev}):")
    minijit.torch.explain(copy.deepcopy(base), x, backward=True)
    torch._dynamo.reset()

    variants = [("eager", copy.deepcopy(base), None),
                ("minijit", copy.deepcopy(base), dict(backend="minijit"))]
    if dev == "cuda":
        variants.append(("minijit+replay", copy.deepcopy(base),
                         dict(backend="minijit", options={"graph_replay": True})))
    if dev == "cuda" and not a.no_inductor:
        variants.append(("inductor", copy.deepcopy(base), dict()))
    ok = True
    print(f"\n{'variant':<15} {'step us':>10} {'host us':>10} {'kernels':>8} {'max |diff| vs eager':>20}")
    for name, model, compileArgs in variants:
        run = model if compileArgs is None else torch.compile(model, **compileArgs)
        loss = step(run, x)  # compiles
        diffs = [common.maxDiff(loss, refLoss)] + \
            [common.maxDiff(p.grad, g) for p, g in zip(model.parameters(), refGrads)]
        worst = max(diffs) / scale
        if name.startswith("minijit") and not worst <= TOLERANCE:
            ok = False
        if dev == "cuda":
            wall, host = common.timeStep(lambda: step(run, x), runs=a.runs)
            kernels = common.kernelsPerStep(lambda: step(run, x))
            print(f"{name:<15} {wall:>10.1f} {host:>10.1f} {kernels:>8} {worst:>20.2e}")
        else:
            print(f"{name:<15} {'-':>10} {'-':>10} {'-':>8} {worst:>20.2e}")
    if dev == "cuda":
        refWeights = [(p - LR * g).detach() for p, g in zip(eager.parameters(), refGrads)]
        print(f"\n{'captured step':<15} {'replay us':>10} {'':>10} {'kernels':>8} {'max |diff| vs eager':>20}")
        for name, compileArgs in [("eager", None), ("minijit", dict(backend="minijit")),
                                  ("inductor", dict())][:2 if a.no_inductor else 3]:
            for sgd in (False, True):
                torch._dynamo.reset()
                model = copy.deepcopy(base)
                run = model if compileArgs is None else torch.compile(model, **compileArgs)
                replay, loss = captured(run, model, x, sgd)
                replay()
                torch.cuda.synchronize()
                diffs = [common.maxDiff(loss, refLoss)] + \
                    [common.maxDiff(p.grad, g) for p, g in zip(model.parameters(), refGrads)]
                if sgd:  # the weights after one update, against eager's
                    diffs += [common.maxDiff(p, w) for p, w in zip(model.parameters(), refWeights)]
                worst = max(diffs) / scale
                if name == "minijit" and not worst <= TOLERANCE:
                    ok = False
                wall = common.timeEvents(replay, runs=a.runs)
                kernels = common.kernelsPerStep(replay)
                label = name + ("+SGD" if sgd else "")
                print(f"{label:<15} {wall:>10.1f} {'':>10} {kernels:>8} {worst:>20.2e}")
    print(f"\nminijit's loss and gradients {'match' if ok else 'DO NOT match'} eager's "
          f"(relative tolerance {TOLERANCE:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
