#!/usr/bin/env bash
# End-to-end: Megatron-style expert parallelism (--expert_model_parallel_size / --ep_size) on the CPU over c10d
# (Gloo), started by swift's launcher. Usage: expert_parallel_test.sh path/to/swift
#  - a Qwen3-MoE model (2 sparse layers of 4 experts, top 2) trained with its experts split over 2 ranks (DP2),
#    over 4 ranks (DP4, one expert each), over 2 of 4 data-parallel ranks (two copies of each expert, their
#    gradients summed and their AdamW state split), with pipeline stages (EP2 x PP2) and with context parallelism
#    (EP2 x CP2) gives one rank's losses, grad norms and final weights (fp32, 1e-5) on the same global batch; so
#    does LoRA (the experts frozen and split);
#  - evaluation (a short last round) gives one rank's eval_loss; the experts' load (expert_load_max) is logged;
#  - the router's aux loss under EP2 gives plain data parallelism's numbers (each rank's aux over its own tokens);
#  - each EP2 rank reads only its half of the experts from the files (the log's figure against the file's tensors);
#  - the checkpoint holds every expert under its Hugging Face name; an EP2 checkpoint resumes exactly at EP2 and
#    continues at one rank and at EP4 as one rank would;
#  - with tensor parallelism (Megatron's --expert_tensor_parallel_size 1: sequence parallelism, each rank routing its
#    own part of the sequence through whole experts): TP2, TP2 x EP2 (the EP group is the TP group), TP2 x EP2 x DP2
#    and TP2 x EP4 (the EP group spans TP and DP) give one rank's numbers, full and LoRA (also on the experts' stacked
#    weights, --target_parameters, at TP2: PEFT's names, its merge answering alike), and the aux loss too; a
#    TP2 x EP2 checkpoint resumes exactly at TP2 x EP2 and continues at one rank; TP4 x EP2 (two holders of each
#    expert inside one replica) equals TP4; TP2 parts (--save_safetensors false) join into one rank's weights;
#  - Mixtral (its files in Mixtral's names) at EP2 equals one rank, and transformers loads what it saves;
#  - an --ep_size that does not divide the ranks of a stage, a dense model, --tp_size on a MoE model without
#    --sequence_parallel, a capacity factor with --tp_size, and ZeRO-2 stop with exit 2
#    before the model loads.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"

export_moe_model
"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 5 --output_dir "$TMP/dense" >/dev/null 2>&1 || bad "export dense"

# --adam_epsilon 1e-6 as dist_test.sh: gradients at the level of summation-order noise must not decide a step.
base=(--dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests --train_type full
      --gradient_accumulation_steps 4 --learning_rate 1e-3 --logging_steps 1 --add_version false --num_threads 1
      --seed 1 --adam_epsilon 1e-6 --max_grad_norm 1.0 --max_steps 4 --save_steps 4)

# Global batch 2: one rank of 2 rows, EP2 (two ranks of 1), EP2 x PP2 (two replicas of two stages).
run one 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 2 --output_dir "$TMP/one"
run ep2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 1 --ep_size 2 \
  --output_dir "$TMP/ep2"
has ep2_layout "model parallel: tp 1 x pp 1 x dp 2 (experts split over ep 2 of them)" err
has ep2_experts "expert parallel: the experts of each sparse layer split over 2 ranks (this rank: experts 0-1 of 4)" err
compare ep2 "$TMP/one" "$TMP/ep2"
# The experts' load is logged with the losses: between 1 (balanced) and 4 (every choice to one expert); and the
# (token, choice) rows each expert was routed in a step (top 2 of 4, the mean of the sparse layers), as one rank
# routes them, in logging.jsonl but not on the console line.
"$PY" - "$TMP/ep2/logging.jsonl" "$TMP/one/logging.jsonl" "$TMP/err" <<'P' && ok || bad "ep2: no expert_load_max or expert_tokens in the log"
import json, sys
rows = {p: [r for r in map(json.loads, open(p)) if "loss" in r] for p in sys.argv[1:3]}
for path, rs in rows.items():
    loads = [r["expert_load_max"] for r in rs]
    assert len(loads) == 4 and all(1.0 <= x <= 4.0 for x in loads), (path, loads)
    for r in rs:
        t = r["expert_tokens"]
        assert len(t) == 4 and min(t) >= 0 and sum(t) > 0 and 2 * sum(t) == round(2 * sum(t)), (path, r)
