#!/usr/bin/env bash
# End-to-end: swift rlhf --rlhf_type gkd (on-policy distillation) through the swift binary. Usage: gkd_test.sh SWIFT
#  - distillation works: a student taught (sft) to answer "<answer>N</answer>" with a random digit is distilled from
#    a teacher taught to answer 7, on the student's own completions (--lmbda 1): the loss falls and the student's
#    greedy answers become 7;
#  - the dataset's replies (--lmbda 0) with --sft_alpha train too; LoRA with --teacher_model = --model distils from
#    the base (the adapter switched off: its first loss is 0 up to rounding);
#  - a LoRA run resumed from its checkpoint repeats the unbroken run's losses; 2 ranks give 1 rank's losses (on
#    completions of one length: each rank averages over its own reply tokens, as under ms-swift's DDP);
#  - no --teacher_model, --seq_kd, the model-parallel flags and ZeRO-3 are clear errors (exit 2).
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json

# Questions asked 200 ways: the student's replies are random digits, the teacher's always 7.
"$PY" - "$TMP" <<'P'
import json, random, sys
r = random.Random(0)
with open(f"{sys.argv[1]}/student.jsonl", "w") as student, open(f"{sys.argv[1]}/teacher.jsonl", "w") as teacher, \
     open(f"{sys.argv[1]}/ask.jsonl", "w") as ask:
    for i in range(200):
        q = f"Pick a number, round {i}."
        row = lambda answer: json.dumps({"messages": [{"role": "user", "content": q},
                                                      {"role": "assistant", "content": f"<answer>{answer}</answer>"}]})
        student.write(row(r.randint(1, 9)) + "\n")
        teacher.write(row(7) + "\n")
        if i < 20:
            ask.write(json.dumps({"messages": [{"role": "user", "content": f"Pick a number, round {1000 + i}."}]}) + "\n")
P
sft=(sft --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --train_type full --max_steps 300
     --learning_rate 3e-3 --per_device_train_batch_size 8 --logging_steps 100 --save_steps 300 --add_version false)
run student 0 "$SWIFT" "${sft[@]}" --dataset "$TMP/student.jsonl" --output_dir "$TMP/student"
run teacher 0 "$SWIFT" "${sft[@]}" --dataset "$TMP/teacher.jsonl" --output_dir "$TMP/teacher"
STUDENT="$TMP/student/checkpoint-300" TEACHER="$TMP/teacher/checkpoint-300"
sevens() {  # sevens NAME MODEL: how many of the 20 greedy answers are 7
  "$SWIFT" infer --model "$2" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/$1.jsonl" --max_new_tokens 12 \
    --temperature 0 >/dev/null 2>&1
  "$PY" -c 'import json,sys; print(sum("<answer>7</answer>" in json.loads(l)["response"] for l in open(sys.argv[1])))' "$TMP/$1.jsonl"
}

# 1. On-policy distillation: the student answers, the teacher's distribution is the target.
gkd=(rlhf --rlhf_type gkd --dataset "$TMP/student.jsonl" --teacher_model "$TEACHER" --max_completion_length 12
     --per_device_train_batch_size 8 --logging_steps 1 --add_version false)
run gkd 0 "$SWIFT" "${gkd[@]}" --model "$STUDENT" --train_type full --lmbda 1 --learning_rate 2e-3 --max_steps 30 \
  --save_steps 30 --output_dir "$TMP/gkd"
has gkd_teacher "teacher model: $TEACHER (frozen)" err
before=$(sevens before "$STUDENT") after=$(sevens after "$TMP/gkd/checkpoint-30")
"$PY" - "$TMP/gkd" "$before" "$after" <<'P' && ok || bad "gkd: the loss did not fall or the student did not learn the teacher's answer"
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l]
assert len(rows) == 30 and all(r["loss"] >= 0 for r in rows), rows
first, last = sum(r["loss"] for r in rows[:5]) / 5, sum(r["loss"] for r in rows[-5:]) / 5
before, after = int(sys.argv[2]), int(sys.argv[3])
assert last < 0.5 * first, (first, last)
assert before <= 6 and after >= 16, (before, after)
print(f"gkd: loss {first:.3f} over the first 5 steps, {last:.3f} over the last 5; greedy answers 7: {before}/20 -> {after}/20")
P

