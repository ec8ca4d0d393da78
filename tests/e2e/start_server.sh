# start_server LOG MODEL FLAGS...: starts `$SWIFT deploy` of MODEL on a free loopback port and waits until
# /health answers; sets PORT and PID and appends PID to PIDS (the caller kills them at exit). Sourced by the
# deploy and HTTP e2e suites.
start_server() {
  local log="$1" model="$2"; shift 2
  "$SWIFT" deploy --model "$model" --host 127.0.0.1 --port 0 "$@" >"$log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  PORT=""
  for _ in $(seq 1 300); do
    PORT="$(sed -n 's/.*serving .* on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -1)"
    [ -n "$PORT" ] && curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL server did not start"; cat "$log"; exit 1
}
