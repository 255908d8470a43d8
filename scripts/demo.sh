#!/usr/bin/env bash
# The main job: builds, then runs the lecture's examples. Each shows its graph
# and the CUDA minijit generates; with a GPU it also runs the graph one kernel
# per op, fused and as hand-written CUDA, checks all three against the CPU
# reference and prints times, bandwidth and the per-kernel profile, and then
# leaves pictures in build/pictures: every kernel of the examples on a
# roofline, fused beside unfused, their timelines and the matmul sweep
# (scripts/pictures.sh --lecture, about a minute; SKIP_PICTURES=1 skips it);
# with PyTorch too, the MLP's training step through the torch.compile backend.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
scripts/build.sh > build/build.log 2>&1 || { cat build/build.log; exit 1; }
status=0
for s in gelu softmax layernorm rmsnorm mlp mlp_train mlp_teacher; do
  build/bin/sample_$s || status=1
done
gpu=""
command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1 && gpu=1
# The lecture's MLP training step through torch.compile(backend="minijit"),
# beside eager and Inductor, where a GPU and PyTorch are there.
python=python3
[ -x .venv-torch/bin/python ] && python=.venv-torch/bin/python
if [ -n "$gpu" ] && "$python" -c "import torch" > /dev/null 2>&1; then
  echo
  PYTHONPATH=python MINIJIT_LIBRARY=build/lib/libminijit_c.so "$python" samples/python/mlp_backend.py ||
    status=1
fi
if [ -z "${SKIP_PICTURES:-}" ] && [ -n "$gpu" ]; then
  echo
  scripts/pictures.sh --lecture build/pictures || status=1
fi
exit $status
