#!/usr/bin/env bash
# End-to-end: swift rlhf --rlhf_type grpo through the swift binary. Usage: grpo_test.sh path/to/swift
#  - GRPO learns: a tiny model taught (sft) to answer "<answer>N</answer>" with a random digit is trained with the
#    accuracy reward towards the one answer the rows' solution holds (7); its mean reward rises clearly (the tiny model
#    cannot learn arithmetic itself: the task is a favoured answer, not a sum);
#  - the log holds ms-swift's GRPO metrics, completions.jsonl one line per generation batch with ms-swift's columns
#    (the advantages of each group summing to 0);
#  - a LoRA run (the reference is the base with the adapter off) resumed from its checkpoint continues exactly as
#    the run that was not stopped: the same completions, rewards and losses; QLoRA trains against its 4-bit base;
#  - 2 ranks, each generating its share of a group that spans them, draw one rank's completions and give its
#    losses and weights; the advantages are the whole group's;
#  - --num_iterations 2 under bf16: the first update's ratio is 1, the second's not; a checkpoint inside a generation
#    batch is refused at resume; dapo with accumulation, the overlong filter and --beta 0 runs;
#  - an external reward command (scripts/rewards/check_answer.py), and the same check over HTTP
#    (scripts/rewards/answer_server.py), score as the accuracy reward does on these answers; one that never answers
#    (or an endpoint that is down) is warned about and stops the run on its third batch;
#  - --dynamic_sample replaces equal-reward groups (1 rank = 2 ranks, resume exact); --kl_in_reward takes beta x the KL
#    out of the rewards (LoRA and full);
#  - sft -> rm -> grpo: a trained reward model (--reward_model) raises the reward, its scores transformers'; a LoRA
#    reward model through --reward_adapters;
#  - bad flags and rows are clear errors (exit 2 and 3), --use_vllm is answered.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors

# A prompt asked 200 ways; sft answers with a random digit, GRPO's solution is always 7.
"$PY" - "$TMP" <<'P'
import json, random, sys
r = random.Random(0)
with open(f"{sys.argv[1]}/sft.jsonl", "w") as sft, open(f"{sys.argv[1]}/grpo.jsonl", "w") as grpo, \
     open(f"{sys.argv[1]}/no_solution.jsonl", "w") as bare:
    for i in range(200):
        q = f"Pick a number, round {i}."
        sft.write(json.dumps({"messages": [{"role": "user", "content": q},
                                           {"role": "assistant", "content": f"<answer>{r.randint(1, 9)}</answer>"}]}) + "\n")
        grpo.write(json.dumps({"messages": [{"role": "user", "content": q}], "solution": "7"}) + "\n")
        bare.write(json.dumps({"messages": [{"role": "user", "content": q}]}) + "\n")
P

# 1. SFT: the answer format, with any digit.
run sft 0 "$SWIFT" sft --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --train_type full \
  --dataset "$TMP/sft.jsonl" --max_steps 300 --learning_rate 3e-3 --per_device_train_batch_size 8 \
  --gradient_accumulation_steps 1 --logging_steps 100 --save_steps 300 --output_dir "$TMP/sft" --add_version false
SFT="$TMP/sft/checkpoint-300"

# 2. GRPO with the accuracy reward: 2 prompts x 8 completions a step.
grpo=(rlhf --rlhf_type grpo --dataset "$TMP/grpo.jsonl" --reward_funcs accuracy --num_generations 8
      --per_device_train_batch_size 16 --max_completion_length 12 --logging_steps 1 --add_version false)
run grpo 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --train_type full --learning_rate 2e-3 --max_steps 40 --save_steps 40 \
  --log_completions true --output_dir "$TMP/grpo"
has grpo_layout "grpo: each generation batch: 2 prompts x 8 completions" err
"$PY" - "$TMP/grpo" <<'P' && ok || bad "grpo: the mean reward did not rise, or the logs lack ms-swift's metrics"
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l]
assert len(rows) == 40, len(rows)
for key in ("loss", "kl", "clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "reward", "reward_std",
            "frac_reward_zero_std", "rewards/MathAccuracy/mean", "rewards/MathAccuracy/std", "completions/mean_length",
            "completions/min_length", "completions/max_length", "completions/clipped_ratio", "time/generation",
            "time/scoring", "grad_norm", "learning_rate"):
    assert all(key in r for r in rows), key
