#!/usr/bin/env bash
# CTest fixture: builds the transformers reference models into $1 (see make_reference.py). Without a Python
# that has torch + transformers it writes SKIPPED with the reason, which the parity tests report; in CI
# (CI=true) that is a failure, since scripts/setup.sh --tests installs them (tests/reference.sh).
set -euo pipefail
out="$1"
py="${SWIFT_TEST_PYTHON:-python3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../reference.sh"
rm -rf "$out"
mkdir -p "$out"
if ! "$py" -c 'import torch, transformers, safetensors' 2>/dev/null; then
  reference_missing "$out" "no Python with torch+transformers+safetensors at $py (run scripts/setup.sh --tests)"
  exit 0
fi
"$py" "$here/make_reference.py" "$out" 2>&1 | grep -v -E "Loading weights|Writing model shards" || true
test -f "$out/manifest.json"
# bitsandbytes (the quantization reference) into $out/bnb; the bnb parity tests skip visibly without it.
if "$py" -c 'import bitsandbytes' 2>/dev/null; then
  "$py" "$here/make_bnb_reference.py" "$out/bnb" 2>&1 | grep -v -E "Loading weights|Writing model shards|kernels" || true
  test -f "$out/bnb/manifest.json"
else
  reference_missing "$out/bnb" "no bitsandbytes in $py (run scripts/setup.sh --tests)"
fi
# ms-swift's and TRL's preference trainers (the swift rlhf reference) into $out/rlhf; skipped visibly without them.
if "$py" -c 'import trl, swift.rlhf_trainers' 2>/dev/null; then
  "$py" "$here/make_rlhf_reference.py" "$out/rlhf" 2>&1 | grep -v -E "Loading weights|Writing model shards|kernels" || true
  test -f "$out/rlhf/manifest.json"
else
  reference_missing "$out/rlhf" "no trl + ms-swift in $py (run scripts/setup.sh --tests)"
fi
# ms-swift's GRPO trainer (swift rlhf --rlhf_type grpo's reference) into $out/grpo.
if "$py" -c 'import swift.rlhf_trainers.grpo_trainer' 2>/dev/null; then
  "$py" "$here/make_grpo_reference.py" "$out/grpo" 2>&1 | grep -v -E "Loading weights|Writing model shards|kernels|INFO:swift|jit" || true
  test -f "$out/grpo/manifest.json"
else
  reference_missing "$out/grpo" "no ms-swift with its GRPO trainer (and msgspec) in $py (run scripts/setup.sh --tests)"
fi
# ms-swift's and TRL's GKD losses (swift rlhf --rlhf_type gkd's reference) into $out/gkd.
if "$py" -c 'import swift.rlhf_trainers.gkd_loss, trl.experimental.gkd' 2>/dev/null; then
  "$py" "$here/make_gkd_reference.py" "$out/gkd" 2>&1 | grep -v -E "kernels|INFO:swift|jit" || true
  test -f "$out/gkd/manifest.json"
else
  reference_missing "$out/gkd" "no ms-swift GKD loss and TRL GKD trainer in $py (run scripts/setup.sh --tests)"
fi
