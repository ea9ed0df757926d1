/*
 * rtnetlink objects: one struct per family, an encoder building a request
 * with libnl's nlmsg/nla_* and a decoder reading a kernel message back into
 * the same struct. decode(encode(x)) == x for every field the encoder writes.
 */
#ifndef GALACTIC_AGENT_NL_OBJECTS_H
#define GALACTIC_AGENT_NL_OBJECTS_H

#include <linux/rtnetlink.h>
#include <net/if.h>

#include "agent/nl/nl.h"

#define GNL_SEGS_MAX 8

/* ---- routes (route.c) ---- */

enum gnl_encap {
	GNL_ENCAP_NONE,
	GNL_ENCAP_SEG6,         /* seg6 encap / encap.red / inline */
	GNL_ENCAP_SEG6LOCAL,
	GNL_ENCAP_OTHER,        /* some other lwtunnel (decoded only) */
};

struct gnl_seg6 {
	int mode;               /* SEG6_IPTUN_MODE_* */
	unsigned nsegs;
	struct in6_addr segs[GNL_SEGS_MAX];     /* in travel order: segs[0] is visited first */
};

struct gnl_seg6local {
	int action;             /* SEG6_LOCAL_ACTION_* */
	uint32_t table;         /* End.DT6 / End.T (0 = absent) */
	uint32_t vrftable;      /* End.DT4 / End.DT46 / End.DT6 in VRF mode (0 = absent) */
	struct in_addr nh4;     /* End.DX4 */
	struct in6_addr nh6;    /* End.DX6 / End.X */
	uint32_t iif, oif;
};

struct gnl_route {
	int family;
	struct gnl_addr dst;    /* dst.len = prefix length; family 0 = default */
	uint32_t table;
	uint8_t protocol, scope, type;
	uint32_t oif;
	struct gnl_addr gw;
	uint32_t priority;      /* metric */
	enum gnl_encap encap;
	struct gnl_seg6 seg6;
	struct gnl_seg6local s6l;
};

/* cmd: RTM_NEWROUTE/RTM_DELROUTE; flags: NLM_F_CREATE|NLM_F_EXCL|NLM_F_REPLACE... */
int gnl_route_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_route *r);
int gnl_route_parse(const struct nlmsghdr *h, struct gnl_route *r);
/* Dump request for one family (AF_UNSPEC = all); table 0 = all tables. */
int gnl_route_dump_msg(struct nl_msg **out, int family, uint32_t table);
/* Same destination, table, metric (the kernel's identity of a route). */
bool gnl_route_same_key(const struct gnl_route *a, const struct gnl_route *b);
/* Same key and same forwarding (oif, gw, encap, protocol, type). */
bool gnl_route_equal(const struct gnl_route *a, const struct gnl_route *b);
/* "fd00:a::2/128 table 16385 encap seg6 mode encap.red segs [fcbb:..]" */
char *gnl_route_str(const struct gnl_route *r, char *buf, size_t n);
const char *gnl_seg6local_action_str(int action);

/* ---- policy rules (rule.c) ---- */

struct gnl_rule {
	int family;
	uint32_t priority;
	uint32_t table;
	uint8_t action;         /* FR_ACT_TO_TBL default */
	uint8_t protocol;
	char iifname[IFNAMSIZ];
	char oifname[IFNAMSIZ];
	uint32_t fwmark, fwmask;    /* 0/0 = no fwmark selector */
	struct gnl_addr dst;        /* `to` selector (family 0 = none; dst.len = prefix length) */
};

int gnl_rule_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_rule *r);
int gnl_rule_parse(const struct nlmsghdr *h, struct gnl_rule *r);
int gnl_rule_dump_msg(struct nl_msg **out, int family);
bool gnl_rule_equal(const struct gnl_rule *a, const struct gnl_rule *b);
char *gnl_rule_str(const struct gnl_rule *r, char *buf, size_t n);

/* ---- neighbours (neigh.c) ---- */

struct gnl_neigh {
	int family;
	uint32_t ifindex;
	struct gnl_addr dst;
	uint8_t lladdr[6];
	bool has_lladdr;
	uint16_t state;         /* NUD_* */
	uint8_t flags;
	uint8_t protocol;
	uint32_t flags_ext;     /* NDA_FLAGS_EXT (NTF_EXT_MANAGED: the kernel keeps it resolved) */
};

