#!/usr/bin/env bash
# The one way tests install CRDs: our own kinds (crds/) plus the faithful
# upstream stand-ins (tests/crds/, see tests/crds/upstream.md) in one variant
# of the interface and claim condition lists, then wait until all are
# Established.
#
#   tests/lib/crds.sh install CPDIR [VARIANT]   CPDIR as given to cp.sh up
#   tests/lib/crds.sh files [VARIANT]           the files install applies
#
# VARIANT: atomic (upstream's shape today, the default) or maplist
# (status.conditions of NetworkInterface and NetworkInterfaceClaim as a map
# list keyed by type, tests/crds/maplist/); when not given, taken from
# GALACTIC_CRD_VARIANT. C suites call it through crds_install()
# (tests/lib/crds.h). Run from the repository root.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)

variant() {
  local v=${1:-${GALACTIC_CRD_VARIANT:-atomic}}
  case "$v" in
  atomic|maplist) echo "$v" ;;
  *) echo "crds.sh: unknown CRD variant '$v' (atomic or maplist)" >&2; return 2 ;;
  esac
}

# Our kinds, then every stand-in, the variant's own file replacing the
# default one of the same name (one apply: no moment with the other shape).
files() {
  local v f
  v=$(variant "${1:-}")
  for f in "$top"/crds/*.yaml; do echo "$f"; done
  for f in "$top"/tests/crds/*.yaml; do
    if [ "$v" != atomic ] && [ -e "$top/tests/crds/$v/$(basename "$f")" ]; then
      echo "$top/tests/crds/$v/$(basename "$f")"
    else
      echo "$f"
    fi
  done
}

case "${1:-}" in
files) files "${2:-}" ;;
install)
  [ -n "${2:-}" ] || { echo "usage: crds.sh install CPDIR [atomic|maplist]" >&2; exit 2; }
  cpdir=$2
  args=()
  list=$(files "${3:-}")
  while read -r f; do args+=(-f "$f"); done <<<"$list"
  "$top"/tests/controlplane/cp.sh kubectl "$cpdir" apply "${args[@]}" >/dev/null
  "$top"/tests/controlplane/cp.sh kubectl "$cpdir" wait --for condition=Established crd --all --timeout 60s >/dev/null
  ;;
*) echo "usage: crds.sh install CPDIR [VARIANT] | files [VARIANT]" >&2; exit 2 ;;
esac
