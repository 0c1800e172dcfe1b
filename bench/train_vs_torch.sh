#!/usr/bin/env bash
# bench/train_vs_torch.py from a virtual environment with torch and numpy. The environment is
# $TORCH_VENV (default bench/.venv); with --install it is made and torch installed into it (a large
# download: PyPI's torch wheel), never otherwise (CI never runs this). Other arguments go to the
# script, for example:  bash bench/train_vs_torch.sh --install --steps 200
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TORCH_VENV:-$ROOT/bench/.venv}"
args=()
install=0
for a in "$@"; do
  if [ "$a" = "--install" ]; then install=1; else args+=("$a"); fi
done
if [ ! -x "$VENV/bin/python3" ] || ! "$VENV/bin/python3" -c "import torch, numpy" 2>/dev/null; then
  if [ $install -eq 0 ]; then
    echo "train_vs_torch: no torch in $VENV; run with --install to make it (pip install torch numpy), or set TORCH_VENV"
    exit 2
  fi
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q torch numpy
fi
[ -x "$ROOT/build/gizml-train" ] || bash "$ROOT/tools/train.sh" --help >/dev/null 2>&1 || true
exec "$VENV/bin/python3" "$ROOT/bench/train_vs_torch.py" --gizml "$ROOT/build/gizml-train" "${args[@]}"
