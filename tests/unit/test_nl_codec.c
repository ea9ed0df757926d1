/*
 * libgnl encoders and decoders against byte vectors written out by hand from
 * the kernel's uAPI layouts (rtmsg, seg6_iptunnel_encap + ipv6_sr_hdr,
 * seg6local attributes, fib_rule_hdr, ndmsg, ifaddrmsg, ifinfomsg), and
 * decode(encode(x)) == x for every object family.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/lwtunnel.h>
#include <linux/neighbour.h>
#include <linux/seg6_iptunnel.h>
#include <linux/seg6_local.h>

#include "agent/nl/nl.h"
#include "agent/nl/objects.h"
#include "tests/lib/gtest.h"

static void expect_bytes(struct nl_msg *m, const uint8_t *want, size_t n)
{
	struct nlmsghdr *h = nlmsg_hdr(m);
	char got_hex[2048], want_hex[2048];

	gnl_hex(h, h->nlmsg_len, got_hex, sizeof(got_hex));
	gnl_hex(want, n, want_hex, sizeof(want_hex));
	ck_assert_msg(h->nlmsg_len == n && !memcmp(h, want, n), "encoding differs:\n got  %s\n want %s",
		      got_hex, want_hex);
}

/* fd00:a::2/128 table 16385 proto 154 oif 3 metric 1024 encap seg6 mode encap.red segs fcbb:bb00:1:2:e001:: */
static const uint8_t seg6_route_vec[] = {
	/* nlmsghdr: len 116, RTM_NEWROUTE, NLM_F_REQUEST? no: CREATE|EXCL, seq 0, pid 0 */
	0x74, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x06, 0, 0, 0, 0, 0, 0, 0, 0,
	/* rtmsg: AF_INET6, dst_len 128, src_len 0, tos 0, table 0 (see RTA_TABLE), proto 154, scope 0, type unicast, flags 0 */
	0x0a, 0x80, 0x00, 0x00, 0x00, 0x9a, 0x00, 0x01, 0, 0, 0, 0,
	/* RTA_TABLE 16385 */
	0x08, 0x00, 0x0f, 0x00, 0x01, 0x40, 0x00, 0x00,
	/* RTA_DST fd00:a::2 */
	0x14, 0x00, 0x01, 0x00, 0xfd, 0x00, 0x00, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
	/* RTA_OIF 3 */
	0x08, 0x00, 0x04, 0x00, 0x03, 0x00, 0x00, 0x00,
	/* RTA_PRIORITY 1024 */
	0x08, 0x00, 0x06, 0x00, 0x00, 0x04, 0x00, 0x00,
	/* RTA_ENCAP (nested) len 36 */
	0x24, 0x00, 0x16, 0x80,
	/*   SEG6_IPTUNNEL_SRH len 32: mode 3 (encap.red) */
	0x20, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00,
	/*   ipv6_sr_hdr: nexthdr 0, hdrlen 2, type 4, segments_left 0, first_segment 0, flags 0, tag 0 */
	0x00, 0x02, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,
	/*   segment fcbb:bb00:1:2:e001:: */
	0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01, 0x00, 0x02, 0xe0, 0x01, 0, 0, 0, 0, 0, 0,
	/* RTA_ENCAP_TYPE LWTUNNEL_ENCAP_SEG6 (5), padded */
	0x06, 0x00, 0x15, 0x00, 0x05, 0x00, 0x00, 0x00,
};

static void seg6_route(struct gnl_route *r)
{
	memset(r, 0, sizeof(*r));
	r->family = AF_INET6;
	ck_assert_int_eq(gnl_addr_parse("fd00:a::2/128", &r->dst), 0);
	r->table = 16385;
	r->protocol = 154;
	r->type = RTN_UNICAST;
	r->oif = 3;
	r->priority = 1024;
	r->encap = GNL_ENCAP_SEG6;
	r->seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
	r->seg6.nsegs = 1;
	inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &r->seg6.segs[0]);
}

START_TEST(t_seg6_route_vector)
{
	struct gnl_route r, back;
	struct nl_msg *m;
	char s[256];

	seg6_route(&r);
	ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &r), 0);
	expect_bytes(m, seg6_route_vec, sizeof(seg6_route_vec));
	ck_assert_int_eq(gnl_route_parse(nlmsg_hdr(m), &back), 0);
	ck_assert(gnl_route_equal(&r, &back));
	ck_assert_str_eq(gnl_route_str(&back, s, sizeof(s)),
			 "fd00:a::2/128 table 16385 encap seg6 mode encap.red segs fcbb:bb00:1:2:e001:: oif 3");
	nlmsg_free(m);
}
END_TEST

