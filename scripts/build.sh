#!/usr/bin/env bash
# Configures and builds swift into build/ (Release, Ninja, ccache when present). Idempotent: a rerun with
# nothing changed takes seconds.
#   scripts/build.sh            the binary (and tests unless SWIFT_BUILD_TESTS=OFF)
# Environment: SWIFT_TORCH_PREFIX  an existing LibTorch/torch cmake prefix instead of the project's .venv
#              SWIFT_BUILD_DIR     build folder (default build)
#              SWIFT_JOBS          parallel compile jobs (default: cores)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SWIFT_BUILD_DIR:-$ROOT/build}"
args=(-S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSWIFT_BUILD_TESTS="${SWIFT_BUILD_TESTS:-ON}")
if command -v ninja >/dev/null; then args+=(-G Ninja); fi
if [ -n "${SWIFT_TORCH_PREFIX:-}" ]; then args+=(-DCMAKE_PREFIX_PATH="$SWIFT_TORCH_PREFIX"); fi
if [ ! -f "$BUILD/CMakeCache.txt" ] || [ "$ROOT/CMakeLists.txt" -nt "$BUILD/CMakeCache.txt" ]; then
  cmake "${args[@]}" >"$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
fi
cmake --build "$BUILD" -j "${SWIFT_JOBS:-$(nproc)}"
echo "build: $BUILD/bin/swift"
