#!/usr/bin/env python3
"""PyTorch eager and torch.compile timings of the product graphs (bench/products/*.mj).

    python3 bench/products/products_torch.py [--runs N] [--only SUBSTRING,...]

Each graph has its .mj file's name (the file stem), shapes, dtypes and input
order; the timing method is bench/probe/probe_torch.py's (torch_anchor.py's:
CUDA events after 10 warm-up calls, the median, inputs rotated among buffer
sets that hold 3x the L2, f32 matmuls without TF32; eager f32 products are
cuBLAS's SGEMM). Prints one JSON line per graph, as probe_torch.py does.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probe"))
import probe_torch  # noqa: E402

f32, bf16 = torch.float32, torch.bfloat16


def workloads():
    """(file stem, [(shape, dtype)], fn); fn takes the inputs in the graph's order."""
    return [
        ("splitk_f32_256x524288x256", [((256, 524288), f32), ((524288, 256), f32)], torch.matmul),
        ("splitk_f32_130x65536x250", [((130, 65536), f32), ((65536, 250), f32)], torch.matmul),
        ("splitk_f32_384x200000x200", [((384, 200000), f32), ((200000, 200), f32)], torch.matmul),
        ("splitk_f32_64x2000000x64", [((64, 2000000), f32), ((2000000, 64), f32)], torch.matmul),
        ("gemm_div_sum_f32_1024x8192x8192", [((1024, 8192), f32), ((8192, 8192), f32)],
         lambda x, w: torch.sum(x @ w.T / 2, dim=1, keepdim=True) * 1.5),
        ("gemm_bias_sub_mean_f32_1000x4099x3001",
         [((1000, 4099), f32), ((3001, 4099), f32), ((3001,), f32), ((1000, 3001), f32)],
         lambda x, w, b, t: torch.mean(F.linear(x, w, b) - t)),
        ("linear3d_f32_64x512x768", [((64, 512, 768), f32), ((768, 768), f32), ((768,), f32)],
         lambda x, w, b: torch.tanh(F.linear(x, w, b))),
        ("linear3d_gelu_f32_8x1025x1024x4096",
         [((8, 1025, 1024), f32), ((4096, 1024), f32), ((4096,), f32)],
         lambda x, w, b: F.gelu(F.linear(x, w, b))),
        ("linear3d_bf16_3x333x4096x11008", [((3, 333, 4096), bf16), ((11008, 4096), bf16)],
         lambda x, w: F.silu(F.linear(x, w))),
    ]


if __name__ == "__main__":
    probe_torch.workloads = workloads
    probe_torch.main()
