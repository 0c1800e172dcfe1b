#!/usr/bin/env bash
# tools/gpu-rows-sweep.sh runs only in a GPU session, where a fault in its shell costs device time.
# This runs it against a stand-in gizml_bench (a script: no GPU, no simulator) whose run with a block
# a row (b0) finishes gatedNormAdd, then hangs in modulatedNorm until the sweep's limit stops it, as
# a slow or stuck run would: the sweep must keep the share that run measured (GIZML_BENCH_SHARES,
# bench/bench_main.cpp), make it gatedNormAdd's best, leave modulatedNorm (not measured whole there)
# to the run that measured it, and print the winners' plan, which has no registry_test to check it.
# Then the runs by quads (q0, bq0): their switches, their benchmarks and their plans.
#   usage: tests/gpu_sweep_test.sh <source folder>
set -uo pipefail
SRC="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/bench" "$work/out"
cat > "$work/build/bench/gizml_bench" <<'EOF'
#!/usr/bin/env bash
# The stand-in: the bench's table rows, its share lines (also appended to GIZML_BENCH_SHARES as each
# benchmark ends) and its closing table, for three benchmarks of [8192, 3072].
share() {
  printf '  %-58s %6.1f%%  of %s\n' "$1/real_time" "$2" "BM_Copy/8192/3072/real_time" |
    tee -a "$GIZML_BENCH_SHARES" >> "$0.table.$$"
  echo "$1/real_time 1.00 ms 1.00 ms 100 10G/s"
}
echo "BM_Copy/8192/3072/real_time 1.00 ms 1.00 ms 100 20G/s"
if [ "${GIZML_CUDA_ROW_BLOCKS:-0}" = 1 ]; then
  share BM_GatedNormAdd 61.5
  exec sleep 30  # stuck in BM_ModulatedNorm/0: the sweep's timeout ends it
fi
share BM_GatedNormAdd 40.0
share BM_ModulatedNorm/0 30.0
share BM_ModulatedNorm/1 20.0
echo
echo "bytes/s as a share of the copy measured before it in this run (cuda:0; CPU: stand-in, 2 threads):"
cat "$0.table.$$" && rm -f "$0.table.$$"
EOF
chmod +x "$work/build/bench/gizml_bench"
OUT="$work/out" ROWS_SWEEP="0 b0" ROWS_SWEEP_LIMIT=3 ROWS_SWEEP_TOTAL=20 ROWS_SWEEP_WINNERS_LIMIT=6 \
  bash "$SRC/tools/gpu-rows-sweep.sh" "$work/build" > "$work/stdout" 2>&1
status=$?
log="$work/out/rows-sweep.log"
fail() {
  echo "gpu_sweep_test: $1"
  echo "--- the sweep's output (exit $status):"
  cat "$work/stdout"
  exit 1
}
[ "$status" -eq 1 ] || fail "expected exit 1 (a run timed out), got $status"
grep -q "the run b0 failed or timed out" "$work/stdout" || fail "the stopped run b0 is not reported"
grep -qE '^  BM_GatedNormAdd +40\.0% +61\.5% +b0$' "$log" || fail "gatedNormAdd's row should read 40.0% 61.5% b0"
grep -qE '^  BM_ModulatedNorm/0 +30\.0% +- +0$' "$log" || fail "modulatedNorm/0's row should read 30.0% - 0"
plan="gatedNormAddInto=b0,modulatedNorm=0"
[ "$(cat "$work/out/row-plan.txt" 2>/dev/null)" = "$plan" ] || fail "row-plan.txt should be $plan"
grep -qF "== winners: GIZML_CUDA_ROW_PLAN=$plan" "$log" || fail "no winners' run with $plan"
grep -qE '^  BM_GatedNormAdd +40\.0%  \(best 61\.5%\)$' "$log" ||
  fail "the winners' table should give 40.0% (best 61.5%)"
grep -q "no tests/registry_test" "$log" || fail "the missing check is not reported"
grep -q "kMeasuredRowPlans" "$log" && fail "an unchecked plan was offered as the defaults"

# The runs by quads: q0 a half-warp a row's walk by quads, bq0 a block a row's, each with the
# switches and the benchmarks of its ops (bq0 without rowNormRope and groupNorm, which have no such
# block a row); the winners' run with neither switch, its plans naming those runs.
cat > "$work/build/bench/gizml_bench" <<'EOF2'
#!/usr/bin/env bash
echo "blocks=${GIZML_CUDA_ROW_BLOCKS-unset} quads=${GIZML_CUDA_QUADS-unset} $1" >> "$0.runs"
share() {
  printf '  %-58s %6.1f%%  of %s\n' "$1/real_time" "$2" "BM_Copy/8192/3072/real_time" |
    tee -a "$GIZML_BENCH_SHARES" >> "$0.table.$$"
  echo "$1/real_time 1.00 ms 1.00 ms 100 10G/s"
}
echo "BM_Copy/8192/3072/real_time 1.00 ms 1.00 ms 100 20G/s"
if [ "${GIZML_CUDA_ROW_BLOCKS:-0}" = 1 ]; then share BM_GatedNormAdd 70.0; share BM_ModulatedNorm/0 55.0
else share BM_GatedNormAdd 50.0; share BM_ModulatedNorm/0 60.0; fi
echo
echo "bytes/s as a share of the copy measured before it in this run (cuda:0; CPU: stand-in, 2 threads):"
cat "$0.table.$$" && rm -f "$0.table.$$"
EOF2
rm -rf "$work/out" && mkdir -p "$work/out"
OUT="$work/out" ROWS_SWEEP="q0 bq0" ROWS_SWEEP_LIMIT=3 ROWS_SWEEP_TOTAL=20 ROWS_SWEEP_WINNERS_LIMIT=6 \
  bash "$SRC/tools/gpu-rows-sweep.sh" "$work/build" > "$work/stdout" 2>&1
status=$?
runs="$work/build/bench/gizml_bench.runs"
[ "$status" -eq 0 ] || fail "the runs by quads: expected exit 0, got $status"
sed -n 1p "$runs" | grep -q '^blocks=0 quads=1 --benchmark_filter=.*RowNormRope.*BM_GroupNorm' ||
  fail "q0 should set quads alone and run rowNormRope's and groupNorm's benchmarks: $(sed -n 1p "$runs")"
sed -n 2p "$runs" | grep -q '^blocks=1 quads=1 --benchmark_filter=' ||
  fail "bq0 should set both switches: $(sed -n 2p "$runs")"
sed -n 2p "$runs" | grep -qE 'RowNormRope|GroupNorm' && fail "bq0 should leave rowNormRope and groupNorm out"
sed -n 3p "$runs" | grep -q '^blocks=unset quads=unset ' || fail "the winners' run should set neither switch"
plan="gatedNormAddInto=bq0,modulatedNorm=q0"
[ "$(cat "$work/out/row-plan.txt" 2>/dev/null)" = "$plan" ] || fail "row-plan.txt should be $plan"
echo "gpu_sweep_test: passed"
