/*
 * Desired state of one node's data plane, independent of the backend.
 *
 * The CNI attach path and the agent's durable record fill a gdp_state; a
 * backend (kernel or bpf, see backend.h) makes the node match it.
 *
 * SIDs follow DESIGN §3.2 ("uFMT 48+16"):
 *   bytes 0-5  /48 block (locator)      bytes 6-7  node id (0x0001-0xDFFF)
 *   byte 8     function nibble << 4 | arg >> 8
 *   byte 9     arg & 0xff               bytes 10-15 zero
 * Function values used by galactic:
 *   0xE  VPC decap (End.DT6 table <vpc table>; End.DT46 vrftable with VRF),
 *        arg = the VPC's 12-bit node-local number
 *   0xD  End.DX4 toward one attachment, arg = the attachment's number
 *   0xC  End.DX6 toward one attachment, arg = the attachment's number
 * Arg 0 is reserved (never allocated) so a zero arg means "unset".
 *
 * Stability: what is persisted (the record's JSON, agent/record.h) only
 * ever gains fields; these in-memory structs may be re-laid out (struct
 * gdp_remote is packed: 100,000 of them are the agent's largest set).
 */
#ifndef GALACTIC_AGENT_DP_MODEL_H
#define GALACTIC_AGENT_DP_MODEL_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GDP_ID_MAX        63   /* base62 VPC / attachment ids (chars) */
#define GDP_CONTAINER_MAX 127  /* container id (chars) */
#define GDP_IFNAME_MAX    15   /* IFNAMSIZ - 1 */
#define GDP_ADDRS_MAX     8    /* pod addresses per attachment */
#define GDP_ARG_MAX       0xFFF
#define GDP_VPC_PREFIXES_MAX 8

#define GDP_FN_DECAP 0xE
#define GDP_FN_DX4   0xD
#define GDP_FN_DX6   0xC

/* An IPv4 or IPv6 prefix (host addresses have len 32 / 128). */
struct gdp_prefix {
	sa_family_t family;     /* AF_INET or AF_INET6 */
	uint8_t len;
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t raw[16];
	} addr;
};

struct gdp_node {
	uint8_t block[6];       /* /48 SID block */
	uint16_t node_id;       /* 0x0001-0xDFFF */
	char uplink[GDP_IFNAME_MAX + 1]; /* optional: seg6local routes' device (default "lo") */
};

struct gdp_vpc {
	char id[GDP_ID_MAX + 1];        /* base62, as in the CNI config */
	uint16_t arg;                   /* 12-bit node-local number, 1..0xFFF */
	uint32_t table;                 /* kernel routing table (or VRF table) */
	size_t n_prefixes;              /* VPC address ranges; 0 = unrestricted */
	struct gdp_prefix prefixes[GDP_VPC_PREFIXES_MAX];
};

struct gdp_attachment {
	char vpc[GDP_ID_MAX + 1];
	char id[GDP_ID_MAX + 1];
	char container_id[GDP_CONTAINER_MAX + 1];
	char host_ifname[GDP_IFNAME_MAX + 1];
	uint16_t arg;                   /* 12-bit node-local attachment number (DX4/DX6 SIDs) */
	size_t n_addrs;
	struct gdp_prefix addrs[GDP_ADDRS_MAX]; /* pod addresses (host prefixes) */
	struct in_addr nh4;             /* per-attachment link-local next hop for End.DX4 (0 = none) */
	uint8_t pod_mac[6];             /* guest interface MAC (all zero = unknown: no permanent neigh) */
	uint32_t mtu;                   /* host interface MTU (0 = leave as is) */
	unsigned egress;                /* GDP_FAM_*: families declared for internet egress */
	bool guest_addressed;           /* no addresses given: the guest addresses itself; addrs are
					 * those the node learned (agent/cni/learn.h), both gateways stay */
};

/*
 * A prefix of a VPC hosted elsewhere, reached through that node's SID.
 * 40 bytes: the VPC is its interned id (gdp_vpc_intern), not the string
 * (65 of the 104 bytes it was; 6 MiB at 100,000 remotes). Set it with
 * gdp_remote_set_vpc, read it with gdp_remote_vpc; two remotes are of the
 * same VPC when their vpc_ix are equal. A zeroed remote's VPC is "".
 */
struct gdp_remote {
	struct gdp_prefix prefix;
	struct in6_addr sid;
	uint32_t vpc_ix;
};

/*
 * VPC ids interned for the remotes: process-wide, thread-safe, never
 * freed (a node's remotes name the few VPCs it hosts: the learner keeps
 * only those, the record's file holds what the learner gave it). Index 0
 * is "". At most GDP_VPC_NAMES_MAX ids (64 B each); past it -ENOSPC.
 * gdp_vpc_intern: 0 with *ix; -EINVAL when id is longer than GDP_ID_MAX,
 * -ENOSPC, -ENOMEM. gdp_vpc_find: the same without adding (-ENOENT).
 * gdp_vpc_name: the id of ix ("" for an index never given out).
 */
#define GDP_VPC_NAMES_MAX (1u << 20)
int gdp_vpc_intern(const char *id, uint32_t *ix);
int gdp_vpc_find(const char *id, uint32_t *ix);
const char *gdp_vpc_name(uint32_t ix);
/* gdp_vpc_intern's index of an id known to be valid (a constant); 0 ("") when it fails. */
uint32_t gdp_vpc_ix(const char *id);
/* r's VPC id, and setting it (gdp_vpc_intern's errors). */
const char *gdp_remote_vpc(const struct gdp_remote *r);
int gdp_remote_set_vpc(struct gdp_remote *r, const char *vpc_id);

