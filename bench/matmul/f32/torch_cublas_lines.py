"""cuBLAS in f32 (no TF32) on the products of docs/PERFORMANCE_LOG.md, "The 256x128 tile, tiles kept
along k, cp.async with pipelined fragments" (call 5): bench/torch_anchor.py's timing (CUDA events,
the median), rotated buffer sets. As it ran on the H200 but for this docstring and the path to
bench/ (it ran from the repository root with "bench" on the path). The graphs:
bench/matmul/f32/lines_*.mj and the other f32 graphs beside it.

    python3 bench/matmul/f32/torch_cublas_lines.py
"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import torch, torch.nn.functional as F
from torch_anchor import rotated_arg_sets, time_fn
torch.backends.cuda.matmul.allow_tf32 = False
l2 = torch.cuda.get_device_properties(0).L2_cache_size
f32 = torch.float32
mm = lambda a, b: a @ b
lin = lambda x, w: F.linear(x, w)
rows = [
    ("mm_f32_4096", [((4096, 4096), f32), ((4096, 4096), f32)], mm),
    ("lin_f32_4096", [((4096, 4096), f32), ((4096, 4096), f32)], lin),
    ("lingelu_1024x8192x8192", [((1024, 8192), f32), ((8192, 8192), f32), ((8192,), f32)],
     lambda x, w, b: F.gelu(F.linear(x, w, b))),
    ("matmul_f32_8205x5921x2949", [((8205, 5921), f32), ((5921, 2949), f32)], mm),
    ("odd_f32_3000x2999x3001", [((3000, 2999), f32), ((2999, 3001), f32)], mm),
    ("mm_f32_4096x4096x4100", [((4096, 4100), f32), ((4100, 4096), f32)], mm),
    ("mm_f32_8192x2944x5920", [((8192, 5920), f32), ((5920, 2944), f32)], mm),
    ("mm_f32_3072", [((3072, 3072), f32), ((3072, 3072), f32)], mm),
    ("lin_f32_3000x3001x2999", [((3000, 2999), f32), ((3001, 2999), f32)], lin),
    ("mm_f32_2048x6144x4104", [((2048, 4104), f32), ((4104, 6144), f32)], mm),
]
for name, inputs, fn in rows:
    sets = rotated_arg_sets(inputs, l2)
    us = time_fn(fn, sets, 50)
    print(f"torch {name}: {us:.2f} us", flush=True)
    del sets
    torch.cuda.empty_cache()
