#!/usr/bin/env bash
# Golden loss curves: 10 optimizer steps of tiny fp32 models for each training method, logged every step, kept in
# tests/golden/curves/<run>.json. A change that alters the numbers of training (a refactor that should not) shows
# as a difference here, naming the run, the step and the metric.
#   tests/golden/golden.sh check path/to/swift    compare the current binary with the curves (CTest: e2e_golden)
#   tests/golden/golden.sh write path/to/swift    write the curves anew (then review `git diff tests/golden`)
# Deterministic by construction: fixed seeds, one intra-op thread, fp32 on the CPU. Every logged number is
# compared (loss, grad_norm, learning_rate, token_acc, rewards/*, logps/*, eval_*, ...) except timings and memory,
# to a relative tolerance that leaves room for another CPU's vector units (GOLDEN_RTOL, default 1e-4).
set -uo pipefail
MODE="${1:?usage: golden.sh check|write path/to/swift}"
SWIFT="${2:?usage: golden.sh check|write path/to/swift}"
case "$MODE" in check|write) ;; *) echo "usage: golden.sh check|write path/to/swift"; exit 2 ;; esac
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/common.sh"
need_python json
HERE="$ROOT/tests/golden"
CURVES="$HERE/curves"
export OMP_NUM_THREADS=1

# Two tiny random bases: Qwen3 (tied embedding, q/k norms) and Mistral (untied head), from fixed seeds.
run base_qwen3 0 "$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 11 \
  --output_dir "$TMP/qwen3"
run base_mistral 0 "$SWIFT" export --model "$ROOT/configs/models/mistral-tiny" --init_strategy normal --seed 12 \
  --output_dir "$TMP/mistral"

common=(--max_steps 10 --logging_steps 1 --save_steps 10 --add_version false --torch_dtype float32 --seed 42
        --num_threads 1 --per_device_train_batch_size 2 --gradient_accumulation_steps 2)
identity=(--model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope)
# name, then the command line after the binary
runs=(
  "sft_full|sft --model $TMP/qwen3 --train_type full --learning_rate 1e-3 --dataset swift/self-cognition#40 --val_dataset swift/self-cognition#6 --eval_steps 5"
  "sft_lora|sft --model $TMP/mistral --train_type lora --lora_rank 4 --learning_rate 5e-3 --dataset swift/arithmetic#40"
  "sft_qlora|sft --model $TMP/mistral --train_type qlora --lora_rank 4 --learning_rate 5e-3 --dataset swift/arithmetic#40"
  "sft_packing|sft --model $TMP/qwen3 --train_type full --learning_rate 1e-3 --packing true --packing_length 96 --dataset $ROOT/configs/datasets/demo.jsonl swift/self-cognition#40"
  "pt_full|pt --model $TMP/mistral --learning_rate 1e-3 --dataset $ROOT/configs/datasets/demo.jsonl swift/arithmetic#40"
  "dpo_lora|rlhf --rlhf_type dpo --model $TMP/qwen3 --train_type lora --learning_rate 5e-3 --dataset swift/self-cognition-preference#40"
  "kto_lora|rlhf --rlhf_type kto --model $TMP/qwen3 --train_type lora --learning_rate 5e-3 --dataset $HERE/kto.jsonl"
  "rm_full|rlhf --rlhf_type rm --model $TMP/mistral --train_type full --learning_rate 1e-3 --dataset swift/self-cognition-preference#40"
)

mkdir -p "$TMP/curves"
for entry in "${runs[@]}"; do
  name="${entry%%|*}"
  read -r -a cmd <<<"${entry#*|}"
  run "$name" 0 "$SWIFT" "${cmd[@]}" "${common[@]}" "${identity[@]}" --output_dir "$TMP/$name"
  "$PY" - "$TMP/$name/logging.jsonl" "$TMP/curves/$name.json" "${entry#*|}" <<'P' || bad "$name: no curve"
import json, sys
# Timings and memory differ between machines and runs; every other number is the training's.
volatile = {"memory(GiB)", "train_speed(iter/s)", "elapsed_time", "remaining_time", "percentage"}
rows = [json.loads(line) for line in open(sys.argv[1])]
kept = [{k: v for k, v in r.items() if k not in volatile} for r in rows]
command = sys.argv[3].split()
json.dump({"command": command, "rows": kept}, open(sys.argv[2], "w"), indent=1, ensure_ascii=False)
P
done

if [ "$MODE" = write ]; then
  mkdir -p "$CURVES"
  cp "$TMP"/curves/*.json "$CURVES/"
  echo "golden curves written to $CURVES: review them with git diff before committing"
  finish golden_write
  exit
fi

"$PY" - "$TMP/curves" "$CURVES" "${GOLDEN_RTOL:-1e-4}" <<'P' && ok || bad "training numbers differ from tests/golden/curves (see above)"
import json, math, os, sys
got_dir, want_dir, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3])
problems, compared = [], 0
for name in sorted(os.listdir(want_dir)):
    want = json.load(open(os.path.join(want_dir, name)))["rows"]
    path = os.path.join(got_dir, name)
    if not os.path.exists(path):
        problems.append(f"{name}: not run")
        continue
    got = json.load(open(path))["rows"]
    if len(got) != len(want):
        problems.append(f"{name}: {len(got)} logged rows, golden {len(want)}")
        continue
    for g, w in zip(got, want):
        step = w.get("global_step/max_steps", "?")
        if set(g) != set(w):
            problems.append(f"{name} step {step}: metrics {sorted(set(g) ^ set(w))} differ in presence")
        for key, wv in w.items():
            gv = g.get(key)
            if isinstance(wv, (int, float)) and isinstance(gv, (int, float)):
                compared += 1
                if not math.isclose(gv, wv, rel_tol=rtol, abs_tol=1e-7):
                    problems.append(f"{name} step {step}: {key} = {gv!r}, golden {wv!r}")
            elif gv != wv:
                problems.append(f"{name} step {step}: {key} = {gv!r}, golden {wv!r}")
for p in problems[:40]:
    print("golden:", p)
print(f"golden: {compared} numbers compared over {len(os.listdir(want_dir))} runs, {len(problems)} differ")
sys.exit(1 if problems or compared == 0 else 0)
P
finish golden
