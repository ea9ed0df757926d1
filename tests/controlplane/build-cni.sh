#!/usr/bin/env bash
# Builds the CNI test tools from the wrapper Go module in cni/: cnitool (the
# reference CNI client, libcni), cnigc (libcni's GC with GC args, which
# cnitool cannot pass), cnirt (libcni's Add/Check/DelNetworkList with the
# runtime's own container id, as containerd calls it), a reference plugin (tuning) that tests chain
# after galactic-cni, and the reference ptp + host-local plugins that
# bench_cni compares the CNI burst with. Test tools only, never shipped.
# Cached outside the repo, keyed by the module's content (this script,
# tools.go, versions + go.sum, cnigc, Go version):
#   ${GALACTIC_CACHE:-$HOME/.cache/galactic}/cni/<key>/bin
# A warm cache makes this a no-op. Prints the bin directory on the last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${GALACTIC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/galactic}
key=$( (go env GOVERSION; cat "$0" "$here"/cni/tools.go "$here"/cni/go.{mod,sum} "$here"/cni/cnigc/*.go "$here"/cni/cnirt/*.go) | sha256sum | cut -c1-16)
dir=$cache/cni/$key
bin=$dir/bin
want=(cnitool cnigc cnirt tuning ptp host-local)

have_all() { for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done; }
if have_all; then echo "cni tools: cached in $dir"; echo "$bin"; exit 0; fi

mkdir -p "$bin"
exec 9>"$dir/.lock"; flock 9       # parallel callers build once
if have_all; then echo "$bin"; exit 0; fi

export GOFLAGS=-mod=mod
t0=$(date +%s)
echo "cni tools: building ${want[*]}"
(cd "$here/cni" && CGO_ENABLED=0 go build -ldflags="-s -w" -o "$bin/" \
  github.com/containernetworking/cni/cnitool ./cnigc ./cnirt \
  github.com/containernetworking/plugins/plugins/meta/tuning \
  github.com/containernetworking/plugins/plugins/main/ptp \
  github.com/containernetworking/plugins/plugins/ipam/host-local)
have_all || { echo "cni tools: build incomplete in $bin" >&2; ls -la "$bin" >&2; exit 1; }
echo "cni tools: built in $(( $(date +%s) - t0 ))s"
ln -sfn "$dir" "$cache/cni/current"
echo "$bin"
