#!/usr/bin/env bash
# End-to-end: Megatron-style tensor parallelism on the CPU over c10d (Gloo), started by swift's launcher.
# Usage: tensor_parallel_test.sh path/to/swift
#  - TP=2 (tied embeddings: the vocabulary-parallel embedding is the head) and TP=2 with an untied head and
#    biases (Qwen2) give one rank's losses, grad norms and final weights (fp32, 1e-5) over several steps;
#  - DP2 x TP2 on 4 ranks equals one rank on the same global batch; so does TP=2 with one KV head (replicated);
#  - each rank holds about half the parameters (the log's per-rank figures); the checkpoint is one whole Hugging
#    Face folder; the optimizer state a file per rank;
#  - a TP=2 checkpoint resumes exactly at TP=2 and continues at one rank and at DP2 as one rank would (and a
#    one-rank checkpoint at TP=2);
#  - LoRA on every linear layer under TP=2 equals one rank, its adapter file one rank's;
#  - Megatron sequence parallelism (--sequence_parallel: activations between the split layers cut along the
#    sequence) gives one rank's numbers too: tied and untied, one KV head, LoRA, DP2 x TP2 without gradient
#    checkpointing, rows of odd length (padded), and its activation estimate is below plain TP's;
#  - swift rlhf (and megatron rlhf) under TP=2 equals one rank: DPO with its loaded reference split alike, DPO with
#    LoRA (the adapter-off reference), ORPO (the logits' means over the split vocabulary), SimPO, KTO and a reward
#    model (its score head whole): every logged metric and the final weights (or adapter) (pipeline stages,
#    sequence, context and expert parallelism in rlhf: rlhf_model_parallel_test.sh);
#  - the seeds' Megatron command line runs as `megatron sft` (the same binary under that name);
#  - --plan_layout recommends a layout for given GPUs without loading the model;
#  - DoRA on every linear layer under TP=2 (the row-split layers' norms over the group) equals one rank;
#  - sizes that do not divide the ranks or the model (--ep_size 2 on one rank too), stop with exit 2,
#    naming the flag or the layer.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

# Qwen2 with its q/k/v biases and an untied head: column-parallel biases and a split lm_head.
export_models 2
# --adam_epsilon 1e-6 as dist_test.sh: gradients at the level of summation-order noise must not decide a step.
base=(--dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests --train_type full
      --gradient_accumulation_steps 2 --per_device_train_batch_size 2 --learning_rate 1e-3
      --logging_steps 1 --add_version false --num_threads 1 --seed 1 --adam_epsilon 1e-6 --max_grad_norm 1.0)
common=("${base[@]}" --max_steps 4 --save_steps 4)


for model in qwen3 qwen2; do
  run "one_$model" 0 "$SWIFT" sft --model "$TMP/$model" "${common[@]}" --output_dir "$TMP/one_$model"
  run "tp2_$model" 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/$model" "${common[@]}" --tp_size 2 \
    --output_dir "$TMP/tp2_$model"
  has "tp2_${model}_groups" "model parallel: tp 2 x pp 1 x dp 1" err
  has "tp2_${model}_held" "tensor parallelism holds after the first step" err
  has "tp2_${model}_waiting" "time waiting for collectives per rank (s)" err
  has "tp2_${model}_deferred" "(tensor parallelism: the weights are read after the split, each rank its slices)" err
  # Each rank reads only its slices: about half of the model's weights (the norms whole), never the whole model.
  "$PY" - "$TMP/err" "$TMP/$model/model.safetensors" <<'P' && ok || bad "tp2_$model: a rank read more than its slices"
import os, re, sys
unit = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
reads = [float(n) * unit[u] for n, u in re.findall(r"tensor parallel: read ([\d.]+) (\w+) of weights from the files", open(sys.argv[1]).read())]
whole = os.path.getsize(sys.argv[2])
assert len(reads) >= 1 and all(0.45 < r / whole < 0.56 for r in reads), (reads, whole)
print(f"each rank read {reads[0] / whole:.3f} of the model's {whole} bytes")
P
  compare "tp2_$model" "$TMP/one_$model" "$TMP/tp2_$model"
  for r in 0 1; do
    test -s "$TMP/tp2_$model/checkpoint-4/optimizer-rank0000$r-of-00002.safetensors" && ok \
      || bad "tp2_$model: no optimizer state of rank $r"
  done
