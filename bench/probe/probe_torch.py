#!/usr/bin/env python3
"""PyTorch eager and torch.compile timings of the probe graphs (bench/probe/*.mj).

    python3 bench/probe/probe_torch.py [--runs N] [--only SUBSTRING,...]

Each graph has its .mj file's name (the file stem), shapes, dtypes, axes and
input order. The timing is bench/torch_general.py's (itself torch_anchor.py's):
CUDA events around each call after 10 warm-up calls, the median of the calls,
inputs rotated among buffer sets that together hold 3x the L2 (at most 8 sets),
standard normal inputs scaled by 1/sqrt(last dim), f32 matmuls without TF32,
torch.compile (default mode, dynamic=False) called once and synchronized before
its timing. Prints one JSON line per graph to stdout:
    {"name": STEM, "eager_us": ..., "compile_us": ..., "compile_s": ...}
or {"name": STEM, "error": "..."} when a graph fails (the others still run).
"""
import argparse
import json
import os
import sys
import time
import traceback

import torch
import torch._dynamo
import torch.nn.functional as F

f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16


# the timing method: bench/torch_anchor.py's (bench/torch_general.py's)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_anchor import rotated_arg_sets, time_fn  # noqa: E402


# ---- the graphs, as their .mj files compute them

def layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def rmsnorm(x, w):  # as torch_general.py's: in f32, rounded back to x's dtype
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def gelu_tanh_f16(x):
    return F.gelu(x.float(), approximate="tanh").to(f16)


def tanh_exp_bf16(x):
    xf = x.float()
    return (torch.tanh(xf) + torch.exp(xf * xf * -0.5)).to(bf16)


def workloads():
    """(file stem, [(shape, dtype)], fn); fn takes the inputs in the graph's order."""
    return [
        # rows: softmax / log-softmax / layer norm / rms norm
        ("softmax_f32_10000019x3", [((10000019, 3), f32)], lambda x: torch.softmax(x, -1)),
        ("layernorm_f32_2000003x17", [((2000003, 17), f32), ((17,), f32), ((17,), f32)],
         lambda x, w, b: layernorm(x, w, b)),
        ("logsoftmax_f32_300007x97", [((300007, 97), f32)], lambda x: torch.log_softmax(x, -1)),
        ("layernorm_f32_30011x1531", [((30011, 1531), f32), ((1531,), f32), ((1531,), f32)],
         lambda x, w, b: layernorm(x, w, b)),
        ("rmsnorm_bf16_10007x7919", [((10007, 7919), bf16), ((7919,), bf16)],
         lambda x, w: rmsnorm(x, w)),
        ("softmax_f16_1000x100003", [((1000, 100003), f16)],
         lambda x: torch.softmax(x.float(), -1).to(f16)),
        ("softmax_f32_7x4000037", [((7, 4000037), f32)], lambda x: torch.softmax(x, -1)),
        ("logsoftmax_f32_1x20000003", [((1, 20000003), f32)], lambda x: torch.log_softmax(x, -1)),
        # reductions over leading, middle, last and non-adjacent axes
        ("sum_f32_axis0_1001x97x513", [((1001, 97, 513), f32)], lambda x: x.sum(0)),
        ("max_f32_axis1_97x4999x67", [((97, 4999, 67), f32)], lambda x: x.amax(1)),
        ("mean_f32_axis3_33x33x129x333", [((33, 33, 129, 333), f32)], lambda x: x.mean(3)),
        ("sum_f32_axes13_131x63x127x33", [((131, 63, 127, 33), f32)], lambda x: x.sum((1, 3))),
        ("max_f32_axes02_701x511x97", [((701, 511, 97), f32)], lambda x: x.amax((0, 2))),
        # a whole-tensor sum that feeds the tensor again
        ("divide_by_sum_f32_10007x3001", [((10007, 3001), f32)], lambda x: x / x.sum()),
        # permutes then an elementwise op; the result contiguous as minijit writes it
        # (torch_general.py's "heads to front" convention: op on the view, then .contiguous())
        ("permute201_sigmoid_f32_255x257x511", [((255, 257, 511), f32)],
         lambda x: torch.sigmoid(x.permute(2, 0, 1)).contiguous()),
        ("permute2013_add_f32_33x129x65x97", [((33, 129, 65, 97), f32)],
         lambda x: (x.permute(2, 0, 1, 3) + 1).contiguous()),
        ("permute0312_scale_f16_64x97x33x255", [((64, 97, 33, 255), f16)],
         lambda x: (x.permute(0, 3, 1, 2) * 0.5).contiguous()),
        # broadcasts
        ("outer_add_f32_8191x4099", [((8191, 1), f32), ((1, 4099), f32)], lambda a, b: a + b),
        # pointwise chains in 16-bit storage, computed in f32
        ("gelu_tanh_f16_50000017", [((50000017,), f16)], gelu_tanh_f16),
        ("tanh_exp_bf16_40000003", [((40000003,), bf16)], tanh_exp_bf16),
        # matmul
        ("linear_f32_1000x3001x777", [((1000, 3001), f32), ((777, 3001), f32)],
         lambda x, w: F.linear(x, w)),
        ("gemv_linear_f32_1x4096x11008", [((1, 4096), f32), ((11008, 4096), f32)],
         lambda x, w: F.linear(x, w)),
        ("matmul_bf16_4095x4097x1023", [((4095, 4097), bf16), ((4097, 1023), bf16)],
         lambda a, b: torch.matmul(a, b)),
        ("outer_matmul_f32_8191x1x4097", [((8191, 1), f32), ((1, 4097), f32)],
         lambda a, b: torch.matmul(a, b)),
        ("bmm_f16_147x1001x129x257", [((147, 1001, 129), f16), ((147, 129, 257), f16)],
         lambda a, b: torch.matmul(a, b)),
        ("linear_relu_f16_2047x1535x3071",
         [((2047, 1535), f16), ((3071, 1535), f16), ((3071,), f16)],
         lambda x, w, b: torch.relu(F.linear(x, w, b))),
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--only", default="", help="comma-separated substrings of graph names")
    a = p.parse_args()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    print(f"device: {props.name}; torch {torch.__version__}; L2 {l2 >> 20} MiB; runs {a.runs}",
          file=sys.stderr, flush=True)
    for name, inputs, fn in workloads():
        if a.only and not any(part in name for part in a.only.split(",")):
            continue
        arg_sets = None
        try:
            torch._dynamo.reset()  # a fresh compile per graph, never the recompile limit
            arg_sets = rotated_arg_sets(inputs, l2)
            compiled = torch.compile(fn, dynamic=False)
            t0 = time.perf_counter()
            compiled(*arg_sets[0])
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t0
            row = {"name": name,
                   "eager_us": round(time_fn(fn, arg_sets, a.runs), 3),
                   "compile_us": round(time_fn(compiled, arg_sets, a.runs), 3),
                   "compile_s": round(compile_s, 2)}
            print(json.dumps(row), flush=True)
        except Exception as e:  # one graph failing leaves the others standing
            traceback.print_exc(file=sys.stderr)
            print(json.dumps({"name": name, "error": f"{type(e).__name__}: {str(e)[:300]}"}),
                  flush=True)
        finally:
            del arg_sets
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
