#!/usr/bin/env bash
# README command 2 (and CI's .ci/run): install what is missing (with the Python references the parity tests
# compare against), build with tests, run every test label (unit, parity, tokenizer, template, e2e, golden), then
# every fuzz harness for SWIFT_FUZZ_SECONDS (10) each.
#   scripts/test.sh [CTEST_ARGS...]    everything (CTEST_ARGS go to ctest, e.g. -L rlhf or -R Zero; then no fuzzing)
#   scripts/test.sh --fast [ARGS...]   the edit-compile-test loop: no setup step, build, then only the unit,
#                                      tokenizer and template labels (docs/testing.md gives its time)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
if [ "$fast" = 0 ]; then bash scripts/setup.sh --tests; fi
SWIFT_BUILD_TESTS=ON bash scripts/build.sh
cd "${SWIFT_BUILD_DIR:-$ROOT/build}"
# ctest runs 2 test processes at once on these 2-core machines: one intra-op thread each, sleeping (not
# spinning) OpenMP workers, or oversubscription makes the suite several times slower.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# A sanitizer build (SWIFT_SANITIZE, docs/testing.md): UBSan findings with the stack that led there.
if [ -n "${SWIFT_SANITIZE:-}" ]; then export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"; fi
if [ "$fast" = 1 ]; then
  exec ctest --output-on-failure -j "${SWIFT_TEST_JOBS:-2}" -L '^(unit|tokenizer|template)$' "$@"
fi
rc=0
ctest --output-on-failure -j "${SWIFT_TEST_JOBS:-2}" "$@" || rc=$?
# A short run of every libFuzzer harness (scripts/fuzz.sh: its own clang build in build-fuzz/); not when ctest
# was asked for a subset, and never with SWIFT_FUZZ_SECONDS=0.
if [ $# = 0 ] && [ "${SWIFT_FUZZ_SECONDS:-10}" != 0 ]; then
  cd "$ROOT"
  bash scripts/fuzz.sh --seconds "${SWIFT_FUZZ_SECONDS:-10}" || rc=1
fi
exit "$rc"
