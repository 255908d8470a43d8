#!/usr/bin/env python3
"""Writes the row-reduction spread: softmax, layer norm, RMS norm, a row sum and
column sums at row counts and lengths the rules were not fitted to (odd, prime,
short, long), f32, f16 and bf16, as .mj graphs, one per file.
`scripts/gpu_session.sh spread` tunes each on the GPU (`minijit tune`), so the
candidates' times show which threads per row and split the data prefers
(docs/PERFORMANCE_LOG.md, "Row and column schedules over a spread of shapes").

  bench/row_spread.py --out DIR
"""
import argparse
import os

SOFTMAX = """graph {name}(%x: {t}[{r}, {k}]) {{
  %m = max %x axes=[1] keepdim=true
  %d = sub %x, %m
  %e = exp %d
  %s = sum %e axes=[1] keepdim=true
  %y = div %e, %s
  return %y
}}
"""
LAYERNORM = """graph {name}(%x: {t}[{r}, {k}], %w: {t}[{k}], %b: {t}[{k}]) {{
  %mu = mean %x axes=[1] keepdim=true
  %d = sub %x, %mu
  %d2 = mul %d, %d
  %var = mean %d2 axes=[1] keepdim=true
  %ve = add %var, 1e-05
  %r = rsqrt %ve
  %n = mul %d, %r
  %nw = mul %n, %w
  %y = add %nw, %b
  return %y
}}
"""
RMSNORM = """graph {name}(%x: {t}[{r}, {k}], %w: {t}[{k}]) {{
  %x2 = mul %x, %x
  %ms = mean %x2 axes=[1] keepdim=true
  %mse = add %ms, 1e-06
  %r = rsqrt %mse
  %n = mul %x, %r
  %y = mul %n, %w
  return %y
}}
"""
ROWSUM = """graph {name}(%x: {t}[{r}, {k}]) {{
  %x2 = mul %x, %x
  %s = sum %x2 axes=[1]
  return %s
}}
"""
COLSUM = """graph {name}(%x: {t}[{r}, {k}]) {{
  %s = sum %x axes=[0]
  return %s
}}
"""

# (template, dtype, rows, row length)
SPREAD = [
    (SOFTMAX, "f32", 4096, 1024), (SOFTMAX, "f32", 8191, 1023), (SOFTMAX, "f32", 2048, 2048),
    (SOFTMAX, "f32", 16384, 1024), (SOFTMAX, "f32", 1000, 777), (SOFTMAX, "f32", 32768, 512),
    (SOFTMAX, "f32", 2048, 4096), (SOFTMAX, "f32", 509, 1536), (SOFTMAX, "f32", 4096, 640),
    (SOFTMAX, "f32", 100, 1000), (SOFTMAX, "f32", 12345, 384), (SOFTMAX, "f32", 65536, 128),
    (SOFTMAX, "f32", 131072, 64), (SOFTMAX, "f32", 20011, 200), (SOFTMAX, "f16", 4096, 2048),
    (SOFTMAX, "f16", 8192, 1000),
    (LAYERNORM, "f32", 4096, 768), (LAYERNORM, "f32", 8192, 1024), (LAYERNORM, "f32", 2000, 3001),
    (LAYERNORM, "bf16", 4097, 3001),
    (RMSNORM, "f16", 4096, 4096), (RMSNORM, "f16", 16384, 1024), (RMSNORM, "f32", 1000, 5000),
    (ROWSUM, "f32", 8192, 1024), (ROWSUM, "f32", 3000, 2500),
    (COLSUM, "f32", 32768, 4096), (COLSUM, "f32", 20000, 6000), (COLSUM, "f32", 100000, 700),
    (COLSUM, "f32", 4096, 19200), (COLSUM, "f16", 65536, 1000),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the .mj files")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names = {SOFTMAX: "softmax", LAYERNORM: "layernorm", RMSNORM: "rmsnorm", ROWSUM: "rowsum",
             COLSUM: "colsum"}
    for tmpl, t, r, k in SPREAD:
        name = f"{names[tmpl]}_{t}_{r}x{k}"
        with open(os.path.join(a.out, name + ".mj"), "w") as f:
            f.write(tmpl.format(name=name, t=t, r=r, k=k))
    print(f"{len(SPREAD)} graphs in {a.out}")


if __name__ == "__main__":
    main()
