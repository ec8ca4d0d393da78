#!/usr/bin/env bash
# End-to-end: DeepSeek-V2 and V3 through the binary, on tiny random models (tests/e2e/make_deepseek_config.py: the
# deepseek_style tokenizer, latent attention, a dense layer then two sparse ones with shared experts). Usage:
# deepseek_test.sh swift
#  - full training picks the family's template by itself (V3: deepseek_v2_5, V2: deepseek) and logs expert_load_max;
#  - V3 over two expert-parallel ranks and over two pipeline stages gives one rank's losses, grad norms, token
#    accuracy and final weights (fp32, 1e-5);
#  - what is not there yet stops with exit 2 before loading: --tp_size and --cp_size (latent attention is not split),
#    --moe_aux_loss_coeff and --moe_expert_capacity_factor (the grouped sigmoid router); --router_aux_loss_coef says
#    it has no effect (transformers' DeepSeek adds no such loss, so ms-swift trains without it) and trains as without;
#  - LoRA on the latent attention and the experts' stacked weights (--target_parameters) of V3: infer with the
#    adapter, export --merge_lora, and the merged folder, which transformers loads, answers as base + adapter.
# (Logits, generation and PEFT adapters against transformers and PEFT: the parity tests.)
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors transformers
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

export_family make_deepseek_config.py deepseek_v2 deepseek_v3

run one_v2 0 "$SWIFT" sft --model "$TMP/deepseek_v2" "${common[@]}" --output_dir "$TMP/one_v2"
template_is "$TMP/one_v2" deepseek
run one_v3 0 "$SWIFT" sft --model "$TMP/deepseek_v3" "${common[@]}" --output_dir "$TMP/one_v3"
template_is "$TMP/one_v3" deepseek_v2_5
"$PY" -c "import json, sys; rows = [json.loads(l) for l in open('$TMP/one_v3/logging.jsonl')]; sys.exit(not all(1 <= r['expert_load_max'] <= 8 for r in rows if 'loss' in r))" \
  && ok || bad "one_v3: logging.jsonl lacks expert_load_max between 1 and 8"
# Two data-parallel ranks, each with half the experts, each micro-batch half as big: the same global batch.
run ep2_v3 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/deepseek_v3" "${base[@]}" --per_device_train_batch_size 1 \
  --max_steps 4 --save_steps 4 --expert_model_parallel_size 2 --output_dir "$TMP/ep2_v3"
compare ep2_v3 "$TMP/one_v3" "$TMP/ep2_v3"
run pp2_v3 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/deepseek_v3" "${common[@]}" --pp_size 2 \
  --output_dir "$TMP/pp2_v3"
compare pp2_v3 "$TMP/one_v3" "$TMP/pp2_v3"

run tp2_v3 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/deepseek_v3" "${common[@]}" --tp_size 2 \
  --sequence_parallel true --output_dir "$TMP/tp2_v3"
has tp2_v3_message "latent attention of deepseek_v3 is not split over tensor-parallel ranks" err
run cp2_v3 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/deepseek_v3" "${common[@]}" --cp_size 2 \
  --output_dir "$TMP/cp2_v3"
has cp2_v3_message "context parallelism does not run latent attention" err
run megatron_aux_v3 2 "$SWIFT" sft --model "$TMP/deepseek_v3" "${common[@]}" --moe_aux_loss_coeff 0.01 \
  --output_dir "$TMP/megatron_aux_v3"
has megatron_aux_v3_message "--moe_aux_loss_coeff on deepseek_v3 is not available yet" err
run capacity_v3 2 "$SWIFT" sft --model "$TMP/deepseek_v3" "${common[@]}" --moe_expert_capacity_factor 1.0 \
  --output_dir "$TMP/capacity_v3"
has capacity_v3_message "--moe_expert_capacity_factor on deepseek_v3 is not available yet" err
run aux_v3 0 "$SWIFT" sft --model "$TMP/deepseek_v3" "${common[@]}" --router_aux_loss_coef 0.01 --output_dir "$TMP/aux_v3"
has aux_v3_message "--router_aux_loss_coef has no effect on deepseek_v3" err
compare aux_v3 "$TMP/one_v3" "$TMP/aux_v3"

# LoRA on V3's attention and experts, then the adapter and the merged model answer alike; transformers loads the
# merged folder.
run lora_v3 0 "$SWIFT" sft --model "$TMP/deepseek_v3" "${base[@]/full/lora}" --per_device_train_batch_size 2 \
  --max_steps 4 --save_steps 4 --lora_rank 4 --lora_dropout 0 \
  --target_modules q_a_proj q_b_proj kv_a_proj_with_mqa kv_b_proj o_proj \
  --target_parameters mlp.experts.gate_up_proj mlp.experts.down_proj --output_dir "$TMP/lora_v3"
adapter_answers_like_merge lora_v3 "$TMP/lora_v3/checkpoint-4" DeepseekV3ForCausalLM
finish deepseek
