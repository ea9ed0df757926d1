/* Neighbour entries. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/neighbour.h>
#include <netlink/attr.h>

#include "agent/nl/objects.h"

int gnl_neigh_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_neigh *n)
{
	struct ndmsg nd = {
		.ndm_family = (uint8_t)n->family,
		.ndm_ifindex = (int)n->ifindex,
		.ndm_state = n->state ? n->state : (n->flags_ext & NTF_EXT_MANAGED) ? NUD_NONE : NUD_PERMANENT,
		.ndm_flags = n->flags,
	};
	struct nl_msg *m;

	*out = NULL;
	if ((n->family != AF_INET && n->family != AF_INET6) || n->dst.family != n->family ||
	    !n->ifindex)
		return -EINVAL;
	m = nlmsg_alloc_simple(cmd, flags);
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &nd, sizeof(nd), NLMSG_ALIGNTO) < 0 ||
	    nla_put(m, NDA_DST, (int)gnl_addr_bytes(n->family), n->dst.a.raw) < 0 ||
	    (n->has_lladdr && nla_put(m, NDA_LLADDR, 6, n->lladdr) < 0) ||
	    (n->protocol && nla_put_u8(m, NDA_PROTOCOL, n->protocol) < 0) ||
	    (n->flags_ext && nla_put_u32(m, NDA_FLAGS_EXT, n->flags_ext) < 0)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

int gnl_neigh_parse(const struct nlmsghdr *h, struct gnl_neigh *n)
{
	struct nlattr *tb[NDA_MAX + 1];
	const struct ndmsg *nd;
	size_t al;

	memset(n, 0, sizeof(*n));
	if ((h->nlmsg_type != RTM_NEWNEIGH && h->nlmsg_type != RTM_DELNEIGH) ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)))
		return -EINVAL;
	nd = NLMSG_DATA(h);
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*nd), tb, NDA_MAX, NULL) < 0)
		return -EINVAL;
	n->family = nd->ndm_family;
	n->ifindex = (uint32_t)nd->ndm_ifindex;
	n->state = nd->ndm_state;
	n->flags = nd->ndm_flags;
	al = gnl_addr_bytes(n->family);
	if (tb[NDA_DST] && al && (size_t)nla_len(tb[NDA_DST]) == al) {
		n->dst.family = n->family;
		n->dst.len = (uint8_t)(al * 8);
		memcpy(n->dst.a.raw, nla_data(tb[NDA_DST]), al);
	}
	if (tb[NDA_LLADDR] && nla_len(tb[NDA_LLADDR]) == 6) {
		memcpy(n->lladdr, nla_data(tb[NDA_LLADDR]), 6);
		n->has_lladdr = true;
	}
	if (tb[NDA_PROTOCOL] && nla_len(tb[NDA_PROTOCOL]) == 1)
		n->protocol = nla_get_u8(tb[NDA_PROTOCOL]);
	if (tb[NDA_FLAGS_EXT] && nla_len(tb[NDA_FLAGS_EXT]) == 4)
		n->flags_ext = nla_get_u32(tb[NDA_FLAGS_EXT]);
	return 0;
}

int gnl_neigh_dump_msg(struct nl_msg **out, int family)
{
	struct ndmsg nd = { .ndm_family = (uint8_t)family };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_GETNEIGH, NLM_F_DUMP);

	*out = NULL;
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &nd, sizeof(nd), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

char *gnl_neigh_str(const struct gnl_neigh *n, char *buf, size_t len)
{
	char a[64];

	snprintf(buf, len, "neigh %s ifindex %u lladdr %02x:%02x:%02x:%02x:%02x:%02x",
		 gnl_addr_str(&n->dst, false, a, sizeof(a)), n->ifindex, n->lladdr[0],
		 n->lladdr[1], n->lladdr[2], n->lladdr[3], n->lladdr[4], n->lladdr[5]);
	return buf;
}
