#!/usr/bin/env bash
# Runs benchmark binaries one after another (they measure, so never in
# parallel). Each compares itself with a reference measured in the same
# invocation and writes build/bench-results/<bench>.json (tests/bench/bench.h
# has the format); its output is also kept in <bench>.txt.
#
# Fails (exit 1) when any target is missed or not measured, or any bench
# could not run: not root, a tool missing, a crash, no result file. The last
# lines list every target with its measured ratio and by how much it was
# missed, then every bench that could not run and why.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/bench-results
. "$top/tests/bench/result.sh"
command -v jq >/dev/null || { echo "bench: jq is needed (make deps)"; exit 1; }
mkdir -p "$out"
export BENCH_RESULTS=$out GT_TOP=$top
bad=()
files=()
for b in "$@"; do
  name=$(basename "$b")
  json=$out/$name.json
  rm -f "$json"
  echo "=== bench/$name"
  start=$(date +%s)
  "$b" 2>&1 | tee "$out/$name.txt"
  rc=${PIPESTATUS[0]}
  [ -s "$json" ] || bench_result_error "$json" "$name" "exit $rc without a result file (crashed or could not start)"
  verdict=$(bench_result_verdict "$json" "$rc")
  echo "--- bench/$name: exit $rc, $verdict ($(( $(date +%s) - start ))s)"
  [ "$verdict" = ok ] || bad+=("$name")
  files+=("$json")
done
((${#files[@]})) || { echo "bench: no benchmarks given"; exit 1; }
jq -s '{benches: .}' "${files[@]}" >"$out/summary.json"
echo "=== bench: targets (results in build/bench-results/)"
if command -v column >/dev/null; then
  bench_result_table "${files[@]}" | column -t -s $'\t'
else
  bench_result_table "${files[@]}" | tr '\t' ' '
fi
if ((${#bad[@]})); then
  echo "bench: FAILED: ${bad[*]}"
  exit 1
fi
echo "bench: $# benchmarks ran, every target met"
