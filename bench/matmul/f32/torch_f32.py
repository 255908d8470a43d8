#!/usr/bin/env python3
"""cuBLAS through torch on the f32 products of bench/matmul/f32/*.mj, timed as `minijit run
FILE --bench` times them (one buffer set, CUDA events around each call, the median of 50
calls after 5 untimed), in f32 without TF32 (PyTorch's default); and cuBLAS's accuracy on the
acc_*.mj products, measured as `minijit run --check` measures minijit's: the largest
|c - exact| / (|exact| + sum over k of |a| |b|), the exact product in f64, inputs uniform in
[-1, 1). docs/PERFORMANCE_LOG.md, "f32 products as three TF32 products".

  python3 bench/matmul/f32/torch_f32.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from torch_matmul import median_us  # noqa: E402 (bench/matmul/torch_matmul.py: the same method)


def uniform(*shape):
    return torch.rand(*shape, device="cuda", dtype=torch.float32) * 2 - 1


def products():
    """(name as the .mj file, a function of fresh inputs)"""
    a, b = uniform(4096, 4096), uniform(4096, 4096)
    yield "mm_4096", lambda: a @ b
    a2, b2 = uniform(3000, 2999), uniform(2999, 3001)
    yield "odd_3000", lambda: a2 @ b2
    x, w, bias = uniform(2048, 3001), uniform(1027, 3001), uniform(1027)
    yield "linear_2048x1027x3001", lambda: F.linear(x, w, bias)
    a3, b3 = uniform(4096, 1001), uniform(1001, 4096)
    yield "mm_4096x4096x1001", lambda: a3 @ b3
    a4, b4 = uniform(2053, 1021), uniform(1021, 3067)
    yield "tanh_2053x3067x1021", lambda: torch.tanh(a4 @ b4)
    a5, b5 = uniform(32, 1024, 512), uniform(32, 512, 1024)
    yield "batched_32x1024x1024x512", lambda: torch.bmm(a5, b5)
    x6, dy = uniform(4096, 2048), uniform(4096, 1024)
    yield "weight_grad_2048x1024x4096", lambda: x6.t() @ dy


def accuracy(a, b_t_or_b, linear):
    """The largest error of cuBLAS's f32 and TF32 products, as minijit --check measures."""
    a64, b64 = a.double(), b_t_or_b.double()
    exact = F.linear(a64, b64) if linear else a64 @ b64
    size = F.linear(a64.abs(), b64.abs()) if linear else a64.abs() @ b64.abs()
    out = {}
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        c = F.linear(a, b_t_or_b) if linear else a @ b_t_or_b
        out["tf32" if tf32 else "f32"] = ((c.double() - exact).abs() / (exact.abs() + size)).max().item()
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    for name, fn in products():
        print(f"torch f32 {name}: {median_us(fn):.2f} us", flush=True)
    for name, a, b, linear in (("acc_mm_2048", uniform(2048, 2048), uniform(2048, 2048), False),
                               ("acc_odd_1001x1203x777", uniform(1001, 777), uniform(777, 1203), False),
                               ("acc_linear_1024x4096x4096", uniform(1024, 4096), uniform(4096, 4096), True)):
        r = accuracy(a, b, linear)
        print(f"cuBLAS accuracy {name}: f32 max rel error {r['f32']:.2e}, TF32 {r['tf32']:.2e}", flush=True)


if __name__ == "__main__":
    main()
