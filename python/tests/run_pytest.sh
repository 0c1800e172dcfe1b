#!/usr/bin/env bash
# The Python package's tests, as CTest runs them (test python_package, label "python"):
#   run_pytest.sh <cpp_values program> <work folder under the build folder>
# Makes a venv in the work folder, installs scikit-build-core, nanobind, numpy and pytest from PyPI
# (never torch: the torch tests skip without it), builds and installs gizml host-only (GIZML_CUDA
# OFF, 2 jobs, niced; the build folder is kept, so a second run is incremental), writes the C++
# API's values with cpp_values, and runs pytest over python/tests. Exits 77 (CTest: skipped),
# saying why, when python3, its venv module or its headers (python3-venv, python3-dev) are missing.
set -euo pipefail
values_program="$1"
work="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${GIZML_PYTHON:-python3}"

skip() { echo "python_package: SKIPPED: $*"; exit 77; }
command -v "$python" >/dev/null 2>&1 || skip "no $python on PATH"
"$python" -c "import venv, ensurepip" 2>/dev/null || skip "$python has no venv/ensurepip (Debian: apt-get install python3-venv)"
"$python" -c "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" \
  2>/dev/null || skip "$python has no headers (Debian: apt-get install python3-dev)"

mkdir -p "$work"
[ -x "$work/venv/bin/python" ] || "$python" -m venv "$work/venv"
venv="$work/venv/bin"
echo "python_package: $("$venv/python" --version), installing the build tools from PyPI"
"$venv/python" -m pip install -q --disable-pip-version-check scikit-build-core nanobind numpy pytest

echo "python_package: building gizml host-only (2 jobs) in $work/package-build"
start=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL=2 nice -n 10 "$venv/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps \
  -Cbuild-dir="$work/package-build" -Ccmake.define.GIZML_CUDA=OFF "$root"
echo "python_package: built and installed in $((SECONDS - start)) s"

"$values_program" > "$work/cpp_values.txt"
cd "$work"
GIZML_CPP_VALUES="$work/cpp_values.txt" PYTHONDONTWRITEBYTECODE=1 \
  "$venv/python" -m pytest -q -p no:cacheprovider -rs "$root/python/tests"
