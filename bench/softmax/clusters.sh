#!/usr/bin/env bash
# The long rows' cluster rule on a GPU (sm_90): each graph of bench/softmax timed
# with the rules' schedule and with `--schedule rowcluster=1` (a block a row, the
# rules before the cluster rule), beside a copy of the same bytes (`neg` over the
# graph's input, written to a scratch folder), each a line "NAME rules|block|copy:
# median ... us"; then the kernel each took (--emit=fused's schedule). With
# CHECK=1 each graph is first checked against the CPU reference.
#
#     bench/softmax/clusters.sh [MINIJIT] > clusters.log   # from the repository root
set -u
B=${1:-build/bin/minijit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { timeout 120 "$B" run "$@" --bench 2>&1 | grep -E "bench: median|error|minijit:" | head -1; }
for f in bench/softmax/*.mj; do
  s=$(basename "$f" .mj)
  # the copy: the graph's first input, as declared on its `graph` line
  input=$(grep -m1 -oE '%x: [a-z0-9]+\[[0-9, ]+\]' "$f")
  if [ -z "$input" ]; then
    echo "$s: no input %x on the graph line" >&2
    continue
  fi
  printf 'graph copy(%s) {\n  %%y = neg %%x\n  return %%y\n}\n' "$input" > "$tmp/copy.mj"
  if [ "${CHECK:-0}" = 1 ]; then
    echo "$s check: $(timeout 300 "$B" run "$f" --check 2>&1 | grep -E 'check:|error|minijit:' | head -1)"
  fi
  echo "$s rules: $(median "$f")"
  echo "$s block: $(median "$f" --schedule=rowcluster=1)"
  echo "$s copy: $(median "$tmp/copy.mj")"
  echo "$s kernel: $("$B" compile "$f" --emit=fused 2>&1 | grep -m1 'schedule:' | sed 's/^ *//')"
done
