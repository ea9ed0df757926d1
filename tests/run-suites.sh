#!/usr/bin/env bash
# Runs test binaries of one suite and prints 'SUITE: N passed, N failed, N skipped'.
#   run-suites.sh SUITE BIN...    run the binaries (check tests or scripts)
#   run-suites.sh --summary       print the total of the suites run so far
# A test that needs something this machine lacks calls GT_SKIP (tests/lib/gtest.h):
# it is counted as skipped, never as passed. A binary that dies without a
# check summary counts as one failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
res=$top/build/test-results
mkdir -p "$res"

if [ "${1:-}" = --summary ]; then
  p=0 f=0 s=0
  for r in "$res"/*.sum; do
    [ -f "$r" ] || continue
    read -r a b c < "$r"; p=$((p+a)); f=$((f+b)); s=$((s+c))
    echo "  $(basename "$r" .sum): $a passed, $b failed, $c skipped"
  done
  echo "total: $p passed, $f failed, $s skipped"
  [ "$f" = 0 ]; exit
fi

suite=$1; shift
P=0 F=0 S=0
for t in "$@"; do
  name=$(basename "$t")
  log=$res/$suite-$name.$$.log
  skips=$res/$suite-$name.$$.skips; : > "$skips"
  echo "=== $suite/$name"
  start=$(date +%s%3N)
  GT_SKIP_FILE=$skips CK_VERBOSITY=${CK_VERBOSITY:-verbose} CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-600} \
    "$t" > >(tee "$log") 2>&1
  rc=$?
  wait
  ms=$(( $(date +%s%3N) - start )); secs=$((ms / 1000)).$(printf %03d $((ms % 1000)))
  line=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -1)
  plain=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -1)
  ns=$(grep -c . "$skips")
  if [ -n "$line" ]; then
    read -r n nf ne <<<"$(sed -E 's/.*Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/' <<<"$line")"
    fail=$((nf + ne)); pass=$((n - fail - ns))
  elif [ -n "$plain" ]; then
    read -r pass fail s2 <<<"$(sed -E 's/^([A-Za-z-]+: )?([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\2 \3 \5/' <<<"$plain")"
    ns=${s2:-0}
  else
    pass=0 fail=1
    echo "--- $name printed no summary (exit $rc): counted as one failure"
  fi
  [ "$rc" != 0 ] && [ "$fail" = 0 ] && { fail=1; echo "--- $name exited $rc"; }
  if [ "$ns" != 0 ]; then sed 's/^/    SKIP /' "$skips"; fi
  echo "--- $suite/$name: $pass passed, $fail failed, $ns skipped (${secs}s)"
  P=$((P+pass)) F=$((F+fail)) S=$((S+ns))
done
echo "$P $F $S" > "$res/$suite.sum"
echo "$suite: $P passed, $F failed, $S skipped"
[ "$F" = 0 ]
