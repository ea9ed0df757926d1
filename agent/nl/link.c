/* Links: veth and vrf creation, up/down, MTU, namespace moves. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/if_link.h>
#include <linux/veth.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>

#include "agent/nl/objects.h"

void gnl_link_init(struct gnl_link *l)
{
	memset(l, 0, sizeof(*l));
	l->netns_fd = -1;
	l->peer_netns_fd = -1;
}

/*
 * A veth end with one TX and one RX queue. Without them the kernel
 * allocates and registers a queue (each a sysfs directory) per possible
 * CPU, then veth drops all but one of each (veth_init_queues): work under
 * the RTNL lock that grows with the node's CPUs, for the one queue a veth
 * uses by default anyway.
 */
static int put_one_queue(struct nl_msg *m)
{
	return nla_put_u32(m, IFLA_NUM_TX_QUEUES, 1) < 0 || nla_put_u32(m, IFLA_NUM_RX_QUEUES, 1) < 0 ? -ENOMEM : 0;
}

static int put_linkinfo(struct nl_msg *m, const struct gnl_link *l)
{
	struct nlattr *info, *data, *peer;
	struct ifinfomsg pifi = { .ifi_family = AF_UNSPEC };

	if (!l->kind[0])
		return 0;
	info = nla_nest_start(m, IFLA_LINKINFO);
	if (!info || nla_put_string(m, IFLA_INFO_KIND, l->kind) < 0)
		return -ENOMEM;
	if (!strcmp(l->kind, "veth") && l->peer[0]) {
		data = nla_nest_start(m, IFLA_INFO_DATA);
		peer = data ? nla_nest_start(m, VETH_INFO_PEER) : NULL;
		/* The peer is a full ifinfomsg followed by its own attributes. */
		if (!peer || nlmsg_append(m, &pifi, sizeof(pifi), NLMSG_ALIGNTO) < 0 ||
		    nla_put_string(m, IFLA_IFNAME, l->peer) < 0 || put_one_queue(m) < 0 ||
		    (l->mtu && nla_put_u32(m, IFLA_MTU, l->mtu) < 0) ||
		    (l->peer_netns_fd >= 0 && nla_put_u32(m, IFLA_NET_NS_FD, (uint32_t)l->peer_netns_fd) < 0))
			return -ENOMEM;
		nla_nest_end(m, peer);
		nla_nest_end(m, data);
	} else if (!strcmp(l->kind, "vrf")) {
		data = nla_nest_start(m, IFLA_INFO_DATA);
		if (!data || nla_put_u32(m, IFLA_VRF_TABLE, l->vrf_table) < 0)
			return -ENOMEM;
		nla_nest_end(m, data);
	}
	nla_nest_end(m, info);
	return 0;
}

static int put_addrgen_none(struct nl_msg *m)
{
	struct nlattr *spec = nla_nest_start(m, IFLA_AF_SPEC), *in6;

	in6 = spec ? nla_nest_start(m, AF_INET6) : NULL;
	if (!in6 || nla_put_u8(m, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE) < 0)
		return -ENOMEM;
	nla_nest_end(m, in6);
	nla_nest_end(m, spec);
	return 0;
}

