#!/usr/bin/env bash
# End-to-end: QLoRA and bitsandbytes-quantized folders through the swift binary. Usage: quant_test.sh path/to/swift
#  - --train_type qlora (NF4 base, LoRA on top) learns swift/self-cognition on a tiny random model; swift infer with
#    the adapter alone loads the base quantized as it was trained (args.json) and answers with the learned name;
#  - swift export --merge_lora writes a dense merged folder that answers the same;
#  - swift export --quant_method bnb writes a transformers-style 4-bit folder that loads back quantized, and
#    saving it again is byte for byte the same file; 8-bit QLoRA trains;
#  - bad quantization flags and folders are clear errors.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json safetensors numpy

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --output_dir "$TMP/base" >/dev/null 2>&1 \
  || { echo "FAIL export"; exit 1; }

# 1. QLoRA learns self-cognition.
run qlora 0 "$SWIFT" sft --model "$TMP/base" --train_type qlora --dataset swift/self-cognition \
  --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope --max_steps 150 --learning_rate 5e-3 --lora_rank 16 \
  --per_device_train_batch_size 4 --gradient_accumulation_steps 1 --logging_steps 25 --save_steps 150 \
  --output_dir "$TMP/qlora"
has qlora_quantized "quantized 14 linear layers (bitsandbytes nf4, double quantization)" err
RUN="$(ls -d "$TMP"/qlora/v0-*)"
CKPT="$RUN/checkpoint-150"
"$PY" - "$RUN/logging.jsonl" "$CKPT/args.json" <<'P' && ok || bad "qlora did not learn or record its quantization"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert len(rows) == 6, rows
# The random tied embedding keeps the loss near ln(vocab); what the adapter learns shows in the argmax.
assert rows[-1]["token_acc"] > 0.6 and rows[-1]["token_acc"] > rows[0]["token_acc"] + 0.2, rows
assert rows[-1]["loss"] < rows[0]["loss"], rows
args = json.load(open(sys.argv[2]))
assert args["quant_method"] == "bnb" and args["quant_bits"] == 4 and args["bnb_4bit_quant_type"] == "nf4", args
P
test -s "$CKPT/adapter_model.safetensors" && test ! -e "$CKPT/model.safetensors" && ok || bad "qlora checkpoint is not an adapter"
printf '{"query": "who are you?"}\n{"query": "What is your name?"}\n' > "$TMP/ask.jsonl"
run ask_adapter 0 "$SWIFT" infer --adapters "$CKPT" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/adapter.jsonl" \
  --max_new_tokens 24
has ask_adapter_quantized "quantized 14 linear layers" err
has learned_en "Xiao Huang" adapter.jsonl

# The OpenAI server with the adapter alone: the same base quantized, the same answer.
port="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$SWIFT" deploy --adapters "$CKPT" --port "$port" >"$TMP/deploy.log" 2>&1 &
server=$!
for _ in $(seq 1 60); do curl -sf "localhost:$port/health" >/dev/null 2>&1 && break; sleep 0.5; done
curl -s "localhost:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"model": "base", "messages": [{"role": "user", "content": "who are you?"}], "max_tokens": 24}' >"$TMP/deploy.json"
kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
grep -qF "Xiao Huang" "$TMP/deploy.json" && grep -qF "quantized 14 linear layers" "$TMP/deploy.log" && ok || \
  bad "deploy with the QLoRA adapter: $(head -c 300 "$TMP/deploy.json")"

# 2. Merging dequantizes the base: a dense folder, the same answers.
run merge 0 "$SWIFT" export --adapters "$CKPT" --merge_lora true --output_dir "$TMP/merged"
"$PY" - "$TMP/merged" <<'P' && ok || bad "merged folder is not dense"
import json, sys
from safetensors import safe_open
cfg = json.load(open(f"{sys.argv[1]}/config.json"))
assert "quantization_config" not in cfg, cfg
with safe_open(f"{sys.argv[1]}/model.safetensors", "np") as f:
    keys = list(f.keys())
    assert not [k for k in keys if k.endswith(".absmax") or "quant_state" in k], keys
    assert f.get_slice("model.layers.0.mlp.up_proj.weight").get_dtype() == "F32"
P
run ask_merged 0 "$SWIFT" infer --model "$TMP/merged" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/merged.jsonl" \
  --max_new_tokens 24
"$PY" - "$TMP/adapter.jsonl" "$TMP/merged.jsonl" <<'P' && ok || bad "merged model answers differently from base + adapter"
import json, sys
a = [json.loads(l)["response"] for l in open(sys.argv[1])]
b = [json.loads(l)["response"] for l in open(sys.argv[2])]
assert a == b, (a, b)
P

# 3. A 4-bit export: transformers' layout, loads back quantized, saves back byte for byte.
run export_q4 0 "$SWIFT" export --model "$TMP/base" --quant_method bnb --quant_bits 4 --output_dir "$TMP/q4"
"$PY" - "$TMP/q4" <<'P' && ok || bad "4-bit export is not a bitsandbytes folder"
import json, sys
from safetensors import safe_open
cfg = json.load(open(f"{sys.argv[1]}/config.json"))
q = cfg["quantization_config"]
assert q["quant_method"] == "bitsandbytes" and q["load_in_4bit"] and q["bnb_4bit_quant_type"] == "nf4", q
with safe_open(f"{sys.argv[1]}/model.safetensors", "np") as f:
    keys = set(f.keys())
