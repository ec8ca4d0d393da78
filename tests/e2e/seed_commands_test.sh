#!/usr/bin/env bash
# End-to-end: every command line of the documents swift was built from (issue 18's list), pasted as written with
# a local tiny model and local data in place of the hub ids, and sizes scaled to a CPU (rows, epochs, lengths and
# step counts; every flag is kept). Each must run, and say in its log what it did with the flags that mean
# something else here. Usage: seed_commands_test.sh path/to/swift
#  1. sft LoRA (all-linear, rank 128, --deepspeed zero3, --bf16, --use_flash_attention, --dataloader_num_workers);
#  2. sft QLoRA 4-bit with --lora_dtype bfloat16;  3. packing with --pack_max_length;
#  4. GaLore through --optim galore_adamw with --galore_update_interval;  5. --use_flash_attention with --use_ulysses;
#  6. export --adapters CHECKPOINT --output_dir DIR (merges);
#  7. deploy of the merged model with vLLM's flags, answering chat requests (the OpenAI client);
#  8. torchrun with the c10d rendezvous, `-m swift.cli.sft` replaced by `--no-python swift sft`, on 2 CPU ranks.
set -uo pipefail
SWIFT="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json openai
PIDS=()
trap 'for p in "${PIDS[@]:-}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 3 --output_dir "$TMP/qwen3" \
  >/dev/null 2>&1 || { echo "FAIL export of the tiny model"; exit 1; }
"$PY" - "$TMP/finance.jsonl" <<'P'
import json, sys
rows = [("What is a bond?", "A bond is a loan to an issuer that pays interest."),
        ("What is equity?", "Equity is ownership in a company."),
        ("Define liquidity.", "Liquidity is how quickly an asset becomes cash."),
        ("What does ROI mean?", "Return on investment: gain divided by cost.")]
with open(sys.argv[1], "w") as f:
    for i in range(24):
        q, a = rows[i % len(rows)]
        f.write(json.dumps({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}) + "\n")
P
mkdir -p "$TMP/work" && cd "$TMP/work" || exit 1
M="$TMP/qwen3" D="$TMP/finance.jsonl"
export OMP_NUM_THREADS=1

# 1. The LoRA line. Scaled: D#50000 -> D#16, 3 epochs of 16 rows at accumulation 4 (12 steps), max_length 512,
#    save/eval every 6 steps, logging every 2.
run lora_line 0 "$SWIFT" sft --model "$M" --train_type lora --lora_target_modules all-linear --lora_rank 128 --lora_alpha 256 \
  --dataset "$D#16" --num_train_epochs 3 --per_device_train_batch_size 1 --gradient_accumulation_steps 4 \
  --learning_rate 1e-4 --max_length 512 --output_dir ./output/qwen3-finance --deepspeed zero3 --bf16 true \
  --use_flash_attention true --save_steps 6 --eval_steps 6 --logging_steps 2 --dataloader_num_workers 8 --split_dataset_ratio 0.2
has lora_flash "attention: flash_attn" err
has lora_workers "--dataloader_num_workers has no effect in swift" err
CKPT="$(ls -d ./output/qwen3-finance/v*/checkpoint-6 2>/dev/null | head -1)"
[ -n "$CKPT" ] && [ -f "$CKPT/adapter_model.safetensors" ] && ok || bad "no LoRA checkpoint-6 under ./output/qwen3-finance"
grep -q '"eval_loss"' ./output/qwen3-finance/v*/logging.jsonl && ok || bad "the LoRA line logged no eval_loss"

# 2. QLoRA (the first line's model, data and sizes).
base=(--model "$M" --dataset "$D#16" --num_train_epochs 1 --per_device_train_batch_size 1 --gradient_accumulation_steps 4
      --learning_rate 1e-4 --max_length 512 --logging_steps 2 --save_steps 100)
run qlora_line 0 "$SWIFT" sft "${base[@]}" --output_dir ./output/qlora --train_type qlora --quant_bits 4 \
  --lora_dtype bfloat16 --lora_rank 64 --lora_alpha 16
