#!/usr/bin/env bash
# CTest fixture: renders the chat-template cases with Hugging Face transformers into $1 (see make_reference.py).
# Without a Python that has transformers it writes SKIPPED with the reason, which the parity tests report; in CI
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
if ! "$py" -c 'import transformers, jinja2' 2>/dev/null; then
  reference_missing "$out" "no Python with transformers and jinja2 at $py (run scripts/setup.sh --tests)"
  exit 0
fi
"$py" "$here/make_reference.py" "$out" "$assets" "$here/render_cases.json" 2>&1 | grep -v "clean_up_tokenization" || true
test -f "$out/jinja_reference.json"
