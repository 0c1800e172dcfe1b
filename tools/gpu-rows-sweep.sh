#!/usr/bin/env bash
# On a GPU machine, after tools/gpu-check.sh has passed there: how the row ops' bandwidth depends on
# how many rows run at once (GIZML_CUDA_ROWS_PER_SM, src/core/cuda_rows.cuh). The question it
# answers: on an H200 all 8192 rows of a [8192, 3072] F32 tensor run at once, and modulatedNorm
# read 201 MB for its 100 MB x (a row's second read missed L2); fewer rows at once keep the row in
# L2 or L1 but leave fewer reads in flight. And a second answer to the same question: a block a
# row (GIZML_CUDA_ROW_BLOCKS=1, core/cuda_row_blocks.cuh: modulatedNorm, gatedNormAdd,
# rowNormRope, layerNorm, rmsNorm, int8Rows and modulatedInt8Rows), which stages a row in shared
# memory or keeps its blocks in registers, so that nothing is read twice (the same switch gives
# pixelNorm a block a tile of pixels, groupNorm's second pass a block a chunk with 16-byte loads
# and its first pass a deeper ring). And groupNorm in one launch, its first pass L groups ahead of
# its second (GIZML_CUDA_GROUP_NORM_AHEAD=L, norms/cuda.cu "ahead"), so that the second reads x
# from the L2; BM_GroupNormPass says what each pass of the two launches reaches alone.
# And the 8-bit rows' half-warp rows by shuffles (GIZML_CUDA_BY_ROWS=0, quant/cuda.cu: the row
# functions as they were before stop 34) against their default, blocks by rows. And a third answer:
# the half-warp rows, each asking the L2 for its whole row as it starts it (GIZML_CUDA_L2_PREFETCH=1,
# core/cuda_rows.cuh), with fewer rows at once so that the rows fit the L2 for their second read.
# And the half-warp rows' values walk by quads (GIZML_CUDA_QUADS=1, exact::QuadWarpRow: a lane's 4
# consecutive elements a step, in 16-byte loads and stores of F32, 8-byte of BF16), a quarter of the
# load and store instructions and their address arithmetic of a walk an element a step.
# For each run of ROWS_SWEEP (default "0 b0 q0 bq0 b4 p32 s g8 bg8 p16 q16 8 16 32 64 g4 g12 g16 bg4 bg16 p0", the
# likeliest answers first; N: a half-warp a row and GIZML_CUDA_ROWS_PER_SM=N, 0 being all rows at once, the default; bN: a block a row, at
# most N of them a multiprocessor, b0 no such limit (bN also asks for only those blocks' shared memory,
# the rest of it L1: residentGrid, core/cuda_row_blocks.cuh); pN: a half-warp a row prefetching its
# row, at most N rows a multiprocessor (p0: all at once), only the copy's and those ops' benchmarks;
# qN: a half-warp a row whose values walk takes quads, at most N rows a multiprocessor, only the
# copy's and those ops' benchmarks (layerNorm, rmsNorm, modulatedNorm, gatedNormAdd, rowNormRope,
# groupNorm's second pass: the ops with Kernel::kValuesInQuads); bqN: a block a row whose values
# walk takes quads (layerNorm, rmsNorm, modulatedNorm, gatedNormAdd); s: the 8-bit rows by shuffles, only the copy's
# and their benchmarks; gL: groupNorm in one launch, L groups ahead,
# only the copy's and groupNorm's benchmarks; bgL: the same with GIZML_CUDA_ROW_BLOCKS=1, which
# gives its slices the deeper ring), gizml_bench's row benchmarks on GPU 0 and their
# shares of the copy in the same run; then a table of each benchmark's share in each run and its
# best run. Then the winners' run: each op's best run (its benchmarks' mean share; the earlier run
# where two tie) as a plan of its own, all at once (GIZML_CUDA_ROW_PLAN, src/core/row_plan.hpp, no
# switch set), every row benchmark again: what those plans give as the defaults, measured before
# they are made so (kMeasuredRowPlans, src/core/row_plan.cpp; the line to paste is printed), and
# then whether they give the host's bits on this GPU: registry_test's cases of the row ops that
# have other forms (GpuEqualsHost, as gpu-check.sh's ROW_BLOCK_TESTS) under those plans.
# Output: $OUT/rows-sweep.log (or <build>/rows-sweep.log), the shares also on stdout, and the
# winners' plan alone in row-plan.txt beside it (for tools/gpu-profile.sh's run "w").
# Plain bash, as gpu-check.sh; ROWS_SWEEP_LIMIT (60 s) caps each run and ROWS_SWEEP_TOTAL (420 s)
# all of them, the winners' ROWS_SWEEP_WINNERS_LIMIT (90 s: 60 for their run and 30 for their
# check; 0: neither) kept for them, so that
# the tables are written within one device call after gpu-check.sh (some 125 s on an H200): the
# runs past it are left out, and said to be.
#   usage: tools/gpu-rows-sweep.sh [build folder, default build-gpu]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build-gpu}" && pwd)" || { echo "gpu-rows-sweep: no build folder ${1:-$ROOT/build-gpu}"; exit 2; }
BENCH="$BUILD/bench/gizml_bench"
[ -x "$BENCH" ] || { echo "gpu-rows-sweep: $BUILD has no bench/gizml_bench"; exit 2; }
bash "$ROOT/tools/gpu-unpack.sh" "$BUILD" || echo "gpu-rows-sweep: unpacking the test programs FAILED"
LOG="${OUT:-$BUILD}/rows-sweep.log"
PLAN_FILE="${OUT:-$BUILD}/row-plan.txt"
rm -f "$PLAN_FILE"
export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The row ops, pixelNorm and groupNorm (whose second pass is a row kernel; its first is not).
# pixelNorm's kernel does not read GIZML_CUDA_ROWS_PER_SM, and layerNormGrad, crossEntropyRows and
# hadamardRows have no block a row: their shares moving between such runs are the noise.
FILTER='BM_Copy/(8192/3072|4096/4096|2048/32000)|ModulatedNorm|GatedNormAdd|RowNormRope|Int8Rows(BF16)?/|HadamardRows|BM_LayerNorm|BM_RmsNorm|CrossEntropyRows|BM_PixelNorm|BM_GroupNorm'
: > "$LOG"
status=0
winners_limit="${ROWS_SWEEP_WINNERS_LIMIT:-90}"
# The registry's cases of the ops with other forms than their default (tests/CMakeLists.txt's
# GIZML_ROW_BLOCK_OPS, which ctest's GpuCheckListsTheRowBlockOps compares with this copy).
ROW_BLOCK_TESTS='*GpuEqualsHost/modulatedNorm*:*GpuEqualsHost/gatedNormAdd*:*GpuEqualsHost/int8Rows_*:*GpuEqualsHost/int8RowsInto_*:*GpuEqualsHost/modulatedInt8Rows*:*GpuEqualsHost/rowNormRope*:*GpuEqualsHost/groupNorm*:*GpuEqualsHost/pixelNorm*:*GpuEqualsHost/layerNorm_*:*GpuEqualsHost/rmsNorm*'
# bench_run <limit s> <filter> [env's arguments...]: gizml_bench on GPU 0 with those variables (and
# -u NAME: without one), its output appended to the log; its exit (124: timed out). A run stopped by
# its limit prints no share table: the shares of the benchmarks it finished are then taken from the
# file it writes as each one ends (GIZML_BENCH_SHARES, bench/bench_main.cpp), under a heading of
# their own, so that one slow run keeps what it measured.
bench_run() {
  local limit=$1 filter=$2 before rc
  shift 2
  before=$(wc -l < "$LOG")
  rm -f "$LOG.shares"
  env "$@" GIZML_BENCH_DEVICE=cuda GIZML_BENCH_SHARES="$LOG.shares" timeout "$limit" "$BENCH" \
    --benchmark_filter="$filter" --benchmark_min_time=0.1 --benchmark_color=false >> "$LOG" 2>&1
  rc=$?
  if ! tail -n +"$((before + 1))" "$LOG" | grep -q 'share of the copy'; then
    echo "bytes/s as a share of the copy, the benchmarks finished (the run stopped: exit $rc):" >> "$LOG"
    [ -f "$LOG.shares" ] && cat "$LOG.shares" >> "$LOG"
  fi
  rm -f "$LOG.shares"
  return $rc
}
total=$((${ROWS_SWEEP_TOTAL:-420} - winners_limit)) start=$SECONDS ran=""
for run in ${ROWS_SWEEP:-0 b0 q0 bq0 b4 p32 s g8 bg8 p16 q16 8 16 32 64 g4 g12 g16 bg4 bg16 p0}; do
  left=$((total - (SECONDS - start))) limit="${ROWS_SWEEP_LIMIT:-60}"
  if [ "$left" -lt 10 ]; then
    echo "gpu-rows-sweep: ROWS_SWEEP_TOTAL ($total s and the winners' $winners_limit) spent: the runs from $run on left out" |
      tee -a "$LOG"
    status=1
    break
  fi
  [ "$left" -lt "$limit" ] && limit=$left
  ran="$ran $run"
  n="${run#b}" blocks=0 ahead=0 byRows=1 prefetch=0 quads=0 filter="$FILTER"
  [ "$n" != "$run" ] && blocks=1
  if [ "${run#p}" != "$run" ]; then  # only the ops that prefetch, and the copy
    n="${run#p}" prefetch=1 filter='BM_Copy/8192/3072|ModulatedNorm|GatedNormAdd|RowNormRope|Int8Rows(BF16)?/|BM_LayerNorm|BM_RmsNorm'
  fi
  if [ "${n#q}" != "$n" ]; then  # only the ops whose values walk takes quads, and the copy
    n="${n#q}" quads=1 filter='BM_Copy/8192/3072|ModulatedNorm|GatedNormAdd|RowNormRope|BM_LayerNorm|BM_RmsNorm|BM_GroupNorm'
    [ $blocks = 1 ] && filter='BM_Copy/8192/3072|ModulatedNorm|GatedNormAdd|BM_LayerNorm|BM_RmsNorm'  # bqN
  fi
  if [ "${n#g}" != "$n" ]; then
    ahead="${n#g}" n=0 filter='BM_Copy/8192/3072|BM_GroupNorm'
  fi
  if [ "$run" = s ]; then
    byRows=0 n=0 filter='BM_Copy/8192/3072|Int8Rows(BF16)?/'
  fi
  head="== GIZML_CUDA_ROW_BLOCKS=$blocks GIZML_CUDA_ROWS_PER_SM=$n GIZML_CUDA_GROUP_NORM_AHEAD=$ahead GIZML_CUDA_BY_ROWS=$byRows GIZML_CUDA_L2_PREFETCH=$prefetch GIZML_CUDA_QUADS=$quads"
  echo "$head" | tee -a "$LOG"
  if ! bench_run "$limit" "$filter" GIZML_CUDA_ROW_BLOCKS="$blocks" GIZML_CUDA_ROWS_PER_SM="$n" \
    GIZML_CUDA_GROUP_NORM_AHEAD="$ahead" GIZML_CUDA_BY_ROWS="$byRows" GIZML_CUDA_L2_PREFETCH="$prefetch" \
    GIZML_CUDA_QUADS="$quads"; then
    echo "gpu-rows-sweep: the run $run failed or timed out (see $LOG)" | tee -a "$LOG"
    status=1
  fi
  # The shares: the lines after the bench's "as a share of the copy" heading, in this run's part.
  awk -v n="$head" '$0 == n {on = 1; next} /^== / {on = 0} on && /share of the copy/ {s = 1} on && s && /%/' "$LOG"
