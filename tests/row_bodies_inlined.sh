#!/usr/bin/env bash
# Every row body is inlined into its row's loop in the built library: no call to a lambda's
# operator() that takes a HostRow step (HostRow::At or TwinAt). A row function hands its loop
# (forEach, forEachWide, reduce) a lambda; GCC may keep a large one out of line, and then every 16
# or 32 values pay a call, the step's lanes pass through the stack and the body's constants are
# loaded again. groupNorm's body (SiLU) was such a call until its lambda was marked
# GIZML_HD_LAMBDA: 21 -> 11 cycles a 16 values in L2 on a Zen 5. Usage: row_bodies_inlined.sh LIB
# (exit 77, a skip, without objdump).
set -euo pipefail
lib="$1"
if ! command -v objdump >/dev/null 2>&1; then
  echo "no objdump: skipped"
  exit 77
fi
calls=$(objdump -d --no-show-raw-insn -C "$lib" | grep -E 'call.*operator\(\)<gizml::exact::HostRow::' || true)
if [ -n "$calls" ]; then
  echo "row bodies called out of line in $lib (mark their lambdas GIZML_HD_LAMBDA):"
  echo "$calls" | sed -E 's/^ *[0-9a-f]+:\s*call +[0-9a-f]+ //' | sort | uniq -c
  exit 1
fi
echo "every row body inlined in $lib"
