/* Interface addresses. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/if_addr.h>
#include <netlink/attr.h>

#include "agent/nl/objects.h"

int gnl_ifaddr_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_ifaddr *a)
{
	struct ifaddrmsg ifa = {
		.ifa_family = (uint8_t)a->family,
		.ifa_prefixlen = a->addr.len,
		.ifa_scope = a->scope,
		.ifa_index = a->ifindex,
		.ifa_flags = (uint8_t)a->flags,
	};
	int alen = (int)gnl_addr_bytes(a->family);
	struct nl_msg *m;

	*out = NULL;
	if (!alen || a->addr.family != a->family || !a->ifindex)
		return -EINVAL;
	m = nlmsg_alloc_simple(cmd, flags);
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0 ||
	    nla_put(m, IFA_LOCAL, alen, a->addr.a.raw) < 0 ||
	    nla_put(m, IFA_ADDRESS, alen, a->addr.a.raw) < 0 ||
	    (a->flags > 0xff && nla_put_u32(m, IFA_FLAGS, a->flags) < 0) ||
	    (a->protocol && nla_put_u8(m, IFA_PROTO, a->protocol) < 0)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

int gnl_ifaddr_parse(const struct nlmsghdr *h, struct gnl_ifaddr *a)
{
	struct nlattr *tb[IFA_MAX + 1];
	const struct ifaddrmsg *ifa;
	const struct nlattr *src;
	size_t al;

	memset(a, 0, sizeof(*a));
	if ((h->nlmsg_type != RTM_NEWADDR && h->nlmsg_type != RTM_DELADDR) ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return -EINVAL;
	ifa = NLMSG_DATA(h);
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*ifa), tb, IFA_MAX, NULL) < 0)
		return -EINVAL;
	a->family = ifa->ifa_family;
	a->ifindex = ifa->ifa_index;
	a->scope = ifa->ifa_scope;
	a->flags = ifa->ifa_flags;
	if (tb[IFA_FLAGS] && nla_len(tb[IFA_FLAGS]) == 4)
		a->flags = nla_get_u32(tb[IFA_FLAGS]);
	if (tb[IFA_PROTO] && nla_len(tb[IFA_PROTO]) == 1)
		a->protocol = nla_get_u8(tb[IFA_PROTO]);
	src = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	al = gnl_addr_bytes(a->family);
	if (!src || !al || (size_t)nla_len(src) != al)
		return -EINVAL;
	a->addr.family = a->family;
	a->addr.len = ifa->ifa_prefixlen;
	memcpy(a->addr.a.raw, nla_data(src), al);
	return 0;
}

int gnl_ifaddr_dump_msg(struct nl_msg **out, int family)
{
	struct ifaddrmsg ifa = { .ifa_family = (uint8_t)family };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_GETADDR, NLM_F_DUMP);

	*out = NULL;
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

char *gnl_ifaddr_str(const struct gnl_ifaddr *a, char *buf, size_t n)
{
	char s[64];

	snprintf(buf, n, "address %s ifindex %u", gnl_addr_str(&a->addr, true, s, sizeof(s)),
		 a->ifindex);
	return buf;
}
