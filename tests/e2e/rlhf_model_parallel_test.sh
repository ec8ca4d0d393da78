#!/usr/bin/env bash
# End-to-end: swift rlhf (and megatron rlhf) under pipeline, sequence, context and expert parallelism on the CPU over
# c10d (Gloo); plain tensor parallelism is in tensor_parallel_test.sh. The reference's passes (and KTO's policy pass
# over its KL rows) run through every stage before the policy's 1F1B schedule.
# Usage: rlhf_model_parallel_test.sh path/to/swift
#  - PP=2 equals one rank, every logged metric and the final weights (or adapter): DPO with its loaded reference
#    split over the stages as the policy, DPO with LoRA (the adapter-off reference) on a model with tied embeddings,
#    ORPO (masked pads and positions passed through the stages), KTO (its KL rows) and a reward model;
#  - TP2 x PP2 on 4 ranks (DPO, the reference split both ways) and PP2 interleaved (DPO with LoRA) equal one rank;
#  - evaluation (DPO's eval metrics, its reference through the stages) equals one rank's;
#  - megatron rlhf runs the same at --pp_size 2;
#  - TP2 with --sequence_parallel (rows padded to a multiple of 2, labels shifted) equals one rank: DPO with its loaded
#    reference, ORPO (the logits' means over the collated columns only) and KTO;
#  - on a Qwen3-MoE model: DPO with LoRA at EP2, DPO full at EP2 (the loaded reference's experts split alike) and at
#    TP2 x EP2 with sequence parallelism equal DP2 (EP splits the experts inside data parallelism);
#  - context parallelism (each row's sums over the ranks holding its shares): DPO and KTO at CP2 (ring), DPO with
#    LoRA under Ulysses (--sequence_parallel_size 2) and DPO at TP2 x CP2 equal one rank; DP2 x CP2 with gradient
#    accumulation and evaluation equals DP2;
#  - a reward model (its score at each row's last token) at TP2 with --sequence_parallel, at CP2 and at TP2 (with
#    sequence parallelism) x CP2 equals one rank, and with LoRA under Ulysses;
#  - a --ref_model whose layers differ from the policy's stops with exit 2, naming it; so do CPO/SimPO/ORPO under
#    --cp_size or --sequence_parallel_size.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

# Qwen2 with 4 layers and an untied head; Qwen3 with 2 layers and tied embeddings.
export_models 4
write_kto_data
pp_case() { rlhf_layout_case pp2 2 "--pp_size 2" "$@"; }  # pp_case NAME MODEL FILE FLAGS...: one rank, then PP=2
pp_case dpo qwen2 model.safetensors --rlhf_type dpo --train_type full "${pref[@]}"
has dpo_reference "reference model: $TMP/qwen2 (frozen)" err
has dpo_stages "pipeline: 2 stages of 2, 2 layers" err
lora=(--rlhf_type dpo --train_type lora --target_modules all-linear --lora_rank 4 --lora_alpha 8 "${pref[@]/1e-3/1e-2}")
pp_case dpo_lora qwen3 adapter_model.safetensors "${lora[@]}"
has dpo_lora_tied "(the embedding is tied: the last stage keeps a copy as its head)" err
pp_case orpo qwen2 model.safetensors --rlhf_type orpo --train_type full "${pref[@]}"
kto=("${pref[@]}")
kto[1]="$TMP/kto.jsonl"
pp_case kto qwen2 model.safetensors --rlhf_type kto --train_type full "${kto[@]}"
pp_case rm qwen2 model.safetensors --rlhf_type rm --train_type full "${pref[@]}"

# TP2 x PP2: the reference split over the stages and within each.
run tp2pp2_dpo 0 env NPROC_PER_NODE=4 "$SWIFT" rlhf --model "$TMP/qwen2" --rlhf_type dpo --train_type full "${pref[@]}" \
  --tp_size 2 --pp_size 2 --output_dir "$TMP/tp2pp2_dpo"
