/* Desired-state model (SIDs, validation), results, and the durable state record. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/record_legacy.h"
#include "common/fileio.h"
#include "tests/lib/gtest.h"

static struct gdp_node node1 = { .block = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, .node_id = 1, .uplink = "up0" };

static const char *sidstr(unsigned fn, uint16_t arg, char *buf)
{
	struct in6_addr s;

	gdp_sid(&node1, fn, arg, &s);
	return inet_ntop(AF_INET6, &s, buf, INET6_ADDRSTRLEN);
}

START_TEST(t_sid_format)
{
	char b[INET6_ADDRSTRLEN];
	struct in6_addr s;
	uint8_t blk[6];
	uint16_t node, arg;
	unsigned fn;

	ck_assert_str_eq(sidstr(GDP_FN_DECAP, 1, b), "fcbb:bb00:1:1:e001::");
	ck_assert_str_eq(sidstr(GDP_FN_DX4, 0xfff, b), "fcbb:bb00:1:1:dfff::");
	ck_assert_str_eq(sidstr(GDP_FN_DX6, 0x12, b), "fcbb:bb00:1:1:c012::");
	inet_pton(AF_INET6, "fcbb:bb00:1:dfff:e123::", &s);
	ck_assert_int_eq(gdp_sid_parse(&s, blk, &node, &fn, &arg), 0);
	ck_assert_int_eq(node, 0xdfff);
	ck_assert_int_eq(fn, 0xe);
	ck_assert_int_eq(arg, 0x123);
	ck_assert_mem_eq(blk, node1.block, 6);
	inet_pton(AF_INET6, "fcbb:bb00:1:e000:e001::", &s); /* node id above 0xDFFF */
	ck_assert_int_eq(gdp_sid_parse(&s, NULL, NULL, NULL, NULL), -EINVAL);
	inet_pton(AF_INET6, "fcbb:bb00:1:0:e001::", &s);    /* node id 0 */
	ck_assert_int_eq(gdp_sid_parse(&s, NULL, NULL, NULL, NULL), -EINVAL);
	inet_pton(AF_INET6, "fcbb:bb00:1:1:e001::1", &s);   /* trailing bits */
	ck_assert_int_eq(gdp_sid_parse(&s, NULL, NULL, NULL, NULL), -EINVAL);
	ck_assert_str_eq(inet_ntop(AF_INET, &(struct in_addr){ gdp_default_nh4(1).s_addr }, b, sizeof(b)), "169.254.16.1");
	ck_assert_str_eq(inet_ntop(AF_INET, &(struct in_addr){ gdp_default_nh4(0x105).s_addr }, b, sizeof(b)), "169.254.17.5");
	ck_assert_str_eq(inet_ntop(AF_INET, &(struct in_addr){ gdp_default_nh4(0xfff).s_addr }, b, sizeof(b)), "169.254.31.255");
}
END_TEST

START_TEST(t_prefixes)
{
	struct gdp_prefix a, b;
	char s[64];

	ck_assert_int_eq(gdp_prefix_parse("fd00:a::/64", &a), 0);
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::5", &b), 0);
	ck_assert_int_eq(b.len, 128);
	ck_assert(gdp_prefix_contains(&a, &b));
	ck_assert(!gdp_prefix_contains(&b, &a));
	ck_assert_int_eq(gdp_prefix_parse("fd00:b::5", &b), 0);
	ck_assert(!gdp_prefix_contains(&a, &b));
	ck_assert_int_eq(gdp_prefix_parse("10.1.0.0/16", &a), 0);
	ck_assert_int_eq(gdp_prefix_parse("10.1.200.3", &b), 0);
	ck_assert(gdp_prefix_contains(&a, &b));
	ck_assert_int_eq(gdp_prefix_parse("10.2.0.1/32", &b), 0);
	ck_assert(!gdp_prefix_contains(&a, &b));
	ck_assert_int_eq(gdp_prefix_parse("10.1.0.0/15", &b), 0);
	ck_assert(!gdp_prefix_contains(&a, &b)); /* wider than the outer */
	ck_assert_str_eq(gdp_prefix_str(&a, s, sizeof(s)), "10.1.0.0/16");
	ck_assert_int_eq(gdp_prefix_parse("10.1.0.0/33", &a), -EINVAL);
	ck_assert_int_eq(gdp_prefix_parse("zz::1", &a), -EINVAL);
	ck_assert_int_eq(gdp_prefix_parse(NULL, &a), -EINVAL);
}
END_TEST

