#!/usr/bin/env bash
# make demo: the system end to end on this machine, then torn down.
#
#   1. a real control plane (etcd + kube-apiserver) with our CRDs installed
#   2. three "nodes" as network namespaces on a bridged fabric
#   3. galactic-agent on each node (kernel backend), serving its CNI socket
#   4. pods attached exactly as a container runtime does it: galactic-cni ADD
#      with CNI_* environment and the attachment's network config on stdin;
#      two VPCs whose pods use the SAME addresses
#   5. traffic across SRv6 between nodes, and isolation between the VPCs
#
# Route distribution between agents through the API server (design brief
# §3.5) is not built yet: step 5 hands each agent the other nodes'
# attachments through its remotes.json, computed here from the agents' own
# attachment records. The translator and NodeAttachment publishing are not
# built yet either, so no workload reaches Ready through the API in this demo.
#
# DEMO_KEEP=1 leaves everything running and prints how to tear it down.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
bin=$top/build/rel/bin
P=gdemo$$
D=$(mktemp -d /tmp/galactic-demo.XXXXXX)
AGENTS=()

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() {
  [ "${DEMO_KEEP:-0}" = 1 ] && { echo "kept: tests/lib/topo.sh down $P; tests/controlplane/cp.sh down $D/cp"; return; }
  for pid in "${AGENTS[@]}"; do kill "$pid" 2>/dev/null || true; done
  tests/lib/topo.sh down "$P" || true
  tests/controlplane/cp.sh down "$D/cp" >/dev/null 2>&1 || true
  rm -rf "$D"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] || { echo "demo: needs root (network namespaces)" >&2; exit 1; }

say "kernel preflight"
"$bin/galactic-preflight" | sed 's/^/  /'

say "control plane: etcd + kube-apiserver, CRDs"
tests/controlplane/cp.sh up "$D/cp" --owner $$ >/dev/null
K() { tests/controlplane/cp.sh kubectl "$D/cp" "$@"; }
K apply -f crds/ -f tests/crds/ | sed 's/^/  /'
K wait --for condition=Established crd --all --timeout 60s >/dev/null
K get crd | sed 's/^/  /'

say "three nodes on a fabric (SID block fcbb:bb00:1::/48, node ids 1-3)"
tests/lib/topo.sh up "$P" 3
for i in 1 2 3; do
  mkdir -p "$D/n$i"
  printf '{"node":{"block":"fcbb:bb00:1::/48","node_id":%d,"uplink":"up0"},"vpcs":[],"attachments":[]}\n' "$i" \
    > "$D/n$i/state.json"
  "$bin/galactic-agent" --state-dir "$D/n$i" --netns "$P-n$i" --interval 1 \
    --cni-socket "$D/n$i/cni.sock" >>"$D/n$i/agent.log" 2>&1 &
  AGENTS+=($!)
done
for i in 1 2 3; do
  for _ in $(seq 100); do [ -S "$D/n$i/cni.sock" ] && break; sleep 0.1; done
  [ -S "$D/n$i/cni.sock" ] || { echo "agent on n$i did not start:"; cat "$D/n$i/agent.log"; exit 1; }
  echo "  n$i: galactic-agent pid ${AGENTS[$((i-1))]}, socket $D/n$i/cni.sock"
done

# pod name, node, VPC id (base62), attachment id, IPv6, IPv4
PODS=(
  "red-1 1 Red7 R1 fd00:a::11 10.1.0.11"
  "red-2 2 Red7 R2 fd00:a::12 10.1.0.12"
  "blue-1 1 Blu9 B1 fd00:a::11 10.1.0.11"
  "blue-2 3 Blu9 B2 fd00:a::12 10.1.0.12"
)
say "pods attached through galactic-cni (VPC Red7 and VPC Blu9 reuse the same addresses)"
for p in "${PODS[@]}"; do
  read -r name node vpc att a6 a4 <<<"$p"
  ip netns add "$P-$name"
  ip -n "$P-$name" link set lo up
  conf=$(printf '{"cniVersion":"1.1.0","name":"vpc-%s","type":"galactic-cni","vpc":"%s","vpcattachment":"%s","ipFamilies":["IPv6","IPv4"],"addresses":[{"address":"%s/128","gateway":"fe80::1"},{"address":"%s/32","gateway":"169.254.1.1"}],"mtu":1400,"agentSocket":"%s"}' \
    "$vpc" "$vpc" "$att" "$a6" "$a4" "$D/n$node/cni.sock")
  t0=$(date +%s%3N)
  out=$(echo "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID="ctr-$name" CNI_NETNS="/var/run/netns/$P-$name" \
        CNI_IFNAME=eth0 CNI_PATH="$bin" CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=$name" \
        "$bin/galactic-cni")
  echo "  $name on n$node in $vpc: ADD $(( $(date +%s%3N) - t0 )) ms -> $(echo "$out" | jq -c '[.ips[].address]')"
