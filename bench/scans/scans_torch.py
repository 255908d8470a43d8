#!/usr/bin/env python3
"""PyTorch eager and torch.compile timings of the scan graphs (bench/scans/*.mj).

    python3 bench/scans/scans_torch.py [--runs N] [--only SUBSTRING,...]

Each graph has its .mj file's name, shapes, dtypes and input order; the timing
method is bench/probe/probe_torch.py's. Prints one JSON line per graph.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probe"))
import probe_torch  # noqa: E402

f32 = torch.float32


def workloads():
    """(file stem, [(shape, dtype)], fn); fn takes the inputs in the graph's order."""
    return [
        ("cumsum_f32_4096x32768", [((4096, 32768), f32)], lambda x: torch.cumsum(x, 1)),
        ("cumsum_f32_4097x30011", [((4097, 30011), f32)], lambda x: torch.cumsum(x, 1)),
        ("cumsum_masked_f32_128x400000", [((128, 400000), f32)],
         lambda x: torch.cumsum(torch.where(x > 0, x, 0.0), 1)),
        ("cumprod_f32_32768x1000", [((32768, 1000), f32)], lambda x: torch.cumprod(x, 1)),
        ("cumsum_reverse_f32_4096x32768", [((4096, 32768), f32)],
         lambda x: torch.cumsum(x.flip(1), 1).flip(1)),
        ("cumsum_exclusive_f32_4096x32768", [((4096, 32768), f32)],
         lambda x: torch.cat((torch.zeros_like(x[:, :1]), torch.cumsum(x[:, :-1], 1)), 1)),
        # shapes the rules were not tuned on
        ("cumsum_f32_1x16777216", [((1, 16777216), f32)], lambda x: torch.cumsum(x, 1)),
        ("cumsum_f32_33x1000003", [((33, 1000003), f32)], lambda x: torch.cumsum(x, 1)),
        ("cumsum_f32_500x65536", [((500, 65536), f32)], lambda x: torch.cumsum(x, 1)),
        ("cumsum_bf16_64x300007", [((64, 300007), torch.bfloat16)], lambda x: torch.cumsum(x, 1)),
        ("cumsum_f32_100003x97", [((100003, 97), f32)], lambda x: torch.cumsum(x, 1)),
        ("cumsum_f32_axis0_200003x7", [((200003, 7), f32)], lambda x: torch.cumsum(x, 0)),
        ("cumsum_masked_input_f32_4096x32768", [((4096, 32768), f32), ((4096, 32768), torch.bool)],
         lambda x, mask: torch.cumsum(x * mask, 1)),
    ]


if __name__ == "__main__":
    probe_torch.workloads = workloads
    probe_torch.main()