first = sum(r["reward"] for r in rows[:10]) / 10
last = sum(r["reward"] for r in rows[-10:]) / 10
assert last >= first + 0.4 and last >= 0.6, (first, last)
print(f"mean reward {first:.3f} over the first 10 steps, {last:.3f} over the last 10")
P
"$PY" - "$TMP/grpo/completions.jsonl" <<'P' && ok || bad "grpo: completions.jsonl is not ms-swift's layout"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 40, len(lines)
for i, line in enumerate(lines):
    assert list(line) == ["step", "prompt", "completion", "MathAccuracy", "advantages", "solution"], list(line)
    assert all(len(v) == 16 for v in line.values()) and line["step"] == [str(i + 1)] * 16
    assert line["solution"] == ["7"] * 16 and "Pick a number" in line["prompt"][0]
    for g in range(2):  # each group's advantages sum to 0, and a right answer has a positive one
        group = line["advantages"][8 * g:8 * g + 8]
        assert abs(sum(group)) < 1e-4, group
        rewards = line["MathAccuracy"][8 * g:8 * g + 8]
        for a, r, c in zip(group, rewards, line["completion"][8 * g:8 * g + 8]):
            if c.strip() == "<answer>7</answer>":
                assert r == 1.0, c
            assert len(set(rewards)) == 1 or (a > 0) == (r == 1.0), (a, r, c)
P

# 3. LoRA (the reference: the adapter switched off), stopped at step 2 and resumed: steps 3-4 as the unbroken run.
lora=("${grpo[@]}" --model "$SFT" --max_steps 4 --save_steps 2 --learning_rate 1e-3 --log_completions true)
run lora 0 "$SWIFT" "${lora[@]}" --output_dir "$TMP/lora"
has lora_reference "reference model: the base model (the LoRA adapter switched off" err
run lora_resume 0 "$SWIFT" "${lora[@]}" --output_dir "$TMP/lora_resumed" --resume_from_checkpoint "$TMP/lora/checkpoint-2"
"$PY" - "$TMP/lora" "$TMP/lora_resumed" <<'P' && ok || bad "lora: the resumed run differs from the unbroken one"
import json, sys
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
full, resumed = rows(sys.argv[1]), rows(sys.argv[2])
assert [r["global_step/max_steps"] for r in resumed] == ["3/4", "4/4"], resumed
for a, b in zip(full[2:], resumed):
    for key in ("loss", "reward", "kl", "completions/mean_length", "grad_norm"):
        assert abs(a[key] - b[key]) <= 1e-6 * (1 + abs(a[key])), (key, a[key], b[key])
done = [json.loads(l) for l in open(f"{sys.argv[1]}/completions.jsonl")]
again = [json.loads(l) for l in open(f"{sys.argv[2]}/completions.jsonl")]
assert [l["completion"] for l in done[2:]] == [l["completion"] for l in again], "other completions after the resume"
print("steps 3-4 resumed exactly")
P

# 3b. QLoRA: the 4-bit base is the reference (the adapter off); the first KL is 0, a later one not.
run qlora 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --max_steps 3 --learning_rate 1e-3 --quant_method bnb --quant_bits 4 \
  --output_dir "$TMP/qlora"
has qlora_quantized "quantized 14 linear layers (bitsandbytes nf4" err
"$PY" - "$TMP/qlora" <<'P' && ok || bad "qlora: the KL to the 4-bit base is not 0 at first and positive after"
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l]
assert len(rows) == 3 and rows[0]["kl"] == 0 and rows[-1]["kl"] > 0, [r["kl"] for r in rows]
P

# 4. Two ranks, one group of 8 over both (4 completions each): the same completions as one rank (each its own seed
#    from its place in the batch), the advantages the whole group's, the losses and weights one rank's.
ranks=(rlhf --rlhf_type grpo --dataset "$TMP/grpo.jsonl" --reward_funcs accuracy --num_generations 8 --model "$SFT"
       --train_type full --learning_rate 2e-3 --max_completion_length 12 --max_steps 3 --log_completions true
       --add_version false --logging_steps 1 --save_steps 3 --adam_epsilon 1e-6)
