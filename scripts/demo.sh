#!/usr/bin/env bash
# The main job: builds, then runs the lecture's examples. Each shows its graph
# and the CUDA minijit generates; with a GPU it also runs the graph one kernel
# per op, fused and as hand-written CUDA, checks all three against the CPU
# reference and prints times, bandwidth and the per-kernel profile, and then
# leaves pictures in build/pictures: every kernel of the examples on a
# roofline, fused beside unfused, their timelines and the matmul sweep
# (scripts/pictures.sh --lecture, about a minute; SKIP_PICTURES=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
scripts/build.sh > build/build.log 2>&1 || { cat build/build.log; exit 1; }
status=0
for s in gelu softmax layernorm rmsnorm mlp mlp_train mlp_teacher; do
  build/bin/sample_$s || status=1
done
if [ -z "${SKIP_PICTURES:-}" ] && command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then
  echo
  scripts/pictures.sh --lecture build/pictures || status=1
fi
exit $status
