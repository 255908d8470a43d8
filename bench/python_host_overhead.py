#!/usr/bin/env python3
"""Host time of CompiledGraph.run on torch CUDA tensors (issue 44's target: at
most 10 us plus 1 us per tensor for a one-kernel graph).

A one-kernel elementwise graph of N inputs (N = 1, 2, 4, 8, 16) on tiny
tensors, so the GPU never holds the host back: the wall time of many
back-to-back runs over their count is the host's time per run (the Python
checks, the output's torch.empty, the ctypes call, minijit's checks and the
launch). The same for torch's own eager sum of the inputs, for scale.

    PYTHONPATH=python python3 bench/python_host_overhead.py [--runs 20000]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import minijit  # noqa: E402


def graph_of(n):
    """y = (x0 + x1 + ... + x{n-1}) * 2 (x0 * 2 for one input): one kernel."""
    args = ", ".join("%%x%d: f32[256]" % i for i in range(n))
    lines, acc = [], "%x0"
    for i in range(1, n):
        lines.append("  %%a%d = add %s, %%x%d" % (i, acc, i))
        acc = "%%a%d" % i
    lines.append("  %%y = mul %s, 2" % acc)
    return "graph sum%d(%s) {\n%s\n  return %%y\n}\n" % (n, args, "\n".join(lines))


def timed(fn, runs, sync):
    for _ in range(100):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(runs):
        fn()
    sync()
    return (time.perf_counter() - t0) / runs * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20000)
    a = p.parse_args()
    import torch
    if not torch.cuda.is_available() or not minijit.devices():
        print("SKIPPED: no GPU")
        return 0
    sync = torch.cuda.synchronize
    print("%8s %12s %14s %12s" % ("tensors", "minijit us", "target us", "eager us"))
    for n in (1, 2, 4, 8, 16):
        c = minijit.compile(graph_of(n))
        assert c.num_kernels == 1
        xs = [torch.randn(256, device="cuda") for _ in range(n)]
        (y,) = c.run(*xs)
        sync()
        want = sum(xs[1:], xs[0]) * 2 if n > 1 else xs[0] * 2
        assert torch.allclose(y, want, rtol=1e-6), "minijit's result differs from torch's"
        us = timed(lambda: c.run(*xs), a.runs, sync)
        eager = timed(lambda: torch.sum(torch.stack(xs), 0) * 2, a.runs, sync)
        print("%8d %12.2f %14.1f %12.2f" % (n + 1, us, 10 + (n + 1), eager))
    return 0


if __name__ == "__main__":
    sys.exit(main())
