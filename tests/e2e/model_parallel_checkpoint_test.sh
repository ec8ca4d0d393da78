#!/usr/bin/env bash
# End-to-end: model-parallel checkpoints (--save_safetensors false: each rank writes its part of the weights) and
# the conversions between them and Hugging Face folders (swift export --to_hf / --to_mcore, also as megatron export).
# Usage: model_parallel_checkpoint_test.sh path/to/swift
#  - TP2 x PP2 with --save_safetensors false trains as one rank does and writes model_parallel.json and one
#    mp_rank_TT_PPP.safetensors per rank (no whole model.safetensors), the run's last checkpoint whole; it resumes exactly at TP2 x PP2 and as one rank
#    would at one rank and at TP2 (another layout);
#  - `megatron export --to_hf true` joins the parts into a folder that transformers loads and that equals one
#    rank's checkpoint; `swift export --to_mcore true` writes the same files as training at that layout, and back
#    with --to_hf gives the folder bit for bit;
#  - PP2 on the tied Qwen3: the embedding is written once (by the first stage), and the joined folder equals one
#    rank's; LoRA keeps writing its PEFT adapter whole;
#  - a missing part file, --save_safetensors false without model parallelism and the conversions' wrong flags stop
#    with exit 2 or 3 and say what to do.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json numpy safetensors torch transformers
source "$(dirname "${BASH_SOURCE[0]}")/model_parallel_checks.sh"
MEGATRON="$(dirname "$SWIFT")/megatron"

export_models 4
base=(--dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests --train_type full
      --gradient_accumulation_steps 4 --learning_rate 1e-3 --logging_steps 1 --add_version false --num_threads 1
      --seed 1 --adam_epsilon 1e-6 --max_grad_norm 1.0 --per_device_train_batch_size 2)
six=("${base[@]}" --max_steps 6 --save_steps 3)

# same_weights NAME DIR_A DIR_B TOLERANCE: the two Hugging Face folders hold the same tensors (exactly at 0).
same_weights() {
  "$PY" - "$2" "$3" "$4" <<'P' && ok || bad "$1: the weights differ"
import sys
from safetensors.numpy import load_file
a, b = load_file(f"{sys.argv[1]}/model.safetensors"), load_file(f"{sys.argv[2]}/model.safetensors")
assert a.keys() == b.keys(), set(a) ^ set(b)
assert all(a[k].shape == b[k].shape and a[k].dtype == b[k].dtype for k in a)
diff = max(float(abs(a[k].astype("float64") - b[k].astype("float64")).max()) for k in a)
tol = float(sys.argv[3])
assert diff == 0 if tol == 0 else diff < tol, diff
print(f"weights within {diff:.1e}")
P
}

# same_log NAME RUN_A RUN_B: every logged step's loss and grad norm agree to 3e-5. (The vocabulary-parallel cross
# entropy's fp32 summation order, amplified by AdamW at eps 1e-6, reaches 2e-5 in the grad norm over 6 steps of 4
# micro-batches at TP2: docs/distributed.md; the weights saved, compared below, agree to 1e-6.)
same_log() {
  "$PY" - "$2" "$3" <<'P' && ok || bad "$1: the logged steps differ"
import json, sys
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert len(a) == len(b) == 6, (len(a), len(b))
worst = max(abs(x[k] - y[k]) / max(1.0, abs(x[k])) for x, y in zip(a, b) for k in ("loss", "grad_norm"))
assert worst < 3e-5, (worst, a, b)
P
}

# TP2 x PP2 writing parts, against one rank.
run one6 0 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --output_dir "$TMP/one6"
run parts6 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --tp_size 2 --pp_size 2 \
  --save_safetensors false --output_dir "$TMP/parts6"
has parts6_log "(each rank's part of the weights: swift export --to_hf true --mcore_model DIR" err
C="$TMP/parts6/checkpoint-3"
for f in model_parallel.json mp_rank_00_000.safetensors mp_rank_01_000.safetensors mp_rank_00_001.safetensors \
         mp_rank_01_001.safetensors config.json tokenizer.json trainer_state.json; do
  test -s "$C/$f" && ok || bad "parts6: checkpoint-3 has no $f"
