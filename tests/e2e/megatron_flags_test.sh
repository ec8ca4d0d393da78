#!/usr/bin/env bash
# End-to-end: Megatron-LM's flags on `megatron sft` (docs/megatron.md). Usage: megatron_flags_test.sh path/to/swift
#  - ms-swift's examples/megatron/lora/moe.sh runs as written (a tiny Qwen3-MoE, 2 ranks of Gloo, the data scaled
#    down): EP2, LoRA, Megatron's load-balancing loss logged, the cosine ending at --min_lr, the kernel flags logged
#    as having no effect, checkpoints without optimizer state (--no_save_optim);
#  - Megatron's spellings (--lr, --train_iters, --lr_warmup_iters, --min_lr, --clip_grad, --adam_eps, --save,
#    --save_interval, --recompute_granularity) give exactly the run of the transformers-style flags they stand for;
#  - --moe_aux_loss_coeff changes the gradients (and not the logged loss of the first step);
#  - --moe_expert_capacity_factor drops rows (expert_drop_rate logged) and EP2 drops what DP2 drops (each rank's
#    capacity is over its own tokens);
#  - --merge_lora true writes checkpoint-N-merged beside each LoRA checkpoint, equal to swift export's merge;
#  - bad values stop with exit 2 before the model loads.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"
MEGATRON="$(dirname "$SWIFT")/megatron"
[ -x "$MEGATRON" ] || MEGATRON="$SWIFT"  # the same binary; `swift sft` takes the same flags

export_moe_model
"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 5 --output_dir "$TMP/dense" >/dev/null 2>&1 || bad "export dense"

# ms-swift's moe.sh, with the model, the datasets, the micro-batch and the global batch scaled down.
run moe_sh 0 env NPROC_PER_NODE=2 OMP_NUM_THREADS=1 "$MEGATRON" sft \
    --model "$TMP/moe" --save_safetensors true --merge_lora false \
    --dataset 'swift/self-cognition#64' --loss_scale ignore_empty_think --tuner_type lora --lora_rank 8 --lora_alpha 32 \
    --target_modules all-linear --split_dataset_ratio 0.1 --expert_model_parallel_size 2 --moe_permute_fusion true \
    --moe_grouped_gemm true --moe_shared_expert_overlap true --moe_aux_loss_coeff 1e-3 --micro_batch_size 2 \
    --global_batch_size 8 --recompute_granularity full --recompute_method uniform --recompute_num_layers 1 \
    --num_train_epochs 1 --finetune true --cross_entropy_loss_fusion true --lr 1e-4 --lr_warmup_fraction 0.05 \
    --min_lr 1e-5 --output_dir "$TMP/moe_sh" --eval_steps 200 --save_steps 200 --max_length 2048 \
    --dataloader_num_workers 8 --dataset_num_proc 8 --no_save_optim true --no_save_rng true \
    --sequence_parallel true --attention_backend flash --model_author swift --model_name swift-robot \
    --add_version false --logging_steps 1 --num_threads 1
has moe_sh_ep "model parallel: tp 1 x pp 1 x dp 2 (experts split over ep 2 of them)" err
has moe_sh_kernel_note "--moe_grouped_gemm has no effect in swift" err
has moe_sh_recompute_note "--recompute_method / --recompute_num_layers: swift recomputes every decoder layer" err
has moe_sh_no_optim_note "--no_save_optim true: checkpoints hold the weights only" err
has moe_sh_schedule "(cosine_with_min_lr, 1 warm-up)" err
"$PY" - "$TMP/moe_sh" <<'P' && ok || bad "moe_sh: the log or the checkpoint is not what the flags ask"
import json, os, sys
run = sys.argv[1]
rows = [json.loads(l) for l in open(f"{run}/logging.jsonl") if '"loss"' in l]
assert len(rows) == 8, len(rows)
assert all(0 < r["load_balancing_loss"] < 4 for r in rows), rows          # (E / k) x sum f P: 1 when balanced
assert abs(rows[-1]["learning_rate"] - 1e-5) < 1e-12, rows[-1]             # the cosine ends at --min_lr
assert all(r["learning_rate"] >= 1e-5 - 1e-12 for r in rows[1:]), rows
assert max(r["learning_rate"] for r in rows) <= 1e-4 + 1e-12
ckpt = f"{run}/checkpoint-8"
files = set(os.listdir(ckpt))
assert "adapter_model.safetensors" in files, files
assert not any(f.startswith("optimizer") for f in files) and "trainer_state.json" not in files, files
P

# Megatron's spellings against the flags they stand for: the same run, bit for bit (one rank, dense model).
common=(--model "$TMP/dense" --dataset swift/self-cognition#24 --model_name Tiny Tests --model_author Tests Tests
        --train_type full --per_device_train_batch_size 2 --gradient_accumulation_steps 2 --logging_steps 1
        --add_version false --num_threads 1 --seed 3)
