#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager,
# kubectl, etcd, etcdctl, helm)
# from the wrapper Go modules beside this script, into a cache outside the
# repo keyed by the modules' content (versions + go.sum + Go version):
#   ${GALACTIC_CACHE:-$HOME/.cache/galactic}/controlplane/<key>/bin
# A warm cache makes this a no-op. Prints the bin directory on the last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${GALACTIC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/galactic}
key=$( (go env GOVERSION; cat "$0" "$here"/{kube,etcd,helm}/go.{mod,sum}) | sha256sum | cut -c1-16)
dir=$cache/controlplane/$key
bin=$dir/bin
want=(kube-apiserver kube-controller-manager kubectl etcd etcdctl helm)

have_all() { for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done; }
if have_all; then echo "controlplane: cached in $dir"; echo "$bin"; exit 0; fi

mkdir -p "$bin"
exec 9>"$dir/.lock"; flock 9       # parallel callers build once
if have_all; then echo "$bin"; exit 0; fi

export GOFLAGS=-mod=mod
build() { # module, extra ldflags, packages...
  local mod=$1 ld=$2; shift 2
  echo "controlplane: building $* ($mod)"
  (cd "$here/$mod" && go build -ldflags="-s -w $ld" -o "$bin/" "$@")
}
# Stamp the real version into the kube binaries (what `/version` and
# `kubectl version` report), as the upstream build does.
kv=$(sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$here/kube/go.mod")
kmaj=${kv#v}; kmaj=${kmaj%%.*}; kmin=${kv#v*.}; kmin=${kmin%%.*}
kld=
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kld+=" -X $pkg.gitVersion=$kv -X $pkg.gitMajor=$kmaj -X $pkg.gitMinor=$kmin -X $pkg.gitTreeState=clean"
done
t0=$(date +%s)
[ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ] && [ -x "$bin/kubectl" ] || \
  build kube "$kld" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl
[ -x "$bin/etcd" ] && [ -x "$bin/etcdctl" ] || {
  build etcd "" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdctl/v3
  # go names a /v3 module's binary after the element before it: "server"
  mv "$bin/server" "$bin/etcd"
}
[ -x "$bin/helm" ] || build helm "" helm.sh/helm/v3/cmd/helm
have_all || { echo "controlplane: build incomplete in $bin" >&2; ls -la "$bin" >&2; exit 1; }
echo "controlplane: built in $(( $(date +%s) - t0 ))s"
ln -sfn "$dir" "$cache/controlplane/current"
echo "$bin"
