#!/usr/bin/env bash
# make demo: the whole system on this machine, checked, then torn down.
#
#   1. a real control plane (etcd + kube-apiserver) with our CRDs and the
#      faithful upstream stand-ins (tests/crds/) installed
#   2. three "nodes" as network namespaces on a bridged fabric, an "internet"
#      host on it (documentation addresses only: 2001:db8:f::ff,
#      203.0.113.254), an EgressShard per node (the operator's)
#   3. galactic-agent on each node (DEMO_BACKEND: kernel, the default, or
#      bpf), serving its CNI socket, reporting its node's objects
#   4. two galactic-translator replicas (leader election on a Lease) and
#      stand-ins for the incumbents writing the way upstream writes today
#      (tests/lib/incumbents.sh): compute creates a NetworkInterfaceClaim per
#      pod; NSO creates the NetworkContext per VPC (egress declared) and the
#      NetworkInterface, binds both by whole-status PUTs with resourceVersion
#      (409: read again), and derives the claim's Ready from what the
#      translator writes; the VPC operator creates the VPCAttachment and puts
#      its own status fields
#   5. six pods in two VPCs that use the SAME addresses, attached through
#      galactic-cni exactly as a container runtime does (CNI_* environment,
#      network config on stdin, 64-hex container ids)
#   6. the agents publish a NodeAttachment per pod and learn each other's
#      routes from the API server; the translator turns the reports into the
#      upstream status fields; each claim becomes Ready
#   7. traffic: a cross-node ping and a TCP transfer (iperf3) through SRv6,
#      isolation between the VPCs counted in the pods, internet egress of
#      every pod through its own node's shard (the internet host reports the
#      source address it saw), a leader hand-over between the translators
#   8. a summary (kubectl get of claims, interfaces, attachments, shards),
#      ADD -> claim Ready p50/max; every line of it is checked and the demo
#      exits non-zero when one does not hold
#   9. cleanup on exit and on Ctrl-C (SIGINT/SIGTERM), verified: no
#      namespace, daemon, control plane or bpf pin of this run is left
#
# Environment: DEMO_BACKEND=kernel|bpf, DEMO_CRD_VARIANT=atomic|maplist,
# DEMO_KEEP=1 leaves everything running and prints how to tear it down.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
bin=$top/build/rel/bin
P=gdemo$$
D=$(mktemp -d /tmp/galactic-demo.XXXXXX)
RNS=galactic-system
BACKEND=${DEMO_BACKEND:-kernel}
case "$BACKEND" in kernel | bpf) ;; *) echo "demo: DEMO_BACKEND=$BACKEND (kernel or bpf)" >&2; exit 2 ;; esac
# Internet egress (both backends, docs/dataplane-egress.md) needs the kernel's
# NAT to see seg6local's decapsulated packets: net.netfilter.nf_hooks_lwtunnel.
EGRESS=true NOEGRESS=''
[ -e /proc/sys/net/netfilter/nf_hooks_lwtunnel ] ||
  EGRESS=false NOEGRESS="this kernel has no net.netfilter.nf_hooks_lwtunnel (decapsulated packets never reach netfilter's NAT)"
