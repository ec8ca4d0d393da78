#!/usr/bin/env bash
# End-to-end: model and dataset ids (org/name) against a local fake Hugging Face / ModelScope (fake_hub.py, real HTTP on
# 127.0.0.1), no network needed. Usage: hub_test.sh path/to/swift
#  - Hugging Face: `swift sft --model org/tiny --dataset org/data#3` downloads into the HF cache layout
#    (blobs + snapshots symlinks + refs), which huggingface_hub then finds offline; the token stays off the CDN;
#  - a cut connection leaves blobs/<sha>.incomplete, and the next run resumes it with a Range request;
#  - bytes that do not match the advertised sha256: exit 3, nothing in snapshots/;
#  - a private repository needs HF_TOKEN / --hub_token (sent as Bearer; kept out of args.json);
#  - --revision (and --model_revision) pick another commit; offline with an empty cache names the id and the paths;
#  - ModelScope (the default hub, MODELSCOPE_DOMAIN) into its cache layout, which modelscope then finds; --use_hf true
#    and "hf::" choose Hugging Face; Parquet datasets read, Arrow ones refused clearly;
#  - the server stopped: infer from the caches alone, `org/data#3` giving 3 rows.
set -uo pipefail
SWIFT="$1"
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_python json hashlib huggingface_hub
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
# Nothing of the caller's hub setup may leak in (a real token to the fake server, a proxy, offline switches).
unset HF_TOKEN HUGGING_FACE_HUB_TOKEN MODELSCOPE_API_TOKEN HF_HUB_OFFLINE TRANSFORMERS_OFFLINE MODELSCOPE_OFFLINE USE_HF \
  HF_ENDPOINT MODELSCOPE_ENDPOINT MODELSCOPE_DOMAIN HF_HOME HF_HUB_CACHE HUGGINGFACE_HUB_CACHE MODELSCOPE_CACHE \
  http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export HF_HUB_DISABLE_TELEMETRY=1 SWIFT_HUB_CONNECT_TIMEOUT=5 HF_HUB_DOWNLOAD_TIMEOUT=10

# The repositories: a tiny model at two commits (v2 adds a marked generation_config.json), a private copy, a dataset
# with train and test files, a Parquet dataset with train and test splits, an Arrow-only one.
"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --output_dir "$TMP/tiny" >/dev/null 2>&1 \
  || { bad "cannot export the tiny model"; finish hub; exit 1; }
HUB="$TMP/hub"
C1="$(printf one | sha1sum | cut -c1-40)"
C2="$(printf two | sha1sum | cut -c1-40)"
repo() {  # repo KIND ORG/NAME COMMIT SOURCE_DIR REFS...
  local dir="$HUB/$1/$2"; mkdir -p "$dir/$3" "$dir/refs"; cp -r "$4/." "$dir/$3/"
  local ref; for ref in "${@:5}"; do printf '%s' "$3" > "$dir/refs/$ref"; done
}
repo models org/tiny "$C1" "$TMP/tiny" main master
mkdir -p "$TMP/tiny2"; cp -r "$TMP/tiny/." "$TMP/tiny2/"
echo '{"max_new_tokens": 7, "swift_test_marker": "v2"}' > "$TMP/tiny2/generation_config.json"
repo models org/tiny "$C2" "$TMP/tiny2" v2
repo models org/private "$C1" "$TMP/tiny" main master
printf hf_test_token > "$HUB/models/org/private/TOKEN"
mkdir -p "$TMP/data/data"
for i in 1 2 3 4 5; do
  printf '{"messages": [{"role": "user", "content": "question %s"}, {"role": "assistant", "content": "answer %s"}]}\n' "$i" "$i"
