#!/usr/bin/env bash
# Installs a gizml build into a temporary prefix and builds tests/consumer against it, as a user
# would: find_package(gizml) and gizml::gizml, nothing else. Fails if the exported targets carry
# gizml's own compile flags (-march, the exact-FP flags) into the consumer.
#   usage: tools/check-consumer.sh <gizml build folder> [-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON ...]
# Extra arguments go to the consumer's cmake; CMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON shows that
# a host-only package never looks for CUDA (as on a machine without it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GIZML_BUILD="$(cd "$1" && pwd)"
shift
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

cmake --install "$GIZML_BUILD" --prefix "$TMP/prefix" >/dev/null
targets=("$TMP"/prefix/lib*/cmake/gizml/gizmlTargets*.cmake)
if grep -n -e '-march' -e 'fp-contract' -e 'fast-math' -e 'fsanitize' "${targets[@]}"; then
  echo "check-consumer: FAILED: the installed targets pass gizml's own compile flags to consumers"
  exit 1
fi
cmake -S "$ROOT/tests/consumer" -B "$TMP/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$TMP/prefix" --no-warn-unused-cli "$@" >/dev/null
cmake --build "$TMP/consumer" >/dev/null
"$TMP/consumer/consumer"
"$TMP/prefix/bin/gizml-check" >/dev/null  # the installed main program finds its library
echo "check-consumer: $(basename "$GIZML_BUILD") installs and links as a user links it" \
  "($(ls "$TMP"/prefix/lib*/libgizml* | xargs -n1 basename | tr '\n' ' '))"
