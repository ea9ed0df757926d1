#!/usr/bin/env bash
# Runs each libFuzzer target for FUZZ_SECONDS (default 60) on its own corpus
# (build/fuzz/corpus/<name>, seeded from tests/fuzz/corpus/<name> when that
# exists) with its dictionary (tests/fuzz/<name>.dict, most a link to the
# Kubernetes JSON tokens of fuzz_watch.dict) and fails on any crash, leak or
# sanitizer report.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${FUZZ_SECONDS:-60}
failed=()
for f in "$@"; do
  f=$(realpath "$f"); name=$(basename "$f")
  corpus=$top/build/fuzz/corpus/$name
  mkdir -p "$corpus"
  seeds=()
  [ -d "$top/tests/fuzz/corpus/$name" ] && seeds=("$top/tests/fuzz/corpus/$name")
  dict=()
  [ -f "$top/tests/fuzz/$name.dict" ] && dict=(-dict="$top/tests/fuzz/$name.dict")
  echo "=== fuzz/$name (${secs}s)"
  (cd "$top/build/fuzz" && "$f" -max_total_time="$secs" -print_final_stats=1 "${dict[@]}" \
      -artifact_prefix="$top/build/fuzz/$name-" "$corpus" "${seeds[@]}") \
    > "$top/build/fuzz/$name.log" 2>&1
  rc=$?
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^Done' "$top/build/fuzz/$name.log" | sed 's/^/  /'
  echo "--- fuzz/$name: exit $rc"
  [ "$rc" = 0 ] || { tail -30 "$top/build/fuzz/$name.log"; failed+=("$name"); }
done
res=$top/build/test-results; mkdir -p "$res"
[ -f "$res/run-id" ] || date +%s%N > "$res/run-id"
if [ $# = 0 ]; then echo "fuzz: no targets given"; echo "$(cat "$res/run-id") 0 1 0" > "$res/fuzz.sum"; exit 1; fi
echo "$(cat "$res/run-id") $(( $# - ${#failed[@]} )) ${#failed[@]} 0" > "$res/fuzz.sum"
((${#failed[@]})) && { echo "fuzz: failed: ${failed[*]}"; exit 1; }
echo "fuzz: $# targets, no crash"
