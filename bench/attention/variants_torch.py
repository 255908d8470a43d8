#!/usr/bin/env python3
"""PyTorch timings of the attention variants (bench/attention/variants/*.mj).

    python3 bench/attention/variants_torch.py [--runs N] [--only SUBSTRING,...]
    python3 bench/attention/variants_torch.py --cpu-check [--minijit build/bin/minijit]
    python3 bench/attention/variants_torch.py --small STEM > small.mj

Each variant is timed three ways, as its .mj file computes it: the expression
written out in eager ops (bf16 scores, the softmax in f32, as
attention_torch.py writes it), the same under torch.compile, and FlexAttention
(torch.nn.attention.flex_attention with the equivalent score_mod and a block
mask from the equivalent mask_mod, compiled); where PyTorch has it built in,
also F.scaled_dot_product_attention. The timing method is
bench/probe/probe_torch.py's (CUDA events around each call after 10 warm-up
calls, the median, buffer sets rotated so that together they hold 3x the L2).
One JSON line per variant:
    {"name": "variants/STEM", "eager_us": ..., "compile_us": ..., "flex_us": ...,
     "sdpa_us": ..., "flop": ..., "kept": ..., "compile_s": ...}
"kept" is the fraction of (query, key) pairs the mask leaves, "flop" the
work it leaves (4 B H Sq Skv D kept: the two products), for TFLOP/s.
A method that fails prints "<method>_error" in the line instead.

--cpu-check runs on the CPU at small sizes instead (no GPU needed): the eager
expression, FlexAttention (eager) and SDPA of each variant against the
expression in float64; with --minijit it also runs `minijit eval` on the
variant's .mj file shrunk to the same sizes, on the same inputs, and compares.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback

try:  # --small needs no torch (the lead's shell may run it with a plain python3)
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
bf16 = torch.bfloat16 if torch else None

# The sizes of the .mj files, and the small ones of --cpu-check (the head dim
# stays 128: the .mj files' scale is 1/sqrt(128)).
SIZES = dict(B=8, H=16, HKV=4, S=1024, SKV=2048, D=128, WINDOW=256, CAP=50.0)
TINY = dict(B=2, H=4, HKV=2, S=80, SKV=112, D=128, WINDOW=24, CAP=5.0)


# ---- masks and score mods, one definition for the dense expression and for
# FlexAttention: b, h, q, kv are index tensors (broadcast aranges in the
# dense form, FlexAttention's indices in its own).

def causal(b, h, q, kv):
    return kv <= q


def window(z):
    return lambda b, h, q, kv: (kv <= q) & (q - kv < z["WINDOW"])


def padding(keep):
    return lambda b, h, q, kv: keep[b, 0, 0, kv]


def alibi_mod(slopes):
    return lambda score, b, h, q, kv: score + slopes[h, 0, 0] * (kv - q)


def softcap_mod(cap):
    return lambda score, b, h, q, kv: cap * torch.tanh(score / cap)


def additive_mod(mask):
    return lambda score, b, h, q, kv: score + mask[b, 0, 0, kv]


def dense_indices(batch, heads, sq, skv, device):
    """b, h, q, kv as broadcastable aranges over [B, H, Sq, Skv]."""
    ar = lambda n: torch.arange(n, device=device)  # noqa: E731
    return (ar(batch).view(-1, 1, 1, 1), ar(heads).view(1, -1, 1, 1),
            ar(sq).view(1, 1, -1, 1), ar(skv).view(1, 1, 1, -1))


# ---- each variant as its .mj file writes it

def scores(q, k):
    return (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))


def finish(s, v):
    """softmax in f32, rounded to the inputs' type, times V."""
    return torch.softmax(s.float(), -1).to(v.dtype) @ v


def masked(s, keep):
    return s.masked_fill(~keep, float("-inf"))


