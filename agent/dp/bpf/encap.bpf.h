/* Encap: LPM lookup within the VPC -> push reduced-encap outer IPv6 -> L2 + redirect. */
#ifndef GALACTIC_DP_BPF_ENCAP_BPF_H
#define GALACTIC_DP_BPF_ENCAP_BPF_H

#include "agent/dp/bpf/counters.bpf.h"
#include "agent/dp/bpf/parse.bpf.h"

#define OUTER_HOP_LIMIT 64

/*
 * What the inner header tells the outer one, taken before the packet moves.
 * Mirrors the kernel's seg6 encap defaults (seg6_flowlabel=0): an IPv6 inner
 * lends its traffic class, flow label and hop limit; IPv4 gets 0/0/64.
 */
struct inner_info {
	__be32 flow;     /* version/tclass/flowlabel word of the outer header */
	__u8 hop_limit;
	__u8 nexthdr;
	__u16 len;       /* inner packet length */
};

/* Fills the route key from the inner destination; 0 or -1 if not IP. */
static __always_inline int route_key(struct __sk_buff *skb, __u16 arg, struct gbpf_route_key *k,
				     struct inner_info *ii)
{
	struct ethhdr *eth = pkt_ptr(skb, 0, sizeof(*eth));

	if (!eth)
		return -1;
	k->arg = bpf_htons(arg);
	k->pad = 0;
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip = pkt_ptr(skb, ETH_HLEN, sizeof(*ip));

		if (!ip)
			return -1;
		k->prefixlen = GBPF_ROUTE_KEY_BITS + 128;
		k->family = GBPF_AF_INET6;
		__builtin_memcpy(k->addr, &ip->daddr, 16);
		ii->flow = (*(__be32 *)ip & bpf_htonl(0x0FFFFFFF)) | bpf_htonl(0x60000000);
		ii->hop_limit = ip->hop_limit;
		ii->nexthdr = IPPROTO_IPV6;
		ii->len = (__u16)(bpf_ntohs(ip->payload_len) + IP6_HLEN);
		return 0;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = pkt_ptr(skb, ETH_HLEN, sizeof(*ip));

		if (!ip)
			return -1;
		k->prefixlen = GBPF_ROUTE_KEY_BITS + 32;
		k->family = GBPF_AF_INET;
		__builtin_memset(k->addr, 0, 16);
		__builtin_memcpy(k->addr, &ip->daddr, 4);
		ii->flow = bpf_htonl(0x60000000);
		ii->hop_limit = ip->ttl;
		ii->nexthdr = IPPROTO_IPIP;
		ii->len = bpf_ntohs(ip->tot_len);
		return 0;
	}
	return -1;
}

/* Inner --ttl (this node forwards the packet), before it is wrapped. */
static __always_inline int inner_forward(struct __sk_buff *skb, struct inner_info *ii)
{
	if (ii->nexthdr == IPPROTO_IPV6) {
		struct ipv6hdr *ip = pkt_ptr(skb, ETH_HLEN, sizeof(*ip));

		if (!ip)
			return -1;
		ip->hop_limit--;
		ii->hop_limit = ip->hop_limit;
	} else {
		struct iphdr *ip = pkt_ptr(skb, ETH_HLEN, sizeof(*ip));

		if (!ip)
			return -1;
		ip4_decrease_ttl(ip);
		ii->hop_limit = OUTER_HOP_LIMIT;
	}
	return 0;
}

/* Grows room for the outer header and writes it; 0 or a drop reason. */
static __always_inline int push_outer(struct __sk_buff *skb, const struct inner_info *ii,
				      const __u8 *src, const __u8 *sid)
{
	struct ethhdr *eth;
	struct ipv6hdr *o;

	/* ENCAP_L3_IPV6 also sets skb->protocol and the GSO type for IPv4 inner. */
	if (bpf_skb_adjust_room(skb, IP6_HLEN, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_ENCAP_L3_IPV6))
		return GBPF_DROP_ADJUST;
	eth = pkt_ptr(skb, 0, sizeof(*eth));
	o = pkt_ptr(skb, ETH_HLEN, sizeof(*o));
	if (!eth || !o)
		return GBPF_DROP_ADJUST;
	eth->h_proto = bpf_htons(ETH_P_IPV6);
	*(__be32 *)o = ii->flow;
	o->payload_len = bpf_htons(ii->len);
	o->nexthdr = ii->nexthdr;
	o->hop_limit = ii->hop_limit;
	__builtin_memcpy(&o->saddr, src, 16);
	__builtin_memcpy(&o->daddr, sid, 16);
	return 0;
}

/*
 * Sends the encapsulated packet: precomputed L2 when the route has it,
 * otherwise a main-table fib lookup of the SID (neighbour resolution by the
 * kernel when the entry is missing). Returns a TC verdict.
 */
static __always_inline int send_outer(struct __sk_buff *skb, const struct gbpf_route *rt,
				      const __u8 *src, __u32 arg)
{
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth;
	long rc;

	if (rt->flags & GBPF_RT_L2) {
		__u32 mtu = 0;

		/* The uplink would drop it silently: count it instead (GSO passes). */
		if (bpf_check_mtu(skb, rt->ifindex, &mtu, 0, 0))
			return drop(GBPF_DROP_TOO_BIG, arg);
		eth = pkt_ptr(skb, 0, sizeof(*eth));
		if (!eth)
			return drop(GBPF_DROP_ADJUST, arg);
		__builtin_memcpy(eth->h_dest, rt->dmac, 6);
		__builtin_memcpy(eth->h_source, rt->smac, 6);
		return bpf_redirect(rt->ifindex, 0);
	}
	fib.family = AF_INET6;
	fib.ifindex = skb->ifindex;
	fib.l4_protocol = IPPROTO_IPV6;
	/* tot_len 0: the kernel checks the MTU itself, GSO-aware */
	__builtin_memcpy(fib.ipv6_src, src, 16);
	__builtin_memcpy(fib.ipv6_dst, rt->sid, 16);
	rc = bpf_fib_lookup(skb, &fib, sizeof(fib), BPF_FIB_LOOKUP_OUTPUT);
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return bpf_redirect_neigh(fib.ifindex, NULL, 0, 0);
	if (rc == BPF_FIB_LKUP_RET_FRAG_NEEDED)
		return drop(GBPF_DROP_TOO_BIG, arg);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return drop(GBPF_DROP_ENCAP_FIB, arg);
	eth = pkt_ptr(skb, 0, sizeof(*eth));
	if (!eth)
		return drop(GBPF_DROP_ADJUST, arg);
	__builtin_memcpy(eth->h_dest, fib.dmac, 6);
	__builtin_memcpy(eth->h_source, fib.smac, 6);
	return bpf_redirect(fib.ifindex, 0);
}

#endif
