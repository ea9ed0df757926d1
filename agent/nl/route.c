/* Routes, including seg6 and seg6local lightweight tunnels. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/lwtunnel.h>
#include <linux/seg6.h>
#include <linux/seg6_iptunnel.h>
#include <linux/seg6_local.h>
#include <netlink/attr.h>

#include "agent/nl/objects.h"

static int put_addr(struct nl_msg *m, int type, const struct gnl_addr *a)
{
	return nla_put(m, type, (int)gnl_addr_bytes(a->family), a->a.raw);
}

static int put_seg6(struct nl_msg *m, const struct gnl_seg6 *s)
{
	uint8_t buf[sizeof(struct seg6_iptunnel_encap) + sizeof(struct ipv6_sr_hdr) +
		    GNL_SEGS_MAX * sizeof(struct in6_addr)];
	struct seg6_iptunnel_encap *t = (void *)buf;
	struct ipv6_sr_hdr *srh = (void *)(buf + sizeof(*t));
	size_t len;
	unsigned i;

	if (!s->nsegs || s->nsegs > GNL_SEGS_MAX)
		return -EINVAL;
	len = sizeof(*t) + sizeof(*srh) + s->nsegs * sizeof(struct in6_addr);
	memset(buf, 0, len);
	t->mode = s->mode;
	srh->hdrlen = (uint8_t)(s->nsegs * 2);
	srh->type = 4; /* IPV6_SRCRT_TYPE_4, not in uAPI headers */
	srh->segments_left = (uint8_t)(s->nsegs - 1);
	srh->first_segment = (uint8_t)(s->nsegs - 1);
	/* The SRH lists segments last-first. */
	for (i = 0; i < s->nsegs; i++)
		srh->segments[s->nsegs - 1 - i] = s->segs[i];
	return nla_put(m, SEG6_IPTUNNEL_SRH, (int)len, buf);
}

static int put_seg6local(struct nl_msg *m, const struct gnl_seg6local *l)
{
	int rc = nla_put_u32(m, SEG6_LOCAL_ACTION, (uint32_t)l->action);

	if (!rc && l->table)
		rc = nla_put_u32(m, SEG6_LOCAL_TABLE, l->table);
	if (!rc && l->vrftable)
		rc = nla_put_u32(m, SEG6_LOCAL_VRFTABLE, l->vrftable);
	/* End.DX4/End.DX6 require their next hop; 0.0.0.0 / :: mean "the inner destination". */
	if (!rc && (l->nh4.s_addr || l->action == SEG6_LOCAL_ACTION_END_DX4))
		rc = nla_put(m, SEG6_LOCAL_NH4, 4, &l->nh4);
	if (!rc && (!IN6_IS_ADDR_UNSPECIFIED(&l->nh6) || l->action == SEG6_LOCAL_ACTION_END_DX6))
		rc = nla_put(m, SEG6_LOCAL_NH6, 16, &l->nh6);
	if (!rc && l->iif)
		rc = nla_put_u32(m, SEG6_LOCAL_IIF, l->iif);
	if (!rc && l->oif)
		rc = nla_put_u32(m, SEG6_LOCAL_OIF, l->oif);
	return rc;
}

int gnl_route_msg(struct nl_msg **out, int cmd, int flags, const struct gnl_route *r)
{
	struct rtmsg rtm = {
		.rtm_family = (uint8_t)r->family,
		.rtm_dst_len = r->dst.family ? r->dst.len : 0,
		.rtm_table = r->table < 256 ? (uint8_t)r->table : RT_TABLE_UNSPEC,
		.rtm_protocol = r->protocol,
		.rtm_scope = r->scope,
		.rtm_type = r->type ? r->type : RTN_UNICAST,
	};
	struct nl_msg *m;
	struct nlattr *nest;
	int rc = 0;

	*out = NULL;
	if (r->family != AF_INET && r->family != AF_INET6)
		return -EINVAL;
	if (r->dst.family && r->dst.family != r->family)
		return -EINVAL;
	if (cmd == RTM_DELROUTE && !r->scope)
		rtm.rtm_scope = RT_SCOPE_NOWHERE;
	m = nlmsg_alloc_simple(cmd, flags);
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0)
		goto nomem;
	if (nla_put_u32(m, RTA_TABLE, r->table ? r->table : RT_TABLE_MAIN) < 0)
		goto nomem;
	if (r->dst.family && put_addr(m, RTA_DST, &r->dst) < 0)
		goto nomem;
	if (r->oif && nla_put_u32(m, RTA_OIF, r->oif) < 0)
		goto nomem;
	if (r->gw.family == r->family && put_addr(m, RTA_GATEWAY, &r->gw) < 0)
		goto nomem;
	if (r->priority && nla_put_u32(m, RTA_PRIORITY, r->priority) < 0)
		goto nomem;
	if (r->encap == GNL_ENCAP_SEG6 || r->encap == GNL_ENCAP_SEG6LOCAL) {
		nest = nla_nest_start(m, RTA_ENCAP);
		if (!nest)
			goto nomem;
		rc = r->encap == GNL_ENCAP_SEG6 ? put_seg6(m, &r->seg6) : put_seg6local(m, &r->s6l);
		if (rc == -EINVAL)
			goto fail;
		if (rc < 0)
			goto nomem;
		nla_nest_end(m, nest);
		if (nla_put_u16(m, RTA_ENCAP_TYPE, r->encap == GNL_ENCAP_SEG6 ?
				LWTUNNEL_ENCAP_SEG6 : LWTUNNEL_ENCAP_SEG6_LOCAL) < 0)
			goto nomem;
	} else if (r->encap != GNL_ENCAP_NONE) {
		rc = -EINVAL;
		goto fail;
	}
	*out = m;
	return 0;
