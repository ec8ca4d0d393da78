# How shell fixtures and e2e suites report a missing optional reference, the same way as tests/skip.h: outside CI
# a visible skip with the reason, under CI=true a failure (scripts/setup.sh --tests installs every reference
# there). Source it; it defines the two functions below.

# reference_missing DIR REASON: a fixture's reference cannot be made. Writes DIR/SKIPPED (the tests reading DIR
# then skip with REASON); returns 0, or exits 1 under CI=true.
reference_missing() {
  mkdir -p "$1"
  echo "$2" > "$1/SKIPPED"
  echo "reference SKIPPED: $2"
  if [ "${CI:-}" = "true" ]; then echo "FAIL: reference missing under CI=true"; exit 1; fi
  return 0
}

# skip_suite REASON: a whole e2e suite cannot run its checks. Exits 77 (CTest's SKIP_RETURN_CODE: reported as
# skipped), or 1 under CI=true.
skip_suite() {
  if [ "${CI:-}" = "true" ]; then echo "FAIL: $1 (missing under CI=true)"; exit 1; fi
  echo "SKIPPED: $1"
  exit 77
}