int gnl_link_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_link *l)
{
	struct ifinfomsg ifi = {
		.ifi_family = AF_UNSPEC,
		.ifi_index = (int)l->ifindex,
		.ifi_flags = l->flags,
		.ifi_change = l->change,
	};
	struct nl_msg *m;

	*out = NULL;
	if (!l->ifindex && !l->name[0])
		return -EINVAL;
	m = nlmsg_alloc_simple(cmd, flags);
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    (l->name[0] && nla_put_string(m, IFLA_IFNAME, l->name) < 0) ||
	    (l->mtu && nla_put_u32(m, IFLA_MTU, l->mtu) < 0) ||
	    (l->master && nla_put_u32(m, IFLA_MASTER, l->master) < 0) ||
	    (l->netns_fd >= 0 && nla_put_u32(m, IFLA_NET_NS_FD, (uint32_t)l->netns_fd) < 0) ||
	    (l->has_addr && nla_put(m, IFLA_ADDRESS, 6, l->addr) < 0) ||
	    (l->addrgen_none && put_addrgen_none(m) < 0) ||
	    (cmd == RTM_NEWLINK && (flags & NLM_F_CREATE) && !strcmp(l->kind, "veth") && put_one_queue(m) < 0) ||
	    (cmd == RTM_NEWLINK && (flags & NLM_F_CREATE) && put_linkinfo(m, l) < 0)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

int gnl_link_parse(const struct nlmsghdr *h, struct gnl_link *l)
{
	struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];
	const struct ifinfomsg *ifi;

	gnl_link_init(l);
	if ((h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK) ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return -EINVAL;
	ifi = NLMSG_DATA(h);
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
		return -EINVAL;
	l->ifindex = (uint32_t)ifi->ifi_index;
	l->flags = ifi->ifi_flags;
	if (tb[IFLA_IFNAME]) {
		size_t n = (size_t)nla_len(tb[IFLA_IFNAME]);

		if (n >= IFNAMSIZ)
			n = IFNAMSIZ - 1;
		memcpy(l->name, nla_data(tb[IFLA_IFNAME]), n);
		l->name[n] = 0;
		l->name[strnlen(l->name, n)] = 0;
	}
	if (tb[IFLA_MTU] && nla_len(tb[IFLA_MTU]) == 4)
		l->mtu = nla_get_u32(tb[IFLA_MTU]);
	if (tb[IFLA_MASTER] && nla_len(tb[IFLA_MASTER]) == 4)
		l->master = nla_get_u32(tb[IFLA_MASTER]);
	if (tb[IFLA_ADDRESS] && nla_len(tb[IFLA_ADDRESS]) == 6) {
		memcpy(l->addr, nla_data(tb[IFLA_ADDRESS]), 6);
		l->has_addr = true;
	}
	if (tb[IFLA_LINKINFO] &&
	    nla_parse_nested(li, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL) == 0 && li[IFLA_INFO_KIND]) {
		size_t n = (size_t)nla_len(li[IFLA_INFO_KIND]);

		if (n >= sizeof(l->kind))
			n = sizeof(l->kind) - 1;
		memcpy(l->kind, nla_data(li[IFLA_INFO_KIND]), n);
		l->kind[n] = 0;
		l->kind[strnlen(l->kind, n)] = 0;
		if (!strcmp(l->kind, "vrf") && li[IFLA_INFO_DATA]) {
			struct nlattr *vd[IFLA_VRF_MAX + 1];

			if (nla_parse_nested(vd, IFLA_VRF_MAX, li[IFLA_INFO_DATA], NULL) == 0 &&
			    vd[IFLA_VRF_TABLE] && nla_len(vd[IFLA_VRF_TABLE]) == 4)
				l->vrf_table = nla_get_u32(vd[IFLA_VRF_TABLE]);
		}
	}
	return 0;
}

/* RTM_GETLINK without the counters nobody here reads (kernel 4.20+; older ones ignore the bit). */
static struct nl_msg *getlink_msg(int flags, const char *name)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_GETLINK, flags);

	if (!m)
		return NULL;
	if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0 ||
	    (name && nla_put_string(m, IFLA_IFNAME, name) < 0)) {
		nlmsg_free(m);
		return NULL;
	}
	return m;
}

int gnl_link_dump_msg(struct nl_msg **out)
{
	*out = getlink_msg(NLM_F_DUMP, NULL);
	return *out ? 0 : -ENOMEM;
}

struct get_ctx {
	const char *name;
	struct gnl_link *l;
	int found;
};

static int get_cb(const struct nlmsghdr *h, void *arg)
{
	struct get_ctx *c = arg;
	struct gnl_link l;

	/* by name the kernel also matches an alternative name: only the name itself counts */
	if (gnl_link_parse(h, &l) == 0 && !strcmp(l.name, c->name)) {
		*c->l = l;
		c->found = 1;
	}
	return 0;
}

int gnl_link_get(struct gnl_sock *s, const char *name, struct gnl_link *l)
{
	struct get_ctx c;
	struct nl_msg *m;
	int rc;

	memset(l, 0, sizeof(*l)); /* defined on every return, found or not */
	c = (struct get_ctx){ name, l, 0 };

	if (!name[0] || strlen(name) >= IFNAMSIZ)
		return -ENODEV;
	/* One link by name, not a dump of all: an ADD looks its links up several times. */
	m = getlink_msg(0, name);
	if (!m)
		return -ENOMEM;
	rc = gnl_get(s, m, get_cb, &c);
	nlmsg_free(m);
	if (rc)
		return rc;
	return c.found ? 0 : -ENODEV;
}