run one_rank 0 "$SWIFT" "${ranks[@]}" --per_device_train_batch_size 8 --output_dir "$TMP/one_rank"
run two_ranks 0 env NPROC_PER_NODE=2 "$SWIFT" "${ranks[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/two_ranks"
has two_ranks_layout "grpo: each generation batch: 1 prompts x 8 completions (4 on each of 2 ranks)" err
"$PY" - "$TMP/one_rank" "$TMP/two_ranks" <<'P' && ok || bad "two ranks: not one rank's completions, losses or weights"
import json, sys
from safetensors.numpy import load_file
lines = lambda d: [json.loads(l) for l in open(f"{d}/completions.jsonl")]
assert [l["completion"] for l in lines(sys.argv[1])] == [l["completion"] for l in lines(sys.argv[2])]
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
for a, b in zip(rows(sys.argv[1]), rows(sys.argv[2])):
    for key in ("loss", "reward", "kl", "grad_norm"):
        assert abs(a[key] - b[key]) <= 1e-5 * (1 + abs(a[key])), (key, a[key], b[key])
wa, wb = (load_file(f"{d}/checkpoint-3/model.safetensors") for d in sys.argv[1:])
worst = max(abs(wa[k] - wb[k]).max() for k in wa)
assert worst < 1e-5, worst
print(f"2 ranks: one rank's completions, losses and weights within {worst:.1e}")
P
"$PY" - "$TMP/two_ranks/completions.jsonl" <<'P' && ok || bad "two ranks: the group's advantages are not the whole group's"
import json, statistics, sys
for line in map(json.loads, open(sys.argv[1])):
    r, a = line["MathAccuracy"], line["advantages"]
    assert len(r) == 8 and len(set(line["prompt"])) == 1
    spread = statistics.stdev(r)
    want = [(x - sum(r) / 8) / (spread + 1e-4) for x in r]
    assert all(abs(x - y) < 1e-4 for x, y in zip(a, want)), (a, want)
P

# 5. Off-policy updates: --num_iterations 2 trains twice on each generation batch, under bf16 autocast. Its first
#    update's ratio is exactly 1 (the kept log-probabilities are the same pass's), the second's is not; a checkpoint
#    between the two is refused at resume. dapo with accumulation, the overlong filter and no reference runs too.
run iterations 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --train_type full --torch_dtype bfloat16 --learning_rate 2e-3 \
  --num_iterations 2 --epsilon 0.01 --max_steps 4 --save_steps 1 --output_dir "$TMP/iterations"
has iterations_warns "checkpoints inside a generation batch cannot be resumed from" err
has iterations_layout "trained on 1 micro-batches x 2 iterations; the ratio is taken against the log-probabilities at generation" err
"$PY" - "$TMP/iterations" <<'P' && ok || bad "iterations: the first update's ratio is not 1, or the second's is"
import json, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l]
assert len(rows) == 4
assert all(r["clip_ratio/region_mean"] == 0 for r in rows[0::2]), [r["clip_ratio/region_mean"] for r in rows]
assert any(r["clip_ratio/region_mean"] > 0 for r in rows[1::2]), [r["clip_ratio/region_mean"] for r in rows]
assert rows[0]["reward"] == rows[1]["reward"] and rows[2]["reward"] == rows[3]["reward"], "one generation batch, twice"
P
run inside_batch 3 "$SWIFT" "${grpo[@]}" --model "$SFT" --train_type full --torch_dtype bfloat16 --num_iterations 2 \
  --max_steps 4 --output_dir "$TMP/inside" --resume_from_checkpoint "$TMP/iterations/checkpoint-1"
has inside_batch_says "was saved inside a GRPO generation batch" err
run dapo 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --loss_type dapo --gradient_accumulation_steps 2 --overlong_filter true \
  --beta 0 --max_completion_length 6 --per_device_train_batch_size 8 --max_steps 2 --output_dir "$TMP/dapo"
has dapo_no_reference "reference model: none (--beta 0)" err
"$PY" - "$TMP/dapo" <<'P' && ok || bad "dapo: a KL without a reference, or no clipped completions"
import json, math, sys
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l]
assert len(rows) == 2 and all("kl" not in r and math.isfinite(r["loss"]) for r in rows), rows
assert all(r["completions/clipped_ratio"] > 0 for r in rows), rows
P

# 6. An external reward command (scripts/rewards/check_answer.py) beside the built-in accuracy: on these answers it
#    gives the same rewards, logged under its name; one that never answers costs a warning per generation batch and
#    stops the run on the third.
run external 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --max_steps 2 --log_completions true --output_dir "$TMP/external" \
  --reward_funcs accuracy "external:$PY $ROOT/scripts/rewards/check_answer.py"
