#!/usr/bin/env bash
# The probe of graphs nobody tuned for (docs/PERFORMANCE_LOG.md, "Graphs nobody tuned
# for"): each graph checked against the CPU reference, timed (minijit run --bench:
# one buffer set, so each moves 100 MB or more), its schedule in words; then the
# same graphs in PyTorch eager and torch.compile (rotated buffers).
#
#     bench/probe/run.sh [MINIJIT [DIR]] > probe.log     # from the repository root, on a GPU
#
# MINIJIT is the minijit executable (default build/bin/minijit); DIR the folder
# of graphs (default bench/probe; bench/products holds the products of issue
# 45), whose *_torch.py times the same graphs in PyTorch.
set -u
B=${1:-build/bin/minijit}
D=${2:-bench/probe}
for f in "$D"/*.mj; do
  echo "== $(basename "$f" .mj)"
  timeout 120 "$B" run "$f" --check 2>&1 | grep -E "check|error"
  timeout 60 "$B" run "$f" --bench 2>&1 | grep -E "median|copy|error"
  "$B" compile "$f" --emit=fused 2>&1 | grep -E '^kernel |schedule|rewrite|error'
done
echo "== torch"
python3 "$D"/*_torch.py
