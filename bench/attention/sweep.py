#!/usr/bin/env python3
"""Issue 43's forward sweep: attention over bf16 [8, 16, S, 128], S from 1024
to 16384, causal and not, written as plain ops and run by minijit beside
PyTorch in the same process:

  - F.scaled_dot_product_attention forced to each of its backends that takes
    the shape: FlashAttention-2 (SDPBackend.FLASH_ATTENTION, "PyTorch's flash
    kernel" of the issue), cuDNN's (SDPBackend.CUDNN_ATTENTION) and
    the memory-efficient one, then with no backend forced (what a user gets:
    the line says which of the three that matches in time is not known, so
    the default is timed as it is);
  - FlexAttention through torch.compile with the same mask (a causal
    mask_mod, or none);
  - the expression written out in eager ops (attention_torch.py's), where its
    [8, 16, S, S] scores fit in the GPU's memory;
  - SDPA through torch.compile(backend="minijit") (no gradient: minijit's
    attention kernel; needs the minijit package importable, PYTHONPATH=python).

    python3 bench/attention/sweep.py [--minijit build/bin/minijit] [--seq 1024,4096]
                                     [--runs N] [--no-torch] [--emit DIR]

Each graph is the text of bench/attention/causal_bf16_8x16x4096x128.mj (or
full_...) with S replaced; minijit times it with `minijit run FILE --bench`
(median of 200 runs after warm-up). PyTorch's timings are probe_torch.py's
method (CUDA events, median, buffer sets rotated past the L2). TFLOP/s count
4 B H S^2 D, halved (S + 1) / (2 S) for causal: the work the mask leaves.
One JSON line per shape, then a table. --emit DIR writes the .mj files and
exits (no GPU needed).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
B, H, D = 8, 16, 128


def graph_text(seq, causal):
    """The .mj of the shape: the 4096 bench graph with S replaced."""
    stem = "causal_bf16_8x16x4096x128" if causal else "full_bf16_8x16x4096x128"
    with open(os.path.join(HERE, stem + ".mj")) as f:
        text = f.read()
    name = ("causal" if causal else "full") + f"_bf16_8x16x{seq}x128"
    text = text.replace(stem, name)
    text = re.sub(r"\b4096\b", str(seq), text)
    return name, text


def kept(seq, causal):
    return (seq + 1) / (2 * seq) if causal else 1.0


def flop(seq, causal):
    return 4 * B * H * seq * seq * D * kept(seq, causal)


def minijit_us(minijit, path):
    """minijit's median (us) of the graph, or the error it printed."""
    r = subprocess.run([minijit, "run", path, "--bench"], capture_output=True, text=True, timeout=300)
    m = re.search(r"bench: median ([0-9.]+) us", r.stdout)
    if m:
        return float(m.group(1)), None
    return None, (r.stdout + r.stderr).strip().splitlines()[-1:] or ["exit %d" % r.returncode]


