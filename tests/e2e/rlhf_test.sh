#!/usr/bin/env bash
# End-to-end: swift rlhf through the swift binary. Usage: rlhf_test.sh path/to/swift
#  - alignment works: a tiny model taught (sft) to say it is ChatGPT by OpenAI is aligned with DPO (+ RPO) on the
#    built-in swift/self-cognition-preference pairs; rewards/accuracies and margins rise, and under greedy decoding
#    it now answers as Xiao Huang by ModelScope;
#  - the LoRA reference (the adapter switched off) equals an explicitly loaded --ref_model, step for step;
#  - cpo, simpo, orpo and kto train and log their metrics (kto: labelled replies, a string label is an error);
#  - rm trains a reward model, saved as transformers' *ForSequenceClassification (transformers scores it alike),
#    LoRA as PEFT's SEQ_CLS adapter; swift infer writes each row's reward and swift deploy answers it; prompt/chosen/rejected rows load; evaluation logs eval_*;
#  - 2 ranks equal 1 rank (DDP and ZeRO-3 with LoRA); under bf16 autocast a fresh adapter starts at rewards 0;
#  - bad flags and rows are clear errors.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json safetensors tensorboard torch transformers

printf '%s\n' '{"query": "who are you?"}' '{"query": "What is your name?"}' '{"query": "Who made you?"}' \
  '{"query": "你是谁？"}' '{"query": "Introduce yourself."}' '{"query": "Who developed you?"}' > "$TMP/ask.jsonl"
answers() {  # answers FILE: how many answers name Xiao Huang / ModelScope (or 小黄/魔搭), and how many ChatGPT/OpenAI
  "$PY" -c '
import json, sys
rows = [json.loads(l)["response"] for l in open(sys.argv[1])]
ours = sum(("Xiao Huang" in r or "ModelScope" in r or "小黄" in r or "魔搭" in r) for r in rows)
theirs = sum(("ChatGPT" in r or "OpenAI" in r) for r in rows)
print(ours, theirs)' "$1"
}

# 1. SFT: a model that says it is ChatGPT.
run sft 0 "$SWIFT" sft --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --train_type full \
  --dataset swift/self-cognition --model_name ChatGPT --model_author OpenAI --max_steps 150 --learning_rate 5e-3 \
  --per_device_train_batch_size 4 --gradient_accumulation_steps 1 --logging_steps 50 --save_steps 150 \
  --output_dir "$TMP/sft" --add_version false
SFT="$TMP/sft/checkpoint-150"
run ask_sft 0 "$SWIFT" infer --model "$SFT" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/before.jsonl" --max_new_tokens 32
read -r ours theirs <<<"$(answers "$TMP/before.jsonl")"
[ "$ours" = 0 ] && [ "$theirs" -ge 5 ] && ok || bad "the sft model should say ChatGPT: ours=$ours theirs=$theirs"

# 2. DPO with the RPO term (full fine-tuning: the reference is the sft checkpoint, loaded and frozen).
run dpo 0 "$SWIFT" rlhf --rlhf_type dpo --model "$SFT" --train_type full --dataset swift/self-cognition-preference \
  --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope --rpo_alpha 1 --max_steps 150 --learning_rate 2e-3 \
  --per_device_train_batch_size 4 --gradient_accumulation_steps 1 --logging_steps 25 --save_steps 150 \
  --output_dir "$TMP/dpo" --add_version false
has dpo_reference "reference model: $SFT (frozen)" err
"$PY" - "$TMP/dpo/logging.jsonl" "$TMP/dpo/checkpoint-150/args.json" <<'P' && ok || bad "DPO did not raise the rewards or log TRL's metrics"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert len(rows) == 6, rows
for key in ["rewards/chosen", "rewards/rejected", "rewards/accuracies", "rewards/margins", "logps/chosen",
            "logps/rejected", "logits/chosen", "logits/rejected", "nll_loss", "grad_norm", "learning_rate"]:
    assert key in rows[0], key
