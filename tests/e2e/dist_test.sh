#!/usr/bin/env bash
# End-to-end: data-parallel training on the CPU over c10d (TCPStore + Gloo), started by swift's own launcher
# (NPROC_PER_NODE=2) and by hand with the torchrun variables. Usage: dist_test.sh path/to/swift
#  - 2 ranks x batch 2 give the same losses and final weights as 1 rank x batch 4 (fp32, 1e-5), full and LoRA,
#    also with an uneven last batch that leaves a rank nothing, and the same eval losses; the 2-rank checkpoint
#    answers in single-process infer as the 1-rank one does;
#  - so do ZeRO-1, ZeRO-2 and ZeRO-3 (sharded optimizer state, gradients, parameters), whose checkpoints resume at
#    2 ranks and in one process; ZeRO-3 holds about half of DDP's memory per rank at 2 ranks (measured), and
#    loading raises each rank's memory by about its share only; ZeRO-3 with offload_param, with DoRA, and LoRA
#    with --modules_to_save resumed;
#    --deepspeed JSON files and --fsdp shard_grad_op map onto them;
#  - resuming a 2-rank run from its checkpoint continues with the same losses, at 2 ranks and in one process;
#  - a rank killed mid-run stops the other; the launcher exits non-zero naming it; resuming afterwards works;
#  - a rendezvous that cannot complete (a rank missing, nothing at MASTER_ADDR, the port taken) ends with exit 4
#    and a message within --ddp_timeout, never a hang.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json safetensors numpy
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 5 --output_dir "$TMP/m" \
  >/dev/null 2>&1 || { echo "FAIL export"; exit 1; }
# --adam_epsilon 1e-6: AdamW turns a gradient at the level of summation-order noise (an embedding row the data never
# targets, ~1e-9) into a full-size step whose sign that noise decides; with the default 1e-8 one such element of
# the tied embedding ended 3.7e-4 apart between 1 and 2 ranks while every loss agreed to 4e-7. At 1e-6 such
# gradients move nothing and the weights agree to 1.4e-6 (measured).
common=(--model "$TMP/m" --dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests
        --max_steps 6 --gradient_accumulation_steps 2 --learning_rate 1e-3 --logging_steps 1 --save_steps 3
        --add_version false --lora_dropout 0 --num_threads 1 --seed 1 --adam_epsilon 1e-6)