run hf_spelling 0 "$SWIFT" sft "${common[@]}" --learning_rate 2e-4 --max_steps 5 --warmup_steps 1 \
  --lr_scheduler_type cosine_with_min_lr --min_lr_rate 0.25 --max_grad_norm 0.5 --adam_epsilon 1e-6 \
  --output_dir "$TMP/hf" --save_steps 5 --gradient_checkpointing true
run megatron_spelling 0 "$MEGATRON" sft "${common[@]}" --lr 2e-4 --train_iters 5 --lr_warmup_iters 1 \
  --lr_decay_style cosine --min_lr 5e-5 --clip_grad 0.5 --adam_eps 1e-6 --save "$TMP/mg" --save_interval 5 \
  --recompute_granularity selective
has megatron_selective_note "--recompute_granularity selective: swift recomputes whole decoder layers" err
has megatron_selective_recomputes "(gradient checkpointing; " err
run recompute_none 0 "$MEGATRON" sft "${common[@]}" --max_steps 1 --recompute_granularity none --output_dir "$TMP/none"
has recompute_none_keeps "(no gradient checkpointing; " err
"$PY" - "$TMP/hf" "$TMP/mg" <<'P' && ok || bad "Megatron's spellings gave another run"
import json, sys
from safetensors.numpy import load_file
rows = lambda d: [{k: v for k, v in json.loads(l).items() if k in ("loss", "grad_norm", "learning_rate", "token_acc")}
                  for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert len(a) == 5 and a == b, (a, b)
wa, wb = load_file(f"{sys.argv[1]}/checkpoint-5/model.safetensors"), load_file(f"{sys.argv[2]}/checkpoint-5/model.safetensors")
assert all((wa[k] == wb[k]).all() for k in wa), "weights differ"
P

# --moe_aux_loss_coeff: the same first loss (the LM loss is logged), other gradients.
moe=(--model "$TMP/moe" --dataset swift/self-cognition#16 --model_name Tiny Tests --model_author Tests Tests
     --train_type full --per_device_train_batch_size 2 --gradient_accumulation_steps 1 --logging_steps 1
     --add_version false --num_threads 1 --seed 3 --max_steps 2 --save_steps 2 --learning_rate 1e-3)
run aux_off 0 "$SWIFT" sft "${moe[@]}" --output_dir "$TMP/aux_off"
run aux_on 0 "$MEGATRON" sft "${moe[@]}" --moe_aux_loss_coeff 0.5 --output_dir "$TMP/aux_on"
"$PY" - "$TMP/aux_off" "$TMP/aux_on" <<'P' && ok || bad "--moe_aux_loss_coeff: not the expected effect"
import json, sys
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
off, on = rows(sys.argv[1]), rows(sys.argv[2])
assert "load_balancing_loss" in on[0] and "load_balancing_loss" not in off[0], (off[0], on[0])
assert abs(off[0]["loss"] - on[0]["loss"]) < 1e-6, (off[0], on[0])
assert abs(off[0]["grad_norm"] - on[0]["grad_norm"]) > 1e-4, (off[0], on[0])
P

# --moe_expert_capacity_factor: rows dropped and logged; EP2 drops what DP2 drops (the same tokens per rank).
run cap_dp2 0 env NPROC_PER_NODE=2 OMP_NUM_THREADS=1 "$MEGATRON" sft "${moe[@]}" --per_device_train_batch_size 1 \
  --moe_expert_capacity_factor 0.5 --output_dir "$TMP/cap_dp2"
run cap_ep2 0 env NPROC_PER_NODE=2 OMP_NUM_THREADS=1 "$MEGATRON" sft "${moe[@]}" --per_device_train_batch_size 1 \
  --moe_expert_capacity_factor 0.5 --ep_size 2 --output_dir "$TMP/cap_ep2"
run cap_none 0 env NPROC_PER_NODE=2 OMP_NUM_THREADS=1 "$MEGATRON" sft "${moe[@]}" --per_device_train_batch_size 1 \
  --output_dir "$TMP/cap_none"
run cap_negative 0 env NPROC_PER_NODE=2 OMP_NUM_THREADS=1 "$MEGATRON" sft "${moe[@]}" --per_device_train_batch_size 1 \
  --moe_expert_capacity_factor -1 --output_dir "$TMP/cap_negative"  # Megatron's spelling of dropless
"$PY" - "$TMP/cap_negative" "$TMP/cap_none" <<'P' && ok || bad "a negative capacity factor is not dropless"
import json, sys
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
a, b = map(rows, sys.argv[1:3])
assert [r["loss"] for r in a] == [r["loss"] for r in b] and all("expert_drop_rate" not in r for r in a), (a, b)
P
"$PY" - "$TMP/cap_dp2" "$TMP/cap_ep2" "$TMP/cap_none" <<'P' && ok || bad "capacity factor: drops or EP2 differ"
import json, sys
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
dp, ep, none = map(rows, sys.argv[1:4])
assert all(0 < r["expert_drop_rate"] < 1 for r in dp), dp
assert all("expert_drop_rate" not in r for r in none), none
assert abs(dp[0]["loss"] - none[0]["loss"]) > 1e-6, "dropping rows changes the loss"
for a, b in zip(dp, ep):
    for k in ("loss", "grad_norm", "expert_drop_rate"):
        assert abs(a[k] - b[k]) <= 1e-5 * max(1, abs(a[k])), (k, a, b)
P

# --merge_lora true: checkpoint-N-merged beside each LoRA checkpoint, equal to swift export's merge of it; the
# merged copy goes with its checkpoint under --save_total_limit.
run merge_lora 0 "$MEGATRON" sft "${common[@]}" --train_type lora --max_steps 2 --save_steps 1 --save_total_limit 1 \
  --merge_lora true --output_dir "$TMP/merge"
has merge_lora_log "checkpoint-2-merged (the base with the adapter's" err
[ -d "$TMP/merge/checkpoint-2-merged" ] && [ ! -e "$TMP/merge/checkpoint-1-merged" ] && [ ! -e "$TMP/merge/checkpoint-1" ] \
  && ok || bad "merge_lora: not the checkpoints expected: $(ls "$TMP/merge")"
run merge_export 0 "$SWIFT" export --adapters "$TMP/merge/checkpoint-2" --merge_lora true --output_dir "$TMP/merge_export"
"$PY" - "$TMP/merge/checkpoint-2-merged" "$TMP/merge_export" "$TMP/dense" <<'P' && ok || bad "merge_lora: the merged copy is not export's merge"
import os, sys
from safetensors.numpy import load_file
merged, exported, base = (load_file(f"{d}/model.safetensors") for d in sys.argv[1:4])
assert merged.keys() == exported.keys() == base.keys(), (merged.keys() ^ base.keys())
assert all((merged[k] == exported[k]).all() for k in merged), "differs from swift export's merge"
assert any((merged[k] != base[k]).any() for k in merged), "nothing merged"
assert os.path.exists(f"{sys.argv[1]}/tokenizer.json") and os.path.exists(f"{sys.argv[1]}/config.json")
P

# The router flags on a dense model change nothing (said); swift rlhf refuses them on a MoE model.
run dense_router 0 "$MEGATRON" sft "${common[@]}" --max_steps 1 --moe_aux_loss_coeff 1e-3 --output_dir "$TMP/dense_router"
has dense_router_note "--moe_aux_loss_coeff has no effect: qwen3 has no mixture-of-experts layers" err
run rlhf_capacity 2 "$MEGATRON" rlhf --rlhf_type dpo --model "$TMP/moe" --dataset swift/self-cognition-preference#8 --model_name Tiny Tests --model_author Tests Tests \
  --moe_expert_capacity_factor 1.5 --output_dir "$TMP/rlhf_capacity"
has rlhf_capacity_msg "swift rlhf with --moe_expert_capacity_factor is not available yet" err

# Bad values: exit 2 before anything loads, naming the flag.
bad_value() {  # bad_value NAME TEXT FLAGS...
  local name="$1" text="$2"; shift 2
  run "$name" 2 "$MEGATRON" sft --model "$TMP/dense" --dataset swift/self-cognition#8 "$@" --output_dir "$TMP/x_$name"
  has "$name" "$text" err
}
bad_value granularity "--recompute_granularity partial is not Megatron's" --recompute_granularity partial
bad_value min_lr_above_lr "--min_lr" --lr 1e-5 --min_lr 1e-4
bad_value min_lr_linear "--min_lr with a linear schedule is not available" --lr_decay_style linear --min_lr 1e-6
bad_value decay_style "--lr_decay_style WSD is not available" --lr_decay_style WSD
bad_value merge_lora_init "--merge_lora true with --init_strategy normal" --train_type lora --merge_lora true --init_strategy normal
bad_value both_aux "are both set" --moe_aux_loss_coeff 1e-3 --router_aux_loss_coef 1e-3
bad_value backend "--attention_backend flashy is not Megatron's" --attention_backend flashy
bad_value pad_capacity "--moe_pad_expert_input_to_capacity true is not available" --moe_pad_expert_input_to_capacity true
bad_value etp "--expert_tensor_parallel_size 2 is not available yet" --expert_tensor_parallel_size 2
bad_value eval_iters "--eval_iters 10 is not available yet" --eval_iters 10
bad_value two_spellings "--output_dir and --save are the same flag, given different values" --output_dir "$TMP/a" --save "$TMP/b"
bad_value zero_capacity "--moe_expert_capacity_factor 0 keeps no token" --moe_expert_capacity_factor 0
bad_value checkpointing_contradiction "contradicts --gradient_checkpointing false" --recompute_granularity full --gradient_checkpointing false
[ ! -e "$TMP/x_granularity" ] && ok || bad "a refused command line wrote its run folder"

finish megatron_flags