static void base_state(struct gdp_state *s)
{
	struct gdp_vpc a = { .id = "vpcA", .arg = 1, .table = 16385, .n_prefixes = 2 };
	struct gdp_vpc b = { .id = "vpcB", .arg = 2, .table = 16386, .n_prefixes = 1 };
	struct gdp_attachment at = { .vpc = "vpcA", .id = "att1", .host_ifname = "h1", .arg = 1, .n_addrs = 2 };

	gdp_state_init(s);
	s->node = node1;
	gdp_prefix_parse("fd00:a::/64", &a.prefixes[0]);
	gdp_prefix_parse("10.1.0.0/16", &a.prefixes[1]);
	gdp_prefix_parse("fd00:a::/64", &b.prefixes[0]);
	ck_assert_int_eq(gdp_state_add_vpc(s, &a), 0);
	ck_assert_int_eq(gdp_state_add_vpc(s, &b), 0);
	gdp_prefix_parse("fd00:a::1", &at.addrs[0]);
	gdp_prefix_parse("10.1.0.1", &at.addrs[1]);
	at.nh4 = gdp_default_nh4(1);
	ck_assert_int_eq(gdp_state_add_attachment(s, &at), 0);
}

START_TEST(t_validate_vpcs)
{
	struct gdp_state s;
	struct gdp_vpc v = { .id = "vpcC", .arg = 1, .table = 16390 };
	char err[256];

	base_state(&s);
	ck_assert_int_eq(gdp_validate_node(&s.node, err, sizeof(err)), 0);
	ck_assert_int_eq(gdp_validate_vpc(&s, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(gdp_validate_vpc(&s, 1, err, sizeof(err)), 0);
	gdp_state_add_vpc(&s, &v); /* arg 1 taken by vpcA */
	ck_assert_int_eq(gdp_validate_vpc(&s, 2, err, sizeof(err)), -EEXIST);
	ck_assert_str_eq(err, "vpc vpcC: argument 1 already used by vpc vpcA");
	s.vpcs[2].arg = 3;
	s.vpcs[2].table = 16386;
	ck_assert_int_eq(gdp_validate_vpc(&s, 2, err, sizeof(err)), -EEXIST);
	ck_assert_str_eq(err, "vpc vpcC: table 16386 already used by vpc vpcB");
	s.vpcs[2].table = 254;
	ck_assert_int_eq(gdp_validate_vpc(&s, 2, err, sizeof(err)), -EINVAL);
	s.vpcs[2].table = 16390;
	strcpy(s.vpcs[2].id, "bad-id!");
	ck_assert_int_eq(gdp_validate_vpc(&s, 2, err, sizeof(err)), -EINVAL);
	strcpy(s.vpcs[2].id, "vpcC");
	s.vpcs[2].arg = 0x1000;
	ck_assert_int_eq(gdp_validate_vpc(&s, 2, err, sizeof(err)), -EINVAL);
	s.node.node_id = 0xe000;
	ck_assert_int_eq(gdp_validate_node(&s.node, err, sizeof(err)), -EINVAL);
	gdp_state_free(&s);
}
END_TEST

START_TEST(t_validate_attachments)
{
	struct gdp_state s;
	struct gdp_attachment a;
	char err[256];

	base_state(&s);
	ck_assert_int_eq(gdp_validate_attachment(&s, 0, err, sizeof(err)), 0);
	a = s.atts[0];                                  /* same vpc + id */
	strcpy(a.host_ifname, "h2");
	a.arg = 2;
	a.nh4 = gdp_default_nh4(2);
	gdp_state_add_attachment(&s, &a);
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EEXIST);
	ck_assert_str_eq(err, "attachment vpcA/att1: duplicate attachment");
	strcpy(s.atts[1].id, "att2");                   /* same address in the same VPC */
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "already used by attachment att1"));
	strcpy(s.atts[1].vpc, "vpcB");                  /* ... fine in another VPC, */
	s.atts[1].n_addrs = 1;                          /* (vpcB has no IPv4 range) */
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), 0);
	strcpy(s.atts[1].host_ifname, "h1");            /* but never on the same veth */
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EEXIST);
	strcpy(s.atts[1].host_ifname, "h2");
	s.atts[1].n_addrs = 2;                          /* 10.1.0.1 is outside vpcB */
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "outside the VPC"));
	s.atts[1].n_addrs = 1;
	strcpy(s.atts[1].vpc, "nope");
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -ENOENT);
	strcpy(s.atts[1].vpc, "vpcB");
	s.atts[1].arg = 1;
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EEXIST);
	s.atts[1].arg = 2;
	inet_pton(AF_INET, "10.0.0.1", &s.atts[1].nh4); /* nh4 must be link-local */
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EINVAL);
	s.atts[1].nh4.s_addr = 0;
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), 0);
	/* A self-addressing guest: no addresses, rules only. */
	s.atts[1].n_addrs = 0;
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), 0);
	/* A delegated IPv6 block: a prefix without host bits is fine... */
	s.atts[1].n_addrs = 1;
	memset(&s.atts[1].addrs[0], 0, sizeof(s.atts[1].addrs[0]));
	s.atts[1].addrs[0].family = AF_INET6;
	s.atts[1].addrs[0].len = 96;
	inet_pton(AF_INET6, "fd00:a::1:0:0", &s.atts[1].addrs[0].addr.v6);
	ck_assert_msg(gdp_validate_attachment(&s, 1, err, sizeof(err)) == 0, "%s", err);
	/* ...one with host bits, a /0, or a shorter IPv4 prefix is not. */
	inet_pton(AF_INET6, "fd00:a::1:0:5", &s.atts[1].addrs[0].addr.v6);
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "host bits"));
	memset(&s.atts[1].addrs[0].addr, 0, sizeof(s.atts[1].addrs[0].addr));
	s.atts[1].addrs[0].len = 0;
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EINVAL);
	s.atts[1].addrs[0].family = AF_INET;
	s.atts[1].addrs[0].len = 24;
	ck_assert_int_eq(gdp_validate_attachment(&s, 1, err, sizeof(err)), -EINVAL);
	gdp_state_free(&s);
}
END_TEST

