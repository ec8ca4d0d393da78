#!/usr/bin/env bash
# End-to-end: context parallelism (each rank holds a share of every sequence) on the CPU over c10d (Gloo), started by
# swift's launcher. Usage: context_parallel_test.sh path/to/swift
#  - ring attention (Megatron's --cp_size) at CP=2 and CP=4, and Ulysses (ms-swift's --sequence_parallel_size /
#    --use_ulysses) at 2 and at 4 ranks (4 heads, 2 KV heads: the KV heads repeated) each give one rank's losses,
#    grad norms, token accuracy and final weights (fp32, 1e-5) on the same global batch; so do packed rows (no
#    attention across samples), --padding_free rows, a sliding window (Mistral, window 8) and LoRA (its adapter
#    file one rank's);
#  - CP composes: TP2 x CP2 (also with --sequence_parallel), CP2 x PP2 and DP2 x CP2 (the distributed optimizer split over the 4 ranks of the
#    data group) on 4 ranks equal one rank;
#  - evaluation with gradient checkpointing on the tied Qwen3 logs one rank's eval_loss;
#  - a CP2 checkpoint resumes exactly at CP2 and continues at one rank as one rank's run does;
#  - on a Qwen3-MoE model the routers' load-balancing losses (Megatron's --moe_aux_loss_coeff at CP2, transformers'
#    --router_aux_loss_coef under Ulysses) and the logged aux_loss, load_balancing_loss and expert_load_max (and at
#    CP2 the tokens per expert, expert_tokens: each rank counts its own) equal one rank's;
#  - ms-swift's sequence-parallel example command line runs as written (scaled to 2 ranks);
#  - both flags at once, a size that does not divide the ranks and swift rlhf's ORPO with CP stop with exit 2 before
#    the model loads (DPO and KTO under CP: rlhf_model_parallel_test.sh).
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

export_models 4
base=(--dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests --train_type full
      --gradient_accumulation_steps 2 --learning_rate 1e-3 --logging_steps 1 --add_version false --num_threads 1
      --seed 1 --adam_epsilon 1e-6 --max_grad_norm 1.0)
common=("${base[@]}" --per_device_train_batch_size 2 --max_steps 4 --save_steps 4)

# The untied Qwen2 (4 layers, 4 heads, 2 KV heads): ring at 2 and 4 ranks, Ulysses at 2 and (--use_ulysses) 4.
run one 0 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --output_dir "$TMP/one"
run ring2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --cp_size 2 --output_dir "$TMP/ring2"
has ring2_layout "model parallel: tp 1 x cp 2 x pp 1 x dp 1" err
has ring2_split "context parallelism: each row split over 2 ranks (this rank: chunks 0 and 3 of 4), attention by ring" err
compare ring2 "$TMP/one" "$TMP/ring2"
run ring4 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --cp_size 4 --output_dir "$TMP/ring4"
compare ring4 "$TMP/one" "$TMP/ring4"
run ulysses2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --sequence_parallel_size 2 \
  --output_dir "$TMP/ulysses2"
has ulysses2_split "attention by Ulysses all-to-all (whole rows, 2 heads here)" err
compare ulysses2 "$TMP/one" "$TMP/ulysses2"
run ulysses4 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --use_ulysses true \
  --output_dir "$TMP/ulysses4"
has ulysses4_split "attention by Ulysses all-to-all (whole rows, 1 heads here)" err
compare ulysses4 "$TMP/one" "$TMP/ulysses4"

# Packed rows: each sample attends only within its segment, whichever rank holds its keys.
pack=("${common[@]}" --packing true --packing_length 96)
run one_pack 0 "$SWIFT" sft --model "$TMP/qwen2" "${pack[@]}" --output_dir "$TMP/one_pack"
run ring2_pack 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${pack[@]}" --cp_size 2 --output_dir "$TMP/ring2_pack"
compare ring2_pack "$TMP/one_pack" "$TMP/ring2_pack"
run ulysses2_pack 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${pack[@]}" --sequence_parallel_size 2 \
  --output_dir "$TMP/ulysses2_pack"
compare ulysses2_pack "$TMP/one_pack" "$TMP/ulysses2_pack"

# --padding_free (ms-swift's usual companion of sequence parallelism): each micro-batch's samples in one row, the
# same numbers as padded rows; with Ulysses too.
run padding_free 0 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --padding_free true --output_dir "$TMP/padding_free"
compare padding_free "$TMP/one" "$TMP/padding_free"
run ulysses2_padding_free 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --padding_free true \
  --sequence_parallel_size 2 --output_dir "$TMP/ulysses2_padding_free"
