#!/usr/bin/env bash
# CTest fixture: renders the chat-template cases with Hugging Face transformers into $1 (see make_reference.py).
# Without a Python that has transformers it writes SKIPPED with the reason, which the parity tests report; in CI
# (CI=true) that is a failure, since scripts/setup.sh --tests installs it.
# Without the real tokenizer files (a checkout without ../shared/assets and no SWIFT_TOKENIZER_ASSETS) it writes
# SKIPPED saying where it looked, and the parity tests report that.
#   make_reference.sh OUT_DIR DEFAULT_ASSETS_DIR   ($SWIFT_TOKENIZER_ASSETS, when set, wins)
set -euo pipefail
out="$1"
assets="${SWIFT_TOKENIZER_ASSETS:-$2}"
py="${SWIFT_TEST_PYTHON:-python3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$out"
mkdir -p "$out"
if [ ! -d "$assets" ]; then
  reason="no tokenizer assets at $assets (set SWIFT_TOKENIZER_ASSETS to the folder with qwen3/, llama3/, mistral7b/)"
  echo "$reason" > "$out/SKIPPED"
  echo "template reference: SKIPPED: $reason"
  exit 0
fi
if ! "$py" -c 'import transformers, jinja2' 2>/dev/null; then
  reason="no Python with transformers and jinja2 at $py (run scripts/setup.sh --tests)"
  echo "$reason" > "$out/SKIPPED"
  echo "template reference: SKIPPED: $reason"
  if [ "${CI:-}" = "true" ]; then exit 1; fi
  exit 0
fi
"$py" "$here/make_reference.py" "$out" "$assets" "$here/render_cases.json" 2>&1 | grep -v "clean_up_tokenization" || true
test -f "$out/jinja_reference.json"