/* The remotes' interned VPC ids (model.h): one index per id, from any thread. */
#define NAME_THREADS 4
#define NAME_IDS     300
static void *intern_many(void *arg)
{
	uint32_t *ix = arg;
	char id[32];

	for (int i = 0; i < NAME_IDS; i++) {
		snprintf(id, sizeof(id), "t-%d", (i * 7 + (int)(ix[NAME_IDS] * 13)) % NAME_IDS);
		if (gdp_vpc_intern(id, &ix[(i * 7 + (int)(ix[NAME_IDS] * 13)) % NAME_IDS]))
			return (void *)1;
	}
	return NULL;
}

START_TEST(t_vpc_names)
{
	static uint32_t got[NAME_THREADS][NAME_IDS + 1];
	char long_id[GDP_ID_MAX + 2];
	struct gdp_remote r = { 0 };
	pthread_t th[NAME_THREADS];
	uint32_t a, b, c;
	size_t bad = 0;

	ck_assert_uint_le(sizeof(struct gdp_remote), 40);
	ck_assert_str_eq(gdp_remote_vpc(&r), ""); /* zeroed: "" */
	ck_assert_int_eq(gdp_vpc_intern("", &a), 0);
	ck_assert_uint_eq(a, 0);
	ck_assert_int_eq(gdp_vpc_find("names-never", &a), -ENOENT);
	ck_assert_int_eq(gdp_vpc_intern("names-A", &a), 0);
	ck_assert_int_eq(gdp_vpc_intern("names-B", &b), 0);
	ck_assert_uint_ne(a, 0);
	ck_assert_uint_ne(a, b);
	ck_assert_int_eq(gdp_vpc_intern("names-A", &c), 0);
	ck_assert_uint_eq(a, c);
	ck_assert_int_eq(gdp_vpc_find("names-B", &c), 0);
	ck_assert_uint_eq(b, c);
	ck_assert_str_eq(gdp_vpc_name(a), "names-A");
	ck_assert_str_eq(gdp_vpc_name(b), "names-B");
	ck_assert_str_eq(gdp_vpc_name(GDP_VPC_NAMES_MAX - 1), ""); /* never given out */
	ck_assert_int_eq(gdp_remote_set_vpc(&r, "names-B"), 0);
	ck_assert_uint_eq(r.vpc_ix, b);
	ck_assert_str_eq(gdp_remote_vpc(&r), "names-B");
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = 0;
	ck_assert_int_eq(gdp_remote_set_vpc(&r, long_id), -EINVAL);
	ck_assert_uint_eq(r.vpc_ix, b); /* unchanged */
	long_id[GDP_ID_MAX] = 0;        /* the longest id */
	ck_assert_int_eq(gdp_vpc_intern(long_id, &c), 0);
	ck_assert_str_eq(gdp_vpc_name(c), long_id);
	/* Threads interning the same ids in different orders (the hash grows
	 * meanwhile): each id one index, the same in every thread. */
	for (int t = 0; t < NAME_THREADS; t++) {
		got[t][NAME_IDS] = (uint32_t)t;
		ck_assert_int_eq(pthread_create(&th[t], NULL, intern_many, got[t]), 0);
	}
	for (int t = 0; t < NAME_THREADS; t++) {
		void *rv;

		ck_assert_int_eq(pthread_join(th[t], &rv), 0);
		ck_assert_ptr_null(rv);
	}
	for (int i = 0; i < NAME_IDS; i++) {
		char id[32];

		snprintf(id, sizeof(id), "t-%d", i);
		for (int t = 0; t < NAME_THREADS; t++)
			bad += got[t][i] != got[0][i] || strcmp(gdp_vpc_name(got[t][i]), id);
		for (int j = 0; j < i; j++)
			bad += got[0][j] == got[0][i];
	}
	ck_assert_uint_eq(bad, 0);
}
END_TEST

