#!/usr/bin/env bash
# The kernel's own cost of what a kernel-backend ADD does (and of what it
# no longer does: the per-attachment iif rules), with N IPv6
# routes in the FIB (default 100,000) and with none: K of each operation in
# one `ip -batch` (no exec per operation), in a private network namespace
# removed at the end. Root. Prints microseconds per operation.
#   tests/bench/kernel_floor.sh [N] [K]
#   [FLOOR_PERF=1] [FLOOR_SIDS=S] tests/bench/kernel_floor.sh forms [N] [K] [R]
# The second form is the host veth's readiness walk (rt6_sync_up) with the
# N remote /128 routes written two ways, each form in a namespace of its
# own: per-route seg6 encaps (`P table T encap seg6 mode encap.red segs SID
# dev up0`, as the kernel backend writes remotes), and shared nexthop
# objects (one per SID, `nexthop add id I encap seg6 mode encap.red segs
# SID dev up0`, then `P table T nhid I`), over S SIDs (default 200); K pairs
# per form, R rounds alternated (default 2). It prints what building each
# form took (time, the machine's Slab and Percpu growth). Plain, it times
# the batch that brings the K host ends up; linkwatch runs the walks after
# the request that made each pair ready, so that batch counts only those
# its next line happened to wait for. With FLOOR_PERF=1 it counts the
# walks' CPU instead: `perf record -a` samples (1 kHz) under rt6_sync_up
# from the batch to 1 s after it (FLOOR_PERF_KEEP=DIR keeps each profile).
#   [FLOOR_SIDS=S] tests/bench/kernel_floor.sh fill NS encap|nhid [N]
# The third writes N such routes into the existing namespace NS as other
# software's (table 100, proto 250, dev lo, set up; nexthop ids from 1000), e.g.
# into a bench's node (bench_cni's BENCH_NODE1_SETUP) to time whole ADDs
# against either form.
set -u
# build NS FORM N S TABLE PROTO DEV: N /128 remotes over S SIDs into NS, in
# 5,000-line chunks, a chunk again after a pause when the kernel refuses one
# (ENOMEM: a seg6 state's per-cpu caches are taken GFP_ATOMIC, and 100,000
# of them in a row can drain the per-cpu allocator's atomic reserve faster
# than its worker refills it). Prints what it took (time, the machine's
# Slab and Percpu growth, chunks sent again).
build() {
	local ns=$1 form=$2 n=$3 s=$4 table=$5 proto=$6 dev=$7 d retries=0 a pa b pb s0 s1 c
	d=$(mktemp -d) || return 2
	awk -v n="$n" -v s="$s" -v form="$form" -v t="$table" -v pr="$proto" -v dev="$dev" 'BEGIN {
		if (form == "nhid")
			for (j = 0; j < s; j++) printf "nexthop add id %d encap seg6 mode encap.red segs fc00:%x::1 dev %s\n", 1000 + j, j + 1, dev
		for (i = 0; i < n; i++) {
			p = sprintf("fd00:a::1:%x:%x/128", int(i / 65536) + 1, i % 65536)
			if (form == "nhid") printf "route replace %s table %d proto %d nhid %d\n", p, t, pr, 1000 + i % s
			else printf "route replace %s table %d proto %d encap seg6 mode encap.red segs fc00:%x::1 dev %s\n", p, t, pr, i % s + 1, dev
		} }' > "$d/all"
	split -l 5000 "$d/all" "$d/chunk."
	sleep 2 # the per-cpu allocator refills its atomic reserve
	a=$(mem Slab); pa=$(mem Percpu); s0=$(date +%s%N)
	for c in "$d/chunk."*; do
		until ip -6 -n "$ns" -batch "$c" 2>/dev/null; do
			retries=$((retries + 1)); [ "$retries" -le 50 ] || { rm -rf "$d"; return 2; }; sleep 1
		done
	done
	s1=$(date +%s%N); b=$(mem Slab); pb=$(mem Percpu)
	rm -rf "$d"
	echo "$form: $(ip -6 -n "$ns" route show table "$table" | wc -l) routes in $(( (s1 - s0) / 1000000 )) ms, Slab +$(( (b - a) / 1024 )) MiB, Percpu +$(( (pb - pa) / 1024 )) MiB (machine-wide), $retries chunks again after ENOMEM"
}
mem() { awk -v k="$1" '$1 == k ":" { print $2 }' /proc/meminfo; }
if [ "${1:-}" = fill ]; then
	case "${3:-}" in encap|nhid) ;; *) echo "usage: $0 fill NS encap|nhid [N]" >&2; exit 2 ;; esac
	ip -n "$2" link set lo up || exit 2 # the routes' device
	build "$2" "$3" "${4:-100000}" "${FLOOR_SIDS:-200}" 100 250 lo || exit 2
	exit 0
