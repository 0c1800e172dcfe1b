#!/usr/bin/env bash
# The main program: builds gizml (installing what is missing) and runs gizml-check, which runs
# every op on the host and on every GPU found and prints whether the bits match.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
"$BUILD/gizml-check"