# 1. Two ranks equal one rank on the same global batch.
compare() {  # compare NAME DIR_A DIR_B WEIGHTS_FILE: losses and final weights agree to 1e-5
  "$PY" - "$2" "$3" "$4" <<'P' && ok || bad "$1: 2 ranks differ from 1 rank"
import json, sys
from safetensors.numpy import load_file
a, b, weights = sys.argv[1:4]
def losses(d):
    return [json.loads(l)["loss"] for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
la, lb = losses(a), losses(b)
assert len(la) == len(lb) == 6, (la, lb)
worst = max(abs(x - y) / max(1.0, abs(x)) for x, y in zip(la, lb))
assert worst < 1e-5, (worst, la, lb)
wa, wb = load_file(f"{a}/checkpoint-6/{weights}"), load_file(f"{b}/checkpoint-6/{weights}")
assert wa.keys() == wb.keys()
diff = max(float(abs(wa[k].astype("float64") - wb[k].astype("float64")).max()) for k in wa)
assert diff < 1e-5, diff
print(f"losses within {worst:.1e}, weights within {diff:.1e}")
P
}
resumed_like() {  # resumed_like NAME REF_RUN (RUN TOLERANCE)...: each run resumed at step 3 logs REF_RUN's losses
  local name="$1"; shift
  "$PY" - "$@" <<'P' && ok || bad "$name: resumed losses differ"
import json, sys
def losses(d):
    return {json.loads(l)["global_step/max_steps"]: json.loads(l)["loss"] for l in open(f"{d}/logging.jsonl") if '"loss"' in l}
ref = losses(sys.argv[1])
for d, tol in zip(sys.argv[2::2], sys.argv[3::2]):
    got = losses(d)
    assert sorted(got) == ["4/6", "5/6", "6/6"], got
    assert all(abs(ref[k] - got[k]) <= float(tol) * max(1, abs(ref[k])) for k in got), (d, ref, got)
P
}
for type in full lora; do
  weights=model.safetensors
  [ "$type" = lora ] && weights=adapter_model.safetensors
  run "one_$type" 0 "$SWIFT" sft "${common[@]}" --train_type "$type" --per_device_train_batch_size 4 --output_dir "$TMP/one-$type"
  run "two_$type" 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type "$type" --per_device_train_batch_size 2 \
    --output_dir "$TMP/two-$type"
  has "two_${type}_launch" "launching 2 ranks" err
  has "two_${type}_gloo" "data parallel: 2 ranks" err
  compare "$type" "$TMP/one-$type" "$TMP/two-$type" "$weights"
done
# With small buckets (a DeepSpeed JSON's reduce_bucket_size, in elements) the sums start inside the backward,
# bucket by bucket as autograd finishes their gradients, and the result is still the 1-rank one.
printf '{"zero_optimization": {"stage": 0, "reduce_bucket_size": 200000}}' > "$TMP/small-buckets.json"
run overlap 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type full --per_device_train_batch_size 2 \
  --deepspeed "$TMP/small-buckets.json" --output_dir "$TMP/overlap"
grep -qE "gradient buckets started during the backward: ([2-9]|[1-9][0-9]+) of " "$TMP/err" && ok || \
  bad "overlap: fewer than 2 buckets started during the backward: $(grep -F 'during the backward' "$TMP/err")"
compare "overlapped buckets" "$TMP/one-full" "$TMP/overlap" model.safetensors

# 1a. An uneven last batch (41 rows, global batch 4: its last micro-batch leaves rank 1 nothing) and evaluation
#     split over the ranks: still the 1-rank result, for DDP and ZeRO-2.
uneven=("${common[@]/self-cognition#40/self-cognition#41}" --val_dataset swift/self-cognition#5 --eval_steps 3)
run uneven_one 0 "$SWIFT" sft "${uneven[@]}" --train_type full --per_device_train_batch_size 4 --output_dir "$TMP/u-one"
for stage in zero0 zero2 zero3; do
  run "uneven_$stage" 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${uneven[@]}" --train_type full --per_device_train_batch_size 2 \
    --deepspeed "$stage" --output_dir "$TMP/u-$stage"
  compare "uneven $stage" "$TMP/u-one" "$TMP/u-$stage" model.safetensors
  "$PY" - "$TMP/u-one" "$TMP/u-$stage" <<'P' && ok || bad "uneven $stage: eval losses differ"
import json, sys
def evals(d):
    return [json.loads(l)["eval_loss"] for l in open(f"{d}/logging.jsonl") if '"eval_loss"' in l]
a, b = evals(sys.argv[1]), evals(sys.argv[2])
assert len(a) == len(b) == 2 and all(abs(x - y) <= 1e-5 * max(1, abs(x)) for x, y in zip(a, b)), (a, b)
P
done

# 1b. ZeRO-1 and ZeRO-2 (optimizer state / and gradients sharded) equal 1 rank too; their optimizer state is one
#     file per rank, and a ZeRO-2 checkpoint resumes at 2 ranks (same losses) and in one process.
for stage in zero1 zero2 zero3; do
  for type in full lora; do
    weights=model.safetensors
    [ "$type" = lora ] && weights=adapter_model.safetensors
    run "${stage}_$type" 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type "$type" \
      --per_device_train_batch_size 2 --deepspeed "$stage" --output_dir "$TMP/$stage-$type"
    has "${stage}_${type}_shares" "holds after the first step" err
    if [ "$stage" = zero3 ]; then  # from the second micro-batch on, each gather was started by the one before
      grep -qE "ZeRO-3: [1-9][0-9]* of [0-9]+ parameter gathers were prefetched" "$TMP/err" && ok || \
        bad "zero3 $type: no prefetched gathers: $(grep -F 'prefetched' "$TMP/err")"
    fi
    compare "$stage $type" "$TMP/one-$type" "$TMP/$stage-$type" "$weights"
  done
done
# 1c. ZeRO-3 with offload_param (on the CPU the GPU's path: owners keep their values at home and compute on the
#     copy they broadcast), and with DoRA (whose magnitudes need the whole base: loaded whole first), still equal
#     1 rank; a LoRA run with --modules_to_save (base weights in the adapter, owned by one rank) resumes at 2 ranks.
for type in full lora; do
  weights=model.safetensors
  [ "$type" = lora ] && weights=adapter_model.safetensors
  run "zero3_offload_$type" 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type "$type" \
    --per_device_train_batch_size 2 --deepspeed zero3_offload --output_dir "$TMP/z3o-$type"
  has "zero3_offload_${type}_log" "ZeRO-3 offload_param: each rank keeps its parameters in CPU RAM" err
  has "zero3_offload_${type}_read" "each rank read only the parameters it owns" err
  compare "zero3_offload $type" "$TMP/one-$type" "$TMP/z3o-$type" "$weights"
done
# bf16 compute (autocast over fp32 masters; no autocast weight cache under ZeRO-3, the head's backward in bf16):
# the losses of 1 rank to bf16's rounding.
for n in one z3; do
  if [ "$n" = one ]; then launch=(); batch=4; extra=(); else launch=(env NPROC_PER_NODE=2); batch=2; extra=(--deepspeed zero3); fi
  run "bf16_$n" 0 "${launch[@]}" "$SWIFT" sft "${common[@]}" --train_type full --torch_dtype bfloat16 \
    --per_device_train_batch_size "$batch" "${extra[@]}" --output_dir "$TMP/bf16-$n"
done
"$PY" - "$TMP/bf16-one" "$TMP/bf16-z3" <<'P' && ok || bad "bf16 ZeRO-3 losses differ from 1 rank"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(f"{d}/logging.jsonl") if '"loss"' in l] for d in sys.argv[1:3])
assert len(a) == len(b) == 6 and all(abs(x - y) <= 1e-4 * abs(x) for x, y in zip(a, b)), (a, b)
P
run dora_one 0 "$SWIFT" sft "${common[@]}" --train_type lora --use_dora true --per_device_train_batch_size 4 \
  --output_dir "$TMP/dora-one"
