#!/usr/bin/env python3
"""PyTorch anchors for minijit's benchmark suite, measured the same way.

For each workload of bench/minijit_bench.cpp this times, on the same GPU and in
the same device call: PyTorch eager composed of primitives (the lecture's
"by hand" version), the fused library call (F.gelu, torch.softmax,
F.layer_norm, F.rms_norm), torch.compile of the primitives and, for GeLU and
softmax, the lecture's kernels written by hand in Triton. Method as in
DESIGN.md: CUDA events around each call after a warm-up, the median of >= 100
calls, inputs and outputs rotated among buffer sets so each call reads and
writes beyond the L2, never zeros (standard normal inputs).

With --sweep matmul|softmax|mlp (or several, comma-separated) it times the
points of minijit_bench's sweeps of those names instead (same workload names,
fewer calls where one is long, at least 5) and writes a JSON of kind "sweep"
(docs/PROFILE_JSON.md) per sweep, whose series scripts/plot.py draws beside
minijit's; "{sweep}" in the --json path becomes each sweep's name. One process
for all of them pays PyTorch's start and torch.compile's first compile once.

    python3 bench/torch_anchor.py --json anchors.json [--runs 200] [--only softmax]
    python3 bench/torch_anchor.py --sweep matmul,softmax,mlp --json anchors_sweep_{sweep}.json
"""
import argparse
import datetime
import json
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:  # the Triton anchors are left out, and the output says so
    triton = None

SCHEMA = 1  # docs/PROFILE_JSON.md; scripts/plot.py refuses any other


# ---- the lecture's fifth way: GeLU and softmax written by hand in Triton

if triton is not None:
    @triton.jit
    def triton_gelu_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
        # one block of BLOCK_SIZE elements per program
        offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
        # tanh(a) = (exp(2a) - 1) / (exp(2a) + 1)
        e = tl.exp(2 * 0.7978845608 * (x + 0.044715 * x * x * x))
        y = 0.5 * x * (1 + (e - 1) / (e + 1))
        tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def triton_softmax_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols,
                              BLOCK_SIZE: tl.constexpr):
        # one row per program, padded to BLOCK_SIZE (the next power of two)
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        y = num / tl.sum(num, axis=0)
        tl.store(y_ptr + row * y_row_stride + cols, y, mask=cols < n_cols)


def triton_gelu(x):
    y = torch.empty_like(x)
    n = x.numel()
    triton_gelu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024)
    return y


def softmax_warps(block):
    """4 warps up to 1024 columns, then more as the row grows (32 from 16384)."""
    return 4 if block < 2048 else 8 if block < 4096 else 16 if block < 16384 else 32


def triton_softmax(x):
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    triton_softmax_kernel[(rows,)](x, y, x.stride(0), y.stride(0), cols, BLOCK_SIZE=block,
                                   num_warps=softmax_warps(block))
    return y


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


def rope_prims(x, cos, sin):
    half = x.shape[-1] // 2
    rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    cos, sin = cos[:, None, :], sin[:, None, :]
    return x * cos + rot * sin


class Indices(tuple):
    """The shape of an i32 input of random indices below `high`."""

    def __new__(cls, shape, high):
        t = super().__new__(cls, shape)
        t.high = high
        return t


def make_arg(shape, dtype):
    if isinstance(shape, Indices):
        return torch.randint(0, shape.high, shape, device="cuda", dtype=torch.int32)
    return torch.randn(shape, device="cuda", dtype=dtype)


def embedding_ln_prims(table, ids, w, b):
    e = table[ids.long()]
    mu = e.mean(dim=1, keepdim=True)
    d = e - mu
    return d * torch.rsqrt((d * d).mean(dim=1, keepdim=True) + 1e-5) * w + b


def embedding_ln_library(table, ids, w, b):
    return F.layer_norm(F.embedding(ids.long(), table), (table.shape[1],), w, b, 1e-5)


def cross_entropy_prims(logits, labels):
    m = logits.max(dim=1, keepdim=True).values
    lse = torch.log(torch.exp(logits - m).sum(dim=1, keepdim=True)) + m
    return (lse - logits.gather(1, labels.long()[:, None])).reshape(-1)


def cross_entropy_library(logits, labels):
    return F.cross_entropy(logits, labels.long(), reduction="none")


