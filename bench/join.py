#!/usr/bin/env python3
"""Joins minijit_bench's and torch_anchor.py's JSON into one Markdown table.

    python3 bench/join.py minijit.json anchors.json > table.md

minijit.json is the suite's file (docs/PROFILE_JSON.md, kind "suite"; the
older files without a schema, whose "device" was the GPU's name, read too).
"""
import json
import sys

TARGETS = {  # from the issues that set them (median us on the H200)
    "gelu n=2^26": "<= 130", "gelu n=2^16": "<= 8", "softmax 4096x1024": "<= 12",
    "softmax 8192x8192": "<= 140", "softmax 1024x32768": "<= 75", "softmax 65536x128": "<= 20",
    "layernorm 8192x8192": "<= 130", "gelu bf16 n=2^26": "<= 70",
    "matmul f32 4096^3": ">= 75% of cuBLAS", "matmul f16 4096^3": ">= 50% of cuBLAS (mma.sync)",
    "matmul f16 4096^3+bias+gelu": "<= 1.05x our matmul", "mlp 128x16 batch 128": "<= 60 (graph replay)",
}


def device_of(doc):
    """The GPU's name and the copy bandwidth, from a file of either layout."""
    d = doc["device"]
    if isinstance(d, dict):
        return d["name"], d["copy_gbps"]
    return d, doc["copy_gbps"]


def main():
    mj = json.load(open(sys.argv[1]))
    th = json.load(open(sys.argv[2]))
    anchors = {r["workload"]: r for r in th["rows"]}
    rows = {}
    for r in mj["rows"]:
        rows.setdefault(r["workload"], {})[r["mode"]] = r
    name, copy = device_of(mj)
    runs = mj.get("timed_runs", mj.get("runs"))
    triton = f"; triton {th['triton']}" if th.get("triton") else ""
    print(f"GPU: {name}; device-to-device copy: {copy:.0f} GB/s (minijit run), "
          f"{th['copy_gbps']:.0f} GB/s (torch run); torch {th['torch']}{triton}; median of {runs} runs\n")
    print("| workload | minijit fused (us) | % of copy BW / TFLOP/s | minijit unfused (us) | torch eager prims | "
          "torch library | torch.compile | Triton by hand | target | fused vs best anchor |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, modes in rows.items():
        f, u, a = modes.get("fused"), modes.get("unfused"), anchors.get(name)
        if not f:
            continue
        host = name == "gelu n=2^16"
        fused_us = f["host_us_per_call"] if host else f["us"]
        compute_bound = name.startswith(("matmul", "mlp"))
        rate = f"{f['tflops']:.1f} TFLOP/s" if compute_bound else f"{100 * f['copy_fraction']:.1f}%"
        cells = [name + (" (host wall time per call)" if host else ""), f"{fused_us:.2f}",
                 "-" if host else rate,
                 f"{(u['host_us_per_call'] if host else u['us']):.2f}" if u else "-"]
        best = None
        for key in ("eager_prims", "library", "compile", "triton"):
            v = a.get(key + ("_host_us_per_call" if host else "_us")) if a else None
            text = f"{v:.2f}" if v is not None else "-"
            if key == "compile" and a and "compile_ro_us" in a:
                text += f" (reduce-overhead {a['compile_ro_us']:.2f})"
                best = a["compile_ro_us"] if best is None else min(best, a["compile_ro_us"])
            cells.append(text)
            if v is not None:
                best = v if best is None else min(best, v)
        cells.append(TARGETS.get(name, "-"))
        cells.append(f"{best / fused_us:.2f}x" if best else "-")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
