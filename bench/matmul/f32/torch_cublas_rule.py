"""cuBLAS in f32 (no TF32) on the products the CUDA cores' deeper-pipeline rule takes, in
docs/PERFORMANCE_LOG.md, "The 256x128 tile, tiles kept along k, cp.async with pipelined fragments"
(call 6): bench/torch_anchor.py's timing, rotated buffer sets. As it ran on the H200 but for this
docstring and the path to bench/.

    python3 bench/matmul/f32/torch_cublas_rule.py
"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import torch
from torch_anchor import rotated_arg_sets, time_fn
torch.backends.cuda.matmul.allow_tf32 = False
l2 = torch.cuda.get_device_properties(0).L2_cache_size
f32 = torch.float32
rows = [
    ("mm_4096x4096x1001", [((4096, 1001), f32), ((1001, 4096), f32)], lambda a, b: a @ b),
    ("tanh_2053x3067x1021", [((2053, 1021), f32), ((1021, 3067), f32)], lambda a, b: torch.tanh(a @ b)),
    ("mm_f32_4096x4096x4100", [((4096, 4100), f32), ((4100, 4096), f32)], lambda a, b: a @ b),
    ("matmul_f32_8205x5921x2949", [((8205, 5921), f32), ((5921, 2949), f32)], lambda a, b: a @ b),
]
for name, inputs, fn in rows:
    sets = rotated_arg_sets(inputs, l2)
    us = time_fn(fn, sets, 50)
    print(f"torch {name}: {us:.2f} us", flush=True)
    del sets
    torch.cuda.empty_cache()