def greedy_decode(logits):
    return torch.argmax(torch.softmax(logits, dim=1), dim=1)


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
    # name, shapes, dtype, primitives, library call, host loop too
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
        ("rope f16 8x4096x32x128", [(8, 4096, 32, 128), (4096, 128), (4096, 128)], torch.float16,
         rope_prims, rope_prims, False),
        ("embedding+layernorm 16384x4096 of 32000",
         [(32000, 4096), Indices((16384,), 32000), (4096,), (4096,)], f32, embedding_ln_prims,
         embedding_ln_library, False),
        ("cross-entropy 8192x32000", [(8192, 32000), Indices((8192,), 32000)], f32,
         cross_entropy_prims, cross_entropy_library, False),
        ("greedy decode 64x128256", [(64, 128256)], f32, greedy_decode, greedy_decode, False),
        ("greedy decode 2048x128256", [(2048, 128256)], f32, greedy_decode, greedy_decode, False),
        ("sum n=2^26", [(n26,)], f32, torch.sum, torch.sum, False),
        ("matmul f32 4096^3", [(4096, 4096), (4096, 4096)], f32, torch.matmul, torch.matmul, False),
        ("matmul f16 4096^3", [(4096, 4096), (4096, 4096)], torch.float16, torch.matmul, torch.matmul, False),
        ("matmul f16 8192^3", [(8192, 8192), (8192, 8192)], torch.float16, torch.matmul, torch.matmul, False),
        ("matmul f16 4096^3+bias+gelu", [(4096, 4096), (4096, 4096), (4096,)], torch.float16,
         matmul_bias_gelu, matmul_bias_gelu_library, False),
        ("mlp 128x16 batch 128", [(128, 128)] + [(128, 128)] * 16, f32, mlp_prims, mlp_library, True),
        ("mlp 4096x4 batch 4096", [(4096, 4096)] * 5, f32, mlp_prims, mlp_library, False),
        ("mlp f16 4096x4 batch 4096", [(4096, 4096)] * 5, torch.float16, mlp_prims, mlp_library,
         False),
    ]


def selected(name, only):
    """--only: comma-separated substrings of workload names (empty: every workload)."""
    return not only or any(part in name for part in only.split(","))


def train_rows(only, runs):
    """The lecture's training step: nn.Linear + F.gelu layers, y = model(x).mean(), y.backward(),
    gradients zeroed first; eager, torch.compile and reduce-overhead (the model compiled, its
    backward through AOTAutograd)."""
    rows = []
    for name, dim, layers, batch, dtype in [
            ("train mlp 128x16 batch 128", 128, 16, 128, torch.float32),
            ("train mlp 4096x4 batch 4096", 4096, 4, 4096, torch.float32),
            ("train mlp bf16 4096x4 batch 4096", 4096, 4, 4096, torch.bfloat16)]:
        if not selected(name, only):
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


def call_times_us(fn, arg_sets, runs, warmup):
    """Microseconds of each of `runs` calls (after `warmup`), events around each call,
    rotating buffer sets."""
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
    return us


def time_fn(fn, arg_sets, runs, warmup=10):
    """Median microseconds per call."""
    return statistics.median(call_times_us(fn, arg_sets, runs, warmup))


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


