#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/: clang, AddressSanitizer + UndefinedBehaviorSanitizer, into build-fuzz/)
# and runs each for a given time.
#   scripts/fuzz.sh [--seconds N] [--jobs J] [HARNESS...]    default: 60 s each, 2 at once, every harness
# Corpora: the committed seeds (fuzz/corpus/HARNESS/) and what earlier runs found (build-fuzz/corpus/HARNESS/,
# kept). A crash, an uncaught exception, a leak, one input taking over 10 s or memory over 2 GiB stops the
# harness: the input is saved as build-fuzz/artifacts/HARNESS-* (replay: build-fuzz/fuzz/HARNESS FILE) and the
# script exits 1. CI runs every harness briefly (scripts/test.sh); docs/testing.md has the figures.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
seconds=60 jobs=2 harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    -*) echo "error: unknown option '$1'"; echo "hint: scripts/fuzz.sh [--seconds N] [--jobs J] [HARNESS...]"; exit 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
[ ${#harnesses[@]} -gt 0 ] || harnesses=($(cd fuzz/corpus && ls))
for h in "${harnesses[@]}"; do
  [ -f "fuzz/$h.cpp" ] || { echo "error: no harness '$h'"; echo "hint: one of: $(cd fuzz/corpus && ls | tr '\n' ' ')"; exit 2; }
done
CLANG="${SWIFT_FUZZ_CXX:-$(command -v clang++ || command -v clang++-14 || true)}"
[ -n "$CLANG" ] || { echo "error: no clang++ for libFuzzer"; echo "hint: apt-get install clang libfuzzer-14-dev"; exit 2; }

BUILD="$ROOT/build-fuzz"
CC="${CLANG/clang++/clang}" CXX="$CLANG" SWIFT_BUILD_DIR="$BUILD" SWIFT_BUILD_TESTS=OFF SWIFT_SANITIZE=address,undefined \
  SWIFT_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWIFT_BUILD_FUZZ=ON -DSWIFT_BUILD_BENCH=OFF -DSWIFT_LINK_CHECKS=OFF -DSWIFT_CUDA_KERNELS=OFF" \
  SWIFT_BUILD_TARGET=fuzzers bash scripts/build.sh

mkdir -p "$BUILD/artifacts" "$BUILD/logs"
# LibTorch (loaded by the safetensors harnesses) is not instrumented: its own definitions of a few globals are
# not ODR violations of ours.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
run_one() {
  local h="$1" rc=0
  mkdir -p "$BUILD/corpus/$h"
  rm -f "$BUILD/logs/$h.rc"
  "$BUILD/fuzz/$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$h-" "$BUILD/corpus/$h" "fuzz/corpus/$h" \
    >"$BUILD/logs/$h.log" 2>&1 || rc=$?
  echo "$rc" >"$BUILD/logs/$h.rc"
}
# Each harness's exit status goes to logs/HARNESS.rc: bash may forget a finished job's status before `wait PID`.
for h in "${harnesses[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
  run_one "$h" &
done
wait
failed=0
for h in "${harnesses[@]}"; do
  rc="$(cat "$BUILD/logs/$h.rc" 2>/dev/null || echo "?")"
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$BUILD/logs/$h.log" | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$BUILD/logs/$h.log" | tail -1)"
  if [ "$rc" = 0 ]; then
    echo "fuzz $h: ok, ${runs:-?} inputs in ${seconds} s, ${cov:-cov: ?}"
  else
    failed=1
    echo "fuzz $h: FAILED (exit $rc) after ${runs:-?} inputs; log $BUILD/logs/$h.log, input $BUILD/artifacts/$h-*"
    grep -m 5 -E "ERROR|runtime error|uncaught|terminate|SUMMARY" "$BUILD/logs/$h.log" || tail -20 "$BUILD/logs/$h.log"
  fi
done
exit "$failed"