run dora_zero3 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type lora --use_dora true \
  --per_device_train_batch_size 2 --deepspeed zero3 --output_dir "$TMP/dora-z3"
compare "zero3 dora" "$TMP/dora-one" "$TMP/dora-z3" adapter_model.safetensors
run mts_zero3 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type lora --modules_to_save embed_tokens \
  --per_device_train_batch_size 2 --deepspeed zero3 --output_dir "$TMP/mts-z3"
run mts_zero3_resume 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type lora --modules_to_save embed_tokens \
  --per_device_train_batch_size 2 --deepspeed zero3 --output_dir "$TMP/mts-z3-res" --resume_from_checkpoint "$TMP/mts-z3/checkpoint-3"
resumed_like "ZeRO-3 LoRA with --modules_to_save" "$TMP/mts-z3" "$TMP/mts-z3-res" 1e-6

test -s "$TMP/zero2-full/checkpoint-3/optimizer-rank00000-of-00002.safetensors" && \
  test -s "$TMP/zero2-full/checkpoint-3/optimizer-rank00001-of-00002.safetensors" && \
  test ! -e "$TMP/zero2-full/checkpoint-3/optimizer.safetensors" && ok || bad "ZeRO optimizer shards"
run zero2_resume 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type full --per_device_train_batch_size 2 \
  --deepspeed zero2 --output_dir "$TMP/zero2-res" --resume_from_checkpoint "$TMP/zero2-full/checkpoint-3"
run zero2_resume_one 0 "$SWIFT" sft "${common[@]}" --train_type full --per_device_train_batch_size 4 \
  --output_dir "$TMP/zero2-res1" --resume_from_checkpoint "$TMP/zero2-full/checkpoint-3"
resumed_like "ZeRO-2" "$TMP/zero2-full" "$TMP/zero2-res" 1e-6 "$TMP/zero2-res1" 1e-5
# A checkpoint missing one shard is refused, not half restarted.
cp -r "$TMP/zero2-full/checkpoint-3" "$TMP/half-ckpt" && rm "$TMP/half-ckpt/optimizer-rank00001-of-00002.safetensors"
run missing_shard 3 "$SWIFT" sft "${common[@]}" --train_type full --per_device_train_batch_size 4 \
  --output_dir "$TMP/half" --resume_from_checkpoint "$TMP/half-ckpt"
has missing_shard_msg "not the full set of 2" err
# A DeepSpeed JSON file and the FSDP spelling; ZeRO-3 says it is not there.
printf '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": "auto"}}' > "$TMP/ds.json"
run ds_json 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type lora --per_device_train_batch_size 2 \
  --max_steps 1 --deepspeed "$TMP/ds.json" --output_dir "$TMP/ds"
