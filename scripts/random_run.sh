#!/usr/bin/env bash
# The long differential run: random graphs from a range of seeds, each fused
# and unfused on the GPU against the CPU reference with its error bounds
# (tests/support/RandomRun.h), in P processes; every mismatch is counted with
# its seed and the run goes on. Without a GPU the graphs are only compiled
# (a measure of compile throughput).
#   scripts/random_run.sh [--first S] [--count N] [--procs P] [--budget-s T] [--out DIR]
#                         [-- ARGS for minijit_random_run]
# Process i tries seeds S+i, S+i+P, ... so all advance together; a process
# stops starting batches after T seconds. The summary says how many graphs
# were tried, names every flagged seed and where to resume (every seed below
# it was tried). Each flagged graph is written to DIR/flagged/rg<seed>.mj:
#   minijit run DIR/flagged/rgS.mj --check --seed S [--no-fusion]   (reproduce)
#   minijit reduce DIR/flagged/rgS.mj --until "! minijit run {} --check --seed S" BIN (default build/bin) holds minijit_random_run;
# MINIJIT_MUTATION passes through (scripts/mutation_run.sh). Exit status 1
# when a graph was flagged, 0 otherwise.
set -u
first=1 count=1000 procs=$(nproc) budget=0 out=${OUT:-random-logs}
while [ $# -gt 0 ]; do
  case "$1" in
    --first) first=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --budget-s) budget=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "random_run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=${BIN:-build/bin}
[ -x "$bin/minijit_random_run" ] || { echo "random_run.sh: no $bin/minijit_random_run (set BIN)" >&2; exit 2; }
mkdir -p "$out"
rm -rf "$out"/proc-*.log "$out/flagged"
start=$(date +%s)
for ((i = 0; i < procs; i++)); do
  n=$(( (count - i + procs - 1) / procs ))
  [ "$n" -gt 0 ] || continue
  "$bin/minijit_random_run" --first $((first + i)) --stride "$procs" --count "$n" \
    --budget-s "$budget" --threads 1 --dump "$out/flagged" "$@" > "$out/proc-$i.log" 2>&1 &
done
wait
secs=$(( $(date +%s) - start ))
# Each process's last line: summary first=.. next=.. graphs=.. gpu=.. mismatches=.. errors=..
#   compiled=.. cached=.. seconds=.. compile_s=.. run_s=.. reference_s=..
#   mismatch_seeds=a,b|- error_seeds=c|-
awk -v want="$count" -v first="$first" -v secs="$secs" '
  /^summary / {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    graphs += v["graphs"]; mism += v["mismatches"]; errs += v["errors"]; kernels += v["compiled"] + v["cached"]
    gpu = v["gpu"]; procs++
    cs += v["compile_s"]; rs += v["run_s"]; fs += v["reference_s"]
    if (resume == "" || v["next"] + 0 < resume + 0) resume = v["next"]
    if (v["mismatch_seeds"] != "-") ms = ms (ms == "" ? "" : ",") v["mismatch_seeds"]
    if (v["error_seeds"] != "-") es = es (es == "" ? "" : ",") v["error_seeds"]
  }
  END {
    if (procs == 0) { print "random_run.sh: no process wrote a summary"; exit 2 }
    printf "random run: %d of %d graphs from seed %d (each fused and unfused, gpu=%s), %d processes, %d s, %.1f graphs/s, %d kernels\n", graphs, want, first, gpu, procs, secs, graphs / (secs > 0 ? secs : 1), kernels
    printf "process seconds (all processes): compiling %.0f, device runs %.0f, CPU reference %.0f\n", cs, rs, fs
    printf "mismatches: %d  errors: %d\n", mism, errs
    printf "mismatch seeds: %s\nerror seeds: %s\n", (ms == "" ? "none" : ms), (es == "" ? "none" : es)
    if (graphs < want) printf "stopped by the budget: every seed below %d was tried; resume with --first %d --count %d\n", resume, resume, want - (resume - first)
    exit (mism + errs > 0) ? 1 : 0
  }' "$out"/proc-*.log
