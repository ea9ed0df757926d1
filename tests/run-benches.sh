#!/usr/bin/env bash
# Runs benchmark binaries one after another (they measure, so never in
# parallel) and fails if any of them fails. Each prints its ratios against a
# reference run made in the same invocation; this script only adds timing
# and keeps a copy of every output in build/bench-results/.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/bench-results
mkdir -p "$out"
failed=()
for b in "$@"; do
  name=$(basename "$b")
  echo "=== bench/$name"
  start=$(date +%s)
  "$b" 2>&1 | tee "$out/$name.txt"
  rc=${PIPESTATUS[0]}
  echo "--- bench/$name: exit $rc ($(( $(date +%s) - start ))s)"
  [ "$rc" = 0 ] || failed+=("$name")
done
if ((${#failed[@]})); then
  echo "bench: failed: ${failed[*]}"
  exit 1
fi
echo "bench: $# benchmarks ran; outputs in build/bench-results/"
