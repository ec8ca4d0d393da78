#!/usr/bin/env bash
# README command 2 (and CI's .ci/run): install what is missing (with the Python references the parity tests
# compare against), build with tests, run every test label (unit, parity, e2e).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh --tests
SWIFT_BUILD_TESTS=ON bash scripts/build.sh
cd "${SWIFT_BUILD_DIR:-$ROOT/build}"
ctest --output-on-failure -j "${SWIFT_TEST_JOBS:-2}" "$@"
