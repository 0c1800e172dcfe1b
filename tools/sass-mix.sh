#!/usr/bin/env bash
# What a GPU kernel's machine code is made of, read without a GPU: for each kernel of an nvcc object
# (or library) whose name matches a pattern, its SASS instructions for one architecture by kind
# (shuffles, loads and stores by width and space (generic: an address space nvcc could not tell),
# local memory: spills or stack arrays, division slow paths, convergence barriers) and in all.
# Counts are static, every path of the kernel (F32 and BF16 inputs, each kind of code, slow paths)
# together: compare two builds of the same kernel, or read the straight part of the listing
# (--listing) for the instructions a value, or each loop's own count, kinds and memory accesses by
# width (--loops: a loop is a branch back to an earlier address, so a hot loop's instructions a
# value are its count over its values).
#   tools/sass-mix.sh OBJECT [KERNEL-REGEX] [--arch sm_90a] [--listing] [--loops]
# e.g. tools/sass-mix.sh build-gpu-work/CMakeFiles/gizml.dir/src/netops/quant/cuda.cu.o int8RowBlocks
# cuobjdump (and the nvdisasm it runs) come with the CUDA toolkit's full install; where they are
# missing (the toolkit here has nvcc and ptxas only) the script takes them from PyPI's
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels, unpacked once into
# ${GIZML_TOOLS_CACHE:-$HOME/.cache/gizml-tools}.
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
object=$1
shift
pattern=.
arch=sm_90a
listing=0
loops=0
while [ $# -gt 0 ]; do
  case $1 in
    --arch) arch=$2; shift 2 ;;
    --listing) listing=1; shift ;;
    --loops) loops=1; shift ;;
    *) pattern=$1; shift ;;
  esac
done

cuobjdump=$(command -v cuobjdump || true)
if [ -z "$cuobjdump" ] || ! command -v nvdisasm >/dev/null; then
  cache=${GIZML_TOOLS_CACHE:-$HOME/.cache/gizml-tools}
  if [ ! -x "$cache/unpacked/nvidia/cu13/bin/nvdisasm" ]; then
    mkdir -p "$cache/wheel"
    python3 -m pip download --quiet --no-deps -d "$cache/wheel" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >&2
    for wheel in "$cache"/wheel/*.whl; do python3 -m zipfile -e "$wheel" "$cache/unpacked"; done
    chmod +x "$cache"/unpacked/nvidia/*/bin/*
  fi
  bin=$(dirname "$(find "$cache/unpacked" -name nvdisasm -type f | head -1)")
  export PATH="$bin:$PATH"  # cuobjdump runs nvdisasm
  cuobjdump=$bin/cuobjdump
fi

"$cuobjdump" -sass "$object" | python3 -c '
import collections, re, subprocess, sys
arch, pattern = sys.argv[1], re.compile(sys.argv[2])
listing, loops = sys.argv[3] == "1", sys.argv[4] == "1"
text = sys.stdin.read()
parts = re.split(r"\n\s*code for (sm_\w+)", text)
classes = [("shuffles", r"^SHFL"), ("global loads", r"^LDG"), ("global stores", r"^STG"),
           ("shared loads", r"^LDS"), ("shared stores", r"^STS"), ("async copies", r"^LDGSTS"),
           ("generic (address space not known to nvcc)", r"^(LD|ST)\."),
           ("local (spills, stack)", r"^(LDL|STL)"), ("divisions slow path", r"^(FCHK|CALL)"),
           ("reciprocals", r"^MUFU.RCP"), ("convergence barriers", r"^BSSY"), ("FP32", r"^(FADD|FMUL|FFMA|FMNMX)")]
for i in range(1, len(parts), 2):
    if parts[i] != arch:
        continue
    for fn in re.split(r"\n\s*Function : ", parts[i + 1])[1:]:
        mangled = fn.split("\n", 1)[0].strip()
        name = subprocess.run(["c++filt"], input=mangled, capture_output=True, text=True).stdout.strip()
        if not pattern.search(name):
            continue
        ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+((?:@!?U?P\w+\s+)?[A-Z][A-Z0-9_.]*[^;]*);", fn)
        names = [re.sub(r"^@!?U?P\w+\s+", "", o).split()[0] for o in ops]
        print(f"{name[:160]}\n  {len(names)} instructions")
        for label, rx in classes:
            hits = collections.Counter(n for n in names if re.match(rx, n))
            if hits:
                print(f"  {label}: {sum(hits.values())} (" + ", ".join(f"{k} {v}" for k, v in sorted(hits.items())) + ")")
        if loops:
            code = [(int(m.group(1), 16), m.group(2).split()[0], m.group(2)) for m in
                    re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*[^;]*);", fn)]
            at = {a: k for k, (a, _, _) in enumerate(code)}
            found = set()
            for k, (a, op, text) in enumerate(code):
                target = re.search(r"0x([0-9a-f]+)", text) if op.startswith("BRA") else None
                if target and int(target.group(1), 16) <= a and int(target.group(1), 16) in at:
                    found.add((at[int(target.group(1), 16)], k))
            for first, last in sorted(found):
                body = [op for _, op, _ in code[first:last + 1]]
                kinds = ", ".join(f"{label} {n}" for label, rx in classes
                                  if (n := sum(1 for o in body if re.match(rx, o))))
                widths = collections.Counter(o for o in body if re.match(r"^(LDG|STG|LDS|STS|LDL|STL|LD\.|ST\.)", o))
                print(f"  loop {code[first][0]:04x} - {code[last][0]:04x}: {len(body)} instructions ({kinds})")
                if widths:
                    print("    " + ", ".join(f"{k} {v}" for k, v in sorted(widths.items())))
        if listing:
            for line in fn.split("\n"):
                m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
                if m:
                    print(f"    {m.group(1)}  {m.group(2)}")
' "$arch" "$pattern" "$listing" "$loops"