/* state 0 means NUD_PERMANENT, except for a managed entry (NTF_EXT_MANAGED), where it is NUD_NONE. */
int gnl_neigh_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_neigh *n);
int gnl_neigh_parse(const struct nlmsghdr *h, struct gnl_neigh *n);
int gnl_neigh_dump_msg(struct nl_msg **out, int family);
char *gnl_neigh_str(const struct gnl_neigh *n, char *buf, size_t len);

/* ---- addresses (addr.c) ---- */

struct gnl_ifaddr {
	int family;
	uint32_t ifindex;
	struct gnl_addr addr;   /* addr.len = prefix length */
	uint8_t scope;
	uint32_t flags;         /* IFA_F_* */
	uint8_t protocol;       /* IFA_PROTO */
};

int gnl_ifaddr_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_ifaddr *a);
int gnl_ifaddr_parse(const struct nlmsghdr *h, struct gnl_ifaddr *a);
int gnl_ifaddr_dump_msg(struct nl_msg **out, int family);
char *gnl_ifaddr_str(const struct gnl_ifaddr *a, char *buf, size_t n);

/* ---- links (link.c) ---- */

struct gnl_link {
	uint32_t ifindex;
	char name[IFNAMSIZ];
	char kind[16];          /* "veth", "vrf", "bridge"... ("" = unknown/none) */
	uint32_t mtu;           /* 0 = absent */
	uint32_t flags;         /* IFF_* */
	uint32_t change;        /* IFF_* bits of flags to change (encode only) */
	uint32_t master;        /* 0 = none */
	int netns_fd;           /* move to this netns (encode only; -1 = none) */
	uint32_t vrf_table;     /* kind "vrf" */
	char peer[IFNAMSIZ];    /* kind "veth": peer name (encode only) */
	int peer_netns_fd;      /* veth peer created in this netns (-1 = same) */
	uint8_t addr[6];
	bool has_addr;
	/* IPv6 addr_gen_mode none (encode only, not on create: the kernel has
	 * no IPv6 state for a link before it exists): no link-local of its own,
	 * so no duplicate address detection, whose completion walks the whole
	 * IPv6 FIB of the namespace (fib6_flush_trees) about a second later */
	bool addrgen_none;
};

void gnl_link_init(struct gnl_link *l);
/* RTM_NEWLINK with NLM_F_CREATE creates (veth, vrf); without it, sets attributes of ifindex/name. */
int gnl_link_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_link *l);
int gnl_link_parse(const struct nlmsghdr *h, struct gnl_link *l);
int gnl_link_dump_msg(struct nl_msg **out);
/* Convenience wrappers (one round trip each). */
int gnl_link_get(struct gnl_sock *s, const char *name, struct gnl_link *l);
int gnl_veth_add(struct gnl_sock *s, const char *name, const char *peer, int peer_netns_fd,
		 char *ext, size_t extlen);
/* The same, both ends created with mtu (0: the default): setting it later
 * walks the whole IPv6 FIB on the host side (rt6_mtu_change). */
int gnl_veth_add_mtu(struct gnl_sock *s, const char *name, const char *peer, int peer_netns_fd, uint32_t mtu,
		     char *ext, size_t extlen);
int gnl_link_set(struct gnl_sock *s, const struct gnl_link *l, char *ext, size_t extlen);
/* Sets ifindex up, with mtu when it is not 0 (one request). */
int gnl_link_up(struct gnl_sock *s, uint32_t ifindex, uint32_t mtu, char *ext, size_t extlen);
/* The same request, built (for a batch). */
int gnl_link_up_msg(struct nl_msg **out, uint32_t ifindex, uint32_t mtu);
int gnl_link_del(struct gnl_sock *s, const char *name, char *ext, size_t extlen);
int gnl_vrf_add(struct gnl_sock *s, const char *name, uint32_t table, char *ext, size_t extlen);
/*
 * Ensures a clsact qdisc on ifindex (0 when it is there already). Created
 * with the interface, before traffic, so attaching TC programs later (the
 * bpf backend) never replaces a qdisc under live packets.
 */
int gnl_clsact_add(struct gnl_sock *s, uint32_t ifindex, char *ext, size_t extlen);

#endif