done > "$TMP/data/data/train-00000-of-00001.jsonl"
printf '{"messages": [{"role": "user", "content": "held out"}, {"role": "assistant", "content": "x"}]}\n' > "$TMP/data/data/test-00000-of-00001.jsonl"
printf '# a dataset card\n' > "$TMP/data/README.md"
repo datasets org/data "$C1" "$TMP/data" main master
mkdir -p "$TMP/pq/data" "$TMP/arrow/data/train"
cp "$ROOT/tests/assets/parquet/chat_default.parquet" "$TMP/pq/data/train-00000-of-00001.parquet"
cp "$ROOT/tests/assets/parquet/query_response.parquet" "$TMP/pq/data/test-00000-of-00001.parquet"
repo datasets org/pq "$C1" "$TMP/pq" main master
head -c 4096 /dev/urandom > "$TMP/arrow/data/train/data-00000-of-00001.arrow"
repo datasets org/arrow "$C1" "$TMP/arrow" main master

"$PY" "$ROOT/tests/e2e/fake_hub.py" "$HUB" "$TMP/port" >"$TMP/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$TMP/port" ] && break; sleep 0.1; done
[ -s "$TMP/port" ] || { bad "fake hub did not start"; cat "$TMP/server.log"; finish hub; exit 1; }
EP="http://127.0.0.1:$(cat "$TMP/port")"
LOG="$HUB/_log.jsonl"
log_lines() { [ -f "$LOG" ] && wc -l < "$LOG" || echo 0; }
# hub CACHE_NAME CMD...: a command against the fake hub with its own caches ($TMP/CACHE_NAME-hf, -ms).
hub() { local c="$1"; shift; env HF_HOME="$TMP/$c-hf" MODELSCOPE_CACHE="$TMP/$c-ms" HF_ENDPOINT="$EP" MODELSCOPE_DOMAIN="$EP" "$@"; }
sft_args=(--train_type lora --max_steps 1 --per_device_train_batch_size 1 --gradient_accumulation_steps 1 --save_steps 1
          --logging_steps 1 --max_length 64)
MODEL_HF="$TMP/main-hf/hub/models--org--tiny"
DATA_HF="$TMP/main-hf/hub/datasets--org--data"

# 1. Hugging Face: a model id and a dataset id, downloaded and trained on.
run hf_sft 0 hub main env USE_HF=1 "$SWIFT" sft --model org/tiny --dataset org/data#3 "${sft_args[@]}" --output_dir "$TMP/run_hf"
ls "$TMP"/run_hf/v0-*/checkpoint-1/adapter_config.json >/dev/null 2>&1 && ok || bad "hf_sft wrote no checkpoint"
[ "$(cat "$MODEL_HF/refs/main")" = "$C1" ] && ok || bad "refs/main is not the commit"
[ "$(readlink "$MODEL_HF/snapshots/$C1/config.json")" = "../../blobs/$(git hash-object "$TMP/tiny/config.json")" ] && ok \
  || bad "config.json is not a relative link to its git blob: $(readlink "$MODEL_HF/snapshots/$C1/config.json")"
