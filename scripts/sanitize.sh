#!/usr/bin/env bash
# Builds minijit with sanitizers in build-SANITIZERS (build-address-undefined,
# build-thread) and runs the CPU-side tests there: the unit tests and the lit
# golden tests. NVRTC is not instrumented: its own allocations are left out
# of leak reports (tests/sanitizer/lsan.supp) and what it does inside itself
# out of race reports (tests/sanitizer/tsan.supp).
#   scripts/sanitize.sh [address,undefined|thread]
# MINIJIT_JOBS sets how many compilers the build runs at once (default: one
# per core).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=${1:-address,undefined}
dir=build-${sanitizers//,/-}
scripts/install-deps.sh
# -O1 and line tables only (-g1): the sanitizers' advice, and a build 2.5 times
# faster than -O2 -g (a large source file: 11 s against 28 s under ASan), which
# is most of what CI spends here; reports still name files and lines.
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DMINIJIT_SANITIZE="$sanitizers" > /dev/null
cmake --build "$dir" -j"${MINIJIT_JOBS:-$(nproc)}" --target minijit minijit_unit_tests
# A fresh kernel cache of a short path, removed at the end. With the cache
# under the build folder (a path of 45 characters), LeakSanitizer's tracer
# crashed (signal 11, "LeakSanitizer has encountered a fatal error") at the
# exit of one lit command, `minijit compile samples/rmsnorm.mj
# --emit=resources` run by resources_samples.mj, on every run on the
# development machine on 2026-12-04, and never with a short path: a crash of
# the sanitizer, not a leak report, and not understood yet.
MINIJIT_CACHE_DIR=$(mktemp -d /tmp/mjsan.XXXXXX)
export MINIJIT_CACHE_DIR
trap 'rm -rf "$MINIJIT_CACHE_DIR"' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
# use_tls=0: LeakSanitizer's tracer reads each thread's dynamic TLS blocks,
# and in a process that has run NVRTC (which loads its builtins library at
# run time) one entry was garbage ("DTLS 5 at 0x000000000eb2-0x002000001fb4"
# with LSAN_OPTIONS=verbosity=1:log_threads=1): the tracer crashed on it
# (signal 11, addr=0xeb8) in `minijit compile --emit=ptx` of
# cli_compile_stages.mj, on 4 of 4 full lit runs on 2026-12-04 (never alone).
# Without TLS as roots, what only TLS points to reads as leaked, so
# pthread_setspecific's blocks are suppressed (tests/sanitizer/lsan.supp): no
# leak is hidden that the roots would have found, some could only be
# reported falsely.
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizer/lsan.supp:print_suppressions=0:use_tls=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=suppressions=$PWD/tests/sanitizer/tsan.supp:halt_on_error=1:second_deadlock_stack=1
# Sanitized frames are several times larger: lowering the deepest graph the
# limits allow (ir/Limits.h, kMaxDepth) takes over 8 MB of stack under ASan,
# about 1 MB in a release build. Give the tests the room a release build has.
ulimit -s 65536 2>/dev/null || ulimit -s unlimited 2>/dev/null ||
  echo "warning: cannot raise the stack limit ($(ulimit -s) KB); the deepest graphs may overflow it" >&2
"$dir/bin/minijit_unit_tests" --gtest_brief=1
python3 /usr/lib/llvm-14/build/utils/lit/lit.py -q "$dir/tests/lit"
echo "sanitized tests ($sanitizers): passed"
