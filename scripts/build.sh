#!/usr/bin/env bash
# Configures and builds swift into build/ (Release, Ninja, ccache when present). Idempotent: a rerun with
# nothing changed takes seconds.
#   scripts/build.sh            the binary (and tests unless SWIFT_BUILD_TESTS=OFF)
# Environment: SWIFT_TORCH_PREFIX  an existing LibTorch/torch cmake prefix instead of the project's .venv
#              SWIFT_DEPS_PREFIX   a prefix with the Debian dependencies unpacked (scripts/offline_deps.sh)
#              SWIFT_BUILD_DIR     build folder (default build)
#              SWIFT_JOBS          parallel compile jobs (default: cores)
#              SWIFT_SANITIZE      sanitizers for every target, e.g. address,undefined (docs/testing.md)
#              SWIFT_CMAKE_ARGS    more configure arguments, space separated (scripts/fuzz.sh)
#              SWIFT_BUILD_TARGET  what to build (default: everything)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SWIFT_BUILD_DIR:-$ROOT/build}"
args=(-S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSWIFT_BUILD_TESTS="${SWIFT_BUILD_TESTS:-ON}")
if command -v ninja >/dev/null; then args+=(-G Ninja); fi
if [ -n "${SWIFT_SANITIZE:-}" ]; then args+=(-DSWIFT_SANITIZE="$SWIFT_SANITIZE"); fi
# shellcheck disable=SC2206  # split on spaces on purpose
if [ -n "${SWIFT_CMAKE_ARGS:-}" ]; then args+=($SWIFT_CMAKE_ARGS); fi
prefixes=()
if [ -n "${SWIFT_TORCH_PREFIX:-}" ]; then prefixes+=("$SWIFT_TORCH_PREFIX"); fi
if [ -n "${SWIFT_DEPS_PREFIX:-}" ]; then  # .debs unpacked by scripts/offline_deps.sh
  dp="$(cd "$SWIFT_DEPS_PREFIX" && pwd)/usr"
  prefixes+=("$dp")
  args+=(-DCMAKE_INCLUDE_PATH="$dp/include")
  # The packages' .pc files say prefix=/usr, and pkg-config drops /usr/include and /usr/lib flags as system
  # paths: the compiler, linker and loader find the unpacked headers and libraries through these instead.
  lib="$dp/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
  export CPATH="$dp/include${CPATH:+:$CPATH}" LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$lib/pkgconfig:$dp/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  if ! command -v pkg-config >/dev/null && [ -x "$dp/bin/pkgconf" ]; then
    args+=(-DPKG_CONFIG_EXECUTABLE="$dp/bin/pkgconf")
  fi
  args+=(-DCMAKE_BUILD_RPATH="$lib")  # build/bin/swift runs without LD_LIBRARY_PATH
fi
if [ ${#prefixes[@]} -gt 0 ]; then args+=(-DCMAKE_PREFIX_PATH="$(IFS=';'; echo "${prefixes[*]}")"); fi
want_tests="${SWIFT_BUILD_TESTS:-ON}"
cached_tests="$(sed -n 's/^SWIFT_BUILD_TESTS:BOOL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)"
# Configure on the first run, when CMakeLists.txt changed, or when the tests switch differs from the cached one
# (quickstart builds without tests, test.sh with them, in the same folder).
if [ ! -f "$BUILD/CMakeCache.txt" ] || [ "$ROOT/CMakeLists.txt" -nt "$BUILD/CMakeCache.txt" ] || [ "$cached_tests" != "$want_tests" ]; then
  mkdir -p "$BUILD"
  cmake "${args[@]}" >"$BUILD/configure.log" 2>&1 || { cat "$BUILD/configure.log"; exit 1; }
fi
if [ -n "${SWIFT_BUILD_TARGET:-}" ]; then
  cmake --build "$BUILD" -j "${SWIFT_JOBS:-$(nproc)}" --target "$SWIFT_BUILD_TARGET"
  echo "build: $SWIFT_BUILD_TARGET in $BUILD"
  exit 0
fi
cmake --build "$BUILD" -j "${SWIFT_JOBS:-$(nproc)}"
echo "build: $BUILD/bin/swift"
