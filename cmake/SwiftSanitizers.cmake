# Sanitizer builds (SWIFT_SANITIZE=address,undefined: the unit tests under ASan and UBSan, docs/testing.md) and
# the libFuzzer build (SWIFT_BUILD_FUZZ: every library instrumented for coverage, scripts/fuzz.sh). The flags go to
# C++ only: nvcc takes none of them.
if(SWIFT_SANITIZE)
  # The first UBSan finding fails the program instead of printing and going on, so a test cannot pass past one.
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${SWIFT_SANITIZE};-fno-omit-frame-pointer;-fno-sanitize-recover=all>")
  add_link_options("$<$<LINK_LANGUAGE:CXX>:-fsanitize=${SWIFT_SANITIZE}>")
  # ASan brings its own allocator; jemalloc would take malloc from it.
  set(SWIFT_USE_JEMALLOC OFF CACHE BOOL "" FORCE)
  message(STATUS "swift: sanitizers ${SWIFT_SANITIZE} (jemalloc off)")
endif()
if(SWIFT_BUILD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SWIFT_BUILD_FUZZ needs clang for libFuzzer: configure with -DCMAKE_CXX_COMPILER=clang++ "
                        "(scripts/fuzz.sh does)")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>")
endif()