def torch_timings(seq, causal, runs):
    """{method: us or error text} of PyTorch's ways to the same attention."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sys.path.insert(0, os.path.join(HERE, ".."))
    from torch_anchor import rotated_arg_sets, time_fn
    sys.path.insert(0, HERE)
    import attention_torch

    torch._dynamo.reset()  # each shape compiles afresh (past 8 recompiles Dynamo would run eager)
    shape = (B, H, seq, D)
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
    arg_sets = rotated_arg_sets([(shape, torch.bfloat16)] * 3, l2)

    def sdpa(backend):
        def fn(q, k, v):
            if backend is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return fn

    def flex():
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        mask = None
        if causal:
            mask = create_block_mask(lambda b, h, q, kv: kv <= q, None, None, seq, seq, device="cuda",
                                     _compile=True)  # never the [S, S] mask in memory
        attend = torch.compile(flex_attention, dynamic=False)
        return lambda q, k, v: attend(q, k, v, block_mask=mask)

    def backend():
        import minijit.torch  # noqa: F401 (registers the backend)
        return torch.compile(sdpa(None), backend="minijit", dynamic=False)

    methods = [("sdpa_flash", lambda: sdpa(SDPBackend.FLASH_ATTENTION)),
               ("sdpa_cudnn", lambda: sdpa(SDPBackend.CUDNN_ATTENTION)),
               ("sdpa_efficient", lambda: sdpa(SDPBackend.EFFICIENT_ATTENTION)),
               ("sdpa_default", lambda: sdpa(None)),
               ("backend", backend),
               ("flex", flex)]
    # the written-out expression holds the scores in bf16 and f32 at once
    free = torch.cuda.mem_get_info()[0]
    if B * H * seq * seq * (2 + 4 + 4) < 0.8 * free:
        methods.append(("eager", lambda: attention_torch.written(causal)))
    out = {}
    for label, make in methods:
        try:
            fn = make()
            fn(*arg_sets[0])
            torch.cuda.synchronize()
            out[label] = round(time_fn(fn, arg_sets, runs), 2)
        except Exception as e:  # one method failing leaves the others standing
            traceback.print_exc(file=sys.stderr)
            out[label] = f"error: {type(e).__name__}: {str(e)[:200]}"
        print(f"  S={seq} causal={causal} {label}: {out[label]}", file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    if "eager" not in out:
        out["eager"] = "skipped: the scores do not fit in memory"
    del arg_sets
    torch.cuda.empty_cache()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minijit", default="build/bin/minijit")
    p.add_argument("--seq", default="1024,2048,4096,8192,16384")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--only-causal", action="store_true", help="the causal shapes only")
    p.add_argument("--emit", metavar="DIR", help="write the .mj files there and exit")
    a = p.parse_args()
    seqs = [int(s) for s in a.seq.split(",")]
    if not a.no_torch and not a.emit:
        import torch
        props = torch.cuda.get_device_properties(0)
        print(f"device: {props.name}; torch {torch.__version__}; runs {a.runs}",
              file=sys.stderr, flush=True)
    rows = []
    if a.emit:
        os.makedirs(a.emit, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for causal in (True,) if a.only_causal else (False, True):
            for seq in seqs:
                name, text = graph_text(seq, causal)
                path = os.path.join(a.emit or tmp, name + ".mj")
                with open(path, "w") as f:
                    f.write(text)
                if a.emit:
                    continue
                row = {"name": name, "tflop": round(flop(seq, causal) / 1e12, 4)}
                us, err = minijit_us(a.minijit, path)
                row["minijit"] = us if us is not None else "error: " + " ".join(err)
                print(f"  {name} minijit: {row['minijit']}", file=sys.stderr, flush=True)
                if not a.no_torch:
                    row.update(torch_timings(seq, causal, a.runs))
                print(json.dumps(row), flush=True)
                rows.append(row)
    if a.emit:
        return 0
    # the table: TFLOP/s of each, and minijit's time over each anchor's
    anchors = ["sdpa_flash", "sdpa_cudnn", "sdpa_default", "flex", "eager", "backend"]
    print("\n| graph | minijit | " + " | ".join(anchors) + " |")
    print("|---" * (2 + len(anchors)) + "|")
    for row in rows:
        def cell(key):
            v = row.get(key)
            if not isinstance(v, float):
                return "-" if v is None else v.split(":")[0]
            tf = row["tflop"] / (v * 1e-6)
            if key == "minijit":
                return f"{v:.1f} us, {tf:.0f} TF/s"
            mine = row.get("minijit")
            ratio = f", {v / mine:.2f}x" if isinstance(mine, float) else ""
            return f"{v:.1f} us, {tf:.0f} TF/s{ratio}"
        print(f"| {row['name']} | " + " | ".join(cell(k) for k in ["minijit"] + anchors) + " |")
    print("\nratio: the anchor's time over minijit's (above 1: minijit is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
