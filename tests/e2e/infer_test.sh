#!/usr/bin/env bash
# End-to-end: swift infer on a tiny random Qwen3 model (configs/models/qwen3-tiny: real Qwen3 tokenizer).
# Usage: infer_test.sh path/to/swift
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 7 --output_dir "$TMP/m" 2>/dev/null || { echo "FAIL export"; exit 1; }
M="$TMP/m"

# Interactive: multi-turn, clear, exit; streamed and unstreamed replies are the same text.
printf 'hello\nclear\nhello\nexit\n' | "$SWIFT" infer --model "$M" --max_new_tokens 8 >"$TMP/stream.txt" 2>"$TMP/err"
[ $? = 0 ] && ok || { bad "interactive rc"; cat "$TMP/err"; }
grep -q "(conversation cleared)" "$TMP/stream.txt" && ok || bad "interactive: no clear"
[ "$(grep -c '^<<< >>> ' "$TMP/stream.txt")" = 2 ] && ok || { bad "interactive: expected 2 replies"; cat "$TMP/stream.txt"; }
printf 'hello\n' | "$SWIFT" infer --model "$M" --max_new_tokens 8 --stream false >"$TMP/plain.txt" 2>/dev/null
first_stream="$(grep -m1 '^<<< >>> ' "$TMP/stream.txt")"
first_plain="$(grep -m1 '^<<< >>> ' "$TMP/plain.txt")"
[ -n "$first_plain" ] && [ "$first_stream" = "$first_plain" ] && ok || bad "stream vs plain: '$first_stream' vs '$first_plain'"
# End of input without exit quits cleanly.
printf 'hi' | "$SWIFT" infer --model "$M" --max_new_tokens 2 >/dev/null 2>&1 && ok || bad "EOF quit"

# Batch mode over a dataset in several layouts.
cat > "$TMP/val.jsonl" <<'J'
{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
{"query": "2+2?", "response": "4"}
{"conversations": [{"from": "human", "value": "no label"}]}
J
run batch 0 "$SWIFT" infer --model "$M" --val_dataset "$TMP/val.jsonl" --result_path "$TMP/res/out.jsonl" \
  --max_new_tokens 6 --logprobs true --top_logprobs 3 --max_batch_size 2
[ "$(wc -l < "$TMP/res/out.jsonl")" = 3 ] && ok || bad "batch: 3 rows expected"
ls "$TMP/res" | grep -q tmp && bad "batch left a temporary file" || ok
"$PY" - "$TMP/res/out.jsonl" <<'P' && ok || bad "batch rows malformed"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows[0]["labels"] == "hello" and rows[1]["labels"] == "4" and rows[2]["labels"] is None, rows
assert rows[0]["messages"][0] == {"role": "system", "content": "be brief"}
assert rows[0]["messages"][-1]["role"] == "user"
for r in rows:
    assert isinstance(r["response"], str)
    lp = r["logprobs"]["content"]
    assert len(lp) == r["usage"]["completion_tokens"] or r["finish_reason"] == "stop"
    assert all(len(t["top_logprobs"]) == 3 and t["logprob"] <= 0 for t in lp)
    assert lp[0]["top_logprobs"][0]["logprob"] >= lp[0]["logprob"]  # greedy picks the best
    assert r["usage"]["total_tokens"] == r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
P
# Greedy is deterministic; batching does not change answers.
run batch1 0 "$SWIFT" infer --model "$M" --val_dataset "$TMP/val.jsonl" --result_path "$TMP/one.jsonl" --max_new_tokens 6 --max_batch_size 1
"$PY" -c "
import json,sys
a=[json.loads(l)['response'] for l in open('$TMP/res/out.jsonl')]
b=[json.loads(l)['response'] for l in open('$TMP/one.jsonl')]
sys.exit(0 if a==b else 1)" && ok || bad "batch size changed greedy answers"
# Sampling with a seed repeats.
run s1 0 "$SWIFT" infer --model "$M" --val_dataset "$TMP/val.jsonl#2" --result_path "$TMP/s1.jsonl" --max_new_tokens 6 --temperature 1.2 --top_p 0.9 --seed 5
run s2 0 "$SWIFT" infer --model "$M" --val_dataset "$TMP/val.jsonl#2" --result_path "$TMP/s2.jsonl" --max_new_tokens 6 --temperature 1.2 --top_p 0.9 --seed 5
cmp -s "$TMP/s1.jsonl" "$TMP/s2.jsonl" && ok || bad "seeded sampling differs"
# A row ending with a partial assistant reply: by default that reply is the label (ms-swift's infer); with
# --continue_final_message true the model continues it (no label).
echo '{"messages": [{"role": "user", "content": "Count to three."}, {"role": "assistant", "content": "One, two,"}]}' > "$TMP/partial.jsonl"
run partial_label 0 "$SWIFT" infer --model "$M" --val_dataset "$TMP/partial.jsonl" --result_path "$TMP/pl.jsonl" --max_new_tokens 4
run partial_continue 0 "$SWIFT" infer --model "$M" --val_dataset "$TMP/partial.jsonl" --result_path "$TMP/pc.jsonl" \
  --max_new_tokens 4 --continue_final_message true
"$PY" - "$TMP/pl.jsonl" "$TMP/pc.jsonl" <<'P' && ok || bad "--continue_final_message did not continue the reply"
import json, sys
label, cont = (json.loads(open(p).readline()) for p in sys.argv[1:3])
assert label["labels"] == "One, two," and [m["role"] for m in label["messages"]] == ["user"], label
assert cont["labels"] is None and cont["messages"][-1] == {"role": "assistant", "content": "One, two,"}, cont
assert cont["usage"]["prompt_tokens"] > label["usage"]["prompt_tokens"], (cont["usage"], label["usage"])
P
# Plain completion without a chat template.
run plain 0 "$SWIFT" infer --model "$M" --val_dataset "$TMP/val.jsonl" --result_path "$TMP/p.jsonl" --use_chat_template false --max_new_tokens 3

# Errors: exit codes and hints.
run no_model 2 "$SWIFT" infer;                                        has no_model "needs --model" err
run bad_template 2 "$SWIFT" infer --model "$M" --template nope </dev/null;  has bad_template "qwen3" err
run missing_tokens 2 "$SWIFT" infer --model "$M" --template llama3 </dev/null; has missing_tokens "--use_chat_template false" err
echo '{"foo": 1}' > "$TMP/bad.jsonl"
run bad_row 3 "$SWIFT" infer --model "$M" --val_dataset "$TMP/bad.jsonl" --result_path "$TMP/b.jsonl"; has bad_row "row 1" err
test ! -e "$TMP/b.jsonl" && ok || bad "bad_row left a result file"
# Other engines' backends are served by the built-in one, with a log line; an unknown backend is refused.
run backend 0 "$SWIFT" infer --model "$M" --infer_backend vllm --vllm_gpu_memory_utilization 0.9 --max_new_tokens 2 </dev/null
has backend "--infer_backend vllm: served by swift's built-in LibTorch engine" err
has backend_no_effect "--vllm_gpu_memory_utilization has no effect in swift" err
run backend_unknown 2 "$SWIFT" infer --model "$M" --infer_backend tgi </dev/null; has backend_unknown "not a backend ms-swift has" err
run long 3 "$SWIFT" infer --model "$M" --val_dataset "$TMP/val.jsonl" --result_path "$TMP/l.jsonl" --max_model_len 5; has long "--max_model_len" err
run bad_temp 2 "$SWIFT" infer --model "$M" --temperature -1 </dev/null

finish infer