has tp2pp2_dpo_layout "model parallel: tp 2 x pp 2 x dp 1" err
compare_rlhf tp2pp2_dpo "$TMP/one_dpo" "$TMP/tp2pp2_dpo" model.safetensors
# Interleaved: 2 virtual stages per rank; 2 micro-batches per step (a multiple of --pp_size).
rebatch() {  # rebatch NAME PER_DEVICE ACCUMULATION FLAGS...: NAME=(FLAGS with those two values replaced)
  local -n out="$1"
  local per_device="$2" accumulation="$3"
  shift 3
  out=()
  while (($#)); do
    case "$1" in
      --per_device_train_batch_size) out+=("$1" "$per_device"); shift 2 ;;
      --gradient_accumulation_steps) out+=("$1" "$accumulation"); shift 2 ;;
      *) out+=("$1"); shift ;;
    esac
  done
}
rebatch lora_ga 1 2 "${lora[@]}"
run one_lora_ga 0 "$SWIFT" rlhf --model "$TMP/qwen2" "${lora_ga[@]}" --output_dir "$TMP/one_lora_ga"
run pp2_interleaved 0 env NPROC_PER_NODE=2 "$SWIFT" rlhf --model "$TMP/qwen2" "${lora_ga[@]}" --pp_size 2 \
  --virtual_pipeline_model_parallel_size 2 --output_dir "$TMP/pp2_interleaved"
has pp2_interleaved_stages "pipeline: 4 virtual stages (2 per rank, interleaved) of 1, 1, 1, 1 layers" err
compare_rlhf pp2_interleaved "$TMP/one_lora_ga" "$TMP/pp2_interleaved" adapter_model.safetensors