START_TEST(t_validate_remotes)
{
	static const char *const bad_sids[] = { "::", "::1", "ff02::1", "fe80::1", "::ffff:10.0.0.1",
						"fcbb:bb00:1:e000:e001::", "fcbb:bb00:1:2:e001::5" };
	struct gdp_state s;
	struct gdp_remote r = { .vpc_ix = gdp_vpc_ix("vpcA") };
	char err[256];
	size_t i;

	base_state(&s);
	gdp_prefix_parse("fd00:a::2/128", &r.prefix);
	inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &r.sid);
	gdp_state_add_remote(&s, &r);
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), 0);
	for (i = 0; i < sizeof(bad_sids) / sizeof(bad_sids[0]); i++) {
		inet_pton(AF_INET6, bad_sids[i], &s.remotes[0].sid);
		ck_assert_msg(gdp_validate_remote(&s, 0, err, sizeof(err)) == -EINVAL, "SID %s accepted", bad_sids[i]);
		ck_assert_ptr_nonnull(strstr(err, "invalid SID"));
	}
	s.remotes[0].sid = r.sid;
	gdp_prefix_parse("fd00:b::2/128", &s.remotes[0].prefix);
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "remote fd00:b::2/128 in vpc vpcA: prefix outside the VPC's prefixes");
	gdp_prefix_parse("fd00:a::1/128", &s.remotes[0].prefix); /* served by local att1 */
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), -EEXIST);
	gdp_prefix_parse("fd00:a::1/120", &s.remotes[0].prefix); /* host bits set */
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "remote fd00:a::1/120 in vpc vpcA: invalid prefix");
	gdp_prefix_parse("fd00:a::c0/121", &s.remotes[0].prefix); /* a host bit in the length's own byte */
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), -EINVAL);
	gdp_prefix_parse("fd00:a::100/120", &s.remotes[0].prefix); /* canonical, not local */
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), 0);
	gdp_prefix_parse("fd00:a::/64", &s.remotes[0].prefix);
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), 0);
	gdp_prefix_parse("fd00:a:0:0:1::/64", &s.remotes[0].prefix); /* a later byte */
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(gdp_remote_set_vpc(&s.remotes[0], "vpcZ"), 0);
	ck_assert_int_eq(gdp_validate_remote(&s, 0, err, sizeof(err)), -ENOENT);
	gdp_state_free(&s);
}
END_TEST

/*
 * The indexed check (gdp_validate_remote_in) rejects what the scan rejects,
 * with the same message: local addresses by VPC, family and length, the
 * first attachment in the state's order named, every other check first.
 */
