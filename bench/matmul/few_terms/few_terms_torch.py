#!/usr/bin/env python3
"""PyTorch on the products of bench/matmul/few_terms/*.mj, timed as `minijit run FILE
--bench` times them (bench/matmul/torch_matmul.py's median_us): one line per product,
"NAME: eager N us, torch.compile N us, copy of the output N us".

    python3 bench/matmul/few_terms/few_terms_torch.py [FILE.mj ...]   # default: every product of the folder

Each product is read from its .mj file: its two inputs' dtype and shapes, whether the
second is permuted first (x @ W.T), and an epilogue's op (relu). Eager is cuBLAS with
TF32 off; the copy reads and writes the output's bytes once (the bound of a kernel
that writes the output and reads little else is half of it).
"""
import glob
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from torch_matmul import median_us  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def product(path):
    """(name, dtype, shape of a, shape of b, b transposed, relu) from the graph's text."""
    text = open(path).read()
    head = re.search(r"graph (\w+)\(%\w+: (\w+)\[([^\]]*)\], %\w+: \w+\[([^\]]*)\]\)", text)
    shape = lambda s: tuple(int(v) for v in s.split(","))
    return (head.group(1), DTYPES[head.group(2)], shape(head.group(3)), shape(head.group(4)),
            "permute" in text, "relu" in text)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    for path in sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "*.mj"))):
        name, dtype, sa, sb, transposed, relu = product(path)
        a = torch.rand(*sa, device="cuda", dtype=dtype) * 2 - 1
        b = torch.rand(*sb, device="cuda", dtype=dtype) * 2 - 1

        def fn(a, b):
            c = a @ b.transpose(-1, -2) if transposed else a @ b
            return torch.relu(c) if relu else c

        eager = median_us(lambda: fn(a, b))
        compiled = torch.compile(fn)
        inductor = median_us(lambda: compiled(a, b))
        out = fn(a, b)
        copy = median_us(lambda: out.clone())
        print(f"{name}: eager {eager:.2f} us, torch.compile {inductor:.2f} us, "
              f"copy of the output {copy:.2f} us", flush=True)
        del a, b, out
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
