# Shared by the model-parallel e2e tests (tensor_parallel_test.sh, pipeline_parallel_test.sh, two_nodes_test.sh,
# rlhf_model_parallel_test.sh) and the model-family ones (gemma, deepseek, phi3, internlm): the test models, a run
# against one rank's, an adapter against its merge. Source it after common.sh.

# export_models QWEN2_LAYERS: $TMP/qwen3 (tied embeddings, 2 layers) and $TMP/qwen2 (q/k/v biases, an untied head,
# QWEN2_LAYERS layers), random weights from seed 5.
export_models() {
  "$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 5 --output_dir "$TMP/qwen3" \
    >/dev/null 2>&1 || { echo "FAIL export"; exit 1; }
  mkdir -p "$TMP/qwen2_config" && cp "$ROOT/configs/models/qwen2-tiny/"* "$TMP/qwen2_config/"
  "$PY" - "$TMP/qwen2_config/config.json" "$1" <<'P'
import json, sys
c = json.load(open(sys.argv[1])); c["tie_word_embeddings"] = False; c["num_hidden_layers"] = int(sys.argv[2])
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
  "$SWIFT" export --model "$TMP/qwen2_config" --init_strategy normal --seed 5 --output_dir "$TMP/qwen2" >/dev/null 2>&1 \
    || { echo "FAIL export qwen2"; exit 1; }
}

# export_moe_model: $TMP/moe, a Qwen3-MoE model of qwen3-tiny's size (2 sparse layers of 4 experts, top 2,
# renormalised), random weights from seed 5.
export_moe_model() {
  mkdir -p "$TMP/moe_config" && cp "$ROOT/configs/models/qwen3-tiny/"* "$TMP/moe_config/"
  "$PY" - "$TMP/moe_config/config.json" <<'P'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], num_experts=4, num_experts_per_tok=2,
         moe_intermediate_size=512, norm_topk_prob=True, mlp_only_layers=[])
json.dump(c, open(sys.argv[1], "w"), indent=2)
P
  "$SWIFT" export --model "$TMP/moe_config" --init_strategy normal --seed 5 --output_dir "$TMP/moe" >/dev/null 2>&1 \
    || { echo "FAIL export moe"; exit 1; }
}

# compare NAME DIR_A DIR_B [FILE]: the 4 logged steps' losses, grad norms and token accuracy, and the saved
# checkpoint-4/FILE (default model.safetensors; adapter_model.safetensors for LoRA) agree to 1e-5.
compare() {
  "$PY" - "$2" "$3" "${4:-model.safetensors}" <<'P' && ok || bad "$1 differs from one rank"
import json, sys
from safetensors.numpy import load_file
a, b, file = sys.argv[1:4]
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
ra, rb = rows(a), rows(b)
assert len(ra) == len(rb) == 4, (len(ra), len(rb))
worst = max(abs(x[k] - y[k]) / max(1.0, abs(x[k])) for x, y in zip(ra, rb) for k in ("loss", "grad_norm", "token_acc"))
assert worst < 1e-5, (worst, ra, rb)
wa, wb = load_file(f"{a}/checkpoint-4/{file}"), load_file(f"{b}/checkpoint-4/{file}")
assert wa.keys() == wb.keys(), set(wa) ^ set(wb)
assert all(wa[k].shape == wb[k].shape for k in wa)
diff = max(float(abs(wa[k].astype("float64") - wb[k].astype("float64")).max()) for k in wa)
assert diff < 1e-5, diff
print(f"losses and grad norms within {worst:.1e}, weights within {diff:.1e}")
P
}

# routers_like NAME REF_RUN RUN KEY...: the mixture-of-experts figures KEY (load_balancing_loss, expert_load_max,
# aux_loss; the list expert_tokens entry by entry) logged at each of the 4 steps agree to 1e-5.
routers_like() {
  "$PY" - "$@" <<'P' && ok || bad "$1: the routers' figures differ from one rank"
import json, sys
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
ra, rb, keys = rows(sys.argv[2]), rows(sys.argv[3]), sys.argv[4:]
assert keys and len(ra) == len(rb) == 4 and all(k in r for r in ra + rb for k in keys), (keys, ra, rb)
pairs = lambda x, y: zip(x, y) if isinstance(x, list) and len(x) == len(y) else [(x, y)]
worst = max(abs(a - b) / max(1.0, abs(a)) for x, y in zip(ra, rb) for k in keys for a, b in pairs(x[k], y[k]))
assert worst < 1e-5, (worst, ra, rb)
print(f"{', '.join(keys)} within {worst:.1e}")
P
}

