#!/usr/bin/env bash
# End-to-end: Megatron-style pipeline parallelism (with tensor and data parallelism) on the CPU over c10d (Gloo),
# started by swift's launcher. Usage: pipeline_parallel_test.sh path/to/swift
#  - PP=2 with tied embeddings (the last stage's copy of the embedding is the head, their gradients summed), PP=4
#    and an uneven split of an untied model, PP=2 interleaved (2 virtual stages per rank), TP2 x PP2 (also with
#    --sequence_parallel) and DP2 x PP2
#    on 4 ranks each give one rank's losses, grad norms and final weights (fp32, 1e-5) on the same global batch; so
#    does LoRA at TP2 x PP2 and interleaved (its adapter file one rank's);
#  - each rank holds about 1/(TP x PP) of the parameters, gradients and AdamW state (the log's per-rank figures);
#  - with several replicas their ranks split the AdamW state (Megatron's distributed optimizer, the default), with
#    the same numbers as keeping it whole (--use_distributed_optimizer false);
#  - a TP2 x PP2 checkpoint resumes exactly at TP2 x PP2 and continues at one rank and at DP2 as one rank would; so
#    does a DP2 x PP2 one (its optimizer state split over the replicas) at one rank;
#  - evaluation with gradient checkpointing passes through the stages and logs one rank's eval_loss;
#  - on a Qwen3-MoE model: PP2, DP2 and TP2 x PP2 equal one rank; with Megatron's --moe_aux_loss_coeff (each stage's
#    sparse layer adding its term) PP2 and TP2 x PP2 equal one rank, and so do load_balancing_loss and
#    expert_load_max, which add every stage's layers (so do expert_drop_rate with a capacity factor and, at TP2 x PP2,
#    the tokens per expert expert_tokens; a first stage without sparse layers adds nothing); transformers'
#    --router_aux_loss_coef is refused;
#  - the seeds' Megatron command line runs as written at --tp_size 2 --pp_size 2 --dp_size 1 on 4 ranks;
#  - more stages than layers and sizes that do not divide the ranks stop with exit 2 before the model loads.
# swift rlhf through the stages: rlhf_model_parallel_test.sh.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

# Qwen2 with 4 layers and an untied head: the embedding on the first stage, the head on the last.
export_models 4
# --adam_epsilon 1e-6 as dist_test.sh: gradients at the level of summation-order noise must not decide a step.
# Four micro-batches per step: the 1F1B schedule's warm-up, steady state and cool-down all run.
base=(--dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests --train_type full
      --gradient_accumulation_steps 4 --learning_rate 1e-3 --logging_steps 1 --add_version false --num_threads 1
      --seed 1 --adam_epsilon 1e-6 --max_grad_norm 1.0)
common=("${base[@]}" --per_device_train_batch_size 2 --max_steps 4 --save_steps 4)


# PP=2 on the tied Qwen3 (2 layers: one per stage).
run one_qwen3 0 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --output_dir "$TMP/one_qwen3"
run pp2_qwen3 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --pp_size 2 --output_dir "$TMP/pp2_qwen3"
has pp2_qwen3_layout "model parallel: tp 1 x pp 2 x dp 1" err
has pp2_qwen3_stages "pipeline: 2 stages of 1, 1 layers" err
has pp2_qwen3_tied "(the embedding is tied: the last stage keeps a copy as its head)" err
compare pp2_qwen3 "$TMP/one_qwen3" "$TMP/pp2_qwen3"
for r in 0 1; do
  test -s "$TMP/pp2_qwen3/checkpoint-4/optimizer-rank0000$r-of-00002.safetensors" && ok || bad "pp2_qwen3: no optimizer state of rank $r"
done

