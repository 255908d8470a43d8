#!/usr/bin/env python3
"""Anchors for bench/axis_reductions/*.mj: PyTorch eager and torch.compile with
bench/probe/probe_torch.py's method (rotated inputs, CUDA events, the median):

    python3 bench/axis_reductions/axis_reductions_torch.py [--runs N] [--only SUBSTRING,...]

Each graph is read from its .mj file's stem: OP_DTYPE_axisA_SHAPE (the shape's
sizes joined by 'x'), the reduction `OP(x, dim=A)` as the graph computes it.
One JSON line per graph, as probe_torch.py prints them.
"""
import glob
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "probe"))
import probe_torch  # noqa: E402

OPS = {"sum": lambda x, a: torch.sum(x, a),
       "mean": lambda x, a: torch.mean(x, a),
       "max": lambda x, a: torch.amax(x, a)}
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def parse(stem):
    """(op, dtype, axis, shape) of a stem such as sum_f32_axis1_16x4096x4095."""
    op, dtype, axis, shape = stem.split("_")
    assert axis.startswith("axis"), stem
    return op, DTYPES[dtype], int(axis[4:]), tuple(int(s) for s in shape.split("x"))


def axis_workloads():
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "*.mj"))):
        stem = os.path.splitext(os.path.basename(path))[0]
        op, dtype, axis, shape = parse(stem)
        out.append((stem, [(shape, dtype)], lambda x, f=OPS[op], a=axis: f(x, a)))
    return out


if __name__ == "__main__":
    probe_torch.workloads = axis_workloads
    probe_torch.main()
