#!/usr/bin/env bash
# The runner's must-show (issue 12): tests/run-suites.sh fails a suite that
# hides nothing but proves nothing. Each case runs the runner, in a results
# directory of its own (GT_RESULTS_DIR), on one purpose-built check binary
# (tests/selftest/runner_checks.h) and asserts the runner's exit code and
# the line it prints:
#   ok      a passing test                 -> exit 0, "1 passed, 0 failed"
#   skip    a skip no kernel fact explains -> exit 1, "SKIP (NOT expected"
#   none    two registered, none run       -> exit 1, "ran 0 of 2 registered tests"
#   empty   no test registered             -> exit 1, "registers and runs no test"
#   hang    a test that never returns, forked and with CK_FORK=no
#           (GT_BINARY_TIMEOUT=3)          -> exit 1, "timed out after 3s in test t_hang"
#   list    no binary at all               -> exit 1, "no test binaries given"
# Usage: tests/runner-selftest.sh [DIR of the runner_* binaries, default build/san/tests]
# Prints 'runner: N passed, N failed' and writes build/test-results/runner.sum.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bins=${1:-$top/build/san/tests}
res=$top/build/test-results; mkdir -p "$res"
[ -f "$res/run-id" ] || date +%s%N > "$res/run-id"
work=$(mktemp -d /tmp/runner-selftest.XXXXXX)
trap 'rm -rf "$work"' EXIT
P=0 F=0

# expect NAME WANT_RC WANT_TEXT [ENV=VALUE...] -- BINARY...
expect() {
  local name=$1 want_rc=$2 want=$3 rc t0 d; shift 3
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  d=$work/$name; mkdir -p "$d"
  t0=$(date +%s%3N)
  env GT_RESULTS_DIR="$d" "${envs[@]}" "$top/tests/run-suites.sh" selftest "$@" > "$d/out" 2>&1
  rc=$?
  if [ "$rc" = "$want_rc" ] && grep -qF -- "$want" "$d/out"; then
    P=$((P+1))
    echo "--- runner/$name: exit $rc, says: $(grep -F -- "$want" "$d/out" | head -1 | sed 's/^ *//') ($(( $(date +%s%3N) - t0 )) ms)"
  else
    F=$((F+1))
    echo "--- runner/$name: FAILED: wanted exit $want_rc and '$want', got exit $rc:"
    sed 's/^/    /' "$d/out" | tail -20
  fi
}

for c in ok skip none empty hang; do
  [ -x "$bins/runner_$c" ] || { echo "runner-selftest: $bins/runner_$c is not built (make build/san/tests/runner_$c)"; F=$((F+1)); }
done
if [ "$F" = 0 ]; then
  expect ok 0 "selftest/runner_ok: 1 passed, 0 failed, 0 skipped" -- "$bins/runner_ok"
  expect skip 1 "SKIP (NOT expected: counted as a failure) t_skip" -- "$bins/runner_skip"
  expect none 1 "runner_none: ran 0 of 2 registered tests" -- "$bins/runner_none"
  expect empty 1 "runner_empty: registers and runs no test" -- "$bins/runner_empty"
  expect hang 1 "runner_hang: timed out after 3s in test t_hang" GT_BINARY_TIMEOUT=3 -- "$bins/runner_hang"
  expect hang-nofork 1 "runner_hang: timed out after 3s in test t_hang" GT_BINARY_TIMEOUT=3 CK_FORK=no \
    -- "$bins/runner_hang"
  expect list 1 "selftest: no test binaries given" --
  # One bad binary among good ones still fails the run.
  expect mixed 1 "selftest: 1 passed, 1 failed" -- "$bins/runner_ok" "$bins/runner_empty"
fi
echo "$(cat "$res/run-id") $P $F 0" > "$res/runner.sum"
echo "runner: $P passed, $F failed"
[ "$F" = 0 ]
