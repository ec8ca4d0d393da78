# Shared by the e2e shell tests: a temporary folder, pass/fail counting and the run/has checks.
# Source it after setting SWIFT; it defines ROOT, TMP (removed at exit), PY and the helpers below.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
PY="${SWIFT_TEST_PYTHON:-python3}"
source "$ROOT/tests/reference.sh"
# need_python MODULE...: the suite's checks import these in $PY; without them it is skipped (skip_suite).
need_python() {
  local imports
  imports="$(IFS=,; echo "$*")"
  "$PY" -c "import $imports" 2>/dev/null || skip_suite "no Python with $* at $PY (run scripts/setup.sh --tests)"
}
pass=0 fail=0
ok() { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL $*"; }
run() {  # run NAME EXPECTED_RC CMD...   (stdout in $TMP/out, stderr in $TMP/err)
  local name="$1" want="$2"; shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "$name: rc=$rc want=$want"; tail -n 20 "$TMP/out" "$TMP/err"; fi
}
has() { if grep -qF -- "$2" "$TMP/$3"; then ok; else bad "$1: $3 lacks '$2'"; tail -n 5 "$TMP/$3"; fi; }
finish() {  # finish NAME: the summary line, and the exit status
  echo "e2e $1: $pass passed, $fail failed"
  [ "$fail" = 0 ]
}
