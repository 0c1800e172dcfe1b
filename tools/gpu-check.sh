#!/usr/bin/env bash
# On a GPU machine: checks a build made elsewhere by tools/build-gpu.sh and carried over. Plain bash
# (no cmake, no ctest there). One GPU session is a few minutes of device time and at most 600 s a
# command, so the whole run has a deadline (GPU_CHECK_TOTAL_LIMIT, default 540 s): each step runs
# under the smaller of its own limit and what is left of the total, a step left with no time is
# SKIPPED, and the summary always prints. The most informative steps come first:
#   preflight    GPU name, driver and compute capability (a driver too old for the CUDA 13 runtime, or
#                a GPU older than sm_80, stops here: exit 2), nvidia-smi, every staged program's
#                libraries found (ldd) and each test program starting (--gtest_list_tests), the CPU
#   CUDA tests   the suites whose name contains "Cuda" (tests too) and the registry's GPU = host
#                comparisons, each test program on its own under its own cap (a hanging kernel stops
#                that program, not the step); a missing GPU fails (GIZML_REQUIRE_GPU=1). A program
#                that timed out or crashed names the test it was running. registry_test first (every
#                op, GPU = host), exact_math_cuda_test last (5 x 2^32 values, computed on the host too).
#   CUDA tests, blocks and prefetch
#                registry_test's cases of the ops that can take a block a row, and the CUDA tests of
#                norms_test and quant_test, with GIZML_CUDA_ROW_BLOCKS=1 (core/cuda_row_blocks.cuh);
#                those cases again with GIZML_CUDA_L2_PREFETCH=1, 32 rows a multiprocessor
#                (core/cuda_rows.cuh), and with GIZML_CUDA_QUADS=1 (exact::QuadWarpRow), with and
#                without GIZML_CUDA_ROW_BLOCKS=1
#   CUDA rerun   only if some tests failed (not timed out): those tests alone (20 a program), again, with
#                GIZML_CUDA_SYNC=1 (a check after every kernel launch) to name the failing launch
#   gizml-check  every op on the host and the GPU, bits compared
#   decode loop  gizml-decode's greedy and sampled ids: host (2 threads, 1 thread) = GPU
#   denoise loop gizml-denoise's latents, images, 8-bit rows and products: host (2 threads, 1 thread)
#                = GPU
#   training     gizml-train's short run (150 steps of 64 images, on the staged slice of Fashion-MNIST):
#                the trained weights' SHA-256 on the host (2 threads, 1 thread) = on GPU 0
#   benchmarks   gizml_bench on GPU 0, short; last, as a timeout there only means "bench incomplete"
# The host-only unit tests are not run here (host work paid for in device time; they run where the
# build is made); GPU_CHECK_HOST_TESTS=1 adds them after the benchmarks, to try a staged build on a
# machine without a GPU (with GIZML_REQUIRE_GPU=0, which lets the GPU steps pass without a GPU).
# Then one summary line a step and "gpu-check: all passed" (exit 0) or not (exit 1). The whole log goes
# to $OUT/gpu-check.log when OUT is set, else to <build>/gpu-check.log; each test program's full gtest
# output to gpu-check-logs/ beside it. With OUT set (the device tool, which brings back at most 8
# files), gpu-check-logs/ and the training run's train-check/ end as one archive,
# $OUT/gpu-check-logs.tgz: two files come back in all.
#   usage: tools/gpu-check.sh [build folder, default build-gpu]
# Limits in seconds, from the environment: GPU_CHECK_TOTAL_LIMIT (540), GPU_CHECK_TEST_LIMIT (300, the
# CUDA tests step), GPU_CHECK_PROGRAM_LIMIT (90, one test program there), GPU_CHECK_SWEEP_LIMIT (150,
# exact_math_cuda_test there), GPU_CHECK_SYNC_LIMIT (60, one program in the rerun), GPU_CHECK_BENCH_LIMIT
# (120).
set -uo pipefail  # not -e: a failing step is recorded and the next one runs
shopt -s nullglob
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build-gpu}" && pwd)" || { echo "gpu-check: no build folder ${1:-$ROOT/build-gpu}"; exit 2; }
[ -x "$BUILD/gizml-check" ] || { echo "gpu-check: $BUILD has no gizml-check (made by tools/build-gpu.sh?)"; exit 2; }
# The test programs travel packed (tools/build-gpu.sh); unpacked here once, reported in the log below.
unpacked=$(bash "$ROOT/tools/gpu-unpack.sh" "$BUILD" 2>&1) || unpacked="gpu-check: unpacking FAILED: $unpacked"
LOG="${OUT:-$BUILD}/gpu-check.log"
LOGDIR="${OUT:-$BUILD}/gpu-check-logs"
TOTAL_LIMIT="${GPU_CHECK_TOTAL_LIMIT:-540}"     # under the 600 s of one device call, with room for the summary
TEST_LIMIT="${GPU_CHECK_TEST_LIMIT:-300}"
PROGRAM_LIMIT="${GPU_CHECK_PROGRAM_LIMIT:-90}"
SWEEP_LIMIT="${GPU_CHECK_SWEEP_LIMIT:-150}"   # ~500 CPU-s of host values: 30 s on 16 cores, more if slower
SYNC_LIMIT="${GPU_CHECK_SYNC_LIMIT:-60}"
BENCH_LIMIT="${GPU_CHECK_BENCH_LIMIT:-120}"
MIN_DRIVER=580.65.06  # the CUDA 13.0 runtime (linked statically, nvcc 13.0) needs this Linux driver or newer
start=$(date +%s)
deadline=$((start + TOTAL_LIMIT))
export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GIZML_TEST_DATA="$BUILD/tests/data"
export GIZML_REQUIRE_GPU="${GIZML_REQUIRE_GPU:-1}"  # 0 only to try the script where there is no GPU
tests=("$BUILD"/tests/*_test)
# Suites whose name contains "Cuda" (before the dot), tests whose name starts with it
# (BuildFlags.CudaDoesNotContract) and the registry's GPU = host comparisons: the GPU tests. The GPU
# sweep over all floats (ExactMathCuda) stays in.
CUDA_TESTS='*Cuda*.*:*.Cuda*:*.GpuEqualsHost/*'
NOT_CUDA_NOR_SWEEPS="-$CUDA_TESTS:*OverAllFloats*"
# The registry's cases of the ops that can take a block a row (as tests/CMakeLists.txt's
# GIZML_ROW_BLOCK_OPS).
ROW_BLOCK_TESTS='*GpuEqualsHost/modulatedNorm*:*GpuEqualsHost/gatedNormAdd*:*GpuEqualsHost/int8Rows_*:*GpuEqualsHost/int8RowsInto_*:*GpuEqualsHost/modulatedInt8Rows*:*GpuEqualsHost/rowNormRope*:*GpuEqualsHost/groupNorm*:*GpuEqualsHost/pixelNorm*:*GpuEqualsHost/layerNorm_*:*GpuEqualsHost/rmsNorm*'

mkdir -p "$LOGDIR"

summary=()
# step_begin <name> <limit s>: starts a step under the smaller of its limit and what is left of the
# total; 1 (and the step recorded as SKIPPED) when nothing is left.
step_begin() {
  local limit=$2 left=$((deadline - $(date +%s)))
  step_name="$1" step_result=passed step_start=$(date +%s)
  [ "$left" -lt "$limit" ] && limit=$left
  echo
  if [ "$2" -le 0 ]; then  # e.g. GPU_CHECK_BENCH_LIMIT=0 where there is no GPU to time
    echo "=== $step_name: SKIPPED, its limit is 0"
    step_result="SKIPPED (limit 0)"
    return 1
  elif [ "$limit" -le 0 ]; then
    echo "=== $step_name: SKIPPED, no time left of the total $TOTAL_LIMIT s"
    step_result="SKIPPED (no time left)"
    return 1
  fi
  step_deadline=$((step_start + limit))
  echo "=== $step_name (limit $limit s)"
}
# step_run [--cap S] [--to FILE] <command...>: runs it under what is left of the step's limit (at most
# S s); its output to FILE too when given. 0 if it passed, 1 if it failed, 2 if it timed out.
step_run() {
  local cap="" to="" left rc t0
  [ "$1" = --cap ] && { cap=$2; shift 2; }
  [ "$1" = --to ] && { to=$2; shift 2; }
  left=$((step_deadline - $(date +%s)))
  [ -n "$cap" ] && [ "$cap" -lt "$left" ] && left=$cap
  if [ "$left" -le 0 ]; then
    echo "--- no time left for: $*"; step_result="TIMED OUT"; return 2
  fi
  echo "--- $* (limit $left s)"
  t0=$(date +%s)
  if [ -n "$to" ]; then
    timeout -k 10 "$left" "$@" >"$to" 2>&1
    rc=$?
    gtest_console <"$to"
  else
    timeout -k 10 "$left" "$@"
    rc=$?
  fi
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "--- TIMED OUT after $(($(date +%s) - t0)) s: $*"; step_result="TIMED OUT"; return 2
  elif [ $rc -ne 0 ]; then
    echo "--- FAILED (exit $rc, $(($(date +%s) - t0)) s): $*"; [ "$step_result" = passed ] && step_result=FAILED; return 1
  fi
  echo "--- ok, $(($(date +%s) - t0)) s"
  return 0
}
step_end() {
  local line
  line=$(printf '%-32s %-22s %4d s' "$step_name" "$step_result" $(($(date +%s) - step_start)))
  summary+=("$line")
  echo "=== $line"
}

# A test program's full output (kept in gpu-check-logs/) shown without the lines of tests that passed
# or skipped: failures, and the counts.
gtest_console() {
  awk '/^\[ RUN      \]/ || /^\[       OK \]/ || /^\[----------\]/ {next}
       /: Skipped$/ {skipping = 1; next}
       skipping && /^\[  SKIPPED \]/ {skipping = 0; next}
       skipping {next}
       /^\[  SKIPPED \] [^0-9]/ {next}
       {print}'
}
# The tests that failed in a program's output, one a line, in the order they ran (the first may have
# left a sticky CUDA error that failed the others).
gtest_failed() {
  sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_/]*\.[A-Za-z0-9_/]*\).*/\1/p' "$1" | awk '!seen[$0]++'
}
# The test a program was running when it died or was stopped (empty if none).
gtest_unfinished() {
  awk '/^\[ RUN      \] / {current = $4; next}
       /^\[       OK \] / || /^\[  FAILED  \] / || /^\[  SKIPPED \] / {name = $4; sub(/,$/, "", name); if (name == current) current = ""}
       END {print current}' "$1"
}