START_TEST(t_seg6_multi_segment_order)
{
	struct gnl_route r, back;
	struct nl_msg *m;
	const uint8_t *srh;
	struct nlmsghdr *h;

	seg6_route(&r);
	r.seg6.mode = SEG6_IPTUN_MODE_ENCAP;
	r.seg6.nsegs = 3;
	inet_pton(AF_INET6, "fc00::1", &r.seg6.segs[0]);
	inet_pton(AF_INET6, "fc00::2", &r.seg6.segs[1]);
	inet_pton(AF_INET6, "fc00::3", &r.seg6.segs[2]);
	ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, 0, &r), 0);
	h = nlmsg_hdr(m);
	/* SRH starts after hdr(16) rtmsg(12) table(8) dst(20) oif(8) prio(8) encap-hdr(4) srh-hdr(4) mode(4) */
	srh = (const uint8_t *)h + 16 + 12 + 8 + 20 + 8 + 8 + 4 + 4 + 4;
	ck_assert_int_eq(srh[1], 6);    /* hdrlen = 3 segments * 2 */
	ck_assert_int_eq(srh[3], 2);    /* segments_left */
	ck_assert_int_eq(srh[4], 2);    /* first_segment */
	/* segment list is stored last-first: fc00::3 first */
	ck_assert_int_eq(srh[8 + 15], 3);
	ck_assert_int_eq(srh[8 + 16 + 15], 2);
	ck_assert_int_eq(srh[8 + 32 + 15], 1);
	ck_assert_int_eq(gnl_route_parse(h, &back), 0);
	ck_assert_int_eq(back.seg6.nsegs, 3);
	ck_assert(gnl_route_equal(&r, &back));
	nlmsg_free(m);
	/* too many / zero segments are refused */
	r.seg6.nsegs = 0;
	ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, 0, &r), -EINVAL);
	ck_assert_ptr_null(m);
	r.seg6.nsegs = GNL_SEGS_MAX + 1;
	ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, 0, &r), -EINVAL);
}
END_TEST

/* What the kernel sends for: fcbb:bb00:1:1:e001::/128 encap seg6local action End.DT6 table 16385 dev 2 proto 154 */
static const uint8_t seg6local_dump_vec[] = {
	0x64, 0x00, 0x00, 0x00, 0x18, 0x00, 0x02, 0x00, 1, 0, 0, 0, 0, 0, 0, 0,
	0x0a, 0x80, 0x00, 0x00, 0xfe, 0x9a, 0x00, 0x01, 0, 0, 0, 0,
	0x08, 0x00, 0x0f, 0x00, 0xfe, 0x00, 0x00, 0x00,                 /* RTA_TABLE 254 */
	0x14, 0x00, 0x01, 0x00, 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01, 0x00, 0x01,
	0xe0, 0x01, 0, 0, 0, 0, 0, 0,                                   /* RTA_DST */
	0x08, 0x00, 0x06, 0x00, 0x00, 0x04, 0x00, 0x00,                 /* RTA_PRIORITY 1024 */
	0x08, 0x00, 0x04, 0x00, 0x02, 0x00, 0x00, 0x00,                 /* RTA_OIF 2 */
	0x14, 0x00, 0x16, 0x80,                                         /* RTA_ENCAP */
	0x08, 0x00, 0x01, 0x00, 0x07, 0x00, 0x00, 0x00,                 /*   ACTION End.DT6 */
	0x08, 0x00, 0x03, 0x00, 0x01, 0x40, 0x00, 0x00,                 /*   TABLE 16385 */
	0x06, 0x00, 0x15, 0x00, 0x07, 0x00, 0x00, 0x00,                 /* ENCAP_TYPE SEG6_LOCAL (7) */
};

START_TEST(t_seg6local_decode_vector)
{
	struct gnl_route r;
	struct nl_msg *m;
	char s[256];

	ck_assert_int_eq(gnl_route_parse((const struct nlmsghdr *)seg6local_dump_vec, &r), 0);
	ck_assert_int_eq(r.family, AF_INET6);
	ck_assert_int_eq(r.table, 254);
	ck_assert_int_eq(r.protocol, 154);
	ck_assert_int_eq(r.oif, 2);
	ck_assert_int_eq(r.priority, 1024);
	ck_assert_int_eq(r.encap, GNL_ENCAP_SEG6LOCAL);
	ck_assert_int_eq(r.s6l.action, SEG6_LOCAL_ACTION_END_DT6);
	ck_assert_int_eq(r.s6l.table, 16385);
	ck_assert_str_eq(gnl_route_str(&r, s, sizeof(s)),
			 "fcbb:bb00:1:1:e001::/128 table 254 encap seg6local action End.DT6 table 16385 oif 2");
	/* and the encoder writes the same attributes (in its own order) */
	ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, 0, &r), 0);
	{
		struct gnl_route back;

		ck_assert_int_eq(gnl_route_parse(nlmsg_hdr(m), &back), 0);
		ck_assert(gnl_route_equal(&r, &back));
		ck_assert_uint_eq(nlmsg_hdr(m)->nlmsg_len, sizeof(seg6local_dump_vec));
	}
	nlmsg_free(m);
}
END_TEST

