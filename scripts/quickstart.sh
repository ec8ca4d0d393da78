#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on the built-in default.
# Today's main job: create a tiny Qwen3-architecture model from configs/models/qwen3-tiny (random weights,
# --init_strategy normal), export it as a Hugging Face folder, then re-export it in bfloat16 sharded at 10MB.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
SWIFT_BUILD_TESTS=OFF bash scripts/build.sh
SWIFT="$ROOT/build/bin/swift"
OUT="${SWIFT_QUICKSTART_DIR:-$ROOT/runs/quickstart}"
mkdir -p "$OUT"
"$SWIFT" export --model configs/models/qwen3-tiny --init_strategy normal --seed 42 \
  --output_dir "$OUT/qwen3-tiny" --exist_ok true
"$SWIFT" export --model "$OUT/qwen3-tiny" --torch_dtype bfloat16 --max_shard_size 10MB \
  --output_dir "$OUT/qwen3-tiny-bf16" --exist_ok true
echo "quickstart: done; see $OUT (open either folder with transformers' AutoModelForCausalLM.from_pretrained)"
