# Run after nanobind's stubgen (cmake -DSTUBS=<dir> -P stub_imports.cmake): the extension is built
# as the top-level module _gizml, but ships as gizml._gizml, so the stubs' imports of it are
# made package-relative.
foreach(file "${STUBS}/_gizml/__init__.pyi" "${STUBS}/_gizml/netops.pyi")
  file(READ "${file}" text)
  string(REPLACE "from _gizml import " "from gizml._gizml import " text "${text}")
  string(REPLACE "\nimport _gizml\n" "\nfrom gizml import _gizml\n" text "${text}")
  file(WRITE "${file}" "${text}")
endforeach()