has ds_json_stage "ZeRO-2 ($TMP/ds.json)" err
run fsdp 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type lora --per_device_train_batch_size 2 \
  --max_steps 1 --fsdp "shard_grad_op auto_wrap" --output_dir "$TMP/fsdp"
has fsdp_stage "ZeRO-2 (zero2)" err
run zero3_no_checkpointing 2 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type lora --deepspeed zero3 \
  --gradient_checkpointing false --output_dir "$TMP/z3"
has zero3_msg "ZeRO-3 needs gradient checkpointing" err
# ZeRO-3's checkpoint resumes in one process.
run zero3_resume_one 0 "$SWIFT" sft "${common[@]}" --train_type full --per_device_train_batch_size 4 \
  --output_dir "$TMP/zero3-res1" --resume_from_checkpoint "$TMP/zero3-full/checkpoint-3"
resumed_like "ZeRO-3 in one process" "$TMP/zero3-full" "$TMP/zero3-res1" 1e-5
# Per rank ZeRO-3 holds about 1/world of what DDP holds (measured on the tensors after the first step), and
# loading raises each rank's memory high-water mark by about its own share only (each rank reads only what it
# owns): a 43M-parameter Mistral-shaped model whose layers outweigh its untied embedding and head.
"$PY" - "$ROOT/configs/models/mistral-tiny" "$TMP/wide-config" <<'P'
import json, os, shutil, sys
src, dst = sys.argv[1:3]
shutil.copytree(src, dst)
c = json.load(open(f"{dst}/config.json"))
c.update(hidden_size=256, intermediate_size=4096, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=2)
json.dump(c, open(f"{dst}/config.json", "w"))
P
"$SWIFT" export --model "$TMP/wide-config" --init_strategy normal --seed 5 --output_dir "$TMP/wide" >/dev/null 2>&1
for stage in zero0 zero3; do
  run "held_$stage" 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/wide" --dataset swift/self-cognition#8 \
    --model_name A B --model_author C D --max_steps 1 --train_type full --num_threads 1 --deepspeed "$stage" \
    --save_only_model true --output_dir "$TMP/held-$stage"
  cp "$TMP/err" "$TMP/held-$stage.err"
done
share="$(sed -n 's/.*ZeRO-3 holds.*largest share \([0-9.]*\)x.*/\1/p' "$TMP/held-zero3.err")"
"$PY" -c "import sys; s = float(sys.argv[1]); print('ZeRO-3 largest share of DDP:', s); sys.exit(0 if s < 0.6 else 1)" "$share" \
  && ok || bad "ZeRO-3 per-rank memory is not about half of DDP's at 2 ranks ('$share')"
"$PY" - "$TMP/held-zero0.err" "$TMP/held-zero3.err" <<'P' && ok || bad "ZeRO-3 loading: each rank's memory rose by more than its share"
import re, sys
def raised(path):  # "raised by loading: 223.1 MiB, 223.2 MiB"
    line = next(l for l in open(path) if "raised by loading" in l)
    return [float(x) for x in re.findall(r"([0-9.]+) MiB", line.split("raised by loading:")[1])]
ddp, z3 = raised(sys.argv[1]), raised(sys.argv[2])
print("loading raised the high-water mark per rank: DDP", ddp, "MiB, ZeRO-3", z3, "MiB")
assert len(ddp) == len(z3) == 2 and max(z3) < 0.7 * min(ddp), (ddp, z3)
P
# The embedding and the head (31.3 MiB each) are gathered around their own operations, not for a whole
# micro-batch: at no time does a rank hold both of them gathered.
"$PY" - "$TMP/held-zero3.err" <<'P' && ok || bad "ZeRO-3 held the embedding and the head gathered at once"
import re, sys
line = next(l for l in open(sys.argv[1]) if "gathered at once" in l)
peaks = [float(x) for x in re.findall(r"([0-9.]+) MiB", line.split("per rank:")[1])]
print("parameters gathered at once, at most, per rank:", peaks, "MiB")
assert len(peaks) == 2 and 0 < max(peaks) < 2 * 31.25, peaks
P

