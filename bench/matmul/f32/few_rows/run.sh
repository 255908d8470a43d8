#!/usr/bin/env bash
# Exact f32 products of few rows, nn.Linear's x @ W.T under the line of three TF32
# products (issue 45): each product of this folder timed by `minijit run --bench` two ways
# (the default: three TF32 products split in the kernel where the rule says, split-K by
# that kernel's tiles; `--schedule split3=0`: the CUDA cores), its schedule in words, then
# cuBLAS (torch, TF32 off) on the same products (an epilogue's op, relu, is left out there).
# Half of the products were never tuned on: the rule's check on shapes of others.
#
#     bench/matmul/f32/few_rows/run.sh [MINIJIT [FILE.mj ...]] > few_rows.log   # from the repository root, on a GPU
#
# FILEs: some of the folder's products (default: all of them). SPLITK="2 4" adds a run
# with each `--schedule splitk=N`.
set -u
B=${1:-build/bin/minijit}
D=$(dirname "$0")
[ $# -gt 0 ] && shift
files=("$@")
[ ${#files[@]} -eq 0 ] && files=("$D"/*.mj)
for f in "${files[@]}"; do
  echo "== $(basename "$f" .mj)"
  "$B" compile "$f" --emit=fused 2>&1 | grep -E '^kernel|split along|error'
  echo "default: $(timeout 120 "$B" run "$f" --bench 2>&1 | grep -E 'median|error')"
  echo "split3=0: $(timeout 120 "$B" run "$f" --bench --schedule split3=0 2>&1 | grep -E 'median|error')"
  for s in ${SPLITK:-}; do
    echo "splitk=$s: $(timeout 120 "$B" run "$f" --bench --schedule splitk=$s 2>&1 | grep -E 'median|error')"
  done
done
echo "== cuBLAS"
python3 "$D"/../line/line_torch.py "${files[@]}"
