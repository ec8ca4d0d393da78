#!/usr/bin/env bash
# End-to-end: swift sft / pt on the tiny presets. Usage: sft_test.sh path/to/swift
#  - full fine-tuning from scratch learns swift/self-cognition: `swift infer` then answers "who are you?" with the
#    given name (a learned behaviour: the untrained model cannot);
#  - LoRA on an exported model writes PEFT adapters that `swift infer --adapters` uses on their own;
#  - pt, YAML configs with old ms-swift flag names, run-folder layout, errors.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json

# 1. Full fine-tuning from scratch on self-cognition; then ask.
run sft_full 0 "$SWIFT" sft --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --train_type full \
  --dataset swift/self-cognition --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope \
  --max_steps 150 --learning_rate 5e-3 --per_device_train_batch_size 4 --gradient_accumulation_steps 1 \
  --logging_steps 25 --save_steps 150 --output_dir "$TMP/full"
RUN="$(ls -d "$TMP"/full/v0-*)"
for f in args.json logging.jsonl images/train_loss.png checkpoint-150/config.json checkpoint-150/model.safetensors \
         checkpoint-150/tokenizer.json checkpoint-150/args.json checkpoint-150/optimizer.safetensors checkpoint-150/trainer_state.json; do
  test -s "$RUN/$f" && ok || bad "run folder lacks $f"
done
ls "$RUN"/runs/events.out.tfevents.* >/dev/null 2>&1 && ok || bad "no TensorBoard events"
# images/: a picture per logged scalar, named as ms-swift names them; each a whole PNG (signature, chunk CRCs, an
# IDAT that inflates to 800x500 RGB rows).
"$PY" - "$RUN/images" <<'P' && ok || bad "images/ lacks ms-swift's pictures or holds a broken PNG"
import os, struct, sys, zlib
names = sorted(os.listdir(sys.argv[1]))
for want in ["train_loss.png", "train_learning_rate.png", "train_grad_norm.png", "train_token_acc.png"]:
    assert want in names, (want, names)
for name in names:
    data = open(os.path.join(sys.argv[1], name), "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", name
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0] == zlib.crc32(kind + body), (name, kind)
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (width, height, depth, colour) == (800, 500, 8, 2), (name, width, height, depth, colour)
        idat += body if kind == b"IDAT" else b""
        at += 12 + length
    assert len(zlib.decompress(idat)) == height * (1 + 3 * width), name
P
"$PY" - "$RUN/logging.jsonl" <<'P' && ok || bad "loss did not fall"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert len(rows) == 6, rows
assert rows[-1]["loss"] < 0.5 * rows[0]["loss"], (rows[0]["loss"], rows[-1]["loss"])
assert rows[-1]["global_step/max_steps"] == "150/150"
P
printf '{"query": "who are you?"}\n{"query": "What is your name?"}\n{"query": "你是谁？"}\n' > "$TMP/ask.jsonl"
run ask_trained 0 "$SWIFT" infer --model "$RUN/checkpoint-150" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/answers.jsonl" --max_new_tokens 24
has learned_en "Xiao Huang" answers.jsonl
has learned_zh "小黄" answers.jsonl
# The untrained model cannot answer so (the behaviour is learned, not canned).
"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --output_dir "$TMP/untrained" >/dev/null 2>&1
run ask_untrained 0 "$SWIFT" infer --model "$TMP/untrained" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/untrained.jsonl" --max_new_tokens 24
grep -qF "Xiao Huang" "$TMP/untrained.jsonl" && bad "untrained model already says the name" || ok

# 2. LoRA on a model with weights; the adapter is enough for infer.
run lora 0 "$SWIFT" sft --model "$TMP/untrained" --train_type lora --dataset swift/self-cognition#40 \
  --model_name Tiny --model_author Tests --max_steps 6 --per_device_train_batch_size 2 --lora_rank 4 --save_steps 3 \
  --save_total_limit 1 --logging_steps 2 --output_dir "$TMP/lora" --val_dataset swift/self-cognition#4