START_TEST(t_seg6local_actions_roundtrip)
{
	static const int actions[] = { SEG6_LOCAL_ACTION_END, SEG6_LOCAL_ACTION_END_DT6,
				       SEG6_LOCAL_ACTION_END_DT4, SEG6_LOCAL_ACTION_END_DT46,
				       SEG6_LOCAL_ACTION_END_DX4, SEG6_LOCAL_ACTION_END_DX6 };
	size_t i;

	for (i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		struct gnl_route r, back;
		struct nl_msg *m;

		memset(&r, 0, sizeof(r));
		r.family = AF_INET6;
		gnl_addr_parse("fcbb:bb00:1:1:d005::/128", &r.dst);
		r.table = 254;
		r.protocol = 154;
		r.oif = 7;
		r.encap = GNL_ENCAP_SEG6LOCAL;
		r.s6l.action = actions[i];
		switch (actions[i]) {
		case SEG6_LOCAL_ACTION_END_DT6: r.s6l.table = 16385; break;
		case SEG6_LOCAL_ACTION_END_DT4:
		case SEG6_LOCAL_ACTION_END_DT46: r.s6l.vrftable = 16386; break;
		case SEG6_LOCAL_ACTION_END_DX4: inet_pton(AF_INET, "169.254.16.5", &r.s6l.nh4); break;
		case SEG6_LOCAL_ACTION_END_DX6: inet_pton(AF_INET6, "fe80::5", &r.s6l.nh6); break;
		}
		ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE, &r), 0);
		ck_assert_int_eq(gnl_route_parse(nlmsg_hdr(m), &back), 0);
		ck_assert_msg(gnl_route_equal(&r, &back), "action %s does not round-trip",
			      gnl_seg6local_action_str(actions[i]));
		/* a changed parameter must be seen as a difference */
		back.s6l.table ^= 1;
		back.s6l.nh4.s_addr ^= htonl(1);
		back.s6l.vrftable ^= 1;
		back.s6l.nh6.s6_addr[15] ^= 1;
		ck_assert(!gnl_route_equal(&r, &back));
		nlmsg_free(m);
	}
	ck_assert_str_eq(gnl_seg6local_action_str(SEG6_LOCAL_ACTION_END_DX4), "End.DX4");
	ck_assert_str_eq(gnl_seg6local_action_str(999), "unknown");
}
END_TEST

START_TEST(t_route_malformed_rejected)
{
	uint8_t buf[sizeof(seg6_route_vec)];
	struct gnl_route r;

	memcpy(buf, seg6_route_vec, sizeof(buf));
	/* SRH hdrlen claims 4 segments in a 1-segment attribute */
	buf[16 + 12 + 8 + 20 + 8 + 8 + 4 + 8 + 1] = 8;
	ck_assert_int_eq(gnl_route_parse((struct nlmsghdr *)buf, &r), -EINVAL);
	/* truncated header */
	memcpy(buf, seg6_route_vec, sizeof(buf));
	((struct nlmsghdr *)buf)->nlmsg_len = 20;
	ck_assert_int_eq(gnl_route_parse((struct nlmsghdr *)buf, &r), -EINVAL);
	/* wrong message type */
	memcpy(buf, seg6_route_vec, sizeof(buf));
	((struct nlmsghdr *)buf)->nlmsg_type = RTM_NEWRULE;
	ck_assert_int_eq(gnl_route_parse((struct nlmsghdr *)buf, &r), -EINVAL);
	/* dst of the wrong size for the family */
	memcpy(buf, seg6_route_vec, sizeof(buf));
	buf[12 + 16 + 8 + 0] = 0x08; /* RTA_DST len 8 */
	ck_assert_int_ne(gnl_route_parse((struct nlmsghdr *)buf, &r), 0);
}
END_TEST

/* ip -6 rule add pref 1000 iif h1 lookup 16385 proto 154 */
static const uint8_t rule_vec[] = {
	0x3c, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0,
	0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0,         /* fib_rule_hdr: family 10, table 0, action TO_TBL */
	0x08, 0x00, 0x0f, 0x00, 0x01, 0x40, 0x00, 0x00,                     /* FRA_TABLE 16385 */
	0x08, 0x00, 0x06, 0x00, 0xe8, 0x03, 0x00, 0x00,                     /* FRA_PRIORITY 1000 */
	0x07, 0x00, 0x03, 0x00, 'h', '1', 0x00, 0x00,                       /* FRA_IIFNAME "h1" */
	0x05, 0x00, 0x15, 0x00, 0x9a, 0x00, 0x00, 0x00,                     /* FRA_PROTOCOL 154 */
};

START_TEST(t_rule_vector)
{
	struct gnl_rule r = { .family = AF_INET6, .priority = 1000, .table = 16385,
			      .action = FR_ACT_TO_TBL, .protocol = 154, .iifname = "h1" }, back;
	struct nl_msg *m;
	char s[128];

	ck_assert_int_eq(gnl_rule_msg(&m, RTM_NEWRULE, NLM_F_CREATE, &r), 0);
	expect_bytes(m, rule_vec, sizeof(rule_vec));
	ck_assert_int_eq(gnl_rule_parse(nlmsg_hdr(m), &back), 0);
	ck_assert(gnl_rule_equal(&r, &back));
	ck_assert_int_eq(back.protocol, 154);
	ck_assert_str_eq(gnl_rule_str(&back, s, sizeof(s)), "ipv6 rule pref 1000 iif h1 lookup 16385");
	back.table++;
	ck_assert(!gnl_rule_equal(&r, &back));
	nlmsg_free(m);
}
END_TEST

