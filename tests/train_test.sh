#!/usr/bin/env bash
# CTest train_test (label "train"): a short training run of gizml-train (150 steps of 64 images,
# tested on 2000 images) with 2 threads, then 1 thread (and GPU 0 where there is one): the trained
# weights' SHA-256 must be the same. The hash is printed and written to <build>/train_hash.txt,
# which .ci/run compares between the AVX-512 and the AVX2 builds; it is never written in a test.
# Skipped (exit 77), saying why, without Debian's dataset-fashion-mnist.
#   usage: train_test.sh <gizml-train> <build folder>
set -euo pipefail
train="$1" build="$2"
data="${GIZML_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "train_test: skipped: no Fashion-MNIST in $data (Debian: apt-get install dataset-fashion-mnist; tools/setup.sh does)"
  exit 77
fi
rm -f "$build/train_hash.txt"
"$train" --check --threads 2 --steps 150 --batch 64 --test-limit 2000 --data "$data" --out "$build/train-test" \
  --hash-file "$build/train_hash.txt"
