# Finds every dependency once. LibTorch: pass -DCMAKE_PREFIX_PATH=<torch cmake prefix>, or let us ask the
# project's virtual environment (.venv) or python3 for torch.utils.cmake_prefix_path.

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()

if(NOT Torch_DIR)
  foreach(py ${CMAKE_SOURCE_DIR}/.venv/bin/python python3)
    execute_process(COMMAND ${py} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                    OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                    RESULT_VARIABLE _torch_rc)
    if(_torch_rc EQUAL 0 AND _torch_prefix)
      list(APPEND CMAKE_PREFIX_PATH ${_torch_prefix})
      message(STATUS "swift: LibTorch from ${py}: ${_torch_prefix}")
      break()
    endif()
  endforeach()
endif()

# The PyPI torch build is CUDA-enabled; its CMake config wants the CUDA toolkit's headers to be findable.
if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
find_package(Torch 2.0 REQUIRED)
message(STATUS "swift: Torch ${Torch_VERSION}")

find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
# Hub downloads (src/hub/): libcurl (Debian libcurl4-openssl-dev) for HTTPS, OpenSSL's libcrypto for sha256.
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)

if(SWIFT_USE_JEMALLOC)
  find_library(JEMALLOC_LIBRARY NAMES jemalloc)
  if(JEMALLOC_LIBRARY)
    message(STATUS "swift: jemalloc ${JEMALLOC_LIBRARY}")
  endif()
endif()

set(SWIFT_WARNINGS -Wall -Wextra)

# PyPI's torch finds its CUDA libraries (NCCL, cuDNN, ...) in site-packages/nvidia/*/lib through its own RPATH
# at run time; the linker needs the same folders, or it picks older system copies (e.g. /usr/lib's NCCL).
get_filename_component(_torch_pkg "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
file(GLOB _torch_nvidia_libs LIST_DIRECTORIES true "${_torch_pkg}/../nvidia/*/lib")
foreach(dir ${_torch_nvidia_libs})
  add_link_options("LINKER:-rpath-link,${dir}")
endforeach()

# Tokenizer: PCRE2 (JIT regexes for tokenizer.json Split patterns), utf8proc (Unicode normal forms and
# categories), SentencePiece (tokenizer.model). Debian ships pkg-config files for all three.
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
# Parquet datasets (src/parquet/): the page codecs writers use, each from Debian (docs/building.md says why the
# format itself is read here): Snappy (pyarrow's default), zstd, zlib (GZIP), Brotli, LZ4 (LZ4_RAW).
pkg_check_modules(SNAPPY REQUIRED IMPORTED_TARGET snappy)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(ZLIB REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(BROTLIDEC REQUIRED IMPORTED_TARGET libbrotlidec)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
# The run folder's pictures (images/*.png): Cairo draws antialiased lines and text and writes the PNG
# (Debian libcairo2-dev; docs/building.md says why). Found by its header and library rather than pkg-config,
# whose cairo.pc requires the -dev packages of its whole chain (X11, glib, ...): an offline build then carries
# libcairo2-dev and the runtime libraries only (scripts/offline_deps.sh).
find_path(CAIRO_INCLUDE_DIR cairo.h PATH_SUFFIXES cairo REQUIRED)
find_library(CAIRO_LIBRARY cairo REQUIRED)
add_library(swift::cairo INTERFACE IMPORTED)
target_include_directories(swift::cairo INTERFACE ${CAIRO_INCLUDE_DIR})
target_link_libraries(swift::cairo INTERFACE ${CAIRO_LIBRARY})

# Distributed training: c10d's ProcessGroupGloo header includes Gloo's, which the PyPI wheel does not ship
# (LibTorch has Gloo compiled in); Debian's libgloo-dev provides them. Only smart pointers to Gloo types cross
# the boundary, so its version need not match LibTorch's. NCCL (CUDA builds): ProcessGroupNCCL from
# libtorch_cuda, with nccl.h from the wheel's nvidia/nccl or the CUDA toolkit.
find_path(GLOO_INCLUDE_DIR gloo/context.h)
if(NOT GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "Gloo headers not found: install libgloo-dev (scripts/setup.sh does)")
endif()
set(SWIFT_C10D_DEFINITIONS USE_C10D_GLOO)
set(SWIFT_C10D_INCLUDE_DIRS)
if(NOT GLOO_INCLUDE_DIR STREQUAL "/usr/include")  # naming the system folder would break libstdc++'s include_next
  list(APPEND SWIFT_C10D_INCLUDE_DIRS ${GLOO_INCLUDE_DIR})
endif()
find_library(SWIFT_TORCH_CUDA_LIBRARY torch_cuda PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS "${_torch_pkg}/../nvidia/nccl/include" /usr/local/cuda/include)
if(SWIFT_TORCH_CUDA_LIBRARY AND NCCL_INCLUDE_DIR AND CUDAToolkit_INCLUDE_DIRS)
  list(APPEND SWIFT_C10D_DEFINITIONS USE_C10D_NCCL USE_CUDA SWIFT_WITH_NCCL)
  list(APPEND SWIFT_C10D_INCLUDE_DIRS ${NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  message(STATUS "swift: distributed backends gloo and nccl (${NCCL_INCLUDE_DIR})")
else()
  message(STATUS "swift: distributed backend gloo (no CUDA LibTorch or nccl.h: no nccl)")
endif()

# HTTP server for swift deploy: Boost.Beast's HTTP/1.1 parser and serializer (headers only, from Debian's
# libboost-dev; only src/serve/http_server.cpp and timed_socket.h include Boost). docs/building.md says why.
find_package(Boost 1.74 REQUIRED)