# Qwen3-MoE (layer 0 dense, layer 1 sparse: 4 experts, top 2): PP=2 puts one on each stage, DP=2 splits the
# samples, TP2 x PP2 (sequence parallelism: the dense layer split, the sparse one routing each rank's part of the
# sequence) on 4 ranks; each equals one rank. transformers' router aux loss under PP (pooled over every layer), and
# TP on a MoE model without --sequence_parallel, are errors.
mkdir -p "$TMP/moe_config" && cp "$ROOT/configs/models/qwen3-tiny/"* "$TMP/moe_config/"
"$PY" - "$TMP/moe_config/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], num_experts=4, num_experts_per_tok=2,
         moe_intermediate_size=32, norm_topk_prob=True, mlp_only_layers=[0])
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
"$SWIFT" export --model "$TMP/moe_config" --init_strategy normal --seed 5 --output_dir "$TMP/moe" >/dev/null 2>&1 || bad "export moe"
run one_moe 0 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" --output_dir "$TMP/one_moe"
run pp2_moe 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" --pp_size 2 --output_dir "$TMP/pp2_moe"
compare pp2_moe "$TMP/one_moe" "$TMP/pp2_moe"
run dp2_moe 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --max_steps 4 --save_steps 4 \
  --per_device_train_batch_size 1 --output_dir "$TMP/dp2_moe"
compare dp2_moe "$TMP/one_moe" "$TMP/dp2_moe"
run pp2_moe_aux 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" --pp_size 2 \
  --router_aux_loss_coef 0.01 --output_dir "$TMP/x_aux"
has pp2_moe_aux "--router_aux_loss_coef with --pp_size 2 is not available (transformers' loss pools the routers of every layer" err
run tp2_pp2_moe 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" --tp_size 2 --pp_size 2 \
  --sequence_parallel true --output_dir "$TMP/tp2_pp2_moe"
compare tp2_pp2_moe "$TMP/one_moe" "$TMP/tp2_pp2_moe"
run tp2_moe 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" --tp_size 2 --output_dir "$TMP/x_tp"
has tp2_moe "--tp_size 2 on a mixture-of-experts model (qwen3_moe) needs --sequence_parallel true" err

# Megatron's layer-by-layer load-balancing loss (--moe_aux_loss_coeff) on a model whose two layers are both sparse:
# at PP=2 each stage adds its own layer's term, attached to its output's backward; the logged load_balancing_loss
# and expert_load_max add every stage's layers. Equal to one rank, the loss and the routers' figures; so is TP2 x PP2.
mkdir -p "$TMP/moe_sparse_config" && cp "$TMP/moe_config/"* "$TMP/moe_sparse_config/"
"$PY" - "$TMP/moe_sparse_config/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(mlp_only_layers=[])
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
"$SWIFT" export --model "$TMP/moe_sparse_config" --init_strategy normal --seed 5 --output_dir "$TMP/moe_sparse" >/dev/null 2>&1 \
  || bad "export moe_sparse"
aux=(--moe_aux_loss_coeff 0.5)
run one_moe_aux 0 "$SWIFT" sft --model "$TMP/moe_sparse" "${common[@]}" "${aux[@]}" --output_dir "$TMP/one_moe_aux"
run pp2_moe_aux_on 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe_sparse" "${common[@]}" "${aux[@]}" --pp_size 2 \
  --output_dir "$TMP/pp2_moe_aux_on"
compare pp2_moe_aux_on "$TMP/one_moe_aux" "$TMP/pp2_moe_aux_on"
routers_like pp2_moe_aux_on "$TMP/one_moe_aux" "$TMP/pp2_moe_aux_on" load_balancing_loss expert_load_max
run tp2_pp2_moe_aux 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe_sparse" "${common[@]}" "${aux[@]}" --tp_size 2 \
  --pp_size 2 --sequence_parallel true --output_dir "$TMP/tp2_pp2_moe_aux"
compare tp2_pp2_moe_aux "$TMP/one_moe_aux" "$TMP/tp2_pp2_moe_aux"
routers_like tp2_pp2_moe_aux "$TMP/one_moe_aux" "$TMP/tp2_pp2_moe_aux" load_balancing_loss expert_load_max expert_tokens
# With the capacity dropping choices (expert_drop_rate adds the stages' too), and on the model whose first stage has
# no sparse layer (its stage adds no loss term and no figures).
drops=("${aux[@]}" --moe_expert_capacity_factor 0.75)
run one_moe_drops 0 "$SWIFT" sft --model "$TMP/moe_sparse" "${common[@]}" "${drops[@]}" --output_dir "$TMP/one_moe_drops"
run pp2_moe_drops 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe_sparse" "${common[@]}" "${drops[@]}" --pp_size 2 \
  --output_dir "$TMP/pp2_moe_drops"