/* The egress shard's rules: fwmark/mask and a `to` selector survive encode -> decode. */
START_TEST(t_rule_fwmark_dst)
{
	struct gnl_rule r = { .family = AF_INET6, .priority = 999, .table = 16385, .protocol = 154,
			      .fwmark = 0x200001, .fwmask = 0x300fff }, back;
	struct nl_msg *m;
	char s[160];

	ck_assert_int_eq(gnl_rule_msg(&m, RTM_NEWRULE, NLM_F_CREATE, &r), 0);
	ck_assert_int_eq(gnl_rule_parse(nlmsg_hdr(m), &back), 0);
	ck_assert(gnl_rule_equal(&r, &back));
	ck_assert_uint_eq(back.fwmark, 0x200001);
	ck_assert_uint_eq(back.fwmask, 0x300fff);
	ck_assert_str_eq(gnl_rule_str(&back, s, sizeof(s)), "ipv6 rule pref 999 fwmark 0x200001/0x300fff lookup 16385");
	back.fwmark++;
	ck_assert(!gnl_rule_equal(&r, &back));
	nlmsg_free(m);
	gnl_addr_parse("fcbb:bb00:1:1:f000::/80", &r.dst);
	r.fwmark = r.fwmask = 0;
	ck_assert_int_eq(gnl_rule_msg(&m, RTM_NEWRULE, NLM_F_CREATE, &r), 0);
	ck_assert_int_eq(gnl_rule_parse(nlmsg_hdr(m), &back), 0);
	ck_assert(gnl_rule_equal(&r, &back));
	ck_assert_uint_eq(back.dst.len, 80);
	ck_assert_str_eq(gnl_rule_str(&back, s, sizeof(s)), "ipv6 rule pref 999 to fcbb:bb00:1:1:f000::/80 lookup 16385");
	nlmsg_free(m);
	/* a `to` of the other family is refused, never sent */
	gnl_addr_parse("10.0.0.0/8", &r.dst);
	ck_assert_int_eq(gnl_rule_msg(&m, RTM_NEWRULE, NLM_F_CREATE, &r), -EINVAL);
}
END_TEST

/* ip neigh replace 10.1.0.2 lladdr 02:00:00:00:00:01 dev 5 nud permanent proto 154 */
static const uint8_t neigh_vec[] = {
	0x38, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x05, 0, 0, 0, 0, 0, 0, 0, 0,
	0x02, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, /* ndmsg: AF_INET, ifindex 5, PERMANENT */
	0x08, 0x00, 0x01, 0x00, 10, 1, 0, 2,                                     /* NDA_DST */
	0x0a, 0x00, 0x02, 0x00, 0x02, 0, 0, 0, 0, 0x01, 0x00, 0x00,              /* NDA_LLADDR */
	0x05, 0x00, 0x0c, 0x00, 0x9a, 0x00, 0x00, 0x00,                          /* NDA_PROTOCOL */
};

START_TEST(t_neigh_vector)
{
	struct gnl_neigh n = { .family = AF_INET, .ifindex = 5, .state = NUD_PERMANENT,
			       .lladdr = { 2, 0, 0, 0, 0, 1 }, .has_lladdr = true, .protocol = 154 }, back;
	struct nl_msg *m;

	gnl_addr_parse("10.1.0.2", &n.dst);
	ck_assert_int_eq(gnl_neigh_msg(&m, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &n), 0);
	expect_bytes(m, neigh_vec, sizeof(neigh_vec));
	ck_assert_int_eq(gnl_neigh_parse(nlmsg_hdr(m), &back), 0);
	ck_assert_int_eq(back.ifindex, 5);
	ck_assert(gnl_addr_eq(&back.dst, &n.dst));
	ck_assert_mem_eq(back.lladdr, n.lladdr, 6);
	ck_assert_int_eq(back.protocol, 154);
	ck_assert_int_eq(back.state, NUD_PERMANENT);
	nlmsg_free(m);
	n.ifindex = 0;
	ck_assert_int_eq(gnl_neigh_msg(&m, RTM_NEWNEIGH, 0, &n), -EINVAL);
}
END_TEST

START_TEST(t_addr_roundtrip)
{
	struct gnl_ifaddr a = { .family = AF_INET6, .ifindex = 9, .scope = RT_SCOPE_LINK,
				.flags = IFA_F_NODAD | IFA_F_PERMANENT, .protocol = 154 }, back;
	struct nl_msg *m;
	struct nlmsghdr *h;

	gnl_addr_parse("fe80::1/64", &a.addr);
	ck_assert_int_eq(gnl_ifaddr_msg(&m, RTM_NEWADDR, NLM_F_CREATE, &a), 0);
	h = nlmsg_hdr(m);
	/* ifaddrmsg: family, prefixlen, flags (low 8 bits), scope, index */
	ck_assert_int_eq(((uint8_t *)NLMSG_DATA(h))[0], AF_INET6);
	ck_assert_int_eq(((uint8_t *)NLMSG_DATA(h))[1], 64);
	ck_assert_int_eq(((uint8_t *)NLMSG_DATA(h))[2], (IFA_F_NODAD | IFA_F_PERMANENT) & 0xff);
	ck_assert_int_eq(gnl_ifaddr_parse(h, &back), 0);
	ck_assert(gnl_addr_eq(&back.addr, &a.addr));
	ck_assert_int_eq(back.ifindex, 9);
	ck_assert_int_eq(back.protocol, 154);
	ck_assert_int_eq(back.scope, RT_SCOPE_LINK);
	nlmsg_free(m);
}
END_TEST

