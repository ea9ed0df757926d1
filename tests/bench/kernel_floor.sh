#!/usr/bin/env bash
# The kernel's own cost of what a kernel-backend ADD does (and of what it
# no longer does: the per-attachment iif rules), with N IPv6
# routes in the FIB (default 100,000) and with none: K of each operation in
# one `ip -batch` (no exec per operation), in a private network namespace
# removed at the end. Root. Prints microseconds per operation.
#   tests/bench/kernel_floor.sh [N] [K]
set -u
n=${1:-100000}; k=${2:-30}; ns=gkfloor$$; pns=gkfloorp$$
tmp=$(mktemp -d) || exit 2
ip netns add "$ns" || exit 2
ip netns add "$pns" || { ip netns del "$ns"; exit 2; }
trap 'ip netns del "$ns"; ip netns del "$pns"; rm -rf "$tmp"' EXIT
ip -n "$ns" link add up0 type veth peer name up1
ip -n "$ns" link set up1 up
ip -n "$ns" link set up0 up
ip -n "$ns" -6 addr add fc00::1/64 dev up0 nodad
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "route add fd00:%x:%x::/64 via fc00::2 dev up0 table 16385 proto 250\n", int(i / 65536), i % 65536 }' > "$tmp/routes"
ip -6 -n "$ns" -batch "$tmp/routes" || exit 2
echo "IPv6 routes in table 16385: $(ip -6 -n "$ns" route show table 16385 | wc -l)"
run() { # label, family flag ("" or -4/-6), then the batch lines (in $ns, or in $in when set)
  local label=$1 fam=$2 s e
  shift 2
  printf '%s\n' "$@" > "$tmp/ops"
  s=$(date +%s%N)
  # shellcheck disable=SC2086 # fam is empty or one flag
  ip $fam -n "${in:-$ns}" -batch "$tmp/ops" || exit 2
  e=$(date +%s%N)
  echo "$label: $(( (e - s) / 1000 / k )) us per operation ($k)"
}
# shellcheck disable=SC2059 # the format is the caller's operation template
ops() { local i; for i in $(seq 1 "$k"); do printf "$1\n" "$i" "$i"; done; }
mapfile -t l < <(ops 'link add h%s type veth peer name p%s'); run "veth pair add" "" "${l[@]}"
mapfile -t l < <(ops 'link set h%s mtu 1400 # %s'); run "host end MTU set afterwards" "" "${l[@]%% #*}"
mapfile -t l < <(ops 'link set h%s up # %s'); run "host end up (its peer down: not ready, no walk)" "" "${l[@]%% #*}"
# The peer up: the pair becomes ready, and for each the kernel walks the
# whole IPv6 FIB once (rt6_sync_up, from linkwatch, holding the RTNL lock);
# the next line of the batch waits for it. The addrgenmode none pairs (set
# while down, as the agent does) autoconfigure no link-local: no DAD, whose
# completion walks the FIB again (fib6_flush_trees) a second later.
mapfile -t l < <(ops 'link set p%s up # %s'); run "peer up: the pair ready (rt6_sync_up of both ends: two walks each)" "" "${l[@]%% #*}"
sleep 3 # the h/p pairs' DAD ends (a walk each) before the next lines
# The agent's order, each pair's peer in a namespace of its own as a pod's
# is: when the pair becomes ready only the host end's walk is of the big
# FIB (the h/p pairs above have both ends here: two walks each).
mapfile -t l < <(ops "link add g%s mtu 1400 type veth peer name o%s mtu 1400 netns $pns"); run "veth pair add at its MTU, peer in its own namespace (addrgenmode none pairs)" "" "${l[@]}"
mapfile -t l < <(ops 'link set g%s addrgenmode none # %s'); run "host end addrgenmode none (down)" "" "${l[@]%% #*}"
mapfile -t l < <(ops 'link set o%s up # %s'); in=$pns run "peer up (host end down; in the peer's namespace)" "" "${l[@]%% #*}"
mapfile -t l < <(ops 'link set g%s up # %s'); l+=("link set up0 up"); run "host end up last: the pair ready (one rt6_sync_up walk each; a last no-op line, up0 up again, waits for the last)" "" "${l[@]%% #*}"
mapfile -t l < <(ops 'rule add iif h%s lookup 16385 pref 100 # %s'); run "IPv6 iif rule add" -6 "${l[@]%% #*}"
mapfile -t l < <(ops 'rule add iif h%s lookup 16385 pref 100 # %s'); run "IPv4 iif rule add" -4 "${l[@]%% #*}"
mapfile -t l < <(ops 'link add c%s mtu 1400 type veth peer name q%s mtu 1400'); run "veth pair add at its MTU" "" "${l[@]}"
mapfile -t l < <(ops 'rule add fwmark 0x30%04x/0x300fff lookup 16385 pref 100 # %s'); run "IPv6 fwmark rule add (one per VPC)" -6 "${l[@]%% #*}"
# Pod steering (agent/dp/steer.h): the table once, then one map element per
# attachment, each its own nftables transaction as an ADD's, K of them
# through one `nft -i` (one process, one line per transaction: its start-up
# is shared by the K).
ip netns exec "$ns" nft -f - <<'EOF2' || exit 2
table inet galactic_steer {
	map pods {
		typeof iifname : meta mark
	}
	chain steer {
		type filter hook prerouting priority -200; policy accept;
		meta mark & 0x300000 == 0 meta mark set iifname map @pods
	}
}
EOF2
for i in $(seq 1 "$k"); do echo "add element inet galactic_steer pods { \"h$i\" : 0x300001 }"; done > "$tmp/nft"
s=$(date +%s%N)
ip netns exec "$ns" nft -i < "$tmp/nft" > /dev/null || exit 2
e=$(date +%s%N)
echo "steering map element add (one transaction each): $(( (e - s) / 1000 / k )) us per operation ($k)"
