#!/usr/bin/env python3
"""cuBLAS (torch, f32, TF32 off) on the products of bench/matmul/f32/line/*.mj, timed as
`minijit run FILE --bench` times them (bench/matmul/torch_matmul.py's median_us): one
line per product, "NAME: cuBLAS N us".

    python3 bench/matmul/f32/line/line_torch.py [FILE.mj ...]   # default: every product of the folder

Each product is read from its .mj file: its two inputs' shapes, and whether the second
is permuted first (x @ W.T).
"""
import glob
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from torch_matmul import median_us  # noqa: E402


def product(path):
    """(name, shape of a, shape of b, b transposed) from the graph's header."""
    text = open(path).read()
    head = re.search(r"graph (\w+)\(%\w+: f32\[([^\]]*)\], %\w+: f32\[([^\]]*)\]\)", text)
    shape = lambda s: tuple(int(v) for v in s.split(","))
    return head.group(1), shape(head.group(2)), shape(head.group(3)), "permute" in text


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    for path in sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "*.mj"))):
        name, sa, sb, transposed = product(path)
        a = torch.rand(*sa, device="cuda") * 2 - 1
        b = torch.rand(*sb, device="cuda") * 2 - 1
        fn = (lambda: a @ b.t()) if transposed else (lambda: a @ b)
        print(f"{name}: cuBLAS {median_us(fn):.2f} us", flush=True)
        del a, b
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
