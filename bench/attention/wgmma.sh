#!/usr/bin/env bash
# Hopper's attention kernel (templates/attention/AttentionWgmma.cpp, the rule
# wherever it takes the attention) beside mma.sync's (wgmma=0) on the f16 and
# bf16 graphs of bench/attention and its variants: each graph first checked
# against the CPU reference at small sizes with wgmma=1 (the variant shrunk by
# variants_torch.py --small; the bench graphs at [1, 2, 200, D]), then timed
# at full size (minijit run --bench) with the rule, with wgmma=0 and with
# each of the wgmma kernel's other forms (the variants with the first three).
# Then the rule's edge: plain attentions of 2 to 330 blocks of 128 query
# rows (shapes not among the graphs above), each timed with the rule,
# wgmma=1 and wgmma=0. Last, PyTorch's SDPA and the written-out graph
# (attention_torch.py) in the same call.
#
#     bench/attention/wgmma.sh [MINIJIT [PYTHON]] > wgmma.log   # from the repository root
#
# PYTHON "none" leaves PyTorch out.
set -u
B=${1:-build/bin/minijit}
P=${2:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiles=("wgmma=0" "wgmma=1,overlap=0" "wgmma=1,pingpong=1" "wgmma=1,stages=2" "wgmma=1,pingpong=1,stages=2" "wgmma=1,bn=64,stages=3" "wgmma=1,bn=64,stages=4")
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
# The rule's edge: [B, H, S, D] -> blocks of 128 query rows = B * H * ceil(S / 128)
for shape in "1, 1, 200, 64" "1, 1, 1024, 128" "1, 3, 300, 64" "1, 2, 1024, 128" "1, 4, 1024, 128" \
             "1, 1, 4096, 64" "1, 8, 1024, 128" "2, 3, 2000, 128" "1, 16, 1024, 128" \
             "1, 4, 4096, 64" "3, 11, 500, 64" "1, 17, 1024, 128" "2, 33, 513, 128"; do
  s="edge_bf16_$(echo "$shape" | tr -d ' ' | tr ',' 'x')"
  sed -E "s/bf16\[8, 12, 1000, 128\]/bf16[$shape]/g; s/^graph [a-z0-9_]+/graph $s/" \
    bench/attention/full_bf16_8x12x1000x128.mj > "$tmp/$s.mj"
  echo "== $s"
  "$B" compile "$tmp/$s.mj" --emit=fused 2>&1 | grep -E 'schedule:|error' | cut -c1-120
  for t in "" "wgmma=1" "wgmma=0"; do
    echo "${t:-rule}: $(timeout 120 "$B" run "$tmp/$s.mj" --bench ${t:+--schedule=$t} 2>&1 |
      grep -E 'median|error|minijit:' | tr '\n' ' ')"
  done
done
[ "$P" = none ] && exit 0
echo "== torch"
"$P" bench/attention/attention_torch.py --only bf16,f16