LRUN="$(ls -d "$TMP"/lora/v0-*)"
test -s "$LRUN/checkpoint-6/adapter_model.safetensors" && test -s "$LRUN/checkpoint-6/adapter_config.json" && ok || bad "no adapter"
test ! -e "$LRUN/checkpoint-3" && ok || bad "save_total_limit 1 kept checkpoint-3"
grep -q '"eval_loss"' "$LRUN/logging.jsonl" && ok || bad "no eval_loss"
test -s "$LRUN/images/eval_loss.png" && test -s "$LRUN/images/eval_token_acc.png" && ok || bad "no eval pictures"
run infer_adapter 0 "$SWIFT" infer --adapters "$LRUN/checkpoint-6" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/lora.jsonl" --max_new_tokens 4
test "$(wc -l < "$TMP/lora.jsonl")" = 3 && ok || bad "adapter infer rows"
# Merging the adapter into the weights gives the same greedy answers as base + adapter.
run merge 0 "$SWIFT" export --adapters "$LRUN/checkpoint-6" --merge_lora true --output_dir "$TMP/merged"
run infer_merged 0 "$SWIFT" infer --model "$TMP/merged" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/merged.jsonl" --max_new_tokens 4
"$PY" -c "
import json,sys
a=[json.loads(l)['response'] for l in open('$TMP/lora.jsonl')]
b=[json.loads(l)['response'] for l in open('$TMP/merged.jsonl')]
sys.exit(0 if a==b else 1)" && ok || bad "merged model answers differently from base + adapter"
# --adapters alone merges (it is the only export of an adapter) and says so; an explicit --merge_lora false is refused.
run merge_implied 0 "$SWIFT" export --adapters "$LRUN/checkpoint-6" --output_dir "$TMP/m2"
has merge_implied_msg "merging the adapter into its base" err
cmp -s "$TMP/merged/model.safetensors" "$TMP/m2/model.safetensors" && ok || bad "--adapters alone merged differently"
run merge_false 2 "$SWIFT" export --adapters "$LRUN/checkpoint-6" --merge_lora false --output_dir "$TMP/m4"
run merge_no_base 2 "$SWIFT" merge-lora --ckpt_dir "$TMP/untrained" --output_dir "$TMP/m3"  # a model, not an adapter
has merge_no_base_msg "does not record its base model" err

# 2b. DoRA through the binary: a PEFT DoRA adapter (use_dora, magnitude vectors) that infer and merge use alike.
run dora 0 "$SWIFT" sft --model "$TMP/untrained" --train_type lora --use_dora true --dataset swift/self-cognition#16 \
  --model_name Tiny --model_author Tests --max_steps 3 --per_device_train_batch_size 2 --lora_rank 4 --learning_rate 1e-2 \
  --save_steps 3 --output_dir "$TMP/dora" --add_version false
grep -q '"use_dora": true' "$TMP/dora/checkpoint-3/adapter_config.json" && ok || bad "dora adapter_config lacks use_dora"
grep -q 'lora_magnitude_vector' "$TMP/dora/checkpoint-3/adapter_model.safetensors" && ok || bad "dora adapter has no magnitudes"
run infer_dora 0 "$SWIFT" infer --adapters "$TMP/dora/checkpoint-3" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/dora.jsonl" --max_new_tokens 4
run merge_dora 0 "$SWIFT" merge-lora --ckpt_dir "$TMP/dora/checkpoint-3" --output_dir "$TMP/dora-merged"  # ms-swift's alias
run infer_dora_merged 0 "$SWIFT" infer --model "$TMP/dora-merged" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/dora-merged.jsonl" --max_new_tokens 4
"$PY" -c "
import json,sys
a=[json.loads(l)['response'] for l in open('$TMP/dora.jsonl')]
b=[json.loads(l)['response'] for l in open('$TMP/dora-merged.jsonl')]
sys.exit(0 if a==b and len(a)==3 else 1)" && ok || bad "merged DoRA model answers differently from base + DoRA adapter"

