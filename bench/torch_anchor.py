#!/usr/bin/env python3
"""PyTorch anchors for minijit's benchmark suite, measured the same way.

For each workload of bench/minijit_bench.cpp this times, on the same GPU and in
the same device call: PyTorch eager composed of primitives (the lecture's
"by hand" version), the fused library call (F.gelu, torch.softmax,
F.layer_norm, F.rms_norm) and torch.compile of the primitives. Method as in
DESIGN.md: CUDA events around each call after a warm-up, the median of >= 100
calls, inputs and outputs rotated among buffer sets so each call reads and
writes beyond the L2, never zeros (standard normal inputs).

    python3 bench/torch_anchor.py --json anchors.json [--runs 200] [--only softmax]
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F


def gelu_prims(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def softmax_prims(x):
    m = x.amax(dim=1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=1, keepdim=True)


def layernorm_prims(x, w, b):
    mu = x.mean(dim=1, keepdim=True)
    d = x - mu
    var = (d * d).mean(dim=1, keepdim=True)
    return d * torch.rsqrt(var + 1e-5) * w + b


def rmsnorm_prims(x, w):
    return x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + 1e-6) * w


def matmul_bias_gelu(x, w, b):
    return gelu_prims(x @ w + b)


def matmul_bias_gelu_library(x, w, b):
    return F.gelu(torch.addmm(b, x, w), approximate="tanh")


def mlp_prims(x, *ws):
    for w in ws:
        x = gelu_prims(x @ w)
    return x


def mlp_library(x, *ws):
    for w in ws:
        x = F.gelu(x @ w, approximate="tanh")
    return x


def workloads():
    f32, bf16 = torch.float32, torch.bfloat16
    n26, n16 = 1 << 26, 1 << 16
    return [
        ("gelu n=2^26", [(n26,)], f32, gelu_prims, lambda x: F.gelu(x, approximate="tanh"), False),
        ("gelu n=2^16", [(n16,)], f32, gelu_prims, lambda x: F.gelu(x, approximate="tanh"), True),
        ("softmax 4096x1024", [(4096, 1024)], f32, softmax_prims, lambda x: torch.softmax(x, 1), False),
        ("softmax 8192x8192", [(8192, 8192)], f32, softmax_prims, lambda x: torch.softmax(x, 1), False),
        ("softmax 1024x32768", [(1024, 32768)], f32, softmax_prims, lambda x: torch.softmax(x, 1), False),
        ("softmax 65536x128", [(65536, 128)], f32, softmax_prims, lambda x: torch.softmax(x, 1), False),
        ("layernorm 8192x8192", [(8192, 8192), (8192,), (8192,)], f32, layernorm_prims,
         lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b, 1e-5), False),
        ("rmsnorm 8192x8192", [(8192, 8192), (8192,)], f32, rmsnorm_prims,
         lambda x, w: F.rms_norm(x, (x.shape[1],), w, 1e-6), False),
        ("gelu bf16 n=2^26", [(n26,)], bf16, gelu_prims, lambda x: F.gelu(x, approximate="tanh"), False),
        ("sum n=2^26", [(n26,)], f32, torch.sum, torch.sum, False),
        ("matmul f32 4096^3", [(4096, 4096), (4096, 4096)], f32, torch.matmul, torch.matmul, False),
        ("matmul f16 4096^3", [(4096, 4096), (4096, 4096)], torch.float16, torch.matmul, torch.matmul, False),
        ("matmul f16 8192^3", [(8192, 8192), (8192, 8192)], torch.float16, torch.matmul, torch.matmul, False),
        ("matmul f16 4096^3+bias+gelu", [(4096, 4096), (4096, 4096), (4096,)], torch.float16,
         matmul_bias_gelu, matmul_bias_gelu_library, False),
        ("mlp 128x16 batch 128", [(128, 128)] + [(128, 128)] * 16, f32, mlp_prims, mlp_library, True),
        ("mlp 4096x4 batch 4096", [(4096, 4096)] * 5, f32, mlp_prims, mlp_library, False),
    ]


def train_rows(only, runs):
    """The lecture's training step: nn.Linear + F.gelu layers, y = model(x).mean(), y.backward(),
    gradients zeroed first; eager, torch.compile and reduce-overhead (the model compiled, its
    backward through AOTAutograd)."""
    rows = []
    for name, dim, layers, batch, dtype in [
            ("train mlp 128x16 batch 128", 128, 16, 128, torch.float32),
            ("train mlp 4096x4 batch 4096", 4096, 4, 4096, torch.float32),
            ("train mlp bf16 4096x4 batch 4096", 4096, 4, 4096, torch.bfloat16)]:
        if only and only not in name:
            continue
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[m for _ in range(layers)
                                      for m in (torch.nn.Linear(dim, dim), torch.nn.GELU())])
        model = model.to("cuda", dtype)
        x = torch.randn(batch, dim, device="cuda", dtype=dtype)
        row = {"workload": name}
        n = runs if dim <= 128 else max(20, runs // 10)
        for label, mode in [("eager_prims", None), ("compile", "default"), ("compile_ro", "reduce-overhead")]:
            fwd = model if mode is None else torch.compile(model, mode=mode, dynamic=False)

            def step():
                model.zero_grad(set_to_none=True)
                fwd(x).mean().backward()
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            if mode is not None:
                row["compile_s" if mode == "default" else "compile_ro_s"] = time.perf_counter() - t0
            row[label + "_us"] = time_fn(step, [()], n)
        row["library_us"] = row["eager_prims_us"]
        print(f"{name:32} eager {row['eager_prims_us']:10.2f} us  torch.compile {row['compile_us']:10.2f} us"
              f"  reduce-overhead {row['compile_ro_us']:10.2f} us", flush=True)
        rows.append(row)
    return rows


def time_fn(fn, arg_sets, runs, warmup=10):
    """Median microseconds per call, events around each call, rotating buffer sets."""
    for i in range(warmup):
        fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    us = []
    for i in range(runs):
        args = arg_sets[i % len(arg_sets)]
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        us.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(us)


def host_loop_us(fn, args, calls=2000):
    """Host wall time per call in a loop: back-to-back calls, one wait at the end."""
    for _ in range(50):
        fn(*args)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def copy_gbps(nbytes=1 << 30, runs=20):
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda").fill_(1)
    b = torch.empty_like(a)
    us = time_fn(lambda: b.copy_(a), [()], runs, warmup=3)
    return 2 * nbytes / (us * 1e3)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--only", default="")
    a = p.parse_args()
    assert a.runs >= 100, "the method asks for the median of at least 100 runs"
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 matmuls in f32, as minijit computes them
    torch.backends.cudnn.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    copy = copy_gbps()
    print(f"device: {props.name}; torch {torch.__version__}; copy of 1 GiB: {copy:.0f} GB/s")
    rows = []
    for name, shapes, dtype, prims, library, host_loop in workloads():
        if a.only and a.only not in name:
            continue
        per_set = sum(math.prod(s) for s in shapes) * torch.tensor([], dtype=dtype).element_size() * 2
        sets = max(1, min(16, -(-3 * l2 // per_set)))
        arg_sets = [[torch.randn(s, device="cuda", dtype=dtype) for s in shapes] for _ in range(sets)]
        compiled = torch.compile(prims, dynamic=False)
        t0 = time.perf_counter()
        compiled(*arg_sets[0])
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        row = {"workload": name, "compile_s": compile_s}
        variants = [("eager_prims", prims), ("library", library), ("compile", compiled)]
        if name.startswith("mlp 128"):
            # the launch-bound MLP: torch.compile with CUDA graphs too
            variants.append(("compile_ro", torch.compile(prims, mode="reduce-overhead", dynamic=False)))
        if name.startswith("mlp"):
            # weights scaled so activations stay O(1) through the layers
            for args in arg_sets:
                for w in args[1:]:
                    w /= math.sqrt(w.shape[0])
        for label, fn in variants:
            row[label + "_us"] = time_fn(fn, arg_sets, a.runs)
            if host_loop:
                row[label + "_host_us_per_call"] = host_loop_us(fn, arg_sets[0])
        extra = f"  reduce-overhead {row['compile_ro_us']:10.2f} us" if "compile_ro_us" in row else ""
        print(f"{name:28} eager {row['eager_prims_us']:10.2f} us  library {row['library_us']:10.2f} us"
              f"  torch.compile {row['compile_us']:10.2f} us{extra}  (compile {compile_s:.1f} s)", flush=True)
        if host_loop:
            print(f"{'':22} host per call: eager {row['eager_prims_host_us_per_call']:.2f} us, library "
                  f"{row['library_host_us_per_call']:.2f} us, compiled {row['compile_host_us_per_call']:.2f} us")
        rows.append(row)
    rows += train_rows(a.only, a.runs)
    with open(a.json, "w") as f:
        json.dump({"tool": "torch", "torch": torch.__version__, "device": props.name,
                   "copy_gbps": copy, "runs": a.runs, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