"$PY" - "$TMP/external" <<'P' && ok || bad "external: the checker's rewards are not the accuracy reward's"
import json, sys
lines = [json.loads(l) for l in open(f"{sys.argv[1]}/completions.jsonl")]
assert len(lines) == 2 and all(l["check_answer"] == l["MathAccuracy"] for l in lines), lines
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l]
assert all(r["rewards/check_answer/mean"] == r["rewards/MathAccuracy/mean"] for r in rows), rows
P
run external_silent 3 "$SWIFT" "${grpo[@]}" --model "$SFT" --max_steps 5 --output_dir "$TMP/silent" \
  --reward_funcs "external:cat > /dev/null" --reward_timeout 1
has external_silent_warns "no answer within --reward_timeout 1 s (0 of 16 lines); this generation batch has no cat rewards" err
has external_silent_stops "failed 3 generation batches in a row" err

# 6b. The same checker behind an HTTP endpoint (scripts/rewards/answer_server.py): the same rewards, named by the
#     path; an endpoint that answers errors is warned about per batch and stops the run on the third.
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PY" "$ROOT/scripts/rewards/answer_server.py" --port "$PORT" & SERVER=$!
for _ in $(seq 50); do "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $PORT))" 2>/dev/null && break; sleep 0.1; done
run http 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --max_steps 2 --log_completions true --output_dir "$TMP/http" \
  --reward_funcs accuracy "http://127.0.0.1:$PORT/check_answer"
"$PY" - "$TMP/http" <<'P' && ok || bad "http: the endpoint's rewards are not the accuracy reward's"
import json, sys
lines = [json.loads(l) for l in open(f"{sys.argv[1]}/completions.jsonl")]
assert len(lines) == 2 and all(l["check_answer"] == l["MathAccuracy"] for l in lines), lines
P
kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null
run http_down 3 "$SWIFT" "${grpo[@]}" --model "$SFT" --max_steps 5 --output_dir "$TMP/http_down" \
  --reward_funcs "http://127.0.0.1:$PORT/check_answer" --reward_timeout 5
has http_down_warns "this generation batch has no check_answer rewards (counted 0)" err
has http_down_stops "the reward endpoint http://127.0.0.1:$PORT/check_answer failed 3 generation batches in a row" err

# 7. DAPO's dynamic sampling: a group whose answers all miss 7 (or all hit it) trains nothing, so it is replaced by
#    a group of a newly drawn prompt. Every logged batch then has no equal-reward group; 2 ranks keep the same groups
#    and completions as 1 rank; a resume continues exactly (the resampling stream
#    included); with no varied group to be found, the batch trains as generated, with a warning.
# Groups of 2 (4 a batch): most are equal (both miss 7), so every batch resamples, up to 20 times, to fill its 4.
dyn=("${grpo[@]}" --model "$SFT" --train_type full --learning_rate 1e-3 --dynamic_sample true --log_completions true
     --max_steps 4 --save_steps 2 --num_generations 2 --max_resample_times 20)
run dynamic 0 "$SWIFT" "${dyn[@]}" --per_device_train_batch_size 8 --output_dir "$TMP/dynamic"
has dynamic_resamples "grpo --dynamic_sample: generation batch 1 filled with" err
run dynamic_ranks 0 env NPROC_PER_NODE=2 "$SWIFT" "${dyn[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/dynamic_ranks"
run dynamic_resume 0 "$SWIFT" "${dyn[@]}" --per_device_train_batch_size 8 --output_dir "$TMP/dynamic_resumed" \
  --resume_from_checkpoint "$TMP/dynamic/checkpoint-2"
"$PY" - "$TMP/dynamic" "$TMP/dynamic_ranks" "$TMP/dynamic_resumed" <<'P' && ok || bad "dynamic: an equal-reward group trained, or ranks/resume differ"
import json, sys
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
lines = lambda d: [json.loads(l) for l in open(f"{d}/completions.jsonl")]
one, two, resumed = rows(sys.argv[1]), rows(sys.argv[2]), rows(sys.argv[3])
assert len(one) == 4 and all(r["frac_reward_zero_std"] == 0 for r in one), [r["frac_reward_zero_std"] for r in one]
for line in lines(sys.argv[1]):
    for g in range(0, 8, 2):  # each group of 2: one right, one wrong
        assert len(set(line["MathAccuracy"][g:g + 2])) == 2, line["MathAccuracy"]
