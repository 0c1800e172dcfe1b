#!/usr/bin/env bash
# tools/gpu-profile.sh runs only at the end of a GPU session, against Nsight Compute. This runs it
# against a stand-in ncu (a script) twice: one that profiles (each run's benchmarks profiled, the
# winners' plan from row-plan.txt passed as GIZML_CUDA_ROW_PLAN, the summary lines on stdout), and
# one refused the GPU's counters (ERR_NVGPUCTRPERM, as a driver that keeps them to admins): the
# script must say so after the first try and end, not try every benchmark of every run.
#   usage: tests/gpu_profile_test.sh <source folder>
set -uo pipefail
SRC="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/bench" "$work/out"
: > "$work/build/bench/gizml_bench" && chmod +x "$work/build/bench/gizml_bench"  # run by the stand-in only by name
cat > "$work/ncu" <<'EOF'
#!/usr/bin/env bash
# The stand-in: the lists the script asks for, then one line a profiled run, into $CALLS.
case "$1" in
  --version) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2099.1.0 (stand-in)"; exit 0 ;;
  --list-sections) echo "SpeedOfLight Occupancy LaunchStats"; exit 0 ;;
  --query-metrics) echo "dram__bytes_read"; exit 0 ;;
esac
filter=""
for a in "$@"; do case "$a" in --benchmark_filter=*) filter="${a#--benchmark_filter=}" ;; esac; done
echo "${filter} plan=${GIZML_CUDA_ROW_PLAN:-} blocks=${GIZML_CUDA_ROW_BLOCKS:-}" >> "$CALLS"
if [ -n "${REFUSE:-}" ]; then
  echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
  exit 1
fi
echo "  gizml::detail::rowsKernel(...) (8192, 1, 1)x(128, 1, 1), Context 1, Stream 7"
echo "    DRAM Throughput   %   88.0"
EOF
chmod +x "$work/ncu"
fail() {
  echo "gpu_profile_test: $1"
  echo "--- the script's output (exit $status):"
  cat "$work/stdout"
  exit 1
}
echo "modulatedNorm=b0" > "$work/out/row-plan.txt"
CALLS="$work/calls" NCU="$work/ncu" OUT="$work/out" PROFILE_RUNS="w b0" PROFILE_BENCHES="BM_A BM_B" \
  bash "$SRC/tools/gpu-profile.sh" "$work/build" > "$work/stdout" 2>&1
status=$?
[ "$status" -eq 0 ] || fail "expected exit 0, got $status"
[ "$(wc -l < "$work/calls")" -eq 4 ] || fail "expected 4 profiled runs (2 runs x 2 benchmarks), got $(wc -l < "$work/calls")"
grep -qxF '^BM_A/real_time$ plan=modulatedNorm=b0 blocks=' "$work/calls" || fail "the run w should pass the winners' plan alone"
grep -qxF '^BM_B/real_time$ plan= blocks=1' "$work/calls" || fail "the run b0 should set GIZML_CUDA_ROW_BLOCKS=1"
grep -q "DRAM Throughput" "$work/stdout" || fail "the summary lines are not on stdout"
rm -f "$work/calls"
CALLS="$work/calls" REFUSE=1 NCU="$work/ncu" OUT="$work/out" PROFILE_RUNS="w b0" PROFILE_BENCHES="BM_A BM_B" \
  bash "$SRC/tools/gpu-profile.sh" "$work/build" > "$work/stdout" 2>&1
status=$?
[ "$status" -eq 2 ] || fail "a refused ncu: expected exit 2, got $status"
[ "$(wc -l < "$work/calls")" -eq 1 ] || fail "a refused ncu: expected 1 try, got $(wc -l < "$work/calls")"
grep -q "ERR_NVGPUCTRPERM" "$work/stdout" || fail "a refused ncu: the reason is not said"
echo "gpu_profile_test: passed"