# 2. The dataset's replies with the SFT term; LoRA distilling from its own base (--teacher_model = --model).
run dataset 0 "$SWIFT" "${gkd[@]}" --model "$STUDENT" --train_type full --lmbda 0 --sft_alpha 0.5 --max_steps 3 \
  --output_dir "$TMP/dataset"
run self 0 "$SWIFT" "${gkd[@]}" --model "$STUDENT" --teacher_model "$STUDENT" --max_steps 2 --output_dir "$TMP/self"
has self_base "teacher model: the base model (the LoRA adapter switched off" err
"$PY" - "$TMP/dataset" "$TMP/self" <<'P' && ok || bad "dataset/self: the losses are wrong"
import json, math, sys
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
assert all(math.isfinite(r["loss"]) and r["loss"] > 0.1 for r in rows(sys.argv[1])), rows(sys.argv[1])  # + 0.5 x CE
assert rows(sys.argv[2])[0]["loss"] < 1e-6, rows(sys.argv[2])  # the student is its teacher before the first update
P

# 3. LoRA stopped at step 2 and resumed; 2 ranks as 1 rank (each rank generates its own rows).
lora=("${gkd[@]}" --model "$STUDENT" --lmbda 0.5 --learning_rate 1e-3 --max_steps 4 --save_steps 2)
run lora 0 "$SWIFT" "${lora[@]}" --output_dir "$TMP/lora"
run lora_resume 0 "$SWIFT" "${lora[@]}" --output_dir "$TMP/lora_resumed" --resume_from_checkpoint "$TMP/lora/checkpoint-2"
# Each rank's loss is the mean over its own reply tokens, averaged over the ranks (as ms-swift under DDP): equal to one
# rank's when the completions are equally long, as --max_completion_length 4 makes them (every one is cut).
ranks=("${gkd[@]}" --model "$STUDENT" --train_type full --lmbda 1 --learning_rate 1e-3 --max_steps 3 --adam_epsilon 1e-6
       --max_completion_length 4)
run one_rank 0 "$SWIFT" "${ranks[@]}" --output_dir "$TMP/one_rank"
run two_ranks 0 env NPROC_PER_NODE=2 "$SWIFT" "${ranks[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/two_ranks"
"$PY" - "$TMP" <<'P' && ok || bad "lora resume / two ranks: the losses differ"
import json, sys
rows = lambda d: [json.loads(l) for l in open(f"{sys.argv[1]}/{d}/logging.jsonl") if '"loss"' in l]
full, resumed = rows("lora"), rows("lora_resumed")
assert [r["global_step/max_steps"] for r in resumed] == ["3/4", "4/4"], resumed
for a, b in zip(full[2:], resumed):
    assert abs(a["loss"] - b["loss"]) <= 1e-6 * (1 + abs(a["loss"])), (a["loss"], b["loss"])
for a, b in zip(rows("one_rank"), rows("two_ranks")):
    assert abs(a["loss"] - b["loss"]) <= 1e-5 * (1 + abs(a["loss"])), (a["loss"], b["loss"])
print("gkd: the resumed LoRA run and 2 ranks repeat the losses")
P

# 4. Errors.
run no_teacher 2 "$SWIFT" rlhf --rlhf_type gkd --model "$STUDENT" --dataset "$TMP/student.jsonl" --output_dir "$TMP/x"
has no_teacher_says "--rlhf_type gkd needs --teacher_model" err
run seq_kd 2 "$SWIFT" "${gkd[@]}" --model "$STUDENT" --seq_kd true --output_dir "$TMP/x"
has seq_kd_says "--seq_kd (the teacher's own replies) is not implemented" err
run split 2 env NPROC_PER_NODE=2 "$SWIFT" "${gkd[@]}" --model "$STUDENT" --tp_size 2 --output_dir "$TMP/x"
has split_says "swift rlhf --rlhf_type gkd with --tp_size" err
run zero3 2 env NPROC_PER_NODE=2 "$SWIFT" "${gkd[@]}" --model "$STUDENT" --teacher_model "$STUDENT" --deepspeed zero3 \
  --max_steps 1 --output_dir "$TMP/x"
has zero3_says "swift rlhf --rlhf_type gkd with ZeRO-3 is not available yet" err

finish gkd
