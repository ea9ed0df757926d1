#!/usr/bin/env bash
# make lint: the tree's static checks, each one "test" of the lint suite
# (build/test-results/lint.sum, counted by `run-suites.sh --summary`):
#   - cppcheck: every C source but the BPF programs (those the kernel's
#     verifier checks at load), with mk/cppcheck.cfg for the macros of
#     headers it does not read;
#   - shellcheck on every script (*.sh and files with a shell #!), .shellcheckrc;
#   - yamllint: the CRDs, the stand-in upstream CRDs, the chart's own YAML
#     and its templates as `helm template` renders them (default values and
#     each charts/galactic/ci file, for the test control plane's Kubernetes
#     version), .yamllint;
#   - helm lint --strict, with the default values and each ci file.
# A missing tool is a failure (make deps installs them), never a skip.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
res=$top/build/test-results; out=$top/build/lint
mkdir -p "$res" "$out/cppcheck"
[ -f "$res/run-id" ] || date +%s%N > "$res/run-id"
cache=${GALACTIC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/galactic}
helm=${HELM:-$cache/controlplane/current/bin/helm}
apiserver=$cache/controlplane/current/bin/kube-apiserver
chart=charts/galactic
P=0 F=0

files() { # tracked files matching the patterns (all files outside a git checkout)
  if git rev-parse --git-dir >/dev/null 2>&1; then git ls-files -- "$@"; else
    for p in "$@"; do find . -path ./build -prune -o -path "./$p" -type f -print | sed 's|^\./||'; done
  fi
}

run() { # NAME CMD...: one check; its output goes to build/lint/NAME.log
  local name=$1 t0; shift
  echo "=== lint/$name"
  t0=$(date +%s)
  if "$@" > "$out/$name.log" 2>&1; then
    P=$((P+1)); echo "--- lint/$name: clean ($(( $(date +%s) - t0 ))s)"
  else
    F=$((F+1)); sed 's/^/  /' "$out/$name.log" | tail -60
    echo "--- lint/$name: FAILED (build/lint/$name.log)"
  fi
}

need() { command -v "$1" >/dev/null || { echo "$1 is not installed: run make deps"; return 1; }; }

c_check() {
  need cppcheck || return 1
  # shellcheck disable=SC2046 # one file name per line, none with spaces
  nice -n 10 cppcheck -q -j2 --std=c11 --enable=warning,portability --inline-suppr \
    --library=mk/cppcheck.cfg --cppcheck-build-dir="$out/cppcheck" \
    -I. -D_GNU_SOURCE --suppress=missingIncludeSystem \
    --suppress=varFuncNullUB \
    --error-exitcode=1 --template='{file}:{line}: {severity}: {message} [{id}]' \
    $(files '*.c' | grep -v '\.bpf\.c$')
}
# varFuncNullUB: glog_kv()'s NULL sentinel; glibc's NULL is ((void *)0), a pointer.

scripts() { # *.sh, and files whose first line is a shell #! (one awk over all files)
  { files '*.sh'
    files | grep -v '\.sh$' | tr '\n' '\0' |
      xargs -0 awk 'FNR == 1 && /^#!.*(\/|env )(ba|da)?sh( |$)/ { print FILENAME } { nextfile }'
  } | sort -u
}
sh_check() {
  need shellcheck || return 1
  # shellcheck disable=SC2046
  shellcheck -f gcc $(scripts)
}

chart_values() { # "" (the defaults) and each ci values file
  echo ""
  files "$chart/ci/*.yaml"
}

yaml_check() {
  local rc=0 v kv
  need yamllint || return 1
  [ -x "$helm" ] || { echo "helm not found at $helm: run make deps"; return 1; }
  kv=$("$apiserver" --version 2>/dev/null | awk '{print $2}')
  [ -n "$kv" ] || { echo "cannot tell the test control plane's Kubernetes version ($apiserver): run make deps"; return 1; }
  # shellcheck disable=SC2046
  yamllint -s -f parsable $(files 'crds/*.yaml' 'tests/crds/*.yaml' 'tests/crds/**/*.yaml' \
    "$chart/Chart.yaml" "$chart/values.yaml" "$chart/ci/*.yaml") || rc=1
  while read -r v; do
    echo "# rendered: helm template --kube-version $kv ${v:+-f $v}"
    # The ServiceMonitor API present, as test_chart renders monitoring-values.
    "$helm" template galactic "$chart" --kube-version "$kv" \
      --api-versions monitoring.coreos.com/v1/ServiceMonitor ${v:+-f "$v"} > "$out/rendered.yaml" ||
      { rc=1; continue; }
    yamllint -s -f parsable - < "$out/rendered.yaml" | sed "s|^stdin|rendered${v:+($v)}|" || rc=1
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
  done < <(chart_values)
  return $rc
}

helm_check() {
  local rc=0 v
  [ -x "$helm" ] || { echo "helm not found at $helm: run make deps"; return 1; }
  while read -r v; do
    "$helm" lint --strict "$chart" ${v:+-f "$v"} || rc=1
  done < <(chart_values)
  return $rc
}

run cppcheck c_check
run shellcheck sh_check
run yamllint yaml_check
run helm-lint helm_check
echo "$(cat "$res/run-id") $P $F 0" > "$res/lint.sum"
echo "lint: $P passed, $F failed, 0 skipped"
[ "$F" = 0 ]