assert [l["completion"] for l in lines(sys.argv[1])] == [l["completion"] for l in lines(sys.argv[2])]
assert [l["completion"] for l in lines(sys.argv[1])][2:] == [l["completion"] for l in lines(sys.argv[3])]
saved = json.load(open(f"{sys.argv[1]}/checkpoint-2/trainer_state.json"))["data_state"]
assert saved["resample"]["position"] > 0 or saved["resample"]["epoch"] > 0, saved  # the resume restores a used stream
for a, b in list(zip(one, two)) + list(zip(one[2:], resumed)):
    for key in ("loss", "reward", "kl", "grad_norm"):
        assert abs(a[key] - b[key]) <= 1e-5 * (1 + abs(a[key])), (key, a[key], b[key])
print("dynamic sampling: no equal-reward group; 2 ranks and the resume as 1 rank")
P
run dynamic_gives_up 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --reward_funcs format --dynamic_sample true \
  --max_resample_times 1 --per_device_train_batch_size 8 --max_steps 1 --output_dir "$TMP/dynamic_gives_up"
has dynamic_gives_up_warns "0 of the 1 groups have differing rewards after 1 resampling" err

# 8. --kl_in_reward (ms-swift's default for rloo and REINFORCE++): beta x each completion's KL to the reference comes
#    out of its reward. The logged reward is the accuracy's mean less 0.04 x the logged KL; the loss has no KL term.
#    LoRA's reference is the base (its first batch's KL is 0: the adapter starts as the identity), full's a copy.
run kl_lora 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --advantage_estimator rloo --learning_rate 1e-2 --max_steps 4 \
  --output_dir "$TMP/kl_lora"
has kl_lora_says "grpo --kl_in_reward: beta x each completion's KL" err
run kl_full 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --train_type full --advantage_estimator reinforce_plus_plus \
  --learning_rate 2e-3 --max_steps 2 --per_device_train_batch_size 8 --output_dir "$TMP/kl_full"
"$PY" - "$TMP/kl_lora" "$TMP/kl_full" <<'P' && ok || bad "kl_in_reward: the reward is not the accuracy less beta x the KL"
import json, sys
for d in sys.argv[1:]:
    rows = [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
    for r in rows:
        want = r["rewards/MathAccuracy/mean"] - 0.04 * r["kl"]
        assert abs(r["reward"] - want) < 1e-5, (d, r["reward"], want)
    assert rows[-1]["kl"] != 0, [r["kl"] for r in rows]  # a log-ratio sum: either sign
lora = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l]
assert lora[0]["kl"] == 0, [r["kl"] for r in lora]
P

# 9. The three stages, sft -> rm -> grpo: a reward model trained (swift rlhf --rlhf_type rm) to prefer the answer 7
#    scores the completions (--reward_model, no reward function); the mean reward rises clearly, and each logged
#    reward is transformers' score of the conversation as ms-swift's template writes it (Qwen3's chat template with
#    the completion as the reply). A LoRA reward model (its adapter carries the score head) scores through
#    --reward_adapters; a causal LM given as --reward_model is refused.
"$PY" - "$TMP" <<'P'
import json, random, sys
r = random.Random(1)
with open(f"{sys.argv[1]}/pref.jsonl", "w") as f:
    for i in range(200):
        q = f"Pick a number, round {i}."
        bad = r.choice([d for d in range(1, 10) if d != 7])
        f.write(json.dumps({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": "<answer>7</answer>"}],
                            "rejected_response": f"<answer>{bad}</answer>"}) + "\n")
P
rm=(rlhf --rlhf_type rm --model "$SFT" --dataset "$TMP/pref.jsonl" --max_steps 60 --learning_rate 1e-3
    --per_device_train_batch_size 8 --logging_steps 20 --save_steps 60 --add_version false)
run rm 0 "$SWIFT" "${rm[@]}" --train_type full --output_dir "$TMP/rm"
run grpo_rm 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --train_type full --learning_rate 2e-3 --max_steps 30 \
  --reward_funcs --reward_model "$TMP/rm/checkpoint-60" --log_completions true --output_dir "$TMP/grpo_rm"