START_TEST(t_link_veth_vrf_encoding)
{
	struct gnl_link l, back;
	struct nl_msg *m;
	struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1], *data[3], *peer[IFLA_MAX + 1];
	struct nlattr *pa;

	gnl_link_init(&l);
	strcpy(l.name, "hveth0");
	strcpy(l.kind, "veth");
	strcpy(l.peer, "eth0");
	l.mtu = 1400;
	ck_assert_int_eq(gnl_link_msg(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &l), 0);
	ck_assert_int_eq(nlmsg_parse(nlmsg_hdr(m), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL), 0);
	ck_assert_str_eq(nla_get_string(tb[IFLA_IFNAME]), "hveth0");
	ck_assert_int_eq(nla_get_u32(tb[IFLA_MTU]), 1400);
	ck_assert_int_eq(nla_parse_nested(li, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL), 0);
	ck_assert_str_eq(nla_get_string(li[IFLA_INFO_KIND]), "veth");
	ck_assert_int_eq(nla_parse_nested(data, 2, li[IFLA_INFO_DATA], NULL), 0);
	/* VETH_INFO_PEER: an ifinfomsg followed by the peer's attributes */
	pa = data[1];
	ck_assert_ptr_nonnull(pa);
	ck_assert_int_eq(nla_parse(peer, IFLA_MAX,
				   (struct nlattr *)((char *)nla_data(pa) + NLMSG_ALIGN(sizeof(struct ifinfomsg))),
				   nla_len(pa) - (int)NLMSG_ALIGN(sizeof(struct ifinfomsg)), NULL), 0);
	ck_assert_str_eq(nla_get_string(peer[IFLA_IFNAME]), "eth0");
	/* one TX and one RX queue on both ends, not one per possible CPU */
	ck_assert_ptr_nonnull(tb[IFLA_NUM_TX_QUEUES]);
	ck_assert_ptr_nonnull(tb[IFLA_NUM_RX_QUEUES]);
	ck_assert_ptr_nonnull(peer[IFLA_NUM_TX_QUEUES]);
	ck_assert_ptr_nonnull(peer[IFLA_NUM_RX_QUEUES]);
	ck_assert_uint_eq(nla_get_u32(tb[IFLA_NUM_TX_QUEUES]), 1);
	ck_assert_uint_eq(nla_get_u32(tb[IFLA_NUM_RX_QUEUES]), 1);
	ck_assert_uint_eq(nla_get_u32(peer[IFLA_NUM_TX_QUEUES]), 1);
	ck_assert_uint_eq(nla_get_u32(peer[IFLA_NUM_RX_QUEUES]), 1);
	ck_assert_int_eq(gnl_link_parse(nlmsg_hdr(m), &back), 0);
	ck_assert_str_eq(back.name, "hveth0");
	ck_assert_str_eq(back.kind, "veth");
	ck_assert_int_eq(back.mtu, 1400);
	nlmsg_free(m);

	gnl_link_init(&l);
	strcpy(l.name, "vrf-a");
	strcpy(l.kind, "vrf");
	l.vrf_table = 16385;
	ck_assert_int_eq(gnl_link_msg(&m, RTM_NEWLINK, NLM_F_CREATE, &l), 0);
	ck_assert_int_eq(nlmsg_parse(nlmsg_hdr(m), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL), 0);
	ck_assert_ptr_null(tb[IFLA_NUM_TX_QUEUES]); /* a vrf keeps the kernel's default */
	ck_assert_int_eq(gnl_link_parse(nlmsg_hdr(m), &back), 0);
	ck_assert_str_eq(back.kind, "vrf");
	ck_assert_int_eq(back.vrf_table, 16385);
	nlmsg_free(m);
	gnl_link_init(&l);
	ck_assert_int_eq(gnl_link_msg(&m, RTM_NEWLINK, 0, &l), -EINVAL); /* no name, no index */
}
END_TEST

START_TEST(t_addr_helpers)
{
	struct gnl_addr a, b;
	char s[64];

	ck_assert_int_eq(gnl_addr_parse("10.1.0.0/16", &a), 0);
	ck_assert_int_eq(a.family, AF_INET);
	ck_assert_int_eq(a.len, 16);
	ck_assert_str_eq(gnl_addr_str(&a, true, s, sizeof(s)), "10.1.0.0/16");
	ck_assert_int_eq(gnl_addr_parse("fd00::1", &b), 0);
	ck_assert_int_eq(b.len, 128);
	ck_assert(!gnl_addr_eq(&a, &b));
	ck_assert_int_eq(gnl_addr_parse("fd00::1/129", &b), -EINVAL);
	ck_assert_int_eq(gnl_addr_parse("10.0.0.1/", &b), -EINVAL);
	ck_assert_int_eq(gnl_addr_parse("nonsense", &b), -EINVAL);
	ck_assert_int_eq(gnl_addr_parse("1.2.3.4/33", &b), -EINVAL);
	/* A negative length is an error, not "no length given". */
	ck_assert_int_eq(gnl_addr_parse("1.2.3.4/-5", &b), -EINVAL);
	ck_assert_int_eq(gnl_addr_parse(NULL, &b), -EINVAL);
}
END_TEST