fi
if [ "${1:-}" = forms ]; then
	n=${2:-100000}; k=${3:-30}; r=${4:-2}; sids=${FLOOR_SIDS:-200}
	tmp=$(mktemp -d) || exit 2
	nss=()
	# shellcheck disable=SC2317 # run by the trap
	cleanup() { local x; for x in "${nss[@]}"; do ip netns del "$x"; done; rm -rf "$tmp"; }
	trap cleanup EXIT
	for form in nhid encap; do
		ns=gkff$form$$; pns=gkffp$form$$
		ip netns add "$ns" || exit 2; nss+=("$ns")
		ip netns add "$pns" || exit 2; nss+=("$pns")
		ip -n "$ns" link add up0 type veth peer name up1
		ip -n "$ns" link set up1 up
		ip -n "$ns" link set up0 up
		ip -n "$ns" -6 addr add fc00::1/64 dev up0 nodad
		build "$ns" "$form" "$n" "$sids" 16385 154 up0 || exit 2
	done
	for round in $(seq 1 "$r"); do
		for form in encap nhid; do
			ns=gkff$form$$; pns=gkffp$form$$
			sleep 2 # the last round's pairs finish their walks
			for i in $(seq 1 "$k"); do echo "link add g$round-$i mtu 1400 type veth peer name o$round-$i mtu 1400 netns $pns"; echo "link set g$round-$i addrgenmode none"; done > "$tmp/add"
			ip -n "$ns" -batch "$tmp/add" || exit 2
			for i in $(seq 1 "$k"); do echo "link set o$round-$i up"; done > "$tmp/peer"
			ip -n "$pns" -batch "$tmp/peer" || exit 2
			for i in $(seq 1 "$k"); do echo "link set g$round-$i up"; done > "$tmp/up"
			echo "link set up0 up" >> "$tmp/up"
			s0=$(date +%s%N)
			if [ -n "${FLOOR_PERF:-}" ]; then
				# The walks' CPU, whenever linkwatch runs them: samples of
				# the whole machine under rt6_sync_up, 1 s past the batch.
				perf record -q -a -g -F 1000 -o "$tmp/perf" -- sh -c "ip -n $ns -batch $tmp/up; sleep 1" 2>/dev/null || exit 2
			else
				ip -n "$ns" -batch "$tmp/up" || exit 2
			fi
			s1=$(date +%s%N)
			line="round $round $form: host end up last, the pair ready (one rt6_sync_up walk each): $(( (s1 - s0) / 1000 / k )) us per pair ($k)"
			if [ -n "${FLOOR_PERF:-}" ]; then
				w=$(perf script -i "$tmp/perf" 2>/dev/null | awk '/^$/ { if (hit) n++; hit = 0; next } /rt6_sync_up/ { hit = 1 } END { if (hit) n++; print n + 0 }')
				[ -z "${FLOOR_PERF_KEEP:-}" ] || cp "$tmp/perf" "$FLOOR_PERF_KEEP/perf.$form.$round"
				line="round $round $form: rt6_sync_up CPU $(( w * 1000 / k )) us per pair ($w samples at 1 kHz, $k pairs; wall with 1 s after: $(( (s1 - s0) / 1000000 )) ms)"
			fi
			echo "$line"
		done
	done
	exit 0
fi
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
