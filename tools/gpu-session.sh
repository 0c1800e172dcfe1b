#!/usr/bin/env bash
# A GPU session's one device call: tools/gpu-check.sh (does every GPU result equal the host's?),
# then tools/gpu-rows-sweep.sh (which form of the row kernels is fastest: the table that picks the
# defaults), then tools/gpu-profile.sh (Nsight Compute's why), each under a share of one deadline
# (GPU_SESSION_TOTAL, 570 s: a device call may run 600), so that all three write their logs within
# one call however the first ones go. Each runs after the one before whatever its exit (`;`, not
# `&&`): a failing check still leaves the measurements. Shares: the check at most 240 s
# (GPU_CHECK_TOTAL_LIMIT; some 125 s on an H200 in stop 26), the sweep what is left but 120 s
# (ROWS_SWEEP_TOTAL), the profile the rest (PROFILE_TOTAL). Logs under $OUT (or the build folder).
# Exit: gpu-check.sh's (0 only where every check passed).
#   usage: tools/gpu-session.sh [build folder, default build-gpu]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build-gpu}"
total="${GPU_SESSION_TOTAL:-570}" start=$SECONDS
left() { echo $((total - (SECONDS - start))); }
check_limit=$(($(left) < 240 ? $(left) : 240))
GPU_CHECK_TOTAL_LIMIT="$check_limit" bash "$ROOT/tools/gpu-check.sh" "$BUILD"
checked=$?
sweep=$(($(left) - 120))
if [ "$sweep" -ge 30 ]; then
  ROWS_SWEEP_TOTAL="$sweep" bash "$ROOT/tools/gpu-rows-sweep.sh" "$BUILD"
else
  echo "gpu-session: no time left for tools/gpu-rows-sweep.sh"
fi
profile=$(($(left) - 10))
if [ "$profile" -ge 30 ]; then
  PROFILE_TOTAL="$profile" bash "$ROOT/tools/gpu-profile.sh" "$BUILD"
else
  echo "gpu-session: no time left for tools/gpu-profile.sh"
fi
echo "gpu-session: gpu-check.sh exited $checked; $((SECONDS - start)) s in all"
exit $checked