# Evaluation: DPO's eval metrics, the reference's pass through the stages first.
compare_evals() {  # compare_evals NAME DIR_A DIR_B: the two evaluations' metrics within 1e-5
  "$PY" - "$2" "$3" <<'P' && ok || bad "$1: the eval metrics differ"
import json, sys
evals = lambda d: [r for r in map(json.loads, open(f"{d}/logging.jsonl")) if "eval_loss" in r]
a, b = evals(sys.argv[1]), evals(sys.argv[2])
assert len(a) == len(b) == 2, (a, b)
keys = [k for k in a[0] if k.startswith("eval_") and isinstance(a[0][k], float) and "runtime" not in k and "per_second" not in k]
assert "eval_rewards/margins" in keys, keys
worst = max(abs(x[k] - y[k]) / max(1.0, abs(x[k])) for x, y in zip(a, b) for k in keys)
assert worst < 1e-5, (worst, a, b)
print(f"{len(keys)} eval metrics within {worst:.1e}")
P
}
eval_flags=(--rlhf_type dpo --train_type full "${pref[@]}" --val_dataset swift/self-cognition-preference#6 --eval_steps 2)
run one_eval 0 "$SWIFT" rlhf --model "$TMP/qwen2" "${eval_flags[@]}" --output_dir "$TMP/one_eval"
run pp2_eval 0 env NPROC_PER_NODE=2 "$SWIFT" rlhf --model "$TMP/qwen2" "${eval_flags[@]}" --pp_size 2 --output_dir "$TMP/pp2_eval"
compare_evals pp2_eval "$TMP/one_eval" "$TMP/pp2_eval"

# ms-swift's Megatron entry point.
run megatron_dpo 0 env NPROC_PER_NODE=2 "$(dirname "$SWIFT")/megatron" rlhf --rlhf_type dpo --model "$TMP/qwen2" \
  --train_type full --pp_size 2 "${pref[@]}" --output_dir "$TMP/megatron_dpo"
compare_rlhf megatron_dpo "$TMP/one_dpo" "$TMP/megatron_dpo" model.safetensors

# Sequence parallelism: the rows padded to a multiple of --tp_size, the labels shifted (the batch's), per-row fields
# (KTO's desirable) kept.
sp_case() { rlhf_layout_case sp 2 "--tp_size 2 --sequence_parallel true" "$@"; }  # against the PP cases' one rank
sp_case dpo qwen2 model.safetensors --rlhf_type dpo --train_type full "${pref[@]}"
sp_case orpo qwen2 model.safetensors --rlhf_type orpo --train_type full "${pref[@]}"
sp_case kto qwen2 model.safetensors --rlhf_type kto --train_type full "${kto[@]}"
# A reward model's score head is whole on every rank: the gather of the last hidden states gives each rank its part
# of the gradient back, not the sum.
sp_case rm qwen2 model.safetensors --rlhf_type rm --train_type full "${pref[@]}"

# Context parallelism: each row split over the ranks (ring attention, or Ulysses with --sequence_parallel_size), its
# sums over them.
cp_case() { rlhf_layout_case cp2 2 "--cp_size 2" "$@"; }
cp_case dpo qwen2 model.safetensors --rlhf_type dpo --train_type full "${pref[@]}"
has cp2_dpo "context parallelism: each row split over 2 ranks" err
cp_case kto qwen2 model.safetensors --rlhf_type kto --train_type full "${kto[@]}"
rlhf_layout_case ulysses2 2 "--sequence_parallel_size 2" dpo_lora qwen3 adapter_model.safetensors "${lora[@]}"
has ulysses2_dpo_lora "attention by Ulysses all-to-all" err
# A reward model: each row's last token is on one rank of the group, its score summed over the group. Its gradient
# enters at one position per row, so many weights' gradients are near AdamW's eps (1e-6), where the first update
# lr * g / (|g| + eps) turns the ring's fp32 reordering (1.2e-7 in the step-1 grad norm) into 1.6e-5 in a weight
# after one step; eps 1e-4 keeps that amplification out (metrics 5.8e-6, weights 1e-6 by step 4). Under Ulysses the
# attention sums as one rank's (full fine-tuning measured equal at step 1 with eps 1e-6); below with LoRA.
cp_case rm_eps qwen2 model.safetensors --rlhf_type rm --train_type full "${pref[@]/1e-6/1e-4}"
# At eps 1e-6 the first step, before any update, equals one rank's (loss, grad norm, rewards: measured 1.8e-7).
run cp2_rm 0 env NPROC_PER_NODE=2 "$SWIFT" rlhf --model "$TMP/qwen2" --rlhf_type rm --train_type full "${pref[@]}" \
  --cp_size 2 --output_dir "$TMP/cp2_rm"
"$PY" - "$TMP/one_rm" "$TMP/cp2_rm" <<'P' && ok || bad "cp2_rm: the first step differs from one rank"
import json, sys
first = lambda d: next(json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l)
a, b = first(sys.argv[1]), first(sys.argv[2])
keys = [k for k in a if k in ("loss", "grad_norm") or k.startswith("rewards/")]
worst = max(abs(a[k] - b[k]) / max(1.0, abs(a[k])) for k in keys)
assert len(keys) == 6 and worst < 1e-6, (worst, a, b)
P
# Both at once: TP2 with sequence parallelism (the score head's gradient unsummed) inside CP2. Two summation orders
# (TP's and the ring's): step 1 within 1.8e-7 of one rank, the weights within 9e-7 by step 4, a reward 1.3e-5.
RLHF_METRIC_TOLERANCE=2e-5
rlhf_layout_case tp2sp_cp2 4 "--tp_size 2 --sequence_parallel true --cp_size 2" rm_eps qwen2 model.safetensors \
  --rlhf_type rm --train_type full "${pref[@]/1e-6/1e-4}"
unset RLHF_METRIC_TOLERANCE
rm_lora=(--rlhf_type rm --train_type lora --target_modules all-linear --lora_rank 4 --lora_alpha 8 "${pref[@]/1e-3/1e-2}")
rlhf_layout_case ulysses2 2 "--sequence_parallel_size 2" rm_lora qwen3 adapter_model.safetensors "${rm_lora[@]}"
# DP2 x CP2 with 2 micro-batches per step and evaluation: each rank's micro-batch counts 1/2 of its rows' loss;
# against DP2 (the same rows per rank, so the per-rank token means of logits/* agree too).
rebatch dpcp_ga 1 2 "${eval_flags[@]}"
run dp2_ga 0 env NPROC_PER_NODE=2 "$SWIFT" rlhf --model "$TMP/qwen2" "${dpcp_ga[@]}" --output_dir "$TMP/dp2_ga"
run dp2cp2_ga 0 env NPROC_PER_NODE=4 "$SWIFT" rlhf --model "$TMP/qwen2" "${dpcp_ga[@]}" --cp_size 2 --output_dir "$TMP/dp2cp2_ga"
has dp2cp2_ga_layout "x cp 2 x pp 1 x dp 2" err
compare_rlhf dp2cp2_ga "$TMP/dp2_ga" "$TMP/dp2cp2_ga" model.safetensors
compare_evals dp2cp2_eval "$TMP/dp2_ga" "$TMP/dp2cp2_ga"

# Two summation orders at once (the split vocabulary's and the ring's): AdamW (eps 1e-6, lr 1e-3) carries their fp32
# noise to 1.02e-5 in a weight by step 4 (TP2 alone 9.1e-6, CP2 alone 5.3e-6; the metrics stay within 3.9e-6).
RLHF_WEIGHT_TOLERANCE=2e-5
rlhf_layout_case tp2cp2 4 "--tp_size 2 --cp_size 2" dpo qwen2 model.safetensors --rlhf_type dpo --train_type full "${pref[@]}"
unset RLHF_WEIGHT_TOLERANCE

# Expert parallelism on a mixture-of-experts model: the adapter-off reference and a loaded one, its experts split.
# EP splits the experts inside data parallelism (each rank its own rows), so the baseline is DP2 (2 ranks, the same
# rows per rank): the per-rank token means (logits/*) then agree too.
export_moe_model
moe_case() {  # moe_case NAME BASELINE FILE RANKS LAYOUT_FLAGS... -- FLAGS...: DP2 (once per BASELINE), then the layout
  local name="$1" baseline="$2" file="$3" ranks="$4"; shift 4
  local layout=()
  while [ "$1" != "--" ]; do layout+=("$1"); shift; done
  shift
  [ -d "$TMP/dp2_moe_$baseline" ] || run "dp2_moe_$baseline" 0 env NPROC_PER_NODE=2 "$SWIFT" rlhf --model "$TMP/moe" "$@" \
    --output_dir "$TMP/dp2_moe_$baseline"
  run "moe_$name" 0 env NPROC_PER_NODE="$ranks" "$SWIFT" rlhf --model "$TMP/moe" "$@" "${layout[@]}" \
    --output_dir "$TMP/moe_$name"
  compare_rlhf "moe_$name" "$TMP/dp2_moe_$baseline" "$TMP/moe_$name" "$file"
}
moe_lora=(--rlhf_type dpo --train_type lora --target_modules all-linear --lora_rank 4 --lora_alpha 8 "${pref[@]/1e-3/1e-2}")
moe_case ep2_lora lora adapter_model.safetensors 2 --ep_size 2 -- "${moe_lora[@]}"
moe_case ep2_full full model.safetensors 2 --ep_size 2 -- --rlhf_type dpo --train_type full "${pref[@]}"
has moe_ep2_full_experts "expert parallel: the experts of each sparse layer split over 2 ranks" err
moe_case tp2ep2 full model.safetensors 4 --tp_size 2 --sequence_parallel true --ep_size 2 -- \
  --rlhf_type dpo --train_type full "${pref[@]}"

# A reference of another depth cannot share the policy's stages; ORPO under context parallelism is refused before
# loading.
run other_reference 2 env NPROC_PER_NODE=2 "$SWIFT" rlhf --model "$TMP/qwen2" --ref_model "$TMP/qwen3" --rlhf_type dpo \
  --train_type full "${pref[@]}" --pp_size 2 --output_dir "$TMP/x1"
has other_reference "under --pp_size 2 a reference model is split over the policy's stages, but it has 2 layers and a tied head where the policy has 4" err
run orpo_cp 2 env NPROC_PER_NODE=2 "$SWIFT" rlhf --model "$TMP/qwen2" --rlhf_type orpo "${pref[@]}" --cp_size 2 --output_dir "$TMP/x2"
has orpo_cp "swift rlhf --rlhf_type orpo with context parallelism (--cp_size/--sequence_parallel_size: 2 ranks) is not available yet (its logits metrics average every position, pads masked" err
run simpo_ulysses 2 env NPROC_PER_NODE=2 "$SWIFT" rlhf --model "$TMP/qwen2" --rlhf_type simpo "${pref[@]}" \
  --sequence_parallel_size 2 --output_dir "$TMP/x3"
has simpo_ulysses "swift rlhf --rlhf_type simpo with context parallelism (--cp_size/--sequence_parallel_size: 2 ranks)" err

finish rlhf_model_parallel
