#!/usr/bin/env bash
# End-to-end: the data features of swift sft / export. Usage: data_test.sh path/to/swift
#  - export --to_cached_dataset writes DIR/train + DIR/val; training from the cache logs the same losses as
#    training from the rows with the same seed; a cache of another tokenizer/template or a corrupt one is refused;
#  - --lazy_tokenize logs the same losses as eager encoding;
#  - --streaming needs --max_steps; resuming a streamed run equals the uninterrupted run bit for bit;
#  - a Parquet dataset trains exactly as its rows in JSON Lines.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json
same_losses() {  # same_losses LOG_A LOG_B: identical loss/eval_loss rows (same steps, bit for bit)
  "$PY" - "$1" "$2" <<'P'
import json, sys
def rows(p):
    return [(r["global_step/max_steps"], r.get("loss"), r.get("grad_norm"), r.get("eval_loss"))
            for r in map(json.loads, open(p)) if "loss" in r or "eval_loss" in r]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert a and a == b, (a, b)
P
}

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --output_dir "$TMP/m" >/dev/null 2>&1
"$PY" -c "
import json
for i in range(40): print(json.dumps({'query': f'{i} + {i % 7} =', 'response': str(i + i % 7)}))
" > "$TMP/d.jsonl"
common=(--model "$TMP/m" --train_type lora --max_steps 6 --per_device_train_batch_size 2 --gradient_accumulation_steps 2
        --logging_steps 1 --save_steps 3 --eval_steps 3 --max_length 64 --learning_rate 1e-3 --lora_dropout 0.1
        --add_version false)

# 1. Cached dataset: export once, train from it, same losses as from the rows (train and validation split).
run export_cache 0 "$SWIFT" export --to_cached_dataset true --model "$TMP/m" --dataset "$TMP/d.jsonl" \
  --split_dataset_ratio 0.1 --max_length 64 --output_dir "$TMP/cache"
for f in train/tokens.safetensors train/cache_info.json val/tokens.safetensors val/cache_info.json; do
  test -s "$TMP/cache/$f" && ok || bad "cache lacks $f"
done
ls "$TMP"/cache*.tmp* >/dev/null 2>&1 && bad "a temporary export folder was left behind" || ok
run from_rows 0 "$SWIFT" sft "${common[@]}" --dataset "$TMP/d.jsonl" --split_dataset_ratio 0.1 --output_dir "$TMP/rows"
run from_cache 0 "$SWIFT" sft "${common[@]}" --cached_dataset "$TMP/cache/train" --cached_val_dataset "$TMP/cache/val" \
  --output_dir "$TMP/cached"
same_losses "$TMP/rows/logging.jsonl" "$TMP/cached/logging.jsonl" && ok || bad "training from the cache differs from the rows"
grep -q '"eval_loss"' "$TMP/cached/logging.jsonl" && ok || bad "no eval_loss from --cached_val_dataset"
# The export folder itself also works as --cached_dataset (its train/ split).
run cache_parent 0 "$SWIFT" sft "${common[@]}" --max_steps 1 --cached_dataset "$TMP/cache" --output_dir "$TMP/parent"
run export_exists 2 "$SWIFT" export --to_cached_dataset true --model "$TMP/m" --dataset "$TMP/d.jsonl" --output_dir "$TMP/cache"
# Another template or --system than the cache was made with: refused, naming the cache.
run cache_template 2 "$SWIFT" sft "${common[@]}" --cached_dataset "$TMP/cache/train" --template chatml --output_dir "$TMP/x1"
has cache_template "was encoded with template qwen3" err
run cache_system 2 "$SWIFT" sft "${common[@]}" --cached_dataset "$TMP/cache/train" --system "Be brief." --output_dir "$TMP/x2"
# A cache of another tokenizer: same template name, other vocabulary.
mkdir -p "$TMP/other"
cp "$TMP/m/config.json" "$TMP/other/"
cp -r "$TMP/cache/train" "$TMP/other_cache"
"$PY" - "$TMP/other_cache/cache_info.json" <<'P'
import json, sys
j = json.load(open(sys.argv[1])); j["tokenizer_fingerprint"] = "0123456789abcdef"; json.dump(j, open(sys.argv[1], "w"))
P
run cache_tokenizer 2 "$SWIFT" sft "${common[@]}" --cached_dataset "$TMP/other_cache" --output_dir "$TMP/x3"
has cache_tokenizer "another tokenizer" err
# Missing and corrupt caches: data errors naming the path.
run cache_missing 3 "$SWIFT" sft "${common[@]}" --cached_dataset "$TMP/nope" --output_dir "$TMP/x4"
has cache_missing "$TMP/nope" err
cp -r "$TMP/cache/train" "$TMP/corrupt"
head -c 100 "$TMP/cache/train/tokens.safetensors" > "$TMP/corrupt/tokens.safetensors"
run cache_corrupt 3 "$SWIFT" sft "${common[@]}" --cached_dataset "$TMP/corrupt" --output_dir "$TMP/x5"
has cache_corrupt "corrupt/tokens.safetensors" err

# 2. --lazy_tokenize: the same losses as encoding up front.
run lazy 0 "$SWIFT" sft "${common[@]}" --dataset "$TMP/d.jsonl" --split_dataset_ratio 0.1 --lazy_tokenize true \
  --output_dir "$TMP/lazy"
