#!/usr/bin/env bash
# Builds gizml for a GPU machine from a machine without one: a portable CPU target (x86-64-v3),
# CUDA for sm_80 and sm_90a with the static CUDA runtime, libstdc++ and libgcc static, and the
# remaining shared libraries it needs (libgomp, Google Benchmark) copied into $BUILD/lib, so the
# folder can be carried over and run by tools/gpu-check.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD="${BUILD:-$ROOT/build-gpu}"
export GIZML_CUDA=ON
export GIZML_CMAKE_ARGS="-DGIZML_CPU_ARCH=x86-64-v3 -DGIZML_STATIC_RUNTIME=ON ${GIZML_CMAKE_ARGS:-}"
source "$ROOT/tools/setup.sh"

mkdir -p "$BUILD/lib"
for bin in "$BUILD"/gizml-check "$BUILD"/tests/*_test "$BUILD"/bench/gizml_bench; do
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libcuda.so*) ;;
      *) cp -uL "$lib" "$BUILD/lib/" ;;
    esac
  done
done
echo "build-gpu: $BUILD is ready to carry (shared libraries in $BUILD/lib: $(ls "$BUILD/lib" | tr '\n' ' '))"