def rotated_arg_sets(inputs, l2):
    """Buffer sets of `inputs` ([(shape, dtype)]) that together hold 3x the L2
    (at most 8 sets, one if that passes 24 GiB) of random_tensor's values."""
    per_set = sum(math.prod(s) * torch.tensor([], dtype=t).element_size() for s, t in inputs)
    sets = max(1, min(8, -(-3 * l2 // per_set)))
    if per_set * sets > 24 << 30:
        sets = 1
    return [[random_tensor(s, t) for s, t in inputs] for _ in range(sets)]


def random_tensor(shape, dtype):
    """Standard normal values scaled by 1/sqrt(the last dimension); a bool
    tensor true at about half its elements."""
    if dtype == torch.bool:
        return torch.rand(shape, device="cuda") < 0.5
    return torch.randn(shape, device="cuda", dtype=dtype) / math.sqrt(shape[-1])


def copy_gbps(nbytes=1 << 30, runs=20):
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda").fill_(1)
    b = torch.empty_like(a)
    us = time_fn(lambda: b.copy_(a), [()], runs, warmup=3)
    return 2 * nbytes / (us * 1e3)


def triton_variant(name):
    """The hand-written Triton kernel that computes workload `name`, if any."""
    if triton is None:
        return None
    if name.startswith("gelu"):
        return triton_gelu
    if name.startswith("softmax"):
        return triton_softmax
    return None


def check_close(name, label, fn, ref, args):
    """The anchors must compute what they claim to: compared with the library call once."""
    got, want = fn(*args).float(), ref(*args).float()
    if not torch.allclose(got, want, rtol=2e-2, atol=2e-3):
        raise SystemExit(f"torch_anchor: {label} of {name} differs from the library call "
                         f"(max abs diff {(got - want).abs().max().item():.3g})")


# ---- the sweeps: the points of minijit_bench --sweep, the same names

def sweep_points(name):
    """(group, x, workload, shapes, dtype, useful FLOPs) per point, as minijit_bench lists them."""
    pts = []
    if name == "matmul":
        for dt, dtype in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
            for n in (1024, 2048, 4096, 8192, 16384):
                pts.append((dt, n, f"matmul {dt} {n}^3", [(n, n), (n, n)], dtype, 2.0 * n ** 3))
    elif name == "softmax":
        cols = 128
        while cols <= 262144:
            rows = (1 << 26) // cols
            pts.append(("f32", cols, f"softmax {rows}x{cols}", [(rows, cols)], torch.float32, 0.0))
            cols *= 2
    elif name == "mlp":
        dim = 1024
        for layers in (1, 2, 4, 8, 16):
            pts.append(("layers", layers, f"mlp {dim}x{layers} batch 1024",
                        [(1024, dim)] + [(dim, dim)] * layers, torch.float32, 2.0 * 1024 * dim * dim * layers))
        for batch in (128, 512, 2048, 8192):
            pts.append(("batch", batch, f"mlp {dim}x4 batch {batch}",
                        [(batch, dim)] + [(dim, dim)] * 4, torch.float32, 2.0 * batch * dim * dim * 4))
    return pts


def sweep_variants(name):
    """(impl, label, function or None for torch.compile of the primitives) per series."""
    if name == "matmul":  # torch.compile of a lone matmul calls the same cuBLAS kernel
        return [("cublas", "cuBLAS (torch.matmul)", torch.matmul)]
    if name == "softmax":
        v = [("torch_eager", "PyTorch eager (primitives)", softmax_prims),
             ("torch_library", "torch.softmax", lambda x: torch.softmax(x, 1)),
             ("torch_compile", "torch.compile", None)]
        if triton is not None:
            v.append(("triton", "Triton by hand (one row per program)", triton_softmax))
        return v
    return [("torch_eager", "PyTorch eager (primitives)", mlp_prims),
            ("torch_library", "PyTorch library calls (F.gelu)", mlp_library),
            ("torch_compile", "torch.compile", None)]


def time_sweep_fn(fn, arg_sets, budget_s=0.3, most=100, least=5):
    """Like time_fn, with fewer calls (at least `least`) where `most` would pass `budget_s`."""
    fn(*arg_sets[0])
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*arg_sets[0])
    end.record()
    end.synchronize()
    estimate_us = start.elapsed_time(end) * 1000.0
    runs = max(least, min(most, int(budget_s * 1e6 / max(estimate_us, 1e-3))))
    warmup = max(1, min(10, int(budget_s / 10 * 1e6 / max(estimate_us, 1e-3))))
    us = call_times_us(fn, arg_sets, runs, warmup)
    return {"min": min(us), "median": statistics.median(us), "max": max(us)}, runs


def run_sweep(a, sweep, props, copy, l2):
    prims = {"matmul": torch.matmul, "softmax": softmax_prims, "mlp": mlp_prims}[sweep]
    variants = sweep_variants(sweep)
    path = a.json.replace("{sweep}", sweep)
    series = {impl: {"impl": impl, "mode": "anchor", "label": label, "points": []}
              for impl, label, _ in variants}
    notes = []
    if triton is None and sweep == "softmax":
        notes.append("triton is not installed: no hand-written Triton series")
    for group, x, name, shapes, dtype, flops in sweep_points(sweep):
        if not selected(name, a.only):
            continue
        size = torch.tensor([], dtype=dtype).element_size()
        out_elems = shapes[0][0] * shapes[-1][1]
        nbytes = (sum(math.prod(s) for s in shapes) + out_elems) * size
        sets = max(1, min(16, -(-3 * l2 // nbytes)))
        arg_sets = [[torch.randn(s, device="cuda", dtype=dtype) for s in shapes] for _ in range(sets)]
        if sweep == "mlp":
            for args in arg_sets:
                for w in args[1:]:
                    w /= math.sqrt(w.shape[0])
        line = [f"{name:28}"]
        for impl, label, fn in variants:
            try:
                compile_s = 0.0
                if fn is None:
                    torch._dynamo.reset()  # a fresh compile per shape, never the recompile limit
                    fn = torch.compile(prims, dynamic=False)
                    t0 = time.perf_counter()
                    fn(*arg_sets[0])
                    torch.cuda.synchronize()
                    compile_s = time.perf_counter() - t0
                if impl == "triton":
                    check_close(name, label, fn, lambda x: torch.softmax(x, 1), arg_sets[0])
                t, runs = time_sweep_fn(fn, arg_sets)
            except Exception as e:  # one anchor failing at one size leaves the others standing
                notes.append(f"{label} failed at {name}: {type(e).__name__}: {str(e)[:200]}")
                line.append(f"{impl} failed")
                continue
            point = {"group": group, "x": x, "workload": name, "time_us": t, "timed_runs": runs,
                     "bytes": nbytes, "flops": flops}
            if compile_s:
                point["compile_s"] = compile_s
            series[impl]["points"].append(point)
            line.append(f"{impl} {t['median']:10.2f} us")
        print("  ".join(line), flush=True)
        del arg_sets
        torch.cuda.empty_cache()
        write_sweep(path, sweep, props, copy, series, notes)  # after every point: a timeout keeps the rest
    write_sweep(path, sweep, props, copy, series, notes)


def write_sweep(path, sweep, props, copy, series, notes):
    doc = {"schema": SCHEMA, "kind": "sweep", "sweep": sweep,
           "tool": f"bench/torch_anchor.py (torch {torch.__version__}"
                   + (f", triton {triton.__version__})" if triton is not None else ")"),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "device": {"name": props.name, "copy_gbps": copy, "peaks": [],
                      "copy_source": "measured: torch copy_ of 1 GiB in the same process"},
           "method": "CUDA events around each call after a warm-up; the median of up to 100 "
                     "calls, fewer (at least 5) where they would take more than 0.3 s; standard "
                     "normal inputs rotated beyond the L2; TF32 off",
           "notes": notes,
           "series": [s for s in series.values() if s["points"]]}
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--only", default="", help="comma-separated substrings of workload names")
    p.add_argument("--sweep", default="", help="matmul, softmax, mlp, or several, comma-separated")
    a = p.parse_args()
    sweeps = [s for s in a.sweep.split(",") if s]
    for s in sweeps:
        if s not in ("matmul", "softmax", "mlp"):
            p.error(f"unknown sweep '{s}' (expected matmul, softmax, mlp)")
    if len(sweeps) > 1 and "{sweep}" not in a.json:
        p.error("several sweeps need {sweep} in the --json path")
    assert a.runs >= 100, "the method asks for the median of at least 100 runs"
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 matmuls in f32, as minijit computes them
    torch.backends.cudnn.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    copy = copy_gbps()
    print(f"device: {props.name}; torch {torch.__version__}; "
          f"triton {triton.__version__ if triton is not None else 'not installed'}; "
          f"copy of 1 GiB: {copy:.0f} GB/s")
    if sweeps:
        for s in sweeps:
            print(f"sweep {s}", flush=True)
            run_sweep(a, s, props, copy, l2)
        return
    rows = []
    for name, shapes, dtype, prims, library, host_loop in workloads():
        if not selected(name, a.only):
            continue
        per_set = sum(math.prod(s) for s in shapes) * torch.tensor([], dtype=dtype).element_size() * 2
        sets = max(1, min(16, -(-3 * l2 // per_set)))
        arg_sets = [[make_arg(s, dtype) for s in shapes] for _ in range(sets)]
        compiled = torch.compile(prims, dynamic=False)
        t0 = time.perf_counter()
        compiled(*arg_sets[0])
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        row = {"workload": name, "compile_s": compile_s}
        variants = [("eager_prims", prims), ("library", library), ("compile", compiled)]
        hand = triton_variant(name)
        if hand is not None:
            check_close(name, "triton", hand, library, arg_sets[0])
            variants.append(("triton", hand))
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
        extra += f"  triton {row['triton_us']:10.2f} us" if "triton_us" in row else ""
        print(f"{name:28} eager {row['eager_prims_us']:10.2f} us  library {row['library_us']:10.2f} us"
              f"  torch.compile {row['compile_us']:10.2f} us{extra}  (compile {compile_s:.1f} s)", flush=True)
        if host_loop:
            print(f"{'':22} host per call: eager {row['eager_prims_host_us_per_call']:.2f} us, library "
                  f"{row['library_host_us_per_call']:.2f} us, compiled {row['compile_host_us_per_call']:.2f} us")
        rows.append(row)
    rows += train_rows(a.only, a.runs)
    with open(a.json, "w") as f:
        json.dump({"tool": "torch", "torch": torch.__version__, "device": props.name,
                   "triton": triton.__version__ if triton is not None else None,
                   "copy_gbps": copy, "runs": a.runs, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