PIDS=()          # every daemon this run started (the body's copy; all of them in $D/pids)
NSO_PID='' SW_PID='' MAIN=''
track() { PIDS+=("$1"); echo "$1" >>"$D/pids"; }
T0=$(date +%s%3N)
now_ms() { date +%s%3N; }
el() { local ms=$(( $(now_ms) - T0 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

# ---- progress: each step with the elapsed time, and how long it took ----
STEP='' STEP_T=''
STEPS=()
end_step() {
  [ -n "$STEP" ] || return 0
  local ms=$(( $(now_ms) - STEP_T ))
  printf '   \033[2m(%d.%d s)\033[0m\n' $((ms / 1000)) $((ms % 1000 / 100))
  STEPS+=("$(printf '%6d.%d s  %s' $((ms / 1000)) $((ms % 1000 / 100)) "$STEP")")
  STEP=
}
step() {
  end_step
  STEP=$* STEP_T=$(now_ms)
  printf '\n\033[1m[%6s s] %s\033[0m\n' "$(el)" "$*"
}
ind() { sed 's/^/   /'; }

# ---- checks: every claim of the summary is one of these ----
OK=() FAIL=()
check() { # description, then a command that must succeed
  local what=$1; shift
  if "$@"; then OK+=("$what"); printf '   \033[32mok\033[0m   %s\n' "$what"
  else FAIL+=("$what"); printf '   \033[31mFAIL\033[0m %s\n' "$what"; fi
}
# shellcheck disable=SC2317 # called through check()
eq() { [ "$1" = "$2" ]; }

# ---- cleanup, on exit and on Ctrl-C, verified ----
# The body runs as a background job that the top level waits for: a trapped
# SIGINT interrupts the `wait` builtin at once, whatever the body runs (ping
# and iperf3 catch SIGINT themselves, and bash does not act on a SIGINT its
# foreground command handled). The body, its commands and its daemons are
# stopped first, by pid, then everything else goes.
# shellcheck disable=SC2317 # descendants, stop_body and cleanup run from the EXIT trap
descendants() { local c; for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }
# shellcheck disable=SC2317
stop_body() {
  local pids
  [ -n "$MAIN" ] && kill -0 "$MAIN" 2>/dev/null || return 0
  pids=$(descendants "$MAIN")
  kill -TERM "$MAIN" 2>/dev/null || true
  # shellcheck disable=SC2086
  [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$MAIN" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$MAIN" 2>/dev/null || true
}
# shellcheck disable=SC2317
cleanup() {
  local rc=$? left=() pid ns cppids=()
  trap '' INT TERM
  stop_body
  touch "$D/nso.stop" "$D/stages.stop" 2>/dev/null || true
  mapfile -t PIDS < <(cat "$D/pids" 2>/dev/null)
  if [ "${DEMO_KEEP:-0}" = 1 ]; then
    echo "kept: daemons ${PIDS[*]}; tear down: kill ${PIDS[*]}; tests/lib/topo.sh down $P;" \
         "rm -rf /sys/fs/bpf/galactic-$P-*; tests/controlplane/cp.sh down $D/cp"
    exit "$rc"
  fi
  printf '\n\033[1m[%6s s] cleanup\033[0m\n' "$(el)"
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf /sys/fs/bpf/galactic-"$P"-* 2>/dev/null || true
  tests/lib/topo.sh down "$P" || true
  for f in etcd apiserver controller-manager; do
    [ -s "$D/cp/$f.pid" ] && cppids+=("$(cat "$D/cp/$f.pid")")
  done
  tests/controlplane/cp.sh down "$D/cp" >/dev/null 2>&1 || true
  # what is left of this run, if anything
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$P-" || true); do left+=("netns $ns"); done
  for pid in "${PIDS[@]}" "${cppids[@]}"; do kill -0 "$pid" 2>/dev/null && left+=("process $pid"); done
  for f in /sys/fs/bpf/galactic-"$P"-*; do [ -e "$f" ] && left+=("bpf pin $f"); done
  rm -rf "$D"
  if [ "${#left[@]}" -gt 0 ]; then
    printf '   LEFT BEHIND: %s\n' "${left[@]}"; exit 1
  fi
  echo "   nothing left: 0 namespaces $P-*, 0 of ${#PIDS[@]} daemons + ${#cppids[@]} control-plane processes, 0 bpf pins /sys/fs/bpf/galactic-$P-*"
  exit "$rc"
}
trap cleanup EXIT
trap 'printf "\n   interrupted (%s s)\n" "$(el)"; exit 130' INT TERM
[ "$(id -u)" = 0 ] || { echo "demo: needs root (network namespaces)" >&2; exit 1; }
: >"$D/pids"

main() {
trap - EXIT INT TERM
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "galactic demo: backend $BACKEND, CRD variant ${DEMO_CRD_VARIANT:-${GALACTIC_CRD_VARIANT:-atomic}}, run $P (Ctrl-C tears everything down)"

step "kernel preflight"
"$bin/galactic-preflight" | ind

step "control plane: etcd + kube-apiserver, CRDs"
tests/controlplane/cp.sh up "$D/cp" --owner $$ >/dev/null
K() { tests/controlplane/cp.sh kubectl "$D/cp" "$@"; }
. tests/lib/incumbents.sh
inc_init "$D/cp" "$D" default
JQ_COND=$INC_JQ_COND
NA=$APISERVER/apis/network.datumapis.com/v1alpha1/namespaces/$RNS/nodeattachments
ES=$APISERVER/apis/network.datumapis.com/v1alpha1/namespaces/$RNS/egressshards
# polls go through curl (inc_api), not kubectl: cheaper on a loaded machine
tests/lib/crds.sh install "$D/cp" "${DEMO_CRD_VARIANT:-}"
K get crd -o custom-columns=CRD:.metadata.name,ESTABLISHED:'.status.conditions[?(@.type=="Established")].status' | ind
K create namespace "$RNS" >/dev/null

step "three nodes on a fabric (SID block fcbb:bb00:1::/48, node ids 1-3), an internet host"
tests/lib/topo.sh up "$P" 3
tests/lib/topo.sh internet "$P" 3
echo "   fabric $P-fab, nodes $P-n1..3 (underlay 2001:db8:f::1..3), internet $P-inet (2001:db8:f::ff, 203.0.113.254)"
if $EGRESS; then
  for i in 1 2 3; do # the operator's shards, one per node (upstream keeps them in galactic-system)
    K apply -f - >/dev/null <<J
{"apiVersion":"network.datumapis.com/v1alpha1","kind":"EgressShard","metadata":{"name":"shard-n$i","namespace":"$RNS"},
 "spec":{"targetRef":{"kind":"Node","name":"n$i"},"shardSID":"fcbb:bb00:1:$i:f000::",
  "shardAddressIPv6":"2001:db8:f::50:$i","shardAddressIPv4":"203.0.113.5$i","nat64Prefix":"64:ff9b::/96"}}
J
  done
  echo "   EgressShards shard-n1..3 (operator): SID fcbb:bb00:1:<i>:f000::, source 2001:db8:f::50:<i> and 203.0.113.5<i>"
else
  echo "   no EgressShards: internet egress is not shown: $NOEGRESS"
fi

step "galactic-agent on each node ($BACKEND backend)"
for i in 1 2 3; do
  mkdir -p "$D/n$i"
  printf '{"node":{"block":"fcbb:bb00:1::/48","node_id":%d,"uplink":"up0"},"vpcs":[],"attachments":[]}\n' "$i" \
    >"$D/n$i/state.json"
  "$bin/galactic-agent" --state-dir "$D/n$i" --netns "$P-n$i" --interval 1 \
    --backend "$BACKEND" --bpffs "/sys/fs/bpf/galactic-$P-n$i" \
    --cni-socket "$D/n$i/cni.sock" --kubeconfig "$D/cp/kubeconfig" --node "n$i" \
    --report-namespace "$RNS" --egress-namespace "$RNS" >>"$D/n$i/agent.log" 2>&1 &
  track $!
done
for i in 1 2 3; do
  for _ in $(seq 200); do [ -S "$D/n$i/cni.sock" ] && break; sleep 0.1; done
  [ -S "$D/n$i/cni.sock" ] || { echo "agent on n$i did not start:"; cat "$D/n$i/agent.log"; exit 1; }
  echo "   n$i: galactic-agent pid ${PIDS[$((i - 1))]}, CNI socket $D/n$i/cni.sock"
done

# pod name, node, VPC id (base62), attachment id, IPv6, IPv4
PODS=(
  "red-1 1 Red7 R1 fd00:a::11 10.1.0.11"
  "red-2 2 Red7 R2 fd00:a::12 10.1.0.12"
  "red-3 3 Red7 R3 fd00:a::13 10.1.0.13"
  "blue-1 1 Blu9 B1 fd00:a::11 10.1.0.11"
  "blue-2 2 Blu9 B2 fd00:a::12 10.1.0.12"
  "blue-3 3 Blu9 B3 fd00:a::13 10.1.0.13"
)
NPODS=${#PODS[@]}

# The first time each stage is seen per pod (epoch ms after the GET that saw
# it; a poll every 0.2 s): the agent's report Programmed (by attachment id),
# the translator's VPCAttachment Programmed; the NSO stand-in records the
# claim's Programmed and Ready itself (incumbents.sh).
stage_watch() {
  local t
  set +e
  while [ ! -e "$D/stages.stop" ]; do
    inc_api "$NA" >"$D/sw.na.json"; t=$(now_ms)
    for a in $(jq -r '.items[] | select(any(.status.conditions[]?; .type == "Programmed" and .status == "True")) | .spec.vpcAttachment' "$D/sw.na.json" 2>/dev/null); do
      [ -e "$D/st.report.$a" ] || echo "$t" >"$D/st.report.$a"
    done
    inc_api "$INC_VA" >"$D/sw.va.json"; t=$(now_ms)
    for n in $(jq -r "$JQ_COND"'.items[] | select(cond("Programmed") == "True") | .metadata.name' "$D/sw.va.json" 2>/dev/null); do
      [ -e "$D/st.va.$n" ] || echo "$t" >"$D/st.va.$n"
    done
    inc_api "$INC_NIC" >"$D/sw.nic.json"; t=$(now_ms)
    for n in $(jq -r "$JQ_COND"'.items[] | select(cond("Programmed") == "True") | .metadata.name' "$D/sw.nic.json" 2>/dev/null); do
      [ -e "$D/st.nic.$n" ] || echo "$t" >"$D/st.nic.$n"
    done
    sleep 0.2
  done
}

step "two galactic-translator replicas (leader election) and the stand-in incumbents"
for id in translator-a translator-b; do
  "$bin/galactic-translator" --kubeconfig "$D/cp/kubeconfig" --namespace "$RNS" --id "$id" \
    --lease-duration 6 --renew-deadline 4 --retry-period 1 \
    --metrics-addr 127.0.0.1:0 >>"$D/$id.log" 2>&1 &
  track $!
  echo "   $id: pid $!"
done
reach=; $EGRESS && reach=IPv6
for vpc in Red7 Blu9; do
  inc_network_context "${vpc,,}" "net-$vpc" $reach
  echo "   NetworkContext ${vpc,,} (NSO)${reach:+: egress.internet Enabled, reach [$reach]}"
done
for p in "${PODS[@]}"; do
  read -r name node vpc att a6 a4 <<<"$p"
  inc_claim "$name" "net-$vpc"
  uid=$(inc_interface "$name" "net-$vpc" "$a6/128" "$a4/32")
  inc_vpc_operator "$name" "$vpc" "$att" "$uid" "$a6/128" "$a4/32"
  echo "   $name: NetworkInterfaceClaim (compute), NetworkInterface (NSO), VPCAttachment $vpc/$att (VPC operator)"
done
inc_nso_loop &
NSO_PID=$!; track $!
stage_watch &
SW_PID=$!; track $!
echo "   NSO stand-in: poll loop (every 0.3 s; whole-status PUTs, retried on 409)"

step "$NPODS pods attached through galactic-cni (VPCs Red7 and Blu9 use the same addresses)"
eg=; $EGRESS && eg='"egress":{"internet":{"mode":"Enabled"}},'
for p in "${PODS[@]}"; do
  read -r name node vpc att a6 a4 <<<"$p"
  ip netns add "$P-$name"
  ip -n "$P-$name" link set lo up
  conf=$(printf '{"cniVersion":"1.1.0","name":"vpc-%s","type":"galactic-cni","vpc":"%s","vpcattachment":"%s","ipFamilies":["IPv6","IPv4"],"addresses":[{"address":"%s/128","gateway":"fe80::1"},{"address":"%s/32","gateway":"169.254.1.1"}],"mtu":1400,%s"agentSocket":"%s"}' \
    "$vpc" "$vpc" "$att" "$a6" "$a4" "$eg" "$D/n$node/cni.sock")
  t0=$(now_ms); echo "$t0" >"$D/add.$name"
  ctr=$(printf '%s' "$P-$name" | sha256sum | cut -c1-64) # as containerd and CRI-O give them
  res=$(echo "$conf" | CNI_COMMAND=ADD CNI_CONTAINERID="$ctr" CNI_NETNS="/var/run/netns/$P-$name" \
    CNI_IFNAME=eth0 CNI_PATH="$bin" CNI_ARGS="K8S_POD_NAMESPACE=default;K8S_POD_NAME=$name" \
    "$bin/galactic-cni")
  echo "   $name on n$node in $vpc: ADD $(( $(now_ms) - t0 )) ms -> $(echo "$res" | jq -c '[.ips[].address]')"
done

step "reports, learned routes, and every claim Ready"
for _ in $(seq 300); do
  n=$(inc_api "$NA" | jq '[.items[] | select(any(.status.conditions[]?; .type=="Programmed" and .status=="True"))] | length' || true)
  [ "$n" = "$NPODS" ] && break; sleep 0.2
done
K get nodeattachments -n "$RNS" | ind
for i in 1 2 3; do
  for _ in $(seq 100); do [ -s "$D/n$i/record-remotes.json" ] && [ "$(jq '.remotes | length' "$D/n$i/record-remotes.json" 2>/dev/null || echo 0)" -gt 0 ] && break; sleep 0.2; done
  { jq -r '.remotes[] | "   n'"$i"' learned: \(.vpc) \(.prefix) -> \(.sid)"' "$D/n$i/record-remotes.json" | sort -u | head -8; } 2>/dev/null || true
done
for _ in $(seq 600); do # at most 2 min on a loaded machine
  n=$(inc_api "$INC_NIC" | jq "$JQ_COND"'[.items[] | select(cond("Ready") == "True")] | length' || true)
  [ "$n" = "$NPODS" ] && break; sleep 0.2
done
echo "   $n of $NPODS claims Ready"

step "kernel state on n1 (what the agent programmed, $BACKEND backend)"
ip -n "$P-n1" -6 rule | grep -v 'lookup local\|lookup main\|lookup default' | head -6 | ind || true
{ ip -n "$P-n1" -4 route show table all; ip -n "$P-n1" -6 route show table all; } | grep -E 'encap' | head -10 | ind || true
if [ "$BACKEND" = bpf ]; then
  echo "   TC programs (encap on host veths, decap on the uplink):"
  for dev in up0 $(ip -n "$P-n1" -o link show 2>/dev/null | sed -n 's/^[0-9]*: \(gc[0-9a-f]*\)@.*/\1/p'); do
    tc -n "$P-n1" filter show dev "$dev" ingress | sed -n "s/.* bpf .*name \([a-z_]*\).*/      $dev: \1/p"
  done
fi

# ---- traffic helpers ----
X() { ip netns exec "$P-$1" "${@:2}"; }
# shellcheck disable=SC2016,SC2317 # awk programs; called as echos"$family"
echos6() { X "$1" awk '$1 == "Icmp6InEchos" {print $2}' /proc/net/snmp6; }
# shellcheck disable=SC2016,SC2317
echos4() { X "$1" awk '$1 == "Icmp:" {if (!h) {for (i = 2; i <= NF; i++) if ($i == "InEchos") c = i; h = 1} else print $c}' /proc/net/snmp; }
pingn() { # pod dst count: prints received
  X "$1" ping -q -c "$3" -i 0.2 -W 2 "$2" 2>/dev/null | sed -n 's/.* \([0-9]*\) received.*/\1/p' || true
}

step "traffic through SRv6: ping, TCP, isolation"
SUM=()
r=$(pingn red-1 fd00:a::12 5); r=${r:-0}
SUM+=("ping red-1 (n1) -> red-2 (n2) fd00:a::12: $r/5 replies")
check "cross-node ping red-1 (n1) -> fd00:a::12 (red-2, n2): $r/5 replies" eq "$r" 5
r=$(pingn red-1 10.1.0.12 5); r=${r:-0}
SUM+=("ping red-1 (n1) -> red-2 (n2) 10.1.0.12 (IPv4 in SRv6, End.DX4): $r/5 replies")
check "cross-node ping red-1 (n1) -> 10.1.0.12 (IPv4 inside SRv6): $r/5 replies" eq "$r" 5
r=$(pingn blue-1 fd00:a::13 5); r=${r:-0}
SUM+=("ping blue-1 (n1) -> blue-3 (n3) fd00:a::13: $r/5 replies")
check "cross-node ping blue-1 (n1) -> fd00:a::13 (blue-3, n3): $r/5 replies" eq "$r" 5
# TCP: iperf3 from red-1 (n1) to red-2 (n2), 3 s
X red-2 iperf3 -s -1 -B fd00:a::12 -J >"$D/iperf.srv.json" 2>&1 &
track $!; srv=$!
for _ in $(seq 50); do X red-2 ss -Hltn 'sport = :5201' | grep -q . && break; sleep 0.1; done
X red-1 iperf3 -c fd00:a::12 -t 3 -J >"$D/iperf.json" 2>&1 || true
wait "$srv" 2>/dev/null || true
read -r tx rx mbps retr < <(jq -r '[.end.sum_sent.bytes // 0, .end.sum_received.bytes // 0,
  ((.end.sum_received.bits_per_second // 0) / 1e6 | floor), .end.sum_sent.retransmits // 0] | join(" ")' "$D/iperf.json" 2>/dev/null || echo "0 0 0 0")
srx=$(jq -r '.end.sum_received.bytes // 0' "$D/iperf.srv.json" 2>/dev/null || echo 0)
SUM+=("TCP red-1 (n1) -> red-2 (n2) through SRv6 (iperf3, 3 s): $((tx / 1048576)) MiB sent, $((rx / 1048576)) MiB received, $mbps Mbit/s, $retr retransmits; red-2 received $((srx / 1048576)) MiB")
check "TCP transfer red-1 -> red-2 through SRv6: $rx bytes sent and received, server counted $srx" \
  test "$rx" -gt 0 -a "$srx" -gt 0
# isolation: the same addresses exist in both VPCs; count echo requests in each pod
iso() { # src dst-addr want-pod other-pod family
  local b1 b2 a1 a2 r
  b1=$(echos"$5" "$3"); b2=$(echos"$5" "$4")
  r=$(pingn "$1" "$2" 20); r=${r:-0}
  a1=$(echos"$5" "$3"); a2=$(echos"$5" "$4")
  SUM+=("isolation: 20 pings $1 -> $2: $((a1 - b1)) reached $3 (same VPC), $((a2 - b2)) reached $4 (same address, other VPC), $r replies")
  check "isolation $1 -> $2: $((a1 - b1))/20 reached $3, $((a2 - b2)) reached $4" test "$((a1 - b1))" -eq 20 -a "$((a2 - b2))" -eq 0 -a "$r" -eq 20
}
iso red-1 fd00:a::12 red-2 blue-2 6
iso blue-1 fd00:a::13 blue-3 red-3 6
iso red-3 10.1.0.11 red-1 blue-1 4

step "internet egress through each node's shard"
if $EGRESS; then
  for i in 1 2 3; do
    for _ in $(seq 150); do
      [ "$(inc_api "$ES/shard-n$i" | jq -r "$JQ_COND"'cond("Programmed")' || true)" = True ] && break; sleep 0.2
    done
  done
  for _ in $(seq 300); do
    n=$(inc_api "$INC_VA" | jq "$JQ_COND"'[.items[] | select(cond("InternetEgressReady") == "True")] | length' || true)
    [ "$n" = "$NPODS" ] && break; sleep 0.2
  done
  for p in "${PODS[@]}"; do
    read -r name node vpc _ <<<"$p"
    for fam in 6 4; do
      if [ $fam = 6 ]; then dst=2001:db8:f::ff want=2001:db8:f::50:$node; else dst=203.0.113.254 want=203.0.113.5$node; fi
      X inet iperf3 -s -1 -B "$dst" -J >"$D/eg.$name.$fam.json" 2>&1 &
      track $!; srv=$!
      for _ in $(seq 50); do X inet ss -Hltn 'sport = :5201' | grep -q . && break; sleep 0.1; done
      X "$name" iperf3 -c "$dst" -n 256K -J >"$D/egc.$name.$fam.json" 2>&1 || true
      wait "$srv" 2>/dev/null || true
      seen=$(jq -r '.start.connected[0].remote_host // "none"' "$D/eg.$name.$fam.json" 2>/dev/null || echo none)
      seen=${seen#::ffff:}
      got=$(jq -r '.end.sum_received.bytes // 0' "$D/eg.$name.$fam.json" 2>/dev/null || echo 0)
      sent=$(jq -r '.end.sum_sent.bytes // 0' "$D/egc.$name.$fam.json" 2>/dev/null || echo 0)
      SUM+=("egress $name (n$node, $vpc) -> $dst: the internet host saw source $seen; TCP: $((sent / 1024)) KiB sent, $((got / 1024)) KiB counted by the host")
      check "egress $name -> $dst: source seen $seen (n$node's shard $want), $got bytes" \
        test "$seen" = "$want" -a "$got" -gt 0
    done
  done
else
  SUM+=("egress: NOT SHOWN: $NOEGRESS")
  echo "   not shown: $NOEGRESS"
fi

step "translator leader hand-over (SIGTERM the leader; the standby takes the Lease)"
lease() { K get lease galactic-translator -n "$RNS" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true; }
mport() { sed -n 's/.*serving metrics.* port=\([0-9]*\).*/\1/p' "$D/$1.log" | head -1; }
mval() { { curl -fsS "http://127.0.0.1:$(mport "$1")/metrics" 2>/dev/null || true; } | awk -v m="$2" '$1 == m || index($1, m "{") == 1 {s += $NF; n++} END {print (n ? s : "absent")}'; }
holder=$(lease)
la=$(mval translator-a galactic_translator_leader); lb=$(mval translator-b galactic_translator_leader)
refused=$(( $(mval translator-a galactic_translator_writes_refused_total | sed 's/absent/0/') + $(mval translator-b galactic_translator_writes_refused_total | sed 's/absent/0/') ))
echo "   Lease galactic-translator holder: $holder; galactic_translator_leader: translator-a $la, translator-b $lb"
WSTAT="status writes $(mval "$holder" galactic_translator_status_writes_total), skips $(mval "$holder" galactic_translator_status_write_skips_total), stale-apply 409s $(mval "$holder" galactic_translator_stale_apply_refusals_total), guarded-patch 409s $(mval "$holder" galactic_translator_guarded_patch_rejections_total), other 409s $(mval "$holder" galactic_translator_conflicts_total)"
echo "   the leader's writes: $WSTAT"
check "exactly one translator leads (Lease holder $holder; leader gauge a=$la b=$lb)" \
  test \( "$holder" = translator-a -a "$la" = 1 -a "$lb" = 0 \) -o \( "$holder" = translator-b -a "$la" = 0 -a "$lb" = 1 \)
check "translator writes refused (422/5xx) while leading: $refused" eq "$refused" 0
case $holder in translator-a) old=0 standby=translator-b ;; *) old=1 standby=translator-a ;; esac
oldpid=${PIDS[$((3 + old))]}
t0=$(now_ms); kill "$oldpid"
gone=- ho=-
for _ in $(seq 300); do
  [ "$gone" = - ] && ! kill -0 "$oldpid" 2>/dev/null && gone=$(( $(now_ms) - t0 ))
  [ "$ho" = - ] && [ "$(lease)" = "$standby" ] && ho=$(( $(now_ms) - t0 ))
  [ "$gone" != - ] && [ "$ho" != - ] && break
  sleep 0.1
done
new=$(lease); ls=$(mval "$standby" galactic_translator_leader)
echo "   $holder exited $gone ms after SIGTERM (workers stopped, Lease released); $standby holds the Lease after $ho ms"
SUM+=("translators: $holder led; SIGTERM: it exited after $gone ms, $standby took the Lease after $ho ms (retry period 1 s)")
check "hand-over: $new holds the Lease $ho ms after SIGTERM to $holder (gauge $ls)" test "$new" = "$standby" -a "$ls" = 1

touch "$D/nso.stop" "$D/stages.stop"; wait "$NSO_PID" "$SW_PID" 2>/dev/null || true; NSO_PID='' SW_PID=''
end_step

# ---------------------------------------------------------------- summary ----
printf '\n\033[1m[%6s s] summary\033[0m\n' "$(el)"
echo "   kubectl get networkinterfaceclaims (compute's; NSO's Bound/Allocated/Ready, the translator's Prepared/Programmed):"
K get networkinterfaceclaims -n default -o custom-columns='CLAIM:.metadata.name,NETWORK:.spec.network.name,INTERFACE:.status.networkInterfaceRef.name,BOUND:.status.conditions[?(@.type=="Bound")].status,ALLOCATED:.status.conditions[?(@.type=="Allocated")].status,PREPARED:.status.conditions[?(@.type=="Prepared")].status,PROGRAMMED:.status.conditions[?(@.type=="Programmed")].status,READY:.status.conditions[?(@.type=="Ready")].status' | ind
echo "   kubectl get networkinterfaces (NSO's phase and Allocated; the translator's vpc, Prepared, Programmed):"
K get networkinterfaces -n default -o custom-columns='INTERFACE:.metadata.name,PHASE:.status.phase,VPC:.status.vpc,ALLOCATED:.status.conditions[?(@.type=="Allocated")].status,PREPARED:.status.conditions[?(@.type=="Prepared")].status,PROGRAMMED:.status.conditions[?(@.type=="Programmed")].status' | ind
echo "   kubectl get vpcattachments (the VPC operator's vpc, id and Ready; the translator's node, pod, host interface, Programmed, InternetEgressReady):"
K get vpcattachments -n default -o custom-columns='ATTACHMENT:.metadata.name,VPC:.status.vpc,ID:.status.vpcAttachment,NODE:.status.node,POD:.status.podName,HOST-IF:.status.hostInterface,READY:.status.conditions[?(@.type=="Ready")].status,PROGRAMMED:.status.conditions[?(@.type=="Programmed")].status,EGRESS:.status.conditions[?(@.type=="InternetEgressReady")].status' | ind
if $EGRESS; then
  echo "   kubectl get egressshards -n $RNS, egressshardclaims:"
  K get egressshards -n "$RNS" -o custom-columns='SHARD:.metadata.name,TARGET:.spec.targetRef.name,SHARD-SID:.status.shardSID,IPV6:.status.shardAddressIPv6,IPV4:.status.shardAddressIPv4,PROGRAMMED:.status.conditions[?(@.type=="Programmed")].status,READY:.status.conditions[?(@.type=="Ready")].status' | ind
  K get egressshardclaims -n default | ind
fi
K get networkinterfaceclaims -n default -o json >"$D/nic.json"
K get networkinterfaces -n default -o json >"$D/ni.json"
K get vpcattachments -n default -o json >"$D/va.json"
K get egressshardclaims -n default -o json >"$D/esc.json"
K get events -n default --field-selector reason=FieldWithheld -o json >"$D/ev.json"
echo
for p in "${PODS[@]}"; do
  read -r name node vpc att _ <<<"$p"
  c=$(jq -r --arg n "$name" "$JQ_COND"'.items[] | select(.metadata.name == $n) | [cond("Bound"), cond("Allocated"), cond("Prepared"), cond("Programmed"), cond("Ready")] | join(",")' "$D/nic.json")
  check "claim $name: Bound,Allocated,Prepared,Programmed,Ready = $c" eq "$c" True,True,True,True,True
  v=$(jq -r --arg n "$name" '.items[] | select(.metadata.name == $n) | .status.vpc // "-"' "$D/ni.json")
  i=$(jq -r --arg n "$name" "$JQ_COND"'.items[] | select(.metadata.name == $n) | [cond("Prepared"), cond("Programmed")] | join(",")' "$D/ni.json")
  check "interface $name: status.vpc $v (the VPC operator's id $vpc), Prepared,Programmed = $i" test "$v" = "$vpc" -a "$i" = True,True
  a=$(jq -r --arg n "$name" "$JQ_COND"'.items[] | select(.metadata.name == $n) | [.status.node, .status.podName, cond("Programmed"), (.status.containerID // "withheld")] | map(. // "-") | join(",")' "$D/va.json")
  ev=$(jq -r --arg n "$name" '[.items[] | select(.involvedObject.kind == "VPCAttachment" and .involvedObject.name == $n)] | length' "$D/ev.json")
  check "attachment $name: node,podName,Programmed,containerID = $a ($ev FieldWithheld event: the 64-hex id does not fit upstream's 46)" \
    test "$a" = "n$node,$name,True,withheld" -a "$ev" -ge 1
  if $EGRESS; then
    e=$(jq -r --arg n "$name" "$JQ_COND"'.items[] | select(.metadata.name == $n) | cond("InternetEgressReady")' "$D/va.json")
    s=$(jq -r --arg n "$name" "$JQ_COND"'.items[] | select(.metadata.name == $n) | "\(.status.shardRef.name // "-"),\(cond("Ready"))"' "$D/esc.json")
    check "attachment $name: InternetEgressReady=$e; EgressShardClaim shard,Ready = $s" test "$e" = True -a "$s" = "shard-n$node,True"
  fi
done
# ADD -> each stage -> claim Ready (ms from galactic-cni ADD; first seen by a
# 0.2 s poll, the NSO stand-in's 0.3 s loop for the claim)
pct() { # label, values...: "label p50 X ms, max Y ms"
  local l=$1 s; shift
  [ $# -gt 0 ] || { echo "$l: not measured"; return; }
  mapfile -t s < <(printf '%s\n' "$@" | sort -n)
  echo "$l: p50 ${s[$(( (${#s[@]} + 1) / 2 - 1 ))]} ms, max ${s[-1]} ms (n=${#s[@]})"
}
echo "   ms from galactic-cni ADD to: the agent's report Programmed, the translator's VPCAttachment Programmed,"
echo "   the translator's claim Programmed, that seen by the NSO stand-in's loop, the claim's Ready (NSO's PUT):"
printf '     %-8s %8s %8s %8s %8s %8s\n' POD REPORT ATTACH CLAIM NSO-SAW READY
r1=() r2=() r3=() r4=() r5=()
for p in "${PODS[@]}"; do
  read -r name _ vpc att _ <<<"$p"
  a0=$(cat "$D/add.$name") v=()
  for f in "st.report.$att" "st.va.$name" "st.nic.$name" "programmed.$name" "ready.$name"; do
    if [ -e "$D/$f" ]; then v+=($(( $(cat "$D/$f") - a0 ))); else v+=(-); fi
  done
  printf '     %-8s %8s %8s %8s %8s %8s\n' "$name" "${v[@]}"
  [ "${v[0]}" = - ] || r1+=("${v[0]}"); [ "${v[1]}" = - ] || r2+=("${v[1]}")
  [ "${v[2]}" = - ] || r5+=("${v[2]}"); [ "${v[3]}" = - ] || r3+=("${v[3]}"); [ "${v[4]}" = - ] || r4+=("${v[4]}")
done
check "every claim's ADD -> Ready measured (${#r4[@]} of $NPODS)" eq "${#r4[@]}" "$NPODS"
SUM=("$(pct "galactic-cni ADD -> claim Ready=True" "${r4[@]}")"
     "  stages: $(pct "report Programmed" "${r1[@]}"); $(pct "VPCAttachment Programmed" "${r2[@]}"); $(pct "claim Programmed" "${r5[@]}"); $(pct "claim Programmed seen by NSO" "${r3[@]}")"
     "${SUM[@]}")
echo
echo "   steps:"; printf '   %s\n' "${STEPS[@]}"
echo
echo "   results:"; printf '   - %s\n' "${SUM[@]}"
lines() { if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi; }
echo "   - NSO stand-in PUTs answered 409 and retried: $(lines "$D/conflicts.network-services-operator");" \
  "VPC operator: $(lines "$D/conflicts.vpc-operator"); translator writes refused: $refused"
echo "   - the leading translator: $WSTAT"
echo "   - machine: $(nproc) CPUs, load average $LOAD0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) now (times above are under this load)"
if [ "$BACKEND" = bpf ]; then
  echo "   bpf counters on n1:"
  "$bin/galactic-bpf" stats --state-dir "$D/n1" --netns "$P-n1" --bpffs "/sys/fs/bpf/galactic-$P-n1" 2>&1 | head -20 | ind || true
fi
echo
if [ "${#FAIL[@]}" -gt 0 ]; then
  printf '\033[1;31m   FAILED: %d of %d checks\033[0m\n' "${#FAIL[@]}" "$(( ${#OK[@]} + ${#FAIL[@]} ))"
  printf '     %s\n' "${FAIL[@]}"
  echo "   logs: $D/n*/agent.log, $D/translator-*.log (DEMO_KEEP=1 keeps them)"
  exit 1
fi
printf '\033[1;32m   all %d checks hold\033[0m (backend %s, %s s)\n' "${#OK[@]}" "$BACKEND" "$(el)"
}

main &
MAIN=$!
rc=0
wait "$MAIN" || rc=$?
MAIN=''
exit "$rc"
