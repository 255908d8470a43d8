#!/usr/bin/env python3
"""PyTorch eager and torch.compile timings of the pooling graphs (bench/pooling/*.mj).

    python3 bench/pooling/pooling_torch.py [--runs N] [--only SUBSTRING,...]

Each graph has its .mj file's name, shapes, dtypes and input order; the timing
method is bench/probe/probe_torch.py's. Prints one JSON line per graph.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probe"))
import probe_torch  # noqa: E402

f32 = torch.float32


def workloads():
    """(file stem, [(shape, dtype)], fn); fn takes the inputs in the graph's order."""
    return [
        ("avgpool1d_k8s1p4_f32_64x128x65536", [((64, 128, 65536), f32)],
         lambda x: F.avg_pool1d(x, 8, 1, 4)),
        ("avgpool1d_k5s1p2_f32_16x96x200003", [((16, 96, 200003), f32)],
         lambda x: F.avg_pool1d(x, 5, 1, 2)),
    ]


if __name__ == "__main__":
    probe_torch.workloads = workloads
    probe_torch.main()
