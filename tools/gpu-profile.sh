#!/usr/bin/env bash
# On a GPU machine, after tools/gpu-check.sh and tools/gpu-rows-sweep.sh: Nsight Compute's view of
# the row kernels that are furthest from the copy's rate, so that a GPU session sees why (bytes
# from memory, occupancy, what the warps wait on, shared-memory bank conflicts) and not only how
# fast. For each run of PROFILE_RUNS (default "w 0 b0 g8": the sweep's winners' plans, the defaults
# to be (GIZML_CUDA_ROW_PLAN from its row-plan.txt beside this log, no switch set; left out where
# there is none), the half-warp rows, a block a row (GIZML_CUDA_ROW_BLOCKS=1), groupNorm in one
# launch 8 groups ahead; the runs are named as gpu-rows-sweep.sh's, pN, qN and bqN too) and each benchmark of
# PROFILE_BENCHES, one gizml_bench process under `ncu`
# that profiles the op's first two launches (the bench's untimed one and the first timed one; for
# groupNorm in two launches, its two passes), caches flushed before each as ncu does by default.
# Only gizml's row and norm kernels are profiled (not the inputs' fills). The sections: the speed
# of light, the memory workload (bytes from DRAM, L2 hit rate, bank conflicts), the occupancy and
# launch (registers, shared memory, blocks a multiprocessor) and the warps' stall reasons.
# Output: $OUT/profile.log (or <build>/profile.log), ncu's text for every kernel, each bench's
# under a "== run bench" line. PROFILE_LIMIT (60 s) caps each process and PROFILE_TOTAL (240 s)
# all of them: the rest are left out, and said to be. Needs `ncu` (Nsight Compute, part of the
# CUDA toolkit): on PATH, in /usr/local/cuda*/bin or /opt/nvidia/nsight-compute/*; NCU=path picks
# one. Exit 2 where there is none, no build, or ncu may not read the counters (ERR_NVGPUCTRPERM,
# said after the first try); 1 where a run failed or the budget ran out.
#   usage: tools/gpu-profile.sh [build folder, default build-gpu]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build-gpu}" && pwd)" || { echo "gpu-profile: no build folder ${1:-$ROOT/build-gpu}"; exit 2; }
BENCH="$BUILD/bench/gizml_bench"
[ -x "$BENCH" ] || { echo "gpu-profile: $BUILD has no bench/gizml_bench"; exit 2; }
NCU="${NCU:-$(command -v ncu || true)}"
if [ -z "$NCU" ]; then
  for c in /usr/local/cuda/bin/ncu /usr/local/cuda-*/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
    [ -x "$c" ] && NCU="$c"
  done
fi
[ -n "$NCU" ] && [ -x "$NCU" ] || { echo "gpu-profile: no ncu (Nsight Compute) on this machine; set NCU=path"; exit 2; }
LOG="${OUT:-$BUILD}/profile.log"
mkdir -p "$(dirname "$LOG")"
export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The ops furthest from the copy in the first GPU runs (README "The first GPU runs"), one benchmark
# each, modulatedNorm first (its bytes from memory say whether a row's second read from its end
# finds the L2: 201 MB for its 100 MB of x before); a "g" run profiles only groupNorm's.
BENCHES="${PROFILE_BENCHES:-BM_ModulatedNorm/1 BM_ModulatedInt8Rows/8192 BM_Int8Rows/8192/3072/8 BM_GatedNormAdd BM_RowNormRope BM_PixelNorm/0 BM_GroupNorm/0}"
# gizml's row and norm kernels, by their demangled names: the rows kernels (core/cuda_rows.cuh,
# cuda_row_blocks.cuh), the 8-bit rows' blocks (quant/cuda.cu) and every kernel of norms/cuda.cu.
KERNELS='regex:.*(rowsKernel|RowsKernel|RowBlocksKernel|netops::norms::).*'
# Sections and metrics this ncu knows (a name it does not know fails the whole run): the speed of
# light, the memory workload (with its tables: bank conflicts, L2 hit rate), occupancy, launch
# (registers, shared memory) and the warps' stall reasons; and the DRAM bytes and shared-memory
# bank conflicts as plain numbers.
known_sections="$("$NCU" --list-sections 2>/dev/null)"
args=()
for s in SpeedOfLight MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables Occupancy LaunchStats WarpStateStats; do
  grep -qw "$s" <<< "$known_sections" && args+=(--section "$s")
