#!/usr/bin/env bash
# End-to-end: swift deploy on a tiny random Qwen3 model, driven over real HTTP by deploy_client.py (every route,
# streaming and not, auth, errors, token-id prompts, 32 concurrent greedy requests equal to each alone, a full
# queue, graceful shutdown on SIGTERM). Usage: deploy_test.sh path/to/swift
set -uo pipefail
SWIFT="$1"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${SWIFT_TEST_PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
source "$ROOT/tests/reference.sh"
"$PY" -c 'import json' 2>/dev/null || skip_suite "no Python at $PY (run scripts/setup.sh --tests)"
TMP="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 7 --output_dir "$TMP/m" \
  2>/dev/null || { echo "FAIL export"; exit 1; }

# Two random PEFT LoRA adapters (q_proj, v_proj) for the tiny model, written with the standard library only.
"$PY" - "$TMP" <<'P' || { echo "FAIL making adapters"; exit 1; }
import json, os, random, struct, sys
for name, seed in (("lora1", 1), ("lora2", 2)):
    d = os.path.join(sys.argv[1], name)
    os.makedirs(d)
    json.dump({"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]},
              open(os.path.join(d, "adapter_config.json"), "w"))
    rng = random.Random(seed)
    tensors, header, blob = {}, {}, b""
    for layer in range(2):
        for proj, out in (("q_proj", 128), ("v_proj", 64)):
            key = f"base_model.model.model.layers.{layer}.self_attn.{proj}"
            tensors[key + ".lora_A.weight"] = (4, 64)
            tensors[key + ".lora_B.weight"] = (out, 4)
    for key, shape in tensors.items():
        data = struct.pack(f"<{shape[0] * shape[1]}f", *(rng.gauss(0, 0.5) for _ in range(shape[0] * shape[1])))
        header[key] = {"dtype": "F32", "shape": list(shape), "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    open(os.path.join(d, "adapter_model.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + blob)
P

source "$ROOT/tests/e2e/start_server.sh"

start_server "$TMP/main.log" "$TMP/m" --api_key secret --served_model_name tiny --max_new_tokens 24 --max_batch_size 32 \
  --adapters "a1=$TMP/lora1" "a2=$TMP/lora2"
MAIN_PID=$PID MAIN_PORT=$PORT
start_server "$TMP/lora1.log" "$TMP/m" --adapters "$TMP/lora1" --max_new_tokens 24
LORA_PORT=$PORT
start_server "$TMP/small.log" "$TMP/m" --max_batch_size 1 --max_waiting 1 --max_new_tokens 8
SMALL_PID=$PID SMALL_PORT=$PORT

"$PY" "$ROOT/tests/e2e/deploy_client.py" --port "$MAIN_PORT" --pid "$MAIN_PID" --log "$TMP/main.log" \
  --small_port "$SMALL_PORT" --lora_port "$LORA_PORT"
rc=$?
# After the client's SIGTERM the main server must have exited by itself with status 0, having batched requests.
for _ in $(seq 1 100); do kill -0 "$MAIN_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$MAIN_PID" 2>/dev/null; then echo "FAIL server still running after SIGTERM"; rc=1; else
  wait "$MAIN_PID"; src=$?
  [ "$src" = 0 ] || { echo "FAIL server exit status $src after SIGTERM"; rc=1; }
fi
largest="$(sed -n 's/.*largest batch \([0-9]*\).*/\1/p' "$TMP/main.log")"
# More than one row at once shows batching; how many overlap depends on the client threads, so no more is asserted.
[ -n "$largest" ] && [ "$largest" -gt 1 ] || { echo "FAIL no continuous batching seen (largest batch '$largest')"; tail -5 "$TMP/main.log"; rc=1; }
grep -q "cancelled" "$TMP/main.log" || { echo "FAIL a disconnected stream was not cancelled"; rc=1; }
[ "$rc" = 0 ] && echo "e2e deploy: ok" || { echo "--- server log"; tail -20 "$TMP/main.log"; }
exit "$rc"