done
test -e "$C/model.safetensors" && bad "parts6: a whole model.safetensors was written too" || ok
"$PY" - "$C" <<'P' && ok || bad "parts6: the parts are not each rank's slices"
import json, sys
from safetensors import safe_open
d = sys.argv[1]
index = json.load(open(f"{d}/model_parallel.json"))
assert index["tensor_parallel_size"] == 2 and index["pipeline_parallel_size"] == 2, index
stage0 = safe_open(f"{d}/mp_rank_00_000.safetensors", "np")
splits = json.loads(stage0.metadata()["swift_splits"])
# Stage 0 holds the embedding and layers 0-1; TP rank 0 its first half of the vocabulary and of q_proj's rows, and
# the replicated norms; the other TP rank the second halves and no norm.
assert "model.embed_tokens.weight" in stage0.keys() and "lm_head.weight" not in stage0.keys()
assert splits["model.embed_tokens.weight"][:2] == [0, 0] and splits["model.layers.0.self_attn.o_proj.weight"][0] == 1
assert "model.layers.0.input_layernorm.weight" in stage0.keys() and not any(".layers.2." in k for k in stage0.keys())
rank1 = safe_open(f"{d}/mp_rank_01_000.safetensors", "np")
s1 = json.loads(rank1.metadata()["swift_splits"])
assert "model.layers.0.input_layernorm.weight" not in rank1.keys()
whole = s1["model.embed_tokens.weight"][2]
assert s1["model.embed_tokens.weight"] == [0, whole // 2, whole], s1["model.embed_tokens.weight"]
stage1 = safe_open(f"{d}/mp_rank_00_001.safetensors", "np")
assert "lm_head.weight" in stage1.keys() and "model.norm.weight" in stage1.keys()
P
same_log parts6_trained "$TMP/one6" "$TMP/parts6"
# The run's last checkpoint is the Hugging Face folder the run is for, whole.
has parts6_last "the run's last checkpoint is written whole, as a Hugging Face folder" err
test -e "$TMP/parts6/checkpoint-6/model_parallel.json" && bad "parts6: the last checkpoint is in parts" || ok
same_weights parts6_last "$TMP/one6/checkpoint-6" "$TMP/parts6/checkpoint-6" 1e-5

# Resuming from the parts: exactly at the same layout, as one rank would at one rank and at TP2.
run parts6_same 0 env NPROC_PER_NODE=4 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --tp_size 2 --pp_size 2 \
  --save_safetensors false --output_dir "$TMP/r1" --resume_from_checkpoint "$C"
tail_like parts6_same "$TMP/parts6" "$TMP/r1" 0
run parts6_at_one 0 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --output_dir "$TMP/r2" --resume_from_checkpoint "$C"
tail_like parts6_at_one "$TMP/one6" "$TMP/r2" 1e-5
run parts6_at_tp2 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --tp_size 2 \
  --output_dir "$TMP/r3" --resume_from_checkpoint "$C"
tail_like parts6_at_tp2 "$TMP/one6" "$TMP/r3" 3e-5

# swift infer reads the parts as a model folder.
echo '{"messages": [{"role": "user", "content": "hi"}]}' > "$TMP/q.jsonl"
run infer_parts 0 "$SWIFT" infer --model "$C" --val_dataset "$TMP/q.jsonl" --max_new_tokens 2 --temperature 0 \
  --result_path "$TMP/infer.jsonl"
test -s "$TMP/infer.jsonl" && ok || bad "infer_parts: no result written"

# The conversions: parts -> Hugging Face (ms-swift's megatron export spelling), which transformers loads.
run to_hf 0 "$MEGATRON" export --mcore_model "$C" --to_hf true
same_weights to_hf "$TMP/one6/checkpoint-3" "$C-hf" 1e-5
"$PY" - "$C-hf" <<'P' && ok || bad "to_hf: transformers does not load the folder"
import sys, transformers
transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])
P
test -e "$C-hf/model_parallel.json" && bad "to_hf: the index was copied along" || ok
# Hugging Face -> parts: the files training writes at that layout, and back to the same folder bit for bit.
run to_mcore 0 "$SWIFT" export --model "$TMP/one6/checkpoint-3" --to_mcore true --tp_size 2 --pp_size 2
has to_mcore "as the parts of 2 tensor-parallel rank(s) x 2 stage(s)" err
"$PY" - "$C" "$TMP/one6/checkpoint-3-mcore" <<'P' && ok || bad "to_mcore: not the layout training writes"
import sys
from safetensors import safe_open
for f in ("mp_rank_00_000", "mp_rank_01_000", "mp_rank_00_001", "mp_rank_01_001"):
    a, b = (safe_open(f"{d}/{f}.safetensors", "np") for d in sys.argv[1:3])
    assert sorted(a.keys()) == sorted(b.keys()), (f, set(a.keys()) ^ set(b.keys()))
    assert a.metadata() == b.metadata(), f
    assert all(a.get_tensor(k).shape == b.get_tensor(k).shape for k in a.keys()), f