static int talk_free(struct gnl_sock *s, struct nl_msg *m, char *ext, size_t extlen)
{
	int rc = gnl_talk(s, m, ext, extlen);

	nlmsg_free(m);
	return rc;
}

int gnl_veth_add(struct gnl_sock *s, const char *name, const char *peer, int peer_netns_fd,
		 char *ext, size_t extlen)
{
	return gnl_veth_add_mtu(s, name, peer, peer_netns_fd, 0, ext, extlen);
}

int gnl_veth_add_mtu(struct gnl_sock *s, const char *name, const char *peer, int peer_netns_fd, uint32_t mtu,
		     char *ext, size_t extlen)
{
	struct gnl_link l;
	struct nl_msg *m;
	int rc;

	gnl_link_init(&l);
	if (strlen(name) >= IFNAMSIZ || strlen(peer) >= IFNAMSIZ)
		return -EINVAL;
	strcpy(l.name, name);
	strcpy(l.kind, "veth");
	strcpy(l.peer, peer);
	l.peer_netns_fd = peer_netns_fd;
	l.mtu = mtu;
	rc = gnl_link_msg(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &l);
	return rc ? rc : talk_free(s, m, ext, extlen);
}

int gnl_vrf_add(struct gnl_sock *s, const char *name, uint32_t table, char *ext, size_t extlen)
{
	struct gnl_link l;
	struct nl_msg *m;
	int rc;

	gnl_link_init(&l);
	if (strlen(name) >= IFNAMSIZ)
		return -EINVAL;
	strcpy(l.name, name);
	strcpy(l.kind, "vrf");
	l.vrf_table = table;
	rc = gnl_link_msg(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &l);
	return rc ? rc : talk_free(s, m, ext, extlen);
}

int gnl_link_set(struct gnl_sock *s, const struct gnl_link *l, char *ext, size_t extlen)
{
	struct nl_msg *m;
	int rc = gnl_link_msg(&m, RTM_NEWLINK, 0, l);

	return rc ? rc : talk_free(s, m, ext, extlen);
}

int gnl_link_up_msg(struct nl_msg **out, uint32_t ifindex, uint32_t mtu)
{
	struct gnl_link l;

	gnl_link_init(&l);
	l.ifindex = ifindex;
	l.mtu = mtu;
	l.flags = IFF_UP;
	l.change = IFF_UP;
	return gnl_link_msg(out, RTM_NEWLINK, 0, &l);
}

int gnl_link_up(struct gnl_sock *s, uint32_t ifindex, uint32_t mtu, char *ext, size_t extlen)
{
	struct nl_msg *m;
	int rc = gnl_link_up_msg(&m, ifindex, mtu);

	return rc ? rc : talk_free(s, m, ext, extlen);
}

int gnl_link_del(struct gnl_sock *s, const char *name, char *ext, size_t extlen)
{
	struct gnl_link l;
	struct nl_msg *m;
	int rc;

	gnl_link_init(&l);
	if (strlen(name) >= IFNAMSIZ)
		return -EINVAL;
	strcpy(l.name, name);
	rc = gnl_link_msg(&m, RTM_DELLINK, 0, &l);
	return rc ? rc : talk_free(s, m, ext, extlen);
}

int gnl_clsact_add(struct gnl_sock *s, uint32_t ifindex, char *ext, size_t extlen)
{
	struct tcmsg tc = { .tcm_family = AF_UNSPEC, .tcm_ifindex = (int)ifindex,
			    .tcm_handle = TC_H_MAKE(TC_H_CLSACT, 0), .tcm_parent = TC_H_CLSACT };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL);
	int rc;

	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &tc, sizeof(tc), NLMSG_ALIGNTO) < 0 || nla_put_string(m, TCA_KIND, "clsact") < 0) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	rc = gnl_talk(s, m, ext, extlen);
	nlmsg_free(m);
	return rc == -EEXIST ? 0 : rc;
}

/* Declared in nl.h; here, with the link lookup it uses. */
int gnl_ifindex(struct gnl_sock *s, const char *name)
{
	struct gnl_link l;
	int rc = gnl_link_get(s, name, &l);

	return rc < 0 ? rc : (int)l.ifindex;
}