w = "model.layers.0.self_attn.q_proj.weight"
for k in [w, w + ".absmax", w + ".quant_map", w + ".nested_absmax", w + ".nested_quant_map",
          w + ".quant_state.bitsandbytes__nf4", "model.embed_tokens.weight"]:
    assert k in keys, k
P
test -s "$TMP/q4/tokenizer.json" && ok || bad "4-bit export lacks the tokenizer"
run export_q4_again 0 "$SWIFT" export --model "$TMP/q4" --output_dir "$TMP/q4b"
has export_q4_again_prequantized "quantized 14 linear layers" err
cmp -s "$TMP/q4/model.safetensors" "$TMP/q4b/model.safetensors" && ok || bad "saving a loaded 4-bit folder changed its bytes"
run full_on_q4 2 "$SWIFT" sft --model "$TMP/q4" --train_type full --dataset swift/self-cognition#8 --model_name A B \
  --model_author C D --max_steps 1 --output_dir "$TMP/fq4"
has full_on_q4_msg "is saved quantized (bitsandbytes): its quantized weights cannot be trained" err
run lora_on_q4 0 "$SWIFT" sft --model "$TMP/q4" --train_type lora --dataset swift/self-cognition#8 --model_name A B \
  --model_author C D --max_steps 1 --output_dir "$TMP/lq4"
grep -q '"quant_bits": 4' "$(ls -d "$TMP"/lq4/v0-*)/checkpoint-1/args.json" && ok || bad "LoRA on a 4-bit folder does not record it"
run infer_q4 0 "$SWIFT" infer --model "$TMP/q4" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/q4.jsonl" --max_new_tokens 4
test -s "$TMP/q4.jsonl" && ok || bad "infer on the 4-bit folder wrote nothing"

# 4. 8-bit (LLM.int8 weights) and FP4 bases train.
run qlora8 0 "$SWIFT" sft --model "$TMP/base" --train_type lora --quant_method bnb --quant_bits 8 \
  --dataset swift/self-cognition#8 --model_name A B --model_author C D --max_steps 2 --output_dir "$TMP/q8"
has qlora8_int8 "(bitsandbytes int8)" err
run qlora_fp4 0 "$SWIFT" sft --model "$TMP/base" --train_type qlora --bnb_4bit_quant_type fp4 \
  --bnb_4bit_use_double_quant false --dataset swift/self-cognition#8 --model_name A B --model_author C D --max_steps 2 \
  --output_dir "$TMP/fp4"
has qlora_fp4_type "(bitsandbytes fp4)" err

# 5. QLoRA over 2 ranks equals 1 rank on the same global batch (DDP, Gloo).
two=(--model "$TMP/base" --train_type qlora --dataset swift/self-cognition#16 --model_name A B --model_author C D
     --max_steps 2 --gradient_accumulation_steps 1 --logging_steps 1 --lora_dropout 0 --num_threads 1 --add_version false)
run qlora_one 0 "$SWIFT" sft "${two[@]}" --per_device_train_batch_size 4 --output_dir "$TMP/one"
run qlora_two 0 env NPROC_PER_NODE=2 "$SWIFT" sft "${two[@]}" --per_device_train_batch_size 2 --output_dir "$TMP/two"
"$PY" - "$TMP/one" "$TMP/two" <<'P' && ok || bad "2-rank QLoRA differs from 1 rank"
import json, sys
from safetensors.numpy import load_file
def losses(d):
    return [json.loads(l)["loss"] for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert len(a) == len(b) == 2 and all(abs(x - y) <= 1e-5 * max(1, abs(x)) for x, y in zip(a, b)), (a, b)
wa = load_file(f"{sys.argv[1]}/checkpoint-2/adapter_model.safetensors")
wb = load_file(f"{sys.argv[2]}/checkpoint-2/adapter_model.safetensors")
assert max(float(abs(wa[k] - wb[k]).max()) for k in wa) < 1e-5
P

# 6. Clear errors.
common=(--model "$TMP/base" --dataset swift/self-cognition#8 --model_name A B --model_author C D --max_steps 1)
run bits3 2 "$SWIFT" sft "${common[@]}" --quant_method bnb --quant_bits 3 --output_dir "$TMP/e1"
has bits3_msg "--quant_bits 3 is not available" err
run gptq 2 "$SWIFT" sft "${common[@]}" --quant_method gptq --quant_bits 4 --output_dir "$TMP/e2"
has gptq_msg "--quant_method gptq is not supported" err
run full_quant 2 "$SWIFT" sft "${common[@]}" --train_type full --quant_bits 4 --output_dir "$TMP/e3"
has full_quant_msg "quantized weights cannot be trained" err
run nf5 2 "$SWIFT" sft "${common[@]}" --train_type qlora --bnb_4bit_quant_type nf5 --output_dir "$TMP/e4"
has nf5_msg "unknown 4-bit quantization type 'nf5'" err
run block100 2 "$SWIFT" sft "${common[@]}" --train_type qlora --bnb_4bit_blocksize 100 --output_dir "$TMP/e5"
has block100_msg "block size 100" err
cp -r "$TMP/q4" "$TMP/awq"
"$PY" - "$TMP/awq/config.json" <<'P'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["quantization_config"] = {"quant_method": "awq", "bits": 4}
json.dump(cfg, open(sys.argv[1], "w"))
P
run awq 3 "$SWIFT" infer --model "$TMP/awq" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/awq.jsonl"
has awq_msg "quant_method 'awq' is not supported" err

finish quant