done
known_metrics="$("$NCU" --query-metrics 2>/dev/null)" metrics=""
for m in dram__bytes_read dram__bytes_write l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld \
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st; do
  grep -qw "$m" <<< "$known_metrics" && metrics="$metrics${metrics:+,}$m.sum"
done
[ -n "$metrics" ] && args+=(--metrics "$metrics")
echo "gpu-profile: $("$NCU" --version | tail -1); ${args[*]}" | tee "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | tee -a "$LOG"
status=0
total="${PROFILE_TOTAL:-240}" start=$SECONDS
# One run's benchmarks ($benches) under ncu, with the environment `settings` (env's arguments),
# said in the log as `said`; where the budget is spent, the script ends.
profileRun() {
  for bench in $benches; do
    left=$((total - (SECONDS - start))) limit="${PROFILE_LIMIT:-60}"
    if [ "$left" -lt 10 ]; then
      echo "gpu-profile: PROFILE_TOTAL ($total s) spent: $run $bench and the rest left out" | tee -a "$LOG"
      exit 1
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    echo "== $run $bench ($said)" | tee -a "$LOG"
    if ! env "${settings[@]}" GIZML_BENCH_DEVICE=cuda timeout "$limit" "$NCU" --kernel-name-base demangled \
      --kernel-name "$KERNELS" --launch-count 2 "${args[@]}" "$BENCH" \
      --benchmark_filter="^$bench/real_time\$" --benchmark_min_time=0.01 --benchmark_color=false >> "$LOG" 2>&1; then
      echo "gpu-profile: $run $bench failed or timed out (see $LOG)" | tee -a "$LOG"
      status=1
      # Where the driver keeps the GPU's performance counters from users, every run fails alike:
      # say so once and end, rather than spend the session's last minutes failing 28 times.
      if tail -n 40 "$LOG" | grep -q ERR_NVGPUCTRPERM; then
        echo "gpu-profile: ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM: the" \
          "driver allows them to admins only, NVreg_RestrictProfilingToAdminUsers); nothing profiled" | tee -a "$LOG"
        exit 2
      fi
    fi
    # The few lines that say the most, on stdout: each kernel's line (its name, grid and block),
    # time, DRAM bytes and throughput, L2 hits, achieved occupancy, registers, bank conflicts.
    awk -v h="== $run $bench " 'index($0, h) == 1 {on = 1; next} /^== / {on = 0}
      on && (/^  [^ ].*\)x\(/ || /Duration|DRAM Throughput|dram__bytes|L2 Hit Rate|Achieved Occupancy|Registers Per Thread|bank_conflicts/)' "$LOG"
  done
}
PLAN_FILE="${OUT:-$BUILD}/row-plan.txt"
for run in ${PROFILE_RUNS:-w 0 b0 g8}; do
  benches="$BENCHES"
  if [ "$run" = w ]; then  # the winners' plans, as the sweep wrote them, and no switch
    plan="$(cat "$PLAN_FILE" 2>/dev/null || true)"
    if [ -z "$plan" ]; then
      echo "gpu-profile: no winners' plan in $PLAN_FILE: the run w left out" | tee -a "$LOG"
      continue
    fi
    settings=(-u GIZML_CUDA_ROW_BLOCKS -u GIZML_CUDA_ROWS_PER_SM -u GIZML_CUDA_GROUP_NORM_AHEAD -u GIZML_CUDA_BY_ROWS
      -u GIZML_CUDA_L2_PREFETCH -u GIZML_CUDA_QUADS GIZML_CUDA_ROW_PLAN="$plan")
    said="GIZML_CUDA_ROW_PLAN=$plan"
    profileRun
    continue
  fi
  n="${run#b}" blocks=0 ahead=0 prefetch=0 quads=0
  [ "$n" != "$run" ] && blocks=1
  if [ "${run#p}" != "$run" ]; then
    n="${run#p}" prefetch=1
  fi
  if [ "${n#q}" != "$n" ]; then
    n="${n#q}" quads=1
  fi
  if [ "${n#g}" != "$n" ]; then
    ahead="${n#g}" n=0 benches="BM_GroupNorm/0"
  fi
  settings=(GIZML_CUDA_ROW_BLOCKS="$blocks" GIZML_CUDA_ROWS_PER_SM="$n" GIZML_CUDA_GROUP_NORM_AHEAD="$ahead"
    GIZML_CUDA_L2_PREFETCH="$prefetch" GIZML_CUDA_QUADS="$quads")
  said="${settings[*]}"
  profileRun
done
exit $status
