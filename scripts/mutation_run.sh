#!/usr/bin/env bash
# Mutation testing of the differential check: the random run once per known
# miscompile (compiler/Mutation.h, through $MINIJIT_MUTATION), each stopping at
# its first flagged graph, after a control run without a mutation that must
# flag nothing. Prints, per mutation, whether it was caught and at which seed,
# then the kill rate.
#   scripts/mutation_run.sh [--count N] [--procs P] [--first S] [--out DIR]
# N graphs at most per mutation (default 300), P processes (default: cores).
# Exit status 0 when the control is clean and every mutation is caught.
set -u
count=300 procs=$(nproc) first=1 out=${OUT:-mutation-logs}
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --first) first=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "mutation_run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
here=$(dirname "$0")
mutations="index-off-by-one reduction-identity dropped-epilogue broadcast-stride missing-barrier lost-tail f16-store-truncates"
mkdir -p "$out"
unset MINIJIT_MUTATION
"$here/random_run.sh" --first "$first" --count "$count" --procs "$procs" --out "$out/none" \
  > "$out/none.txt" 2>&1
control=$?
echo "control (no mutation): $(head -1 "$out/none.txt" | cut -d: -f2-)"
grep -E "^(mismatches|mismatch seeds|error seeds)" "$out/none.txt" | sed 's/^/  /'
killed=0 total=0
for m in $mutations; do
  total=$((total + 1))
  MINIJIT_MUTATION=$m "$here/random_run.sh" --first "$first" --count "$count" --procs "$procs" \
    --out "$out/$m" -- --stop-at-first > "$out/$m.txt" 2>&1
  if [ $? -eq 1 ]; then
    killed=$((killed + 1))
    seeds=$(grep -E "^(mismatch|error) seeds" "$out/$m.txt" | grep -v none | head -1 | cut -d: -f2)
    echo "$m: caught (flagged seeds:$seeds)"
  else
    echo "$m: NOT caught in $(head -1 "$out/$m.txt" | cut -d: -f2 | cut -d' ' -f2-4) graphs"
  fi
done
echo "mutation kill rate: $killed of $total ($((100 * killed / total)) %); control: $([ $control -eq 0 ] && echo clean || echo FLAGGED)"
[ $control -eq 0 ] && [ $killed -eq $total ]
