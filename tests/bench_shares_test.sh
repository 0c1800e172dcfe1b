#!/usr/bin/env bash
# gizml_bench with GIZML_BENCH_SHARES=<file> appends each share of the copy to that file as its
# benchmark ends (bench/bench_main.cpp), the very line of its closing table, so that a GPU session's
# run stopped by a timeout keeps them (tools/gpu-rows-sweep.sh, tools/gpu-check.sh). One short host
# run of a copy and two row norms.
#   usage: tests/bench_shares_test.sh <gizml_bench>
set -uo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  cat "$work/out"
  echo "bench_shares_test: $1"
  exit 1
}
GIZML_BENCH_SHARES="$work/shares" "$1" --benchmark_filter='BM_Copy/4096/4096|BM_(Rms|Layer)Norm/4096/4096' \
  --benchmark_min_time=0.01 > "$work/out" 2>&1 || fail "the bench failed"
lines=$(grep -c . "$work/shares" 2>/dev/null)
[ "$lines" = 2 ] || fail "expected 2 share lines in GIZML_BENCH_SHARES, got ${lines:-no file}"
for name in LayerNorm RmsNorm; do
  line=$(grep -E "^  BM_$name/4096/4096/real_time +[0-9]+\.[0-9]%  of BM_Copy/4096/4096/real_time$" "$work/shares") ||
    fail "no share line for BM_$name in: $(cat "$work/shares")"
  grep -qxF -- "$line" "$work/out" || fail "'$line' is not the table's"
done
echo "bench_shares_test: passed"