/* --- replies: NLMSG_ERROR lengths, extended acks, the scan loops ----------- */

/* An NLMSG_ERROR at the end of buf: error code, flags, echoed request length
 * (only when uncapped: its payload follows), then TLVs. Returns its length. */
static size_t put_err(uint8_t *buf, uint32_t seq, int code, uint16_t flags, uint32_t echoed_len,
		      size_t echoed_payload, const char *msg)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nlmsgerr *e = NLMSG_DATA(h);
	size_t off = NLMSG_HDRLEN + sizeof(*e) + NLMSG_ALIGN(echoed_payload);

	memset(buf, 0, 512);
	h->nlmsg_type = NLMSG_ERROR;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	e->error = code;
	e->msg.nlmsg_len = echoed_len;
	if (msg) {
		struct nlattr *a = (struct nlattr *)(buf + off);

		a->nla_type = NLMSGERR_ATTR_MSG;
		a->nla_len = (uint16_t)(NLA_HDRLEN + strlen(msg) + 1);
		memcpy(buf + off + NLA_HDRLEN, msg, strlen(msg) + 1);
		off += NLA_ALIGN(a->nla_len);
	}
	h->nlmsg_len = (uint32_t)off;
	return off;
}

START_TEST(t_msg_error_lengths)
{
	uint8_t buf[512] __attribute__((aligned(4)));
	struct nlmsghdr *h = (struct nlmsghdr *)buf;

	put_err(buf, 1, -EEXIST, NLM_F_CAPPED, 16, 0, NULL);
	ck_assert_int_eq(gnl_msg_error(h), -EEXIST);
	/* Too short to hold a struct nlmsgerr: an error, never a read beyond it. */
	h->nlmsg_len = NLMSG_HDRLEN + sizeof(int);
	ck_assert_int_eq(gnl_msg_error(h), -EBADMSG);
	h->nlmsg_len = NLMSG_HDRLEN;
	ck_assert_int_eq(gnl_msg_error(h), -EBADMSG);
	/* A positive error would read as "pending" (1) or as a callback's result. */
	put_err(buf, 1, 1, NLM_F_CAPPED, 16, 0, NULL);
	ck_assert_int_eq(gnl_msg_error(h), -EPROTO);
}
END_TEST

