#!/usr/bin/env bash
# Pictures of where the time goes, measured on this machine's GPU: the
# lecture's examples (GeLU, softmax, layernorm, rmsnorm, an MLP) fused and
# unfused on a roofline and as timelines, and the lecture's size sweeps
# (matmul, softmax, MLP) beside PyTorch, torch.compile, cuBLAS and the
# hand-written Triton kernels. Writes the data (docs/PROFILE_JSON.md) and PNG +
# SVG pictures into DIR, and prints where they are.
#   scripts/pictures.sh [--lecture] DIR
# --lecture: the examples' rooflines and timelines and the matmul sweep only
# (what scripts/demo.sh shows). BIN: the executables (default build/bin).
# SWEEPS: which sweeps, in order (default "matmul mlp softmax": the Triton softmax of
# the longest rows, the slowest to compile, last). Without a GPU it says
# so and exits 0; without PyTorch the sweeps have no anchors, without
# matplotlib only the data is written. About 4 minutes on an H200 (most of it
# torch.compile and Triton compiling each size).
set -uo pipefail
cd "$(dirname "$0")/.."
lecture=0
if [ "${1:-}" = "--lecture" ]; then lecture=1; shift; fi
[ $# -eq 1 ] || { echo "usage: $0 [--lecture] DIR" >&2; exit 2; }
dir=$1
bin=${BIN:-build/bin}
sweeps=${SWEEPS:-matmul mlp softmax}
[ $lecture -eq 1 ] && sweeps=matmul
mkdir -p "$dir"

if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "pictures: no GPU here (nvidia-smi finds none); nothing to measure"
  exit 0
fi
# The first Python that has what a part needs: matplotlib to draw, torch for the anchors.
python_with() {
  for p in ${PYTHON:-} python3 /usr/bin/python3; do
    command -v "$p" > /dev/null 2>&1 && "$p" -c "import $1" > /dev/null 2>&1 && { echo "$p"; return 0; }
  done
  return 1
}
plot_py=$(python_with matplotlib) ||
  echo "pictures: no Python with matplotlib, so the data only (scripts/install-deps.sh installs it)"
torch_py=$(python_with torch) || echo "pictures: no Python with PyTorch, so the sweeps without anchors"
status=0
# step SECONDS LOG WHAT COMMAND...: runs COMMAND with a time limit, its output in LOG.
step() {
  local limit=$1 log=$2 what=$3 t0=$SECONDS
  shift 3
  timeout "$limit" "$@" >> "$log" 2>&1
  local rc=$?
  printf '  %-58s exit %d, %3d s\n' "$what" $rc $((SECONDS - t0))
  [ $rc -eq 0 ] || { status=1; tail -4 "$log" | sed 's/^/    /'; }
  return $rc
}
plot() { # plot COMMAND ARGS... -o OUT
  [ -n "${plot_py:-}" ] || return 1
  step 120 "$dir/plot.log" "plot.py $1 -> $(basename "${@: -1}")" "$plot_py" scripts/plot.py "$@"
}

# ---- the lecture's examples: the suite's rows at its sizes (inputs far past
# the L2), fused and unfused, kernel by kernel. No CPU check: the suite and the
# GPU tests check these graphs.
echo "pictures: the lecture's examples, fused and unfused, into $dir/profile_lecture.json"
workloads=("gelu n=2^26" "softmax 8192x8192" "layernorm 8192x8192" "rmsnorm 8192x8192" "mlp 4096x4 batch 4096")
names=(gelu softmax layernorm rmsnorm mlp)
only=()
for w in "${workloads[@]}"; do only+=(--only "$w"); done
step 150 "$dir/minijit.log" "minijit_bench --profile-json (5 workloads x 2 modes)" \
  "$bin/minijit_bench" --no-check --runs 100 --profile-runs 100 \
  --profile-json "$dir/profile_lecture.json" "${only[@]}"
if [ -f "$dir/profile_lecture.json" ]; then
  for i in "${!workloads[@]}"; do
    plot roofline "$dir/profile_lecture.json" --graph "${workloads[$i]}" -o "$dir/roofline_${names[$i]}"
    plot timeline "$dir/profile_lecture.json" --graph "${workloads[$i]}" -o "$dir/timeline_${names[$i]}"
  done
  plot roofline "$dir/profile_lecture.json" \
    --title "Roofline of the lecture's examples: every kernel, fused and unfused" -o "$dir/roofline_lecture"
fi

# ---- the sweeps: minijit's, then the anchors' (one Python process for all of
# them), merged into one file per sweep
for s in $sweeps; do
  step 150 "$dir/minijit.log" "minijit_bench --sweep $s" \
    "$bin/minijit_bench" --sweep "$s" --json "$dir/minijit_sweep_$s.json"
done
if [ -n "${torch_py:-}" ]; then
  step 300 "$dir/anchors.log" "torch_anchor.py --sweep ${sweeps// /,}" \
    "$torch_py" bench/torch_anchor.py --sweep "${sweeps// /,}" --json "$dir/anchors_sweep_{sweep}.json"
fi
for s in $sweeps; do
  parts=()
  for f in "$dir/minijit_sweep_$s.json" "$dir/anchors_sweep_$s.json"; do [ -f "$f" ] && parts+=("$f"); done
  [ ${#parts[@]} -gt 0 ] && plot merge "${parts[@]}" -o "$dir/sweep_$s.json" &&
    plot sweep "$dir/sweep_$s.json" -o "$dir/sweep_$s"
done

echo "pictures: in $dir (logs: minijit.log, anchors.log, plot.log)"
for f in "$dir"/*.png; do [ -f "$f" ] && echo "  $f  (and .svg)"; done
for f in "$dir"/profile_lecture.json "$dir"/sweep_*.json; do [ -f "$f" ] && echo "  $f  (the data)"; done
exit $status
