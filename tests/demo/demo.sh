#!/usr/bin/env bash
# make demo: the system end to end on this machine, then torn down.
#
#   1. a real control plane (etcd + kube-apiserver) with our CRDs installed
#   2. three "nodes" as network namespaces on a bridged fabric
#   3. galactic-agent on each node (DEMO_BACKEND: kernel, the default, or
#      bpf), serving its CNI socket
#   4. pods attached exactly as a container runtime does it: galactic-cni ADD
#      with CNI_* environment and the attachment's network config on stdin;
#      two VPCs whose pods use the SAME addresses
#   5. each agent publishes a NodeAttachment per pod (Programmed=True once the
#      kernel state is verified) and learns the other nodes' routes from their
#      reports through the API server (docs/dataplane-reports.md): nobody
#      writes a remotes.json by hand
#   6. traffic across SRv6 between nodes, and isolation between the VPCs
#   7. galactic-translator, a stand-in NSO and a stand-in VPC operator on the
#      faithful upstream stand-ins (tests/crds/): one NetworkInterface and one
#      VPCAttachment per pod, linked as upstream links them; the attachment's
#      Programmed condition derived from the node's report, the interface's
#      Prepared/Programmed from the attachment, and the runtime's 64-hex
#      container id (upstream's field holds exactly 46) withheld and reported
#
# DEMO_KEEP=1 leaves everything running and prints how to tear it down.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
bin=$top/build/rel/bin
P=gdemo$$
D=$(mktemp -d /tmp/galactic-demo.XXXXXX)
AGENTS=()
RNS=galactic-system
BACKEND=${DEMO_BACKEND:-kernel}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() {
  [ "${DEMO_KEEP:-0}" = 1 ] && { echo "kept: tests/lib/topo.sh down $P; tests/controlplane/cp.sh down $D/cp"; return; }
  for pid in "${AGENTS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf /sys/fs/bpf/galactic-"$P"-n* 2>/dev/null || true
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
# ours (crds/) + the faithful upstream stand-ins (tests/crds/); DEMO_CRD_VARIANT
# (or GALACTIC_CRD_VARIANT) = atomic (upstream today, default) or maplist
tests/lib/crds.sh install "$D/cp" "${DEMO_CRD_VARIANT:-}"
K get crd | sed 's/^/  /'
K create namespace "$RNS" >/dev/null

say "three nodes on a fabric (SID block fcbb:bb00:1::/48, node ids 1-3)"
tests/lib/topo.sh up "$P" 3
for i in 1 2 3; do
  mkdir -p "$D/n$i"
  printf '{"node":{"block":"fcbb:bb00:1::/48","node_id":%d,"uplink":"up0"},"vpcs":[],"attachments":[]}\n' "$i" \
    > "$D/n$i/state.json"
  "$bin/galactic-agent" --state-dir "$D/n$i" --netns "$P-n$i" --interval 1 \
    --backend "$BACKEND" --bpffs "/sys/fs/bpf/galactic-$P-n$i" \
    --cni-socket "$D/n$i/cni.sock" --kubeconfig "$D/cp/kubeconfig" --node "n$i" \
    --report-namespace "$RNS" >>"$D/n$i/agent.log" 2>&1 &
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
  # container ids as containerd and CRI-O give them: 64 hex characters
  ctr=$(printf '%s' "$P-$name" | sha256sum | cut -c1-64)
  out=$(echo "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID="$ctr" CNI_NETNS="/var/run/netns/$P-$name" \
        CNI_IFNAME=eth0 CNI_PATH="$bin" CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=$name" \
        "$bin/galactic-cni")
  echo "  $name on n$node in $vpc: ADD $(( $(date +%s%3N) - t0 )) ms -> $(echo "$out" | jq -c '[.ips[].address]')"
done

say "reports in the API (written by each node's agent) and the routes each agent learned from the others"
for _ in $(seq 150); do
  n=$(K get nodeattachments -n "$RNS" -o json | jq '[.items[] | select(any(.status.conditions[]?; .type=="Programmed" and .status=="True"))] | length')
  [ "$n" = "${#PODS[@]}" ] && break; sleep 0.1
done
K get nodeattachments -n "$RNS" | sed 's/^/  /'
echo "  field managers on the reports: $(K get nodeattachments -n "$RNS" --show-managed-fields -o json | jq -r '[.items[].metadata.managedFields[].manager] | unique | join(",")')"
for i in 1 2 3; do
  for _ in $(seq 100); do [ -s "$D/n$i/record-remotes.json" ] && [ "$(jq '.remotes | length' "$D/n$i/record-remotes.json")" -gt 0 ] && break; sleep 0.1; done
  jq -r '.remotes[] | "  n'"$i"' learned: \(.vpc) \(.prefix) -> \(.sid)"' "$D/n$i/record-remotes.json"
done
sleep 1

say "kernel state on n1 (what the agent programmed, $BACKEND backend)"
ip -n "$P-n1" -6 rule | sed 's/^/  /'
# seg6local decap SIDs and (kernel backend) seg6 encap routes
{ ip -n "$P-n1" -4 route show table all; ip -n "$P-n1" -6 route show table all; } |
  grep -E 'encap' | sed 's/^/  /' || true
if [ "$BACKEND" = bpf ]; then
  echo "  TC programs (encap on host veths, decap on the uplink):"
  for dev in up0 $(ip -n "$P-n1" -o link show | sed -n 's/^[0-9]*: \(gc[0-9a-f]*\)@.*/\1/p'); do
    tc -n "$P-n1" filter show dev "$dev" ingress | sed -n "s/.* bpf .*name \([a-z_]*\).*/    $dev: \1/p"
  done
fi

say "traffic across SRv6"
ping6() { ip netns exec "$P-$1" ping -c "${3:-5}" -i 0.2 -W 1 "$2" | tail -2 | sed 's/^/    /' || true; }
echo "  red-1 (n1) -> red-2 (n2) fd00:a::12:"; ping6 red-1 fd00:a::12
echo "  red-1 (n1) -> red-2 (n2) 10.1.0.12 (IPv4 inside SRv6, End.DX4):"; ping6 red-1 10.1.0.12
echo "  blue-1 (n1) -> blue-2 (n3) fd00:a::12:"; ping6 blue-1 fd00:a::12
before=$(ip netns exec "$P-blue-2" cat /sys/class/net/eth0/statistics/rx_packets)
ping6 red-1 fd00:a::12 20 >/dev/null
after=$(ip netns exec "$P-blue-2" cat /sys/class/net/eth0/statistics/rx_packets)
echo "  isolation: 20 pings red-1 -> fd00:a::12 reached blue-2 (same address, other VPC) $((after - before)) times"

if [ -x "$bin/galactic-translator" ]; then
  say "galactic-translator + stand-in NSO and VPC operator (one NetworkInterface and VPCAttachment per pod)"
  "$bin/galactic-translator" --kubeconfig "$D/cp/kubeconfig" --namespace "$RNS" \
    --metrics-addr 127.0.0.1:0 >>"$D/translator.log" 2>&1 &
  AGENTS+=($!)
  for p in "${PODS[@]}"; do
    read -r name node vpc att a6 a4 <<<"$p"
    # as upstream: NSO's NetworkInterface, then the VPC operator's attachment
    # of the same name, controller-owned by the interface, interfaceRef.name
    uid=$(K apply -o jsonpath='{.metadata.uid}' -f - <<EOF
{"apiVersion":"networking.datumapis.com/v1alpha","kind":"NetworkInterface",
 "metadata":{"name":"$name","namespace":"default"},
 "spec":{"network":{"name":"net-$vpc"},"interfaceName":"eth0","mtu":1400,
  "addresses":[{"family":"IPv6","address":"$a6/128","primary":true},{"family":"IPv4","address":"$a4/32"}]}}
EOF
)
    K apply -f - >/dev/null <<EOF
{"apiVersion":"cloud.datumapis.com/v1alpha1","kind":"VPCAttachment",
 "metadata":{"name":"$name","namespace":"default",
  "ownerReferences":[{"apiVersion":"networking.datumapis.com/v1alpha","kind":"NetworkInterface",
   "name":"$name","uid":"$uid","controller":true,"blockOwnerDeletion":true}]},
 "spec":{"vpc":{"name":"$vpc"},"interfaceRef":{"name":"$name"},
  "interface":{"name":"eth0","mode":"Netns","addresses":["$a6/128","$a4/32"]}}}
EOF
    # the VPC operator's own fields (ids it allocated, Ready), under its own manager
    K patch vpcattachment "$name" -n default --subresource=status --type=merge --field-manager=vpc-operator \
      -p "{\"status\":{\"vpc\":\"$vpc\",\"vpcAttachment\":\"$att\",\"networkAttachmentDefinition\":\"$name\",\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"AttachmentDefinitionReady\",\"message\":\"NetworkAttachmentDefinition $name is ready for use\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}" >/dev/null
  done
  for _ in $(seq 150); do
    n=$(K get vpcattachments -n default -o json | jq '[.items[] | select(any(.status.conditions[]?; .type=="Programmed" and .status=="True"))] | length')
    [ "$n" = "${#PODS[@]}" ] && break; sleep 0.1
  done
  K get vpcattachments -n default -o custom-columns='NAME:.metadata.name,VPC:.status.vpc,ATTACHMENT:.status.vpcAttachment,NODE:.status.node,HOST-IF:.status.hostInterface,PROGRAMMED:.status.conditions[?(@.type=="Programmed")].status,REASON:.status.conditions[?(@.type=="Programmed")].reason' | sed 's/^/  /'
  K get nodeattachments -n "$RNS" | sed 's/^/  /'
  echo "  the interfaces (Prepared follows the attachment's Ready, Programmed the node's report):"
  K get networkinterfaces -n default -o custom-columns='NAME:.metadata.name,VPC:.status.vpc,ATTACHMENT:.status.attachmentRef.name,PREPARED:.status.conditions[?(@.type=="Prepared")].status,PROGRAMMED:.status.conditions[?(@.type=="Programmed")].status' | sed 's/^/  /'
  echo "  values upstream's schema cannot hold, withheld and reported (64-hex container ids vs containerID of exactly 46):"
  K get events -n default --field-selector reason=FieldWithheld -o custom-columns='OBJECT:.involvedObject.name,MESSAGE:.message' | sed 's/^/  /'
fi

if [ "$BACKEND" = bpf ]; then
  say "bpf counters on n1 (per VPC and per drop reason)"
  "$bin/galactic-bpf" stats --state-dir "$D/n1" --netns "$P-n1" --bpffs "/sys/fs/bpf/galactic-$P-n1" 2>&1 |
    sed 's/^/  /' || true
fi

say "done"
echo "  agents logs: $D/n*/agent.log (removed on exit; DEMO_KEEP=1 to keep everything)"
