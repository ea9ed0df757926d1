#!/usr/bin/env bash
# Runs test binaries of one suite and prints 'SUITE: N passed, N failed, N skipped'.
#   run-suites.sh --begin         start a run: forget every earlier result
#   run-suites.sh SUITE BIN...    run the binaries (check tests or scripts)
#   run-suites.sh --summary [SUITE...]
#                                 total of this run's suites; fails if any
#                                 failed or if a named suite did not run
#
# The runner cannot be fooled into a green run:
#   - a skip (GT_SKIP, tests/lib/gtest.h) passes only when tests/expected-skips
#     declares it and galactic-preflight confirms the kernel lacks the fact it
#     names; any other skip is a failure;
#   - a check binary must run every test it registers (gtest.c counts them);
#     an inherited CK_RUN_CASE and friends are refused;
#   - every binary runs under an outer timeout (GT_BINARY_TIMEOUT, default
#     1200 s); a hang is a failure naming the test that did not finish;
#   - an empty binary list, a binary that runs no test, a binary without a
#     summary, a non-zero exit or a missing skip file is a failure;
#   - --summary counts only results written since --begin.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
res=${GT_RESULTS_DIR:-$top/build/test-results}   # the self-test runs it elsewhere
mkdir -p "$res"
expected=$top/tests/expected-skips
preflight=$top/build/rel/bin/galactic-preflight