done

say "routes to other nodes (stand-in for API-based distribution: from the agents' records)"
# SID = block (48) | node id (16) | function (4) | argument (12): decap into
# the VPC's table is function 0xE with the VPC's argument on that node,
# End.DX4 toward one attachment is 0xD with the attachment's argument.
for i in 1 2 3; do
  {
    echo '{"remotes":['; sep=
    for j in 1 2 3; do
      [ "$i" = "$j" ] && continue
      hosted=$(jq -r '[.attachments[].config.vpc] | unique | .[]' "$D/n$i/cni-attachments.json")
      while read -r vpc a6 a4 arg hif; do
        grep -qx "$vpc" <<<"$hosted" || continue   # only VPCs this node hosts
        # the VPC's decap SID on node j, read back from what its agent programmed
        table=$(ip -n "$P-n$j" -6 rule | sed -n "s/.* iif $hif lookup \([0-9]*\).*/\1/p")
        sid=$(ip -n "$P-n$j" -6 route show proto 154 | awk -v t="$table" '/End.DT6/ && $0 ~ "table "t" " {print $1}')
        printf '%s{"vpc":"%s","prefix":"%s","sid":"%s"}\n' "$sep" "$vpc" "$a6" "$sid"; sep=,
        printf ',{"vpc":"%s","prefix":"%s","sid":"fcbb:bb00:1:%x:d%03x::"}\n' "$vpc" "$a4" "$j" "$arg"
      done < <(jq -r '.attachments[] | "\(.config.vpc) \(.config.addresses[0].address) \(.config.addresses[1].address) \(.arg) \(.hostIfname)"' \
                 "$D/n$j/cni-attachments.json")
    done
    echo ']}'
  } > "$D/n$i/remotes.json.tmp"
  mv "$D/n$i/remotes.json.tmp" "$D/n$i/remotes.json"
  jq -r '.remotes[] | "  n'"$i"': \(.vpc) \(.prefix) -> \(.sid)"' "$D/n$i/remotes.json"
done
sleep 2

say "kernel state on n1 (what the agent programmed)"
ip -n "$P-n1" -6 rule | sed 's/^/  /'
ip -n "$P-n1" -4 route show table all | grep -E 'encap' | sed 's/^/  /'
ip -n "$P-n1" -6 route show table all | grep -E 'encap' | sed 's/^/  /'

say "traffic across SRv6"
ping6() { ip netns exec "$P-$1" ping -c "${3:-5}" -i 0.2 -W 1 "$2" | tail -2 | sed 's/^/    /' || true; }
echo "  red-1 (n1) -> red-2 (n2) fd00:a::12:"; ping6 red-1 fd00:a::12
echo "  red-1 (n1) -> red-2 (n2) 10.1.0.12 (IPv4 inside SRv6, End.DX4):"; ping6 red-1 10.1.0.12
echo "  blue-1 (n1) -> blue-2 (n3) fd00:a::12:"; ping6 blue-1 fd00:a::12
before=$(ip netns exec "$P-blue-2" cat /sys/class/net/eth0/statistics/rx_packets)
ping6 red-1 fd00:a::12 20 >/dev/null
after=$(ip netns exec "$P-blue-2" cat /sys/class/net/eth0/statistics/rx_packets)
echo "  isolation: 20 pings red-1 -> fd00:a::12 reached blue-2 (same address, other VPC) $((after - before)) times"

say "done"
echo "  agents logs: $D/n*/agent.log (removed on exit; DEMO_KEEP=1 to keep everything)"
