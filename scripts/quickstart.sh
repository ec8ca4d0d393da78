#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on the built-in default.
# Today's main job: create a tiny Qwen3-architecture model from configs/models/qwen3-tiny (random weights,
# --init_strategy normal, the real Qwen3 tokenizer), export it as a Hugging Face folder, re-export it in
# bfloat16 sharded at 10MB, and run batch inference over configs/datasets/demo.jsonl with it. (Random weights
# answer gibberish: the point is the pipeline. Training comes with `swift sft`.)
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
"$SWIFT" infer --model "$OUT/qwen3-tiny" --val_dataset configs/datasets/demo.jsonl \
  --result_path "$OUT/infer_result.jsonl" --max_new_tokens 16 --logprobs true --top_logprobs 2
echo "quickstart: done; see $OUT (the model folders load in transformers' AutoModelForCausalLM.from_pretrained;
infer_result.jsonl has one answer per demo row); chat with: build/bin/swift infer --model $OUT/qwen3-tiny"