def written(stem, z):
    """The unfused expression of variant `stem` (its inputs in the .mj order)."""
    def idx(s):
        return dense_indices(s.shape[0], s.shape[1], s.shape[2], s.shape[3], s.device)

    def plain(q, k, v):
        return finish(scores(q, k), v)

    def causal_fn(q, k, v):
        s = scores(q, k)
        return finish(masked(s, causal(*idx(s))), v)

    def window_fn(q, k, v):
        s = scores(q, k)
        return finish(masked(s, window(z)(*idx(s))), v)

    def alibi_fn(q, k, v, slopes):
        s = scores(q, k)
        b, h, qp, kv = idx(s)
        bias = (slopes * (kv - qp)[0].float()).to(s.dtype)  # [H, Sq, Skv], as the .mj's cast
        return finish(masked(s + bias, causal(b, h, qp, kv)), v)

    def softcap_fn(q, k, v):
        s = scores(q, k)
        s = z["CAP"] * torch.tanh(s / z["CAP"])
        return finish(masked(s, causal(*idx(s))), v)

    def grouped_fn(q, k, v):  # Llama's repeat_kv
        b, hkv, n, d = k.shape
        g = q.shape[1] // hkv
        kr = k[:, :, None].expand(b, hkv, g, n, d).reshape(b, hkv * g, n, d)
        vr = v[:, :, None].expand(b, hkv, g, n, d).reshape(b, hkv * g, n, d)
        s = scores(q, kr)
        return finish(masked(s, causal(*idx(s))), vr)

    def padding_fn(q, k, v, keep):
        return finish(masked(scores(q, k), keep), v)

    def additive_fn(q, k, v, mask):
        s = scores(q, k)
        return finish((s.float() + mask).to(s.dtype), v)

    return {"plain": plain, "causal": causal_fn, "sliding_window": window_fn,
            "sliding_window_nested": window_fn, "alibi": alibi_fn, "softcap": softcap_fn,
            "grouped": grouped_fn, "cross": plain, "padding_mask": padding_fn,
            "padding_additive": additive_fn}[stem]


def inputs(stem, z, device, dtype=bf16, gen=None, spread=None):
    """The variant's inputs in the .mj order: q, k, v (normal, scaled by
    1/sqrt(D), or q by `spread` and k and v by 1), then its extra input (ALiBi
    slopes 2^(-8 (h + 1) / H), a padding mask keeping a batch-dependent prefix
    of the keys, or the same mask as an additive f32 one)."""
    b, h, s, d = z["B"], z["H"], z["S"], z["D"]
    skv = z["SKV"] if stem == "cross" else s
    hkv = z["HKV"] if stem == "grouped" else h

    def rnd(scale, *shape):
        return (torch.randn(*shape, generator=gen) * scale).to(dtype).to(device)
    small = 1 / math.sqrt(d)
    args = [rnd(spread or small, b, h, s, d), rnd(1 if spread else small, b, hkv, skv, d),
            rnd(1 if spread else small, b, hkv, skv, d)]
    lengths = torch.tensor([s - (i * s) // (2 * b) for i in range(b)])
    keep = (torch.arange(skv).view(1, -1) < lengths.view(-1, 1)).view(b, 1, 1, skv)
    if stem == "alibi":
        args.append(torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)]).view(h, 1, 1).to(device))
    elif stem == "padding_mask":
        args.append(keep.to(device))
    elif stem == "padding_additive":
        args.append(torch.zeros(b, 1, 1, skv).masked_fill(~keep, -1e9).to(device))
    return args


# ---- FlexAttention and SDPA equivalents

def flex_parts(stem, z, args):
    """(score_mod, mask_mod, enable_gqa) of the variant for flex_attention."""
    extra = args[3] if len(args) > 3 else None
    return {"plain": (None, None, False), "causal": (None, causal, False),
            "sliding_window": (None, window(z), False),
            "sliding_window_nested": (None, window(z), False),
            "alibi": (alibi_mod(extra), causal, False),
            "softcap": (softcap_mod(z["CAP"]), causal, False),
            "grouped": (None, causal, True), "cross": (None, None, False),
            "padding_mask": (None, padding(extra), False),
            "padding_additive": (additive_mod(extra), None, False)}[stem]


def flex_fn(stem, z, args, compiled):
    """A function of the variant's inputs that calls flex_attention (compiled
    or eager) with its score_mod and a block mask built once here."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    score_mod, mask_mod, gqa = flex_parts(stem, z, args)
    q, k = args[0], args[1]
    block_mask = None
    if mask_mod is not None:
        per_batch = None if stem != "padding_mask" else q.shape[0]
        block_mask = create_block_mask(mask_mod, per_batch, None, q.shape[2], k.shape[2],
                                       device=q.device, _compile=compiled)
    attend = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    scale = 1.0 / math.sqrt(q.shape[-1])
    return lambda q, k, v, *_: attend(q, k, v, score_mod=score_mod, block_mask=block_mask,
                                      scale=scale, enable_gqa=gqa)


def sdpa_fn(stem):
    """F.scaled_dot_product_attention where it takes the variant as it is, else None."""
    if stem in ("plain", "cross"):
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v)
    if stem == "causal":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if stem == "grouped":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                              enable_gqa=True)
    if stem == "padding_mask":
        return lambda q, k, v, keep: F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    if stem == "padding_additive":
        return lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v,
                                                                    attn_mask=mask.to(q.dtype))
    return None


def kept_fraction(stem, z, args):
    """The fraction of (query, key) pairs the variant's mask leaves."""
    _, mask_mod, _ = flex_parts(stem, z, args)
    if mask_mod is None:
        return 1.0
    q, k = args[0], args[1]
    keep = mask_mod(*dense_indices(q.shape[0], q.shape[1], q.shape[2], k.shape[2], q.device))
    return keep.float().mean().item()