ep2, one = rows.values()
worst = max(abs(a - b) for x, y in zip(ep2, one) for a, b in zip(x["expert_tokens"], y["expert_tokens"]))
assert worst < 1e-6, (worst, ep2, one)
assert "expert_tokens" not in open(sys.argv[3]).read()
print("expert_tokens", one[0]["expert_tokens"], "equal under EP2")
P
# Each rank read half of every layer's experts after the split (the log rounds to 0.1 MiB; the experts are 6 MiB).
"$PY" - "$TMP/err" "$TMP/moe/model.safetensors" <<'P' && ok || bad "ep2: a rank read more than its experts"
import math, re, sys
from safetensors import safe_open
read = [float(x) * 2**20 for x in re.findall(r"expert parallel: read ([\d.]+) MiB of expert weights", open(sys.argv[1]).read())]
with safe_open(sys.argv[2], "np") as f:
    size = lambda s: {"F32": 4, "BF16": 2, "F16": 2}[s.get_dtype()] * math.prod(s.get_shape())
    experts = sum(size(f.get_slice(k)) for k in f.keys() if ".mlp.experts." in k)
assert len(read) == 1 and abs(read[0] - experts / 2) <= 0.06 * 2**20, (read, experts)
print(f"rank 0 read {read[0] / 2**20:.1f} MiB of the experts' {experts / 2**20:.1f} MiB")
P
run ep2_pp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 1 \
  --ep_size 2 --pp_size 2 --output_dir "$TMP/ep2_pp2"
compare ep2_pp2 "$TMP/one" "$TMP/ep2_pp2"
# Every expert under its Hugging Face name, as transformers saves Qwen3-MoE.
"$PY" - "$TMP/ep2/checkpoint-4/model.safetensors" <<'P' && ok || bad "ep2: the checkpoint lacks experts"
import sys
from safetensors import safe_open
keys = set(safe_open(sys.argv[1], "np").keys())
want = {f"model.layers.{l}.mlp.experts.{e}.{p}.weight" for l in range(2) for e in range(4) for p in ("gate_proj", "up_proj", "down_proj")}
assert want <= keys, sorted(want - keys)[:5]
P

# Global batch 4: one rank of 4 rows; EP4 (one expert per rank); EP2 over DP4 (each expert on two ranks: their
# gradients summed, their AdamW state split by the distributed optimizer); EP2 x CP2 (two replicas, each row split).
run one4 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/one4"
run ep4 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 1 --ep_size 4 \
  --output_dir "$TMP/ep4"
has ep4_experts "(this rank: experts 0-0 of 4)" err
# The estimate before the first step takes the AdamW state from this rank's optimizer (the dense part's share over
# the data group, its own expert whole): rank 0's parameters + gradients + AdamW as measured after the step.
"$PY" - "$TMP/err" <<'P' && ok || bad "ep4: the memory estimate is not rank 0's measured state"
import re, sys
log = open(sys.argv[1]).read()
w, g, a = (float(x) for x in re.search(r"estimate\): weights ([\d.]+) MiB, gradients ([\d.]+) MiB, AdamW state ([\d.]+) MiB", log).groups())
held = float(re.search(r"holds after the first step \(parameters \+ gradients \+ AdamW state\) per rank: ([\d.]+) MiB", log).group(1))
assert abs(w + g + a - held) <= 0.02 * held, (w, g, a, held)
P
compare ep4 "$TMP/one4" "$TMP/ep4"
run ep2_dp4 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 1 \
  --ep_size 2 --output_dir "$TMP/ep2_dp4"
has ep2_dp4_sum "their gradients summed over the 2 ranks holding the same experts" err
has ep2_dp4_optimizer "(the experts' over the 2 ranks holding the same)" err
compare ep2_dp4 "$TMP/one4" "$TMP/ep2_dp4"
run ep2_cp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 2 \
  --ep_size 2 --cp_size 2 --output_dir "$TMP/ep2_cp2"
compare ep2_cp2 "$TMP/one4" "$TMP/ep2_cp2"

