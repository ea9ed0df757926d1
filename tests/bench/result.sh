# shellcheck shell=bash
# Shell side of the bench result files (the C side is tests/bench/bench.c;
# the format is described in tests/bench/bench.h). Sourced by
# tests/run-benches.sh; needs jq.

# bench_result_error FILE NAME REASON: a result file for a bench that could
# not write its own (it crashed, was killed, or could not start).
bench_result_error() {
  jq -n --arg b "$2" --arg e "$3" \
    '{bench: $b, status: "error", error: $e, results: [], facts: [], checks: []}' >"$1"
}

# bench_result_verdict FILE EXIT: "ok", "missed" or "error: why" of one bench,
# from its file and its exit status (they must agree: 0 only with "ok").
bench_result_verdict() {
  local f=$1 rc=$2 st
  if ! st=$(jq -er '.status' "$f" 2>/dev/null); then
    echo "error: exit $rc, result file unreadable"; return
  fi
  case "$st/$rc" in
    ok/0) echo ok ;;
    missed/1) echo missed ;;
    error/*) echo "error: $(jq -r '.error // "no reason given"' "$f")" ;;
    *) echo "error: exit $rc but the result file says $st" ;;
  esac
}

# bench_result_table FILE...: one line per target of every bench, and one per
# bench that could not run.
bench_result_table() {
  jq -r '
    def f3: . * 1000 | round / 1000 | tostring;
    .bench as $b |
    if .status == "error" then
      "\($b)\tCOULD NOT RUN: \(.error)"
    else
      .results[] | "\($b)\t\(.name)\t" +
        (if .measured and .target.max_value != null then
           "\(.ours.median | f3) \(.unit) (median of \(.ours.samples | length)), target <= \(.target.max_value | f3) \(.unit): " +
           (if .met then "met" else "MISSED by \(.missed_by.value | f3) \(.unit) (\(.missed_by.percent | round)% over)" end)
         elif .measured then
           "ratio \(.ratio.median | f3) (median of \(.ratio.samples | length)), target <= \(.target.max_ratio | f3): " +
           (if .met then "met" else "MISSED by \(.missed_by.ratio | f3) (\(.missed_by.percent | round)% over)" end)
         else
           "NOT MEASURED (\(.why)), target <= \(.target.max_ratio | f3): counts as missed"
         end)
    end' "$@"
}