compare pp2_moe_drops "$TMP/one_moe_drops" "$TMP/pp2_moe_drops"
routers_like pp2_moe_drops "$TMP/one_moe_drops" "$TMP/pp2_moe_drops" load_balancing_loss expert_load_max expert_drop_rate
run one_moe_dense_first 0 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" "${aux[@]}" --output_dir "$TMP/one_moe_dense_first"
run pp2_moe_dense_first 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${common[@]}" "${aux[@]}" --pp_size 2 \
  --output_dir "$TMP/pp2_moe_dense_first"
compare pp2_moe_dense_first "$TMP/one_moe_dense_first" "$TMP/pp2_moe_dense_first"
routers_like pp2_moe_dense_first "$TMP/one_moe_dense_first" "$TMP/pp2_moe_dense_first" load_balancing_loss expert_load_max expert_tokens

# The untied Qwen2: PP=4 (a layer each; the middle stages hold no embedding or head), an uneven PP=2 split (1 + 3
# layers), TP2 x PP2 and DP2 x PP2.
run one_qwen2 0 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --output_dir "$TMP/one_qwen2"
run pp4 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --pp_size 4 --output_dir "$TMP/pp4"
has pp4_stages "pipeline: 4 stages of 1, 1, 1, 1 layers" err
compare pp4 "$TMP/one_qwen2" "$TMP/pp4"
run pp2_uneven 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --pp_size 2 \
  --decoder_first_pipeline_num_layers 1 --output_dir "$TMP/pp2_uneven"
has pp2_uneven_stages "pipeline: 2 stages of 1, 3 layers" err
compare pp2_uneven "$TMP/one_qwen2" "$TMP/pp2_uneven"
# Interleaved 1F1B: 2 virtual stages per rank (layers 0 and 2 on rank 0, 1 and 3 on rank 1), every micro-batch
# visiting each rank twice.
run pp2_interleaved 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --pp_size 2 \
  --virtual_pipeline_model_parallel_size 2 --output_dir "$TMP/pp2_interleaved"
has pp2_interleaved_stages "pipeline: 4 virtual stages (2 per rank, interleaved) of 1, 1, 1, 1 layers" err
has pp2_interleaved_rank0 "this rank runs layers 0-0, 2-2 after the embedding" err
compare pp2_interleaved "$TMP/one_qwen2" "$TMP/pp2_interleaved"
# With TP the vocabulary-parallel cross entropy sums in another order; over four steps of 4 micro-batches AdamW
# (eps 1e-6) carries that fp32 noise to 2e-5 in a grad norm (TP=2 alone too), so this one runs 2 micro-batches.
run one_qwen2_ga2 0 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --gradient_accumulation_steps 2 --output_dir "$TMP/one_ga2"
run tp2pp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --gradient_accumulation_steps 2 \
  --tp_size 2 --pp_size 2 --output_dir "$TMP/tp2pp2"
has tp2pp2_layout "model parallel: tp 2 x pp 2 x dp 1" err
compare tp2pp2 "$TMP/one_ga2" "$TMP/tp2pp2"
cp "$TMP/err" "$TMP/err_tp2pp2"
# With Megatron sequence parallelism: the stages pass each other activations cut along the sequence.
run tp2pp2sp 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --gradient_accumulation_steps 2 \
  --tp_size 2 --pp_size 2 --sequence_parallel true --output_dir "$TMP/tp2pp2sp"
