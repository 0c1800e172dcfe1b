#!/usr/bin/env bash
# The tests: builds gizml (installing what is missing) and runs every test with CTest — the unit
# tests and the exhaustive sweeps over all 2^32 floats (a few minutes on 2 cores). GPU tests skip,
# saying so, where there is no GPU.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@"
