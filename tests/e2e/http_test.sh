#!/usr/bin/env bash
# End-to-end: the HTTP server of swift deploy, over raw sockets (http_conformance.py): pipelining, conflicting and
# invalid Content-Length, chunked bodies, Expect: 100-continue, HTTP/1.0, slow and idle clients, methods and
# paths, the Authorization value, header/body/connection/all-bodies limits, memory returned after large requests
# and flat over a load run (the RSS figures are printed). Usage: http_test.sh path/to/swift
set -uo pipefail
SWIFT="$1"
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
need_python json
command -v curl >/dev/null || skip_suite "no curl"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
source "$ROOT/tests/e2e/start_server.sh"

"$SWIFT" export --model "$ROOT/configs/models/qwen3-tiny" --init_strategy normal --seed 7 --output_dir "$TMP/m" \
  2>/dev/null || { echo "FAIL export"; exit 1; }
# --max_batch_size 1 --max_waiting 1: at most 1 + 1 + 8 = 10 connections at once (deploy.cpp).
start_server "$TMP/server.log" "$TMP/m" --api_key secret --served_model_name tiny --max_new_tokens 4 \
  --max_batch_size 1 --max_waiting 1 --request_timeout 2
"$PY" "$ROOT/tests/e2e/http_conformance.py" --port "$PORT" --pid "$PID" --connections 10
rc=$?
kill -0 "$PID" 2>/dev/null || { echo "FAIL the server died"; tail -20 "$TMP/server.log"; rc=1; }
[ "$rc" = 0 ] || tail -20 "$TMP/server.log"
echo "e2e http: $([ "$rc" = 0 ] && echo passed || echo "failed ($rc)")"
exit "$rc"
