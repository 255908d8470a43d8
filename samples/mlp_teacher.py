#!/usr/bin/env python3
"""Replays samples/mlp_teacher's training run in PyTorch and compares the losses.

    build/bin/sample_mlp_teacher DIR      # writes x, target, the initial weights, losses
    samples/mlp_teacher.py DIR [--device cuda]

The student is the same: three nn.Linear(32, 32) layers with tanh between them,
the mean squared error against the teacher's output, plain SGD with lr 0.3, 300
steps, all in f32 (TF32 off). Both runs start from the same weights, so their
losses agree to rounding; the tolerance is 1e-3 relative at every step (f32
rounding grows over 300 steps of a chaotic-enough optimisation).
"""
import argparse
import sys

import numpy as np
import torch

LAYERS, LR, STEPS, TOLERANCE = 3, 0.3, 300, 1e-3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    load = lambda n: torch.from_numpy(np.load(f"{a.dir}/{n}.npy")).to(a.device)
    x, target = load("x"), load("target")
    params = []
    for i in range(LAYERS):
        params += [load(f"w{i}").requires_grad_(), load(f"b{i}").requires_grad_()]
    ours = np.load(f"{a.dir}/losses.npy")
    worst = 0.0
    for step in range(STEPS):
        h = x
        for i in range(LAYERS):
            h = torch.nn.functional.linear(h, params[2 * i], params[2 * i + 1])
            if i + 1 < LAYERS:
                h = torch.tanh(h)
        loss = ((h - target) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad
        rel = abs(loss.item() - ours[step]) / abs(loss.item())
        worst = max(worst, rel)
        if step % 50 == 0 or step == STEPS - 1:
            print(f"step {step:4d}  minijit {ours[step]:.6f}  pytorch {loss.item():.6f}  rel {rel:.1e}")
    ok = worst <= TOLERANCE
    print(f"largest relative difference over {STEPS} steps: {worst:.2e} "
          f"({'within' if ok else 'BEYOND'} {TOLERANCE:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