has qlora_nf4 "nf4" err
# 3. Packing.
run packing_line 0 "$SWIFT" sft "${base[@]}" --output_dir ./output/packed --train_type lora --packing true --pack_max_length 1024
# 4. GaLore (full fine-tuning: GaLore projects the weights' gradients). --galore_update_interval 500 -> 2 to
#    recompute the projection within the 4 steps.
run galore_line 0 "$SWIFT" sft "${base[@]}" --output_dir ./output/galore --train_type full --optim galore_adamw \
  --galore_rank 64 --galore_update_interval 2 --galore_scale 0.1
has galore_log "--optim galore_adamw: GaLore AdamW (rank 64, std projection refreshed every 2 steps, scale 0.1" err
# 5. Flash attention with Ulysses (one process: nothing to split).
run ulysses_line 0 "$SWIFT" sft "${base[@]}" --output_dir ./output/ulysses --train_type lora --use_flash_attention true \
  --use_ulysses true
has ulysses_log "--use_ulysses true on one rank" err

# 6. Export of the adapter: merges, as the line can only mean.
run export_line 0 "$SWIFT" export --adapters "$CKPT" --output_dir ./merged_model
has export_log "merging the adapter into its base" err
[ -f ./merged_model/config.json ] && ls ./merged_model/*.safetensors >/dev/null 2>&1 && ok || bad "./merged_model is not a model folder"

# 7. The vLLM deploy line, served by swift's engine; the OpenAI client asks it twice (one streamed).
source "$ROOT/tests/e2e/start_server.sh"
start_server "$TMP/deploy.log" ./merged_model --infer_backend vllm --vllm_tensor_parallel_size 4 \
  --vllm_pipeline_parallel_size 2 --max_model_len 8192 --served_model_name qwen3-finance-assistant --max_new_tokens 8
has deploy_backend "--infer_backend vllm: served by swift's built-in LibTorch engine" deploy.log
has deploy_split "--vllm_tensor_parallel_size 4, --vllm_pipeline_parallel_size 2: swift does not split" deploy.log
has deploy_len "max_model_len 8192" deploy.log
"$PY" - "$PORT" <<'P' && ok || bad "the deployed model did not answer through the OpenAI client"
import sys
from openai import OpenAI
client = OpenAI(base_url=f"http://127.0.0.1:{sys.argv[1]}/v1", api_key="none")
assert [m.id for m in client.models.list().data][0] == "qwen3-finance-assistant"
r = client.chat.completions.create(model="qwen3-finance-assistant", messages=[{"role": "user", "content": "What is a bond?"}])
assert r.choices[0].message.role == "assistant" and r.usage.completion_tokens > 0, r
parts = list(client.chat.completions.create(model="qwen3-finance-assistant", stream=True,
                                            messages=[{"role": "user", "content": "What is equity?"}]))
assert parts and parts[-1].choices[0].finish_reason in ("stop", "length"), parts[-1]
print("deploy answered", r.usage.completion_tokens, "tokens;", len(parts), "streamed chunks")
P
kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null

# 8. The torchrun line with the c10d rendezvous, on 2 CPU ranks of one node.
TORCHRUN="$(dirname "$PY")/torchrun"
if [ -x "$TORCHRUN" ]; then
  port="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  run torchrun_line 0 "$TORCHRUN" --nnodes=1 --nproc_per_node=2 --rdzv_id=$$ --rdzv_backend=c10d \
    --rdzv_endpoint=127.0.0.1:$port --no-python "$SWIFT" sft --model "$M" --train_type lora --dataset "$D#16" \
    --max_steps 2 --per_device_train_batch_size 1 --logging_steps 1 --output_dir ./output/torchrun --ddp_timeout 120
  has torchrun_ranks "data parallel: 2 ranks" err
else
  bad "no torchrun beside $PY (scripts/setup.sh --tests installs torch, which has it)"
fi

finish seed_commands