has grpo_rm_names "reward model $TMP/rm/checkpoint-60: rewards logged as checkpoint-60" err
"$PY" - "$TMP/grpo_rm" "$TMP/rm/checkpoint-60" <<'P' && ok || bad "grpo_rm: the reward did not rise, or is not the reward model's score"
import json, sys, warnings
warnings.filterwarnings("ignore")
import torch, transformers
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
rows = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l]
first, last = (sum(r["reward"] for r in part) / 8 for part in (rows[:8], rows[-8:]))
assert last >= first + 1.5 and all("rewards/checkpoint-60/mean" in r for r in rows), (first, last)
tok = transformers.AutoTokenizer.from_pretrained(sys.argv[2])
model = transformers.AutoModelForSequenceClassification.from_pretrained(sys.argv[2], dtype=torch.float32).eval()
worst = 0
for line in map(json.loads, open(f"{sys.argv[1]}/completions.jsonl")):
    for prompt, completion, got in list(zip(line["prompt"], line["completion"], line["checkpoint-60"]))[::5]:
        question = prompt.split("<|im_start|>user\n")[1].split("<|im_end|>")[0]
        text = tok.apply_chat_template([{"role": "user", "content": question}, {"role": "assistant", "content": completion}],
                                       tokenize=False)
        with torch.no_grad():
            want = model(**tok(text, return_tensors="pt", add_special_tokens=False)).logits[0, 0].item()
        worst = max(worst, abs(want - got))
assert worst < 1e-4, worst
print(f"reward model: mean reward {first:.2f} over the first 8 steps, {last:.2f} over the last 8; transformers' scores within {worst:.1e}")
P
run rm_lora 0 "$SWIFT" "${rm[@]}" --max_steps 4 --save_steps 4 --output_dir "$TMP/rm_lora"
run grpo_rm_lora 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --max_steps 1 --reward_funcs accuracy --reward_model "$SFT" \
  --reward_adapters "$TMP/rm_lora/checkpoint-4" --reward_weights 1 0.5 --output_dir "$TMP/grpo_rm_lora"
"$PY" - "$TMP/grpo_rm_lora" <<'P' && ok || bad "grpo_rm_lora: the adapter's reward model did not score"
import json, sys
row = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l][0]
assert "rewards/checkpoint-300/mean" in row and "rewards/MathAccuracy/mean" in row, row
P
run rm_not_one 2 "$SWIFT" "${grpo[@]}" --model "$SFT" --max_steps 1 --reward_model "$SFT" --output_dir "$TMP/x"
has rm_not_one_says "has no score head" err
run rm_weights 2 "$SWIFT" "${grpo[@]}" --model "$SFT" --max_steps 1 --reward_model "$TMP/rm/checkpoint-60" \
  --reward_weights 1 --output_dir "$TMP/x"
has rm_weights_says "--reward_weights gives" err

# 10. Errors and ms-swift's flags.
run no_reward 2 "$SWIFT" rlhf --rlhf_type grpo --model "$SFT" --dataset "$TMP/grpo.jsonl" --output_dir "$TMP/x"
has no_reward_says "needs --reward_funcs" err
run bad_reward 2 "$SWIFT" rlhf --rlhf_type grpo --model "$SFT" --dataset "$TMP/grpo.jsonl" --reward_funcs bleu --output_dir "$TMP/x"
has bad_reward_says "--reward_funcs bleu is not a built-in reward function" err
run indivisible 2 "$SWIFT" rlhf --rlhf_type grpo --model "$SFT" --dataset "$TMP/grpo.jsonl" --reward_funcs format \
  --per_device_train_batch_size 3 --output_dir "$TMP/x"
has indivisible_says "not a multiple of --num_generations 8" err
run no_solution 3 "$SWIFT" rlhf --rlhf_type grpo --model "$SFT" --dataset "$TMP/no_solution.jsonl" --reward_funcs accuracy \
  --per_device_train_batch_size 8 --max_completion_length 4 --max_steps 1 --output_dir "$TMP/no_solution" --add_version false
has no_solution_says "reads each row's \"solution\" column" err
[ ! -d "$TMP/no_solution/checkpoint-1" ] && ok || bad "no_solution: a checkpoint was written"
run vllm 0 "$SWIFT" "${grpo[@]}" --model "$SFT" --per_device_train_batch_size 8 --max_steps 1 --use_vllm true \
  --vllm_mode colocate --output_dir "$TMP/vllm"
has vllm_says "--use_vllm ignored: swift generates GRPO's rollouts with its own engine" err
run zero3 2 env NPROC_PER_NODE=2 "$SWIFT" "${grpo[@]}" --model "$SFT" --per_device_train_batch_size 8 --max_steps 1 \
  --deepspeed zero3 --output_dir "$TMP/x"
has zero3_says "with ZeRO-3 is not available yet" err

finish grpo
