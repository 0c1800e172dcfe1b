#!/usr/bin/env bash
# The main job: trains a small CNN on Fashion-MNIST with gizml's exact ops alone and prints the
# SHA-256 of the trained weights — the same on any thread count, SIMD width and GPU.
# Installs what is missing (tools/setup.sh: the build tools, zlib1g-dev and Debian's
# dataset-fashion-mnist, whose gzip'd IDX files land in /usr/share/datasets/fashion-mnist/), builds
# gizml-train in $BUILD (default build/) and runs it; arguments go to gizml-train, for example
#   bash tools/train.sh --epochs 3 --threads 2 --out train-out
#   bash tools/train.sh --steps 200 --check        # a short run, then 1 thread (and GPU 0): the same hash?
#   bash tools/train.sh --device gpu
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export BUILD="${BUILD:-$ROOT/build}"
GIZML_BUILD_TARGET=gizml-train bash "$ROOT/tools/setup.sh" >/dev/null || {
  echo "train: the build failed; again with its output:"; GIZML_BUILD_TARGET=gizml-train bash "$ROOT/tools/setup.sh"; exit 1; }
[ -x "$BUILD/gizml-train" ] || { echo "train: no $BUILD/gizml-train (zlib missing? apt-get install zlib1g-dev)"; exit 1; }
exec "$BUILD/gizml-train" "$@"
