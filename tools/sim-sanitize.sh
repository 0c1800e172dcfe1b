#!/usr/bin/env bash
# The GPU tests on the GPU simulator under AddressSanitizer and UBSan: every kernel run on the CPU
# with device memory allocated at exactly its size (a read or write past a buffer is reported),
# and UBSan's checks on the kernels' host-compiled code (a misaligned float4 or uint4 access, an
# overflowing shift). What CI's simulator step runs (.ci/run), in a build of its own (BUILD,
# default build-simsan/: host-only, x86-64-v3, -O1 with the sanitizers); the decode loop's check
# runs alone after, as its CTest timeout (300 s) is too short for it under the sanitizers. For a
# session that changed kernels without a GPU. On a Zen 2 (2 cores): build about 4 minutes, tests
# about 14. Arguments go to ctest (for example -R 'Quant' to run fewer).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD="${BUILD:-$PWD/build-simsan}"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGIZML_CUDA=OFF -DGIZML_CUDA_SIM=ON -DGIZML_SANITIZE=ON \
  -DGIZML_BENCH=OFF -DGIZML_CPU_ARCH=x86-64-v3 >/dev/null
ninja -C "$BUILD"
export GIZML_CUDA_SIM=1 GIZML_REQUIRE_GPU=1 UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" -L unit -R 'Cuda|GpuEqualsHost|denoise_same_bits' "$@"
if [ $# -eq 0 ]; then
  echo "sim-sanitize: the decode loop's ids, host = simulated GPU (gizml-decode --check)"
  "$BUILD/gizml-decode" --check --layers 2 --prompt 12 --generate 12
fi
