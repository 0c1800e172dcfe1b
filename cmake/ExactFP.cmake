# The one place where gizml's floating-point flags live (SPEC §1, DESIGN "Rules that keep the bits").
#
# Every target that computes floats — the library, the reference, the tests, the benchmarks — goes
# through gizml_exact_fp(), so a product is fused only where the code writes fma(), division and
# square root are IEEE, and subnormals are kept. tests/build_flags_test.cpp checks that these flags
# really reached the compiler.

set(GIZML_CPU_ARCH "native" CACHE STRING
    "CPU target for -march (native for this machine; x86-64-v3 for a build carried to another machine)")

set(GIZML_EXACT_CXX_FLAGS
    -ffp-contract=off        # a*b+c stays two roundings unless the code writes fma
    -fno-fast-math
    -fno-unsafe-math-optimizations
    -fno-finite-math-only    # NaN and inf are data here
    -fno-associative-math
    -fno-reciprocal-math
    -fno-trapping-math)

set(GIZML_EXACT_CUDA_FLAGS
    --fmad=false             # no contraction on the device
    -prec-div=true
    -prec-sqrt=true
    -ftz=false               # keep subnormals
    --expt-relaxed-constexpr)

# GCC 12's SLP vectorizer miscompiles small integer initializer lists for AVX-512 targets
# (-march=native on an AVX-512 machine, x86-64-v4): `return std::vector<int64_t>{2048, 2048, 2048, 0};`
# comes out as four 2048s (measured with Debian's 12.2.0 at -O2 on AMD EPYC and as x86-64-v4; x86-64-v3
# is fine). Shapes are such lists. The pass is off for GCC before 13; tests/build_flags_test.cpp checks
# the pattern in the library's and the tests' own code, so another compiler with the bug fails a test.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  list(APPEND GIZML_EXACT_CXX_FLAGS -fno-tree-slp-vectorize)
endif()

function(gizml_exact_fp target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${GIZML_EXACT_CXX_FLAGS} -march=${GIZML_CPU_ARCH}>
    $<$<COMPILE_LANGUAGE:CUDA>:${GIZML_EXACT_CUDA_FLAGS}>)
  # The host half of a .cu file is compiled by g++ too: give it the same flags.
  foreach(flag IN LISTS GIZML_EXACT_CXX_FLAGS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${flag}>)
  endforeach()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-march=${GIZML_CPU_ARCH}>)
endfunction()