SHA="$(sha256sum "$TMP/tiny/model.safetensors" | cut -c1-64)"
[ -f "$MODEL_HF/blobs/$SHA" ] && ok || bad "no LFS blob named by its sha256"
[ "$(readlink "$MODEL_HF/snapshots/$C1/model.safetensors")" = "../../blobs/$SHA" ] && ok || bad "model.safetensors link"
ls "$MODEL_HF"/blobs/*.incomplete >/dev/null 2>&1 && bad "a partial blob is left" || ok
[ -L "$DATA_HF/snapshots/$C1/data/train-00000-of-00001.jsonl" ] && ok || bad "dataset train file not in the HF cache"
[ -e "$DATA_HF/snapshots/$C1/data/test-00000-of-00001.jsonl" ] && bad "the test split was downloaded too" || ok
[ -e "$DATA_HF/snapshots/$C1/README.md" ] && ok || bad "the dataset card was not kept"
grep -q '"path": "/api/models/org/tiny/revision/main?blobs=true"' "$LOG" && ok || bad "no HF info API request"
# huggingface_hub finds the files without the network.
HF_HOME="$TMP/main-hf" HF_HUB_OFFLINE=1 "$PY" - "$MODEL_HF" "$C1" <<'P' && ok || bad "huggingface_hub does not find swift's download"
import os, sys
from huggingface_hub import snapshot_download, try_to_load_from_cache
snap = snapshot_download("org/tiny", local_files_only=True)
assert os.path.realpath(snap) == os.path.realpath(os.path.join(sys.argv[1], "snapshots", sys.argv[2])), snap
cached = try_to_load_from_cache("org/tiny", "model.safetensors")
assert isinstance(cached, str) and os.path.getsize(cached) > 0, cached
assert try_to_load_from_cache("org/data", "data/train-00000-of-00001.jsonl", repo_type="dataset")
P
# The second run: the cache, no request at all (HF_HUB_OFFLINE=1, and the log stays as it was).
before="$(log_lines)"
run hf_cached 0 hub main env USE_HF=1 HF_HUB_OFFLINE=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_cached"
[ "$(log_lines)" = "$before" ] && ok || bad "the cached run still asked the hub"
has hf_cached_log "Hugging Face cache" err
run hf_cached_online 0 hub main env USE_HF=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_cached2"
[ "$(log_lines)" = "$before" ] && ok || bad "a complete cached snapshot was fetched again"

# 2. A connection cut halfway through the weights: exit 3 with the partial blob kept; the next run resumes it.
echo model.safetensors > "$HUB/_cut"
run cut 3 hub cut env USE_HF=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_cut"
has cut_message "model.safetensors" err
PARTIAL="$TMP/cut-hf/hub/models--org--tiny/blobs/$SHA.incomplete"
[ -s "$PARTIAL" ] && [ "$(stat -c %s "$PARTIAL")" -lt "$(stat -c %s "$TMP/tiny/model.safetensors")" ] && ok \
  || bad "no partial blob after the cut"
[ -z "$(ls -A "$TMP/cut-hf/hub/models--org--tiny/snapshots" 2>/dev/null)" ] && ok || bad "a cut download left a snapshot"
rm -f "$HUB/_cut"
resume_at="$(stat -c %s "$PARTIAL")"
before="$(log_lines)"
run resumed 0 hub cut env USE_HF=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_resumed"
tail -n +"$((before + 1))" "$LOG" | grep -q "\"range\": \"bytes=$resume_at-\"" && ok || bad "the rerun did not ask for bytes=$resume_at-"
cmp -s "$TMP/cut-hf/hub/models--org--tiny/blobs/$SHA" "$TMP/tiny/model.safetensors" && ok || bad "the resumed blob differs"
# A server that ignores the Range request (200, the whole file) on the resume: the file starts over, and is right.
echo model.safetensors > "$HUB/_cut"
run cut_norange 3 hub cut2 env USE_HF=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_cut2"
rm -f "$HUB/_cut"; touch "$HUB/_norange"
run resumed_norange 0 hub cut2 env USE_HF=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_resumed2"
cmp -s "$TMP/cut2-hf/hub/models--org--tiny/blobs/$SHA" "$TMP/tiny/model.safetensors" && ok || bad "a restarted blob differs"
rm -f "$HUB/_norange"

# 3. Bytes that do not match the sha256 the hub advertises: exit 3, nothing in snapshots/, nothing partial kept.
echo model.safetensors > "$HUB/_corrupt"
run corrupt 3 hub bad env USE_HF=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_bad"
has corrupt_message "checksum mismatch" err
[ -z "$(ls -A "$TMP/bad-hf/hub/models--org--tiny/snapshots" 2>/dev/null)" ] && ok || bad "a corrupt download left a snapshot"
ls "$TMP"/bad-hf/hub/models--org--tiny/blobs/"$SHA"* >/dev/null 2>&1 && bad "the corrupt blob was kept" || ok
rm -f "$HUB/_corrupt"

# 4. A private repository: refused without a token (exit 2, saying how), fine with HF_TOKEN or --hub_token (Bearer),
#    never sent on to the CDN, and not written into args.json.
run private_no_token 2 hub priv env USE_HF=1 "$SWIFT" export --model org/private --output_dir "$TMP/export_priv0"
has private_hint "HF_TOKEN" err
run private_env 0 hub priv env USE_HF=1 HF_TOKEN=hf_test_token "$SWIFT" export --model org/private --output_dir "$TMP/export_priv1"
grep -q '"path": "/api/models/org/private/revision/main?blobs=true", "range": "", "auth": "Bearer hf_test_token"' "$LOG" && ok \
  || bad "the token was not sent as Bearer"
grep '"/_cdn/' "$LOG" | grep -q hf_test_token && bad "the token reached the CDN" || ok
run private_flag 0 hub priv2 env USE_HF=1 "$SWIFT" sft --model org/private --hub_token hf_test_token --dataset org/data#2 \
  "${sft_args[@]}" --output_dir "$TMP/run_priv"
grep -q hf_test_token "$TMP"/run_priv/v0-*/args.json && bad "args.json keeps the token" || ok

