#!/usr/bin/env bash
# Products over a few k (issue 45; Mamba2's [b, 3, 3] @ [b, 3, n]): each product of this
# folder timed by `minijit run --bench` two ways (the default: the sum of k columns times
# rows, one pointwise kernel, where 2 <= k <= 8; `--schedule terms=0`: the matmul
# template), and with `terms=16` where k is past the default's 8, its kernels in words,
# then PyTorch on the same products (eager: cuBLAS, TF32 off; torch.compile; a copy of
# the output's bytes).
#
#     bench/matmul/few_terms/run.sh [MINIJIT [FILE.mj ...]] > few_terms.log   # from the repository root, on a GPU
#
# FILEs: some of the folder's products (default: all of them). CHECK=1 first checks
# each against the CPU reference (`minijit run --check`, both ways).
set -u
B=${1:-build/bin/minijit}
D=$(dirname "$0")
[ $# -gt 0 ] && shift
files=("$@")
[ ${#files[@]} -eq 0 ] && files=("$D"/*.mj)
for f in "${files[@]}"; do
  echo "== $(basename "$f" .mj)"
  "$B" compile "$f" --emit=fused 2>&1 | grep -E '^kernel|error'
  if [ "${CHECK:-0}" = 1 ]; then
    echo "check default: $(timeout 120 "$B" run "$f" --check 2>&1 | tail -1)"
    echo "check terms=0: $(timeout 120 "$B" run "$f" --check --schedule terms=0 2>&1 | tail -1)"
  fi
  echo "default: $(timeout 120 "$B" run "$f" --bench 2>&1 | grep -E 'median|error')"
  echo "terms=0: $(timeout 120 "$B" run "$f" --bench --schedule terms=0 2>&1 | grep -E 'median|error')"
  if grep -qE 'x(9|1[0-6])x' <<< "$(basename "$f")"; then
    echo "terms=16: $(timeout 120 "$B" run "$f" --bench --schedule terms=16 2>&1 | grep -E 'median|error')"
  fi
done
echo "== PyTorch"
python3 "$D"/few_terms_torch.py "${files[@]}"
