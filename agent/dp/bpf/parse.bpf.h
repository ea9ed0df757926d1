/* Bounds-checked header access for TC programs. */
#ifndef GALACTIC_DP_BPF_PARSE_BPF_H
#define GALACTIC_DP_BPF_PARSE_BPF_H

#define ETH_P_IP     0x0800
#define ETH_P_IPV6   0x86DD
#define AF_INET      2
#define AF_INET6     10
#define TC_ACT_OK    0
#define TC_ACT_SHOT  2
#define TC_ACT_REDIRECT 7
#define IPPROTO_IPIP 4
#define IPPROTO_IPV6 41
#define IPPROTO_ROUTING 43
#define ETH_HLEN     14
#define IP6_HLEN     40

/* Pointer to len bytes at offset off of the linear data, or NULL. */
static __always_inline void *pkt_ptr(struct __sk_buff *skb, __u32 off, __u32 len)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;

	if (data + off + len > end)
		return NULL;
	return data + off;
}

static __always_inline int addr_eq(const __u8 *a, const __u8 *b, int n)
{
#pragma unroll
	for (int i = 0; i < 16; i++)
		if (i < n && a[i] != b[i])
			return 0;
	return 1;
}

/* Incremental checksum update for --ttl (the kernel's ip_decrease_ttl). */
static __always_inline void ip4_decrease_ttl(struct iphdr *ip)
{
	__u32 check = (__u32)ip->check;

	check += (__u32)bpf_htons(0x0100);
	ip->check = (__sum16)(check + (check >= 0xFFFF));
	ip->ttl--;
}

/* Valid IPv4 header checksum over ihl*4 bytes (ihl 5..15). */
static __always_inline int ip4_csum_ok(struct __sk_buff *skb, __u32 off, __u32 ihl)
{
	__u16 w[30];
	__u32 sum = 0, len = (ihl & 0xf) * 4;

	/* Copy out: a variable-length walk over packet pointers upsets the verifier. */
	if (len < 20 || bpf_skb_load_bytes(skb, off, w, len))
		return 0;
	for (__u32 i = 0; i < 30; i++)
		if (i < len / 2)
			sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

#endif
