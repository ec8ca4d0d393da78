#!/usr/bin/env bash
# End-to-end: InternLM2 and InternLM3 through the binary, on tiny random models (tests/e2e/make_family_config.py:
# config.json as their remote code reads it; the internlm2_style tokenizer). Usage: internlm_test.sh swift
#  - full training picks ms-swift's internlm2 template for both, and two pipeline stages give one rank's losses, grad
#    norms and final weights (InternLM2's tok_embeddings on the first stage, its output head on the last);
#  - two tensor-parallel ranks (each whole key/value groups of the fused wqkv, with sequence parallelism too) give one
#    rank's run;
#  - LoRA on all linear layers lands on wqkv, wo, w1, w2, w3 under InternLM2's names; the adapter and the merged folder
#    (its tensors named as the base's) answer alike.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json safetensors
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

export_family make_family_config.py internlm2 internlm3

run one_internlm2 0 "$SWIFT" sft --model "$TMP/internlm2" "${common[@]}" --output_dir "$TMP/one_internlm2"
template_is "$TMP/one_internlm2" internlm2
run one_internlm3 0 "$SWIFT" sft --model "$TMP/internlm3" "${common[@]}" --max_steps 1 --save_steps 1 \
  --output_dir "$TMP/one_internlm3"
template_is "$TMP/one_internlm3" internlm2
run pp2_internlm2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/internlm2" "${common[@]}" --pp_size 2 \
  --output_dir "$TMP/pp2_internlm2"
compare pp2_internlm2 "$TMP/one_internlm2" "$TMP/pp2_internlm2"
run tp2_internlm2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/internlm2" "${common[@]}" --tp_size 2 \
  --output_dir "$TMP/tp2_internlm2"
compare tp2_internlm2 "$TMP/one_internlm2" "$TMP/tp2_internlm2"
run tp2_sp_internlm2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/internlm2" "${common[@]}" --tp_size 2 \
  --sequence_parallel true --output_dir "$TMP/tp2_sp_internlm2"
compare tp2_sp_internlm2 "$TMP/one_internlm2" "$TMP/tp2_sp_internlm2"
"$PY" - "$TMP/one_internlm2/checkpoint-4" <<'P' && ok || bad "one_internlm2: the checkpoint's tensors are not InternLM2's names"
import glob, sys
from safetensors import safe_open
names = set()
for f in glob.glob(sys.argv[1] + "/*.safetensors"):
    with safe_open(f, "pt") as s:
        names |= set(s.keys())
want = {"model.tok_embeddings.weight", "output.weight", "model.layers.1.attention.wqkv.weight", "model.layers.1.attention.wo.weight",
        "model.layers.1.feed_forward.w1.weight", "model.layers.1.attention_norm.weight", "model.layers.1.ffn_norm.weight"}
assert want <= names and not any("self_attn" in n or "embed_tokens" in n for n in names), sorted(names)
P

run lora_internlm2 0 "$SWIFT" sft --model "$TMP/internlm2" "${base[@]/full/lora}" --per_device_train_batch_size 2 \
  --max_steps 4 --save_steps 4 --lora_rank 4 --target_modules all-linear --output_dir "$TMP/lora_internlm2"
"$PY" -c "import json, sys; c = json.load(open('$TMP/lora_internlm2/checkpoint-4/adapter_config.json')); sys.exit(sorted(c['target_modules']) != ['w1', 'w2', 'w3', 'wo', 'wqkv'])" \
  && ok || bad "lora_internlm2: adapter_config.json's target_modules are not InternLM2's (ms-swift's all-linear)"
adapter_answers_like_merge lora_internlm2 "$TMP/lora_internlm2/checkpoint-4" ""
finish internlm