nomem:
	rc = -ENOMEM;
fail:
	nlmsg_free(m);
	return rc;
}

int gnl_route_dump_msg(struct nl_msg **out, int family, uint32_t table)
{
	struct rtmsg rtm = { .rtm_family = (uint8_t)family };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_DUMP);

	*out = NULL;
	if (!m)
		return -ENOMEM;
	if (nlmsg_append(m, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ||
	    (table && nla_put_u32(m, RTA_TABLE, table) < 0)) {
		nlmsg_free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

static int get_addr(const struct nlattr *a, int family, uint8_t len, struct gnl_addr *out)
{
	size_t n = gnl_addr_bytes(family);

	if (!n || (size_t)nla_len(a) != n)
		return -EINVAL;
	out->family = family;
	out->len = len;
	memcpy(out->a.raw, nla_data(a), n);
	return 0;
}

static int parse_seg6(const struct nlattr *encap, struct gnl_seg6 *s)
{
	struct nlattr *tb[SEG6_IPTUNNEL_MAX + 1];
	const struct seg6_iptunnel_encap *t;
	const struct ipv6_sr_hdr *srh;
	size_t len, nsegs, i;

	if (nla_parse_nested(tb, SEG6_IPTUNNEL_MAX, (struct nlattr *)encap, NULL) < 0 ||
	    !tb[SEG6_IPTUNNEL_SRH])
		return -EINVAL;
	len = (size_t)nla_len(tb[SEG6_IPTUNNEL_SRH]);
	if (len < sizeof(*t) + sizeof(*srh))
		return -EINVAL;
	t = nla_data(tb[SEG6_IPTUNNEL_SRH]);
	srh = t->srh;
	if (((size_t)srh->hdrlen + 1) * 8 > len - sizeof(*t) || srh->hdrlen % 2)
		return -EINVAL;
	nsegs = srh->hdrlen / 2u;
	if (!nsegs || nsegs > GNL_SEGS_MAX)
		return -EINVAL;
	s->mode = t->mode;
	s->nsegs = (unsigned)nsegs;
	for (i = 0; i < nsegs; i++)
		memcpy(&s->segs[i], &srh->segments[nsegs - 1 - i], sizeof(struct in6_addr));
	return 0;
}

static int parse_seg6local(const struct nlattr *encap, struct gnl_seg6local *l)
{
	struct nlattr *tb[SEG6_LOCAL_MAX + 1];

	if (nla_parse_nested(tb, SEG6_LOCAL_MAX, (struct nlattr *)encap, NULL) < 0 ||
	    !tb[SEG6_LOCAL_ACTION] || nla_len(tb[SEG6_LOCAL_ACTION]) != 4)
		return -EINVAL;
	l->action = (int)nla_get_u32(tb[SEG6_LOCAL_ACTION]);
	if (tb[SEG6_LOCAL_TABLE] && nla_len(tb[SEG6_LOCAL_TABLE]) == 4)
		l->table = nla_get_u32(tb[SEG6_LOCAL_TABLE]);
	if (tb[SEG6_LOCAL_VRFTABLE] && nla_len(tb[SEG6_LOCAL_VRFTABLE]) == 4)
		l->vrftable = nla_get_u32(tb[SEG6_LOCAL_VRFTABLE]);
	if (tb[SEG6_LOCAL_NH4] && nla_len(tb[SEG6_LOCAL_NH4]) == 4)
		memcpy(&l->nh4, nla_data(tb[SEG6_LOCAL_NH4]), 4);
	if (tb[SEG6_LOCAL_NH6] && nla_len(tb[SEG6_LOCAL_NH6]) == 16)
		memcpy(&l->nh6, nla_data(tb[SEG6_LOCAL_NH6]), 16);
	if (tb[SEG6_LOCAL_IIF] && nla_len(tb[SEG6_LOCAL_IIF]) == 4)
		l->iif = nla_get_u32(tb[SEG6_LOCAL_IIF]);
	if (tb[SEG6_LOCAL_OIF] && nla_len(tb[SEG6_LOCAL_OIF]) == 4)
		l->oif = nla_get_u32(tb[SEG6_LOCAL_OIF]);
	return 0;
}

int gnl_route_parse(const struct nlmsghdr *h, struct gnl_route *r)
{
	struct nlattr *tb[RTA_MAX + 1];
	const struct rtmsg *rtm;

	memset(r, 0, sizeof(*r));
	if (h->nlmsg_type != RTM_NEWROUTE && h->nlmsg_type != RTM_DELROUTE)
		return -EINVAL;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return -EINVAL;
	rtm = NLMSG_DATA(h);
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*rtm), tb, RTA_MAX, NULL) < 0)
		return -EINVAL;
	r->family = rtm->rtm_family;
	r->protocol = rtm->rtm_protocol;
	r->scope = rtm->rtm_scope;
	r->type = rtm->rtm_type;
	r->table = rtm->rtm_table;
	if (tb[RTA_TABLE] && nla_len(tb[RTA_TABLE]) == 4)
		r->table = nla_get_u32(tb[RTA_TABLE]);
	if (tb[RTA_DST] && get_addr(tb[RTA_DST], r->family, rtm->rtm_dst_len, &r->dst) < 0)
		return -EINVAL;
	if (tb[RTA_GATEWAY] && get_addr(tb[RTA_GATEWAY], r->family, 0, &r->gw) < 0)
		return -EINVAL;
	if (tb[RTA_OIF] && nla_len(tb[RTA_OIF]) == 4)
		r->oif = nla_get_u32(tb[RTA_OIF]);
	if (tb[RTA_PRIORITY] && nla_len(tb[RTA_PRIORITY]) == 4)
		r->priority = nla_get_u32(tb[RTA_PRIORITY]);
	if (tb[RTA_ENCAP_TYPE] && tb[RTA_ENCAP] && nla_len(tb[RTA_ENCAP_TYPE]) == 2) {
		switch (nla_get_u16(tb[RTA_ENCAP_TYPE])) {
		case LWTUNNEL_ENCAP_SEG6:
			r->encap = GNL_ENCAP_SEG6;
			return parse_seg6(tb[RTA_ENCAP], &r->seg6);
		case LWTUNNEL_ENCAP_SEG6_LOCAL:
			r->encap = GNL_ENCAP_SEG6LOCAL;
			return parse_seg6local(tb[RTA_ENCAP], &r->s6l);
		default:
			r->encap = GNL_ENCAP_OTHER;
		}
	}
	return 0;
}