if [ "${1:-}" = --begin ]; then
  rm -f "$res"/*.sum "$res"/*.log "$res"/*.skips "$res"/*.reg "$res"/*.cklog
  date +%s%N > "$res/run-id"
  exit 0
fi
[ -f "$res/run-id" ] || date +%s%N > "$res/run-id"
run_id=$(cat "$res/run-id")

if [ "${1:-}" = --summary ]; then
  shift
  p=0 f=0 s=0
  for r in "$res"/*.sum; do
    [ -f "$r" ] || continue
    read -r id a b c < "$r"
    [ "$id" = "$run_id" ] || { echo "  $(basename "$r" .sum): from an earlier run, not counted"; continue; }
    p=$((p+a)); f=$((f+b)); s=$((s+c))
    echo "  $(basename "$r" .sum): $a passed, $b failed, $c skipped"
  done
  for want in "$@"; do
    if ! { [ -f "$res/$want.sum" ] && [ "$(cut -d' ' -f1 "$res/$want.sum")" = "$run_id" ]; }; then
      echo "  $want: did not run in this run: counted as one failure"; f=$((f+1))
    fi
  done
  echo "total: $p passed, $f failed, $s skipped"
  [ "$f" = 0 ]; exit
fi

suite=${1:?usage: run-suites.sh SUITE BIN...}; shift
if [ $# = 0 ]; then
  echo "$suite: no test binaries given: counted as one failure"
  echo "$run_id 0 1 0" > "$res/$suite.sum"
  exit 1
fi
for v in CK_RUN_CASE CK_RUN_SUITE CK_INCLUDE_TAGS CK_EXCLUDE_TAGS GT_ALLOW_FILTER; do
  if [ -n "${!v:-}" ]; then
    echo "$suite: $v is set in the environment; the runner runs whole suites (run the binary by hand for a subset)"
    echo "$run_id 0 1 0" > "$res/$suite.sum"
    exit 1
  fi
done

# expected_skip BINARY TEST: 0 when declared and the kernel really lacks the fact.
expected_skip() {
  local bin=$1 test=$2 s b t probe
  while read -r s t probe; do
    [ -z "$s" ] || [ "${s:0:1}" = "#" ] && continue
    [ "$s" = "$suite/$bin" ] && [ "$t" = "$test" ] || continue
    if [ ! -x "$preflight" ]; then
      echo "    (cannot confirm '$probe': $preflight not built)"; return 1
    fi
    "$preflight" --has "$probe" >/dev/null 2>&1
    case $? in
      1) return 0 ;;
      0) echo "    (declared for '$probe', but this kernel has it: the test must run)"; return 1 ;;
      *) echo "    (declared for '$probe', which preflight does not know)"; return 1 ;;
    esac
  done < "$expected"
  return 1
}

P=0 F=0 S=0
timeout_s=${GT_BINARY_TIMEOUT:-1200}
for t in "$@"; do
  name=$(basename "$t")
  log=$res/$suite-$name.log
  skips=$res/$suite-$name.skips; : > "$skips"
  reg=$res/$suite-$name.reg; : > "$reg"
  cklog=$res/$suite-$name.cklog; : > "$cklog"   # check's per-test log, one line as each test ends
  echo "=== $suite/$name"
  start=$(date +%s%3N)
  GT_SKIP_FILE=$skips GT_REGISTERED_FILE=$reg CK_LOG_FILE_NAME=$cklog CK_VERBOSITY=${CK_VERBOSITY:-verbose} \
    CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-600} \
    timeout -k 30 "$timeout_s" "$t" > >(tee "$log") 2>&1
  rc=$?
  wait
  ms=$(( $(date +%s%3N) - start )); secs=$((ms / 1000)).$(printf %03d $((ms % 1000)))
  fail=0 pass=0 ns=0
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    # check's log file gets one line as each test ends (its stdout only at
    # the end of the run); the first registered test without one is the one
    # that hung.
    hung=$(while read -r tn; do
             grep -qE ":${tn}:[0-9]+: " "$cklog" || { echo "$tn"; break; }
           done < "$reg")
    echo "--- $name: timed out after ${timeout_s}s in test ${hung:-<unknown>}"
    fail=1
  fi
  # check prints its summary after "Running suite(s):" on the same line when no test ran.
  line=$(grep -oE '[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -1)
  plain=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -1)
  if [ ! -f "$skips" ]; then
    echo "--- $name: its skip file disappeared: counted as one failure"; fail=$((fail+1))
  else
    ns=$(grep -c . "$skips")
  fi
  if [ -n "$line" ]; then
    read -r n nf ne <<<"$(sed -E 's/.*Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/' <<<"$line")"
    fail=$((fail + nf + ne)); pass=$((n - nf - ne - ns))
    regd=$(sed -nE 's/^gt: ([0-9]+) tests registered$/\1/p' "$log" | tail -1)
    if [ -z "$regd" ]; then
      echo "--- $name: did not say how many tests it registers (not built with tests/lib/gtest.c?)"; fail=$((fail+1))
    elif [ "$n" != "$regd" ]; then
      echo "--- $name: ran $n of $regd registered tests"; fail=$((fail+1))
    elif [ "$n" = 0 ]; then
      echo "--- $name: registers and runs no test: counted as one failure"; fail=$((fail+1))
    fi
  elif [ -n "$plain" ]; then
    read -r pass f2 s2 <<<"$(sed -E 's/^([A-Za-z-]+: )?([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\2 \3 \5/' <<<"$plain")"
    fail=$((fail + f2)); ns=${s2:-0}
    if [ $((pass + f2 + ns)) = 0 ]; then
      echo "--- $name: ran no test: counted as one failure"; fail=$((fail+1))
    fi
  elif [ "$fail" = 0 ]; then
    echo "--- $name printed no summary (exit $rc): counted as one failure"; fail=1
  fi
  [ "$pass" -lt 0 ] && pass=0
  [ "$rc" != 0 ] && [ "$fail" = 0 ] && { fail=1; echo "--- $name exited $rc"; }
  if [ -f "$skips" ] && [ "$ns" != 0 ]; then
    while IFS= read -r l; do
      test=${l%%: *}; test=${test%_fn}   # check's START_TEST(x) defines x_fn
      if expected_skip "$name" "$test"; then
        echo "    SKIP (expected) $l"
      else
        echo "    SKIP (NOT expected: counted as a failure) $l"
        fail=$((fail+1))
      fi
    done < "$skips"
  fi
  echo "--- $suite/$name: $pass passed, $fail failed, $ns skipped (${secs}s)"
  P=$((P+pass)) F=$((F+fail)) S=$((S+ns))
done
echo "$run_id $P $F $S" > "$res/$suite.sum"
echo "$suite: $P passed, $F failed, $S skipped"
[ "$F" = 0 ]