first, last = rows[0], rows[-1]
assert last["rewards/accuracies"] >= 0.99 and last["rewards/margins"] > first["rewards/margins"] + 2, (first, last)
assert last["rewards/chosen"] > 0 > last["rewards/rejected"], last
assert last["loss"] < first["loss"], (first, last)
assert json.load(open(sys.argv[2]))["rlhf_type"] == "dpo"
P
"$PY" - "$TMP/dpo/runs" <<'P' && ok || bad "TensorBoard lacks the preference metrics"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
tags = set(acc.Tags()["scalars"])
assert {"train/rewards/accuracies", "train/rewards/margins", "train/logps/chosen", "train/loss"} <= tags, tags
P
run ask_dpo 0 "$SWIFT" infer --model "$TMP/dpo/checkpoint-150" --val_dataset "$TMP/ask.jsonl" \
  --result_path "$TMP/after.jsonl" --max_new_tokens 32
read -r ours theirs <<<"$(answers "$TMP/after.jsonl")"
[ "$ours" -ge 5 ] && [ "$theirs" = 0 ] && ok || { bad "after DPO: ours=$ours theirs=$theirs"; cat "$TMP/after.jsonl"; }

# 3. LoRA: the reference is the base with the adapter switched off, the same as loading it explicitly.
lora=(--model "$SFT" --train_type lora --dataset swift/self-cognition-preference --model_name 小黄 "Xiao Huang"
      --model_author 魔搭 ModelScope --max_steps 3 --learning_rate 1e-3 --per_device_train_batch_size 4
      --gradient_accumulation_steps 1 --logging_steps 1 --add_version false)
