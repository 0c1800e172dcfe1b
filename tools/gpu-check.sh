#!/usr/bin/env bash
# On a GPU machine: checks a build made elsewhere by tools/build-gpu.sh and carried over. Plain bash
# (no cmake, no ctest there). Steps, each under a time limit so a hang cannot eat the GPU session:
#   preflight    nvidia-smi, every staged program's libraries found (ldd), the CPU model
#   CUDA tests   the suites whose name contains "Cuda" (tests too), each test program on its own; a missing
#                GPU fails (GIZML_REQUIRE_GPU=1). If any fails, those programs run again with
#                GIZML_CUDA_SYNC=1 (a check after every kernel launch) to pin the failing launch.
#   gizml-check  every op on the host and the GPU, bits compared
#   decode loop  gizml-decode's greedy and sampled ids: host (2 threads, 1 thread) = GPU
#   training     gizml-train's short run (150 steps of 64 images, on the staged slice of Fashion-MNIST):
#                the trained weights' SHA-256 on the host (2 threads, 1 thread) = on GPU 0
#   unit tests   everything else, less the host-only sweeps over all 2^32 floats (*OverAllFloats)
#   benchmarks   gizml_bench on GPU 0, short
# Then one summary line a step and "gpu-check: all passed" (exit 0) or not. The whole log goes to
# $OUT/gpu-check.log when OUT is set, else to <build>/gpu-check.log.
#   usage: tools/gpu-check.sh [build folder, default build-gpu]
set -uo pipefail  # not -e: a failing step is recorded and the next one runs
shopt -s nullglob
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build-gpu}" && pwd)" || { echo "gpu-check: no build folder ${1:-$ROOT/build-gpu}"; exit 2; }
[ -x "$BUILD/gizml-check" ] || { echo "gpu-check: $BUILD has no gizml-check (made by tools/build-gpu.sh?)"; exit 2; }
LOG="${OUT:-$BUILD}/gpu-check.log"
TEST_LIMIT="${GPU_CHECK_TEST_LIMIT:-300}"      # seconds a step; overridable to try the script
BENCH_LIMIT="${GPU_CHECK_BENCH_LIMIT:-120}"
export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GIZML_TEST_DATA="$BUILD/tests/data"
export GIZML_REQUIRE_GPU=1
tests=("$BUILD"/tests/*_test)
# Suites whose name contains "Cuda" (before the dot), tests whose name starts with it
# (BuildFlags.CudaDoesNotContract) and the registry's GPU = host comparisons: the GPU tests. The GPU
# sweep over all floats (ExactMathCuda) stays in.
CUDA_TESTS='*Cuda*.*:*.Cuda*:*.GpuEqualsHost/*'
NOT_CUDA_NOR_SWEEPS="-$CUDA_TESTS:*OverAllFloats*"

summary=()
# A step's programs share its limit (a hang stops the step, not the session's 15 GPU minutes).
step_begin() {  # step_begin <name> <limit s>
  step_name="$1" step_result=passed step_start=$(date +%s)
  step_deadline=$((step_start + $2))
  echo
  echo "=== $step_name (limit $2 s)"
}
step_run() {  # step_run <command...>: runs it under what is left of the step's limit; 1 if it failed
  local left=$((step_deadline - $(date +%s))) rc
  if [ "$left" -le 0 ]; then
    echo "--- no time left for: $*"; step_result="TIMED OUT"; return 1
  fi
  echo "--- $*"
  timeout -k 10 "$left" "$@"
  rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "--- TIMED OUT: $*"; step_result="TIMED OUT"; return 1
  elif [ $rc -ne 0 ]; then
    echo "--- FAILED (exit $rc): $*"; [ "$step_result" = passed ] && step_result=FAILED; return 1
  fi
  return 0
}
step_end() {
  local line
  line=$(printf '%-36s %-10s %4d s' "$step_name" "$step_result" $(($(date +%s) - step_start)))
  summary+=("$line")
  echo "=== $line"
}

{
  echo "gpu-check: $BUILD on $(uname -n), $(date -u '+%Y-%m-%d %H:%M UTC')"

  step_begin "preflight" 60
  step_run nvidia-smi
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) threads"
  echo "C library: $(ldd --version 2>&1 | head -1)"
  for f in "$BUILD/gizml-check" "${tests[@]}" "$BUILD/bench/gizml_bench" "$BUILD"/lib/*; do
    if ! ldd "$f" >/dev/null 2>&1; then
      echo "--- ldd cannot read $f"; step_result=FAILED
    elif ldd "$f" 2>&1 | grep -q "not found"; then  # a library, or a glibc version (stderr)
      echo "--- $f: $(ldd "$f" 2>&1 | grep "not found" | tr -s ' \t' ' ' | tr '\n' ';')"; step_result=FAILED
    fi
  done
  step_end

  step_begin "CUDA tests" $TEST_LIMIT
  failed=()
  for t in "${tests[@]}"; do
    step_run "$t" --gtest_filter="$CUDA_TESTS" --gtest_brief=1 --gtest_color=no || failed+=("$t")
  done
  step_end

  if [ ${#failed[@]} -gt 0 ]; then
    step_begin "CUDA tests again, GIZML_CUDA_SYNC=1" $TEST_LIMIT
    for t in "${failed[@]}"; do
      step_run env GIZML_CUDA_SYNC=1 "$t" --gtest_filter="$CUDA_TESTS" --gtest_color=no
    done
    step_end
  fi

  step_begin "gizml-check" $TEST_LIMIT
  check_out="$(mktemp)"
  step_run "$BUILD/gizml-check" >"$check_out"
  cat "$check_out"
  if grep -q "| no GPU" "$check_out"; then  # it passes without a GPU; here that is a failure
    echo "--- gizml-check compared no op on a GPU"; step_result=FAILED
  fi
  rm -f "$check_out"
  step_end

  step_begin "decode loop: host and GPU ids" 120
  step_run "$BUILD/gizml-decode" --check --layers 2 --prompt 12 --generate 12
  step_end

  step_begin "training: host and GPU weights" 240
  step_run "$BUILD/gizml-train" --check --require-gpu --threads 2 --steps 150 --batch 64 --test-limit 2000 \
    --data "$BUILD/data/fashion-mnist" --out "${OUT:-$BUILD}/train-check"
  step_end

  step_begin "unit tests (not CUDA, no sweeps)" $TEST_LIMIT
  for t in "${tests[@]}"; do
    step_run "$t" --gtest_filter="$NOT_CUDA_NOR_SWEEPS" --gtest_brief=1 --gtest_color=no
  done
  step_end

  step_begin "gizml_bench on GPU 0" $BENCH_LIMIT
  step_run env GIZML_BENCH_DEVICE=cuda "$BUILD/bench/gizml_bench" --benchmark_min_time=0.1 --benchmark_color=false
  step_end

  echo
  echo "=== summary"
  all=passed
  for line in "${summary[@]}"; do
    echo "  $line"
    [[ "$line" == *" passed "* ]] || all=failed
  done
  if [ $all = passed ]; then echo "gpu-check: all passed"; exit 0; fi
  echo "gpu-check: NOT all passed"
  exit 1
} 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
