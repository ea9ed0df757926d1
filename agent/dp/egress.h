/*
 * The egress shard's translator on its node (docs/dataplane-egress.md).
 *
 * A shard serves every VPC of its node that declares internet egress. Each
 * VPC reaches the shard through its own pair of SIDs derived from the
 * shard's SID (gde_vpc_sid): the VPC's 12-bit node-local argument rides in
 * bytes 10-11 of the shard SID, behind a function nibble naming the inner
 * family (0xC: IPv6 inner, End.DX6; 0xD: IPv4 inner, End.DX4). The SID a
 * packet arrives on is therefore its VPC context: the nftables program this
 * module renders marks the packet from the outer destination before decap,
 * sets the flow's conntrack zone (original direction only) from that mark,
 * translates the source to the shard's address and remembers the VPC in the
 * conntrack mark, so a reply (one default zone: the shard address is unique)
 * is un-translated and routed back by `fwmark` into its own VPC's table.
 *
 * Marks (mask GDE_MARK_MASK; the kind in GDE_MARK_KIND, the VPC argument below):
 *   GDE_MARK_OUT | arg    decapsulated toward the internet (rule: main table)
 *   GDE_MARK_REPLY | arg  a reply to VPC arg (rule: the VPC's table)
 *   GDE_MARK_POD | arg    sent by a pod of VPC arg: set at prerouting from
 *                         its host veth (pod steering, dp/steer.h; rule: the
 *                         VPC's table). This program acts only on OUT and
 *                         REPLY marks; on a shard's node a pod's packet is
 *                         marked OUT at its decap (mark_sid) like any other.
 *
 * Pure rendering (gde_render) is separate from applying (gde_nft_apply,
 * libnftables, one atomic transaction), so the text is unit-tested.
 */
#ifndef GALACTIC_AGENT_DP_EGRESS_H
#define GALACTIC_AGENT_DP_EGRESS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GDE_TABLE      "galactic_egress"   /* nftables table (family inet) */
#define GDE_MARK_OUT   0x100000u
#define GDE_MARK_REPLY 0x200000u
#define GDE_MARK_POD   0x300000u
#define GDE_MARK_KIND  0x300000u
#define GDE_MARK_MASK  0x300fffu
#define GDE_FN_V6      0xC                 /* IPv6 inner: End.DX6 */
#define GDE_FN_V4      0xD                 /* IPv4 inner: End.DX4 */
#define GDE_VPCS_MAX   0xFFF

struct gde_shard {
	struct in6_addr sid;        /* spec.shardSID: bytes 10-15 must be zero */
	struct in6_addr addr6;      /* shardAddressIPv6 */
	bool have_v4;
	struct in_addr addr4;       /* shardAddressIPv4 (have_v4) */
	char oif[16];               /* the internet-facing device (translated on output there) */
};

struct gde_vpc {
	uint16_t arg;               /* the VPC's node-local argument (1..0xFFF) = its zone */
	uint32_t table;             /* the VPC's routing table (replies) */
};

/* The SID through which VPC arg reaches the shard for inner family af. */
int gde_vpc_sid(const struct in6_addr *shard_sid, int af, uint16_t arg, struct in6_addr *out);
/* 0, or -EINVAL with err naming the field. */
int gde_validate_shard(const struct gde_shard *s, char *err, size_t errlen);
/*
 * The whole nftables program (one transaction: the table is replaced as a
 * unit, so a re-render never leaves a half-updated translator). *out is
 * malloc'd. VPCs must have unique args in 1..0xFFF. 0 or -errno with err.
 */
int gde_render(const struct gde_shard *s, const struct gde_vpc *v, size_t n, char **out,
	       char *err, size_t errlen);
/* The program that removes the table (no error when it is absent). */
const char *gde_render_remove(void);
/* Runs an nftables program through libnftables in the caller's netns. 0 or -errno with err. */
int gde_nft_apply(const char *text, char *err, size_t errlen);
/*
 * The table as the kernel holds it, listed without counter values
 * (libnftables, stateless output): what a read-back compares with the
 * listing taken right after the last apply, so a rule, chain, map element
 * or counter changed, added or removed behind the agent is drift. *out is
 * malloc'd. 0, -ENOENT (no table) or -errno with err.
 */
int gde_nft_list(char **out, char *err, size_t errlen);
/* Reads one counter of the table (e.g. "snat6"): packets, or -errno. */
long gde_nft_counter(const char *name, char *err, size_t errlen);

#endif