compare ulysses2_padding_free "$TMP/one" "$TMP/ulysses2_padding_free"

# A sliding window shorter than the rows (Mistral, every layer windowed at 8 tokens).
mkdir -p "$TMP/mistral_config" && cp "$ROOT/configs/models/mistral-tiny/"* "$TMP/mistral_config/"
"$PY" - "$TMP/mistral_config/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1])); c["sliding_window"] = 8
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
"$SWIFT" export --model "$TMP/mistral_config" --init_strategy normal --seed 5 --output_dir "$TMP/mistral" >/dev/null 2>&1 \
  || { echo "FAIL export mistral"; exit 1; }
run one_window 0 "$SWIFT" sft --model "$TMP/mistral" "${common[@]}" --output_dir "$TMP/one_window"
run ring2_window 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/mistral" "${common[@]}" --cp_size 2 --output_dir "$TMP/ring2_window"
compare ring2_window "$TMP/one_window" "$TMP/ring2_window"
run ulysses2_window 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/mistral" "${common[@]}" --sequence_parallel_size 2 \
  --output_dir "$TMP/ulysses2_window"
compare ulysses2_window "$TMP/one_window" "$TMP/ulysses2_window"

# LoRA on every linear layer, ring and Ulysses.
lora=("${common[@]/full/lora}" --target_modules all-linear --lora_rank 4 --lora_alpha 8 --lora_dropout 0 --learning_rate 1e-2)
run one_lora 0 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --output_dir "$TMP/one_lora"
run ring2_lora 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --cp_size 2 --output_dir "$TMP/ring2_lora"
compare ring2_lora "$TMP/one_lora" "$TMP/ring2_lora" adapter_model.safetensors
run ulysses2_lora 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --sequence_parallel_size 2 \
  --output_dir "$TMP/ulysses2_lora"
compare ulysses2_lora "$TMP/one_lora" "$TMP/ulysses2_lora" adapter_model.safetensors

# With the other splits, on 4 ranks: TP2 x CP2 (Ulysses over the 2 heads each TP rank computes), CP2 x PP2 and DP2 x CP2.
run tp2cp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --tp_size 2 --sequence_parallel_size 2 \
  --output_dir "$TMP/tp2cp2"
has tp2cp2_layout "model parallel: tp 2 x cp 2 x pp 1 x dp 1" err
compare tp2cp2 "$TMP/one" "$TMP/tp2cp2"
# With Megatron sequence parallelism inside each TP group (each CP share cut again), ring attention.
run tp2cp2sp 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --tp_size 2 --cp_size 2 \
  --sequence_parallel true --output_dir "$TMP/tp2cp2sp"
has tp2cp2sp_log "rows padded to a multiple of 2 in each context-parallel share" err
compare tp2cp2sp "$TMP/one" "$TMP/tp2cp2sp"
run cp2pp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --cp_size 2 --pp_size 2 --output_dir "$TMP/cp2pp2"
compare cp2pp2 "$TMP/one" "$TMP/cp2pp2"
run one_b4 0 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/one_b4"
run dp2cp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --cp_size 2 --output_dir "$TMP/dp2cp2"
has dp2cp2_layout "model parallel: tp 1 x cp 2 x pp 1 x dp 2" err
has dp2cp2_distributed "split over 4 ranks (data x context parallel)" err
compare dp2cp2 "$TMP/one_b4" "$TMP/dp2cp2"

# Evaluation and gradient checkpointing on the tied Qwen3 (q_norm/k_norm), ring attention.
eval_flags=("${common[@]}" --split_dataset_ratio 0.2 --eval_steps 2 --gradient_checkpointing true)
run one_eval 0 "$SWIFT" sft --model "$TMP/qwen3" "${eval_flags[@]}" --output_dir "$TMP/one_eval"
run ring2_eval 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${eval_flags[@]}" --cp_size 2 --output_dir "$TMP/ring2_eval"
compare ring2_eval "$TMP/one_eval" "$TMP/ring2_eval"
"$PY" - "$TMP/one_eval" "$TMP/ring2_eval" <<'P' && ok || bad "ring2_eval: eval_loss differs from one rank"
import json, sys
evals = lambda d: [json.loads(l)["eval_loss"] for l in open(f"{d}/logging.jsonl") if '"eval_loss"' in l]
a, b = evals(sys.argv[1]), evals(sys.argv[2])
assert len(a) == len(b) == 2 and all(abs(x - y) < 1e-5 for x, y in zip(a, b)), (a, b)
P