same_losses "$TMP/rows/logging.jsonl" "$TMP/lazy/logging.jsonl" && ok || bad "--lazy_tokenize differs from eager"
run lazy_packing 2 "$SWIFT" sft "${common[@]}" --dataset "$TMP/d.jsonl" --lazy_tokenize true --packing true --output_dir "$TMP/x6"
# Rows too long for --max_length are replaced by other rows and reported.
"$PY" -c "
import json
for i in range(12): print(json.dumps({'query': f'{i} + 1 =', 'response': (str(i + 1) + ' and') * (40 if i % 4 == 0 else 1)}))
" > "$TMP/long.jsonl"
run lazy_long 0 "$SWIFT" sft "${common[@]}" --max_steps 4 --dataset "$TMP/long.jsonl" --lazy_tokenize true --output_dir "$TMP/lazy_long"
has lazy_long "lazy_tokenize dropped 3 rows while training (3 longer than --max_length" err

# 3. --streaming: needs --max_steps; resume equals the uninterrupted run, also across the end of the data.
stream=(--model "$TMP/m" --train_type lora --dataset "$TMP/d.jsonl" --streaming true --shuffle_buffer_size 8 --max_steps 12
        --per_device_train_batch_size 2 --gradient_accumulation_steps 2 --logging_steps 1 --save_steps 3
        --learning_rate 1e-3 --lora_dropout 0.1 --add_version false)
run stream_no_steps 2 "$SWIFT" sft --model "$TMP/m" --dataset "$TMP/d.jsonl" --streaming true --output_dir "$TMP/x7"
has stream_no_steps "--streaming needs --max_steps" err
run stream_ref 0 "$SWIFT" sft "${stream[@]}" --output_dir "$TMP/s_ref"
grep -q '"kind": "streaming"' "$TMP/s_ref/checkpoint-6/trainer_state.json" && ok || bad "no stream position in trainer_state.json"
for at in 6 9; do  # 9: after the first pass over the 40 rows (36 drawn + buffer), 12: two passes
  run "stream_resume_$at" 0 "$SWIFT" sft "${stream[@]}" --output_dir "$TMP/s_$at" --resume_from_checkpoint "$TMP/s_ref/checkpoint-$at"
  "$PY" - "$TMP/s_ref/logging.jsonl" "$TMP/s_$at/logging.jsonl" "$at" <<'P' && ok || bad "streaming resume at $at is not exact"
import json, sys
ref = {r["global_step/max_steps"]: r for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
new = [r for r in map(json.loads, open(sys.argv[2])) if "loss" in r]
assert new and int(new[0]["global_step/max_steps"].split("/")[0]) == int(sys.argv[3]) + 1
for r in new:
    for key in ("loss", "grad_norm", "token_acc"):
        assert r[key] == ref[r["global_step/max_steps"]][key], (r, key)
P
done
# A resumed run with another data mode is refused.
run stream_mode_mismatch 3 "$SWIFT" sft "${stream[@]}" --streaming false --output_dir "$TMP/x8" \
  --resume_from_checkpoint "$TMP/s_ref/checkpoint-6"
# Streaming with packing is refused; a malformed line is an error naming the file and line.
run stream_packing 2 "$SWIFT" sft "${stream[@]}" --packing true --output_dir "$TMP/x9"
{ head -3 "$TMP/d.jsonl"; echo '{oops'; } > "$TMP/broken.jsonl"
run stream_broken 3 "$SWIFT" sft "${stream[@]/$TMP\/d.jsonl/$TMP/broken.jsonl}" --shuffle_buffer_size 1 --output_dir "$TMP/x10"
has stream_broken "broken.jsonl:4" err

# A missing or empty data file is reported before the model loads (no "parameters:" line yet), exit 3.
: > "$TMP/empty.jsonl"
run empty_file 3 "$SWIFT" sft --model "$TMP/m" --dataset "$TMP/empty.jsonl" --output_dir "$TMP/x11"
has empty_file "has no rows" err
grep -q "parameters:" "$TMP/err" && bad "the empty dataset was found only after the model loaded" || ok
run missing_val 3 "$SWIFT" sft --model "$TMP/m" --dataset "$TMP/d.jsonl" --val_dataset "$TMP/nope.jsonl" --output_dir "$TMP/x12"
has missing_val "--val_dataset $TMP/nope.jsonl does not exist" err

# Parquet: the rows of a .parquet file train exactly as the same rows in .jsonl (the vendored chat file, several row
# groups and pages; its rows as pyarrow reads them are in expected.json); a folder of Parquet files works too, and
# a damaged file is an error naming it.
PQ="$ROOT/tests/assets/parquet"
"$PY" - "$PQ/expected.json" "$TMP/chat.jsonl" <<'P'
import json, sys
cases = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    for row in cases["tables"][cases["files"]["chat_default.parquet"]]:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
P
run parquet_rows 0 "$SWIFT" sft "${common[@]}" --dataset "$PQ/chat_default.parquet" --split_dataset_ratio 0.1 --output_dir "$TMP/pq"
run parquet_jsonl 0 "$SWIFT" sft "${common[@]}" --dataset "$TMP/chat.jsonl" --split_dataset_ratio 0.1 --output_dir "$TMP/pq_jsonl"
same_losses "$TMP/pq/logging.jsonl" "$TMP/pq_jsonl/logging.jsonl" && ok || bad "a Parquet dataset trains unlike its rows in JSON Lines"
mkdir -p "$TMP/pq_folder" && cp "$PQ/chat_zstd_v2.parquet" "$PQ/query_response.parquet" "$TMP/pq_folder/"
run parquet_folder 0 "$SWIFT" sft "${common[@]}" --max_steps 2 --dataset "$TMP/pq_folder#30" --output_dir "$TMP/pq_f"
head -c 3000 "$PQ/chat_default.parquet" > "$TMP/cut.parquet"
run parquet_cut 3 "$SWIFT" sft "${common[@]}" --dataset "$TMP/cut.parquet" --output_dir "$TMP/x13"
has parquet_cut "cut.parquet: the file is cut short" err

finish data
