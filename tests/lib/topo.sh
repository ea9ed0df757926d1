#!/usr/bin/env bash
# Reusable network-namespace topology: "nodes" on a bridged fabric, "pods"
# behind host veths. Every name starts with a caller-chosen prefix (use the
# pid) so parallel runs never clash; `down` removes everything with it.
#
#   topo.sh up PREFIX NNODES           fabric + nodes 1..N
#   topo.sh pod PREFIX NODE POD HOSTIF ADDR6 ADDR4 [MTU]
#                                      pod netns PREFIX-POD behind NODE's HOSTIF;
#                                      prints the pod MAC
#   topo.sh down PREFIX                remove every namespace named PREFIX-*
#   topo.sh run CMD...                 run CMD with `trap down EXIT` (for shell tests):
#                                      TOPO_PREFIX is exported
#
# Layout (node i):
#   netns PREFIX-n<i>, uplink "up0" (bridge port "n<i>" in PREFIX-fab/br0),
#   underlay 2001:db8:f::<i>/64, SID block fcbb:bb00:1::/48, node id i, so its
#   locator fcbb:bb00:1:<i>::/64 is routed via 2001:db8:f::<i> on the others.
# Pod: netns PREFIX-<pod>, eth0 with ADDR6/128 and ADDR4/32, default routes via
#   fe80::1 and 169.254.1.1 (the gateways the agent puts on the host veth).
set -euo pipefail

block=fcbb:bb00:1

up() {
	local p=$1 n=$2 i j
	ip netns add "$p-fab"
	ip -n "$p-fab" link add br0 type bridge
	ip -n "$p-fab" link set br0 up
	for ((i = 1; i <= n; i++)); do
		ip netns add "$p-n$i"
		ip -n "$p-n$i" link set lo up
		ip -n "$p-n$i" link add up0 type veth peer name "n$i" netns "$p-fab"
		ip -n "$p-fab" link set "n$i" master br0 up
		ip netns exec "$p-n$i" sysctl -qw net.ipv6.conf.up0.accept_dad=0 net.ipv6.conf.all.forwarding=1
		ip -n "$p-n$i" addr add "2001:db8:f::$i/64" dev up0 nodad
		ip -n "$p-n$i" link set up0 up
	done
	for ((i = 1; i <= n; i++)); do
		for ((j = 1; j <= n; j++)); do
			[ "$i" = "$j" ] && continue
			ip -n "$p-n$i" -6 route add "$block:$(printf %x "$j")::/64" via "2001:db8:f::$j" dev up0
		done
	done
}

pod() {
	local p=$1 node=$2 pod=$3 hif=$4 a6=$5 a4=$6 mtu=${7:-1400}
	local ns="$p-$pod"
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip -n "$p-n$node" link add "$hif" mtu "$mtu" type veth peer name eth0 mtu "$mtu" netns "$ns"
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.accept_dad=0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" addr add "$a6/128" dev eth0 nodad
	ip -n "$ns" addr add "$a4/32" dev eth0
	ip -n "$ns" -6 route add default via fe80::1 dev eth0
	ip -n "$ns" -4 route add 169.254.1.1 dev eth0 scope link
	ip -n "$ns" -4 route add default via 169.254.1.1 dev eth0
	ip -n "$ns" -j link show eth0 | sed -n 's/.*"address":"\([0-9a-f:]*\)".*/\1/p'
}

# An "internet" host on the fabric, documentation-range addresses only
# (2001:db8:f::ff/64, 203.0.113.254/24), so traffic never leaves the test's
# namespaces; every node gets 203.0.113.<i>/24 on up0 and default routes to it.
internet() {
	local p=$1 n=$2 i
	ip netns add "$p-inet"
	ip -n "$p-inet" link set lo up
	ip -n "$p-inet" link add up0 type veth peer name inet netns "$p-fab"
	ip -n "$p-fab" link set inet master br0 up
	ip netns exec "$p-inet" sysctl -qw net.ipv6.conf.up0.accept_dad=0
	ip -n "$p-inet" addr add 2001:db8:f::ff/64 dev up0 nodad
	ip -n "$p-inet" addr add 203.0.113.254/24 dev up0
	ip -n "$p-inet" link set up0 up
	for ((i = 1; i <= n; i++)); do
		ip netns exec "$p-n$i" sysctl -qw net.ipv4.ip_forward=1
		ip -n "$p-n$i" addr add "203.0.113.$i/24" dev up0
		ip -n "$p-n$i" -6 route add default via 2001:db8:f::ff dev up0
		ip -n "$p-n$i" -4 route add default via 203.0.113.254 dev up0
	done
}

down() {
	local p=$1 ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$p-" || true); do
		# processes left in the namespace (agents, iperf3) go first
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
		ip netns del "$ns" 2>/dev/null || true
	done
}

cmd=${1:-}
shift || true
case "$cmd" in
up) up "$@" ;;
pod) pod "$@" ;;
internet) internet "$@" ;;
down) down "$@" ;;
run)
	export TOPO_PREFIX=${TOPO_PREFIX:-gt$$}
	trap 'down "$TOPO_PREFIX"' EXIT
	"$@"
	;;
*)
	echo "usage: topo.sh up|pod|down|run ..." >&2
	exit 2
	;;
esac
