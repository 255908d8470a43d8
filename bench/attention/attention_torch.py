#!/usr/bin/env python3
"""PyTorch timings of the attention graphs (bench/attention/*.mj): the graph
written out in eager ops, the same under torch.compile, and
F.scaled_dot_product_attention as PyTorch picks its kernel (cuDNN's for
f16/bf16 on Hopper with torch 2.11, the memory-efficient one for f32) and,
for f16/bf16, held to its flash backend (FlashAttention-2), issue 43's anchor.

    python3 bench/attention/attention_torch.py [--runs N] [--only SUBSTRING,...]

The timing method is bench/probe/probe_torch.py's; one JSON line per graph and
variant ("eager_us"/"compile_us" for the written-out graph, then lines named
STEM/sdpa and STEM/sdpa_flash whose eager_us is scaled_dot_product_attention's).
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probe"))
import probe_torch  # noqa: E402

f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16


def written(causal):
    def fn(q, k, v):
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
        if causal:
            n = s.shape[-1]
            seen = torch.ones(n, n, dtype=torch.bool, device=s.device).tril()
            s = s.masked_fill(~seen, float("-inf"))
        return torch.softmax(s.float(), -1).to(q.dtype) @ v
    return fn


def sdpa(causal):
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def sdpaFlash(causal):
    """SDPA held to its flash backend (FlashAttention-2): PyTorch 2.11's default on
    Hopper is cuDNN's kernel for f16/bf16 (bench/attention/sweep.py times both)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def fn(q, k, v):
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return fn


def workloads():
    """(file stem, [(shape, dtype)], fn), as the .mj files compute them."""
    shapes = [("causal_f32_2x8x512x64", (2, 8, 512, 64), f32, True),
              ("causal_f16_4x16x1024x64", (4, 16, 1024, 64), f16, True),
              ("full_bf16_8x12x1000x128", (8, 12, 1000, 128), bf16, False),
              ("causal_f32_1x12x4097x80", (1, 12, 4097, 80), f32, True),
              ("causal_bf16_8x16x4096x128", (8, 16, 4096, 128), bf16, True),
              ("full_bf16_8x16x4096x128", (8, 16, 4096, 128), bf16, False),
              ("causal_f32_128x8x512x96", (128, 8, 512, 96), f32, True),
              ("full_f32_2x4x16384x32", (2, 4, 16384, 32), f32, False),
              ("full_f32_4x16x1000x128", (4, 16, 1000, 128), f32, False)]
    rows = []
    for stem, shape, dtype, causal in shapes:
        rows.append((stem, [(shape, dtype)] * 3, written(causal)))
        rows.append((stem + "/sdpa", [(shape, dtype)] * 3, sdpa(causal)))
        if dtype != f32:  # the flash backend takes f16 and bf16 only
            rows.append((stem + "/sdpa_flash", [(shape, dtype)] * 3, sdpaFlash(causal)))
    return rows


if __name__ == "__main__":
    probe_torch.workloads = workloads
    probe_torch.main()
