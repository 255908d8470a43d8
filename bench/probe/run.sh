#!/usr/bin/env bash
# The probe of graphs nobody tuned for (docs/PERFORMANCE.md, "Graphs nobody tuned
# for"): each graph checked against the CPU reference, timed (minijit run --bench:
# one buffer set, so each moves 100 MB or more), its schedule in words; then the
# same graphs in PyTorch eager and torch.compile (rotated buffers).
#
#     bench/probe/run.sh [MINIJIT] > probe.log     # from the repository root, on a GPU
#
# MINIJIT is the minijit executable (default build/bin/minijit).
set -u
B=${1:-build/bin/minijit}
for f in bench/probe/*.mj; do
  echo "== $(basename "$f" .mj)"
  timeout 120 "$B" run "$f" --check 2>&1 | grep -E "check|error"
  timeout 60 "$B" run "$f" --bench 2>&1 | grep -E "median|copy|error"
  "$B" compile "$f" --emit=fused 2>&1 | grep -E '^kernel |schedule|rewrite|error'
done
echo "== torch"
python3 bench/probe/probe_torch.py
