#!/usr/bin/env bash
# Runs the crash corpus (tests/crash/cases.txt: the inputs of issue 42 that
# crashed, hung or were silently accepted) against a minijit binary. Each case
# runs under `ulimit -v` 4 GB and `timeout 20` with the kernel cache off, and
# must end with its expected exit status (a clear error is 1 or 2; never a
# signal or the timeout) and print a line matching its pattern. ctest runs it
# (the crash_corpus test).
#   scripts/crash_corpus.sh [BIN_DIR]    (default build/bin)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin}/minijit
corpus=tests/crash
[[ -x $bin ]] || { echo "crash_corpus: no minijit at $bin" >&2; exit 2; }
data=$(mktemp -d "${TMPDIR:-/tmp}/minijit-crash-XXXXXX")
trap 'rm -rf "$data"' EXIT

# Generated inputs: long chains, a .npy whose header claims [2^20, 2^20] in
# 128 bytes, a small .npy, an empty one, a FIFO.
{
  echo "graph tanh600(%x0: f32[16]) {"
  for i in $(seq 1 600); do echo "  %x$i = tanh %x$((i - 1))"; done
  echo "  %l = sum %x600 axes=[0]"
  echo "  %dx = grad %l, %x0"
  echo "  return %dx"
  echo "}"
} > "$data/tanh600.mj"
{
  echo "graph sin600(%x0: f32[1024]) {"
  for i in $(seq 1 600); do echo "  %x$i = sin %x$((i - 1))"; done
  echo "  return %x600"
  echo "}"
} > "$data/sin600.mj"
{
  echo "graph diamonds200(%x0: f32[1024]) {"
  for i in $(seq 0 199); do
    echo "  %a$i = exp %x$i"
    echo "  %b$i = sin %x$i"
    echo "  %x$((i + 1)) = add %a$i, %b$i"
  done
  echo "  return %x200"
  echo "}"
} > "$data/diamonds200.mj"
npy() { # SHAPE-TEXT DATA-BYTES-PRINTF: a version 1.0 .npy of <f4 with a 118-byte header
  local dict="{'descr': '<f4', 'fortran_order': False, 'shape': $1, }"
  printf '\x93NUMPY\x01\x00\x76\x00%-117s\n' "$dict"
  printf "$2"
}
npy "(1048576, 1048576)" "" > "$data/square.npy"
npy "(4,)" '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40' > "$data/x4.npy"
npy "(0,)" "" > "$data/x0.npy"
mkfifo "$data/fifo"

export MINIJIT_DISABLE_CACHE=1
passed=0 failed=0
start=$SECONDS
while IFS= read -r line; do
  [[ -z ${line// /} || $line == \#* ]] && continue
  IFS='|' read -r name want pattern args <<< "$line"
  name=$(echo $name) want=$(echo $want)
  pattern=$(sed -e 's/^ *//' -e 's/ *$//' <<< "$pattern")
  args=${args//@C@/$corpus}
  args=${args//@D@/$data}
  pattern=${pattern//@D@/$data}
  out=$data/$name.out
  t0=$SECONDS
  # shellcheck disable=SC2086 # the arguments are split on spaces
  (ulimit -v 4194304; exec timeout 20 "$bin" $args) > "$out" 2>&1 < /dev/null
  rc=$?
  why=""
  if ((rc == 124)); then
    why="timed out after 20 s"
  elif ((rc > 128)); then
    why="killed by signal $((rc - 128))"
  elif [[ $rc != "$want" ]]; then
    why="exit $rc, expected $want"
  elif ! grep -Eq -- "$pattern" "$out"; then
    why="no line matches /$pattern/"
  fi
  if [[ -z $why ]]; then
    passed=$((passed + 1))
    echo "ok    $name (exit $rc, $((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    echo "FAIL  $name: $why; minijit ${args}"
    head -c 2000 "$out" | sed 's/^/      /'
  fi
done < "$corpus/cases.txt"
echo "crash_corpus: $passed passed, $failed failed in $((SECONDS - start)) s"
((failed == 0))
