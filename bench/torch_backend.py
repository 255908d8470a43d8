#!/usr/bin/env python3
"""Host time of a call through torch.compile(backend="minijit") against Inductor
and eager: one-kernel graphs of N input tensors (an elementwise sum, scaled), on
the GPU, under no_grad. The host time is the call alone, not waiting for the
GPU (median of --runs calls, the GPU synchronized every 100 calls); the GPU time
of these kernels is negligible next to it.

    PYTHONPATH=python MINIJIT_LIBRARY=build/lib/libminijit_c.so python3 bench/torch_backend.py

The goal stated in issue 44: at most 10 us plus 1 us per tensor for minijit,
and below Inductor's. Prints one row per N.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

import minijit.torch  # noqa: E402,F401


def hostTime(fn, args, runs):
    for _ in range(20):
        fn(*args)
    torch.cuda.synchronize()
    samples = []
    for i in range(runs):
        t0 = time.perf_counter()
        fn(*args)
        samples.append((time.perf_counter() - t0) * 1e6)
        if i % 100 == 99:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return statistics.median(samples)


def graph(*xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total * 0.5


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--size", type=int, default=4096)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA device (this benchmark times the GPU path)")
        return 0
    print(f"{'tensors':>7} {'eager us':>9} {'inductor us':>12} {'minijit us':>11} {'goal us':>8}")
    ok = True
    for n in (1, 2, 4, 8, 16):
        args = [torch.randn(a.size, device="cuda") for _ in range(n)]
        torch._dynamo.reset()
        with torch.no_grad():
            mj = torch.compile(graph, backend="minijit")
            torch.testing.assert_close(mj(*args), graph(*args))
            eager = hostTime(graph, args, a.runs)
            mjTime = hostTime(mj, args, a.runs)
            torch._dynamo.reset()
            ind = torch.compile(graph)
            indTime = hostTime(ind, args, a.runs)
        goal = 10 + (n + 1)
        ok &= mjTime <= goal
        print(f"{n:>7} {eager:>9.1f} {indTime:>12.1f} {mjTime:>11.1f} {goal:>8.1f}")
    print("minijit's host time is " + ("within" if ok else "ABOVE") + " the goal (10 us + 1 us per tensor, "
          "inputs and output counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
