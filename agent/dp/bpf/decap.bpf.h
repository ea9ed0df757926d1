/* Decap: our uSID -> strip the outer IPv6 header -> fib lookup in the VPC table. */
#ifndef GALACTIC_DP_BPF_DECAP_BPF_H
#define GALACTIC_DP_BPF_DECAP_BPF_H

#include "agent/dp/bpf/counters.bpf.h"
#include "agent/dp/bpf/parse.bpf.h"

/*
 * SID argument if daddr is block:node:E<arg> of this node, -1 when the SID is
 * not ours or names another function (those stay with the kernel).
 */
static __always_inline int sid_arg(const struct gbpf_cfg *cfg, const __u8 *daddr)
{
	if (!addr_eq(daddr, cfg->block, 6) || daddr[6] != cfg->node_id[0] ||
	    daddr[7] != cfg->node_id[1])
		return -1;
	if ((daddr[8] >> 4) != GBPF_SID_FUNC_DT)
		return -1;
	return ((daddr[8] & 0x0f) << 8) | daddr[9];
}

/*
 * Checks the inner header of a reduced encap (payload_len bytes after the
 * outer header) and fills the fib lookup; returns 0 or a GBPF_DROP_* reason.
 */
static __always_inline int inner_check(struct __sk_buff *skb, __u8 nexthdr, __u16 payload_len,
				       struct bpf_fib_lookup *fib)
{
	const __u32 off = ETH_HLEN + IP6_HLEN;

	if (nexthdr == IPPROTO_IPV6) {
		struct ipv6hdr *in = pkt_ptr(skb, off, sizeof(*in));

		if (!in || in->version != 6 ||
		    (__u32)bpf_ntohs(in->payload_len) + IP6_HLEN != payload_len)
			return GBPF_DROP_MALFORMED_INNER;
		if (in->hop_limit <= 1)
			return GBPF_DROP_TTL;
		fib->family = AF_INET6;
		fib->flowinfo = *(__be32 *)in & bpf_htonl(0x0FFFFFFF);
		fib->l4_protocol = in->nexthdr;
		__builtin_memcpy(fib->ipv6_src, &in->saddr, 16);
		__builtin_memcpy(fib->ipv6_dst, &in->daddr, 16);
		return 0;
	}
	if (nexthdr == IPPROTO_IPIP) {
		struct iphdr *in = pkt_ptr(skb, off, sizeof(*in));

		if (!in || in->version != 4 || in->ihl < 5 ||
		    bpf_ntohs(in->tot_len) != payload_len || (__u32)in->ihl * 4 > payload_len ||
		    !ip4_csum_ok(skb, off, in->ihl))
			return GBPF_DROP_MALFORMED_INNER;
		if (in->ttl <= 1)
			return GBPF_DROP_TTL;
		fib->family = AF_INET;
		fib->tos = in->tos;
		fib->l4_protocol = in->protocol;
		fib->ipv4_src = in->saddr;
		fib->ipv4_dst = in->daddr;
		return 0;
	}
	return GBPF_DROP_BAD_NEXTHDR;
}

/* Removes the outer IPv6 header and fixes the L2 type; 0 or a drop reason. */
static __always_inline int strip_outer(struct __sk_buff *skb, __u8 nexthdr)
{
	__u64 flags = BPF_F_ADJ_ROOM_FIXED_GSO; /* the inner MSS does not change */
	struct ethhdr *eth;

	if (nexthdr == IPPROTO_IPIP)
		flags |= BPF_F_ADJ_ROOM_DECAP_L3_IPV4; /* sets skb->protocol */
	if (bpf_skb_adjust_room(skb, -IP6_HLEN, BPF_ADJ_ROOM_MAC, flags))
		return GBPF_DROP_ADJUST;
	eth = pkt_ptr(skb, 0, sizeof(*eth));
	if (!eth)
		return GBPF_DROP_ADJUST;
	eth->h_proto = bpf_htons(nexthdr == IPPROTO_IPIP ? ETH_P_IP : ETH_P_IPV6);
	return 0;
}

/* The forwarding step after decap: --ttl like a router. */
static __always_inline int inner_dec_ttl(struct __sk_buff *skb, __u8 nexthdr)
{
	if (nexthdr == IPPROTO_IPV6) {
		struct ipv6hdr *in = pkt_ptr(skb, ETH_HLEN, sizeof(*in));

		if (!in)
			return GBPF_DROP_MALFORMED_INNER;
		in->hop_limit--;
	} else {
		struct iphdr *in = pkt_ptr(skb, ETH_HLEN, sizeof(*in));

		if (!in)
			return GBPF_DROP_MALFORMED_INNER;
		ip4_decrease_ttl(in);
	}
	return 0;
}

#endif
