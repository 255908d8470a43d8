#!/usr/bin/env bash
# Narrow products and few long columns (issue 45): each graph of this folder timed by
# `minijit run --bench` by today's rules and by the rules before them, in one build:
# products of many tiles with an n (m) of 32 or less take 256x32 (32x256) tiles copied by
# cp.async in three stages (`tile=128`: the 128x128 tile the rule gave them before;
# `cpasync=0`: the narrow tile through registers), and columns read in several passes
# split over blocks that wait for each other (`splits=1`: a block a group of 32 columns, as
# before); NetVLAD both ways (`tile=128,splits=1`; its transposed product stays the other
# way round). Then PyTorch on the same work (eager, torch.compile, a copy of the bytes).
#
#     bench/narrow/run.sh [MINIJIT [FILE.mj ...]] > narrow.log   # from the repository root, on a GPU
#
# FILEs: some of the folder's graphs (default: all of them). CHECK=1 first checks each
# against the CPU reference (`minijit run --check`, both ways).
set -u
B=${1:-build/bin/minijit}
D=$(dirname "$0")
[ $# -gt 0 ] && shift
files=("$@")
[ ${#files[@]} -eq 0 ] && files=("$D"/*.mj)
for f in "${files[@]}"; do
  name=$(basename "$f" .mj)
  case $name in
    netvlad*) before=tile=128,splits=1 ;;
    col* | batchnorm*) before=splits=1 ;;
    *) before=tile=128 ;;
  esac
  echo "== $name"
  "$B" compile "$f" --emit=fused 2>&1 | grep -E 'schedule: (matmul|outer|inner)|error' | cut -c1-220
  if [ "${CHECK:-0}" = 1 ]; then
    echo "check: $(timeout 180 "$B" run "$f" --check 2>&1 | tail -1)"
    echo "check $before: $(timeout 180 "$B" run "$f" --check --schedule "$before" 2>&1 | tail -1)"
  fi
  echo "default: $(timeout 120 "$B" run "$f" --bench 2>&1 | grep -E 'median|error')"
  echo "$before: $(timeout 120 "$B" run "$f" --bench --schedule "$before" 2>&1 | grep -E 'median|error')"
  case $name in
    narrow* | bmm* | rows*)
      echo "cpasync=0: $(timeout 120 "$B" run "$f" --bench --schedule cpasync=0 2>&1 | grep -E 'median|error')" ;;
  esac
done
echo "== PyTorch"
python3 "$D"/narrow_torch.py "${files[@]}"