compare tp2pp2sp "$TMP/one_ga2" "$TMP/tp2pp2sp"
cp "$TMP/err_tp2pp2" "$TMP/err"
# Each rank holds about a quarter of what one rank holds (parameters + gradients + AdamW state).
"$PY" - "$TMP/err" <<'P' && ok || bad "tp2pp2: the per-rank memory is not about a quarter"
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"tensor and pipeline parallelism holds after the first step .*?per rank: (.*?); without the split ([\d.]+) (\w+)", text)
assert m, "no held-memory line"
unit = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}
ranks = [float(v) * unit[u] for v, u in re.findall(r"([\d.]+) (\w+)", m[1])]
whole = float(m[2]) * unit[m[3]]
assert len(ranks) == 4 and all(0.2 < r / whole < 0.3 for r in ranks), (ranks, whole)
print("per rank", ", ".join(f"{r:.1f}" for r in ranks), f"MiB of {whole:.1f} MiB")
P
# DP2 x PP2: the same global batch as one rank with twice the per-device batch.
run one_qwen2_b4 0 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/one_b4"
run dp2pp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --pp_size 2 --dp_size 2 \
  --output_dir "$TMP/dp2pp2"
has dp2pp2_layout "model parallel: tp 1 x pp 2 x dp 2" err
# Megatron's distributed optimizer (on by default): the 2 replicas of each stage split its AdamW state.
has dp2pp2_distributed "distributed optimizer: the AdamW state of this rank's part of the model split over 2 replicas" err
compare dp2pp2 "$TMP/one_b4" "$TMP/dp2pp2"
run dp2pp2_whole_state 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --pp_size 2 \
  --use_distributed_optimizer false --output_dir "$TMP/dp2pp2_whole_state"
grep -q "distributed optimizer:" "$TMP/err" && bad "dp2pp2_whole_state: the optimizer state was split" || ok
compare dp2pp2_whole_state "$TMP/one_b4" "$TMP/dp2pp2_whole_state"

# LoRA on every linear layer at TP2 x PP2: each stage trains its layers' adapters; rank 0 writes one PEFT file.
lora=("${common[@]/full/lora}" --target_modules all-linear --lora_rank 4 --lora_alpha 8 --lora_dropout 0 --learning_rate 1e-2)
run one_lora 0 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --output_dir "$TMP/one_lora"
run tp2pp2_lora 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --tp_size 2 --pp_size 2 \
  --output_dir "$TMP/tp2pp2_lora"
compare tp2pp2_lora "$TMP/one_lora" "$TMP/tp2pp2_lora" adapter_model.safetensors
run pp2_interleaved_lora 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${lora[@]}" --pp_size 2 \
  --virtual_pipeline_model_parallel_size 2 --output_dir "$TMP/pp2_interleaved_lora"
compare pp2_interleaved_lora "$TMP/one_lora" "$TMP/pp2_interleaved_lora" adapter_model.safetensors

# Resuming: a TP2 x PP2 checkpoint continues exactly at TP2 x PP2, and at one rank and at DP2 as one rank's run
# does (every stage's optimizer file read, the TP slices put together).
six=("${base[@]}" --per_device_train_batch_size 2 --max_steps 6 --save_steps 3)
run one6 0 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --output_dir "$TMP/one6"
run mp6 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --tp_size 2 --pp_size 2 --output_dir "$TMP/mp6"
run mp6_same 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --tp_size 2 --pp_size 2 \
  --output_dir "$TMP/r1" --resume_from_checkpoint "$TMP/mp6/checkpoint-3"
tail_like mp6_same "$TMP/mp6" "$TMP/r1" 0
run mp6_at_one 0 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --output_dir "$TMP/r2" --resume_from_checkpoint "$TMP/mp6/checkpoint-3"
tail_like mp6_at_one "$TMP/one6" "$TMP/r2" 1e-5
run mp6_at_dp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --per_device_train_batch_size 1 \
  --output_dir "$TMP/r3" --resume_from_checkpoint "$TMP/mp6/checkpoint-3"
tail_like mp6_at_dp2 "$TMP/one6" "$TMP/r3" 1e-5
# A DP2 x PP2 checkpoint (each rank's file a quarter of the AdamW state) continues at one rank.
run dp2pp2_6 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --per_device_train_batch_size 1 \
  --pp_size 2 --output_dir "$TMP/dp2pp2_6"