def stems():
    return sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(HERE, "variants"))
                  if f.endswith(".mj"))


# ---- the GPU timings

def time_variant(stem, runs, l2):
    sys.path.insert(0, os.path.join(HERE, ".."))
    from torch_anchor import time_fn
    import torch._dynamo
    torch._dynamo.reset()
    z = SIZES
    first = inputs(stem, z, "cuda")
    per_set = sum(a.numel() * a.element_size() for a in first[:3])
    sets = max(1, min(8, -(-3 * l2 // per_set)))
    # the extra input (slopes, mask) is one tensor shared by every set: the
    # block mask is built from it once
    arg_sets = [first] + [inputs(stem, z, "cuda")[:3] + first[3:] for _ in range(sets - 1)]
    b, h, sq, d = first[0].shape
    kept = kept_fraction(stem, z, first)
    row = {"name": "variants/" + stem, "kept": round(kept, 6),
           "flop": round(4 * b * h * sq * first[1].shape[2] * d * kept)}
    eager = written(stem, z)
    methods = [("eager", lambda: eager), ("compile", lambda: torch.compile(eager, dynamic=False)),
               ("flex", lambda: flex_fn(stem, z, first, compiled=True))]
    if sdpa_fn(stem) is not None:
        methods.append(("sdpa", lambda: sdpa_fn(stem)))
    for label, make in methods:
        try:
            t0 = time.perf_counter()
            fn = make()
            fn(*first)
            torch.cuda.synchronize()
            if label == "compile":
                row["compile_s"] = round(time.perf_counter() - t0, 2)
            row[label + "_us"] = round(time_fn(fn, arg_sets, runs), 3)
        except Exception as e:  # one method failing leaves the others standing
            traceback.print_exc(file=sys.stderr)
            row[label + "_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    print(json.dumps(row), flush=True)
    del arg_sets, first
    torch.cuda.empty_cache()


# ---- the CPU check

def shrink_mj(text, z, dtype="f32"):
    """A variant's .mj text at the sizes `z` (from SIZES), its bf16 as `dtype`."""
    big = SIZES
    subs = [(r"\b%d, %d, %d\b" % (big["B"], big["H"], big["S"]), "%d, %d, %d" % (z["B"], z["H"], z["S"])),
            (r"\b%d, %d, %d\b" % (big["B"], big["H"], big["SKV"]), "%d, %d, %d" % (z["B"], z["H"], z["SKV"])),
            (r"\b%d, %d, %d\b" % (big["B"], big["HKV"], big["S"]), "%d, %d, %d" % (z["B"], z["HKV"], z["S"])),
            (r"\b%d, %d, 1, %d\b" % (big["B"], big["HKV"], big["S"]), "%d, %d, 1, %d" % (z["B"], z["HKV"], z["S"])),
            (r"\b%d, %d, %d, %d\b" % (big["B"], big["HKV"], big["H"] // big["HKV"], big["S"]),
             "%d, %d, %d, %d" % (z["B"], z["HKV"], z["H"] // z["HKV"], z["S"])),
            (r"\b%d, 1, 1, %d\b" % (big["B"], big["S"]), "%d, 1, 1, %d" % (z["B"], z["S"])),
            (r"\[%d, 1, 1\]" % big["H"], "[%d, 1, 1]" % z["H"]),
            (r"\[%d, %d\]" % (big["S"], big["S"]), "[%d, %d]" % (z["S"], z["S"])),
            (r"lt %%dist, %d\b" % big["WINDOW"], "lt %%dist, %d" % z["WINDOW"]),
            (r"(div %%scaled|mul %%c), %g\b" % big["CAP"], r"\1, %g" % z["CAP"]),
            (r"\bbf16\b", dtype)]
    for pattern, repl in subs:
        text = re.sub(pattern, repl, text)
    return text


def minijit_eval(minijit, stem, z, args, tmp):
    """`minijit eval` of the shrunk .mj on `args`: the output as a float64 tensor."""
    import numpy as np
    with open(os.path.join(HERE, "variants", stem + ".mj")) as f:
        text = shrink_mj(f.read(), z)
    mj = os.path.join(tmp, stem + ".mj")
    with open(mj, "w") as f:
        f.write(text)
    names = re.search(r"graph \w+\(([^)]*)\)", text).group(1)
    names = [n.split(":")[0].strip().lstrip("%") for n in names.split(", %")]
    cmd = [minijit, "eval", mj, "--save", os.path.join(tmp, stem)]
    for name, a in zip(names, args):
        path = os.path.join(tmp, f"{stem}_{name}.npy")
        np.save(path, a.numpy())
        cmd += ["--input", f"{name}={path}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return torch.from_numpy(np.load(os.path.join(tmp, stem, "o.npy")).astype("float64"))


def base_of(stem, args):
    """What the variant's own work must move its result away from: plain
    attention for causal and the padding masks, causal attention for the
    window, the bias and the soft-cap, and for grouped heads causal attention
    with the K/V heads tiled in the wrong order (h % HKV in place of h / G).
    None for plain and cross."""
    q, k, v = args[:3]
    if stem in ("plain", "cross"):
        return None
    if stem in ("causal", "padding_mask", "padding_additive"):
        return written("plain", TINY)(q, k, v)
    if stem == "grouped":
        g = q.shape[1] // k.shape[1]
        return written("causal", TINY)(q, k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1))
    return written("causal", TINY)(q, k, v)


def cpu_check(minijit):
    """Each method against the expression in float64, on f32 inputs whose
    scores spread wide enough that the soft-cap, the bias and every mask
    change the result (the `signal`, each variant's distance from base_of,
    must be far above the tolerance)."""
    z, tol = TINY, 1e-4
    gen = torch.Generator().manual_seed(0)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for stem in stems():
            args = inputs(stem, z, "cpu", dtype=torch.float32, gen=gen, spread=3.0)
            wide = [a.double() if a.is_floating_point() and a.dim() == 4 and a.shape[-1] == z["D"]
                    else a for a in args]
            ref = written(stem, z)(*wide)
            scale = ref.abs().max().item()
            base = base_of(stem, wide)
            signal = math.inf if base is None else (base - ref).abs().max().item() / scale
            got = {"eager": lambda: written(stem, z)(*args),
                   "flex": lambda: flex_fn(stem, z, args, compiled=False)(*args)}
            if sdpa_fn(stem) is not None:
                got["sdpa"] = lambda: sdpa_fn(stem)(*args)
            if minijit:
                got["minijit"] = lambda: minijit_eval(minijit, stem, z, args, tmp)
            parts = ["signal -" if base is None else
                     f"signal {signal:.1e}" + ("" if signal > 100 * tol else " TOO SMALL")]
            failures += 0 if signal > 100 * tol else 1
            for label, run in got.items():
                try:
                    err = (run().double() - ref).abs().max().item() / scale
                    ok = err < tol
                    parts.append(f"{label} {err:.1e}" + ("" if ok else " MISMATCH"))
                except Exception as e:
                    ok = False
                    parts.append(f"{label} ERROR {type(e).__name__}: {str(e)[:200]}")
                failures += 0 if ok else 1
            print(f"{stem:22s} kept {kept_fraction(stem, z, args):.3f}: " + ", ".join(parts),
                  flush=True)
    print("cpu check: " + ("ok" if not failures else f"{failures} FAILED"))
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--only", default="", help="comma-separated substrings of variant names")
    p.add_argument("--cpu-check", action="store_true",
                   help="check every method against float64 on the CPU at small sizes")
    p.add_argument("--minijit", default="",
                   help="with --cpu-check: the minijit executable, to compare its CPU reference too")
    p.add_argument("--small", metavar="STEM",
                   help="print variant STEM's .mj at --cpu-check's sizes (still bf16), for "
                        "`minijit run --check`: the full sizes are slow for the CPU reference")
    a = p.parse_args()
    if a.small:
        with open(os.path.join(HERE, "variants", a.small + ".mj")) as f:
            print(shrink_mj(f.read(), TINY, "bf16"), end="")
        return 0
    if a.cpu_check:
        return cpu_check(a.minijit)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    print(f"device: {props.name}; torch {torch.__version__}; L2 {l2 >> 20} MiB; runs {a.runs}; "
          f"sizes {SIZES}", file=sys.stderr, flush=True)
    for stem in stems():
        if a.only and not any(part in stem for part in a.only.split(",")):
            continue
        time_variant(stem, a.runs, l2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
