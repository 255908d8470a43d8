#!/usr/bin/env bash
# Hopper's attention kernel (wgmma=1, templates/attention/AttentionWgmma.cpp)
# beside mma.sync's, the rule today, on the f16 and bf16 graphs of
# bench/attention and its variants: each graph first checked against the CPU
# reference at small sizes with wgmma=1 (the variant shrunk by
# variants_torch.py --small; the bench graphs at [1, 2, 200, D]), then timed
# at full size (minijit run --bench) with the rule, with wgmma=1 and with
# each of its other forms (the variants with the first three), then
# PyTorch's SDPA and the written-out graph (attention_torch.py) in the same
# call.
#
#     bench/attention/wgmma.sh [MINIJIT [PYTHON]] > wgmma.log   # from the repository root
#
# PYTHON "none" leaves PyTorch out.
set -u
B=${1:-build/bin/minijit}
P=${2:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiles=("wgmma=1" "wgmma=1,overlap=0" "wgmma=1,pingpong=1" "wgmma=1,pingpong=1,stages=3" "wgmma=1,stages=3" "wgmma=1,bn=64,stages=3" "wgmma=1,bn=64,stages=4")
graphs=(bench/attention/causal_bf16_8x16x4096x128.mj bench/attention/full_bf16_8x16x4096x128.mj
        bench/attention/full_bf16_8x12x1000x128.mj bench/attention/causal_f16_4x16x1024x64.mj)
for v in plain causal sliding_window grouped cross alibi softcap; do
  graphs+=("bench/attention/variants/$v.mj")
done
for f in "${graphs[@]}"; do
  s=$(basename "$f" .mj)
  echo "== $s"
  "$B" compile "$f" --emit=fused --schedule=wgmma=1 2>&1 | grep -E '^kernel |schedule:|error'
  case "$f" in
  */variants/*) python3 bench/attention/variants_torch.py --small "$s" > "$tmp/$s.mj" ;;
  *) sed -E 's/(f16|bf16)\[([0-9]+), ([0-9]+), ([0-9]+), ([0-9]+)\]/\1[1, 2, 200, \5]/g; s/shape=\[[0-9]+, [0-9]+\]/shape=[200, 200]/g' \
       "$f" > "$tmp/$s.mj" ;;
  esac
  echo "check (wgmma=1, small): $(timeout 120 "$B" run "$tmp/$s.mj" --check --schedule=wgmma=1 2>&1 |
    grep -E 'check|error|minijit:' | tr '\n' ' ')"
  echo "rule: $(timeout 120 "$B" run "$f" --bench 2>&1 | grep -E 'median|error|minijit:' | tr '\n' ' ')"
  forms=("${tiles[@]}")
  case "$f" in */variants/*) forms=("${tiles[@]:0:3}") ;; esac # the variants: the first three forms
  for t in "${forms[@]}"; do
    echo "$t: $(timeout 120 "$B" run "$f" --bench --schedule="$t" 2>&1 |
      grep -E 'median|error|minijit:' | tr '\n' ' ')"
  done
done
[ "$P" = none ] && exit 0
echo "== torch"
"$P" bench/attention/attention_torch.py --only bf16,f16