run dp2pp2_at_one 0 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --output_dir "$TMP/r5" \
  --resume_from_checkpoint "$TMP/dp2pp2_6/checkpoint-3"
tail_like dp2pp2_at_one "$TMP/one6" "$TMP/r5" 1e-5
run one6_at_pp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --pp_size 2 --output_dir "$TMP/r4" \
  --resume_from_checkpoint "$TMP/one6/checkpoint-3"
tail_like one6_at_pp2 "$TMP/one6" "$TMP/r4" 1e-5

# Evaluation through the stages, with gradient checkpointing on each stage's layers: one rank's eval_loss.
eval_flags=("${common[@]}" --split_dataset_ratio 0.2 --eval_steps 2 --gradient_checkpointing true)
run one_eval 0 "$SWIFT" sft --model "$TMP/qwen2" "${eval_flags[@]}" --output_dir "$TMP/one_eval"
run pp4_eval 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${eval_flags[@]}" --pp_size 4 --output_dir "$TMP/pp4_eval"
"$PY" - "$TMP/one_eval" "$TMP/pp4_eval" <<'P' && ok || bad "pp4_eval: eval_loss differs from one rank"
import json, sys
evals = lambda d: [json.loads(l)["eval_loss"] for l in open(f"{d}/logging.jsonl") if '"eval_loss"' in l]
a, b = evals(sys.argv[1]), evals(sys.argv[2])
assert len(a) == len(b) == 2 and all(abs(x - y) < 1e-5 for x, y in zip(a, b)), (a, b)
P

# The seeds' Megatron command line as written (ms-swift's `megatron` entry point), the model and data local and
# the sizes scaled to 4 CPU ranks.
MEGATRON="$(dirname "$SWIFT")/megatron"
run megatron_seed 0 env NPROC_PER_NODE=4 CUDA_VISIBLE_DEVICES=0,1,2,3 "$MEGATRON" sft --model "$TMP/qwen3" \
  --train_type full --tp_size 2 --pp_size 2 --cp_size 1 --dp_size 1 --dataset 'swift/self-cognition#32' \
  --num_train_epochs 1 --per_device_train_batch_size 1 --gradient_accumulation_steps 16 --learning_rate 1e-5 \
  --max_length 8192 --output_dir "$TMP/output_megatron" --use_fp16 true --save_safetensors true \
  --model_name Tiny Tests --model_author Tests Tests
ls "$TMP"/output_megatron/v0-*/checkpoint-2/model.safetensors >/dev/null 2>&1 && ok || bad "megatron_seed wrote no checkpoint-2"
has megatron_seed_layout "model parallel: tp 2 x pp 2 x dp 1" err

# Checked before anything loads, naming the flag.
run pp3_layers 2 env NPROC_PER_NODE=3 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --pp_size 3 --output_dir "$TMP/x1"
has pp3_layers "pipeline stage 0 of 3 would get no layer (the model has 2)" err
grep -q "parameters:" "$TMP/err" && bad "pp3_layers: found only after the model loaded" || ok
run pp3_ranks 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --pp_size 3 --output_dir "$TMP/x2"
has pp3_ranks "--tp_size 1 x --pp_size 3 (3) does not divide the 2 ranks" err
run pp_first_too_many 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --pp_size 2 \
  --decoder_first_pipeline_num_layers 4 --output_dir "$TMP/x3"
has pp_first_too_many "pipeline stage 1 of 2 would get no layer" err
run interleaved_m 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${common[@]}" --pp_size 2 \
  --virtual_pipeline_model_parallel_size 2 --gradient_accumulation_steps 3 --output_dir "$TMP/x5"
has interleaved_m "runs 3 micro-batches per step (--gradient_accumulation_steps), not a multiple of --pp_size 2" err
run interleaved_layers 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${common[@]}" --pp_size 2 \
  --virtual_pipeline_model_parallel_size 2 --output_dir "$TMP/x6"
has interleaved_layers "pipeline stage 0 of 4 would get no layer (the model has 2)" err

finish pipeline_parallel
