"""torch eager and torch.compile on the 16-bit products of an n not a multiple of 4 in
docs/PERFORMANCE_LOG.md, "Odd n through the staged epilogue" (the .mj files beside this
script): bench/torch_anchor.py's timing, rotated buffer sets. As it ran on the H200 but
for this docstring and the path to bench/.

    python3 bench/matmul/odd_n/torch_odd_n.py
"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import torch, torch.nn.functional as F
from torch_anchor import rotated_arg_sets, time_fn
l2 = torch.cuda.get_device_properties(0).L2_cache_size
f16, bf16 = torch.float16, torch.bfloat16
rows = [
    ("lin_bias_f16_4096x4096x4099", [((4096, 4096), f16), ((4099, 4096), f16), ((4099,), f16)], lambda x, w, b: F.linear(x, w, b)),
    ("mm_bf16_8192x1024x4094", [((8192, 1024), bf16), ((1024, 4094), bf16)], lambda a, b: a @ b),
    ("scores_f16_32x2047x2047x64", [((32, 2047, 64), f16), ((32, 2047, 64), f16)], lambda q, k: q @ k.transpose(1, 2)),
]
for name, inputs, fn in rows:
    sets = rotated_arg_sets(inputs, l2)
    c = torch.compile(fn, dynamic=False); c(*sets[0]); torch.cuda.synchronize()
    print(f"torch {name}: eager {time_fn(fn, sets, 50):.2f} us, torch.compile {time_fn(c, sets, 50):.2f} us", flush=True)
    del sets
    torch.cuda.empty_cache()
