#!/usr/bin/env python3
"""Times the generalization suite (bench/GeneralSuite.cpp) in PyTorch eager and torch.compile.

    python3 bench/torch_general.py --json torch_general.json [--only SUBSTRING] [--runs N]

Each workload has the name, shapes, layouts and input order of its minijit
graph. The method is torch_anchor.py's: CUDA events around each call, the
median of >= 100 calls, inputs rotated among buffer sets that together exceed
the L2 three times, f32 matmuls without TF32. bench/join.py puts the file
beside minijit_bench --suite general's.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

from torch_anchor import copy_gbps, rotated_arg_sets, time_fn

f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16


def sum_as(x, dims, dtype):
    return x.float().sum(dims).to(dtype) if dtype != f32 else x.sum(dims)


def layernorm(x, w, b):
    return F.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float()).to(x.dtype)


def rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def workloads():
    """(name, [(shape, dtype)], fn); fn takes the inputs in the graph's order."""
    return [
        ("transposed add 8192^2", [((8192, 8192), f32)] * 2, lambda x, y: x.t() + y),
        ("heads to front f16 8x1024x32x128", [((8, 1024, 32, 128), f16)],
         lambda x: (x.permute(0, 2, 1, 3) * 0.125).contiguous()),
        ("sum middle axis 64x512x1024", [((64, 512, 1024), f32)], lambda x: x.sum(1)),
        ("sum middle axis 63x511x1023", [((63, 511, 1023), f32)], lambda x: x.sum(1)),
        ("sum leading axis 32768x4096", [((32768, 4096), f32)], lambda x: x.sum(0)),
        ("sum axes 0,2 of 256x64x2048", [((256, 64, 2048), f32)], lambda x: x.sum((0, 2))),
        ("sum middle axis bf16 128x1000x768", [((128, 1000, 768), bf16)],
         lambda x: sum_as(x, 1, bf16)),
        ("masked softmax 32x1024x1024", [((32, 1024, 1024), f32), ((1024, 1024), f32)],
         lambda x, m: torch.softmax(x * 0.125 + m, -1)),
        ("softmax 256x50257", [((256, 50257), f32)], lambda x: torch.softmax(x, -1)),
        ("softmax bf16 2048x50257", [((2048, 50257), bf16)],
         lambda x: torch.softmax(x.float(), -1).to(bf16)),
        ("softmax 262144x32", [((262144, 32), f32)], lambda x: torch.softmax(x, -1)),
        ("softmax 8191x1023", [((8191, 1023), f32)], lambda x: torch.softmax(x, -1)),
        ("softmax 8x1048576", [((8, 1 << 20), f32)], lambda x: torch.softmax(x, -1)),
        ("softmax 512x393216", [((512, 393216), f32)], lambda x: torch.softmax(x, -1)),
        ("column softmax 4096x4096", [((4096, 4096), f32)], lambda x: torch.softmax(x, 0)),
        ("layernorm 16x4194304", [((16, 1 << 22), f32), ((1 << 22,), f32), ((1 << 22,), f32)],
         layernorm),
        ("instance norm 8x64x512x512", [((8, 64, 512, 512), f32)], lambda x: F.instance_norm(x)),
        ("instance norm 3x111x317x1021", [((3, 111, 317, 1021), f32)], lambda x: F.instance_norm(x)),
        ("layernorm bf16 4097x3001", [((4097, 3001), bf16), ((3001,), bf16), ((3001,), bf16)],
         layernorm),
        ("rmsnorm f16 16384x4096", [((16384, 4096), f16), ((4096,), f16)], rmsnorm),
        ("divide by sum 4096x4096", [((4096, 4096), f32)], lambda x: x / x.sum()),
        ("center 8192^2", [((8192, 8192), f32)], lambda x: x - x.mean()),
        ("sum and max bf16 8192x8192", [((8192, 8192), bf16)],
         lambda x: (x.float().sum(1), x.amax(1))),
        ("broadcast middle 64x512x1024", [((64, 512, 1024), f32), ((64, 1, 1024), f32)],
         lambda x, b: x * torch.sigmoid(b)),
        ("gemv f32 2048x131072", [((2048, 131072), f32), ((131072, 1), f32)], torch.matmul),
        ("gemv bf16 2048x131072", [((2048, 131072), bf16), ((131072, 1), bf16)], torch.matmul),
        ("gevm f32 16384x16384", [((1, 16384), f32), ((16384, 16384), f32)], torch.matmul),
        ("sum of linear 1024x8192x8192", [((1024, 8192), f32), ((8192, 8192), f32)],
         lambda x, w: F.linear(x, w).sum(1)),
        ("linear+gelu f32 1024x8192x8192",
         [((1024, 8192), f32), ((8192, 8192), f32), ((8192,), f32)],
         lambda x, w, b: F.gelu(F.linear(x, w, b))),
        ("matmul f32 8205x5921x2949", [((8205, 5921), f32), ((5921, 2949), f32)], torch.matmul),
        ("matmul f32 32768x32x32768", [((32768, 32), f32), ((32, 32768), f32)], torch.matmul),
        ("linear f32 128x32768x32768", [((128, 32768), f32), ((32768, 32768), f32)], F.linear),
        ("linear bf16 128x32768x32768", [((128, 32768), bf16), ((32768, 32768), bf16)], F.linear),
        ("linear+gelu f16 4096^3", [((4096, 4096), f16), ((4096, 4096), f16), ((4096,), f16)],
         lambda x, w, b: F.gelu(F.linear(x, w, b))),
        ("matmul f16 4097x4095x4093", [((4097, 4095), f16), ((4095, 4093), f16)], torch.matmul),
        ("linear bf16 8192x1001x4096", [((8192, 1001), bf16), ((4096, 1001), bf16)], F.linear),
        ("bmm f16 64x512x512x64", [((64, 512, 512), f16), ((64, 512, 64), f16)], torch.matmul),
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True)
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--only", default="", help="comma-separated substrings of workload names")
    a = p.parse_args()
    assert a.runs >= 100, "the method asks for the median of at least 100 runs"
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    copy = copy_gbps()
    print(f"device: {props.name}; torch {torch.__version__}; copy of 1 GiB: {copy:.0f} GB/s", flush=True)
    rows = []
    for name, inputs, fn in workloads():
        if a.only and not any(part in name for part in a.only.split(",")):
            continue
        arg_sets = rotated_arg_sets(inputs, l2)
        compiled = torch.compile(fn, dynamic=False)
        t0 = time.perf_counter()
        compiled(*arg_sets[0])
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        runs = a.runs
        row = {"workload": name, "compile_s": compile_s,
               "eager_us": time_fn(fn, arg_sets, runs), "compile_us": time_fn(compiled, arg_sets, runs)}
        print(f"{name:36} eager {row['eager_us']:10.2f} us  torch.compile {row['compile_us']:10.2f} us"
              f"  (compile {compile_s:.1f} s)", flush=True)
        rows.append(row)
        del arg_sets
        torch.cuda.empty_cache()
    with open(a.json, "w") as f:
        json.dump({"tool": "torch", "suite": "general", "torch": torch.__version__,
                   "device": props.name, "copy_gbps": copy, "runs": a.runs, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