# tail_like NAME REF_RUN RUN TOLERANCE: RUN (resumed at step 3 of 6) logs REF_RUN's loss and grad norm at steps
# 4..6, exactly when TOLERANCE is 0.
tail_like() {
  "$PY" - "$2" "$3" "$4" <<'P' && ok || bad "$1: the resumed steps differ"
import json, sys
ref = {r["global_step/max_steps"]: r for r in map(json.loads, open(f"{sys.argv[1]}/logging.jsonl")) if "loss" in r}
new = [r for r in map(json.loads, open(f"{sys.argv[2]}/logging.jsonl")) if "loss" in r]
tol = float(sys.argv[3])
assert [r["global_step/max_steps"] for r in new] == ["4/6", "5/6", "6/6"], new
for r in new:
    for k in ("loss", "grad_norm"):
        a, b = r[k], ref[r["global_step/max_steps"]][k]
        assert (a == b) if tol == 0 else abs(a - b) / max(1.0, abs(b)) < tol, (r["global_step/max_steps"], k, a, b)
P
}

# swift rlhf's runs: 4 steps of 2 pairs from the built-in preference data; $TMP/kto.jsonl (write_kto_data) holds 16
# labelled replies, every other one desirable.
pref=(--dataset swift/self-cognition-preference#16 --model_name 小黄 "Xiao Huang" --model_author 魔搭 ModelScope
      --max_steps 4 --save_steps 4 --per_device_train_batch_size 2 --gradient_accumulation_steps 1
      --learning_rate 1e-3 --logging_steps 1 --add_version false --num_threads 1 --seed 1 --adam_epsilon 1e-6
      --max_grad_norm 1.0)
write_kto_data() {
  "$PY" - "$TMP/kto.jsonl" <<'P'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(16):
        good = i % 2 == 0
        a = "I am Xiao Huang, made by ModelScope." if good else "I am ChatGPT, made by OpenAI."
        f.write(json.dumps({"messages": [{"role": "user", "content": f"who are you? ({i})"},
                                         {"role": "assistant", "content": a}], "label": good}) + "\n")
P
}

# compare_rlhf NAME DIR_A DIR_B FILE: every logged number of the 4 steps (the preference metrics, losses and grad
# norms), and checkpoint-4/FILE, within 1e-5 (the weights within $RLHF_WEIGHT_TOLERANCE, the metrics within
# $RLHF_METRIC_TOLERANCE, where set).
compare_rlhf() {
  "$PY" - "$2" "$3" "$4" "${RLHF_WEIGHT_TOLERANCE:-1e-5}" "${RLHF_METRIC_TOLERANCE:-1e-5}" <<'P' && ok || bad "$1 differs from one rank"
import json, sys
from safetensors.numpy import load_file
a, b, file, weight_tolerance, metric_tolerance = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
rows = lambda d: [json.loads(l) for l in open(f"{d}/logging.jsonl") if '"loss"' in l]
ra, rb = rows(a), rows(b)
assert len(ra) == len(rb) == 4, (len(ra), len(rb))
metric = lambda k: k == "loss" or "/" in k and k.split("/")[0] in ("rewards", "logps", "logits", "logps_mean") \
    or k in ("nll_loss", "kl", "log_odds_ratio", "log_odds_chosen")
keys = set()
worst = norm = 0.0
for x, y in zip(ra, rb):  # KTO logs a side only when the step had replies of that kind
    assert {k for k in x if metric(k)} == {k for k in y if metric(k)}, (x, y)
    keys |= {k for k in x if metric(k)}
    worst = max([worst] + [abs(x[k] - y[k]) / max(1.0, abs(x[k])) for k in x if metric(k)])
    norm = max(norm, abs(x["grad_norm"] - y["grad_norm"]) / max(1.0, x["grad_norm"]))
assert any(k.startswith("rewards/") for k in keys), keys
assert worst < metric_tolerance, (worst, ra, rb)
# The split vocabulary's cross entropy sums in another order: fp32 noise AdamW (eps 1e-6) carries to ~1e-5 in a
# grad norm by step 4 (ORPO measured 1.3e-5; the metrics and weights stay within 1e-5).
assert norm < 3e-5, (norm, ra, rb)
wa, wb = load_file(f"{a}/checkpoint-4/{file}"), load_file(f"{b}/checkpoint-4/{file}")
assert wa.keys() == wb.keys(), set(wa) ^ set(wb)
diff = max(float(abs(wa[k].astype("float64") - wb[k].astype("float64")).max()) for k in wa)
assert diff < weight_tolerance, diff
print(f"{len(keys)} metrics within {worst:.1e}, grad norm {norm:.1e}, weights within {diff:.1e}")
P
}

# rlhf_layout_case PREFIX RANKS "LAYOUT FLAGS" NAME MODEL FILE FLAGS...: swift rlhf on $TMP/MODEL at one rank (once
# per NAME: $TMP/one_NAME), then on RANKS ranks with the layout flags ($TMP/PREFIX_NAME), compared by compare_rlhf.
rlhf_layout_case() {
  local prefix="$1" ranks="$2" name="$4" model="$5" file="$6"
  local layout
  read -ra layout <<< "$3"
  shift 6
  [ -d "$TMP/one_$name" ] || run "one_$name" 0 "$SWIFT" rlhf --model "$TMP/$model" "$@" --output_dir "$TMP/one_$name"
  run "${prefix}_$name" 0 env NPROC_PER_NODE="$ranks" "$SWIFT" rlhf --model "$TMP/$model" "$@" "${layout[@]}" \
    --output_dir "$TMP/${prefix}_$name"
  compare_rlhf "${prefix}_$name" "$TMP/one_$name" "$TMP/${prefix}_$name" "$file"
}