# Tensor parallelism (with sequence parallelism, as Megatron requires for MoE): the sparse layers whole on each rank,
# each routing its half of the sequence; experts split over EP groups that are the TP group (EP2 on TP2) or span TP
# and DP (EP4 on TP2 x DP2).
sp=(--tp_size 2 --sequence_parallel true)
run tp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${sp[@]}" --per_device_train_batch_size 2 \
  --output_dir "$TMP/tp2"
compare tp2 "$TMP/one" "$TMP/tp2"
run tp2_ep2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${sp[@]}" --per_device_train_batch_size 2 \
  --ep_size 2 --output_dir "$TMP/tp2_ep2"
has tp2_ep2_layout "model parallel: tp 2 x pp 1 x dp 1 (experts split over ep 2 of them)" err
compare tp2_ep2 "$TMP/one" "$TMP/tp2_ep2"
run tp2_ep2_dp2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${sp[@]}" --per_device_train_batch_size 2 \
  --ep_size 2 --output_dir "$TMP/tp2_ep2_dp2"
has tp2_ep2_dp2_sum "their gradients summed over the 2 ranks holding the same experts" err
compare tp2_ep2_dp2 "$TMP/one4" "$TMP/tp2_ep2_dp2"
run tp2_ep4 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${sp[@]}" --per_device_train_batch_size 2 \
  --ep_size 4 --output_dir "$TMP/tp2_ep4"
has tp2_ep4_experts "(this rank: experts 0-0 of 4)" err
compare tp2_ep4 "$TMP/one4" "$TMP/tp2_ep4"
# TP4 x EP2 on 4 ranks: no data group, but each expert on two ranks of the replica, their gradients summed; it gives
# TP4's numbers (TP4 alone differs from one rank by 2e-5 in the grad norm: the replicated KV heads' summation order).
run tp4 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --tp_size 4 --sequence_parallel true \
  --per_device_train_batch_size 2 --output_dir "$TMP/tp4"
run tp4_ep2 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --tp_size 4 --sequence_parallel true \
  --ep_size 2 --per_device_train_batch_size 2 --output_dir "$TMP/tp4_ep2"
has tp4_ep2_sum "their gradients summed over the 2 ranks holding the same experts" err
compare tp4_ep2 "$TMP/tp4" "$TMP/tp4_ep2"
# Each TP rank's part of a MoE model (--save_safetensors false, without EP) joins into one rank's checkpoint (the
# same schedule: 4 steps, checkpoint-2 compared).
run parts_one 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 2 --max_steps 4 --save_steps 2 \
  --output_dir "$TMP/parts_one"
run parts_tp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${sp[@]}" --per_device_train_batch_size 2 \
  --max_steps 4 --save_steps 2 --save_safetensors false --output_dir "$TMP/parts_tp2"
test -s "$TMP/parts_tp2/checkpoint-2/mp_rank_01_000.safetensors" && ok || bad "parts_tp2: no part of TP rank 1"
run parts_to_hf 0 "$SWIFT" export --model "$TMP/parts_tp2/checkpoint-2" --to_hf true --output_dir "$TMP/parts_hf"
"$PY" - "$TMP/parts_one/checkpoint-2/model.safetensors" "$TMP/parts_hf/model.safetensors" <<'P' && ok || bad "parts_to_hf: not one rank's weights"
import sys
from safetensors.numpy import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
assert a.keys() == b.keys(), sorted(set(a) ^ set(b))[:5]
diff = max(float(abs(a[k].astype("float64") - b[k]).max()) for k in a)
assert diff < 1e-5, diff
P
run to_mcore_moe 0 "$SWIFT" export --model "$TMP/moe" --to_mcore true --tp_size 2 --output_dir "$TMP/moe_mcore"

# Evaluation: 8 held-out rows in batches of 3 per rank (a short last round; every rank joins every exchange) give
# one rank's eval_loss.
evaluate=(--max_steps 2 --save_steps 2 --eval_steps 2 --split_dataset_ratio 0.2 --per_device_eval_batch_size 3)
run eval_one 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${evaluate[@]}" --per_device_train_batch_size 2 --output_dir "$TMP/eval_one"
run eval_ep2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${evaluate[@]}" --per_device_train_batch_size 1 \
  --ep_size 2 --output_dir "$TMP/eval_ep2"