{
  echo "gpu-check: $BUILD on $(uname -n), $(date -u '+%Y-%m-%d %H:%M UTC'); total limit $TOTAL_LIMIT s"
  [ -n "$unpacked" ] && echo "$unpacked"

  # The driver first: the static CUDA 13 runtime (and the JIT of the compute_90a PTX) needs 580.65.06
  # or newer; with an older one no kernel can run and every later step would only burn device time.
  step_begin "preflight" 60
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "--- no nvidia-smi on PATH: no driver check (the GPU steps will say whether there is a GPU)"
  elif ! gpus=$(timeout -k 5 20 nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>&1) &&
       ! gpus=$(timeout -k 5 20 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); then
    echo "--- nvidia-smi failed (no driver loaded? no GPU?): $gpus"  # (compute_cap: drivers from 2021 on)
  else
    echo "GPU (name, driver, compute capability): $gpus"
    while IFS=, read -r name driver cap; do
      driver="${driver// /}" cap="${cap// /}"
      if ! [[ "$driver" =~ ^[0-9]+(\.[0-9]+)*$ ]]; then
        echo "--- cannot read a driver version in \"$name,$driver\": no driver check"
      elif [ "$(printf '%s\n%s\n' "$MIN_DRIVER" "$driver" | sort -V | head -1)" != "$MIN_DRIVER" ]; then
        echo "gpu-check: driver $driver < $MIN_DRIVER needed by the CUDA 13 runtime: nothing can run"
        exit 2
      fi
      if [[ "$cap" =~ ^[0-9]+\.[0-9]+$ ]] && [ "$(printf '%s\n%s\n' 8.0 "$cap" | sort -V | head -1)" != 8.0 ]; then
        echo "gpu-check: $name is compute capability $cap < 8.0; the kernels are built for sm_80 and sm_90a: nothing can run"
        exit 2
      fi
    done <<<"$gpus"
    step_run --cap 20 nvidia-smi
  fi
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) threads"
  echo "C library: $(ldd --version 2>&1 | head -1)"
  for f in "$BUILD/gizml-check" "$BUILD/gizml-decode" "$BUILD/gizml-denoise" "$BUILD/gizml-train" "${tests[@]}" "$BUILD/bench/gizml_bench" "$BUILD"/lib/*; do
    if ! ldd "$f" >/dev/null 2>&1; then
      echo "--- ldd cannot read $f"; step_result=FAILED
    elif ldd "$f" 2>&1 | grep -q "not found"; then  # a library, or a glibc version (stderr)
      echo "--- $f: $(ldd "$f" 2>&1 | grep "not found" | tr -s ' \t' ' ' | tr '\n' ';')"; step_result=FAILED
    fi
  done
  [ ${#tests[@]} -gt 0 ] || { echo "--- no test programs in $BUILD/tests"; step_result=FAILED; }
  # Each test program starts (its libraries load, its static set-up runs); those with CUDA tests run
  # in the next step, registry_test first, the sweep over all floats last.
  first=() middle=() last=()
  for t in "${tests[@]}"; do
    if ! listed=$(timeout -k 5 20 "$t" --gtest_list_tests --gtest_filter="$CUDA_TESTS" 2>&1); then
      echo "--- $t does not start: $(echo "$listed" | tail -3 | tr '\n' ';')"; step_result=FAILED
      middle+=("$t")  # and fails again, in full, in the next step
      continue
    fi
    count=$(echo "$listed" | grep -c '^  ')
    echo "$(basename "$t"): $count CUDA tests"
    [ "$count" -eq 0 ] && continue
    case "$(basename "$t")" in
      registry_test) first+=("$t") ;;
      exact_math_cuda_test) last+=("$t") ;;
      *) middle+=("$t") ;;
    esac
  done
  cuda_programs=("${first[@]}" "${middle[@]}" "${last[@]}")
  step_end

  # The GPU tests, each program under its own cap. Full output in gpu-check-logs/<program>.txt.
  rerun=() rerun_filter=()  # the programs whose failures were not timeouts, and those tests
  if step_begin "CUDA tests" "$TEST_LIMIT"; then
    n_failed=0 n_timed_out=0
    for t in "${cuda_programs[@]}"; do
      out="$LOGDIR/$(basename "$t").txt"
      cap=$PROGRAM_LIMIT
      [ "$(basename "$t")" = exact_math_cuda_test ] && cap=$SWEEP_LIMIT
      step_run --cap "$cap" --to "$out" "$t" --gtest_filter="$CUDA_TESTS" --gtest_color=no
      rc=$?
      [ $rc -eq 0 ] && continue
      if [ $rc -eq 2 ]; then n_timed_out=$((n_timed_out + 1)); else n_failed=$((n_failed + 1)); fi
      unfinished=$(gtest_unfinished "$out")
      [ -n "$unfinished" ] && echo "--- it was running $unfinished (full output: $out)"
      if [ $rc -eq 1 ]; then
        if grep -q "GIZML_REQUIRE_GPU=1 but" "$out"; then
          echo "--- no GPU: not rerun"
        else
          # The first 20 (a systematic failure, 600 registry cases, needs no 600 reruns to be named);
          # a test that crashed the program first.
          failed=$( ([ -n "$unfinished" ] && echo "$unfinished"; gtest_failed "$out") | awk '!seen[$0]++' | head -20 | paste -sd:)
          [ -n "$failed" ] && { rerun+=("$t"); rerun_filter+=("$failed"); }
        fi
      fi
    done
    [ "$step_result" = passed ] || step_result="$step_result ($n_failed failed, $n_timed_out timed out of ${#cuda_programs[@]})"
  fi
  step_end

  # The same comparisons for the ops that can take a block a row (GIZML_CUDA_ROW_BLOCKS=1, not yet
  # their default: core/cuda_row_blocks.cuh), whose kernels the step above did not run; and for
  # their half-warp rows prefetching each row into the L2, 32 rows a multiprocessor
  # (GIZML_CUDA_L2_PREFETCH=1, core/cuda_rows.cuh), as the sweep's run p32 does; and for their
  # values walks by quads (GIZML_CUDA_QUADS=1, exact::QuadWarpRow), as the sweep's runs q0 and bq0 do.
  registry="$BUILD/tests/registry_test"
  if [ -x "$registry" ]; then
    if step_begin "CUDA tests, blocks and prefetch" "$PROGRAM_LIMIT"; then
      step_run --to "$LOGDIR/registry_test.row_blocks.txt" env GIZML_CUDA_ROW_BLOCKS=1 "$registry" \
        --gtest_filter="$ROW_BLOCK_TESTS" --gtest_color=no
      step_run --to "$LOGDIR/registry_test.l2_prefetch.txt" env GIZML_CUDA_L2_PREFETCH=1 GIZML_CUDA_ROWS_PER_SM=32 \
        "$registry" --gtest_filter="$ROW_BLOCK_TESTS" --gtest_color=no
      step_run --to "$LOGDIR/registry_test.quads.txt" env GIZML_CUDA_QUADS=1 "$registry" \
        --gtest_filter="$ROW_BLOCK_TESTS" --gtest_color=no
      step_run --to "$LOGDIR/registry_test.row_blocks_quads.txt" env GIZML_CUDA_ROW_BLOCKS=1 GIZML_CUDA_QUADS=1 \
        "$registry" --gtest_filter="$ROW_BLOCK_TESTS" --gtest_color=no
      for t in "$BUILD/tests/norms_test" "$BUILD/tests/quant_test"; do
        [ -x "$t" ] && step_run --to "$LOGDIR/$(basename "$t").row_blocks.txt" env GIZML_CUDA_ROW_BLOCKS=1 "$t" \
          --gtest_filter='*Cuda*.*' --gtest_color=no
      done
    fi
    step_end
  fi

  # groupNorm in one launch (GIZML_CUDA_GROUP_NORM_AHEAD=L, not yet its default: norms/cuda.cu
  # "ahead"), its warps on many multiprocessors waiting for each other's counters, which the
  # simulator runs a block at a time: one group ahead (the most waiting), and four with the deeper
  # ring of GIZML_CUDA_ROW_BLOCKS=1. A deadlock is a timeout here.
  if [ -x "$registry" ]; then
    if step_begin "CUDA tests, groupNorm ahead" "$PROGRAM_LIMIT"; then
      for run in 1/0 4/1; do  # L / GIZML_CUDA_ROW_BLOCKS
        lead="${run%/*}" blocks="${run#*/}"
        step_run --to "$LOGDIR/registry_test.group_norm_ahead$lead.txt" \
          env GIZML_CUDA_GROUP_NORM_AHEAD="$lead" GIZML_CUDA_ROW_BLOCKS="$blocks" \
          "$registry" --gtest_filter='*GpuEqualsHost/groupNorm*' --gtest_color=no
      done
      [ -x "$BUILD/tests/norms_test" ] && step_run --to "$LOGDIR/norms_test.group_norm_ahead.txt" \
        env GIZML_CUDA_GROUP_NORM_AHEAD=1 "$BUILD/tests/norms_test" --gtest_filter='GroupNormCuda.*' --gtest_color=no
    fi
    step_end
  fi

  # Only failures that were not timeouts, only the tests that failed: a check after every launch names
  # the launch that failed.
  if [ ${#rerun[@]} -gt 0 ]; then
    if step_begin "CUDA failures, GIZML_CUDA_SYNC=1" 120; then
      for i in "${!rerun[@]}"; do
        t="${rerun[$i]}"
        step_run --cap "$SYNC_LIMIT" --to "$LOGDIR/$(basename "$t").sync.txt" \
          env GIZML_CUDA_SYNC=1 "$t" --gtest_filter="${rerun_filter[$i]}" --gtest_color=no
      done
    fi
    step_end
  fi

  # Every op of the registry on the host and the GPU (it passes without a GPU unless one is required).
  if step_begin "gizml-check" 180; then
    check_out="$LOGDIR/gizml-check.txt"
    step_run --to "$check_out" "$BUILD/gizml-check"
    if [ "$GIZML_REQUIRE_GPU" = 1 ] && grep -q "| no GPU" "$check_out"; then
      echo "--- gizml-check compared no op on a GPU"; step_result=FAILED
    fi
  fi
  step_end

  # A decode loop of real ops: host and GPU ids. It fails without a GPU when one is required (it used
  # to pass, comparing the host with itself); "no GPU:" in its output is a failure here all the same.
  if step_begin "decode loop: host and GPU ids" 120; then
    decode_out="$LOGDIR/gizml-decode.txt"
    step_run --to "$decode_out" "$BUILD/gizml-decode" --check --layers 2 --prompt 12 --generate 12
    if [ "$GIZML_REQUIRE_GPU" = 1 ] && grep -q "no GPU:" "$decode_out" && [ "$step_result" = passed ]; then
      echo "--- gizml-decode compared no GPU"; step_result=FAILED
    fi
  fi
  step_end

  # A video diffusion model's denoising loop and decoder blocks (every op of the diffusion norms and
  # 8-bit rows among them): host and GPU bits, checked as the decode loop's.
  if step_begin "denoise loop: host and GPU bits" 90; then
    denoise_out="$LOGDIR/gizml-denoise.txt"
    step_run --to "$denoise_out" "$BUILD/gizml-denoise" --check
    if [ "$GIZML_REQUIRE_GPU" = 1 ] && grep -q "no GPU:" "$denoise_out" && [ "$step_result" = passed ]; then
      echo "--- gizml-denoise compared no GPU"; step_result=FAILED
    fi
  fi
  step_end

  # A short training run: the weights' hash on the host and on the GPU.
  if step_begin "training: host and GPU weights" 240; then
    require=()
    [ "$GIZML_REQUIRE_GPU" = 1 ] && require=(--require-gpu)
    step_run "$BUILD/gizml-train" --check "${require[@]}" --threads 2 --steps 150 --batch 64 --test-limit 2000 \
      --data "$BUILD/data/fashion-mnist" --out "${OUT:-$BUILD}/train-check"
  fi
  step_end

  # Last: the numbers are welcome, but a timeout here leaves every check above standing.
  # Stopped by its limit, the bench prints no share table: the shares of the benchmarks it finished
  # come from the file it writes as each one ends (GIZML_BENCH_SHARES, bench/bench_main.cpp).
  if step_begin "gizml_bench on GPU 0" "$BENCH_LIMIT"; then
    shares="$LOGDIR/bench-shares.txt"
    rm -f "$shares"
    step_run env GIZML_BENCH_DEVICE=cuda GIZML_BENCH_SHARES="$shares" "$BUILD/bench/gizml_bench" \
      --benchmark_min_time=0.1 --benchmark_color=false
    if [ "$step_result" = "TIMED OUT" ] && [ -s "$shares" ]; then
      echo "bytes/s as a share of the copy measured before it, the benchmarks finished before the timeout:"
      cat "$shares"
    fi
  fi
  bench_result=$step_result
  step_end

  # Not on a GPU machine (host work in device time): only when asked, to try a staged build elsewhere.
  if [ "${GPU_CHECK_HOST_TESTS:-0}" = 1 ]; then
    if step_begin "unit tests (not CUDA, no sweeps)" "$TEST_LIMIT"; then
      for t in "${tests[@]}"; do
        step_run --to "$LOGDIR/$(basename "$t").host.txt" "$t" --gtest_filter="$NOT_CUDA_NOR_SWEEPS" --gtest_color=no
      done
    fi
    step_end
  fi

  echo
  echo "=== summary ($(($(date +%s) - start)) s of $TOTAL_LIMIT)"
  all=passed
  for line in "${summary[@]}"; do
    echo "  $line"
    case "$line" in
      "gizml_bench on GPU 0"*) ;;
      *) [[ "$line" == *" passed "* ]] || all=failed ;;
    esac
  done
  [ "$GIZML_REQUIRE_GPU" = 1 ] || echo "gpu-check: GIZML_REQUIRE_GPU=$GIZML_REQUIRE_GPU: a missing GPU was no failure"
  if [ $all = passed ]; then
    case "$bench_result" in
      passed) echo "gpu-check: all passed"; exit 0 ;;
      "TIMED OUT"|SKIPPED*) echo "gpu-check: all tests passed, bench incomplete ($bench_result)"; exit 0 ;;
    esac
  fi
  echo "gpu-check: NOT all passed"
  exit 1
} 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
if [ -n "${OUT:-}" ] && [ -d "$LOGDIR" ]; then
  packed=(gpu-check-logs)
  [ -d "$OUT/train-check" ] && packed+=(train-check)
  if tar -czf "$OUT/gpu-check-logs.tgz" -C "$OUT" "${packed[@]}"; then
    rm -rf "$LOGDIR" "$OUT/train-check"
    echo "gpu-check: the programs' logs are in $OUT/gpu-check-logs.tgz"
  fi
fi
exit "$status"
