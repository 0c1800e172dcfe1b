# GIZML_SANITIZE=ON: AddressSanitizer and UndefinedBehaviorSanitizer on every target gizml builds
# (library, reference, tests, tools), compile and link, for CI's host-only sanitizer run. Added to
# the flags of cmake/ExactFP.cmake, not instead of them: the bits under test are the same bits.
# A UB report aborts the test (no recovery), so ctest sees it as a failure, not as a log line.
# Compiled at -O1 (after the build type's -O3, so it wins): the usual level for the sanitizers, and
# CI's time: on 2 cores (a Zen 2) the build took 324 s and its unit tests 226 s, against about
# 625 s and 200 s at -O3. The optimization level changes no bit (no contraction, no fast-math).
option(GIZML_SANITIZE "Build with -fsanitize=address,undefined (host code; for CI)" OFF)

if(GIZML_SANITIZE)
  set(_gizml_sanitize_flags -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  foreach(flag IN LISTS _gizml_sanitize_flags)  # C++ only: nvcc would not take them
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${flag}>)
  endforeach()
  add_link_options(-fsanitize=address,undefined)
endif()