done
# Megatron sequence parallelism: the same numbers, the norms' gradients summed over the group.
for model in qwen3 qwen2; do
  run "tp2sp_$model" 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/$model" "${common[@]}" --tp_size 2 \
    --sequence_parallel true --output_dir "$TMP/tp2sp_$model"
  has "tp2sp_${model}_log" "sequence parallelism: the activations between the tensor-parallel layers cut along the sequence over 2 ranks" err
  compare "tp2sp_$model" "$TMP/one_$model" "$TMP/tp2sp_$model"
  grep -o "activations [0-9.]* [KMG]iB" "$TMP/err" | head -1 > "$TMP/sp_act_$model"
  run "tp2_${model}_again" 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/$model" "${common[@]}" --tp_size 2 \
    --max_steps 1 --output_dir "$TMP/tp2_${model}_again"
  grep -o "activations [0-9.]* [KMG]iB" "$TMP/err" | head -1 > "$TMP/tp_act_$model"
  "$PY" - "$TMP/sp_act_$model" "$TMP/tp_act_$model" <<'P' && ok || bad "tp2sp_$model: the activation estimate is not below plain TP's"
import sys
unit = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}
sp, tp = (open(f).read().split() for f in sys.argv[1:3])
sp, tp = float(sp[1]) * unit[sp[2]], float(tp[1]) * unit[tp[2]]
assert sp < tp, (sp, tp)
print(f"activation estimate per rank: {sp:.3f} MiB with sequence parallelism, {tp:.3f} MiB without")
P
done
# Each rank holds about half of what one rank holds (parameters + gradients + AdamW state).
"$PY" - "$TMP/err" <<'P' && ok || bad "tp2: the per-rank memory is not about half"
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"tensor parallelism holds after the first step .*?per rank: ([\d.]+) (\w+), ([\d.]+) (\w+); without the split ([\d.]+) (\w+)", text)
assert m, "no held-memory line"
unit = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}
a, b, whole = float(m[1]) * unit[m[2]], float(m[3]) * unit[m[4]], float(m[5]) * unit[m[6]]
assert 0.45 < a / whole < 0.56 and 0.45 < b / whole < 0.56, (a, b, whole)
print(f"per rank {a:.1f}, {b:.1f} MiB of {whole:.1f} MiB")
P

# Fewer key/value heads than ranks (Megatron's replication): one KV head, TP=2; k/v_proj whole on both ranks, each
# attending with the head its query heads share, their gradients summed over the group.
"$PY" - "$TMP/qwen3/config.json" "$TMP/kv1_config/config.json" <<'P'
import json, os, sys
c = json.load(open(sys.argv[1])); c["num_key_value_heads"] = 1
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True); json.dump(c, open(sys.argv[2], "w"))
P
cp "$TMP/qwen3/"tokenizer* "$TMP/kv1_config/"
"$SWIFT" export --model "$TMP/kv1_config" --init_strategy normal --seed 5 --output_dir "$TMP/kv1" >/dev/null 2>&1 || bad "export kv1"
run one_kv1 0 "$SWIFT" sft --model "$TMP/kv1" "${common[@]}" --output_dir "$TMP/one_kv1"
run tp2_kv1 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/kv1" "${common[@]}" --tp_size 2 --output_dir "$TMP/tp2_kv1"
compare tp2_kv1 "$TMP/one_kv1" "$TMP/tp2_kv1"
run tp2sp_kv1 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/kv1" "${common[@]}" --tp_size 2 --sequence_parallel true \
  --output_dir "$TMP/tp2sp_kv1"
compare tp2sp_kv1 "$TMP/one_kv1" "$TMP/tp2sp_kv1"

# Resuming: a TP=2 checkpoint continues exactly at TP=2, and at one rank and at DP2 as one rank's run does (its
# optimizer state put back together from the ranks' slices); a one-rank checkpoint continues at TP=2 (cut into them).
six=("${base[@]}" --max_steps 6 --save_steps 3)
run one6 0 "$SWIFT" sft --model "$TMP/qwen3" "${six[@]}" --output_dir "$TMP/one6"
run tp6 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${six[@]}" --tp_size 2 --output_dir "$TMP/tp6"
run tp6_at_tp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${six[@]}" --tp_size 2 --output_dir "$TMP/r1" \
  --resume_from_checkpoint "$TMP/tp6/checkpoint-3"
tail_like tp6_at_tp2 "$TMP/tp6" "$TMP/r1" 0
run tp6_at_one 0 "$SWIFT" sft --model "$TMP/qwen3" "${six[@]}" --output_dir "$TMP/r2" --resume_from_checkpoint "$TMP/tp6/checkpoint-3"
tail_like tp6_at_one "$TMP/one6" "$TMP/r2" 1e-5
run tp6_at_dp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${six[@]}" --per_device_train_batch_size 1 \
  --output_dir "$TMP/r3" --resume_from_checkpoint "$TMP/tp6/checkpoint-3"
tail_like tp6_at_dp2 "$TMP/one6" "$TMP/r3" 1e-5
run one6_at_tp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${six[@]}" --tp_size 2 --output_dir "$TMP/r4" \
  --resume_from_checkpoint "$TMP/one6/checkpoint-3"
