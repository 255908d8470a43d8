#!/usr/bin/env python3
"""The lecture's training step in minijit against PyTorch autograd, on the same weights.

    tests/gpu/autodiff_torch.py --minijit build-gpu/bin/minijit [--dir DIR]

Draws x, W_i and b_i (nn.Linear's scale), writes them as .npy, runs
`minijit run samples/mlp_train.mj --check --input ... --save DIR` on the GPU
(fused, then unfused), and compares the loss and all 32 gradients with
torch.autograd on the same tensors (f32, TF32 off). Exit 1 on a mismatch.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

LAYERS, DIM, BATCH = 16, 128, 128


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minijit", required=True)
    ap.add_argument("--graph", default=os.path.join(os.path.dirname(__file__), "../../samples/mlp_train.mj"))
    ap.add_argument("--dir", default="")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="minijit-autodiff-")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    tensors = {"x": rng.standard_normal((BATCH, DIM), dtype=np.float32)}
    for i in range(LAYERS):
        tensors[f"w{i}"] = (rng.standard_normal((DIM, DIM)) / np.sqrt(DIM)).astype(np.float32)
        tensors[f"b{i}"] = (rng.standard_normal(DIM) / np.sqrt(DIM)).astype(np.float32)
    args = []
    for name, t in tensors.items():
        np.save(f"{d}/{name}.npy", t)
        args += ["--input", f"{name}={d}/{name}.npy"]

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    p = {k: torch.from_numpy(v).to(dev).requires_grad_(k != "x") for k, v in tensors.items()}
    h = p["x"]
    for i in range(LAYERS):
        h = torch.nn.functional.gelu(torch.nn.functional.linear(h, p[f"w{i}"], p[f"b{i}"]))
    loss = h.mean()
    loss.backward()
    want = {"loss": loss.detach().cpu().numpy()}
    for i in range(LAYERS):
        want[f"dw{i}"] = p[f"w{i}"].grad.cpu().numpy()
        want[f"db{i}"] = p[f"b{i}"].grad.cpu().numpy()

    status = 0
    for fusion in ([], ["--no-fusion"]):
        out = f"{d}/out{'-unfused' if fusion else ''}"
        cmd = [a.minijit, "run", a.graph, "--check", "--save", out] + args + fusion
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:])
            print(f"minijit run {' '.join(fusion)} failed with {r.returncode}")
            return 1
        worst, where = 0.0, ""
        for name, w in want.items():
            got = np.load(f"{out}/{name}.npy")
            assert got.shape == w.shape, (name, got.shape, w.shape)
            rel = float(np.max(np.abs(got - w)) / max(np.max(np.abs(w)), 1e-30))
            if rel > worst:
                worst, where = rel, name
        ok = worst < 1e-4
        status |= 0 if ok else 1
        print(f"fusion {'off' if fusion else 'on'}: minijit (also checked against its CPU reference) vs "
              f"torch.autograd, loss and 32 gradients: largest relative difference {worst:.2e} "
              f"(at {where}) {'ok' if ok else 'MISMATCH'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
