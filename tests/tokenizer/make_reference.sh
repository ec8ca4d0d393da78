#!/usr/bin/env bash
# CTest fixture: writes the tokenizer references into $1 (see make_reference.py). Without a Python that has
# Hugging Face `tokenizers` it writes SKIPPED with the reason, which the conformance tests report; in CI
# (CI=true) that is a failure, since scripts/setup.sh --tests installs it.
#   make_reference.sh OUT_DIR DEFAULT_ASSETS_DIR   ($SWIFT_TOKENIZER_ASSETS, when set, wins)
set -euo pipefail
out="$1"
assets="${SWIFT_TOKENIZER_ASSETS:-$2}"
py="${SWIFT_TEST_PYTHON:-python3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$out"
mkdir -p "$out"
if ! "$py" -c 'import tokenizers' 2>/dev/null; then
  reason="no Python with the tokenizers package at $py (run scripts/setup.sh --tests)"
  echo "$reason" > "$out/SKIPPED"
  echo "tokenizer reference: SKIPPED: $reason"
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  exit 0
fi
"$py" "$here/make_reference.py" "$out" "$assets" "$here/hard_strings.jsonl"
test -f "$out/manifest.json"
