// SPDX-License-Identifier: GPL-2.0
/*
 * galactic SRv6 uSID data plane, TC (clsact) programs:
 *   galactic_decap  uplink ingress: block:node:E<arg> -> strip outer IPv6,
 *                   fib lookup in the VPC's table, redirect to the pod
 *   galactic_encap  host veth ingress: LPM lookup within the attachment's
 *                   VPC, push the outer IPv6 toward the remote SID, redirect
 *   galactic_probe_fib  preflight: bpf_fib_lookup with a table id
 * Maps and their layout: maps.bpf.h, srv6.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "agent/dp/bpf/counters.bpf.h"
#include "agent/dp/bpf/decap.bpf.h"
#include "agent/dp/bpf/encap.bpf.h"
#include "agent/dp/bpf/parse.bpf.h"

char LICENSE[] SEC("license") = "GPL";

SEC("tc")
int galactic_decap(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};
	const struct gbpf_cfg *cfg;
	const struct gbpf_vpc *vpc;
	struct ethhdr *eth;
	struct ipv6hdr *ip6;
	__u32 zero = 0, fwd_if;
	__u16 payload_len;
	__u8 nexthdr;
	int arg, why;
	long rc;

	eth = pkt_ptr(skb, 0, sizeof(*eth));
	if (!eth || eth->h_proto != bpf_htons(ETH_P_IPV6))
		return TC_ACT_OK;
	ip6 = pkt_ptr(skb, ETH_HLEN, sizeof(*ip6));
	cfg = bpf_map_lookup_elem(&gbpf_cfg, &zero);
	if (!ip6 || !cfg || !(cfg->flags & GBPF_CFG_VALID))
		return TC_ACT_OK;
	arg = sid_arg(cfg, (const __u8 *)&ip6->daddr);
	if (arg < 0)
		return TC_ACT_OK; /* not our End.DT SID: the kernel's business */
	vpc = bpf_map_lookup_elem(&gbpf_vpcs, &arg);
	if (!vpc || !(vpc->flags & GBPF_VPC_VALID))
		return drop(GBPF_DROP_UNKNOWN_ARG, -1);
	nexthdr = ip6->nexthdr;
	/* Full encap with an SRH: the standby seg6local route processes it. */
	if (nexthdr == IPPROTO_ROUTING)
		return TC_ACT_OK;
	payload_len = bpf_ntohs(ip6->payload_len);
	if (skb->len < ETH_HLEN + IP6_HLEN + (__u32)payload_len)
		return drop(GBPF_DROP_MALFORMED_INNER, arg);
	why = inner_check(skb, nexthdr, payload_len, &fib);
	if (why)
		return drop(why, arg);
	why = strip_outer(skb, nexthdr);
	if (!why)
		why = inner_dec_ttl(skb, nexthdr);
	if (why)
		return drop(why, arg);

	fib.ifindex = skb->ifindex;
	fib.tbid = vpc->table;
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), BPF_FIB_LOOKUP_DIRECT | BPF_FIB_LOOKUP_TBID);
	fwd_if = fib.ifindex;
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH) {
		/* Resolve the VPC table's next hop (fib holds it now), not what
		 * the main table says: e.g. any address of a pod's delegated
		 * block, which has no permanent neighbour of its own. */
		struct bpf_redir_neigh nh = { .nh_family = fib.family };

		if (fib.family == AF_INET)
			nh.ipv4_nh = fib.ipv4_dst;
		else
			__builtin_memcpy(nh.ipv6_nh, fib.ipv6_dst, 16);
		count_decap((__u32)arg, skb->len);
		return bpf_redirect_neigh(fwd_if, &nh, sizeof(nh), 0);
	}
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return drop(GBPF_DROP_FIB, arg);
	eth = pkt_ptr(skb, 0, sizeof(*eth));
	if (!eth)
		return drop(GBPF_DROP_ADJUST, arg);
	__builtin_memcpy(eth->h_dest, fib.dmac, 6);
	__builtin_memcpy(eth->h_source, fib.smac, 6);
	count_decap((__u32)arg, skb->len);
	/* A pod's host veth: skip its backlog and land in the pod directly. */
	if (bpf_map_lookup_elem(&gbpf_ifaces, &fwd_if))
		return bpf_redirect_peer(fwd_if, 0);
	return bpf_redirect(fwd_if, 0);
}

