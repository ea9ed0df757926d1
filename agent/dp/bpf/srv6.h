/*
 * Map keys and values shared by the TC programs (srv6.bpf.c) and the loader
 * (bpf_dp.c). Plain fixed-width types only, so both sides agree byte for byte.
 *
 * Layout version: bump GBPF_BPF_LAYOUT whenever a key, value, map type or size
 * below changes. Maps are pinned under <bpffs>/galactic/v<LAYOUT>/; a loader
 * finding another version rebuilds the maps from its own desired state and
 * removes the old directory (see docs/dataplane-bpf.md).
 */
#ifndef GALACTIC_DP_BPF_SRV6_H
#define GALACTIC_DP_BPF_SRV6_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define GBPF_BPF_LAYOUT 1

/* 12-bit SID argument: the VPC's table index on this node (DESIGN §3.2). */
#define GBPF_MAX_ARG      4096
#define GBPF_SID_FUNC_DT  0xE   /* End.DT46-like decap into a VPC */
#define GBPF_MAX_IFACES   8192
#define GBPF_MAX_ROUTES   262144

#define GBPF_AF_INET  4
#define GBPF_AF_INET6 6

/* cfg map, one entry: who this node is. */
struct gbpf_cfg {
	__u8 block[6];      /* SID block (locator /48) */
	__u8 node_id[2];    /* node ID, network order, as it appears in SIDs */
	__u8 src[16];       /* outer source address for encap */
	__u32 flags;        /* GBPF_CFG_* */
	__u32 pad;
};
#define GBPF_CFG_VALID 1u

/* vpcs map, indexed by SID argument. */
struct gbpf_vpc {
	__u32 table;        /* kernel routing table for bpf_fib_lookup after decap */
	__u32 flags;        /* GBPF_VPC_* */
};
#define GBPF_VPC_VALID 1u

/* ifaces map: host veth ifindex -> its attachment's VPC. */
struct gbpf_iface {
	__u16 arg;          /* VPC (its SID argument on this node) */
	__u16 flags;        /* GBPF_IFACE_* */
	__u32 pad;
};
#define GBPF_IFACE_VALID 1u

/*
 * routes map (LPM trie): destination prefix within a VPC. prefixlen counts
 * bits of everything after it: 32 bits of (arg, family, pad) then the
 * address bits, so prefixlen = 32 + address prefix length.
 */
struct gbpf_route_key {
	__u32 prefixlen;
	__u16 arg;          /* network order, so the trie compares it as bytes */
	__u8 family;        /* GBPF_AF_INET / GBPF_AF_INET6 */
	__u8 pad;
	__u8 addr[16];      /* IPv4 addresses use the first 4 bytes */
};
#define GBPF_ROUTE_KEY_BITS 32

struct gbpf_route {
	__u8 sid[16];       /* remote SID (outer destination) */
	__u32 ifindex;      /* precomputed egress (uplink); 0 = use fib lookup */
	__u8 smac[6];
	__u8 dmac[6];
	__u32 flags;        /* GBPF_RT_* */
};
#define GBPF_RT_LOCAL 1u     /* destination on this node: hand to the kernel */
#define GBPF_RT_L2    2u     /* ifindex/smac/dmac are valid */
/*
 * The VPC's default toward this node's own egress shard (sid = the VPC's
 * shard SID, docs/dataplane-egress.md): the program does the shard SID's
 * decap step in place (no outer header to push and strip on the same node)
 * and hands the packet to the kernel marked GBPF_MARK_SHARD | arg, the mark
 * the shard's decap gives it: routed by the main table, NATed by the
 * shard's nftables translator in the VPC's conntrack zone.
 */
#define GBPF_RT_SHARD 4u
#define GBPF_MARK_SHARD 0x100000u  /* = GDE_MARK_OUT (agent/dp/egress.h) */
#define GBPF_MARK_MASK  0x300fffu  /* = GDE_MARK_MASK */

/* galactic_resolve's answer (written into the test-run packet). */
struct gbpf_resolved {
	__s32 rc;           /* BPF_FIB_LKUP_RET_* */
	__u32 ifindex;
	__u8 smac[6];
	__u8 dmac[6];
	__u8 nh[16];        /* the next hop (gateway, else the SID); set on success and NO_NEIGH */
};

/* Per-VPC counters (per-CPU array indexed by SID argument). */
struct gbpf_vpc_stats {
	__u64 decap_pkts, decap_bytes;
	__u64 encap_pkts, encap_bytes;
	__u64 local_pkts;   /* encap side: destination local, passed to the kernel */
	__u64 drop_pkts;
};

/* Drop reasons (per-CPU array indexed by reason). */
enum gbpf_drop {
	GBPF_DROP_NONE = 0,
	GBPF_DROP_UNKNOWN_ARG,     /* our block+node, argument names no VPC */
	GBPF_DROP_BAD_NEXTHDR,     /* our SID, payload neither IPv6 (41) nor IPv4 (4) */
	GBPF_DROP_MALFORMED_INNER, /* inner header truncated or inconsistent */
	GBPF_DROP_TTL,             /* inner hop limit / TTL exhausted */
	GBPF_DROP_FIB,             /* no route in the VPC table (or unreachable) */
	GBPF_DROP_ADJUST,          /* bpf_skb_adjust_room failed */
	GBPF_DROP_NO_CFG,          /* encap: node config missing */
	GBPF_DROP_ENCAP_FIB,       /* encap: no route toward the remote SID */
	GBPF_DROP_TOO_BIG,         /* encap: outer packet above the uplink MTU (not GSO) */
	GBPF_DROP_MAX
};

#endif
