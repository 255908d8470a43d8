#!/usr/bin/env python3
"""Joins minijit_bench --suite general's JSON and torch_general.py's into one Markdown table.

    python3 bench/join_general.py minijit_general.json torch_general.json > table.md

Speed-ups are torch's time over minijit's (above 1: minijit faster); the last
line gives their geometric means.
"""
import json
import math
import sys


def main():
    mj = json.load(open(sys.argv[1]))
    th = json.load(open(sys.argv[2]))
    anchors = {r["workload"]: r for r in th["rows"]}
    d = mj["device"]
    name, copy = (d["name"], d["copy_gbps"]) if isinstance(d, dict) else (d, mj["copy_gbps"])
    print(f"GPU: {name}; copy: {copy:.0f} GB/s (minijit run), {th['copy_gbps']:.0f} GB/s (torch run); "
          f"torch {th['torch']}\n")
    print("| workload | kernels | minijit (us) | % of copy / TFLOP/s | torch eager (us) | torch.compile (us) "
          "| vs eager | vs torch.compile |")
    print("|---|---|---|---|---|---|---|---|")
    vs_eager, vs_compile = [], []
    for r in mj["rows"]:
        if r["mode"] != "fused":
            continue
        a = anchors.get(r["workload"])
        compute = r["tflops"] > 5
        rate = f"{r['tflops']:.1f} TFLOP/s" if compute else f"{100 * r['copy_fraction']:.1f}%"
        cells = [r["workload"], str(r["kernels_launched"]), f"{r['us']:.2f}", rate]
        if a:
            e, c = a["eager_us"] / r["us"], a["compile_us"] / r["us"]
            vs_eager.append(e)
            vs_compile.append(c)
            cells += [f"{a['eager_us']:.2f}", f"{a['compile_us']:.2f}", f"{e:.2f}x", f"{c:.2f}x"]
        else:
            cells += ["-"] * 4
        print("| " + " | ".join(cells) + " |")
    if vs_compile:
        g = lambda v: math.exp(sum(math.log(x) for x in v) / len(v))
        print(f"\ngeometric mean over {len(vs_compile)} rows: {g(vs_eager):.2f}x of eager, "
              f"{g(vs_compile):.2f}x of torch.compile; rows below torch.compile: "
              f"{sum(1 for x in vs_compile if x < 1)}")


if __name__ == "__main__":
    main()
