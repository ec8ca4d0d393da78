#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on the built-in default:
# train a tiny Qwen3-architecture model (configs/models/qwen3-tiny: random weights, the real Qwen3 tokenizer)
# from scratch on the built-in swift/self-cognition dataset (about a minute on 2 CPU cores), then ask it
# "who are you?" through `swift infer`: it answers with the name it was taught.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
SWIFT_BUILD_TESTS=OFF bash scripts/build.sh
SWIFT="$ROOT/build/bin/swift"
OUT="${SWIFT_QUICKSTART_DIR:-$ROOT/runs/quickstart}"
rm -rf "$OUT"
mkdir -p "$OUT"
"$SWIFT" sft --model configs/models/qwen3-tiny --init_strategy normal --train_type full \
  --dataset swift/self-cognition --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope \
  --max_steps 150 --learning_rate 5e-3 --per_device_train_batch_size 4 --gradient_accumulation_steps 1 \
  --logging_steps 25 --save_steps 150 --output_dir "$OUT/train"
CKPT="$(ls -d "$OUT"/train/v*-*/checkpoint-150)"
printf '%s\n' '{"query": "who are you?"}' '{"query": "What is your name?"}' '{"query": "你是谁？"}' > "$OUT/questions.jsonl"
"$SWIFT" infer --model "$CKPT" --val_dataset "$OUT/questions.jsonl" --result_path "$OUT/answers.jsonl" --max_new_tokens 32
echo
echo "quickstart: the trained model answers:"
"$ROOT/.venv/bin/python" -c '
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    print("  Q:", row["messages"][-1]["content"], "\n  A:", row["response"])' "$OUT/answers.jsonl"
echo "chat with it: build/bin/swift infer --model $CKPT"