bool gnl_route_same_key(const struct gnl_route *a, const struct gnl_route *b)
{
	return a->family == b->family && a->table == b->table && a->priority == b->priority &&
	       gnl_addr_eq(&a->dst, &b->dst);
}

bool gnl_route_equal(const struct gnl_route *a, const struct gnl_route *b)
{
	int ta = a->type ? a->type : RTN_UNICAST, tb = b->type ? b->type : RTN_UNICAST;

	/* The kernel reports "lo" as the device of IPv6 unreachable routes. */
	if (!gnl_route_same_key(a, b) || ta != tb || (ta == RTN_UNICAST && a->oif != b->oif) ||
	    a->protocol != b->protocol ||
	    a->encap != b->encap || a->gw.family != b->gw.family ||
	    (a->gw.family && memcmp(a->gw.a.raw, b->gw.a.raw, gnl_addr_bytes(a->gw.family))))
		return false;
	if (a->encap == GNL_ENCAP_SEG6)
		return a->seg6.mode == b->seg6.mode && a->seg6.nsegs == b->seg6.nsegs &&
		       !memcmp(a->seg6.segs, b->seg6.segs, a->seg6.nsegs * sizeof(struct in6_addr));
	if (a->encap == GNL_ENCAP_SEG6LOCAL)
		return a->s6l.action == b->s6l.action && a->s6l.table == b->s6l.table &&
		       a->s6l.vrftable == b->s6l.vrftable &&
		       a->s6l.nh4.s_addr == b->s6l.nh4.s_addr &&
		       !memcmp(&a->s6l.nh6, &b->s6l.nh6, 16) && a->s6l.iif == b->s6l.iif &&
		       a->s6l.oif == b->s6l.oif;
	return true;
}

