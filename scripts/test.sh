#!/usr/bin/env bash
# README command 2 (and CI's .ci/run): install what is missing (with the Python references the parity tests
# compare against), build with tests, run every test label (unit, parity, e2e).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh --tests
SWIFT_BUILD_TESTS=ON bash scripts/build.sh
cd "${SWIFT_BUILD_DIR:-$ROOT/build}"
# ctest runs 2 test processes at once on these 2-core machines: one intra-op thread each, sleeping (not
# spinning) OpenMP workers, or oversubscription makes the suite several times slower.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
ctest --output-on-failure -j "${SWIFT_TEST_JOBS:-2}" "$@"
