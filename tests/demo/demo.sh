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
#   7. galactic-translator, with stand-ins for the incumbents writing the way
#      upstream writes today (tests/crds/ holds the faithful upstream CRDs),
#      all started before the pods, as on a cell:
#        compute      creates one NetworkInterfaceClaim per pod
#        NSO          creates the NetworkInterface named as the claim
#                     (spec.claimRef) and binds both by whole-status PUT with
#                     resourceVersion (Status().Update), retrying on 409;
#                     a poll loop re-derives the claim's Ready
#                     (Bound, Allocated, Prepared, Programmed) from what the
#                     translator writes
#        VPC operator creates the VPCAttachment (same name, controller-owned by
#                     the interface, interfaceRef.name) and writes its status
#                     fields (vpc, vpcAttachment, networkAttachmentDefinition,
#                     Ready) by whole-status PUT
#      the translator derives the attachment's Programmed from the node's
#      report, the interface's and claim's Prepared/Programmed from the
#      attachment, and withholds and reports the runtime's 64-hex container
#      id (upstream's field holds exactly 46)
#   8. the demo checks itself: a table per claim, interface and attachment,
#      the translator's refused-write metric, and a non-zero exit when any
#      of them is not as it should be
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
NSO_PID=
cleanup() {
  touch "$D/nso.stop" 2>/dev/null || true
  [ -n "$NSO_PID" ] && wait "$NSO_PID" 2>/dev/null || true
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
# ---- the translator and the stand-in incumbents (before the pods, as on a cell) ----
# tests/lib/incumbents.sh: raw API calls, method and status code explicit, as
# the incumbents make them (shared with tests/netns/test_upstream_e2e.c).
. tests/lib/incumbents.sh
inc_init "$D/cp" "$D" default
JQ_COND=$INC_JQ_COND
now_ms() { inc_now_ms; }
compute_claim() { inc_claim "$1" "net-$2"; }                       # name vpc
nso_interface() { inc_interface "$1" "net-$2" "$3/128" "$4/32"; }    # name vpc a6 a4
vpc_operator() { inc_vpc_operator "$1" "$2" "$3" "$4" "$5/128" "$6/32"; } # name vpc att uid a6 a4
nso_loop() { inc_nso_loop; }

say "galactic-translator and the stand-in incumbents (compute, NSO, VPC operator), before the pods"
"$bin/galactic-translator" --kubeconfig "$D/cp/kubeconfig" --namespace "$RNS" \
  --metrics-addr 127.0.0.1:0 >>"$D/translator.log" 2>&1 &
AGENTS+=($!)
for p in "${PODS[@]}"; do
  read -r name node vpc att a6 a4 <<<"$p"
  compute_claim "$name" "$vpc"
  uid=$(nso_interface "$name" "$vpc" "$a6" "$a4")
  vpc_operator "$name" "$vpc" "$att" "$uid" "$a6" "$a4"
  echo "  $name: NetworkInterfaceClaim (compute), NetworkInterface uid $uid (NSO), VPCAttachment $vpc/$att (VPC operator)"
done
nso_loop &
NSO_PID=$!
echo "  NSO stand-in: poll loop pid $NSO_PID (every 0.3 s; whole-status PUTs, retried on 409)"

say "pods attached through galactic-cni (VPC Red7 and VPC Blu9 reuse the same addresses)"
for p in "${PODS[@]}"; do
  read -r name node vpc att a6 a4 <<<"$p"
  ip netns add "$P-$name"
  ip -n "$P-$name" link set lo up
  conf=$(printf '{"cniVersion":"1.1.0","name":"vpc-%s","type":"galactic-cni","vpc":"%s","vpcattachment":"%s","ipFamilies":["IPv6","IPv4"],"addresses":[{"address":"%s/128","gateway":"fe80::1"},{"address":"%s/32","gateway":"169.254.1.1"}],"mtu":1400,"agentSocket":"%s"}' \
    "$vpc" "$vpc" "$att" "$a6" "$a4" "$D/n$node/cni.sock")
  t0=$(now_ms); echo "$t0" >"$D/add.$name"
  # container ids as containerd and CRI-O give them: 64 hex characters
  ctr=$(printf '%s' "$P-$name" | sha256sum | cut -c1-64)
  result=$(echo "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID="$ctr" CNI_NETNS="/var/run/netns/$P-$name" \
        CNI_IFNAME=eth0 CNI_PATH="$bin" CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=$name" \
        "$bin/galactic-cni")
  echo "  $name on n$node in $vpc: ADD $(( $(date +%s%3N) - t0 )) ms -> $(echo "$result" | jq -c '[.ips[].address]')"
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

say "the upstream objects, as the translator and the incumbents left them"
# wait (at most 60 s) for every claim's Ready=True, then show and check all of it
for _ in $(seq 300); do
  n=$(K get networkinterfaceclaims -n default -o json | jq "$JQ_COND"'[.items[] | select(cond("Ready") == "True")] | length')
  [ "$n" = "${#PODS[@]}" ] && break; sleep 0.2
done
touch "$D/nso.stop"; wait "$NSO_PID" 2>/dev/null || true; NSO_PID=
K get networkinterfaceclaims -n default --show-managed-fields -o json >"$D/nic.json"
K get networkinterfaces -n default -o json >"$D/ni.json"
K get vpcattachments -n default -o json >"$D/va.json"
K get events -n default --field-selector reason=FieldWithheld -o json >"$D/ev.json"
port=$(sed -n 's/.*serving metrics.* port=\([0-9]*\).*/\1/p' "$D/translator.log" | head -1)
refused=$(curl -fsS "http://127.0.0.1:$port/metrics" | awk '/^galactic_translator_writes_refused_total/ {s += $NF; n++} END {print (n ? s : "absent")}')
FAIL=()
bad() { FAIL+=("$*"); }

echo "  claims (Ready derived by the NSO stand-in; ms from galactic-cni ADD to the NSO poll first seeing the"
echo "  translator's Programmed=True, and to the NSO PUT that made Ready=True):"
printf '    %-8s %-10s %-11s %-7s %-10s %-16s %s\n' CLAIM PREPARED PROGRAMMED READY INTERFACE ADD-TO-PROGRAMMED ADD-TO-READY
for p in "${PODS[@]}"; do
  read -r name _ <<<"$p"
  read -r prep prog ready ifname < <(jq -r --arg n "$name" "$JQ_COND"'.items[] | select(.metadata.name == $n)
    | [cond("Prepared"), cond("Programmed"), cond("Ready"), (.status.networkInterfaceRef.name // "-")] | map(if . == "" then "-" else . end) | join(" ")' "$D/nic.json")
  ms=-; [ -e "$D/ready.$name" ] && ms=$(( $(cat "$D/ready.$name") - $(cat "$D/add.$name") ))
  pms=-; [ -e "$D/programmed.$name" ] && pms=$(( $(cat "$D/programmed.$name") - $(cat "$D/add.$name") ))
  printf '    %-8s %-10s %-11s %-7s %-10s %-16s %s\n' "$name" "${prep:--}" "${prog:--}" "${ready:--}" "${ifname:--}" "$pms" "$ms"
  [ "$prep" = True ] && [ "$prog" = True ] && [ "$ready" = True ] || bad "claim $name: Prepared=$prep Programmed=$prog Ready=$ready"
done

echo "  interfaces (status.vpc must be the VPC operator's base62 id on the attachment):"
printf '    %-8s %-10s %-15s %s\n' INTERFACE STATUS.VPC ATTACHMENT-VPC ""
for p in "${PODS[@]}"; do
  read -r name _ <<<"$p"
  nv=$(jq -r --arg n "$name" '.items[] | select(.metadata.name == $n) | .status.vpc // "-"' "$D/ni.json")
  av=$(jq -r --arg n "$name" '.items[] | select(.metadata.name == $n) | .status.vpc // "-"' "$D/va.json")
  ok=ok; [ "$nv" = "$av" ] && [ "$nv" != - ] || { ok=MISMATCH; bad "interface $name: status.vpc=$nv, attachment's id $av"; }
  printf '    %-8s %-10s %-15s %s\n' "$name" "$nv" "$av" "$ok"
done

echo "  attachments (the runtime's container id is 64 hex; upstream's containerID holds exactly 46):"
printf '    %-8s %-5s %-8s %-17s %-11s %s\n' ATTACH NODE PODNAME HOST-IF PROGRAMMED CONTAINERID
for p in "${PODS[@]}"; do
  read -r name _ <<<"$p"
  read -r node pod hif prog cid < <(jq -r --arg n "$name" "$JQ_COND"'.items[] | select(.metadata.name == $n)
    | [.status.node, .status.podName, .status.hostInterface, cond("Programmed"), (.status.containerID // "absent")]
    | map(if . == null or . == "" then "-" else . end) | join(" ")' "$D/va.json")
  ev=$(jq -r --arg n "$name" '[.items[] | select(.involvedObject.kind == "VPCAttachment" and .involvedObject.name == $n
    and (.message | test("containerID")))] | length' "$D/ev.json")
  w="withheld, $ev FieldWithheld event(s)"; [ "$cid" = absent ] || w="WRITTEN: $cid"
  printf '    %-8s %-5s %-8s %-17s %-11s %s\n' "$name" "$node" "$pod" "$hif" "$prog" "$w"
  [ "$node" != - ] && [ "$pod" != - ] && [ "$hif" != - ] && [ "$prog" = True ] ||
    bad "attachment $name: node=$node podName=$pod hostInterface=$hif Programmed=$prog"
  [ "$cid" = absent ] && [ "$ev" -ge 1 ] || bad "attachment $name: containerID $cid, $ev FieldWithheld event(s)"
done
jq -r '[.items[] | select(.involvedObject.kind == "VPCAttachment")][0].message // empty | "    event message: \(.)"' "$D/ev.json"

echo "  translator writes refused (422/5xx), galactic_translator_writes_refused_total summed: $refused"
[ "$refused" = 0 ] || bad "translator: writes refused = $refused"
# shellcheck disable=SC2002 # cat of a file that may be missing: 0, not an error
echo "  NSO stand-in PUTs answered 409 (read again, retried): $(cat "$D/conflicts.network-services-operator" 2>/dev/null | wc -l);" \
     "VPC operator: $(cat "$D/conflicts.vpc-operator" 2>/dev/null | wc -l)"
echo "  field managers on the claims: $(jq -r '[.items[].metadata.managedFields[] | "\(.manager)(\(.operation))"] | unique | join(", ")' "$D/nic.json")"

if [ "$BACKEND" = bpf ]; then
  say "bpf counters on n1 (per VPC and per drop reason)"
  "$bin/galactic-bpf" stats --state-dir "$D/n1" --netns "$P-n1" --bpffs "/sys/fs/bpf/galactic-$P-n1" 2>&1 |
    sed 's/^/  /' || true
fi

echo "  agents logs: $D/n*/agent.log, translator: $D/translator.log (removed on exit; DEMO_KEEP=1 to keep everything)"
if [ "${#FAIL[@]}" -gt 0 ]; then
  say "FAILED: ${#FAIL[@]} check(s)"
  printf '  %s\n' "${FAIL[@]}"
  exit 1
fi
say "done: every claim Prepared, Programmed and Ready; every interface's vpc the base62 id; every attachment node, podName, hostInterface, Programmed, containerID withheld and reported; 0 writes refused"