const char *gnl_seg6local_action_str(int action)
{
	static const char *const names[] = {
		[SEG6_LOCAL_ACTION_END] = "End", [SEG6_LOCAL_ACTION_END_X] = "End.X",
		[SEG6_LOCAL_ACTION_END_T] = "End.T", [SEG6_LOCAL_ACTION_END_DX2] = "End.DX2",
		[SEG6_LOCAL_ACTION_END_DX6] = "End.DX6", [SEG6_LOCAL_ACTION_END_DX4] = "End.DX4",
		[SEG6_LOCAL_ACTION_END_DT6] = "End.DT6", [SEG6_LOCAL_ACTION_END_DT4] = "End.DT4",
		[SEG6_LOCAL_ACTION_END_B6] = "End.B6", [SEG6_LOCAL_ACTION_END_B6_ENCAP] = "End.B6.Encaps",
		[SEG6_LOCAL_ACTION_END_BM] = "End.BM", [SEG6_LOCAL_ACTION_END_S] = "End.S",
		[SEG6_LOCAL_ACTION_END_AS] = "End.AS", [SEG6_LOCAL_ACTION_END_AM] = "End.AM",
		[SEG6_LOCAL_ACTION_END_BPF] = "End.BPF", [SEG6_LOCAL_ACTION_END_DT46] = "End.DT46",
	};

	if (action > 0 && (size_t)action < sizeof(names) / sizeof(names[0]) && names[action])
		return names[action];
	return "unknown";
}

static const char *seg6_mode_str(int mode)
{
	switch (mode) {
	case SEG6_IPTUN_MODE_INLINE: return "inline";
	case SEG6_IPTUN_MODE_ENCAP: return "encap";
	case SEG6_IPTUN_MODE_L2ENCAP: return "l2encap";
	case SEG6_IPTUN_MODE_ENCAP_RED: return "encap.red";
	case SEG6_IPTUN_MODE_L2ENCAP_RED: return "l2encap.red";
	default: return "unknown";
	}
}

char *gnl_route_str(const struct gnl_route *r, char *buf, size_t n)
{
	char a[64], b[64];
	size_t o;
	unsigned i;

	o = (size_t)snprintf(buf, n, "%s table %u", gnl_addr_str(&r->dst, true, a, sizeof(a)),
			     r->table);
	if (o < n && r->encap == GNL_ENCAP_SEG6) {
		o += (size_t)snprintf(buf + o, n - o, " encap seg6 mode %s segs",
				      seg6_mode_str(r->seg6.mode));
		for (i = 0; i < r->seg6.nsegs && o < n; i++)
			o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? "," : " ",
					      inet_ntop(AF_INET6, &r->seg6.segs[i], b, sizeof(b)));
	} else if (o < n && r->encap == GNL_ENCAP_SEG6LOCAL) {
		o += (size_t)snprintf(buf + o, n - o, " encap seg6local action %s",
				      gnl_seg6local_action_str(r->s6l.action));
		if (o < n && r->s6l.table)
			o += (size_t)snprintf(buf + o, n - o, " table %u", r->s6l.table);
		if (o < n && r->s6l.vrftable)
			o += (size_t)snprintf(buf + o, n - o, " vrftable %u", r->s6l.vrftable);
		if (o < n && r->s6l.nh4.s_addr)
			o += (size_t)snprintf(buf + o, n - o, " nh4 %s",
					      inet_ntop(AF_INET, &r->s6l.nh4, b, sizeof(b)));
		if (o < n && !IN6_IS_ADDR_UNSPECIFIED(&r->s6l.nh6))
			o += (size_t)snprintf(buf + o, n - o, " nh6 %s",
					      inet_ntop(AF_INET6, &r->s6l.nh6, b, sizeof(b)));
	}
	if (o < n && r->gw.family)
		o += (size_t)snprintf(buf + o, n - o, " via %s", gnl_addr_str(&r->gw, false, a, sizeof(a)));
	if (o < n && r->oif)
		snprintf(buf + o, n - o, " oif %u", r->oif);
	return buf;
}
