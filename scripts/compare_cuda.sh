#!/usr/bin/env bash
# Snapshots what the back end generates, so a refactor can show it changed
# nothing: for every samples/*.mj and tests/lit/*.mj, `minijit compile
# --emit=fused` and `--emit=cuda`, with fusion on and off (stderr and the exit
# status too, for the files that are meant to fail), and the benchmark graphs'
# fused text and CUDA (minijit_bench --dump). No GPU needed.
#
#   scripts/compare_cuda.sh OUT            write the snapshot into OUT
#   scripts/compare_cuda.sh OUT BEFORE     ... then diff it against BEFORE (exit 1 on a difference)
#
# BUILD_DIR (default build) names the build whose bin/ is used.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/compare_cuda.sh OUT [BEFORE]}
bin=${BUILD_DIR:-build}/bin
rm -rf "$out"
mkdir -p "$out/samples" "$out/lit" "$out/bench"
count=0
for f in samples/*.mj tests/lit/*.mj; do
  dir=$out/$(basename "$(dirname "$f")")
  name=$(basename "$f" .mj)
  for mode in fused unfused; do
    flags=()
    [[ $mode == unfused ]] && flags=(--no-fusion)
    for emit in fused cuda; do
      dst=$dir/$name.$mode.$emit
      status=0
      "$bin/minijit" compile "$f" "${flags[@]}" --emit=$emit > "$dst" 2> "$dst.err" || status=$?
      echo "exit $status" >> "$dst.err"
      count=$((count + 1))
    done
  done
done
"$bin/minijit_bench" --dump "$out/bench"
count=$((count + $(ls "$out/bench" | wc -l)))
echo "compare_cuda: $count outputs in $out"
if [[ $# -ge 2 ]]; then
  diff -r "$2" "$out" && echo "compare_cuda: identical to $2"
fi