SEC("tc")
int galactic_encap(struct __sk_buff *skb)
{
	struct gbpf_route_key key = {};
	struct inner_info ii = {};
	const struct gbpf_iface *ifc;
	const struct gbpf_route *rt;
	const struct gbpf_cfg *cfg;
	__u32 ifindex = skb->ifindex, zero = 0, arg;
	__u8 src[16], sid[16];
	__u32 len;
	int why, verdict;

	ifc = bpf_map_lookup_elem(&gbpf_ifaces, &ifindex);
	if (!ifc || !(ifc->flags & GBPF_IFACE_VALID))
		return TC_ACT_OK;
	arg = ifc->arg;
	if (route_key(skb, (__u16)arg, &key, &ii))
		return TC_ACT_OK; /* ARP, ND-less L2 and the like: kernel */
	rt = bpf_map_lookup_elem(&gbpf_routes, &key);
	if (!rt)
		return TC_ACT_OK; /* not remote: the VPC table decides */
	if (rt->flags & GBPF_RT_LOCAL) {
		count_local(arg);
		return TC_ACT_OK;
	}
	if (rt->flags & GBPF_RT_SHARD) {
		/* this node's shard: its decap's VPC context, then the kernel's NAT */
		skb->mark = (skb->mark & ~GBPF_MARK_MASK) | GBPF_MARK_SHARD | arg;
		count_encap(arg, skb->len);
		return TC_ACT_OK;
	}
	if (ii.hop_limit <= 1)
		return TC_ACT_OK; /* the kernel sends time-exceeded */
	cfg = bpf_map_lookup_elem(&gbpf_cfg, &zero);
	if (!cfg || !(cfg->flags & GBPF_CFG_VALID))
		return drop(GBPF_DROP_NO_CFG, arg);
	if (skb->len < ETH_HLEN + (__u32)ii.len)
		return drop(GBPF_DROP_MALFORMED_INNER, arg);
	__builtin_memcpy(src, cfg->src, 16);
	__builtin_memcpy(sid, rt->sid, 16);
	if (inner_forward(skb, &ii))
		return drop(GBPF_DROP_MALFORMED_INNER, arg);
	why = push_outer(skb, &ii, src, sid);
	if (why)
		return drop(why, arg);
	len = skb->len;
	verdict = send_outer(skb, rt, src, arg);
	if (verdict == TC_ACT_REDIRECT)
		count_encap(arg, len); /* a drop is counted as such, not twice */
	return verdict;
}

/* Preflight: does bpf_fib_lookup take a table id here? Returns its rc. */
SEC("tc")
int galactic_probe_fib(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};

	fib.family = AF_INET6;
	fib.ifindex = skb->ifindex;
	fib.tbid = 254;
	return (int)bpf_fib_lookup(skb, &fib, sizeof(fib), BPF_FIB_LOOKUP_DIRECT | BPF_FIB_LOOKUP_TBID);
}

/* Preflight: does the kernel take the decap room adjustment (IPv6 -> IPv4)? */
SEC("tc")
int galactic_probe_adj(struct __sk_buff *skb)
{
	return (int)bpf_skb_adjust_room(skb, -IP6_HLEN, BPF_ADJ_ROOM_MAC,
					BPF_F_ADJ_ROOM_FIXED_GSO | BPF_F_ADJ_ROOM_DECAP_L3_IPV4);
}

/*
 * Next-hop resolution for user space (test run in the node's netns): the
 * packet carries an IPv6 header toward a SID; the program writes
 * {rc, ifindex, smac, dmac} after it, so the loader can precompute L2.
 */
SEC("tc")
int galactic_resolve(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};
	struct ipv6hdr *ip6 = pkt_ptr(skb, ETH_HLEN, sizeof(*ip6));
	struct gbpf_resolved *out = pkt_ptr(skb, ETH_HLEN + IP6_HLEN, sizeof(*out));
	long rc;

	if (!ip6 || !out)
		return -1;
	fib.family = AF_INET6;
	fib.ifindex = skb->ifindex;
	__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
	__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), BPF_FIB_LOOKUP_OUTPUT);
	out->rc = (__s32)rc;
	out->ifindex = fib.ifindex;
	__builtin_memcpy(out->smac, fib.smac, 6);
	__builtin_memcpy(out->dmac, fib.dmac, 6);
	__builtin_memcpy(out->nh, fib.ipv6_dst, 16);
	return 0;
}