# 5. --revision picks another commit (refs/v2); --model_revision is the same flag.
run revision 0 hub main env USE_HF=1 "$SWIFT" export --model org/tiny --revision v2 --output_dir "$TMP/export_v2"
has revision_marker swift_test_marker export_v2/generation_config.json
[ "$(cat "$MODEL_HF/refs/v2")" = "$C2" ] && ok || bad "refs/v2 is not the second commit"
run model_revision 0 hub main env USE_HF=1 HF_HUB_OFFLINE=1 "$SWIFT" export --model org/tiny --model_revision v2 --output_dir "$TMP/export_v2b"
has model_revision_marker swift_test_marker export_v2b/generation_config.json
run bad_revision 2 hub main env USE_HF=1 "$SWIFT" export --model org/tiny --revision nope --output_dir "$TMP/export_nope"
has bad_revision_message "--revision nope" err

# 6. Offline with empty caches: exit 3 naming the id, the switch and the places looked at.
run offline_empty 3 hub empty env HF_HUB_OFFLINE=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_off"
has offline_id "org/tiny" err
has offline_switch "HF_HUB_OFFLINE" err
has offline_hf_path "$TMP/empty-hf/hub/models--org--tiny/refs/main" err
has offline_ms_path "$TMP/empty-ms/models/org--tiny/snapshots/master" err
run unknown_repo 2 hub empty env USE_HF=1 "$SWIFT" export --model org/nope --output_dir "$TMP/export_unknown"
has unknown_repo_message "org/nope is not a local path" err

# 7. ModelScope, the default hub (MODELSCOPE_DOMAIN): its API and cache layout, model and dataset.
run ms_sft 0 hub ms "$SWIFT" sft --model org/tiny --dataset org/data#3 "${sft_args[@]}" --output_dir "$TMP/run_ms"
[ -f "$TMP/ms-ms/models/org--tiny/snapshots/master/model.safetensors" ] && ok || bad "no ModelScope snapshot"
cmp -s "$TMP/ms-ms/models/org--tiny/snapshots/master/model.safetensors" "$TMP/tiny/model.safetensors" && ok || bad "ModelScope copy differs"
[ -f "$TMP/ms-ms/datasets/org--data/snapshots/master/data/train-00000-of-00001.jsonl" ] && ok || bad "no ModelScope dataset"
[ -e "$TMP/ms-hf/hub/models--org--tiny" ] && bad "ModelScope download went to the HF cache" || ok
grep -q '"path": "/api/v1/models/org/tiny/repo/files?Revision=master&Recursive=True"' "$LOG" && ok || bad "no ModelScope listing"
grep -q '"path": "/api/v1/datasets/org/data/repo/tree?Revision=master&Recursive=True&PageNumber=1&PageSize=200"' "$LOG" && ok \
  || bad "no ModelScope dataset listing"