START_TEST(t_validate_remotes_indexed)
{
	static const char *const pfx[] = { "fd00:a::1/128", "fd00:a::2/128", "fd00:a::3/128", "fd00:a::1/127",
					   "10.1.0.1/32",   "10.1.0.2/32",   "10.1.0.3/32",   "10.1.0.0/31",
					   "fd00:a::/64",   "10.1.0.1/24",   "fd00:b::1/128", "10.2.0.1/32" };
	static const char *const vpcs[] = { "vpcA", "vpcB", "vpcZ" };
	struct gdp_state s;
	struct gdp_locals lx = { 0 };
	char e1[256], e2[256];
	size_t i, n_eexist = 0, n_ok = 0;

	base_state(&s);
	/* att2 (vpcA) holds att1's fd00:a::1 again and fd00:a::2; att3 (vpcB) holds fd00:a::3, 10.1.0.2 */
	{
		struct gdp_attachment a2 = { .vpc = "vpcA", .id = "att2", .host_ifname = "h2", .arg = 2, .n_addrs = 2 };
		struct gdp_attachment a3 = { .vpc = "vpcB", .id = "att3", .host_ifname = "h3", .arg = 3, .n_addrs = 2 };

		gdp_prefix_parse("fd00:a::2", &a2.addrs[0]);
		gdp_prefix_parse("fd00:a::1", &a2.addrs[1]);
		gdp_prefix_parse("fd00:a::3", &a3.addrs[0]);
		gdp_prefix_parse("10.1.0.2", &a3.addrs[1]);
		ck_assert_int_eq(gdp_state_add_attachment(&s, &a2), 0);
		ck_assert_int_eq(gdp_state_add_attachment(&s, &a3), 0);
	}
	for (size_t v = 0; v < 3; v++)
		for (i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++) {
			struct gdp_remote r = { 0 };

			ck_assert_int_eq(gdp_remote_set_vpc(&r, vpcs[v]), 0);
			ck_assert_int_eq(gdp_prefix_parse(pfx[i], &r.prefix), 0);
			inet_pton(AF_INET6, i % 5 == 3 ? "fe80::1" : "fcbb:bb00:1:2:e001::", &r.sid);
			ck_assert_int_eq(gdp_state_add_remote(&s, &r), 0);
		}
	for (i = 0; i < s.n_remotes; i++) {
		int a = gdp_validate_remote(&s, i, e1, sizeof(e1)), b;

		e2[0] = 0;
		b = gdp_validate_remote_in(&s, &lx, i, e2, sizeof(e2));
		ck_assert_int_eq(a, b);
		if (a)
			ck_assert_str_eq(e1, e2);
		n_eexist += a == -EEXIST;
		n_ok += !a;
	}
	ck_assert_int_eq(lx.built, 1);
	ck_assert_uint_eq(lx.n, 6);
	/* vpcA: fd00:a::1 (att1, first of two), fd00:a::2 (att2), 10.1.0.1 (att1); vpcB: fd00:a::3 (att3) */
	ck_assert_uint_eq(n_eexist, 4);
	ck_assert_uint_gt(n_ok, 0);
	ck_assert_int_eq(gdp_validate_remote_in(&s, &lx, 0, e2, sizeof(e2)), -EEXIST);
	ck_assert_str_eq(e2, "remote fd00:a::1/128 in vpc vpcA: address is local (attachment att1)");
	ck_assert_int_eq(gdp_validate_remote_in(&s, &lx, 1, e2, sizeof(e2)), -EEXIST);
	ck_assert_str_eq(e2, "remote fd00:a::2/128 in vpc vpcA: address is local (attachment att2)");
	ck_assert_int_eq(gdp_validate_remote_in(&s, &lx, 12 + 2, e2, sizeof(e2)), -EEXIST);
	ck_assert_str_eq(e2, "remote fd00:a::3/128 in vpc vpcB: address is local (attachment att3)");
	ck_assert_int_eq(gdp_validate_remote_in(&s, &lx, 5, e2, sizeof(e2)), 0); /* vpcA 10.1.0.2: att3 holds it in vpcB */
	gdp_locals_free(&lx);
	ck_assert_ptr_null(lx.v);
	ck_assert_int_eq(lx.built, 0);
	/* a state without attachments: nothing is local */
	{
		struct gdp_state e;
		struct gdp_remote r = { .vpc_ix = gdp_vpc_ix("vpcA") };

		base_state(&e);
		e.n_atts = 0;
		gdp_prefix_parse("fd00:a::1/128", &r.prefix);
		inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &r.sid);
		gdp_state_add_remote(&e, &r);
		ck_assert_int_eq(gdp_validate_remote_in(&e, &lx, 0, e2, sizeof(e2)), 0);
		ck_assert_uint_eq(lx.n, 0);
		gdp_locals_free(&lx);
		gdp_state_free(&e);
	}
	gdp_state_free(&s);
}
END_TEST

START_TEST(t_results)
{
	struct gdp_results r;
	struct gdp_result *a, *b;

	gdp_results_init(&r);
	a = gdp_results_get(&r, GDP_OBJ_REMOTE, "vpcA", "fd00:a::2/128");
	b = gdp_results_get(&r, GDP_OBJ_REMOTE, "vpcA", "fd00:a::2/128");
	ck_assert_ptr_eq(a, b);
	gdp_result_fail(a, -EEXIST, "add route %s: %s", "fd00:a::2/128 table 100", "File exists");
	gdp_result_fail(a, -ENOMEM, "second");
	ck_assert_int_eq(a->err, -EEXIST);
	ck_assert_str_eq(a->msg, "add route fd00:a::2/128 table 100: File exists");
	ck_assert_ptr_ne(gdp_results_get(&r, GDP_OBJ_VPC, "vpcA", NULL), a);
	ck_assert_int_eq(r.n, 2);
	ck_assert_ptr_eq(gdp_backend_find("kernel"), &gdp_kernel_backend);
	ck_assert_ptr_null(gdp_backend_find("nope"));
	gdp_results_free(&r);
}
END_TEST

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

