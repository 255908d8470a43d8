#!/usr/bin/env python3
"""Anchors for bench/softmax/*.mj: eager and torch.compile with probe_torch.py's
method, and the hand-written Triton softmax of bench/torch_anchor.py (one row a
program, the row in registers) on the same rotated inputs:

    python3 bench/softmax/softmax_torch.py [--runs N] [--only SUBSTRING,...]

One JSON line per graph, named by its .mj file's stem; the Triton time is
"triton_us" on a line of its own ("name": STEM, "triton_us": ...).
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "probe"))
sys.path.insert(0, os.path.join(HERE, ".."))
import probe_torch  # noqa: E402
import torch_anchor  # noqa: E402

SHAPES = ((2048, 32000, "f32"), (512, 262144, "f32"), (1024, 100003, "f32"), (2048, 65536, "f32"),
          (1024, 131072, "f32"), (300, 200003, "f32"), (1000, 50257, "bf16"))


def softmax_workloads():
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
    return [(f"softmax_{t}_{r}x{c}", [((r, c), dtypes[t])], lambda x: torch.softmax(x, 1)) for r, c, t in SHAPES]


def triton_rows(runs, only):
    """The Triton kernel's time per graph, where Triton is installed."""
    if torch_anchor.triton is None:
        print("softmax_torch: Triton SKIPPED (not installed)", file=sys.stderr)
        return
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    for name, inputs, fn in softmax_workloads():
        if only and not any(part in name for part in only.split(",")):
            continue
        arg_sets = None
        try:  # (a row too long for the kernel's registers fails alone)
            arg_sets = probe_torch.rotated_arg_sets(inputs, l2)
            got = torch_anchor.triton_softmax(*arg_sets[0])
            ok = torch.allclose(got, fn(*arg_sets[0]), atol=1e-6, rtol=1e-4)
            us = probe_torch.time_fn(torch_anchor.triton_softmax, arg_sets, runs)
            print(json.dumps({"name": name, "triton_us": round(us, 3), "triton_matches_eager": ok}),
                  flush=True)
        except Exception as e:
            print(json.dumps({"name": name, "triton_error": f"{type(e).__name__}: {str(e)[:200]}"}),
                  flush=True)
        finally:
            del arg_sets
            torch.cuda.empty_cache()


if __name__ == "__main__":
    probe_torch.workloads = softmax_workloads
    probe_torch.main()  # (parses --runs and --only itself, as below)
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--only", default="")
    known, _ = ap.parse_known_args()
    triton_rows(known.runs, known.only)
