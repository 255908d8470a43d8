#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the executables built
# here carried in build/bin (the GPU machine has no LLVM or GoogleTest to build
# with). Writes every log under $OUT (or ./gpu-logs).
#   scripts/gpu_session.sh [tests] [python] [bench] [anchors] [general] [samples] [train] [tune]
#                          [sanitize] [random] [mutation] [dlpack] [pictures] [devices] [spread]
#                          [kernelbench] [attention] [attention_wgmma] [folders] [tf32] [clusters]
# tf32: issue 45's study of f32 products on the tensor cores: the error of
# each form against cuBLAS's SGEMM, both against f64, at m = n = 1024
# (tf32_error.log) and 4096 (tf32_error_4096.log), then the time of the
# default (three TF32 products, promoted, where the rule says), with promote=0
# and with promote=0 on the promoted tile's width beside --exact-f32 (the CUDA
# cores) and cuBLAS on the f32 products of bench/matmul/f32 (tf32_time.log).
# clusters: bench/softmax/clusters.sh (each long-row graph with the rules and with a
# block a row, beside a copy of its bytes).
# folders: the graphs of each folder of FOLDERS (default bench/scans,
# bench/pooling and bench/softmax), each timed by `minijit run --bench` (and first checked
# against the CPU reference with CHECK=1), then the folder's *_torch.py
# anchors in the same call; one log a folder.
# attention: bench/attention/variants/run.sh (each attention variant's kernels,
# its check at small sizes and its time, then bench/attention/variants_torch.py).
# attention_wgmma: Hopper's attention kernel (the rule on sm_90): its GPU
# tests (two under compute-sanitizer), then bench/attention/wgmma.sh.
# general: the generalization suite (minijit_bench --suite general, fused) and
# its PyTorch anchors (bench/torch_general.py) in the same call, joined into
# general_table.md.
# pictures: scripts/pictures.sh (the lecture's rooflines, timelines and size
# sweeps, about 4 minutes) in a scratch folder, then one tarball of its data and
# pictures in $OUT (pictures.tar.gz) with its log (pictures.log): run it alone,
# so that what comes back stays within a few files.
# devices: every GPU of the host (minijit devices --bandwidth), the multi-GPU
# sample, and on each device in turn (MINIJIT_DEVICE) `minijit run --check`,
# the GPU tests DEVICES_FILTER selects (default: Devices.*, the tests of
# several devices and threads) and, where PyTorch is, the DLPack round trip
# on cuda:N.
# spread: bench/row_spread.py's 30 row and column reductions (odd, prime,
# short, long; f32, f16, bf16), each searched by `minijit tune` with a fresh
# database, so that every candidate's time around the rules' choice shows
# (about 4 minutes); the logs come back as one spread.tar.gz.
# TESTS_FILTER narrows the GPU tests, SAN_FILTER the ones run under each
# compute-sanitizer tool (SAN_TOOLS), TUNE_FILE names the tuning list (TUNE_SUITE=general
# takes its rows from the generalization suite): lines
# of "workload-substring [MINIJIT_SCHEDULE overrides]", '|' for spaces in the
# first field.
set -u
out=${OUT:-gpu-logs}
mkdir -p "$out"
bin=${BIN:-build/bin}
export MINIJIT_CACHE_DIR=${MINIJIT_CACHE_DIR:-/tmp/minijit-cache}
want() { [ $# -eq 0 ] && return 0; for a in "${ARGS[@]}"; do [ "$a" = "$1" ] && return 0; done; return 1; }
ARGS=("$@")
[ ${#ARGS[@]} -eq 0 ] && ARGS=(tests bench anchors samples)

date -u +"%Y-%m-%d %H:%M UTC" | tee "$out/date.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"

if want tests; then
  # TEST_SHARDS processes (default: one a core), each its own gtest shard: the
  # suite's NVRTC compiles go side by side, and a CUDA fault (which fails every
  # later test of its process) stays in its shard, whose first failure names it.
  shards=${TEST_SHARDS:-$(nproc)}; pids=()
  for ((i = 0; i < shards; i++)); do
    ( GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout ${TESTS_TIMEOUT:-500} \
        $bin/minijit_gpu_tests --gtest_filter="${TESTS_FILTER:-*}" > "/tmp/minijit-gpu-tests.$i.log" 2>&1
      echo "shard $i: exit $?" >> "/tmp/minijit-gpu-tests.$i.log" ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  for ((i = 0; i < shards; i++)); do cat "/tmp/minijit-gpu-tests.$i.log"; done > "$out/gpu_tests.log"
  rm -f /tmp/minijit-gpu-tests.*.log
  echo "gpu tests: $(grep -c '^\[       OK' "$out/gpu_tests.log") passed," \
       "$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$out/gpu_tests.log") failed," \
       "$(grep -c '^shard .*: exit [^0]' "$out/gpu_tests.log") of $shards shards did not exit 0"
  grep -E "^shard .*: exit [^0]" "$out/gpu_tests.log"
  grep -B2 -A14 "Failure" "$out/gpu_tests.log" | head -80
fi
if want python; then
  # The Python package and the torch backend on the GPU (pytest; the GPU cases
  # run here, skipped elsewhere), with the executables' C library.
  PYTHONPATH=python MINIJIT_LIBRARY=${MINIJIT_LIBRARY:-$bin/../lib/libminijit_c.so} \
    timeout ${PYTEST_TIMEOUT:-400} python3 -m pytest -q -rfEs --tb=short -n ${PYTEST_WORKERS:-3} \
    -p no:cacheprovider python/tests > "$out/pytest.log" 2>&1
  echo "pytest: exit $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$out/pytest.log" | tail -20
fi
if want samples; then
  for s in gelu softmax layernorm rmsnorm gpt2_block gpt2_block_train; do
    timeout 60 $bin/minijit run samples/$s.mj --check --profile >> "$out/samples.log" 2>&1
    echo "minijit run samples/$s.mj --check: exit $?"
  done
  timeout 60 $bin/minijit compare samples/softmax.mj 2>&1 | tee "$out/compare.log"
  for s in gelu softmax layernorm rmsnorm mlp mlp_multi_gpu gpt2_block; do
    [ -x $bin/sample_$s ] && timeout 120 $bin/sample_$s >> "$out/samples.log" 2>&1 && echo "sample_$s: ok"
  done
fi
if want devices; then
  timeout 120 $bin/minijit devices --bandwidth 2>&1 | tee "$out/devices.txt"
  echo "minijit devices: exit ${PIPESTATUS[0]}"
  timeout 300 $bin/sample_mlp_multi_gpu 2>&1 | tee "$out/multi_gpu.log"
  echo "sample_mlp_multi_gpu: exit ${PIPESTATUS[0]}"
  ngpu=$(nvidia-smi -L | grep -c "^GPU")
  for ((dev = 0; dev < ngpu; dev++)); do
    timeout 60 $bin/minijit run samples/softmax.mj --check --device $dev > "$out/run_device_$dev.log" 2>&1
    echo "minijit run samples/softmax.mj --check --device $dev: exit $?"
    MINIJIT_DEVICE=$dev timeout 500 $bin/minijit_gpu_tests --gtest_filter="${DEVICES_FILTER:-Devices.*}" \
      > "$out/devices_tests_$dev.log" 2>&1
    echo "GPU tests on device $dev: exit $?"
    grep -E "^\[  (PASSED|FAILED|SKIPPED)|Skipped|Failure" "$out/devices_tests_$dev.log" | head -20
    if [ -f $bin/libminijit_dlpack_shim.so ]; then
      timeout 120 python3 tests/gpu/dlpack_torch.py $bin/libminijit_dlpack_shim.so --device $dev \
        > "$out/dlpack_device_$dev.log" 2>&1
      echo "dlpack round trip on cuda:$dev: exit $?"; tail -1 "$out/dlpack_device_$dev.log"
    fi
  done
  timeout 60 $bin/minijit run samples/softmax.mj --device $ngpu > "$out/run_device_missing.log" 2>&1
  echo "minijit run --device $ngpu (no such device): exit $? (1 expected): $(tail -1 "$out/run_device_missing.log")"
fi
if want bench; then
  timeout 400 $bin/minijit_bench --json "$out/minijit.json" 2>&1 | tee "$out/bench.log"
fi
if want anchors; then
  timeout 500 python3 bench/torch_anchor.py --json "$out/anchors.json" 2>&1 | tee "$out/anchors.log"
  [ -f "$out/minijit.json" ] && python3 bench/join.py "$out/minijit.json" "$out/anchors.json" | tee "$out/table.md"
fi
if want attention; then
  # The attention variants of bench/attention/variants (its README): kernels,
  # a check at small sizes and the time of each, then PyTorch's eager,
  # torch.compile, FlexAttention and SDPA times, one JSON line a variant.
  # VARIANTS_TORCH=none leaves PyTorch out (its compiles take minutes).
  timeout 580 bench/attention/variants/run.sh $bin/minijit ${VARIANTS_TORCH:-python3} \
    > "$out/attention_variants.log" 2>&1
  echo "attention variants: exit $?"
  grep -E "^==|check|median|^\{" "$out/attention_variants.log"
fi
if want attention_wgmma; then
  # Hopper's attention kernel (the rule for f16/bf16 head dims 64 and 128):
  # its GPU tests, two of them under compute-sanitizer's memcheck and
  # synccheck, then bench/attention/wgmma.sh (each f16/bf16 attention graph
  # checked small, timed with the rule, with mma.sync's kernel and with each
  # wgmma form; the rule's edge of few blocks; then SDPA and the written-out
  # graph in PyTorch).
  timeout 300 $bin/minijit_gpu_tests --gtest_filter='Attention.Hopper*' > "$out/attention_wgmma_tests.log" 2>&1
  echo "attention wgmma tests: exit $?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|error" "$out/attention_wgmma_tests.log" | head -40
  for tool in memcheck synccheck; do
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $bin/minijit_gpu_tests \
      --gtest_filter='Attention.HopperKernelReadsEveryLayout' > "$out/attention_wgmma_$tool.log" 2>&1
    echo "compute-sanitizer $tool (Hopper attention): exit $?"
  done
  timeout 500 bench/attention/wgmma.sh $bin/minijit ${VARIANTS_TORCH:-python3} > "$out/attention_wgmma.log" 2>&1
  echo "attention wgmma bench: exit $?"
  grep -E "^==|check|rule|wgmma=|sdpa|^\{" "$out/attention_wgmma.log" | cut -c1-200
fi
if want general; then
  timeout 300 $bin/minijit_bench --suite general --fused-only --no-check --runs 100 \
    --json "$out/general.json" ${GENERAL_ONLY:+--only "$GENERAL_ONLY"} 2>&1 | tee "$out/general.log"
  timeout 400 python3 bench/torch_general.py --json "$out/torch_general.json" \
    ${GENERAL_ONLY:+--only "$GENERAL_ONLY"} 2>&1 | tee "$out/torch_general.log"
  python3 bench/join_general.py "$out/general.json" "$out/torch_general.json" | tee "$out/general_table.md"
fi
if want sanitize; then
  # memcheck: out-of-bounds and misaligned accesses; racecheck: shared-memory
  # races; initcheck: reads of uninitialised device memory; synccheck:
  # barriers used wrongly.
  # The tools run at once, each in its own process.
  tools=${SAN_TOOLS:-memcheck racecheck initcheck synccheck}
  for tool in $tools; do
    ( timeout 400 compute-sanitizer --tool "$tool" --error-exitcode 9 $bin/minijit_gpu_tests \
        --gtest_filter="${SAN_FILTER:-*}" > "$out/sanitize_$tool.log" 2>&1
      echo "exit $?" >> "$out/sanitize_$tool.log" ) &
  done
  wait
  for tool in $tools; do
    echo "compute-sanitizer $tool: $(tail -1 "$out/sanitize_$tool.log")"
    grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" "$out/sanitize_$tool.log" | head -5
  done
fi
if want random; then
  # The long differential run (scripts/random_run.sh): RANDOM_COUNT graphs from
  # seed RANDOM_FIRST, each fused and unfused against the CPU reference with
  # its error bounds, in RANDOM_PROCS processes of RANDOM_WORKERS threads each
  # (4 x 4 ran fastest on the H200's 16 cores), with the data-movement ops,
  # stopping after RANDOM_BUDGET seconds; every mismatch is counted with its
  # seed and the run goes on.
  BIN=$bin scripts/random_run.sh --first "${RANDOM_FIRST:-1}" --count "${RANDOM_COUNT:-100000}" \
    --procs "${RANDOM_PROCS:-4}" --budget-s "${RANDOM_BUDGET:-540}" --out "$out/random" \
    -- --workers "${RANDOM_WORKERS:-4}" --movement 2>&1 | tee "$out/random.txt"
  grep -h "^mismatch\|^error" "$out"/random/proc-*.log | head -40
fi
if want mutation; then
  # Mutation testing (scripts/mutation_run.sh): the random run once per known
  # miscompile, each stopping at its first flagged graph, and the kill rate.
  BIN=$bin scripts/mutation_run.sh --count "${MUTATION_COUNT:-300}" \
    --procs "${RANDOM_PROCS:-$(nproc)}" --out "$out/mutation" 2>&1 | tee "$out/mutation.txt"
fi
if want kernelbench; then
  # KernelBench levels KB_LEVELS (default 1,2) through torch.compile(backend="minijit"), KB_SHARDS processes
  # side by side taking turns on the GPU for checks and timings (--gpu-lock); KB_ROOT is a
  # KernelBench checkout carried along (never committed), KB_ARGS more options of run.py.
  # Each shard cuts the batch of a problem whose inputs pass KB_INPUT_MIB (default 1024):
  # eight shards holding published sizes (up to 16 GiB an input) run out of memory.
  lib=${MINIJIT_LIBRARY:-$bin/../lib/libminijit_c.so}
  n=${KB_SHARDS:-8}; pids=(); rm -f /tmp/kb*.jsonl /tmp/kb*.err
  for ((k = 0; k < n; k++)); do
    PYTHONPATH=python MINIJIT_LIBRARY=$lib TORCHINDUCTOR_COMPILE_THREADS=2 timeout ${KB_BUDGET:-540} \
      python3 bench/kernelbench/run.py --root "${KB_ROOT:?KB_ROOT: a KernelBench checkout}" --levels ${KB_LEVELS:-1,2} \
      --shard $k/$n --gpu-lock /tmp/minijit-kb.lock --input-budget-mib ${KB_INPUT_MIB:-1024} ${KB_ARGS:-} > "/tmp/kb$k.jsonl" 2> "/tmp/kb$k.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  # Problems that ran out of memory beside the other shards (a product's operands have no
  # batch to cut) run again alone, the whole GPU free; their records are saved last, so
  # the table keeps them (KB_RETRY_BUDGET seconds, 0 for no retry).
  rm -f /tmp/kb_retry.jsonl /tmp/kb_retry.err # (none from an earlier run on this machine)
  if [ "${KB_RETRY_BUDGET:-120}" -gt 0 ]; then
    PYTHONPATH=python MINIJIT_LIBRARY=$lib timeout ${KB_RETRY_BUDGET:-120} \
      python3 bench/kernelbench/run.py --root "$KB_ROOT" --levels ${KB_LEVELS:-1,2} --retry-oom /tmp/kb[0-9]*.jsonl \
      --input-budget-mib ${KB_INPUT_MIB:-1024} ${KB_ARGS:-} > /tmp/kb_retry.jsonl 2> /tmp/kb_retry.err
  fi
  cat /tmp/kb[0-9]*.jsonl /tmp/kb_retry.jsonl > "$out/kernelbench.jsonl" 2>/dev/null
  cat /tmp/kb[0-9]*.err /tmp/kb_retry.err > "$out/kernelbench.err" 2>/dev/null
  python3 bench/kernelbench/run.py --from-json "$out/kernelbench.jsonl" --markdown "$out/kernelbench.md" | tail -4
fi
if want dlpack; then
  timeout 120 python3 tests/gpu/dlpack_torch.py $bin/libminijit_dlpack_shim.so 2>&1 | tee "$out/dlpack.log"
  echo "dlpack round trip: exit ${PIPESTATUS[0]}"
fi
if want train; then
  # The training step: its sample (gradients checked, 5 accumulating steps,
  # SGD in place, the profile), the student-teacher loop replayed in
  # PyTorch, the gradients against torch.autograd, and the benchmark rows
  # with their anchors.
  timeout 300 $bin/sample_mlp_train > "$out/train_sample.log" 2>&1
  echo "sample_mlp_train: exit $?"
  timeout 120 $bin/sample_mlp_teacher /tmp/mlp-teacher > "$out/train_teacher.log" 2>&1
  echo "sample_mlp_teacher: exit $?"
  timeout 120 python3 samples/mlp_teacher.py /tmp/mlp-teacher >> "$out/train_teacher.log" 2>&1
  echo "mlp_teacher.py (PyTorch replay): exit $?"
  timeout 120 python3 tests/gpu/autodiff_torch.py --minijit $bin/minijit > "$out/train_torch.log" 2>&1
  echo "autodiff_torch.py: exit $?"; cat "$out/train_torch.log" | tail -3
  timeout 300 $bin/minijit_bench --only train --json "$out/train_minijit.json" > "$out/train_bench.log" 2>&1
  echo "bench train rows: exit $?"
  timeout 300 python3 bench/torch_anchor.py --only train --json "$out/train_anchors.json" > "$out/train_anchors.log" 2>&1
  echo "anchors train rows: exit $?"
  [ -f "$out/train_minijit.json" ] && python3 bench/join.py "$out/train_minijit.json" "$out/train_anchors.json" > "$out/train_table.md"
fi
if want pictures; then
  pics=${PICTURES_DIR:-/tmp/minijit-pictures}
  rm -rf "$pics"
  BIN=$bin timeout 420 scripts/pictures.sh "$pics" 2>&1 | tee "$out/pictures.log"
  echo "pictures: exit ${PIPESTATUS[0]}"
  tar czf "$out/pictures.tar.gz" -C "$(dirname "$pics")" "$(basename "$pics")" &&
    echo "pictures: $(tar tzf "$out/pictures.tar.gz" | wc -l) entries in $out/pictures.tar.gz ($(du -h "$out/pictures.tar.gz" | cut -f1))"
fi
if want spread; then
  scratch=$(mktemp -d)
  python3 bench/row_spread.py --out "$scratch/graphs"
  mkdir -p "$scratch/spread"
  for f in "$scratch"/graphs/*.mj; do
    n=$(basename "$f" .mj)
    MINIJIT_CACHE_DIR="$scratch/cache" timeout 40 $bin/minijit tune "$f" --budget-s 8 \
      --max-candidates 32 > "$scratch/spread/$n.log" 2>&1
    echo "$n: exit $?"
  done | tee "$out/spread.log"
  tar czf "$out/spread.tar.gz" -C "$scratch" spread && rm -rf "$scratch"
fi
if want folders; then
  for dir in ${FOLDERS:-bench/scans bench/pooling bench/softmax}; do
    log="$out/$(basename "$dir").log"
    for f in "$dir"/*.mj; do
      echo "== $f" >> "$log"
      if [ "${CHECK:-0}" = 1 ]; then
        timeout 300 $bin/minijit run "$f" --check 2>&1 | grep -E "check:|rror|minijit:" >> "$log"
      fi
      timeout 120 $bin/minijit run "$f" --bench 2>&1 | grep -E "bench:|rror|minijit:" >> "$log"
    done
    for anchors in "$dir"/*_torch.py; do
      [ -f "$anchors" ] && timeout 300 python3 "$anchors" --runs 30 >> "$log" 2>&1
    done
    echo "$dir: $(grep -c 'bench: median' "$log") graphs timed, $(grep -c '"compile_us"' "$log") anchored"
  done
fi
if want clusters; then
  # The long rows' cluster rule: bench/softmax's graphs with the rules and with a block a
  # row (rowcluster=1), beside copies of their bytes (bench/softmax/clusters.sh).
  timeout 400 bench/softmax/clusters.sh $bin/minijit > "$out/clusters.log" 2>&1
  echo "clusters.sh: exit $?, $(grep -c 'median' "$out/clusters.log") timings"
fi
if want tf32; then
  PYTHONPATH=python MINIJIT_LIBRARY=${MINIJIT_LIBRARY:-$bin/../lib/libminijit_c.so} \
    timeout 300 python3 bench/matmul/f32/tf32x3_error.py > "$out/tf32_error.log" 2>&1
  echo "tf32x3_error.py: exit $?"; tail -5 "$out/tf32_error.log"
  PYTHONPATH=python MINIJIT_LIBRARY=${MINIJIT_LIBRARY:-$bin/../lib/libminijit_c.so} \
    timeout 300 python3 bench/matmul/f32/tf32x3_error.py --m 4096 --n 4096 --ks 1024,4096,16384 \
    > "$out/tf32_error_4096.log" 2>&1
  echo "tf32x3_error.py --m 4096 --n 4096: exit $?"; tail -5 "$out/tf32_error_4096.log"
  for f in mm_4096 odd_3000 linear_4096 mm_4096x4096x1001 linear_2048x1027x3001; do
    for opts in "--exact-f32" "" "--schedule=promote=0" "--schedule=promote=0,bn=128"; do
      echo "== $f $opts: $(timeout 120 $bin/minijit run bench/matmul/f32/$f.mj --bench $opts 2>&1 |
                            grep -E 'bench: median|rror|minijit:' | head -1)" >> "$out/tf32_time.log"
    done
  done
  timeout 300 python3 bench/matmul/f32/torch_f32.py >> "$out/tf32_time.log" 2>&1
  grep -c "bench: median" "$out/tf32_time.log"
fi
if want tune; then
  while read -r only sched; do
    [ -z "$only" ] && continue
    printf '%-22s %-24s ' "$only" "${sched:-default}"
    MINIJIT_SCHEDULE="$sched" timeout 60 $bin/minijit_bench --only "${only//|/ }" --fused-only --no-check \
      ${TUNE_SUITE:+--suite $TUNE_SUITE} \
      | grep -E " fused " | awk '{print $(NF-5), "us", $(NF-4), "GB/s", $(NF-3), "of copy", $(NF-2), "TFLOP/s"}'
  done < "${TUNE_FILE:-scripts/tune.txt}" | tee "$out/tune.log"
fi
