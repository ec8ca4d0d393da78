#!/usr/bin/env bash
# README command 2 (and CI's .ci/run): install what is missing (with the Python references the parity tests
# compare against), build with tests, run every test label (unit, parity, tokenizer, template, e2e, golden).
#   scripts/test.sh [CTEST_ARGS...]    everything (CTEST_ARGS go to ctest, e.g. -L rlhf or -R Zero)
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
if [ "$fast" = 1 ]; then
  exec ctest --output-on-failure -j "${SWIFT_TEST_JOBS:-2}" -L '^(unit|tokenizer|template)$' "$@"
fi
exec ctest --output-on-failure -j "${SWIFT_TEST_JOBS:-2}" "$@"