START_TEST(t_extack_bounds)
{
	uint8_t buf[512] __attribute__((aligned(4)));
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	char ext[128];

	put_err(buf, 1, -EINVAL, NLM_F_CAPPED | NLM_F_ACK_TLVS, 16, 0, "Invalid prefix");
	gnl_extack(h, ext, sizeof(ext));
	ck_assert_str_eq(ext, "Invalid prefix");
	/* Uncapped: the whole request is echoed before the TLVs. */
	put_err(buf, 1, -EINVAL, NLM_F_ACK_TLVS, 16 + 24, 24, "No such route");
	gnl_extack(h, ext, sizeof(ext));
	ck_assert_str_eq(ext, "No such route");
	/* An echoed length below a header used to wrap the offset far outside
	 * the message; one beyond the message must not be followed either. */
	put_err(buf, 1, -EINVAL, NLM_F_ACK_TLVS, 0, 0, "x");
	strcpy(ext, "stale");
	gnl_extack(h, ext, sizeof(ext));
	ck_assert_str_eq(ext, "");
	put_err(buf, 1, -EINVAL, NLM_F_ACK_TLVS, 4000, 0, "x");
	gnl_extack(h, ext, sizeof(ext));
	ck_assert_str_eq(ext, "");
	/* A TLV longer than the message, and a truncated message. */
	put_err(buf, 1, -EINVAL, NLM_F_CAPPED | NLM_F_ACK_TLVS, 16, 0, "abc");
	((struct nlattr *)(buf + NLMSG_HDRLEN + sizeof(struct nlmsgerr)))->nla_len = 400;
	gnl_extack(h, ext, sizeof(ext));
	ck_assert_str_eq(ext, "");
	h->nlmsg_len = NLMSG_HDRLEN + 2;
	gnl_extack(h, ext, sizeof(ext));
	ck_assert_str_eq(ext, "");
	/* A message longer than ext is cut, and terminated. */
	{
		char big[300];

		memset(big, 'm', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		put_err(buf, 1, -EINVAL, NLM_F_CAPPED | NLM_F_ACK_TLVS, 16, 0, big);
		gnl_extack(h, ext, sizeof(ext));
		ck_assert_uint_eq(strlen(ext), sizeof(ext) - 1);
	}
}
END_TEST

START_TEST(t_acks_scan_truncated_and_stale)
{
	uint8_t buf[2048] __attribute__((aligned(4)));
	struct gnl_batch b;
	size_t idx[3] = { 0, 1, 2 }, off = 0;

	gnl_batch_init(&b);
	b.v = calloc(3, sizeof(*b.v));
	ck_assert_ptr_nonnull(b.v);
	b.n = b.capn = 3;
	for (int i = 0; i < 3; i++)
		b.v[i].err = 1;
	off += put_err(buf + off, 99, -EPERM, NLM_F_CAPPED, 16, 0, NULL);   /* stale */
	off += put_err(buf + off, 100, 0, NLM_F_CAPPED, 16, 0, NULL);       /* ok */
	off += put_err(buf + off, 101, -EEXIST, NLM_F_CAPPED | NLM_F_ACK_TLVS, 16, 0, "File exists");
	off += put_err(buf + off, 100, -EIO, NLM_F_CAPPED, 16, 0, NULL);    /* a second answer */
	/* The third: an error message cut short after its header and 4 bytes. */
	{
		struct nlmsghdr *h = (struct nlmsghdr *)(buf + off);

		put_err(buf + off, 102, -ENOMEM, NLM_F_CAPPED, 16, 0, NULL);
		h->nlmsg_len = NLMSG_HDRLEN + 4;
		off += NLMSG_ALIGN(h->nlmsg_len);
	}
	ck_assert_uint_eq(gnl_acks_scan(&b, idx, 3, 100, buf, off), 3);
	ck_assert_int_eq(b.v[0].err, 0);
	ck_assert_int_eq(b.v[1].err, -EEXIST);
	ck_assert_str_eq(b.v[1].ext, "File exists");
	ck_assert_int_eq(b.v[2].err, -EBADMSG);
	gnl_batch_free(&b);
}
END_TEST

static int count_cb(const struct nlmsghdr *h, void *arg)
{
	(void)h;
	return ++*(int *)arg == 2 ? 7 : 0;
}

START_TEST(t_dump_and_get_scan)
{
	uint8_t buf[2048] __attribute__((aligned(4)));
	struct nlmsghdr *h;
	size_t off = 0;
	int seen = 0, stop = 0, rc = 99;
	bool intr = false;

	for (int i = 0; i < 3; i++) {
		h = (struct nlmsghdr *)(buf + off);
		memset(h, 0, NLMSG_LENGTH(4));
		h->nlmsg_len = NLMSG_LENGTH(4);
		h->nlmsg_type = RTM_NEWLINK;
		h->nlmsg_seq = 5;
		h->nlmsg_flags = i == 1 ? NLM_F_DUMP_INTR : 0;
		off += NLMSG_ALIGN(h->nlmsg_len);
	}
	/* More to come: no DONE yet. */
	ck_assert_int_eq(gnl_dump_scan(buf, off, 5, count_cb, &seen, &stop, &intr, &rc), 0);
	ck_assert_int_eq(seen, 2); /* stopped at the second, read on to stay in sync */
	ck_assert_int_eq(stop, 7);
	ck_assert(intr);
	h = (struct nlmsghdr *)buf;
	h->nlmsg_type = NLMSG_DONE;
	ck_assert_int_eq(gnl_dump_scan(buf, NLMSG_ALIGN(h->nlmsg_len), 5, count_cb, &seen, &stop, &intr, &rc), 1);
	ck_assert_int_eq(rc, 7);
	/* A dump ended by a truncated error: -EBADMSG, not a read beyond it. */
	stop = 0;
	intr = false;
	put_err(buf, 5, -EBUSY, 0, 16, 0, NULL);
	((struct nlmsghdr *)buf)->nlmsg_len = NLMSG_HDRLEN + 1;
	ck_assert_int_eq(gnl_dump_scan(buf, NLMSG_HDRLEN + 1, 5, count_cb, &seen, &stop, &intr, &rc), 1);
	ck_assert_int_eq(rc, -EBADMSG);
	/* A get: its reply, then the ack carrying the error. */
	seen = 0;
	stop = 0;
	put_err(buf, 6, -ENODEV, NLM_F_CAPPED, 16, 0, NULL);
	ck_assert_int_eq(gnl_get_scan(buf, ((struct nlmsghdr *)buf)->nlmsg_len, 6, count_cb, &seen, &stop, &rc), 1);
	ck_assert_int_eq(rc, -ENODEV);
	ck_assert_int_eq(seen, 0);
	/* Another request's messages are not ours. */
	ck_assert_int_eq(gnl_get_scan(buf, ((struct nlmsghdr *)buf)->nlmsg_len, 7, count_cb, &seen, &stop, &rc), 0);
}
END_TEST

/*
 * The dump retry (gnl_retry_intr, gnl_dump_restarting's policy): each try
 * is one dump reply fed through gnl_dump_scan; the first `intr` replies
 * carry NLM_F_DUMP_INTR. What an interrupted try gathered is forgotten
 * (restart), the try is repeated after a doubling backoff, and the number
 * of tries is bounded.
 */
struct fake_dump {
	int intr;          /* replies still to come with NLM_F_DUMP_INTR */
	int err;           /* a reply ending in this error instead (0: none) */
	int calls, restarts;
	int seen;          /* objects gathered (reset by restart) */
};

static int gather_cb(const struct nlmsghdr *h, void *arg)
{
	(void)h;
	((struct fake_dump *)arg)->seen++;
	return 0;
}

static int fake_dump_once(void *ctx)
{
	struct fake_dump *f = ctx;
	uint8_t buf[1024] __attribute__((aligned(4)));
	struct nlmsghdr *h;
	size_t off = 0;
	int stop = 0, rc = 99;
	bool intr = false;

	f->calls++;
	for (int i = 0; i < 4; i++) { /* three objects and DONE */
		h = (struct nlmsghdr *)(buf + off);
		memset(h, 0, NLMSG_LENGTH(4));
		h->nlmsg_len = NLMSG_LENGTH(4);
		h->nlmsg_type = i == 3 ? NLMSG_DONE : RTM_NEWROUTE;
		h->nlmsg_seq = 9;
		h->nlmsg_flags = NLM_F_MULTI | (f->intr > 0 && i == 1 ? NLM_F_DUMP_INTR : 0);
		off += NLMSG_ALIGN(h->nlmsg_len);
	}
	if (f->err) /* the error in DONE's place */
		off = NLMSG_ALIGN(NLMSG_LENGTH(4)) * 3 + put_err(buf + NLMSG_ALIGN(NLMSG_LENGTH(4)) * 3, 9, f->err, 0, 16, 0, NULL);
	if (f->intr > 0)
		f->intr--;
	ck_assert_int_eq(gnl_dump_scan(buf, off, 9, gather_cb, f, &stop, &intr, &rc), 1);
	return rc;
}

static void fake_restart(void *arg)
{
	struct fake_dump *f = arg;

	f->restarts++;
	f->seen = 0;
}

START_TEST(t_dump_intr_retry)
{
	struct gnl_retry p = { 6, 100, 400, 0, 0 };
	struct fake_dump f = { .intr = 3 };

	/* three interrupted replies, then a whole one: its three objects, once */
	ck_assert_int_eq(gnl_retry_intr(&p, fake_dump_once, &f, fake_restart, &f), 0);
	ck_assert_int_eq(f.calls, 4);
	ck_assert_int_eq(f.restarts, 3);
	ck_assert_int_eq(f.seen, 3);
	ck_assert_uint_eq(p.interrupted, 3);
	ck_assert_uint_eq(p.slept_us, 100 + 200 + 400); /* doubling, capped at max_us */
	/* interrupted every time: bounded, -EAGAIN to the caller */
	f = (struct fake_dump){ .intr = 1000 };
	ck_assert_int_eq(gnl_retry_intr(&p, fake_dump_once, &f, fake_restart, &f), -EAGAIN);
	ck_assert_int_eq(f.calls, 6);
	ck_assert_uint_eq(p.interrupted, 6);
	ck_assert_uint_eq(p.slept_us, 100 + 200 + 400 + 400 + 400);
	/* another error is not retried */
	f = (struct fake_dump){ .err = -EBUSY };
	ck_assert_int_eq(gnl_retry_intr(&p, fake_dump_once, &f, fake_restart, &f), -EBUSY);
	ck_assert_int_eq(f.calls, 1);
	ck_assert_int_eq(f.restarts, 0);
	ck_assert_uint_eq(p.interrupted, 0);
	/* a clean dump: one call, no sleep */
	f = (struct fake_dump){ 0 };
	ck_assert_int_eq(gnl_retry_intr(&p, fake_dump_once, &f, fake_restart, &f), 0);
	ck_assert_int_eq(f.calls, 1);
	ck_assert_uint_eq(p.slept_us, 0);
	/* the shipped policy is bounded: at most ~1.3 s asleep over its tries */
	{
		unsigned long total = 0, b = GNL_DUMP_BACKOFF_US;

		for (unsigned t = 1; t < GNL_DUMP_TRIES; t++, b = b * 2 > GNL_DUMP_BACKOFF_MAX_US ? GNL_DUMP_BACKOFF_MAX_US : b * 2)
			total += b;
		ck_assert_uint_le(total, 1400000);
		ck_assert_uint_ge(GNL_DUMP_TRIES, 10); /* never fewer tries than before */
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nl_codec");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, t_seg6_route_vector);
	tcase_add_test(tc, t_seg6_multi_segment_order);
	tcase_add_test(tc, t_seg6local_decode_vector);
	tcase_add_test(tc, t_seg6local_actions_roundtrip);
	tcase_add_test(tc, t_route_malformed_rejected);
	tcase_add_test(tc, t_rule_vector);
	tcase_add_test(tc, t_rule_fwmark_dst);
	tcase_add_test(tc, t_neigh_vector);
	tcase_add_test(tc, t_addr_roundtrip);
	tcase_add_test(tc, t_link_veth_vrf_encoding);
	tcase_add_test(tc, t_addr_helpers);
	tcase_add_test(tc, t_msg_error_lengths);
	tcase_add_test(tc, t_extack_bounds);
	tcase_add_test(tc, t_acks_scan_truncated_and_stale);
	tcase_add_test(tc, t_dump_and_get_scan);
	tcase_add_test(tc, t_dump_intr_retry);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
