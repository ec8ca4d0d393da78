#!/usr/bin/env bash
# CTest fixture: writes the tokenizer references into $1 (see make_reference.py). Without a Python that has
# Hugging Face `tokenizers` it writes SKIPPED with the reason, which the conformance tests report; in CI
# (CI=true) that is a failure, since scripts/setup.sh --tests installs it (tests/reference.sh).
#   make_reference.sh OUT_DIR ASSETS_DIR   (the vendored tests/assets/tokenizers)
set -euo pipefail
out="$1"
assets="$2"
py="${SWIFT_TEST_PYTHON:-python3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../reference.sh"
rm -rf "$out"
mkdir -p "$out"
if ! "$py" -c 'import tokenizers' 2>/dev/null; then
  reference_missing "$out" "no Python with the tokenizers package at $py (run scripts/setup.sh --tests)"
  exit 0
fi
"$py" "$here/make_reference.py" "$out" "$assets" "$here/hard_strings.jsonl"
test -f "$out/manifest.json"