# 2c. ms-swift's own README command line, pasted as is apart from paths (flags swift accepts without effect say
#     so in the log), trains; like transformers 5, 36 micro-batches with accumulation 16 make ceil(36/16) = 3 steps.
run msswift_cmdline 0 "$SWIFT" sft --model "$TMP/untrained" --train_type lora \
  --dataset "$ROOT/configs/datasets/demo.jsonl" 'swift/self-cognition#28' --torch_dtype float32 --num_train_epochs 1 \
  --per_device_train_batch_size 1 --per_device_eval_batch_size 1 --learning_rate 1e-4 --lora_rank 8 --lora_alpha 32 \
  --target_modules all-linear --gradient_accumulation_steps 16 --eval_steps 50 --save_steps 50 --save_total_limit 2 \
  --logging_steps 5 --max_length 2048 --output_dir "$TMP/msswift" --system 'You are a helpful assistant.' \
  --warmup_ratio 0.05 --dataloader_num_workers 4 --model_author swift --model_name swift-robot
has msswift_noop "--dataloader_num_workers has no effect in swift" err
"$PY" - "$(ls -d "$TMP"/msswift/v0-*)/logging.jsonl" <<'P' && ok || bad "ms-swift command line: wrong step count"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert rows[-1]["global_step/max_steps"] == "3/3", rows[-1]
P

# 2d. Mixed-precision switches: --bf16/--fp16 over float32 weights (LoRA), --lora_dtype, and their conflicts.
run lora_fp16 0 "$SWIFT" sft --model "$TMP/untrained" --train_type lora --dataset swift/arithmetic#8 --max_steps 2 \
  --per_device_train_batch_size 2 --torch_dtype float32 --fp16 true --lora_dtype bfloat16 --save_steps 2 \
  --output_dir "$TMP/lora_fp16" --add_version false
grep -q '"loss_scale"' "$TMP/lora_fp16/checkpoint-2/trainer_state.json" && ok || bad "--fp16 true did not scale the loss"
"$PY" - "$TMP/lora_fp16/checkpoint-2/adapter_model.safetensors" <<'P' && ok || bad "--lora_dtype bfloat16 not honoured"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
dtypes = {v["dtype"] for k, v in header.items() if k != "__metadata__"}
assert dtypes == {"BF16"}, dtypes
P
run bf16_fp16 2 "$SWIFT" sft --model "$TMP/untrained" --dataset swift/arithmetic#8 --max_steps 1 --bf16 true --fp16 true
has bf16_fp16_msg "--bf16 and --fp16 are both true" err
run bf16_vs_dtype 2 "$SWIFT" sft --model "$TMP/untrained" --dataset swift/arithmetic#8 --max_steps 1 --bf16 true --torch_dtype float16
has bf16_vs_dtype_msg "contradicts --torch_dtype" err