tail_like one6_at_tp2 "$TMP/one6" "$TMP/r4" 1e-5
ls /tmp/swift-optimizer-relayout-* >/dev/null 2>&1 && bad "a relayout file was left in /tmp" || ok

# LoRA on every linear layer under TP=2: B split with a column-split layer's rows, A with a row-split layer's
# columns, the other factor whole with its partial gradients summed; the saved adapter is one rank's PEFT file.
lora=("${common[@]/full/lora}" --target_modules all-linear --lora_rank 4 --lora_alpha 8 --lora_dropout 0)
run one_lora 0 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --output_dir "$TMP/one_lora"
run tp2_lora 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --tp_size 2 --output_dir "$TMP/tp2_lora"
compare tp2_lora "$TMP/one_lora" "$TMP/tp2_lora" adapter_model.safetensors
run tp2sp_lora 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --tp_size 2 --sequence_parallel true \
  --output_dir "$TMP/tp2sp_lora"
compare tp2sp_lora "$TMP/one_lora" "$TMP/tp2sp_lora" adapter_model.safetensors
# A LoRA checkpoint with a module trained in full (--modules_to_save: the split embedding) resumes at TP=2 with the
# adapter's embedding, not the base model's the other weights are read from after the split.
lora6=("${six[@]/full/lora}" --target_modules all-linear --lora_rank 4 --lora_alpha 8 --lora_dropout 0
       --modules_to_save embed_tokens)
run tp2_lora6 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${lora6[@]}" --tp_size 2 --output_dir "$TMP/tp2_lora6"
run tp2_lora6_resumed 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${lora6[@]}" --tp_size 2 \
  --output_dir "$TMP/r5" --resume_from_checkpoint "$TMP/tp2_lora6/checkpoint-3"
tail_like tp2_lora6_resumed "$TMP/tp2_lora6" "$TMP/r5" 0
# DoRA: on the row-split o_proj/down_proj the rows' norms sum their squares over the group; the magnitude whole.
run one_dora 0 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --use_dora true --output_dir "$TMP/one_dora"
run tp2_dora 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --use_dora true --tp_size 2 \
  --output_dir "$TMP/tp2_dora"
compare tp2_dora "$TMP/one_dora" "$TMP/tp2_dora" adapter_model.safetensors

# swift rlhf under TP=2: the log-probabilities over the split vocabulary, the reference split as the policy.
write_kto_data
rlhf_case() { rlhf_layout_case tp2 2 "--tp_size 2" "$@"; }  # rlhf_case NAME MODEL FILE FLAGS...: one rank, then TP=2
rlhf_case dpo qwen2 model.safetensors --rlhf_type dpo --train_type full "${pref[@]}"
has dpo_reference "reference model: $TMP/qwen2 (frozen)" err
rlhf_case dpo_lora qwen3 adapter_model.safetensors --rlhf_type dpo --train_type lora --target_modules all-linear \
  --lora_rank 4 --lora_alpha 8 "${pref[@]/1e-3/1e-2}"
rlhf_case orpo qwen2 model.safetensors --rlhf_type orpo --train_type full "${pref[@]}"
rlhf_case simpo qwen3 model.safetensors --rlhf_type simpo --train_type full "${pref[@]}"
kto=("${pref[@]}")
kto[1]="$TMP/kto.jsonl"
rlhf_case kto qwen2 model.safetensors --rlhf_type kto --train_type full "${kto[@]}"
# A reward model: the layers split, its one-output score head whole on both ranks.
rlhf_case rm qwen2 model.safetensors --rlhf_type rm --train_type full "${pref[@]}"
# ms-swift's Megatron entry point trains preferences too.
run megatron_dpo 0 env NPROC_PER_NODE=2 "$(dirname "$SWIFT")/megatron" rlhf --rlhf_type dpo --model "$TMP/qwen3" \
  --train_type full --tp_size 2 "${pref[@]}" --output_dir "$TMP/megatron_dpo"
has megatron_dpo "model parallel: tp 2 x pp 1 x dp 1" err

# DP2 x TP2: 4 ranks, the same global batch as one rank with twice the per-device batch.
run dp2tp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --tp_size 2 --dp_size 2 \
  --per_device_train_batch_size 1 --output_dir "$TMP/dp2tp2"
has dp2tp2_groups "model parallel: tp 2 x pp 1 x dp 2" err
has dp2tp2_distributed "distributed optimizer: the AdamW state of this rank's part of the model split over 2 replicas" err
compare dp2tp2 "$TMP/one_qwen3" "$TMP/dp2tp2"
run dp2tp2sp 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --tp_size 2 --dp_size 2 \
  --sequence_parallel true --gradient_checkpointing false --per_device_train_batch_size 1 --output_dir "$TMP/dp2tp2sp"
