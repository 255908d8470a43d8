#!/usr/bin/env python3
"""cuBLAS through torch on the products of bench/matmul/*.mj, timed as `minijit run
FILE --bench` times them: one buffer set, CUDA events around each call, the median
(of 50 calls after 5 untimed). docs/PERFORMANCE_LOG.md, "Hopper matmul: the epilogue in
pairs, clusters of two".

  python3 bench/matmul/torch_matmul.py
"""
import statistics

import torch
import torch.nn.functional as F


def median_us(fn, runs=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def randn(*shape, dtype=torch.float16):
    return torch.randn(*shape, device="cuda", dtype=dtype)


def main():
    for dtype in (torch.float16, torch.bfloat16):
        for n in (4096, 8192):  # mm_{f16,bf16}_{4096,8192}.mj
            a, b = randn(n, n, dtype=dtype), randn(n, n, dtype=dtype)
            us = median_us(lambda: a @ b)
            print(f"torch matmul {dtype} {n}^3: {us:.2f} us, {2 * n**3 / us / 1e6:.1f} TFLOP/s", flush=True)
    x, w, bias = randn(4096, 4096), randn(4096, 4096), randn(4096)  # linear_gelu_f16_4096.mj
    print(f"torch tanh(F.linear) f16 4096: {median_us(lambda: torch.tanh(F.linear(x, w, bias))):.2f} us", flush=True)
    a, b = randn(4097, 4093), randn(4093, 4095)  # odd_f16.mj
    print(f"torch matmul odd 4097x4095x4093: {median_us(lambda: a @ b):.2f} us", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = True  # mm_f32_4096.mj with --allow-tf32
    a, b = randn(4096, 4096, dtype=torch.float32), randn(4096, 4096, dtype=torch.float32)
    print(f"torch TF32 matmul f32 4096^3: {median_us(lambda: a @ b):.2f} us", flush=True)


if __name__ == "__main__":
    main()