# Resuming: a CP2 checkpoint continues exactly at CP2, and at one rank as one rank's run does.
six=("${base[@]}" --per_device_train_batch_size 2 --max_steps 6 --save_steps 3)
run one6 0 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --output_dir "$TMP/one6"
run cp6 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --cp_size 2 --output_dir "$TMP/cp6"
run cp6_same 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --cp_size 2 --output_dir "$TMP/r1" \
  --resume_from_checkpoint "$TMP/cp6/checkpoint-3"
tail_like cp6_same "$TMP/cp6" "$TMP/r1" 0
run cp6_at_one 0 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --output_dir "$TMP/r2" --resume_from_checkpoint "$TMP/cp6/checkpoint-3"
tail_like cp6_at_one "$TMP/one6" "$TMP/r2" 1e-5

# ms-swift's sequence-parallel example (examples/train/sequence_parallel/sequence_parallel.sh) as written, the model
# and data local and the sizes scaled to 2 CPU ranks.
run msswift_example 0 env NPROC_PER_NODE=2 CELOSS_PARALLEL_SIZE=2048 "$SWIFT" sft --model "$TMP/qwen2" \
  --dataset 'swift/self-cognition#16' --load_from_cache_file true --train_type lora --torch_dtype bfloat16 \
  --per_device_train_batch_size 4 --target_modules all-linear --gradient_accumulation_steps 8 --save_total_limit 2 \
  --save_only_model true --save_steps 50 --max_length 65536 --warmup_ratio 0.05 --attn_impl flash_attn \
  --sequence_parallel_size 2 --logging_steps 1 --use_logits_to_keep false --padding_free true \
  --model_name Tiny Tests --model_author Tests Tests --output_dir "$TMP/msswift_example"
ls "$TMP"/msswift_example/v0-*/checkpoint-1/adapter_model.safetensors >/dev/null 2>&1 && ok || bad "msswift_example wrote no adapter"
has msswift_example_split "attention by Ulysses all-to-all" err

# The routers' load-balancing losses on a Qwen3-MoE model (2 sparse layers): each rank's tokens' probabilities
# against the whole rows' expert counts, the parts adding up over the group. Megatron's layer-by-layer loss at CP2
# (ring) and transformers' pooled one under Ulysses equal one rank, and so do the logged figures.
export_moe_model
moe_aux() {  # moe_aux NAME LAYOUT_FLAG SIZE FLAGS... (the one-rank run once per NAME)
  local name="$1" layout="$2" size="$3"; shift 3
  run "one_$name" 0 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" "$@" --output_dir "$TMP/one_$name"
  run "cp2_$name" 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" "$@" "$layout" "$size" \
    --output_dir "$TMP/cp2_$name"
  compare "cp2_$name" "$TMP/one_$name" "$TMP/cp2_$name"
}
moe_aux megatron_aux --cp_size 2 --moe_aux_loss_coeff 0.5
routers_like cp2_megatron_aux "$TMP/one_megatron_aux" "$TMP/cp2_megatron_aux" load_balancing_loss expert_load_max expert_tokens
moe_aux router_aux --sequence_parallel_size 2 --router_aux_loss_coef 0.05
routers_like cp2_router_aux "$TMP/one_router_aux" "$TMP/cp2_router_aux" aux_loss expert_load_max

# Checked before anything loads, naming the flag.
run both 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --cp_size 2 --sequence_parallel_size 2 \
  --output_dir "$TMP/x1"
has both "--context_parallel_size 2 and --sequence_parallel_size 2 (or --use_ulysses) both split the sequences" err
run cp3 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --cp_size 3 --output_dir "$TMP/x2"
has cp3 "--tp_size 1 x --pp_size 1 x --cp_size 3 (3) does not divide the 2 ranks" err
run cp_orpo 2 env NPROC_PER_NODE=2 "$SWIFT" rlhf --rlhf_type orpo --model "$TMP/qwen3" --dataset swift/self-cognition-preference \
  --cp_size 2 --output_dir "$TMP/x3"
has cp_orpo "swift rlhf --rlhf_type orpo with context parallelism (--cp_size/--sequence_parallel_size: 2 ranks) is not available yet" err
grep -q "parameters:" "$TMP/err" && bad "cp_orpo: found only after the model loaded" || ok

finish context_parallel
