#!/usr/bin/env bash
# End-to-end: the real swift binary. Usage: cli_test.sh path/to/swift
set -uo pipefail
SWIFT="$1"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
check() {  # check NAME EXPECTED_RC CMD...  (stdout+stderr in $TMP/out)
  local name="$1" want="$2"; shift 2
  "$@" >"$TMP/out" 2>&1; local rc=$?
  if [ "$rc" = "$want" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name: rc=$rc want=$want"; cat "$TMP/out"; fi
}
contains() {  # contains NAME TEXT  (in $TMP/out)
  if grep -qF -- "$2" "$TMP/out"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $1: output lacks '$2'"; cat "$TMP/out"; fi
}

check version 0 "$SWIFT" --version;                 contains version "swift 0."
check help 0 "$SWIFT" --help;                       contains help "export"
check no_args 2 "$SWIFT"
check unknown_cmd 2 "$SWIFT" exprot;                contains unknown_cmd "did you mean 'swift export'"
check export_help 0 "$SWIFT" export --help;         contains export_help "--max_shard_size <str>  (default: 5GB)"
check unknown_flag 2 "$SWIFT" export --modle x;     contains unknown_flag "did you mean --model"
check no_model 2 "$SWIFT" export;                   contains no_model "error: swift export needs --model"
check bad_dtype 2 "$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --torch_dtype int3 --init_strategy normal --output_dir "$TMP/x"
contains bad_dtype "hint:"
check missing_dir 3 "$SWIFT" export --model "$TMP/nope" --output_dir "$TMP/y"; contains missing_dir "no config.json"
check no_weights 3 "$SWIFT" export --model "$ROOT/configs/models/llama-tiny" --output_dir "$TMP/z"
contains no_weights "--init_strategy"
test ! -e "$TMP/z" && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL no_weights left $TMP/z"; }

# Initialise each tiny preset, export it sharded in bf16, and export that again (load real weights).
for m in llama-tiny qwen2-tiny qwen3-tiny mistral-tiny; do
  check "init_$m" 0 "$SWIFT" export --model "$ROOT/configs/models/$m" --init_strategy normal --seed 3 --output_dir "$TMP/$m"
  check "reshard_$m" 0 "$SWIFT" export --model "$TMP/$m" --torch_dtype bfloat16 --max_shard_size 5MB --output_dir "$TMP/$m-bf16"
  test -f "$TMP/$m-bf16/model.safetensors.index.json" && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL $m: no index"; }
  grep -q '"torch_dtype": "bfloat16"' "$TMP/$m-bf16/config.json" && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL $m: dtype"; }
done
check exists 2 "$SWIFT" export --model "$TMP/qwen3-tiny" --output_dir "$TMP/qwen3-tiny-bf16"; contains exists "--exist_ok"

# A YAML config as the first argument, overridden by a later flag.
printf 'model: %s\ninit_strategy: zero\noutput_dir: %s\n' "$ROOT/configs/models/qwen2-tiny" "$TMP/from-yaml" > "$TMP/run.yaml"
check yaml 0 "$SWIFT" export "$TMP/run.yaml" --output_dir "$TMP/from-yaml-2"
test -d "$TMP/from-yaml-2" && test ! -e "$TMP/from-yaml" && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL yaml override"; }

# A corrupt weights file is a data error naming the file, and the output folder is not created.
mkdir -p "$TMP/corrupt" && cp "$ROOT/configs/models/qwen3-tiny/config.json" "$TMP/corrupt/"
head -c 1000 "$TMP/qwen3-tiny/model.safetensors" > "$TMP/corrupt/model.safetensors"
check corrupt 3 "$SWIFT" export --model "$TMP/corrupt" --output_dir "$TMP/corrupt-out"; contains corrupt "model.safetensors"
test ! -e "$TMP/corrupt-out" && pass=$((pass+1)) || { fail=$((fail+1)); echo "FAIL corrupt left output"; }

# docs/cli.md is generated from the flag tables and must be current.
bash "$ROOT/scripts/gen_cli_docs.sh" "$SWIFT" > "$TMP/cli.md"
if diff -q "$TMP/cli.md" "$ROOT/docs/cli.md" >/dev/null; then pass=$((pass+1)); else
  fail=$((fail+1)); echo "FAIL docs/cli.md is out of date: run scripts/gen_cli_docs.sh > docs/cli.md"; diff "$TMP/cli.md" "$ROOT/docs/cli.md" | head; fi

echo "e2e cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