compare dp2tp2sp "$TMP/one_qwen3" "$TMP/dp2tp2sp"

# The seeds' Megatron command line as written (ms-swift's `megatron` entry point: the same binary under that name),
# the model and data local and the sizes scaled to 2 CPU ranks (pipeline_parallel_test.sh runs it with --pp_size 2).
MEGATRON="$(dirname "$SWIFT")/megatron"
run megatron_seed 0 env NPROC_PER_NODE=2 CUDA_VISIBLE_DEVICES=0,1 "$MEGATRON" sft --model "$TMP/qwen3" \
  --train_type full --tp_size 2 --pp_size 1 --cp_size 1 --dp_size 1 --dataset 'swift/self-cognition#32' \
  --num_train_epochs 1 --per_device_train_batch_size 1 --gradient_accumulation_steps 16 --learning_rate 1e-5 \
  --max_length 8192 --output_dir "$TMP/output_megatron" --use_fp16 true --save_safetensors true \
  --model_name Tiny Tests --model_author Tests Tests
ls "$TMP"/output_megatron/v0-*/checkpoint-2/model.safetensors >/dev/null 2>&1 && ok || bad "megatron_seed wrote no checkpoint-2"
has megatron_seed_tp "model parallel: tp 2 x pp 1 x dp 1" err
# Megatron's batch spelling: --micro_batch_size x data-parallel ranks x accumulation = --global_batch_size.
megatron_common=()  # common without the batch flags
skip=0
for a in "${common[@]}"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in --per_device_train_batch_size|--gradient_accumulation_steps) skip=1; continue ;; esac
  megatron_common+=("$a")
done
run megatron_global 0 env NPROC_PER_NODE=2 "$MEGATRON" sft --model "$TMP/qwen3" "${megatron_common[@]}" --tp_size 2 \
  --micro_batch_size 2 --global_batch_size 4 --output_dir "$TMP/megatron_global"
compare megatron_global "$TMP/one_qwen3" "$TMP/megatron_global"
run megatron_global_bad 2 "$MEGATRON" sft --model "$TMP/qwen3" "${megatron_common[@]}" --micro_batch_size 3 --global_batch_size 4 \
  --output_dir "$TMP/x0"
has megatron_global_bad "--global_batch_size 4 is not --micro_batch_size x data-parallel ranks (3)" err
run megatron_infer 2 "$MEGATRON" infer --model "$TMP/qwen3"
has megatron_infer "megatron has no command 'infer'" err

# --plan_layout: a dry run (no weights, no ranks) recommending a layout for 8 GPUs of 0.3 GiB, 4 per node.
run plan 0 "$SWIFT" sft --model "$TMP/qwen3" --train_type full --max_length 512 --plan_layout true --plan_gpus 8 \
  --plan_gpus_per_node 4 --plan_gpu_memory 0.3 --dataset swift/self-cognition#4
has plan "recommended: --tp_size 4 --sequence_parallel true (tp 4 x cp 1 x pp 1 x dp 2" err
has plan_rejects "tp 1 x cp 1 x pp 1 x dp 8: " err
grep -q "parameters:" "$TMP/err" && bad "plan: loaded the weights" || ok
run plan_no_gpu 2 "$SWIFT" sft --model "$TMP/qwen3" --plan_layout true --dataset swift/self-cognition#4
has plan_no_gpu "--plan_layout: this machine has no GPU to plan for" err

# Sizes checked before anything loads, naming the flag; what is not built yet says so.
run tp3 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --tp_size 3 --output_dir "$TMP/x1"
has tp3 "--tp_size 3 x --pp_size 1 (3) does not divide the 2 ranks" err
run dp_mismatch 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --tp_size 2 --dp_size 2 --output_dir "$TMP/x2"
has dp_mismatch "--dp_size 2 x --tp_size 2 x --pp_size 1 is not the 2 ranks started" err
run ep2 2 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --ep_size 2 --output_dir "$TMP/x3"
has ep2 "--expert_model_parallel_size 2 does not divide the 1 ranks of a pipeline stage" err
"$PY" - "$TMP/qwen3/config.json" "$TMP/heads3/config.json" <<'P'
import json, os, sys
c = json.load(open(sys.argv[1])); c["num_attention_heads"] = 6; c["num_key_value_heads"] = 3
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True); json.dump(c, open(sys.argv[2], "w"))
P
cp "$TMP/qwen3/"tokenizer* "$TMP/heads3/" 2>/dev/null
run tp_heads 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/heads3" --init_strategy normal "${common[@]}" --tp_size 2 --output_dir "$TMP/x5"
has tp_heads "num_key_value_heads (3) and the tensor-parallel size 2 do not divide one another" err
grep -q "parameters:" "$TMP/err" && bad "tp_heads: found only after the model loaded" || ok

finish tensor_parallel
