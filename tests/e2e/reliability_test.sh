#!/usr/bin/env bash
# End-to-end: bad input and broken runs fail clearly (exit 2 usage, 3 data, 4 device/memory) and lose nothing; never
# a crash, NaN written to a checkpoint, or a silent skip. One check per reproducer of issue 17. Usage:
# reliability_test.sh path/to/swift
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json safetensors numpy torch

run base 0 "$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --output_dir "$TMP/m"
common=(--model "$TMP/m" --dataset swift/self-cognition#16 --model_name A B --model_author C D --num_threads 1)

# 1. Flags out of range are usage errors (exit 2), all of them reported at once.
bad_flag() {  # bad_flag NAME EXPECTED_TEXT FLAGS...
  local name="$1" text="$2"; shift 2
  run "$name" 2 "$SWIFT" sft "${common[@]}" --max_steps 1 --output_dir "$TMP/bad" "$@"
  has "${name}_msg" "$text" err
}
bad_flag lr_inf "--learning_rate must be a finite number" --learning_rate inf
bad_flag batch_zero "--per_device_train_batch_size must be at least 1, got 0" --per_device_train_batch_size 0
bad_flag batch_negative "--per_device_train_batch_size must be at least 1, got -2" --per_device_train_batch_size -2
bad_flag accumulation_negative "--gradient_accumulation_steps must be at least 0" --gradient_accumulation_steps -1
bad_flag max_length_negative "--max_length must be at least 0, got -5" --max_length -5
bad_flag save_steps_zero "--save_steps must be at least 1, got 0" --save_steps 0
bad_flag logging_steps_zero "--logging_steps must be at least 1, got 0" --logging_steps 0
bad_flag epochs_nan "--num_train_epochs must be a finite number" --num_train_epochs nan --max_steps -1
bad_flag grad_norm_nan "--max_grad_norm must be a finite number" --max_grad_norm nan
bad_flag beta1_two "--adam_beta1 must be a finite number in [0, 1), got 2" --adam_beta1 2
bad_flag epsilon_negative "--adam_epsilon must be a finite number in (0," --adam_epsilon -1
bad_flag lora_alpha_nan "--lora_alpha must be a finite number" --lora_alpha nan
bad_flag threads_40000 "--num_threads must be in [0," --num_threads 40000
bad_flag all_at_once "3 problems with the command line" --save_steps 0 --adam_beta1 2 --max_length -5
run sample_huge 2 "$SWIFT" sft --model "$TMP/m" --dataset "$ROOT/configs/datasets/demo.jsonl#99999999999" --max_steps 1 \
  --output_dir "$TMP/bad"
has sample_huge_msg "rows is more than the 100000000 a dataset may take" err
printf 'learning_rate: [1, 2]\n' > "$TMP/list.yaml"
run yaml_list 2 "$SWIFT" sft "$TMP/list.yaml" "${common[@]}" --max_steps 1 --output_dir "$TMP/bad"
has yaml_list_msg "'learning_rate' takes one value, got a list" err
printf 'dataset: [[a, b], c]\n' > "$TMP/nested.yaml"
run yaml_nested 2 "$SWIFT" sft "$TMP/nested.yaml" --model "$TMP/m" --max_steps 1 --output_dir "$TMP/bad"
has yaml_nested_msg "'dataset' must be a list of plain values" err
printf '{"query": "hi"}\n' > "$TMP/ask.jsonl"
run infer_batch_zero 2 "$SWIFT" infer --model "$TMP/m" --val_dataset "$TMP/ask.jsonl" --max_batch_size 0
has infer_batch_zero_msg "--max_batch_size must be at least 1, got 0" err
run infer_len_negative 2 "$SWIFT" infer --model "$TMP/m" --val_dataset "$TMP/ask.jsonl" --max_model_len -1
has infer_len_negative_msg "--max_model_len must be at least 0, got -1" err
touch "$TMP/a_file"
run result_under_file 3 "$SWIFT" infer --model "$TMP/m" --val_dataset "$TMP/ask.jsonl" --result_path "$TMP/a_file/out.jsonl" \
  --max_new_tokens 2
has result_under_file_msg "cannot create the folder of --result_path" err

# 2. config.json values that would compute NaN, and sizes that cannot fit, are data errors before anything runs.
bad_config() {  # bad_config NAME EXPECTED_TEXT PYTHON_EDIT [--init]
  local name="$1" text="$2" edit="$3" init="${4:-}"
  rm -rf "$TMP/$name" && cp -r "$TMP/m" "$TMP/$name"
  "$PY" -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); $edit; json.dump(c, open(p, 'w'))" "$TMP/$name/config.json"
  if [ -n "$init" ]; then  # a folder to initialise: export and sft read it
    rm -f "$TMP/$name"/*.safetensors
    run "${name}_export" 3 "$SWIFT" export --model "$TMP/$name" --init_strategy normal --output_dir "$TMP/${name}_out"
    has "${name}_export_msg" "$text" err
  else
    run "${name}_infer" 3 "$SWIFT" infer --model "$TMP/$name" --val_dataset "$TMP/ask.jsonl" --max_new_tokens 2
    has "${name}_infer_msg" "$text" err
  fi
  run "${name}_sft" 3 "$SWIFT" sft --model "$TMP/$name" --dataset swift/self-cognition#4 --model_name A B \
    --model_author C D --max_steps 1 --output_dir "$TMP/bad" ${init:+--init_strategy normal}
  has "${name}_sft_msg" "$text" err
}
bad_config rope_zero '"rope_theta" must be a positive number' 'c["rope_theta"] = 0'
bad_config rope_negative '"rope_theta" must be a positive number' 'c["rope_theta"] = -10'
bad_config factor_zero '"rope_scaling.factor" must be a positive number' 'c["rope_scaling"] = {"rope_type": "linear", "factor": 0}'
bad_config eps_negative '"rms_norm_eps" must be a positive number' 'c["rms_norm_eps"] = -1'
bad_config init_range_negative '"initializer_range" must be a number >= 0' 'c["initializer_range"] = -1' init
bad_config hidden_huge 'parameters: ' 'c.update(hidden_size=10**9, head_dim=128)' init
bad_config vocab_huge 'parameters: ' 'c["vocab_size"] = 2**40' init
bad_config layers_huge 'parameters: ' 'c["num_hidden_layers"] = 10**6' init

# 3. Training that diverges: non-finite gradients skip the update; enough of them in a row stop the run (exit 3);
#    a checkpoint of non-finite weights is never written, and never pushes a good one out of --save_total_limit.
run diverges 3 "$SWIFT" sft "${common[@]}" --train_type full --learning_rate 1e38 --max_steps 8 --save_steps 100 \
  --max_nonfinite_steps 2 --logging_steps 1 --output_dir "$TMP/div" --add_version false
has diverges_skip "the update is skipped" err
has diverges_stop "in 2 steps in a row, each skipped; training stopped" err
run nan_weights 3 "$SWIFT" sft "${common[@]}" --train_type full --learning_rate 1e39 --max_steps 3 --save_steps 1 \
  --logging_steps 1 --output_dir "$TMP/nanw" --add_version false
has nan_weights_msg "are not finite (NaN or inf" err
test ! -e "$TMP/nanw/checkpoint-1" && ok || bad "a checkpoint of non-finite weights was written"

# 4. Resume checks what it reads: the optimizer state, trainer_state.json, rng_state.pt.
run good 0 "$SWIFT" sft "${common[@]}" --train_type full --max_steps 2 --save_steps 1 --output_dir "$TMP/good" \
  --add_version false
CK="$TMP/good/checkpoint-1"
damaged() {  # damaged NAME EXIT EXPECTED_TEXT: resume from $TMP/ck_NAME (edited by the caller)
  run "$1" "$2" "$SWIFT" sft "${common[@]}" --train_type full --max_steps 2 --output_dir "$TMP/res_$1" \
    --add_version false --resume_from_checkpoint "$TMP/ck_$1"
  has "$1_msg" "$3" err
}
edit_optimizer() {  # edit_optimizer NAME PYTHON_EXPR_ON_exp_avg_sq
  rm -rf "$TMP/ck_$1" && cp -r "$CK" "$TMP/ck_$1"
  "$PY" - "$TMP/ck_$1/optimizer.safetensors" "$2" <<'P'
import sys
from safetensors.torch import load_file, save_file
from safetensors import safe_open
path, expr = sys.argv[1], sys.argv[2]
meta = safe_open(path, "pt").metadata()
t = load_file(path)
key = next(k for k in sorted(t) if k.endswith(".exp_avg_sq"))
x = t[key]
t[key] = eval(expr)
save_file(t, path, metadata=meta)
P
}
edit_optimizer opt_nan 'x * float("nan")'
damaged opt_nan 3 "holds NaN or inf"
edit_optimizer opt_negative '-x - 1'
damaged opt_negative 3 "holds negative values"
edit_state() {  # edit_state NAME PYTHON_EDIT (on `s`, trainer_state.json)
  rm -rf "$TMP/ck_$1" && cp -r "$CK" "$TMP/ck_$1"
  "$PY" -c "import json,sys; p=sys.argv[1]; s=json.load(open(p)); $2; json.dump(s, open(p, 'w'))" "$TMP/ck_$1/trainer_state.json"
}
edit_state step_negative 's["global_step"] = -5'
damaged step_negative 3 '"global_step" must be a step count (a whole number >= 0), got -5'
edit_state step_string 's["global_step"] = "1"'
damaged step_string 3 '"global_step" must be a step count'
rm -rf "$TMP/ck_rng_missing" && cp -r "$CK" "$TMP/ck_rng_missing" && rm "$TMP/ck_rng_missing/rng_state.pt"
damaged rng_missing 0 "is not an exact continuation"
rm -rf "$TMP/ck_rng_truncated" && cp -r "$CK" "$TMP/ck_rng_truncated"
head -c 100 "$CK/rng_state.pt" > "$TMP/ck_rng_truncated/rng_state.pt"
damaged rng_truncated 3 "rng_state.pt cannot be read as a random generator state"

# 5. What a killed run left in its folder (a checkpoint's temporary folder, args.json's temporary file) is removed
#    when a run starts there.
mkdir -p "$TMP/left/checkpoint-3.tmp-999999"
head -c 1000 /dev/zero > "$TMP/left/checkpoint-3.tmp-999999/model.safetensors"
echo '{}' > "$TMP/left/args.json.tmp-999998"
run leftovers 0 "$SWIFT" sft "${common[@]}" --max_steps 1 --output_dir "$TMP/left" --add_version false
has leftovers_msg "removed what killed runs left in" err
test ! -e "$TMP/left/checkpoint-3.tmp-999999" && test ! -e "$TMP/left/args.json.tmp-999998" && ok || bad "leftovers kept"

finish reliability
