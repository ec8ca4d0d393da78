#!/usr/bin/env bash
# End-to-end: the Gemma families through the binary, on tiny random models (tests/e2e/make_gemma_config.py: the
# gemma_style tokenizer, a sliding layer and a global one, soft-capping that bites). Usage: gemma_test.sh swift
#  - Gemma 2 under TP=2 with sequence parallelism (its four norms a layer summed over the group, the soft-capped
#    logits over a split vocabulary) and over two pipeline stages gives one rank's losses, grad norms, token accuracy
#    and final weights (fp32, 1e-5);
#  - Gemma 3 (RoPE per layer type) under ring and Ulysses context parallelism at 2 ranks gives one rank's numbers;
#  - Gemma 2 with --cp_size stops with exit 2 before loading (context parallelism has no attention soft-capping);
#  - LoRA on every linear layer of Gemma 3: infer with the adapter, export --merge_lora, and the merged folder, which
#    transformers loads, answers as base + adapter; the gemma3_text template is picked by itself.
# (Training steps against ms-swift's own: msswift_loss_test.sh; logits, generation and PEFT adapters against
# transformers and PEFT: the parity tests.)
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors transformers
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

export_family make_gemma_config.py gemma2 gemma3_text

run one_gemma2 0 "$SWIFT" sft --model "$TMP/gemma2" "${common[@]}" --output_dir "$TMP/one_gemma2"
template_is "$TMP/one_gemma2" gemma
run tp2sp_gemma2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/gemma2" "${common[@]}" --tp_size 2 \
  --sequence_parallel true --output_dir "$TMP/tp2sp_gemma2"
compare tp2sp_gemma2 "$TMP/one_gemma2" "$TMP/tp2sp_gemma2"
run pp2_gemma2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/gemma2" "${common[@]}" --pp_size 2 \
  --output_dir "$TMP/pp2_gemma2"
compare pp2_gemma2 "$TMP/one_gemma2" "$TMP/pp2_gemma2"
run cp2_gemma2 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/gemma2" "${common[@]}" --cp_size 2 \
  --output_dir "$TMP/cp2_gemma2"
has cp2_gemma2_message "context parallelism does not soft-cap attention scores" err

run one_gemma3 0 "$SWIFT" sft --model "$TMP/gemma3_text" "${common[@]}" --output_dir "$TMP/one_gemma3"
template_is "$TMP/one_gemma3" gemma3_text
run ring2_gemma3 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/gemma3_text" "${common[@]}" --cp_size 2 \
  --output_dir "$TMP/ring2_gemma3"
compare ring2_gemma3 "$TMP/one_gemma3" "$TMP/ring2_gemma3"
run ulysses2_gemma3 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/gemma3_text" "${common[@]}" \
  --sequence_parallel_size 2 --output_dir "$TMP/ulysses2_gemma3"
compare ulysses2_gemma3 "$TMP/one_gemma3" "$TMP/ulysses2_gemma3"

# LoRA (base's --train_type full made lora), then the adapter and the merged model answer alike; transformers loads
# the merged folder.
run lora_gemma3 0 "$SWIFT" sft --model "$TMP/gemma3_text" "${base[@]/full/lora}" --per_device_train_batch_size 2 \
  --max_steps 4 --save_steps 4 --lora_rank 4 --target_modules all-linear --output_dir "$TMP/lora_gemma3"
adapter_answers_like_merge lora_gemma3 "$TMP/lora_gemma3/checkpoint-4" Gemma3ForCausalLM
finish gemma
