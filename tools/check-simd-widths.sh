#!/usr/bin/env bash
# Compiles (syntax and templates only, nothing built) every source of the library, its tests and
# its benchmarks for the SIMD targets the host code has branches for: AVX-512 with its BF16 and FP16
# instructions (a Sapphire Rapids), AVX-512 without them (x86-64-v4, a Skylake-X) and AVX2
# (x86-64-v3). CI builds and runs only the machine's own target and x86-64-v3, so a branch for a
# width the machine lacks would otherwise first fail to compile on another machine (stop 49: an
# AVX2-only helper used outside its #if broke every AVX-512 build while CI ran on a Zen 2).
# The commands are CMake's own (a host build with the GPU simulator, configured only, in
# build-simd/), with -march replaced.
# Usage: tools/check-simd-widths.sh [march ...]   (default: sapphirerapids x86-64-v4 x86-64-v3)
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(sapphirerapids x86-64-v4 x86-64-v3)
cmake -S . -B build-simd -G Ninja -DCMAKE_BUILD_TYPE=Release -DGIZML_CUDA=OFF -DGIZML_CUDA_SIM=ON \
  -DGIZML_CPU_ARCH=x86-64-v3 -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
status=0
for march in "${targets[@]}"; do
  t=$SECONDS
  # One line a source: cd to its directory, then its command with -march=<march> and -fsyntax-only in
  # place of its output.
  if python3 - "$march" build-simd/compile_commands.json <<'PY' | xargs -0 -P "$(nproc)" -n 1 bash -c; then
import json, shlex, sys
march, db = sys.argv[1], json.load(open(sys.argv[2]))
for entry in db:
    args = shlex.split(entry["command"])
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "-MF", "-MT"):
            i += 2
            continue
        if a == "-MD":
            i += 1
            continue
        out.append("-march=" + march if a.startswith("-march=") else a)
        i += 1
    out.append("-fsyntax-only")
    sys.stdout.write("cd " + shlex.quote(entry["directory"]) + " && " + shlex.join(out) + "\0")
PY
    echo "simd widths: $march: every source compiles ($((SECONDS - t)) s)"
  else
    echo "simd widths: $march: a source does not compile (above)"
    status=1
  fi
done
exit $status
