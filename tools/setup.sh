#!/usr/bin/env bash
# Sourced by tools/check.sh and tools/test.sh: installs the Debian packages the build needs (only
# those missing), then configures and builds gizml in $BUILD (default: build/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"

need=()
for pkg in cmake ninja-build g++ libgtest-dev libgmock-dev libbenchmark-dev libomp-dev libopenblas-dev \
    python3-venv python3-dev \
    zlib1g-dev dataset-fashion-mnist; do  # python3-*: the Python package's test; the last two: gizml-train
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi

# CUDA is built when nvcc is on PATH or in /usr/local/cuda (it must compile and link here even
# though no GPU runs it); GIZML_CUDA=OFF in the environment turns it off.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
cuda_flag=()
[ -n "${GIZML_CUDA:-}" ] && cuda_flag=(-DGIZML_CUDA="$GIZML_CUDA")

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_flag[@]}" ${GIZML_CMAKE_ARGS:-}
# GIZML_BUILD_TARGET: one target (tools/train.sh builds gizml-train alone); default: everything.
cmake --build "$BUILD" -j "$(nproc)" ${GIZML_BUILD_TARGET:+--target "$GIZML_BUILD_TARGET"}