done
# One line a benchmark, its share in each run side by side (the runs in ROWS_SWEEP's order), and
# the run that gave it the largest share.
runs="${ran# }"
echo "== shares of the copy, a column a run: $runs; then the best run" | tee -a "$LOG"
awk -v runs="$runs" '/^== GIZML_CUDA_ROW_BLOCKS=/ {run++; s = 0; next}
     /share of the copy/ {s = 1; next}
     s && /%  of / {name = $1; sub(/\/real_time.*/, "", name); v[name, run] = $2; if (!(name in seen)) {seen[name] = 1; order[++count] = name}}
     END {split(runs, label, " ")
          for (i = 1; i <= count; i++) {
            line = sprintf("  %-44s", order[i]); best = "-"; top = -1
            for (r = 1; r <= run; r++) {
              has = (order[i], r) in v
              line = line sprintf(" %7s", has ? v[order[i], r] : "-")
              if (has && v[order[i], r] + 0 > top) {top = v[order[i], r] + 0; best = label[r]}
            }
            print line "   " best
          }}' "$LOG" | tee -a "$LOG.table"
cat "$LOG.table" >> "$LOG" && rm -f "$LOG.table"

# Each op's best run: the ops named as their plans name them (core/row_plan.cpp's plannedRowOps), a
# benchmark's op its name's (BM_GroupNormPass and the copies none); a run counts for an op only
# where it measured all of the op's benchmarks.
plan=$(awk -v runs="$runs" '
     function opOf(name) {
       sub(/\/.*/, "", name)
       if (name == "BM_ModulatedNorm") return "modulatedNorm"
       if (name == "BM_GatedNormAdd") return "gatedNormAddInto"
       if (name == "BM_RowNormRope") return "rowNormRopeInto"
       if (name == "BM_LayerNorm") return "layerNorm"
       if (name == "BM_LayerNormGrad") return "layerNormGrad"
       if (name == "BM_RmsNorm") return "rmsNorm"
       if (name == "BM_Int8Rows" || name == "BM_Int8RowsBF16") return "int8Rows"
       if (name == "BM_ModulatedInt8Rows") return "modulatedInt8RowsInto"
       if (name == "BM_HadamardRows") return "hadamardRows"
       if (name == "BM_CrossEntropyRows") return "crossEntropy"
       if (name == "BM_PixelNorm") return "pixelNormInto"
       if (name == "BM_GroupNorm") return "groupNorm"
       return ""
     }
     /^== GIZML_CUDA_ROW_BLOCKS=/ {run++; s = 0; next}
     /^== / {s = 0; next}
     /share of the copy/ {s = 1; next}
     s && /%  of / {name = $1; sub(/\/real_time.*/, "", name); op = opOf(name); if (op == "") next
                    v[name, run] = $2; if (!(name in seen)) {seen[name] = 1; names[op] = names[op] " " name}
                    if (!(op in known)) {known[op] = 1; ops[++count] = op}}
     END {split(runs, label, " "); out = ""
          for (i = 1; i <= count; i++) {
            op = ops[i]; n = split(names[op], list, " "); best = ""; top = -1
            for (r = 1; r <= run; r++) {
              sum = 0; whole = 1
              for (k = 1; k <= n; k++) if ((list[k], r) in v) sum += v[list[k], r]; else whole = 0
              if (whole && sum / n > top) {top = sum / n; best = label[r]}
            }
            if (best != "") out = out (out == "" ? "" : ",") op "=" best
          }
          print out}' "$LOG")
if [ "$winners_limit" -le 0 ] || [ -z "$plan" ]; then
  echo "gpu-rows-sweep: no winners' run (ROWS_SWEEP_WINNERS_LIMIT=$winners_limit, plan '$plan')" | tee -a "$LOG"
  exit $status
fi
echo "$plan" > "$PLAN_FILE"
head="== winners: GIZML_CUDA_ROW_PLAN=$plan"
echo "$head" | tee -a "$LOG"
winners=(-u GIZML_CUDA_ROW_BLOCKS -u GIZML_CUDA_ROWS_PER_SM -u GIZML_CUDA_GROUP_NORM_AHEAD -u GIZML_CUDA_BY_ROWS
  -u GIZML_CUDA_L2_PREFETCH -u GIZML_CUDA_QUADS GIZML_CUDA_ROW_PLAN="$plan")
run_limit=$((winners_limit * 2 / 3)) check_limit=$((winners_limit - winners_limit * 2 / 3))
if ! bench_run "$run_limit" "$FILTER" "${winners[@]}"; then
  echo "gpu-rows-sweep: the winners' run failed or timed out (see $LOG)" | tee -a "$LOG"
  status=1
fi
# Each benchmark's share with the winners' plans beside its best in the sweep's runs.
echo "== shares of the copy with the winners' plans (and the best of the runs before)" | tee -a "$LOG"
awk -v n="$head" '$0 == n {w = 1; s = 0; next}
     /^== / {s = 0; w = 0; next}
     /share of the copy/ {s = 1; next}
     s && /%  of / {name = $1; sub(/\/real_time.*/, "", name)
                    if (w) won[name] = $2; else if (!(name in top) || $2 + 0 > top[name] + 0) top[name] = $2
                    if (!(name in seen)) {seen[name] = 1; order[++count] = name}}
     END {for (i = 1; i <= count; i++)
            printf "  %-44s %7s  (best %s)\n", order[i], (order[i] in won) ? won[order[i]] : "-",
                   (order[i] in top) ? top[order[i]] : "-"}' "$LOG" |
  tee -a "$LOG.table"
cat "$LOG.table" >> "$LOG" && rm -f "$LOG.table"
# Their bits: GPU = host under the same plans (a failure here keeps them from being the defaults).
registry="$BUILD/tests/registry_test"
if [ -x "$registry" ]; then
  echo "== winners' plans, GPU = host: registry_test --gtest_filter=ROW_BLOCK_TESTS" | tee -a "$LOG"
  env "${winners[@]}" GIZML_REQUIRE_GPU="${GIZML_REQUIRE_GPU:-1}" timeout "$check_limit" "$registry" \
    --gtest_filter="$ROW_BLOCK_TESTS" --gtest_color=no > "$LOG.check" 2>&1
  checked=$?
  grep -E '^\[  (FAILED|PASSED|SKIPPED) ' "$LOG.check" | head -40 | tee -a "$LOG"
  if [ $checked -ne 0 ]; then
    echo "gpu-rows-sweep: the winners' plans did not pass GPU = host (exit $checked; 124: timed out)" | tee -a "$LOG"
    tail -n 40 "$LOG.check" >> "$LOG"
    status=1
  fi
  rm -f "$LOG.check"
else
  echo "gpu-rows-sweep: no tests/registry_test in $BUILD: the winners' plans not checked" | tee -a "$LOG"
fi
if [ "${checked:-1}" -eq 0 ]; then
  echo "gpu-rows-sweep: to make them the defaults: kMeasuredRowPlans = \"$plan\" (src/core/row_plan.cpp)" | tee -a "$LOG"
else
  echo "gpu-rows-sweep: the winners' plans were not checked to give the host's bits here: not yet the defaults" |
    tee -a "$LOG"
fi
exit $status