run ms_token 0 hub ms2 env MODELSCOPE_API_TOKEN=hf_test_token "$SWIFT" export --model org/private --output_dir "$TMP/export_ms_priv"
grep '/api/v1/models/org/private/' "$LOG" | grep -q '"cookie": "m_session_id=hf_test_token"' && ok || bad "no ModelScope session cookie"
# modelscope (the Python SDK) finds it offline, when it is installed.
if "$PY" -c "import modelscope" 2>/dev/null; then
  MODELSCOPE_CACHE="$TMP/ms-ms" "$PY" - "$TMP/ms-ms/models/org--tiny/snapshots/master" <<'P' 2>"$TMP/ms_py.err" && ok || { bad "modelscope does not find swift's download"; tail -3 "$TMP/ms_py.err"; }
import os, sys
from modelscope import snapshot_download
path = snapshot_download("org/tiny", local_files_only=True)
assert os.path.realpath(path) == os.path.realpath(sys.argv[1]), path
P
fi

# --use_hf true (rather than USE_HF=1) and a dataset's own "hf::" prefix choose Hugging Face too.
run use_hf_flag 0 hub flag "$SWIFT" export --model org/tiny --use_hf true --output_dir "$TMP/export_flag"
[ -d "$TMP/flag-hf/hub/models--org--tiny/snapshots/$C1" ] && [ ! -e "$TMP/flag-ms/models" ] && ok || bad "--use_hf true did not pick Hugging Face"
run hf_prefix 0 hub pfx "$SWIFT" infer --model "$TMP/tiny" --val_dataset hf::org/data#2 --result_path "$TMP/answers_pfx.jsonl" \
  --max_new_tokens 2
[ -d "$TMP/pfx-hf/hub/datasets--org--data/snapshots/$C1" ] && [ "$(wc -l < "$TMP/answers_pfx.jsonl")" = 2 ] && ok \
  || bad "hf::org/data#2 did not come from Hugging Face"

# 8. Parquet (the Hub's usual layout, served from its CDN as LFS files): the train split is downloaded and trained on,
#    the test split is not; Arrow files are refused before anything is downloaded.
run parquet 0 hub main env USE_HF=1 "$SWIFT" sft --model org/tiny --dataset org/pq#4 "${sft_args[@]}" --output_dir "$TMP/run_pq"
ls "$TMP"/run_pq/v0-*/checkpoint-1/adapter_config.json >/dev/null 2>&1 && ok || bad "no checkpoint from the Parquet dataset"
grep -q 'train-00000-of-00001.parquet' "$LOG" && ok || bad "the Parquet train file was not downloaded"
grep -q 'test-00000-of-00001.parquet' "$LOG" && bad "the Parquet test split was downloaded" || ok
run arrow 3 hub main env USE_HF=1 "$SWIFT" sft --model org/tiny --dataset org/arrow "${sft_args[@]}" --output_dir "$TMP/run_arrow"
has arrow_message "not Arrow" err
grep -q 'data-00000-of-00001.arrow' "$LOG" && bad "the Arrow file was downloaded" || ok

# 9. The hub gone: everything from the caches (a dataset id's #3 gives 3 rows).
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
run offline_infer 0 hub main env USE_HF=1 "$SWIFT" infer --model org/tiny --val_dataset org/data#3 \
  --result_path "$TMP/answers.jsonl" --max_new_tokens 4
[ "$(wc -l < "$TMP/answers.jsonl")" = 3 ] && ok || bad "org/data#3 did not give 3 rows"
run offline_ms_infer 0 hub ms "$SWIFT" infer --model org/tiny --val_dataset org/data#2 --result_path "$TMP/answers_ms.jsonl" \
  --max_new_tokens 4
[ "$(wc -l < "$TMP/answers_ms.jsonl")" = 2 ] && ok || bad "ModelScope cache: org/data#2 did not give 2 rows"
run server_gone 3 hub fresh env USE_HF=1 "$SWIFT" export --model org/tiny --output_dir "$TMP/export_gone"
has server_gone_message "$EP" err

finish hub
