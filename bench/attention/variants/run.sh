#!/usr/bin/env bash
# The attention variants (README.md here) on a GPU: each variant's kernels
# (--emit=fused), a check against the CPU reference at small sizes (the
# variant shrunk by variants_torch.py --small to [2, 4, 80, 128], still bf16:
# at the full sizes the CPU reference takes minutes a variant), its time at
# the full sizes (minijit run --bench), then the same variants in PyTorch:
# eager, torch.compile, FlexAttention and SDPA (bench/attention/variants_torch.py).
#
#     bench/attention/variants/run.sh [MINIJIT [PYTHON]] > variants.log   # from the repository root
#
# PYTHON "none" leaves PyTorch out: its compiles (torch.compile and FlexAttention
# for each of ten variants) take minutes, so it may run on its own, in parts:
# variants_torch.py --only plain,causal,sliding,alibi,softcap, then --only grouped,cross,padding.
set -u
B=${1:-build/bin/minijit}
P=${2:-python3}
D=bench/attention/variants
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$D"/*.mj; do
  s=$(basename "$f" .mj)
  echo "== $s"
  "$B" compile "$f" --emit=fused 2>&1 | grep -E '^kernel |schedule|not attention|error'
  python3 bench/attention/variants_torch.py --small "$s" > "$tmp/$s.mj"
  timeout 120 "$B" run "$tmp/$s.mj" --check 2>&1 | grep -E "check|error|minijit:"
  timeout 120 "$B" run "$f" --bench 2>&1 | grep -E "median|copy|error|minijit:"
done
[ "$P" = none ] && exit 0
echo "== torch"
"$P" bench/attention/variants_torch.py
