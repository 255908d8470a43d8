#!/usr/bin/env python3
"""torch.compile and eager anchors for bench/pooling/*.mj, with probe_torch.py's method:

    python3 bench/pooling/pooling_torch.py [--runs N] [--only SUBSTRING,...]

One JSON line per graph, named by its .mj file's stem (same shapes and input order).
"""
import os
import sys

import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probe"))
import probe_torch  # noqa: E402


def pooling_workloads():
    """AvgPool1d over overlapping windows (stride 1), as KernelBench 1/44 has it."""
    f32 = probe_torch.f32
    return [
        ("avgpool1d_k8s1p4_f32_64x128x65536", [((64, 128, 65536), f32)], lambda x: F.avg_pool1d(x, 8, 1, 4)),
        ("avgpool1d_k5s1p2_f32_16x96x200003", [((16, 96, 200003), f32)], lambda x: F.avg_pool1d(x, 5, 1, 2)),
    ]


if __name__ == "__main__":
    probe_torch.workloads = pooling_workloads
    probe_torch.main()