/* Families of an egress declaration (same bits as REC_FAM_* and CNI_FAM_*). */
enum { GDP_FAM_V4 = 1u << 0, GDP_FAM_V6 = 1u << 1 };

/*
 * The node's own egress shard (docs/dataplane-egress.md), as the agent last
 * learned it from the EgressShard whose targetRef names the node. When set,
 * the backend programs the shard (decap of its per-VPC SIDs, the nftables
 * translator) and gives every VPC with an egress-declaring attachment a
 * default route toward it.
 */
struct gdp_egress {
	bool have;
	struct in6_addr sid;            /* spec.shardSID (bytes 10-15 zero) */
	struct in6_addr addr6;          /* shardAddressIPv6 */
	bool have_v4;
	struct in_addr addr4;           /* shardAddressIPv4 */
	char oif[GDP_IFNAME_MAX + 1];   /* internet-facing device; empty = the node's uplink */
	/*
	 * Set by the bpf backend on the state it hands the kernel backend: its
	 * trie routes the VPCs toward the shard (GBPF_RT_SHARD), so the kernel
	 * programs the shard only (End.DX SIDs, rules, addresses, nftables) and
	 * the VPC tables keep their unreachable default.
	 */
	bool shard_only;
};

struct gdp_state {
	struct gdp_node node;
	struct gdp_vpc *vpcs;
	size_t n_vpcs, cap_vpcs;
	struct gdp_attachment *atts;
	size_t n_atts, cap_atts;
	struct gdp_remote *remotes;
	size_t n_remotes, cap_remotes;
	struct gdp_egress egress;
};

void gdp_state_init(struct gdp_state *s);
void gdp_state_free(struct gdp_state *s);
/* Deep copy; returns 0 or -ENOMEM. */
int gdp_state_copy(struct gdp_state *dst, const struct gdp_state *src);

/* Append (copies the object); -ENOMEM on allocation failure. No validation here. */
int gdp_state_add_vpc(struct gdp_state *s, const struct gdp_vpc *v);
int gdp_state_add_attachment(struct gdp_state *s, const struct gdp_attachment *a);
int gdp_state_add_remote(struct gdp_state *s, const struct gdp_remote *r);
/*
 * Room for cap remotes in one allocation (a loader's upper bound: pages
 * never written stay unresident), so 100,000 parsed remotes are not
 * grown by doubling through copies. -ENOMEM.
 */
int gdp_state_reserve_remotes(struct gdp_state *s, size_t cap);

const struct gdp_vpc *gdp_state_find_vpc(const struct gdp_state *s, const char *vpc_id);
const struct gdp_attachment *gdp_state_find_attachment(const struct gdp_state *s,
						       const char *vpc_id, const char *att_id);

/* SID = block | node | fn << 12 | arg. */
void gdp_sid(const struct gdp_node *n, unsigned fn, uint16_t arg, struct in6_addr *out);
/* Decodes a SID of this format; returns 0 and fills node/fn/arg, or -EINVAL. */
int gdp_sid_parse(const struct in6_addr *sid, uint8_t block[6], uint16_t *node_id,
		  unsigned *fn, uint16_t *arg);
/* Default per-attachment End.DX4 next hop: 169.254.(16 + arg/256).(arg%256). */
struct in_addr gdp_default_nh4(uint16_t arg);

/* Prefix helpers. gdp_prefix_parse accepts "addr" (host) or "addr/len". */
int gdp_prefix_parse(const char *s, struct gdp_prefix *p);
/* Writes "addr/len" into buf (at least 50 bytes). Returns buf. */
char *gdp_prefix_str(const struct gdp_prefix *p, char *buf, size_t len);
bool gdp_prefix_contains(const struct gdp_prefix *outer, const struct gdp_prefix *inner);
bool gdp_prefix_equal(const struct gdp_prefix *a, const struct gdp_prefix *b);

/*
 * Validates one object against the node and the rest of the state.
 * Returns 0, or -EINVAL / -EEXIST with a message naming the object in err.
 * gdp_validate_remote does not look for duplicate remotes (the backend does,
 * with a hash). The reconciler drops invalid objects (and what depends on them) and keeps
 * programming the rest.
 */
int gdp_validate_node(const struct gdp_node *n, char *err, size_t errlen);
int gdp_validate_vpc(const struct gdp_state *s, size_t idx, char *err, size_t errlen);
int gdp_validate_attachment(const struct gdp_state *s, size_t idx, char *err, size_t errlen);
int gdp_validate_remote(const struct gdp_state *s, size_t idx, char *err, size_t errlen);

/*
 * The attachments' addresses of one state, sorted by (vpc, prefix), for
 * validating many remotes: gdp_validate_remote_in gives gdp_validate_remote's
 * verdict and message (the attachment named is the first in s->atts, as
 * there) in O(log addresses) instead of a scan of every attachment. Starts
 * zeroed ({ 0 }), is built by the first gdp_validate_remote_in call (out of
 * memory: that call and the next scan, as gdp_validate_remote does), is
 * valid while s's attachments are not changed, and is freed by
 * gdp_locals_free.
 */
struct gdp_local_addr;
struct gdp_locals {
	struct gdp_local_addr *v;
	size_t n;
	int built; /* 0 not yet, 1 built, -1 could not be (scan) */
};
int gdp_validate_remote_in(const struct gdp_state *s, struct gdp_locals *lx, size_t idx, char *err,
			   size_t errlen);
void gdp_locals_free(struct gdp_locals *lx);

#endif