# 3. pt on plain text, and a YAML config with old flag names (sft_type, batch_size).
printf '{"text": "The quick brown fox jumps over the lazy dog."}\n{"text": "Pack my box with five dozen liquor jugs."}\n' > "$TMP/pt.jsonl"
run pt 0 "$SWIFT" pt --model "$TMP/untrained" --dataset "$TMP/pt.jsonl" --max_steps 2 --output_dir "$TMP/pt" --add_version false
test -s "$TMP/pt/checkpoint-2/model.safetensors" && ok || bad "pt checkpoint"
cat > "$TMP/run.yaml" <<Y
model: $TMP/untrained
sft_type: lora
dataset: [swift/arithmetic#32]
batch_size: 2
gradient_accumulation_steps: 2
max_steps: 2
lora_rank: 2
lora_alpha: 8
target_modules: [q_proj, v_proj]
learning_rate: 1e-3
lr_scheduler_type: linear
warmup_ratio: 0.1
weight_decay: 0.01
max_length: 64
truncation_strategy: right
logging_steps: 1
save_steps: 100
output_dir: $TMP/yaml
Y
run yaml 0 "$SWIFT" sft "$TMP/run.yaml" --max_grad_norm 0.5
grep -q '"target_modules": \[' "$(ls -d "$TMP"/yaml/v0-*)/checkpoint-2/adapter_config.json" && ok || bad "yaml adapter config"

# bf16 compute over fp32 master weights (full): trains, stores bf16 checkpoints; fp16 likewise, with loss scaling.
run bf16 0 "$SWIFT" sft --model "$TMP/untrained" --train_type full --dataset swift/arithmetic#16 --max_steps 2 \
  --torch_dtype bfloat16 --per_device_train_batch_size 2 --output_dir "$TMP/bf16" --add_version false
grep -q '"torch_dtype": "bfloat16"' "$TMP/bf16/checkpoint-2/config.json" && ok || bad "bf16 checkpoint dtype"
"$PY" -c "import json,math,sys; r=[json.loads(l) for l in open('$TMP/bf16/logging.jsonl')]; sys.exit(0 if all(math.isfinite(x['loss']) for x in r) else 1)" && ok || bad "bf16 loss not finite"
run fp16 0 "$SWIFT" sft --model "$TMP/untrained" --train_type full --dataset swift/arithmetic#16 --max_steps 2 --save_steps 1 \
  --torch_dtype float16 --per_device_train_batch_size 2 --output_dir "$TMP/fp16" --add_version false
grep -q '"torch_dtype": "float16"' "$TMP/fp16/checkpoint-2/config.json" && ok || bad "fp16 checkpoint dtype"
grep -q '"loss_scale": 65536' "$TMP/fp16/checkpoint-1/trainer_state.json" && ok || bad "fp16 loss scale not saved"
"$PY" -c "import json,math,sys; r=[json.loads(l) for l in open('$TMP/fp16/logging.jsonl')]; sys.exit(0 if all(math.isfinite(x['loss']) and math.isfinite(x['grad_norm']) for x in r) else 1)" && ok || bad "fp16 loss not finite"
run fp16_resume 0 "$SWIFT" sft --model "$TMP/untrained" --train_type full --dataset swift/arithmetic#16 --max_steps 2 \
  --torch_dtype float16 --per_device_train_batch_size 2 --output_dir "$TMP/fp16r" --add_version false \
  --resume_from_checkpoint "$TMP/fp16/checkpoint-1"

# 3b. The arithmetic task is learned: after training, greedy answers to its questions are exactly right (the
#     check runs on answers, not on the loss). A small-vocabulary model (Mistral's tokenizer, hidden 128, 4 layers) learns 32
#     questions in ~30 s. Seeds and one thread fixed, and trained to a loss near 0.01 (32/32 at 1 and 2 threads; 200
#     steps left it at 28-31 of 32 depending on the thread count): the check clears its bar of 30 with a margin.
cp -r "$ROOT/configs/models/mistral-tiny" "$TMP/m128"
"$PY" - "$TMP/m128/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(hidden_size=128, num_hidden_layers=4, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2, head_dim=32)
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
run arithmetic 0 "$SWIFT" sft --model "$TMP/m128" --init_strategy normal --train_type full --dataset swift/arithmetic#32 \
  --max_steps 300 --per_device_train_batch_size 8 --gradient_accumulation_steps 1 --learning_rate 3e-3 --seed 42 \
  --num_threads 1 --gradient_checkpointing false --logging_steps 50 --save_steps 300 --output_dir "$TMP/arith" --add_version false
run arithmetic_infer 0 "$SWIFT" infer --model "$TMP/arith/checkpoint-300" --val_dataset swift/arithmetic#32 --seed 42 \
  --num_threads 1 --result_path "$TMP/arith.jsonl" --max_new_tokens 8
"$PY" - "$TMP/arith.jsonl" <<'P' && ok || bad "arithmetic not learned"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
right = sum(r["response"].strip() == r["labels"].strip() for r in rows)
print(f"arithmetic: {right}/{len(rows)} exact answers")
assert len(rows) == 32 and right >= 30, right
P

# 3c. --packing true trains end to end: samples packed into rows (no attention across samples), the loss falls,
#     validation rows are packed alike and evaluated, and the checkpoint answers in swift infer.
run packing 0 "$SWIFT" sft --model "$TMP/untrained" --train_type full --packing true --packing_length 256 \
  --dataset swift/self-cognition --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope --split_dataset_ratio 0.1 \
  --max_steps 30 --learning_rate 5e-3 --per_device_train_batch_size 2 --gradient_accumulation_steps 1 --seed 42 \
  --num_threads 1 --logging_steps 10 --save_steps 30 --output_dir "$TMP/packed" --add_version false
has packing_rows "packing: packed 32 samples into 5 rows of at most 256 tokens" err
has packing_val "packing: packed 4 validation samples into 1 rows" err
"$PY" - "$TMP/packed/logging.jsonl" <<'P' && ok || bad "packed training did not learn or evaluate"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
train = [r for r in rows if "loss" in r]
assert len(train) == 3 and train[-1]["loss"] < 0.5 * train[0]["loss"], [r["loss"] for r in train]
assert any("eval_loss" in r for r in rows), rows
P
run packing_infer 0 "$SWIFT" infer --model "$TMP/packed/checkpoint-30" --val_dataset "$TMP/ask.jsonl" \
  --result_path "$TMP/packed.jsonl" --max_new_tokens 4
test "$(wc -l < "$TMP/packed.jsonl")" = 3 && ok || bad "packed checkpoint infer rows"

# 4. Exact resume: the losses after resuming equal an uninterrupted run's, bit for bit (CPU fp32), for full
#    fine-tuning and for LoRA with dropout, also after a SIGKILL in the middle of training/saving.
common=(--dataset swift/arithmetic#64 --max_steps 12 --per_device_train_batch_size 2 --gradient_accumulation_steps 2
        --logging_steps 1 --save_steps 2 --lora_dropout 0.1 --learning_rate 1e-3 --add_version false)
same_tail() {  # same_tail REFERENCE_LOG RESUMED_LOG FROM_STEP
  "$PY" - "$1" "$2" "$3" <<'P'
import json, sys
ref = {r["global_step/max_steps"]: r for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
new = [r for r in map(json.loads, open(sys.argv[2])) if "loss" in r]
start = int(sys.argv[3])
assert new and int(new[0]["global_step/max_steps"].split("/")[0]) == start + 1, new[:1]
for r in new:
    k = r["global_step/max_steps"]
    for key in ("loss", "grad_norm", "learning_rate", "token_acc"):
        assert r[key] == ref[k][key], (k, key, r[key], ref[k][key])
P
}
# GaLore: its low-rank moments, step counts and projection bases resume too (the basis was computed at step 4 and
# is next recomputed at step 8, so the resumed steps 7 and 8 use the saved one).
galore=(--train_type full --use_galore true --galore_rank 4 --galore_update_proj_gap 4)
for mode in full lora galore; do
  flags=(--train_type $mode)
  [ $mode = galore ] && flags=("${galore[@]}")
  run "ref_$mode" 0 "$SWIFT" sft --model "$TMP/untrained" "${flags[@]}" "${common[@]}" --output_dir "$TMP/ref_$mode"
  run "resume_$mode" 0 "$SWIFT" sft --model "$TMP/untrained" "${flags[@]}" "${common[@]}" --output_dir "$TMP/res_$mode" \
    --resume_from_checkpoint "$TMP/ref_$mode/checkpoint-6"
  same_tail "$TMP/ref_$mode/logging.jsonl" "$TMP/res_$mode/logging.jsonl" 6 && ok || bad "resume $mode is not exact"
done
grep -q "GaLore AdamW (rank 4, std projection refreshed every 4 steps" "$TMP/err" && ok || bad "no GaLore log line"
# A GaLore state is not AdamW's (nor the other way round): exit 3 naming the file, before any step.
run resume_galore_as_adamw 3 "$SWIFT" sft --model "$TMP/untrained" --train_type full "${common[@]}" --output_dir "$TMP/z" \
  --resume_from_checkpoint "$TMP/ref_galore/checkpoint-6"
has resume_galore_as_adamw "is not a swift-adamw optimizer state file (it is swift-galore-adamw)" err
# SIGKILL while it trains and saves every 2 steps; resume from the newest complete checkpoint.
"$SWIFT" sft --model "$TMP/untrained" --train_type lora "${common[@]}" --output_dir "$TMP/killed" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -d "$TMP/killed/checkpoint-4" ] && break; sleep 0.05; done
sleep 0.$((RANDOM % 10))
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
last="$(ls -d "$TMP"/killed/checkpoint-* | sed 's/.*checkpoint-//' | grep -E '^[0-9]+$' | sort -n | tail -1)"
if [ -n "$last" ] && [ "$last" -lt 12 ]; then
  for f in adapter_config.json adapter_model.safetensors optimizer.safetensors trainer_state.json rng_state.pt args.json; do
    test -s "$TMP/killed/checkpoint-$last/$f" && ok || bad "killed run: checkpoint-$last lacks $f"
  done
  same_tail "$TMP/ref_lora/logging.jsonl" <(grep -v '"global_step/max_steps":"[1-2]/' "$TMP/killed/logging.jsonl") 2 \
    && ok || bad "two runs of the same command differ (seeding)"
  run resume_killed 0 "$SWIFT" sft --model "$TMP/untrained" --train_type lora "${common[@]}" --output_dir "$TMP/after_kill" \
    --resume_from_checkpoint "$TMP/killed/checkpoint-$last"
  same_tail "$TMP/ref_lora/logging.jsonl" "$TMP/after_kill/logging.jsonl" "$last" && ok || bad "resume after SIGKILL is not exact"
else
  echo "note: the run finished before the kill (checkpoint $last); SIGKILL case not exercised this time"
fi
run resume_done 2 "$SWIFT" sft --model "$TMP/untrained" --train_type lora "${common[@]}" --output_dir "$TMP/x" \
  --resume_from_checkpoint "$TMP/ref_lora/checkpoint-12"
run resume_wrong_type 2 "$SWIFT" sft --model "$TMP/untrained" --train_type full "${common[@]}" --output_dir "$TMP/y" \
  --resume_from_checkpoint "$TMP/ref_lora/checkpoint-6"

# 5. Errors.
run no_data 2 "$SWIFT" sft --model "$TMP/untrained";                                   has no_data "needs --dataset" err
run bad_type 2 "$SWIFT" sft --model "$TMP/untrained" --dataset "$TMP/pt.jsonl" --train_type longlora
run missing_file 3 "$SWIFT" sft --model "$TMP/untrained" --dataset "$TMP/nope.jsonl"; has missing_file "nope.jsonl" err
run no_name 2 "$SWIFT" sft --model "$TMP/untrained" --dataset swift/self-cognition;     has no_name "--model_name" err
run too_long 3 "$SWIFT" sft --model "$TMP/untrained" --dataset "$TMP/pt.jsonl" --max_length 3 --use_chat_template false
has too_long "no row is left" err
run bad_sched 2 "$SWIFT" sft --model "$TMP/untrained" --dataset "$TMP/pt.jsonl" --lr_scheduler_type wavy

finish sft