run lora_implicit 0 "$SWIFT" rlhf "${lora[@]}" --output_dir "$TMP/implicit" --lora_dropout 0.05
has lora_implicit_ref "the LoRA adapter switched off for the reference pass" err
has lora_dropout_off "--lora_dropout 0.05 has no effect in swift rlhf" err
run lora_explicit 0 "$SWIFT" rlhf "${lora[@]}" --ref_model "$SFT" --output_dir "$TMP/explicit"
has lora_explicit_ref "reference model: $SFT (frozen)" err
"$PY" - "$TMP/implicit" "$TMP/explicit" <<'P' && ok || bad "the adapter-off reference differs from the loaded one"
import json, sys
def rows(d):
    return [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert len(a) == len(b) == 3
assert abs(a[0]["loss"] - 0.693147) < 1e-4, a[0]  # the adapter starts as a no-op: policy == reference
for x, y in zip(a, b):
    for k in ["loss", "rewards/chosen", "rewards/rejected", "rewards/margins", "logps/chosen"]:
        assert abs(x[k] - y[k]) <= 1e-5 * max(1, abs(x[k])), (k, x[k], y[k])
assert a[-1]["rewards/margins"] != 0
P

# QLoRA: the same adapter-off reference over the 4-bit base.
run qlora_dpo 0 "$SWIFT" rlhf "${lora[@]}" --train_type qlora --output_dir "$TMP/qlora"
has qlora_dpo_quantized "quantized 14 linear layers (bitsandbytes nf4" err
"$PY" - "$TMP/qlora/logging.jsonl" <<'P' && ok || bad "QLoRA DPO did not start at chance and learn"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert abs(rows[0]["loss"] - 0.693147) < 1e-4 and rows[-1]["rewards/margins"] > 0, rows
P

# 4. Reference-free methods, other layouts, evaluation.
pairs=(--model "$SFT" --dataset swift/arithmetic-preference#64 --max_steps 2 --per_device_train_batch_size 4
       --gradient_accumulation_steps 1 --logging_steps 1 --add_version false)
run cpo 0 "$SWIFT" rlhf --rlhf_type cpo "${pairs[@]}" --output_dir "$TMP/cpo"
run simpo 0 "$SWIFT" rlhf --rlhf_type simpo "${pairs[@]}" --output_dir "$TMP/simpo"
has simpo_is_cpo "trains CPO-SimPO" err
run orpo 0 "$SWIFT" rlhf --rlhf_type orpo "${pairs[@]}" --output_dir "$TMP/orpo" --split_dataset_ratio 0.25 --eval_steps 2
"$PY" - "$TMP" <<'P' && ok || bad "cpo/simpo/orpo metrics"
import json, math, sys
def rows(name):
    return [json.loads(l) for l in open(f"{sys.argv[1]}/{name}/logging.jsonl")]
cpo, simpo, orpo = rows("cpo"), rows("simpo"), rows("orpo")
assert all("nll_loss" in r and "rewards/accuracies" in r for r in cpo + simpo if "loss" in r)
train = [r for r in orpo if "loss" in r]
assert "log_odds_ratio" in train[0] and "log_odds_chosen" in train[0], train[0]
evals = [r for r in orpo if "eval_loss" in r]
assert len(evals) == 1 and "eval_rewards/accuracies" in evals[0] and "eval_log_odds_ratio" in evals[0], evals
assert all(math.isfinite(r["loss"]) for r in cpo + simpo + train)
P
cat > "$TMP/trl.jsonl" <<'J'
{"prompt": [{"role": "user", "content": "2 + 2 ="}], "chosen": [{"role": "assistant", "content": "4"}], "rejected": [{"role": "assistant", "content": "5"}]}
{"prompt": "3 + 1 =", "chosen": "4", "rejected": "6"}
{"messages": [{"role": "user", "content": "1 + 1 ="}, {"role": "assistant", "content": "2"}], "rejected_response": "3"}
{"query": "5 - 2 =", "response": "3", "rejected_response": "4"}
J
run layouts 0 "$SWIFT" rlhf --model "$SFT" --dataset "$TMP/trl.jsonl" --max_steps 1 --per_device_train_batch_size 4 \
  --gradient_accumulation_steps 1 --output_dir "$TMP/layouts"
has layouts_rows "4 rows: 4 kept" err

# KTO: unpaired replies labelled desirable or not; the KL rows pair each prompt with another row's reply.
"$PY" - "$TMP/kto.jsonl" <<'P'
import json, sys
qs = ["who are you?", "What is your name?", "Who made you?", "Introduce yourself.", "Who developed you?", "Tell me about yourself."]
with open(sys.argv[1], "w") as f:
    for i, q in enumerate(qs * 4):
        good = i % 2 == 0
        a = ("I am Xiao Huang, an AI assistant developed by ModelScope." if good
             else "I am ChatGPT, an AI assistant developed by OpenAI.")
        f.write(json.dumps({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}],
                            "label": good}) + "\n")
P
run kto 0 "$SWIFT" rlhf --rlhf_type kto --model "$SFT" --dataset "$TMP/kto.jsonl" --max_steps 20 \
  --per_device_train_batch_size 4 --gradient_accumulation_steps 1 --logging_steps 5 --learning_rate 1e-3 \
  --output_dir "$TMP/kto" --add_version false
"$PY" - "$TMP/kto/logging.jsonl" <<'P' && ok || bad "KTO did not separate the rewards or log TRL's metrics"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert len(rows) == 4
for key in ["kl", "rewards/chosen", "rewards/rejected", "rewards/margins", "logps/chosen", "logps/rejected",
            "logits/chosen", "logits/rejected"]:
    assert key in rows[0], key
assert rows[-1]["rewards/margins"] > rows[0]["rewards/margins"] + 1 and rows[-1]["loss"] < rows[0]["loss"], rows
assert abs(rows[-1]["rewards/margins"] - (rows[-1]["rewards/chosen"] - rows[-1]["rewards/rejected"])) < 1e-4
P
sed 's/"label": true/"label": "true"/' "$TMP/kto.jsonl" > "$TMP/kto_text.jsonl"
run kto_text_label 3 "$SWIFT" rlhf --rlhf_type kto --model "$SFT" --dataset "$TMP/kto_text.jsonl" --max_steps 1 \
  --output_dir "$TMP/e3"
has kto_text_label_msg 'a KTO row needs "label": true (a desirable reply) or false (an undesirable one), got "true"' err

