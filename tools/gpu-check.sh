#!/usr/bin/env bash
# On a GPU machine: runs every test (GPU tests included, with a missing GPU counted as a failure),
# gizml-check and the benchmarks on the GPU, from a build made elsewhere by tools/build-gpu.sh and
# carried over. The full log goes to $OUT/gpu-check.log when $OUT is set.
#   usage: tools/gpu-check.sh [build folder, default build-gpu]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-gpu}"
LOG="${OUT:-$BUILD}/gpu-check.log"
export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GIZML_REQUIRE_GPU=1

status=0
run() {  # run a step, log it, remember a failure
  echo "=== $*"
  "$@" || { echo "=== FAILED: $*"; status=1; }
}
{
  run nvidia-smi
  run "$BUILD/gizml-check"
  for t in "$BUILD"/tests/*_test; do
    run "$t" --gtest_brief=1
  done
  run env GIZML_BENCH_DEVICE=cuda "$BUILD/bench/gizml_bench" --benchmark_min_time=0.2
  [ -x "$BUILD/bench/gizml_gemm_bench" ] && run "$BUILD/bench/gizml_gemm_bench" --benchmark_min_time=0.2
  echo "=== gpu-check: $([ $status -eq 0 ] && echo 'all passed' || echo 'SOME STEPS FAILED')"
  exit $status
} 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