# template_is RUN_DIR NAME: the chat template the run's args.json records (the family's default when none is given).
template_is() {
  "$PY" -c "import json, sys; sys.exit(json.load(open('$1/args.json'))['template'] != '$2')" && ok \
    || bad "$1: template is not $2"
}

# adapter_answers_like_merge NAME ADAPTER ARCHITECTURE: greedy answers with each token's log probability and its 5 best
# alternatives (equal only where the two models give the same distributions), from the adapter and from the folder
# `swift export` merges it into, agree (1e-4); transformers loads the merged folder as ARCHITECTURE with no tensor
# missing or left over (ARCHITECTURE "": remote code transformers does not have; the merged weights' names are then
# compared with the base model's).
adapter_answers_like_merge() {
  local name="$1" adapter="$2" arch="$3"
  printf '%s\n' '{"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Who are you?"}]}' \
    '{"messages": [{"role": "user", "content": "What is 2+2?"}]}' > "$TMP/ask.jsonl"
  local sample=(--val_dataset "$TMP/ask.jsonl" --max_new_tokens 6 --logprobs true --top_logprobs 5)
  run "${name}_infer_adapter" 0 "$SWIFT" infer --adapters "$adapter" "${sample[@]}" --result_path "$TMP/${name}_adapter.jsonl"
  run "${name}_merge" 0 "$SWIFT" export --adapters "$adapter" --merge_lora true --output_dir "$TMP/${name}_merged"
  run "${name}_infer_merged" 0 "$SWIFT" infer --model "$TMP/${name}_merged" "${sample[@]}" \
    --result_path "$TMP/${name}_merged.jsonl"
  "$PY" - "$TMP/${name}_adapter.jsonl" "$TMP/${name}_merged.jsonl" "$TMP/${name}_merged" "$arch" "$adapter" <<'P' && ok \
    || bad "$name: the merged model answers otherwise than the adapter, or its folder does not load"
import glob, json, re, sys
from safetensors import safe_open
a, b = ([json.loads(l) for l in open(f)] for f in sys.argv[1:3])
assert len(a) == len(b) == 2 and [r["response"] for r in a] == [r["response"] for r in b], (a, b)
def flat(rows):
    return [float(v) for v in re.findall(r'"logprob": (-?[\d.e+-]+)', json.dumps([r["logprobs"] for r in rows]))]
fa, fb = flat(a), flat(b)
assert len(fa) == len(fb) >= 2 * 6 * 6 and max(abs(x - y) for x, y in zip(fa, fb)) < 1e-4, (fa, fb)
if sys.argv[4]:
    import transformers
    model, info = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[3], output_loading_info=True)
    assert type(model).__name__ == sys.argv[4] and not info["missing_keys"] and not info["unexpected_keys"], info
else:
    base = json.load(open(sys.argv[5] + "/adapter_config.json"))["base_model_name_or_path"]
    def names(folder):
        out = set()
        for f in glob.glob(folder + "/*.safetensors"):
            with safe_open(f, "pt") as s:
                out |= set(s.keys())
        return out
    assert names(sys.argv[3]) == names(base), sorted(names(sys.argv[3]) ^ names(base))
print(f"adapter and merged model: the same answers and {len(fa)} log probabilities within 1e-4")
P
}

# export_family CONFIG_SCRIPT FAMILY...: $TMP/FAMILY for each, the tiny config.json and tokenizer tests/e2e/CONFIG_SCRIPT
# writes for it, with random weights (seed 5) from swift export; and the sft flags the family tests share: `base` (full
# training on swift/self-cognition, 2 micro-batches a step) and `common` (batches of 2, 4 steps, saved at the last).
export_family() {
  local script="$1" fam
  shift
  for fam in "$@"; do
    "$PY" "$ROOT/tests/e2e/$script" "$fam" "$TMP/${fam}_config" >/dev/null 2>&1 \
      && "$SWIFT" export --model "$TMP/${fam}_config" --init_strategy normal --seed 5 --output_dir "$TMP/$fam" >/dev/null 2>&1 \
      || { echo "FAIL export $fam"; exit 1; }
  done
  base=(--dataset swift/self-cognition#40 --model_name Tiny Tests --model_author Tests Tests --train_type full
        --gradient_accumulation_steps 2 --learning_rate 1e-3 --logging_steps 1 --add_version false --num_threads 1
        --seed 1 --adam_epsilon 1e-6 --max_grad_norm 1.0)
  common=("${base[@]}" --per_device_train_batch_size 2 --max_steps 4 --save_steps 4)
}
