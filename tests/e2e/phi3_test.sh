#!/usr/bin/env bash
# End-to-end: Phi-3 and Phi-4 through the binary, on tiny random models (tests/e2e/make_family_config.py: fused qkv_proj
# and gate_up_proj; phi3 with longrope over 0.75 of each head and the pretraining length 16, tied; phi4 on Phi-4's
# tokenizer). Usage: phi3_test.sh swift
#  - full training picks the template by itself (phi3; phi4 where the tokenizer has <|im_sep|>), and two pipeline
#    stages give one rank's losses, grad norms and final weights;
#  - generation runs past the pretraining length (the cache recomputed with the long factors; the parity and unit
#    tests compare the tokens with decoding without a cache);
#  - what is not there yet stops with exit 2: --tp_size (the fused projections are not split), --cp_size (longrope),
#    swift deploy beyond the pretraining length (continuous batching cannot recompute one row's cache);
#  - LoRA on all linear layers (the fused ones under PEFT's names): infer with the adapter, export --merge_lora, and
#    the merged folder, which transformers loads, answers as base + adapter.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors transformers
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

export_family make_family_config.py phi3 phi4

run one_phi3 0 "$SWIFT" sft --model "$TMP/phi3" "${common[@]}" --output_dir "$TMP/one_phi3"
template_is "$TMP/one_phi3" phi3
run one_phi4 0 "$SWIFT" sft --model "$TMP/phi4" "${common[@]}" --max_steps 1 --save_steps 1 --output_dir "$TMP/one_phi4"
template_is "$TMP/one_phi4" phi4
run pp2_phi3 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/phi3" "${common[@]}" --pp_size 2 --output_dir "$TMP/pp2_phi3"
compare pp2_phi3 "$TMP/one_phi3" "$TMP/pp2_phi3"

run tp2_phi3 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/phi3" "${common[@]}" --tp_size 2 --output_dir "$TMP/tp2_phi3"
has tp2_phi3_message "fused qkv_proj / gate_up_proj of phi3 are not split over tensor-parallel ranks" err
run cp2_phi3 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/phi3" "${common[@]}" --cp_size 2 --output_dir "$TMP/cp2_phi3"
has cp2_phi3_message "context parallelism does not run longrope" err
run deploy_long 2 "$SWIFT" deploy --model "$TMP/phi3" --max_model_len 64 --port 0
has deploy_long_message "up to original_max_position_embeddings (16)" err

# Greedy generation past the pretraining length 16 (the prompt alone is about 10 tokens): the cache is recomputed with
# the long factors on the way (the parity and unit tests compare those tokens with decoding without a cache).
printf '%s\n' '{"messages": [{"role": "user", "content": "Count to three."}]}' > "$TMP/count.jsonl"
run long_answer 0 "$SWIFT" infer --model "$TMP/phi3" --val_dataset "$TMP/count.jsonl" --max_new_tokens 20 \
  --logprobs true --result_path "$TMP/long.jsonl"
"$PY" -c "import json, sys; r = json.loads(open('$TMP/long.jsonl').readline()); sys.exit(len(r['logprobs']['content']) != 20)" \
  && ok || bad "long_answer: fewer than 20 tokens generated (the run must pass the pretraining length)"

# LoRA on every linear layer, then the adapter and the merged model answer alike; transformers loads the merged folder.
run lora_phi3 0 "$SWIFT" sft --model "$TMP/phi3" "${base[@]/full/lora}" --per_device_train_batch_size 2 \
  --max_steps 4 --save_steps 4 --lora_rank 4 --target_modules all-linear --output_dir "$TMP/lora_phi3"
"$PY" -c "import json, sys; c = json.load(open('$TMP/lora_phi3/checkpoint-4/adapter_config.json')); sys.exit(sorted(c['target_modules']) != ['down_proj', 'gate_up_proj', 'o_proj', 'qkv_proj'])" \
  && ok || bad "lora_phi3: adapter_config.json's target_modules are not PEFT's fused names"
adapter_answers_like_merge lora_phi3 "$TMP/lora_phi3/checkpoint-4" Phi3ForCausalLM
finish phi3
