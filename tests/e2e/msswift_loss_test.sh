#!/usr/bin/env bash
# End-to-end against ms-swift itself: the same `sft` command line, pasted into both tools on a tiny random Qwen3
# (the qwen3 template: its empty <think></think> block carries no loss, ms-swift's automatic
# "+ignore_empty_think"), and with GaLore's optimizer, must log the same loss, grad norm, token accuracy and learning
# rate step for step; then Qwen3-MoE, Mixtral, Gemma 2, Gemma 3, DeepSeek-V3, DeepSeek-V2, Phi-3 and GLM-4 models.
# ms-swift (PyPI, installed by scripts/setup.sh --tests) runs on the CPU, offline. Usage: msswift_loss_test.sh swift
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json swift.cli.sft
MS_SWIFT="$(dirname "$PY")/swift"
[ -x "$MS_SWIFT" ] || skip_suite "no ms-swift 'swift' command beside $PY (run scripts/setup.sh --tests)"

run export 0 "$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 7 --output_dir "$TMP/m"
# Plain chat (the template adds the empty think block), a system prompt, two rounds, and a reply that thinks.
cat > "$TMP/d.jsonl" <<'J'
{"messages": [{"role": "user", "content": "What is the capital of France?"}, {"role": "assistant", "content": "The capital of France is Paris."}]}
{"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Blue."}]}
{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help you today?"}, {"role": "user", "content": "Count to three."}, {"role": "assistant", "content": "One, two, three."}]}
{"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "<think>\nSimple.\n</think>\n\n4"}]}
J

# The command line both tools run (one batch of all four rows per step, so data order cannot matter).
common=(sft --model "$TMP/m" --model_type qwen3 --template qwen3 --tuner_type full --dataset "$TMP/d.jsonl"
  --max_steps 3 --per_device_train_batch_size 4 --learning_rate 1e-3 --logging_steps 1 --save_steps 100
  --torch_dtype float32 --dataloader_num_workers 0 --dataset_num_proc 1 --split_dataset_ratio 0 --seed 42)
ms_sft=("$MS_SWIFT" sft)  # how ms-swift's sft is started (see the GaLore case)
both() {  # both NAME EXTRA_FLAGS...: runs ms-swift and swift, then compares their logging.jsonl
  local name="$1"; shift
  CUDA_VISIBLE_DEVICES= HF_HUB_OFFLINE=1 MODELSCOPE_OFFLINE=1 OMP_NUM_THREADS=1 \
    run "${name}_ms_swift" 0 "${ms_sft[@]}" "${common[@]:1}" --output_dir "$TMP/ms_$name" "$@"
  OMP_NUM_THREADS=1 run "${name}_swift" 0 "$SWIFT" "${common[@]}" --output_dir "$TMP/sw_$name" "$@"
  "$PY" - "$TMP/ms_$name" "$TMP/sw_$name" "$name" <<'P' && ok || bad "$name: swift's log differs from ms-swift's"
import glob, json, sys
def rows(d):
    log = glob.glob(d + "/v*/logging.jsonl")
    return [r for r in map(json.loads, open(log[0])) if "loss" in r]
ms, sw = rows(sys.argv[1]), rows(sys.argv[2])
assert len(ms) == len(sw) == 3, (len(ms), len(sw))
for a, b in zip(ms, sw):
    for key in ("loss", "grad_norm", "token_acc", "learning_rate") + (("aux_loss",) if "aux" in sys.argv[3] else ()):
        assert abs(a[key] - b[key]) <= 1e-5 + 1e-4 * abs(a[key]), (sys.argv[3], a["global_step/max_steps"], key, a[key], b[key])
print(f"{sys.argv[3]}: step 1 loss ms-swift {ms[0]['loss']:.6f} swift {sw[0]['loss']:.6f}; "
      f"step 3 loss {ms[2]['loss']:.6f} / {sw[2]['loss']:.6f}")
P
}
# LoRA (--lora_dropout 0, all-linear unless given): the random A matrices differ between the tools, so the adapters
# are compared by their tensors' names and shapes and adapter_config.json's targets, rank and alpha patterns, and
# step 1's loss (B starts at zero).
same_adapter() {  # same_adapter NAME EXTRA_FLAGS...
  local name="$1"; shift
  local lora=(--tuner_type lora --lora_rank 4 --lora_alpha 8 --lora_dropout 0 --max_steps 1 "$@")
  CUDA_VISIBLE_DEVICES= HF_HUB_OFFLINE=1 MODELSCOPE_OFFLINE=1 OMP_NUM_THREADS=1 \
    run "${name}_ms_swift" 0 "${ms_sft[@]}" "${common[@]:1}" --output_dir "$TMP/ms_$name" "${lora[@]}"
  OMP_NUM_THREADS=1 run "${name}_swift" 0 "$SWIFT" "${common[@]}" --output_dir "$TMP/sw_$name" "${lora[@]}"
  "$PY" - "$TMP/ms_$name" "$TMP/sw_$name" "$name" <<'P' && ok || bad "$name: swift's adapter or loss differs from ms-swift's"
import glob, json, sys
from safetensors import safe_open
def adapter(d):
    folder = glob.glob(d + "/v*/checkpoint-*/")[0]
    with safe_open(folder + "adapter_model.safetensors", "pt") as f:
        shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    c = json.load(open(folder + "adapter_config.json"))
    return shapes, {k: sorted(c[k] or []) if k.startswith("target") else c[k]
                    for k in ("target_modules", "target_parameters", "rank_pattern", "alpha_pattern", "r", "lora_alpha")}
def loss(d):
    return [r for r in map(json.loads, open(glob.glob(d + "/v*/logging.jsonl")[0])) if "loss" in r][0]["loss"]
(ms, ms_config), (sw, sw_config) = adapter(sys.argv[1]), adapter(sys.argv[2])
assert ms == sw, sorted(set(ms.items()) ^ set(sw.items()))
assert ms_config == sw_config, (ms_config, sw_config)
assert abs(loss(sys.argv[1]) - loss(sys.argv[2])) <= 1e-4 * abs(loss(sys.argv[1])), (loss(sys.argv[1]), loss(sys.argv[2]))
print(f"{sys.argv[3]}: {len(ms)} adapter tensors with the same names and shapes, {sw_config}; step 1 loss {loss(sys.argv[2]):.6f}")
P
}
both default                                   # default+ignore_empty_think (ms-swift adds it for qwen3)
both last_round --loss_scale last_round        # last_round+ignore_empty_think
both keep_think --disable_ignore_empty_think true  # the empty think block trained, as ms-swift's switch says
# GaLore (--use_galore), rank 8, the projection recomputed at steps 1 and 3: ms-swift 4.6 builds its GaLore optimizer
# only through tests/e2e/msswift_galore.py (without it, its --use_galore trains with plain AdamW; see the driver).
ms_sft=("$PY" "$ROOT/tests/e2e/msswift_galore.py")
both galore --use_galore true --galore_rank 8 --galore_update_proj_gap 2 --galore_scale 0.5 \
  --galore_target_modules q_proj k_proj v_proj o_proj gate_proj up_proj down_proj
ms_sft=("$MS_SWIFT" sft)
# Qwen3-MoE (4 experts, top 2; layer 0 dense, layer 1 sparse): full training as ms-swift trains it (its default
# --router_aux_loss_coef 0: no auxiliary loss).
mkdir -p "$TMP/moe_config" && cp "$ROOT/configs/models/qwen3-tiny/"* "$TMP/moe_config/"
"$PY" - "$TMP/moe_config/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], num_experts=4, num_experts_per_tok=2,
         moe_intermediate_size=32, norm_topk_prob=True, mlp_only_layers=[0], decoder_sparse_step=1)
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
run export_moe 0 "$SWIFT" export --model "$TMP/moe_config" --init_strategy normal --seed 7 --output_dir "$TMP/moe"
dense=("${common[@]}")
common=("${dense[@]}")
common[2]="$TMP/moe"; common[4]=qwen3_moe  # --model, --model_type
both moe
# ms-swift's all-linear LoRA on it: PEFT 0.20 turns gate_proj/up_proj/down_proj (the dense layer's names) into the
# experts' stacked weights, gate_up_proj at rank 2r and alpha 2 alpha, and leaves the dense MLP alone; with
# ms-swift's default --lora_dropout 0.05 PEFT refuses (ms-swift 4.6 exits with its ValueError), swift exits 2.
same_adapter moe_lora
OMP_NUM_THREADS=1 run moe_lora_dropout 2 "$SWIFT" "${common[@]}" --tuner_type lora --output_dir "$TMP/sw_moe_dropout"
has moe_lora_dropout_message "needs --lora_dropout 0" err
# With the router's load-balancing loss (ms-swift: output_router_logits, transformers adds coef x aux to the loss):
# the loss, and aux_loss itself, as ms-swift logs them, and its gradient. Without activation checkpointing: ms-swift
# on one process checkpoints with use_reentrant=True, whose no-grad first pass leaves the router logits transformers
# records without a gradient, so there the aux loss is logged but never reaches the routers (its DDP runs,
# use_reentrant=False, and swift's, which returns the logits from the checkpointed layer, train them).
both moe_aux --router_aux_loss_coef 0.05 --gradient_checkpointing false
# Mixtral (every layer sparse, its files in Mixtral's names), the qwen3 tokenizer and template (its own, llama, needs
# Llama 2's tokens), with the load-balancing loss as above.
mkdir -p "$TMP/mixtral_config" && cp "$ROOT/configs/models/qwen3-tiny/"* "$TMP/mixtral_config/"
"$PY" - "$TMP/mixtral_config/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
for key in ("head_dim", "attention_bias", "layer_types", "max_window_layers", "use_sliding_window"):
    c.pop(key, None)
c.update(model_type="mixtral", architectures=["MixtralForCausalLM"], num_local_experts=4, num_experts_per_tok=2,
         intermediate_size=64, sliding_window=None, router_jitter_noise=0.0)
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
run export_mixtral 0 "$SWIFT" export --model "$TMP/mixtral_config" --init_strategy normal --seed 7 --output_dir "$TMP/mixtral"
common[2]="$TMP/mixtral"; common[4]=mixtral  # --model, --model_type (the template stays qwen3)
both mixtral_aux --router_aux_loss_coef 0.05 --gradient_checkpointing false
common=("${dense[@]}")
# Gemma 2 and Gemma 3 (the gemma_style tokenizer: Gemma's pipeline and turn tokens) with the gemma and gemma3_text
# templates (tests/e2e/make_gemma_config.py: soft-capping that bites). Gemma 2 runs with --attn_impl
# eager on both sides: transformers' sdpa path (ms-swift's default for gemma2) drops the attention soft-capping, which
# swift always applies, as eager and flash attention do. ms-swift picks eager for Gemma 3 itself.
for fam in gemma2 gemma3_text; do
  "$PY" "$ROOT/tests/e2e/make_gemma_config.py" "$fam" "$TMP/${fam}_config" || bad "make_gemma_config $fam"
  run "export_$fam" 0 "$SWIFT" export --model "$TMP/${fam}_config" --init_strategy normal --seed 7 --output_dir "$TMP/$fam"
done
common[2]="$TMP/gemma2"; common[4]=gemma2; common[6]=gemma  # --model, --model_type, --template
both gemma2 --attn_impl eager
common[2]="$TMP/gemma3_text"; common[4]=gemma3_text; common[6]=gemma3_text
both gemma3_text
# DeepSeek-V3 and V2 (tests/e2e/make_deepseek_config.py: latent attention, a dense layer then sparse ones with shared
# experts; V3's sigmoid router within groups, its weights scaled by 2.5) with their templates (the deepseek_style
# tokenizer), full training; V3 with --router_aux_loss_coef too, which transformers' DeepSeek ignores (no aux loss).
for fam in deepseek_v3 deepseek_v2; do
  "$PY" "$ROOT/tests/e2e/make_deepseek_config.py" "$fam" "$TMP/${fam}_config" || bad "make_deepseek_config $fam"
  run "export_$fam" 0 "$SWIFT" export --model "$TMP/${fam}_config" --init_strategy normal --seed 7 --output_dir "$TMP/$fam"
done
common[2]="$TMP/deepseek_v3"; common[4]=deepseek_v3; common[6]=deepseek_v2_5
both deepseek_v3
both deepseek_v3_router_coef --router_aux_loss_coef 0.05
common[2]="$TMP/deepseek_v2"; common[4]=deepseek_v2; common[6]=deepseek
both deepseek_v2
# Phi-3 (tests/e2e/make_family_config.py: fused qkv_proj/gate_up_proj; phi3 with longrope whose pretraining length 16 the
# rows pass, over 0.75 of each head, tied; phi4 on Phi-4's tokenizer and template): full training.
for fam in phi3 phi4 glm4; do
  "$PY" "$ROOT/tests/e2e/make_family_config.py" "$fam" "$TMP/${fam}_config" || bad "make_family_config $fam"
  run "export_$fam" 0 "$SWIFT" export --model "$TMP/${fam}_config" --init_strategy normal --seed 7 --output_dir "$TMP/$fam"
done
common[2]="$TMP/phi3"; common[4]=phi3; common[6]=phi3
both phi3
# LoRA on all linear layers, the fused ones under PEFT's names.
same_adapter phi3_lora
common[2]="$TMP/phi4"; common[4]=phi4; common[6]=phi4
both phi4
# GLM-4-0414 (make_family_config.py glm4: the glm4 template's [gMASK]<sop> and <|user|> after the last reply; GLM's
# sandwich norms and paired RoPE): full training, and all-linear LoRA (q/k/v with biases, the fused gate_up_proj).
common[2]="$TMP/glm4"; common[4]=glm4; common[6]=glm4
both glm4
same_adapter glm4_lora
common=("${dense[@]}")
# swift rlhf scores replies under the same rule (ms-swift: last_round+ignore_empty_think): DPO's loss, grad norm,
# rewards and log probabilities step for step. --gradient_accumulation_steps 1 is given because ms-swift's
# automatic value (16 / batch = 4 here) meets a dataset smaller than one window: transformers then divides DPO's
# loss by 4 although the window holds one micro-batch (0.1733 logged for ln 2), where swift divides by what the
# window holds.
sed 's/}]}$/}], "rejected_response": "I do not know."}/' "$TMP/d.jsonl" > "$TMP/p.jsonl"
dpo=(rlhf --rlhf_type dpo "${common[@]:1}" --dataset "$TMP/p.jsonl" --gradient_accumulation_steps 1)
CUDA_VISIBLE_DEVICES= HF_HUB_OFFLINE=1 MODELSCOPE_OFFLINE=1 OMP_NUM_THREADS=1 \
  run dpo_ms_swift 0 "$MS_SWIFT" "${dpo[@]}" --output_dir "$TMP/ms_dpo"
OMP_NUM_THREADS=1 run dpo_swift 0 "$SWIFT" "${dpo[@]}" --output_dir "$TMP/sw_dpo"
"$PY" - "$TMP/ms_dpo" "$TMP/sw_dpo" <<'P' && ok || bad "dpo: swift's log differs from ms-swift's"
import glob, json, sys
def rows(d):
    return [r for r in map(json.loads, open(glob.glob(d + "/v*/logging.jsonl")[0])) if "rewards/chosen" in r]
ms, sw = rows(sys.argv[1]), rows(sys.argv[2])
assert len(ms) == len(sw) == 3, (len(ms), len(sw))
for a, b in zip(ms, sw):
    for key in ("loss", "grad_norm", "learning_rate", "rewards/chosen", "rewards/rejected", "rewards/margins",
                "rewards/accuracies", "logps/chosen", "logps/rejected"):
        assert abs(a[key] - b[key]) <= 1e-5 + 1e-4 * abs(a[key]), (a["global_step/max_steps"], key, a[key], b[key])
print(f"dpo: step 1 logps/chosen ms-swift {ms[0]['logps/chosen']:.5f} swift {sw[0]['logps/chosen']:.5f}; "
      f"step 3 loss {ms[2]['loss']:.6f} / {sw[2]['loss']:.6f}")
P
grep -q '"loss_scale": "default+ignore_empty_think"' "$TMP"/ms_default/v*/args.json && ok || bad "ms-swift's args.json lacks the automatic +ignore_empty_think"
grep -q '"loss_scale": "default+ignore_empty_think"' "$TMP"/sw_default/v*/args.json && ok || bad "swift's args.json lacks the automatic +ignore_empty_think"

finish msswift_loss