START_TEST(t_state_roundtrip)
{
	char dir[] = "/tmp/gst-test.XXXXXX", err[512], path[600];
	struct gdp_state s, back;
	struct gdp_results bad;
	struct gdp_remote r = { .vpc_ix = gdp_vpc_ix("vpcA") };
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	base_state(&s);
	memcpy(s.atts[0].pod_mac, (uint8_t[]){ 2, 0, 0, 0, 0, 0x42 }, 6);
	s.atts[0].mtu = 1400;
	strcpy(s.atts[0].container_id, "c0ffee");
	gdp_prefix_parse("fd00:a::2/128", &r.prefix);
	inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &r.sid);
	gdp_state_add_remote(&s, &r);
	ck_assert_int_eq(legacy_save_state(dir, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(legacy_save_remotes(dir, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(count_files(dir), 2); /* no temporary file left behind */
	gdp_results_init(&bad);
	ck_assert_int_eq(legacy_load(dir, &back, &bad, err, sizeof(err)), 0);
	ck_assert_int_eq(bad.n, 0);
	ck_assert_mem_eq(back.node.block, s.node.block, 6);
	ck_assert_int_eq(back.node.node_id, 1);
	ck_assert_str_eq(back.node.uplink, "up0");
	ck_assert_int_eq(back.n_vpcs, 2);
	ck_assert_int_eq(back.vpcs[0].table, 16385);
	ck_assert_int_eq(back.vpcs[0].n_prefixes, 2);
	ck_assert(gdp_prefix_equal(&back.vpcs[0].prefixes[1], &s.vpcs[0].prefixes[1]));
	ck_assert_int_eq(back.n_atts, 1);
	ck_assert_str_eq(back.atts[0].container_id, "c0ffee");
	ck_assert_int_eq(back.atts[0].n_addrs, 2);
	ck_assert(gdp_prefix_equal(&back.atts[0].addrs[1], &s.atts[0].addrs[1]));
	ck_assert_int_eq(back.atts[0].nh4.s_addr, s.atts[0].nh4.s_addr);
	ck_assert_mem_eq(back.atts[0].pod_mac, s.atts[0].pod_mac, 6);
	ck_assert_int_eq(back.atts[0].mtu, 1400);
	ck_assert_int_eq(back.n_remotes, 1);
	ck_assert_mem_eq(&back.remotes[0].sid, &r.sid, 16);
	gdp_state_free(&back);

	/* one broken attachment is reported alone; the rest loads */
	snprintf(path, sizeof(path), "%s/state.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":1},"
		   "\"vpcs\":[{\"id\":\"vpcA\",\"arg\":1,\"table\":16385}],"
		   "\"attachments\":[{\"vpc\":\"vpcA\",\"id\":\"x\",\"host_ifname\":\"h1\",\"arg\":1,\"addrs\":[\"nope\"]},"
		   "{\"vpc\":\"vpcA\",\"id\":\"y\",\"host_ifname\":\"h2\",\"arg\":2,\"addrs\":[\"fd00:a::9\"],\"pod_mac\":\"02:00:00:00:00:01\"}]}");
	fclose(f);
	ck_assert_int_eq(legacy_load(dir, &back, &bad, err, sizeof(err)), 0);
	ck_assert_int_eq(back.n_atts, 1);
	ck_assert_str_eq(back.atts[0].id, "y");
	ck_assert_int_eq(bad.n, 1);
	ck_assert_str_eq(bad.v[0].msg, "attachment vpcA/x: invalid address");
	gdp_state_free(&back);

	/* not JSON at all: an error naming the file, nothing loaded */
	f = fopen(path, "w");
	fprintf(f, "{ nope");
	fclose(f);
	ck_assert_int_eq(legacy_load(dir, &back, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "state.json"));
	/* a node with a bad block refuses the whole record */
	f = fopen(path, "w");
	fprintf(f, "{\"node\":{\"block\":\"fcbb::/64\",\"node_id\":1}}");
	fclose(f);
	ck_assert_int_eq(legacy_load(dir, &back, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "/48"));

	gdp_results_free(&bad);
	gdp_state_free(&s);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

START_TEST(t_atomic_write)
{
	char dir[] = "/tmp/gst-atomic.XXXXXX", path[600], buf[64];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/x.json", dir);
	ck_assert_int_eq(gfile_write_atomic(path, "one", 3, NULL, 0), 0);
	ck_assert_int_eq(gfile_write_atomic(path, "second", 6, NULL, 0), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(buf, 1, sizeof(buf), f), 6);
	fclose(f);
	ck_assert_int_eq(memcmp(buf, "second", 6), 0);
	ck_assert_int_eq(count_files(dir), 1);
	snprintf(path, sizeof(path), "%s/missing-dir/x.json", dir);
	ck_assert_int_eq(gfile_write_atomic(path, "x", 1, NULL, 0), -ENOENT);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST


/* The scope of an incremental pass: exactly what changed, or full. */
static void delta_base(struct gdp_state *st, size_t nremotes)
{
	struct gdp_vpc v = { .id = "vpcA", .arg = 1, .table = 16385 };
	struct gdp_attachment a = { .vpc = "vpcA", .host_ifname = "h0", .arg = 1, .n_addrs = 1 };
	char b[64];

	gdp_state_init(st);
	st->node = node1;
	gdp_state_add_vpc(st, &v);
	for (int i = 0; i < 3; i++) {
		snprintf(a.id, sizeof(a.id), "a%d", i);
		snprintf(a.host_ifname, sizeof(a.host_ifname), "h%d", i);
		a.arg = (uint16_t)(i + 1);
		snprintf(b, sizeof(b), "fd00:a::%x/128", i + 1);
		gdp_prefix_parse(b, &a.addrs[0]);
		gdp_state_add_attachment(st, &a);
	}
	for (size_t i = 0; i < nremotes; i++) {
		struct gdp_remote r = { .vpc_ix = gdp_vpc_ix("vpcA") };

		snprintf(b, sizeof(b), "fd00:a::1:%zx/128", i + 1);
		gdp_prefix_parse(b, &r.prefix);
		inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &r.sid);
		gdp_state_add_remote(st, &r);
	}
}

START_TEST(t_delta_compute)
{
	struct gdp_state a, b;
	struct gdp_delta d;
	struct gdp_attachment x;

	gdp_delta_init(&d);
	delta_base(&a, 1000);
	ck_assert_int_eq(gdp_state_copy(&b, &a), 0);
	/* nothing changed (remotes compared by value: a copy) */
	ck_assert_int_eq(gdp_delta_compute(&a, &b, &d), 0);
	ck_assert(gdp_delta_empty(&d));
	/* an ADD */
	x = a.atts[0];
	snprintf(x.id, sizeof(x.id), "new");
	snprintf(x.host_ifname, sizeof(x.host_ifname), "hnew");
	x.arg = 9;
	ck_assert_int_eq(gdp_state_add_attachment(&b, &x), 0);
	ck_assert_int_eq(gdp_delta_compute(&a, &b, &d), 0);
	ck_assert(!d.full && !gdp_delta_empty(&d));
	ck_assert_int_eq(d.n_atts, 1);
	ck_assert_str_eq(b.atts[d.atts[0]].id, "new");
	ck_assert_int_eq(d.n_gone_atts + d.n_remotes + d.n_gone_remotes, 0);
	/* the same the other way: a DEL, with the model it had */
	ck_assert_int_eq(gdp_delta_compute(&b, &a, &d), 0);
	ck_assert_int_eq(d.n_gone_atts, 1);
	ck_assert_str_eq(d.gone_atts[0].host_ifname, "hnew");
	ck_assert_int_eq(d.n_atts, 0);
	/* remotes: one changed SID, one gone, one new */
	gdp_state_free(&b);
	ck_assert_int_eq(gdp_state_copy(&b, &a), 0);
	inet_pton(AF_INET6, "fcbb:bb00:1:3:e001::", &b.remotes[10].sid);
	b.remotes[20] = b.remotes[--b.n_remotes];
	{
		struct gdp_remote r = a.remotes[0];

		gdp_prefix_parse("fd00:a::9:1/128", &r.prefix);
		gdp_state_add_remote(&b, &r);
	}
	ck_assert_int_eq(gdp_delta_compute(&a, &b, &d), 0);
	ck_assert(!d.full);
	ck_assert_int_eq(d.n_remotes, 2);
	ck_assert_int_eq(d.n_gone_remotes, 1);
	ck_assert_int_eq(d.n_atts + d.n_gone_atts, 0);
	/* what a delta cannot express: full */
	b.remotes[1] = b.remotes[0]; /* named twice */
	ck_assert_int_eq(gdp_delta_compute(&a, &b, &d), 0);
	ck_assert(d.full);
	gdp_state_free(&b);
	ck_assert_int_eq(gdp_state_copy(&b, &a), 0);
	b.atts[1].mtu = 1400; /* changed in place */
	ck_assert_int_eq(gdp_delta_compute(&a, &b, &d), 0);
	ck_assert(d.full);
	b.atts[1].mtu = 0;
	b.vpcs[0].table++; /* a VPC renumbered */
	ck_assert_int_eq(gdp_delta_compute(&a, &b, &d), 0);
	ck_assert(d.full);
	b.vpcs[0].table--;
	b.node.node_id = 2; /* the node */
	ck_assert_int_eq(gdp_delta_compute(&a, &b, &d), 0);
	ck_assert(d.full);
	/* recomputing resets: back to nothing */
	b.node = a.node;
	ck_assert_int_eq(gdp_delta_compute(&a, &b, &d), 0);
	ck_assert(gdp_delta_empty(&d));
	/* a retried attachment is added once */
	ck_assert_int_eq(gdp_delta_add_att(&d, 2), 0);
	ck_assert_int_eq(gdp_delta_add_att(&d, 2), 0);
	ck_assert_int_eq(d.n_atts, 1);
	gdp_delta_free(&d);
	gdp_state_free(&a);
	gdp_state_free(&b);
}
END_TEST

START_TEST(t_results_drop)
{
	struct gdp_results r;
	char k[16];
	bool drop[100] = { 0 };

	gdp_results_init(&r);
	for (int i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		ck_assert_ptr_nonnull(gdp_results_get(&r, GDP_OBJ_REMOTE, "vpcA", k));
	}
	ck_assert_ptr_nonnull(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k7")); /* indexed */
	drop[7] = drop[50] = drop[99] = true;
	gdp_results_drop(&r, drop);
	ck_assert_uint_eq(r.n, 97);
	ck_assert_ptr_null(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k7"));
	ck_assert_ptr_null(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k99"));
	ck_assert_ptr_nonnull(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k98"));
	ck_assert_str_eq(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k8")->key, "k8");
	ck_assert_str_eq(r.v[7].key, "k8"); /* order kept */
	gdp_results_free(&r);
}
END_TEST

START_TEST(t_results_fold)
{
	struct gdp_results r;
	char k[16];

	gdp_results_init(&r);
	gdp_results_get(&r, GDP_OBJ_NODE, "", "")->programmed = true;
	gdp_results_get(&r, GDP_OBJ_ATTACHMENT, "vpcA", "a1")->programmed = true;
	for (int i = 0; i < 1000; i++) {
		struct gdp_result *x;

		snprintf(k, sizeof(k), "k%d", i);
		x = gdp_results_get(&r, GDP_OBJ_REMOTE, "vpcA", k);
		ck_assert_ptr_nonnull(x);
		x->programmed = i % 100 != 5;  /* 10 not programmed */
		if (i == 205)
			gdp_result_fail(x, -EINVAL, "remote k205: invalid SID");
	}
	gdp_results_get(&r, GDP_OBJ_VPC, "vpcA", "")->programmed = false; /* not programmed: kept */
	ck_assert_ptr_nonnull(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k6")); /* indexed */
	ck_assert_uint_eq(gdp_results_fold_remotes(&r), 990);
	ck_assert_uint_eq(r.remotes_ok, 990);
	ck_assert_uint_eq(r.n, 2 + 10 + 1);
	ck_assert_uint_le(r.cap, r.n + 64); /* the memory is given back */
	ck_assert_ptr_null(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k6"));
	ck_assert_ptr_nonnull(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k5"));
	ck_assert_int_eq(gdp_results_find(&r, GDP_OBJ_REMOTE, "vpcA", "k205")->err, -EINVAL);
	ck_assert(gdp_results_find(&r, GDP_OBJ_ATTACHMENT, "vpcA", "a1")->programmed);
	ck_assert_ptr_nonnull(gdp_results_find(&r, GDP_OBJ_VPC, "vpcA", ""));
	ck_assert_str_eq(r.v[0].kind == GDP_OBJ_NODE ? "node" : "?", "node"); /* order kept */
	/* a second fold finds nothing more; new entries can still be added */
	ck_assert_uint_eq(gdp_results_fold_remotes(&r), 0);
	ck_assert_ptr_nonnull(gdp_results_get(&r, GDP_OBJ_REMOTE, "vpcA", "new"));
	ck_assert_uint_eq(r.n, 14);
	gdp_results_reset(&r);
	ck_assert_uint_eq(r.remotes_ok, 0);
	gdp_results_free(&r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nl_model");
	TCase *tc = tcase_create("model");

	tcase_add_test(tc, t_sid_format);
	tcase_add_test(tc, t_delta_compute);
	tcase_add_test(tc, t_results_drop);
	tcase_add_test(tc, t_results_fold);
	tcase_add_test(tc, t_prefixes);
	tcase_add_test(tc, t_validate_vpcs);
	tcase_add_test(tc, t_validate_attachments);
	tcase_add_test(tc, t_vpc_names);
	tcase_add_test(tc, t_validate_remotes);
	tcase_add_test(tc, t_validate_remotes_indexed);
	tcase_add_test(tc, t_results);
	tcase_add_test(tc, t_state_roundtrip);
	tcase_add_test(tc, t_atomic_write);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
