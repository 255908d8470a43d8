#!/usr/bin/env python3
"""The error of f32 products on the tensor cores against cuBLAS's exact SGEMM,
both measured against an f64 product of the same inputs (issue 45's study).

    PYTHONPATH=python MINIJIT_LIBRARY=build/lib/libminijit_c.so \\
        python3 bench/matmul/f32/tf32x3_error.py [--m 1024] [--n 1024] [--ks 256,4096,65536]

For each k and each kind of input (below), one product A [m, k] @ B [k, n] is
computed by:
  - cuBLAS's SGEMM (torch, TF32 off): the bar;
  - minijit on the CUDA cores (--exact-f32);
  - minijit --tf32x3 with promote=0 (three TF32 products on the tensor
    cores, summed by them over all of k);
  - minijit's default for large products since 2026-12-06, three TF32
    products with promote=1 (each k-slice's product added to the sum on the
    CUDA cores, rounded to nearest);
  - minijit --allow-tf32 (one TF32 product), for scale.
Each result's error is measured two ways against torch's float64 product of
the same f32 inputs: the largest |c - c64| / (|A| @ |B|) over the outputs
(the error relative to the size of the terms summed: what rounding bounds),
and ||c - c64|| / ||c64|| (Frobenius). Printed per variant: both, and the
first as a multiple of SGEMM's. The rule "3xTF32 by default" asks for at most
2x SGEMM's error on every row; the last lines say where each variant meets it.

Inputs (seeded, f32):
  normal      standard normal entries (sums cancel as random signs do);
  uniform     uniform in [0, 1) (no cancellation: errors add up along k);
  scaled      normal, each row of A and column of B scaled by 10^U(-3, 3);
  cancelling  normal, B's second half of k the negated first half plus 1e-3
              of noise: each output a small difference of large sums.
Needs a GPU, torch and the package's library; exits 2 without a GPU.
"""
import argparse
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
import minijit  # noqa: E402

KINDS = ("normal", "uniform", "scaled", "cancelling")


def inputs(kind, m, n, k, seed):
    """(A, B) f32 on the GPU."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    if kind == "uniform":
        return (torch.rand(m, k, device="cuda", generator=g),
                torch.rand(k, n, device="cuda", generator=g))
    a = torch.randn(m, k, device="cuda", generator=g)
    b = torch.randn(k, n, device="cuda", generator=g)
    if kind == "scaled":
        a *= 10 ** (torch.rand(m, 1, device="cuda", generator=g) * 6 - 3)
        b *= 10 ** (torch.rand(1, n, device="cuda", generator=g) * 6 - 3)
    elif kind == "cancelling":
        half = k // 2
        noise = torch.randn(half, n, device="cuda", generator=g) * 1e-3
        b[half:2 * half] = -b[:half] + noise
        a[:, half:2 * half] = a[:, :half]
    return a.contiguous(), b.contiguous()


def errors(c, c64, size):
    """(largest error relative to the terms' size, relative Frobenius error)."""
    d = (c.double() - c64).abs()
    termwise = (d / size.clamp_min(torch.finfo(torch.float64).tiny)).max().item()
    frob = (d.norm() / c64.norm().clamp_min(torch.finfo(torch.float64).tiny)).item()
    return termwise, frob


def variants(m, n, k):
    """(name, compiled graph or None for cuBLAS)."""
    text = (f"graph mm(%a: f32[{m}, {k}], %b: f32[{k}, {n}]) {{\n"
            f"  %c = matmul %a, %b\n  return %c\n}}\n")
    out = [
        ("cuBLAS SGEMM", None),
        ("minijit f32 (CUDA cores)", minijit.compile(text, exact_f32=True)),
        ("minijit --tf32x3, promote=0", minijit.compile(text, tf32x3=True, schedule="promote=0")),
        ("minijit --tf32x3 (promote=1)", minijit.compile(text, tf32x3=True)),
        ("minijit --allow-tf32", minijit.compile(text, allow_tf32=True)),
    ]
    # a product too small for the split to pay stays on the CUDA cores: say so
    for name, cg in out[2:4]:
        if "three TF32 products" not in cg.emit("fused"):
            print(f"note: {name} at {m} x {n} x {k} runs on the CUDA cores (the split does not pay)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--ks", default="256,1024,4096,16384,65536")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("tf32x3_error: SKIPPED (no GPU)")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    ks = [int(k) for k in a.ks.split(",")]
    worst = {}  # variant -> the largest ratio to SGEMM over the rows
    print(f"device: {torch.cuda.get_device_name()}; m {a.m}, n {a.n}; error = max |c - c64| / (|A| @ |B|)"
          f" (Frobenius relative error in brackets); x SGEMM = the first over SGEMM's")
    for k in ks:
        compiled = variants(a.m, a.n, k)
        for kind in KINDS:
            A, B = inputs(kind, a.m, a.n, k, a.seed + k)
            c64 = A.double() @ B.double()
            size = A.double().abs() @ B.double().abs()
            bar = None
            cells = []
            for name, cg in compiled:
                c = A @ B if cg is None else cg.run(A, B)[0]
                torch.cuda.synchronize()
                termwise, frob = errors(c, c64, size)
                if bar is None:
                    bar = termwise
                ratio = termwise / bar if bar > 0 else math.inf
                if cg is not None:
                    worst[name] = max(worst.get(name, 0.0), ratio)
                cells.append(f"{name}: {termwise:.2e} [{frob:.1e}] {ratio:.2f}x")
            print(f"k {k:>6} {kind:<10} " + "; ".join(cells), flush=True)
    print()
    for name, ratio in worst.items():
        verdict = "meets" if ratio <= 2.0 else "does not meet"
        print(f"{name}: at most {ratio:.2f}x SGEMM's error over the rows: {verdict} the 2x bar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
