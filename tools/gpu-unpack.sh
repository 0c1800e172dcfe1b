#!/usr/bin/env bash
# Unpacks the test programs that tools/build-gpu.sh packed to fit a GPU session's carry
# (tests/programs.tar.gz: 32 MiB of programs in 11 MiB, stop 44), once: the archive is removed after, so a
# second call, or a stage that was never packed, does nothing. Called by tools/gpu-check.sh and
# tools/gpu-rows-sweep.sh before they look for a test program.
#   usage: tools/gpu-unpack.sh <build folder>
set -euo pipefail
BUILD="$1"
archive="$BUILD/tests/programs.tar.gz"
[ -f "$archive" ] || exit 0
t0=$(date +%s)
tar -xzf "$archive" -C "$BUILD/tests"
rm -f "$archive"
echo "gpu-unpack: $(ls "$BUILD"/tests/*_test | wc -l) test programs unpacked in $(($(date +%s) - t0)) s"
