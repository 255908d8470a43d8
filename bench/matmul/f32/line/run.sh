#!/usr/bin/env bash
# Where three TF32 products pay (issue 45): each product of this folder timed by
# `minijit run --bench` three ways (the default rule, `--schedule tf32x3=1`: three TF32
# products past the line too, and `--exact-f32`: the CUDA cores), its rewrites and
# schedules in words, then cuBLAS (torch, TF32 off) on the same shapes.
#
#     bench/matmul/f32/line/run.sh [MINIJIT [FILE.mj ...]] > line.log   # from the repository root, on a GPU
#
# FILEs: some of the folder's products (default: all of them).
set -u
B=${1:-build/bin/minijit}
D=$(dirname "$0")
[ $# -gt 0 ] && shift
files=("$@")
[ ${#files[@]} -eq 0 ] && files=("$D"/*.mj)
for f in "${files[@]}"; do
  echo "== $(basename "$f" .mj)"
  "$B" compile "$f" --emit=fused 2>&1 | grep -E 'schedule|three TF32|split along|error'
  echo "default: $(timeout 120 "$B" run "$f" --bench 2>&1 | grep -E 'median|error')"
  echo "tf32x3=1: $(timeout 120 "$B" run "$f" --bench --schedule tf32x3=1 2>&1 | grep -E 'median|error')"
  echo "exact: $(timeout 120 "$B" run "$f" --bench --exact-f32 2>&1 | grep -E 'median|error')"
done
echo "== cuBLAS"
python3 "$D"/line_torch.py "${files[@]}"