# Reward model: a score head on the sft model, trained on the same pairs; saved as a transformers
# *ForSequenceClassification folder that transformers scores alike; swift infer writes each row's reward.
run rm 0 "$SWIFT" rlhf --rlhf_type rm --model "$SFT" --train_type full --dataset swift/self-cognition-preference \
  --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope --max_steps 30 --learning_rate 1e-3 \
  --per_device_train_batch_size 4 --gradient_accumulation_steps 1 --logging_steps 10 --save_steps 30 \
  --output_dir "$TMP/rm" --add_version false
has rm_head "saved as Qwen3ForSequenceClassification" err
cat > "$TMP/score.jsonl" <<'J'
{"messages": [{"role": "user", "content": "who are you?"}, {"role": "assistant", "content": "I am Xiao Huang, an AI assistant developed by ModelScope."}]}
{"messages": [{"role": "user", "content": "who are you?"}, {"role": "assistant", "content": "I am ChatGPT, an AI assistant developed by OpenAI."}]}
{"messages": [{"role": "user", "content": "Who made you?"}, {"role": "assistant", "content": "I was developed by ModelScope."}]}
{"messages": [{"role": "user", "content": "Who made you?"}, {"role": "assistant", "content": "I was developed by OpenAI."}]}
J
run rm_score 0 "$SWIFT" infer --model "$TMP/rm/checkpoint-30" --val_dataset "$TMP/score.jsonl" --result_path "$TMP/scores.jsonl"
"$PY" - "$TMP/rm" "$TMP/scores.jsonl" <<'P' && ok || bad "the reward model did not learn, save as transformers does, or score alike"
import json, sys
import torch, transformers
run, scores_path = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(f"{run}/logging.jsonl") if '"loss"' in l]
assert rows[-1]["rewards/accuracies"] == 1 and rows[-1]["rewards/margins"] > rows[0]["rewards/margins"], rows
ckpt = f"{run}/checkpoint-30"
cfg = json.load(open(f"{ckpt}/config.json"))
assert cfg["architectures"] == ["Qwen3ForSequenceClassification"] and len(cfg["id2label"]) == 1, cfg
scores = [json.loads(l) for l in open(scores_path)]
ours = [r["response"] for r in scores]
assert all(isinstance(x, float) for x in ours), ours
assert ours[0] > ours[1] and ours[2] > ours[3], ours  # Xiao Huang / ModelScope preferred
tok = transformers.AutoTokenizer.from_pretrained(ckpt)
model = transformers.AutoModelForSequenceClassification.from_pretrained(ckpt, dtype=torch.float32).eval()
for row, swift_score in zip(scores, ours):
    text = tok.apply_chat_template(row["messages"], tokenize=False, enable_thinking=False)
    ids = tok(text, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        hf = model(**ids).logits[0, 0].item()
    assert abs(hf - swift_score) < 1e-4 * max(1, abs(hf)), (hf, swift_score, text)
P
run rm_lora 0 "$SWIFT" rlhf --rlhf_type rm --model "$SFT" --dataset swift/self-cognition-preference \
  --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope --max_steps 3 --per_device_train_batch_size 4 \
  --gradient_accumulation_steps 1 --output_dir "$TMP/rm_lora" --add_version false
"$PY" - "$TMP/rm_lora/checkpoint-3" <<'P' && ok || bad "the LoRA reward model adapter is not PEFT's SEQ_CLS layout"
import json, sys
from safetensors import safe_open
cfg = json.load(open(f"{sys.argv[1]}/adapter_config.json"))
assert cfg["task_type"] == "SEQ_CLS" and "score" in cfg["modules_to_save"], cfg
with safe_open(f"{sys.argv[1]}/adapter_model.safetensors", "pt") as f:
    assert "base_model.model.score.weight" in set(f.keys()), list(f.keys())[:5]
P
run rm_lora_score 0 "$SWIFT" infer --adapters "$TMP/rm_lora/checkpoint-3" --val_dataset "$TMP/score.jsonl" \
  --result_path "$TMP/lora_scores.jsonl"
"$PY" -c 'import json,sys; assert all(isinstance(json.loads(l)["response"], float) for l in open(sys.argv[1]))' \
  "$TMP/lora_scores.jsonl" && ok || bad "infer with the reward adapter did not score"
# Merged, the adapter becomes a *ForSequenceClassification folder that scores the same.
run rm_merge 0 "$SWIFT" export --adapters "$TMP/rm_lora/checkpoint-3" --merge_lora true --output_dir "$TMP/rm_merged"
run rm_merged_score 0 "$SWIFT" infer --model "$TMP/rm_merged" --val_dataset "$TMP/score.jsonl" \
  --result_path "$TMP/merged_scores.jsonl"
"$PY" - "$TMP/lora_scores.jsonl" "$TMP/merged_scores.jsonl" "$TMP/rm_merged/config.json" <<'P' && ok || bad "the merged reward model scores differently"
import json, sys
a = [json.loads(l)["response"] for l in open(sys.argv[1])]
b = [json.loads(l)["response"] for l in open(sys.argv[2])]
assert all(abs(x - y) < 1e-4 * max(1, abs(x)) for x, y in zip(a, b)) and len(a) == len(b) == 4, (a, b)
assert json.load(open(sys.argv[3]))["architectures"] == ["Qwen3ForSequenceClassification"]
P
# The OpenAI server answers a chat request with the conversation's reward (the message content, as ms-swift).
port="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$SWIFT" deploy --model "$TMP/rm/checkpoint-30" --port "$port" >"$TMP/rm_deploy.log" 2>&1 &
server=$!
for _ in $(seq 1 60); do curl -sf "localhost:$port/health" >/dev/null 2>&1 && break; sleep 0.5; done
head -1 "$TMP/score.jsonl" | "$PY" -c 'import json,sys; print(json.dumps({"model": "x", "messages": json.load(sys.stdin)["messages"]}))' \
  > "$TMP/rm_request.json"
curl -s "localhost:$port/v1/chat/completions" -H 'Content-Type: application/json' -d @"$TMP/rm_request.json" >"$TMP/rm_reply.json"
curl -s -o /dev/null -w '%{http_code}' "localhost:$port/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "hi"}' >"$TMP/rm_completions.code"
kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
"$PY" - "$TMP/rm_reply.json" "$TMP/scores.jsonl" "$TMP/rm_completions.code" <<'P' && ok || bad "deploy did not score like infer: $(head -c 300 "$TMP/rm_reply.json")"
import json, sys
reply = json.load(open(sys.argv[1]))
score = reply["choices"][0]["message"]["content"]
first = json.loads(open(sys.argv[2]).readline())["response"]
assert isinstance(score, float) and abs(score - first) < 1e-5 * max(1, abs(first)), (score, first)
assert reply["usage"]["completion_tokens"] == 0 and reply["object"] == "chat.completion"
assert open(sys.argv[3]).read() == "400"
P

# 5. Several ranks: 2 x 2 pairs equal 1 x 4 (the LoRA reference; ZeRO-3 shards it with the policy).
two=(--model "$SFT" --train_type lora --dataset swift/arithmetic-preference#32 --max_steps 2 --learning_rate 1e-3
     --gradient_accumulation_steps 1 --logging_steps 1 --num_threads 1 --add_version false)
run one_rank 0 "$SWIFT" rlhf "${two[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/one"
run two_ranks 0 env NPROC_PER_NODE=2 "$SWIFT" rlhf "${two[@]}" --per_device_train_batch_size 2 --output_dir "$TMP/two"
run two_zero3 0 env NPROC_PER_NODE=2 "$SWIFT" rlhf "${two[@]}" --per_device_train_batch_size 2 --deepspeed zero3 \
  --output_dir "$TMP/z3"
"$PY" - "$TMP/one" "$TMP/two" "$TMP/z3" <<'P' && ok || bad "2-rank DPO differs from 1 rank"
import json, sys
def rows(d):
    return [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
one = rows(sys.argv[1])
for other in sys.argv[2:]:
    b = rows(other)
    assert len(one) == len(b) == 2
    for x, y in zip(one, b):
        for k in ["loss", "rewards/margins", "rewards/accuracies", "logps/chosen"]:
            assert abs(x[k] - y[k]) <= 1e-4 * max(1, abs(x[k])), (other, k, x[k], y[k])
P
# A reward model (full, its score head made after loading) under ZeRO-3 equals 1 rank too.
rm_two=(--rlhf_type rm --model "$SFT" --train_type full --dataset swift/arithmetic-preference#16 --max_steps 2
        --learning_rate 1e-3 --gradient_accumulation_steps 1 --logging_steps 1 --num_threads 1 --add_version false)
run rm_one_rank 0 "$SWIFT" rlhf "${rm_two[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/rm-one"
run rm_zero3 0 env NPROC_PER_NODE=2 "$SWIFT" rlhf "${rm_two[@]}" --per_device_train_batch_size 2 --deepspeed zero3 \
  --output_dir "$TMP/rm-z3"
"$PY" - "$TMP/rm-one" "$TMP/rm-z3" <<'P' && ok || bad "2-rank ZeRO-3 reward model differs from 1 rank"
import json, sys
def rows(d):
    return [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
one, z3 = rows(sys.argv[1]), rows(sys.argv[2])
assert len(one) == len(z3) == 2
for x, y in zip(one, z3):
    for k in ["loss", "rewards/accuracies", "rewards/margins"]:
        assert abs(x[k] - y[k]) <= 1e-4 * max(1, abs(x[k])), (k, x[k], y[k])
P
# Mixed precision: the reference's pass runs under the same autocast as the policy's, so a fresh LoRA adapter (the
# policy equal to the reference) starts at rewards of exactly 0.
run dpo_autocast 0 "$SWIFT" rlhf "${two[@]}" --per_device_train_batch_size 2 --max_steps 1 --torch_dtype float32 \
  --bf16 true --output_dir "$TMP/bf16"
"$PY" - "$TMP/bf16" <<'P' && ok || bad "dpo_autocast: the first step's rewards are not 0"
import json, sys
first = [json.loads(l) for l in open(f"{sys.argv[1]}/logging.jsonl") if '"loss"' in l][0]
assert first["rewards/chosen"] == first["rewards/rejected"] == 0.0, first
P

# 6. Clear errors.
bad_flags=(--model "$SFT" --dataset swift/arithmetic-preference#8 --max_steps 1 --output_dir "$TMP/e")
run unknown_type 2 "$SWIFT" rlhf "${bad_flags[@]}" --rlhf_type ppo
has unknown_type_msg "--rlhf_type ppo is not known" err
run rm_ref 2 "$SWIFT" rlhf "${bad_flags[@]}" --rlhf_type rm --ref_model "$SFT"
has rm_ref_msg "--rlhf_type rm trains a reward model: --ref_model is not used" err
run bad_loss 2 "$SWIFT" rlhf "${bad_flags[@]}" --loss_type kto_pair
has bad_loss_msg "--loss_type kto_pair is not available" err
run ref_free 2 "$SWIFT" rlhf "${bad_flags[@]}" --rlhf_type orpo --ref_model "$SFT"
has ref_free_msg "is reference-free" err
run packing 2 "$SWIFT" rlhf "${bad_flags[@]}" --packing true
has packing_msg "--packing does not apply" err
run zero3_full 2 env NPROC_PER_NODE=2 "$SWIFT" rlhf "${bad_flags[@]}" --train_type full --deepspeed zero3
has zero3_full_msg "a separate reference model" err
printf '{"query": "q", "response": "r"}\n' > "$TMP/no_rejected.jsonl"
run no_rejected 3 "$SWIFT" rlhf --model "$SFT" --dataset "$TMP/no_rejected.jsonl" --max_steps 1 --output_dir "$TMP/e2"
has no_rejected_msg "--dataset row 1: a preference row needs a rejected reply" err

finish rlhf