P
run round_trip 0 "$SWIFT" export --model "$TMP/one6/checkpoint-3-mcore" --to_hf true --output_dir "$TMP/round_trip"
same_weights round_trip "$TMP/one6/checkpoint-3" "$TMP/round_trip" 0

# PP2 on the tied Qwen3: the first stage writes the embedding, the last stage's copy is not written again.
four=("${base[@]}" --max_steps 4 --save_steps 2)
run one_tied 0 "$SWIFT" sft --model "$TMP/qwen3" "${four[@]}" --output_dir "$TMP/one_tied"
run pp2_tied 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen3" "${four[@]}" --pp_size 2 \
  --save_safetensors false --output_dir "$TMP/pp2_tied"
run pp2_tied_hf 0 "$SWIFT" export --model "$TMP/pp2_tied/checkpoint-2" --to_hf true
same_weights pp2_tied "$TMP/one_tied/checkpoint-2" "$TMP/pp2_tied/checkpoint-2-hf" 1e-5
# LoRA: the adapter is small and still written whole.
run tp2_lora 0 env NPROC_PER_NODE=2 "$SWIFT" sft --model "$TMP/qwen2" "${four[@]/full/lora}" --tp_size 2 \
  --save_safetensors false --output_dir "$TMP/tp2_lora"
has tp2_lora "the LoRA adapter is small and still written whole" err
test -s "$TMP/tp2_lora/checkpoint-4/adapter_model.safetensors" && ok || bad "tp2_lora: no adapter written"

# Bad input.
cp -r "$C" "$TMP/broken" && rm "$TMP/broken/mp_rank_01_001.safetensors"
run missing_part 3 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --output_dir "$TMP/x1" --resume_from_checkpoint "$TMP/broken"
has missing_part "model_parallel.json lists mp_rank_01_001.safetensors, which is missing from" err
run parts_one_rank 2 "$SWIFT" sft --model "$TMP/qwen2" "${six[@]}" --save_safetensors false --output_dir "$TMP/x2"
has parts_one_rank "--save_safetensors false writes each rank's part of a model split by --tp_size" err
run to_hf_of_hf 2 "$SWIFT" export --model "$TMP/qwen2" --to_hf true --output_dir "$TMP/x3"
has to_hf_of_hf "is not a model-parallel checkpoint (no model_parallel.json)" err
run to_mcore_heads 2 "$SWIFT" export --model "$TMP/qwen2" --to_mcore true --tp_size 3 --output_dir "$TMP/x4"
has to_mcore_heads "--to_mcore with --tp_size 3: num_attention_heads (4) is not a multiple" err
run tp_without_mcore 2 "$SWIFT" export --model "$TMP/qwen2" --tp_size 2 --output_dir "$TMP/x5"
has tp_without_mcore "--tp_size / --pp_size are the layout --to_mcore writes" err

finish model_parallel_checkpoint
