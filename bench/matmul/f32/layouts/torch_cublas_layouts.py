"""cuBLAS in f32 (no TF32) on the layout grid of docs/PERFORMANCE_LOG.md, "The weight gradient's
layout by cp.async": every product of this folder in its layout (nn: A [m, k] @ B [k, n]; nt:
B stored [n, k], nn.Linear's; tn: A stored [k, m], the weight gradient's; tt: both), then three
rows of the general suite. bench/torch_anchor.py's timing, rotated buffer sets, the median of
50. Call 3 of that section ran it over the 24 grid graphs (nn, nt, tn, tt of six shapes) and the
suite rows; call 4 ran the same loop over the tn graphs added after it (3072^3, 2560x7168x2048,
5120x2048x8192, 2720x2656x32) without the suite rows. Run now, it times every graph of this
folder and the suite rows; but for this docstring and the paths, it is the code that ran.

    python3 bench/matmul/f32/layouts/torch_cublas_layouts.py
"""
import glob
import os
import sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", ".."))
import torch
import torch.nn.functional as F
from torch_anchor import rotated_arg_sets, time_fn
torch.backends.cuda.matmul.allow_tf32 = False
l2 = torch.cuda.get_device_properties(0).L2_cache_size
f32 = torch.float32
for path in sorted(glob.glob(os.path.join(here, "[nt][nt]_*.mj"))):
    name = os.path.basename(path)[:-3]
    lay, shape = name.split("_")
    m, n, k = map(int, shape.split("x"))
    a_shape = (m, k) if lay[0] == "n" else (k, m)
    b_shape = (k, n) if lay[1] == "n" else (n, k)
    fa = (lambda a: a) if lay[0] == "n" else (lambda a: a.t())
    fb = (lambda b: b) if lay[1] == "n" else (lambda b: b.t())
    sets = rotated_arg_sets([(a_shape, f32), (b_shape, f32)], l2)
    us = time_fn(lambda a, b: fa(a) @ fb(b), sets, 50)
    print(f"torch {name}: {us:.2f} us", flush=True)
    del sets
    torch.cuda.empty_cache()
extra = [
    ("suite_lingelu_1024x8192x8192", [((1024, 8192), f32), ((8192, 8192), f32), ((8192,), f32)],
     lambda x, w, b: F.gelu(F.linear(x, w, b))),
    ("suite_linear_128x32768x32768", [((128, 32768), f32), ((32768, 32768), f32)], lambda x, w: F.linear(x, w)),
    ("suite_skinny_32768x32768x32", [((32768, 32), f32), ((32, 32768), f32)], lambda a, b: a @ b),
]
for name, inputs, fn in extra:
    sets = rotated_arg_sets(inputs, l2)
    us = time_fn(fn, sets, 50)
    print(f"torch {name}: {us:.2f} us", flush=True)
    del sets
    torch.cuda.empty_cache()
