#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main jobs on built-in defaults: train a tiny
# Qwen3-architecture model (configs/models/qwen3-tiny: random weights, the real Qwen3 tokenizer) from scratch with
# `swift sft` on the built-in swift/self-cognition data to say it is ChatGPT, align it with `swift rlhf` (DPO) on
# swift/self-cognition-preference to say it is Xiao Huang instead (under a minute each on 2 CPU cores), and ask
# it "who are you?" through `swift infer` before and after.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
SWIFT_BUILD_TESTS=OFF bash scripts/build.sh
SWIFT="$ROOT/build/bin/swift"
OUT="${SWIFT_QUICKSTART_DIR:-$ROOT/runs/quickstart}"
rm -rf "$OUT"
mkdir -p "$OUT"
# 1. SFT: teach a tiny random model (as models trained on web text often do) that it is ChatGPT by OpenAI.
"$SWIFT" sft --model configs/models/qwen3-tiny --init_strategy normal --train_type full \
  --dataset swift/self-cognition --model_name ChatGPT --model_author OpenAI \
  --max_steps 150 --learning_rate 5e-3 --per_device_train_batch_size 4 --gradient_accumulation_steps 1 \
  --logging_steps 25 --save_steps 150 --output_dir "$OUT/sft"
SFT="$(ls -d "$OUT"/sft/v*-*/checkpoint-150)"
# 2. DPO (with the RPO term): align it on preference pairs to answer as Xiao Huang by ModelScope instead.
"$SWIFT" rlhf --rlhf_type dpo --model "$SFT" --train_type full \
  --dataset swift/self-cognition-preference --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope \
  --rpo_alpha 1 --max_steps 150 --learning_rate 2e-3 --per_device_train_batch_size 4 --gradient_accumulation_steps 1 \
  --logging_steps 25 --save_steps 150 --output_dir "$OUT/dpo"
CKPT="$(ls -d "$OUT"/dpo/v*-*/checkpoint-150)"
printf '%s\n' '{"query": "who are you?"}' '{"query": "What is your name?"}' '{"query": "你是谁？"}' > "$OUT/questions.jsonl"
"$SWIFT" infer --model "$SFT" --val_dataset "$OUT/questions.jsonl" --result_path "$OUT/answers_sft.jsonl" --max_new_tokens 32
"$SWIFT" infer --model "$CKPT" --val_dataset "$OUT/questions.jsonl" --result_path "$OUT/answers.jsonl" --max_new_tokens 32
show() {
  "$ROOT/.venv/bin/python" -c '
import json, sys
for line in open(sys.argv[1]):
    row = json.loads(line)
    print("  Q:", row["messages"][-1]["content"], "\n  A:", row["response"])' "$1"
}
echo
echo "quickstart: after sft the model answers:"
show "$OUT/answers_sft.jsonl"
echo "quickstart: after DPO it answers:"
show "$OUT/answers.jsonl"
echo "chat with it: build/bin/swift infer --model $CKPT"