"$PY" - "$TMP/eval_one" "$TMP/eval_ep2" <<'P' && ok || bad "eval_ep2: eval_loss differs from one rank's"
import json, sys
loss = lambda d: [r["eval_loss"] for r in map(json.loads, open(f"{d}/logging.jsonl")) if "eval_loss" in r]
a, b = loss(sys.argv[1]), loss(sys.argv[2])
assert len(a) == len(b) == 1 and abs(a[0] - b[0]) < 1e-5, (a, b)
P

# LoRA (no dropout, whose masks differ between one rank and two): the frozen experts split, the adapter one rank's.
lora=(--train_type lora --lora_dropout 0)
run lora_one 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${lora[@]}" --per_device_train_batch_size 2 --output_dir "$TMP/lora_one"
run lora_ep2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${lora[@]}" --per_device_train_batch_size 1 \
  --ep_size 2 --output_dir "$TMP/lora_ep2"
compare lora_ep2 "$TMP/lora_one" "$TMP/lora_ep2" adapter_model.safetensors
run lora_tp2_ep2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${lora[@]}" "${sp[@]}" \
  --per_device_train_batch_size 2 --ep_size 2 --output_dir "$TMP/lora_tp2_ep2"
compare lora_tp2_ep2 "$TMP/lora_one" "$TMP/lora_tp2_ep2" adapter_model.safetensors
# LoRA on the experts' stacked weights too (--target_parameters, PEFT's ParamWrapper): TP2 with sequence parallelism
# (each rank's tokens through whole experts, the branches' gradients summed) equals one rank; the adapter keeps PEFT's
# names; infer with it equals infer on its merge (answers and log probabilities); with --ep_size, exit 2.
experts_lora=("${lora[@]}" --target_parameters mlp.experts.gate_up_proj mlp.experts.down_proj)
run lora_experts_one 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${experts_lora[@]}" --per_device_train_batch_size 2 \
  --output_dir "$TMP/lora_experts_one"
run lora_experts_tp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${experts_lora[@]}" "${sp[@]}" \
  --per_device_train_batch_size 2 --output_dir "$TMP/lora_experts_tp2"
compare lora_experts_tp2 "$TMP/lora_experts_one" "$TMP/lora_experts_tp2" adapter_model.safetensors
"$PY" - "$TMP/lora_experts_one/checkpoint-4" <<'P' && ok || bad "lora_experts: not PEFT's names or config"
import json, sys
from safetensors.numpy import load_file
d = sys.argv[1]
w = load_file(f"{d}/adapter_model.safetensors")
config = json.load(open(f"{d}/adapter_config.json"))
assert config["target_parameters"] == ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"], config["target_parameters"]
for layer in (0, 1):
    e = f"base_model.model.model.layers.{layer}.mlp.experts."
    assert w[e + "base_layer.lora_A.weight"].shape[0] == w[e + "lora_A.weight"].shape[0] == 8 * 4, layer  # r x experts
    assert abs(w[e + "lora_B.weight"]).max() > 0, "down_proj's branch did not train"
P
printf '%s\n' '{"messages": [{"role": "user", "content": "Who are you?"}]}' '{"messages": [{"role": "user", "content": "What is 2+2?"}]}' \
  > "$TMP/ask.jsonl"
ask=(--val_dataset "$TMP/ask.jsonl" --max_new_tokens 6 --logprobs true --top_logprobs 5)
run lora_experts_infer 0 "$SWIFT" infer --adapters "$TMP/lora_experts_one/checkpoint-4" "${ask[@]}" --result_path "$TMP/experts_adapter.jsonl"
run lora_experts_merge 0 "$SWIFT" export --adapters "$TMP/lora_experts_one/checkpoint-4" --output_dir "$TMP/experts_merged"
run lora_experts_infer_merged 0 "$SWIFT" infer --model "$TMP/experts_merged" "${ask[@]}" --result_path "$TMP/experts_merged.jsonl"
"$PY" - "$TMP/experts_adapter.jsonl" "$TMP/experts_merged.jsonl" <<'P' && ok || bad "lora_experts: the merge answers differently"
import json, re, sys
a, b = ([json.loads(l) for l in open(f)] for f in sys.argv[1:3])
assert [r["response"] for r in a] == [r["response"] for r in b], (a, b)
flat = lambda rows: [float(v) for v in re.findall(r'"logprob": (-?[\d.e+-]+)', json.dumps([r["logprobs"] for r in rows]))]
fa, fb = flat(a), flat(b)
assert len(fa) == len(fb) >= 2 * 6 * 6 and max(abs(x - y) for x, y in zip(fa, fb)) < 1e-4, (fa, fb)
P
run lora_experts_ep2 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${experts_lora[@]}" \
  --per_device_train_batch_size 1 --ep_size 2 --output_dir "$TMP/lora_experts_ep2"
