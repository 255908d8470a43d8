#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz and runs
# each for SECONDS (default 60), from a seed corpus of the samples and the lit
# golden files. Crashes are written to build-fuzz/crashes/; the corpus grows
# in build-fuzz/corpus/ from one run to the next. One worker per target.
#   scripts/fuzz.sh [SECONDS]
# MINIJIT_JOBS sets how many compilers the build runs at once (default: one
# per core). docs/HARDENING.md records the figures of the longer runs.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
scripts/install-deps.sh
command -v clang++-14 >/dev/null || { sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo;
  $sudo apt-get install -y --no-install-recommends clang-14 libclang-rt-14-dev; }
# -O1 with line tables (-g1), as scripts/sanitize.sh builds: faster to build.
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER=clang++-14 -DMINIJIT_FUZZ=ON -DMINIJIT_BUILD_TESTS=OFF > /dev/null
cmake --build build-fuzz -j"${MINIJIT_JOBS:-$(nproc)}" --target minijit_parser_fuzzer minijit_compile_fuzzer
corpus=build-fuzz/corpus
mkdir -p "$corpus/parser" "$corpus/compile" build-fuzz/crashes
for f in samples/*.mj tests/lit/*.mj; do
  cp "$f" "$corpus/parser/"; cp "$f" "$corpus/compile/"
done
export MINIJIT_CACHE_DIR=${MINIJIT_CACHE_DIR:-$PWD/build-fuzz/cache}
status=0
for t in parser compile; do
  echo "== fuzzing the $t for $seconds s"
  # The whole log in build-fuzz/$t.log; here its figures (coverage, corpus,
  # executions) and any finding.
  build-fuzz/bin/minijit_${t}_fuzzer "$corpus/$t" -max_total_time="$seconds" -max_len=4096 -seed=1 \
    -timeout=20 -rss_limit_mb=4096 -artifact_prefix=build-fuzz/crashes/ -print_final_stats=1 \
    > "build-fuzz/$t.log" 2>&1 || { status=1; tail -60 "build-fuzz/$t.log"; }
  grep -E "INITED|DONE|^Done|^stat::|ERROR|SUMMARY|Test unit written" "build-fuzz/$t.log" || true
done
exit $status
