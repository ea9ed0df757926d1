#!/usr/bin/env bash
# Installs everything the build, tests and demo need. Idempotent: a warm
# machine does no network work (apt is skipped when every package is present,
# the control plane is reused from its version-keyed cache).
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  build-essential pkg-config clang llvm lld libclang-rt-14-dev
  bpftool libbpf-dev libelf-dev zlib1g-dev
  libnl-3-dev libnftables-dev libjansson-dev libcurl4-openssl-dev libmicrohttpd-dev libyaml-dev
  check libsubunit-dev valgrind gdb
  iproute2 iputils-ping iperf3 netcat-openbsd procps psmisc tcpdump ethtool
  openssl jq ca-certificates
  umoci
  cppcheck shellcheck yamllint clang-format
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "deps: all ${#PKGS[@]} Debian packages present"
fi

command -v go >/dev/null || { echo "deps: Go is required to build the test control plane (kube-apiserver, etcd, kubectl, helm) and the CNI test tools (cnitool)" >&2; exit 1; }
./tests/controlplane/build.sh
./tests/controlplane/build-cni.sh
