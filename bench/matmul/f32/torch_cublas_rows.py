"""cuBLAS in f32 (no TF32) on the CUDA-core products of docs/PERFORMANCE_LOG.md, "Odd n through
the staged epilogue; cuBLAS's f32 kernel beside ours": bench/torch_anchor.py's timing (CUDA
events, the median), rotated buffer sets. As it ran on the H200 but for this docstring and
the path to bench/ (it ran from the repository root with "bench" on the path).

    python3 bench/matmul/f32/torch_cublas_rows.py
"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import torch, torch.nn.functional as F
from torch_anchor import rotated_arg_sets, time_fn
torch.backends.cuda.matmul.allow_tf32 = False
l2 = torch.cuda.get_device_properties(0).L2_cache_size
f32 = torch.float32
rows = [
    ("mm_f32_4096", [((4096, 4096), f32), ((4096, 4096), f32)], lambda a, b: a @ b),
    ("lin_f32_4096", [((4096, 4096), f32), ((4096, 4096), f32)], lambda x, w: F.linear(x, w)),
    ("lingelu_1024x8192x8192", [((1024, 8192), f32), ((8192, 8192), f32), ((8192,), f32)],
     lambda x, w, b: F.gelu(F.linear(x, w, b))),
    ("matmul_f32_8205x5921x2949", [((8205, 5921), f32), ((5921, 2949), f32)], lambda a, b: a @ b),
    ("linear_f32_128x32768x32768", [((128, 32768), f32), ((32768, 32768), f32)], lambda x, w: F.linear(x, w)),
    ("matmul_f32_32768x32x32768", [((32768, 32), f32), ((32, 32768), f32)], lambda a, b: a @ b),
    ("odd_f32_3000x2999x3001", [((3000, 2999), f32), ((2999, 3001), f32)], lambda a, b: a @ b),
    ("lin_f32_2048x3001x1027", [((2048, 3001), f32), ((1027, 3001), f32), ((1027,), f32)],
     lambda x, w, b: F.linear(x, w, b)),
    ("linear_f32_1000x3001x777", [((1000, 3001), f32), ((777, 3001), f32)], lambda x, w: F.linear(x, w)),
]
for name, inputs, fn in rows:
    sets = rotated_arg_sets(inputs, l2)
    us = time_fn(fn, sets, 30 if "32768" in name else 50)
    print(f"torch {name}: {us:.2f} us", flush=True)
    del sets
    torch.cuda.empty_cache()
