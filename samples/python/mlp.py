#!/usr/bin/env python3
"""The lecture's MLP from Python: run_mlp(dim=128, num_layers=16, batch_size=128),
16 times a matmul then a GeLU (tanh form), built with minijit's graph builder.

With a GPU it is compiled, run through minijit (on torch CUDA tensors when torch
is installed, else on numpy arrays copied to the GPU), checked against the CPU
reference, and timed; the kernels with and without fusion are printed. Without a
GPU it runs on the CPU reference and is checked against numpy.

    python3 samples/python/mlp.py [--dim 128] [--layers 16] [--batch 128]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import numpy as np  # noqa: E402

import minijit  # noqa: E402


def build_mlp(dim, layers, batch):
    g = minijit.Graph("mlp")
    x = g.input("x", "f32", (batch, dim))
    ws = [g.input("w%d" % i, "f32", (dim, dim)) for i in range(layers)]
    for w in ws:
        h = g.op("matmul", x, w)
        inner = g.op("mul", g.op("add", h, g.op("mul", g.op("mul", g.op("mul", h, h), h),
                                                0.044715)), 0.7978846)
        x = g.op("mul", g.op("mul", h, 0.5), g.op("add", g.op("tanh", inner), 1.0))
    g.output(x, "y")
    return g


def numpy_mlp(x, ws):
    x = x.astype(np.float64)
    for w in ws:
        h = x @ w
        x = 0.5 * h * (1 + np.tanh(0.7978846 * (h + 0.044715 * h ** 3)))
    return x


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--runs", type=int, default=200)
    a = p.parse_args()
    g = build_mlp(a.dim, a.layers, a.batch)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((a.batch, a.dim), dtype=np.float32)
    # Weights scaled so the activations stay of order one through the layers.
    ws = [(2 * rng.standard_normal((a.dim, a.dim)) / np.sqrt(a.dim)).astype(np.float32)
          for _ in range(a.layers)]
    print("--- MLP: dim %d, %d layers, batch %d (f32) ---" % (a.dim, a.layers, a.batch))
    fused = minijit.compile(g)
    unfused = minijit.compile(g, fusion=False)
    print("kernels: %d fused, %d unfused" % (fused.num_kernels, unfused.num_kernels))
    (ref,) = minijit.evaluate(g, x, *ws)
    want = numpy_mlp(x, ws)
    err = np.abs(ref - want).max() / np.abs(want).max()
    print("CPU reference vs numpy: max difference %.3g of the largest value" % err)
    if not minijit.devices():
        print("no GPU: ran the CPU reference only")
        return 0 if err < 1e-3 else 1
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        args = [torch.from_numpy(t).cuda() for t in [x] + ws]
        (y,) = fused.run(*args)
        torch.cuda.synchronize()
        got = y.cpu().numpy()
        for c, label in ((fused, "fused"), (unfused, "unfused")):
            for _ in range(10):
                c.run(*args)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(a.runs):
                c.run(*args)
            torch.cuda.synchronize()
            print("%-8s %7.1f us per step (torch tensors, %d runs, host and GPU)"
                  % (label, (time.perf_counter() - t0) / a.runs * 1e6, a.runs))
    else:
        (got,) = fused.run(x, *ws)
        t0 = time.perf_counter()
        for _ in range(20):
            fused.run(x, *ws)
        print("fused    %7.1f us per step (numpy arrays, copies included)"
              % ((time.perf_counter() - t0) / 20 * 1e6))
    gerr = np.abs(got - ref).max() / np.abs(ref).max()
    print("GPU vs CPU reference: max difference %.3g of the largest value" % gerr)
    return 0 if gerr < 1e-3 and err < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
