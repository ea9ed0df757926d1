/* Policy routing rules. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/fib_rules.h>
#include <netlink/attr.h>

#include "agent/nl/objects.h"

int gnl_rule_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_rule *r)
{
	struct fib_rule_hdr frh = {
		.family = (uint8_t)r->family,
		.dst_len = r->dst.family ? r->dst.len : 0,
		.table = r->table < 256 ? (uint8_t)r->table : RT_TABLE_UNSPEC,
		.action = r->action ? r->action : FR_ACT_TO_TBL,
	};
	struct nl_msg *m;

	*out = NULL;
	if ((r->family != AF_INET && r->family != AF_INET6) ||
	    (r->dst.family && r->dst.family != r->family))
		return -EINVAL;
	m = nlmsg_alloc_simple(cmd, flags);
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &frh, sizeof(frh), NLMSG_ALIGNTO) < 0 ||
	    (r->table && nla_put_u32(m, FRA_TABLE, r->table) < 0) ||
	    nla_put_u32(m, FRA_PRIORITY, r->priority) < 0 ||
	    (r->iifname[0] && nla_put_string(m, FRA_IIFNAME, r->iifname) < 0) ||
	    (r->oifname[0] && nla_put_string(m, FRA_OIFNAME, r->oifname) < 0) ||
	    (r->protocol && nla_put_u8(m, FRA_PROTOCOL, r->protocol) < 0) ||
	    ((r->fwmark || r->fwmask) && nla_put_u32(m, FRA_FWMARK, r->fwmark) < 0) ||
	    (r->fwmask && nla_put_u32(m, FRA_FWMASK, r->fwmask) < 0) ||
	    (r->dst.family && nla_put(m, FRA_DST, (int)gnl_addr_bytes(r->dst.family), r->dst.a.raw) < 0)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

static void get_name(const struct nlattr *a, char *dst)
{
	size_t l = (size_t)nla_len(a);

	if (l >= IFNAMSIZ)
		l = IFNAMSIZ - 1;
	memcpy(dst, nla_data(a), l);
	dst[l] = 0;
}

int gnl_rule_parse(const struct nlmsghdr *h, struct gnl_rule *r)
{
	struct nlattr *tb[FRA_MAX + 1];
	const struct fib_rule_hdr *frh;

	memset(r, 0, sizeof(*r));
	if ((h->nlmsg_type != RTM_NEWRULE && h->nlmsg_type != RTM_DELRULE) ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*frh)))
		return -EINVAL;
	frh = NLMSG_DATA(h);
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*frh), tb, FRA_MAX, NULL) < 0)
		return -EINVAL;
	r->family = frh->family;
	r->table = frh->table;
	r->action = frh->action;
	if (tb[FRA_TABLE] && nla_len(tb[FRA_TABLE]) == 4)
		r->table = nla_get_u32(tb[FRA_TABLE]);
	if (tb[FRA_PRIORITY] && nla_len(tb[FRA_PRIORITY]) == 4)
		r->priority = nla_get_u32(tb[FRA_PRIORITY]);
	if (tb[FRA_IIFNAME])
		get_name(tb[FRA_IIFNAME], r->iifname);
	if (tb[FRA_OIFNAME])
		get_name(tb[FRA_OIFNAME], r->oifname);
	if (tb[FRA_PROTOCOL] && nla_len(tb[FRA_PROTOCOL]) == 1)
		r->protocol = nla_get_u8(tb[FRA_PROTOCOL]);
	if (tb[FRA_FWMARK] && nla_len(tb[FRA_FWMARK]) == 4)
		r->fwmark = nla_get_u32(tb[FRA_FWMARK]);
	if (tb[FRA_FWMASK] && nla_len(tb[FRA_FWMASK]) == 4)
		r->fwmask = nla_get_u32(tb[FRA_FWMASK]);
	if (tb[FRA_DST] && (r->family == AF_INET || r->family == AF_INET6) &&
	    (size_t)nla_len(tb[FRA_DST]) == gnl_addr_bytes(r->family) &&
	    frh->dst_len <= gnl_addr_bytes(r->family) * 8) {
		r->dst.family = r->family;
		r->dst.len = frh->dst_len;
		memcpy(r->dst.a.raw, nla_data(tb[FRA_DST]), gnl_addr_bytes(r->family));
	}
	return 0;
}

int gnl_rule_dump_msg(struct nl_msg **out, int family)
{
	struct fib_rule_hdr frh = { .family = (uint8_t)family };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_GETRULE, NLM_F_DUMP);

	*out = NULL;
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &frh, sizeof(frh), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

bool gnl_rule_equal(const struct gnl_rule *a, const struct gnl_rule *b)
{
	return a->family == b->family && a->priority == b->priority && a->table == b->table &&
	       (a->action ? a->action : FR_ACT_TO_TBL) == (b->action ? b->action : FR_ACT_TO_TBL) &&
	       !strcmp(a->iifname, b->iifname) && !strcmp(a->oifname, b->oifname) &&
	       a->fwmark == b->fwmark && a->fwmask == b->fwmask && a->dst.family == b->dst.family &&
	       (!a->dst.family || (a->dst.len == b->dst.len &&
				   !memcmp(a->dst.a.raw, b->dst.a.raw, gnl_addr_bytes(a->dst.family))));
}

char *gnl_rule_str(const struct gnl_rule *r, char *buf, size_t n)
{
	char d[INET6_ADDRSTRLEN + 8] = "", fm[32] = "";

	if (r->dst.family) {
		char a[INET6_ADDRSTRLEN];

		inet_ntop(r->dst.family, r->dst.a.raw, a, sizeof(a));
		snprintf(d, sizeof(d), " to %s/%u", a, r->dst.len);
	}
	if (r->fwmark || r->fwmask)
		snprintf(fm, sizeof(fm), " fwmark 0x%x/0x%x", r->fwmark, r->fwmask);
	snprintf(buf, n, "%s rule pref %u%s%s%s%s lookup %u", r->family == AF_INET ? "ipv4" : "ipv6",
		 r->priority, r->iifname[0] ? " iif " : "", r->iifname, d, fm, r->table);
	return buf;
}
