#!/usr/bin/env bash
# Builds gizml for a GPU machine from a machine without one, then stages what travels there.
#   build: build-gpu-work/ — a portable CPU target (x86-64-v3), CUDA sm_80 and sm_90a with the static
#          CUDA runtime, libstdc++ and libgcc static, no OpenBLAS benchmark (OpenBLAS alone is ~35 MiB),
#          and gizml as a shared library: one copy of it (and of its kernels) for all the programs,
#          where a static one was linked into each test (52 MiB staged with 16 tests, near the limit).
#   stage: build-gpu/ — only the programs (gizml-check, gizml-decode, gizml-denoise, gizml-train,
#          tests/*_test, bench/gizml_bench), stripped, the shared libraries they need beyond the C
#          library and the driver (in lib/), the test data (tests/data, next to the tests) and a slice
#          of Fashion-MNIST for gizml-train's short run (data/fashion-mnist: the first 9600 training
#          and 2000 test images, as gzip'd IDX files like Debian's). The test programs travel in one
#          archive (tests/programs.tar.gz: 33 MiB staged in all, 52 MiB unpacked). At most 55 MiB:
#          what a GPU session can carry.
# tools/gpu-check.sh (from the repository) runs it there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${GIZML_GPU_WORK:-$ROOT/build-gpu-work}"
STAGE="${GIZML_GPU_STAGE:-$ROOT/build-gpu}"
LIMIT_MIB=55
t0=$SECONDS

BUILD="$WORK" GIZML_CUDA=ON \
  GIZML_CMAKE_ARGS="-DGIZML_CPU_ARCH=x86-64-v3 -DGIZML_STATIC_RUNTIME=ON -DGIZML_BENCH=ON -DGIZML_OPENBLAS_BENCH=OFF -DBUILD_SHARED_LIBS=ON ${GIZML_CMAKE_ARGS:-}" \
  bash "$ROOT/tools/setup.sh"
echo "build-gpu: built in $((SECONDS - t0)) s"

rm -rf "$STAGE"
mkdir -p "$STAGE/lib" "$STAGE/tests" "$STAGE/bench"
cp "$WORK/gizml-check" "$WORK/gizml-decode" "$WORK/gizml-denoise" "$WORK/gizml-train" "$STAGE/"
cp "$WORK"/tests/*_test "$STAGE/tests/"
cp "$WORK/bench/gizml_bench" "$STAGE/bench/"
cp -r "$ROOT/tests/data" "$STAGE/tests/data"
rm -rf "$STAGE/tests/data/__pycache__"
# The first images of Fashion-MNIST (its IDX header's count rewritten), for gizml-train --steps 150.
mkdir -p "$STAGE/data/fashion-mnist"
python3 - /usr/share/datasets/fashion-mnist "$STAGE/data/fashion-mnist" <<'PY'
import gzip, struct, sys
src, dst = sys.argv[1], sys.argv[2]
for prefix, keep in (("train", 9600), ("t10k", 2000)):
    for kind, rank in (("images-idx3", 3), ("labels-idx1", 1)):
        name = f"{prefix}-{kind}-ubyte.gz"
        data = gzip.open(f"{src}/{name}").read()
        dims = list(struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank]))
        per = 1
        for d in dims[1:]:
            per *= d
        dims[0] = keep
        body = data[:4] + struct.pack(">" + "I" * rank, *dims) + data[4 + 4 * rank:4 + 4 * rank + keep * per]
        with gzip.GzipFile(f"{dst}/{name}", "wb", mtime=0) as f:
            f.write(body)
PY
bins=("$STAGE/gizml-check" "$STAGE/gizml-decode" "$STAGE/gizml-denoise" "$STAGE/gizml-train" "$STAGE"/tests/*_test "$STAGE/bench/gizml_bench")

# Libraries any Linux has (the driver's libcuda too); everything else goes into lib/.
system_lib() {
  case "$1" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libcuda.so*) return 0 ;;
    *) return 1 ;;
  esac
}
for bin in "${bins[@]}"; do
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    system_lib "$(basename "$lib")" || cp -uL "$lib" "$STAGE/lib/"
  done
done
strip --strip-unneeded "${bins[@]}" "$STAGE"/lib/*

# Every dependency of every staged program must now be a system library or one in lib/.
bad=0
for f in "${bins[@]}" "$STAGE"/lib/*; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue  # linux-vdso and the loader line
    if [ "$path" = "not" ]; then
      echo "build-gpu: $f needs $name, which is not found"; bad=1
    elif ! system_lib "$name" && [ "$path" != "$STAGE/lib/$name" ]; then
      echo "build-gpu: $f needs $name ($path), neither a system library nor staged in lib/"; bad=1
    fi
  done < <(LD_LIBRARY_PATH="$STAGE/lib" ldd "$f")
done
[ $bad -eq 0 ] || { echo "build-gpu: FAILED: unstaged dependencies"; exit 1; }

# The one thing lib/ cannot carry: the C library. The GPU machine's must be at least this new.
glibc=$(for f in "${bins[@]}" "$STAGE"/lib/*; do objdump -T "$f" | grep -o 'GLIBC_[0-9.]*'; done | sort -uV | tail -1)
echo "build-gpu: the staged programs need glibc ${glibc#GLIBC_} or newer (this machine: $(ldd --version | head -1))"

# The test programs (32 MiB, the part that grows) travel as one gzip'd tar (11 MiB in stop 44), which
# tools/gpu-unpack.sh unpacks on the GPU machine (gpu-check.sh and gpu-rows-sweep.sh call it).
tar -czf "$STAGE/tests/programs.tar.gz" -C "$STAGE/tests" $(cd "$STAGE/tests" && ls -- *_test)
rm -f "$STAGE"/tests/*_test
echo "build-gpu: test programs packed in tests/programs.tar.gz ($(du -b "$STAGE/tests/programs.tar.gz" | \
  awk '{printf "%.1f", $1 / 1048576}') MiB)"

bytes=$(du -sb "$STAGE" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')
du -ab "$STAGE" | sort -n | tail -12 | awk '{printf "  %8.1f MiB  %s\n", $1 / 1048576, $2}'
echo "build-gpu: staged $mib MiB in $STAGE (limit $LIMIT_MIB MiB; libraries: $(ls "$STAGE/lib" | tr '\n' ' '))"
if [ "$bytes" -gt $((LIMIT_MIB * 1048576)) ]; then
  echo "build-gpu: FAILED: $mib MiB is over the $LIMIT_MIB MiB limit"; exit 1
fi
echo "build-gpu: ready in $((SECONDS - t0)) s; on the GPU machine: bash tools/gpu-check.sh $(basename "$STAGE")"