has lora_experts_ep2_message "--target_parameters with --expert_model_parallel_size 2 is not available yet" err

# The aux loss is each rank's over its own tokens (as transformers under DDP): EP2 gives DP2's numbers.
run aux_dp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 1 \
  --router_aux_loss_coef 0.01 --output_dir "$TMP/aux_dp2"
run aux_ep2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 1 \
  --router_aux_loss_coef 0.01 --ep_size 2 --output_dir "$TMP/aux_ep2"
compare aux_ep2 "$TMP/aux_dp2" "$TMP/aux_ep2"
grep -q '"aux_loss"' "$TMP/aux_ep2/logging.jsonl" && ok || bad "aux_ep2: no aux_loss logged"
# Under TP every rank sees the whole rows' router logits (gathered), so TP2 x EP2 gives one rank's aux loss.
run aux_one 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --per_device_train_batch_size 2 --router_aux_loss_coef 0.01 \
  --output_dir "$TMP/aux_one"
run aux_tp2_ep2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${sp[@]}" --per_device_train_batch_size 2 \
  --router_aux_loss_coef 0.01 --ep_size 2 --output_dir "$TMP/aux_tp2_ep2"
compare aux_tp2_ep2 "$TMP/aux_one" "$TMP/aux_tp2_ep2"
"$PY" - "$TMP/aux_one" "$TMP/aux_tp2_ep2" <<'P' && ok || bad "aux_tp2_ep2: aux_loss differs from one rank's"
import json, sys
aux = lambda d: [r["aux_loss"] for r in map(json.loads, open(f"{d}/logging.jsonl")) if "aux_loss" in r]
a, b = aux(sys.argv[1]), aux(sys.argv[2])
assert len(a) == len(b) == 4 and max(abs(x - y) for x, y in zip(a, b)) < 1e-6, (a, b)
P

# Resuming: an EP2 checkpoint at step 3 of 6 continues exactly at EP2, and at one rank as one rank would.

six=(--max_steps 6 --save_steps 3)
run r_ep2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${six[@]}" --per_device_train_batch_size 1 \
  --ep_size 2 --output_dir "$TMP/r_ep2"
for r in 0 1; do
  test -s "$TMP/r_ep2/checkpoint-3/optimizer-rank0000$r-of-00002.safetensors" && ok || bad "r_ep2: no optimizer state of rank $r"
done
run r_ep2_again 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${six[@]}" --per_device_train_batch_size 1 \
  --ep_size 2 --resume_from_checkpoint "$TMP/r_ep2/checkpoint-3" --output_dir "$TMP/r_ep2_again"
tail_like r_ep2_again "$TMP/r_ep2" "$TMP/r_ep2_again" 0
run r_one 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${six[@]}" --per_device_train_batch_size 2 \
  --resume_from_checkpoint "$TMP/r_ep2/checkpoint-3" --output_dir "$TMP/r_one"
tail_like r_one "$TMP/r_ep2" "$TMP/r_one" 1e-5
# A TP2 x EP2 checkpoint (the EP group is the TP group) resumes exactly at TP2 x EP2, and at one rank.
run r_tp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${six[@]}" "${sp[@]}" --ep_size 2 \
  --per_device_train_batch_size 2 --output_dir "$TMP/r_tp2"
run r_tp2_again 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${six[@]}" "${sp[@]}" --ep_size 2 \
  --per_device_train_batch_size 2 --resume_from_checkpoint "$TMP/r_tp2/checkpoint-3" --output_dir "$TMP/r_tp2_again"
tail_like r_tp2_again "$TMP/r_tp2" "$TMP/r_tp2_again" 0
run r_tp2_one 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${six[@]}" --per_device_train_batch_size 2 \
  --resume_from_checkpoint "$TMP/r_tp2/checkpoint-3" --output_dir "$TMP/r_tp2_one"
tail_like r_tp2_one "$TMP/r_tp2" "$TMP/r_tp2_one" 1e-5
# ... and at EP4 (each rank's expert cut from the EP2 ranks' moments) as one rank does on the same batches.
run r_one4 0 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${six[@]}" --per_device_train_batch_size 4 \
  --resume_from_checkpoint "$TMP/r_ep2/checkpoint-3" --output_dir "$TMP/r_one4"