# The 2-rank checkpoint in single-process infer answers as the 1-rank one.
printf '{"query": "who are you?"}\n' > "$TMP/ask.jsonl"
for n in one two; do
  run "infer_$n" 0 "$SWIFT" infer --model "$TMP/$n-full/checkpoint-6" --val_dataset "$TMP/ask.jsonl" \
    --result_path "$TMP/$n.jsonl" --max_new_tokens 8
done
cmp -s <("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['response'])" "$TMP/one.jsonl") \
       <("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['response'])" "$TMP/two.jsonl") \
  && ok || bad "the 2-rank checkpoint answers differently"

# 2. Resume a 2-rank run from its step-3 checkpoint: steps 4-6 log the same losses.
run resume2 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${common[@]}" --train_type full --per_device_train_batch_size 2 \
  --output_dir "$TMP/two-res" --resume_from_checkpoint "$TMP/two-full/checkpoint-3"
# ... and in one process with the same global batch (the data position counts global micro-batches).
run resume1 0 "$SWIFT" sft "${common[@]}" --train_type full --per_device_train_batch_size 4 \
  --output_dir "$TMP/two-res1" --resume_from_checkpoint "$TMP/two-full/checkpoint-3"
resumed_like "2 ranks" "$TMP/two-full" "$TMP/two-res" 1e-6 "$TMP/two-res1" 1e-5

# 3. Kill rank 1 mid-run: the launcher stops rank 0 and exits non-zero naming rank 1; then resume.
long=(--model "$TMP/m" --dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests
      --train_type lora --per_device_train_batch_size 1 --max_steps 100000 --save_steps 2 --logging_steps 1
      --add_version false --num_threads 1 --output_dir "$TMP/killed")
NPROC_PER_NODE=2 "$SWIFT" sft "${long[@]}" >"$TMP/kill.out" 2>"$TMP/kill.err" &
launcher=$!
for _ in $(seq 1 600); do [ -d "$TMP/killed/checkpoint-2" ] && break; sleep 0.1; done
victim=""
for pid in $(pgrep -P "$launcher"); do
  tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "RANK=1" && victim="$pid"
done
if [ -n "$victim" ]; then
  kill -9 "$victim"
  for _ in $(seq 1 300); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$launcher" 2>/dev/null; then
    bad "launcher still running 30 s after rank 1 was killed"; kill -9 "$launcher"
  else
    wait "$launcher"; rc=$?
    [ "$rc" != 0 ] && ok || bad "launcher exit status 0 after a rank was killed"
    has kill_names_rank "rank 1" kill.err
    has kill_names_signal "SIGKILL" kill.err
    [ -z "$(pgrep -P "$launcher")" ] && ok || bad "ranks left running"
  fi
else
  bad "no rank 1 found under the launcher"; kill -9 "$launcher"; cat "$TMP/kill.err" | tail -5
fi
ckpt="$(ls -d "$TMP"/killed/checkpoint-* | sort -t- -k2 -n | tail -1)"
run resume_after_kill 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${long[@]/100000/$(( $(basename "$ckpt" | cut -d- -f2) + 2 ))}" \
  --resume_from_checkpoint "$ckpt"

# 4. Rendezvous that cannot complete: exit 4 and a message, bounded by --ddp_timeout.
short=(--model "$TMP/m" --dataset swift/self-cognition#8 --model_name Tiny Tests --model_author Tests Tests
       --max_steps 1 --add_version false --num_threads 1 --ddp_timeout 3)
port="$(free_port)"
run missing_rank 4 env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" "$SWIFT" sft "${short[@]}" --output_dir "$TMP/r0"
has missing_rank_msg "rendezvous at 127.0.0.1:$port failed" err
run nobody_there 4 env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" "$SWIFT" sft "${short[@]}" --output_dir "$TMP/r1"
has nobody_there_hint "MASTER_ADDR/MASTER_PORT" err
"$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' > "$TMP/taken" &
holder=$!
for _ in $(seq 1 50); do [ -s "$TMP/taken" ] && break; sleep 0.1; done
run port_taken 4 env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(cat "$TMP/taken")" "$SWIFT" sft "${short[@]}" --output_dir "$TMP/r2"
has port_taken_hint "is taken" err
kill "$holder" 2>/dev/null
run bad_rank 2 env RANK=2 WORLD_SIZE=2 "$SWIFT" sft "${short[@]}" --output_dir "$TMP/r3"
has bad_rank_msg "RANK" err

finish dist