run r_ep4 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${six[@]}" --per_device_train_batch_size 1 \
  --ep_size 4 --resume_from_checkpoint "$TMP/r_ep2/checkpoint-3" --output_dir "$TMP/r_ep4"
"$PY" - "$TMP/r_one4" "$TMP/r_ep4" <<'P' && ok || bad "r_ep4: the resumed steps differ from one rank's"
import json, sys
rows = lambda d: [r for r in map(json.loads, open(f"{d}/logging.jsonl")) if "loss" in r]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert [r["global_step/max_steps"] for r in b] == ["4/6", "5/6", "6/6"], b
for x, y in zip(a, b):
    for k in ("loss", "grad_norm"):
        assert abs(x[k] - y[k]) / max(1.0, abs(x[k])) < 1e-5, (x, y)
P

# Mixtral (every layer sparse; its files in Mixtral's names: block_sparse_moe, experts' w1/w3/w2) from the Mistral
# tokenizer's tiny config: EP2 equals one rank; the checkpoint keeps Mixtral's names and transformers loads it; the
# chat template is ms-swift's for Mixtral (llama).
mkdir -p "$TMP/mixtral_config" && cp "$ROOT/configs/models/mistral-tiny/"* "$TMP/mixtral_config/"
"$PY" - "$TMP/mixtral_config/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(model_type="mixtral", architectures=["MixtralForCausalLM"], num_local_experts=4, num_experts_per_tok=2,
         intermediate_size=64, router_jitter_noise=0.0)
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
"$SWIFT" export --model "$TMP/mixtral_config" --init_strategy normal --seed 5 --output_dir "$TMP/mixtral" >/dev/null 2>&1 \
  || bad "export mixtral"
run one_mixtral 0 "$SWIFT" sft --model "$TMP/mixtral" "${base[@]}" --per_device_train_batch_size 2 \
  --output_dir "$TMP/one_mixtral"
run ep2_mixtral 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/mixtral" "${base[@]}" --per_device_train_batch_size 1 \
  --ep_size 2 --output_dir "$TMP/ep2_mixtral"
compare ep2_mixtral "$TMP/one_mixtral" "$TMP/ep2_mixtral"
"$PY" - "$TMP/one_mixtral" <<'P' && ok || bad "one_mixtral: not Mixtral's files, or transformers cannot load them"
import json, sys, torch, transformers
from safetensors import safe_open
run = sys.argv[1]
keys = set(safe_open(f"{run}/checkpoint-4/model.safetensors", "pt").keys())
assert "model.layers.1.block_sparse_moe.gate.weight" in keys and "model.layers.0.block_sparse_moe.experts.3.w3.weight" in keys
assert not any(".mlp." in k for k in keys), sorted(keys)[:8]
assert json.load(open(f"{run}/args.json"))["template"] == "llama"
m = transformers.AutoModelForCausalLM.from_pretrained(f"{run}/checkpoint-4", dtype=torch.float32)
assert type(m).__name__ == "MixtralForCausalLM"
P

# Layouts that cannot work stop before anything loads.
run bad_divide 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --ep_size 4 --output_dir "$TMP/x1"
has bad_divide "--expert_model_parallel_size 4 does not divide the 2 ranks of a pipeline stage" err
run bad_dense 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/dense" "${base[@]}" --ep_size 2 --output_dir "$TMP/x2"
has bad_dense "--expert_model_parallel_size 2: the model has no mixture-of-experts layers" err
run bad_tp 2 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --ep_size 2 --tp_size 2 --output_dir "$TMP/x3"
has bad_tp "--tp_size 2 on a mixture-of-experts model (qwen3_moe) needs --sequence_parallel true" err
run bad_capacity 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" "${sp[@]}" --moe_expert_capacity_factor 1 \
  --output_dir "$TMP/x6"
has bad_capacity "--moe_expert_capacity_factor with --tp_size 2 is not available yet" err
run bad_zero2 2 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/moe" "${base[@]}" --ep_size 2 --deepspeed zero2 --output_dir "$TMP/x4"
has bad_zero2 "x --ep_size 2 is not available yet" err

finish expert_parallel
