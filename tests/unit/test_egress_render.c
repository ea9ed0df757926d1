/* The egress shard's nftables program (agent/dp/egress.h): SIDs, validation, rendering. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/egress.h"
#include "tests/lib/gtest.h"

static void shard(struct gde_shard *s, bool v4)
{
	memset(s, 0, sizeof(*s));
	inet_pton(AF_INET6, "fcbb:bb00:1:f000::", &s->sid);
	inet_pton(AF_INET6, "2001:db8:5::1", &s->addr6);
	s->have_v4 = v4;
	inet_pton(AF_INET, "203.0.113.50", &s->addr4);
	strcpy(s->oif, "inet0");
}

START_TEST(t_vpc_sid)
{
	struct gde_shard s;
	struct in6_addr x;
	char b[INET6_ADDRSTRLEN];

	shard(&s, true);
	ck_assert_int_eq(gde_vpc_sid(&s.sid, AF_INET6, 1, &x), 0);
	ck_assert_str_eq(inet_ntop(AF_INET6, &x, b, sizeof(b)), "fcbb:bb00:1:f000:0:c001::");
	ck_assert_int_eq(gde_vpc_sid(&s.sid, AF_INET, 0xfff, &x), 0);
	ck_assert_str_eq(inet_ntop(AF_INET6, &x, b, sizeof(b)), "fcbb:bb00:1:f000:0:dfff::");
	ck_assert_int_eq(gde_vpc_sid(&s.sid, AF_INET, 0, &x), -EINVAL);
	ck_assert_int_eq(gde_vpc_sid(&s.sid, AF_INET, 0x1000, &x), -EINVAL);
	ck_assert_int_eq(gde_vpc_sid(&s.sid, AF_UNIX, 1, &x), -EINVAL);
}
END_TEST

START_TEST(t_validate)
{
	struct gde_shard s;
	char err[256];

	shard(&s, true);
	ck_assert_int_eq(gde_validate_shard(&s, err, sizeof(err)), 0);
	inet_pton(AF_INET6, "fcbb:bb00:1:f000::1", &s.sid);
	ck_assert_int_eq(gde_validate_shard(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "shardSID"));
	shard(&s, true);
	inet_pton(AF_INET6, "fe80::1", &s.addr6);
	ck_assert_int_eq(gde_validate_shard(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "shardAddressIPv6"));
	shard(&s, true);
	inet_pton(AF_INET, "224.0.0.1", &s.addr4);
	ck_assert_int_eq(gde_validate_shard(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "shardAddressIPv4"));
	s.have_v4 = false; /* the IPv4 address is unused without have_v4 */
	ck_assert_int_eq(gde_validate_shard(&s, err, sizeof(err)), 0);
	strcpy(s.oif, "a\"b");
	ck_assert_int_eq(gde_validate_shard(&s, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(t_render)
{
	struct gde_vpc v[] = { { 1, 16385 }, { 0x2a, 16386 } };
	struct gde_shard s;
	char err[256], *t;

	shard(&s, true);
	ck_assert_int_eq(gde_render(&s, v, 2, &t, err, sizeof(err)), 0);
	/* one transaction replacing the table */
	ck_assert_ptr_eq(strstr(t, "add table inet galactic_egress\ndelete table inet galactic_egress\ntable inet galactic_egress {"), t);
	/* both SIDs of each VPC mark it; each VPC its own zone */
	ck_assert_ptr_nonnull(strstr(t, "fcbb:bb00:1:f000:0:c001:: : 0x100001"));
	ck_assert_ptr_nonnull(strstr(t, "fcbb:bb00:1:f000:0:d001:: : 0x100001"));
	ck_assert_ptr_nonnull(strstr(t, "fcbb:bb00:1:f000:0:c02a:: : 0x10002a"));
	ck_assert_ptr_nonnull(strstr(t, "0x100001 : 1, 0x10002a : 42"));
	ck_assert_ptr_nonnull(strstr(t, "ct original zone set meta mark map @vpc_zone"));
	ck_assert_ptr_nonnull(strstr(t, "snat ip6 to 2001:db8:5::1"));
	ck_assert_ptr_nonnull(strstr(t, "snat ip to 203.0.113.50"));
	ck_assert_ptr_nonnull(strstr(t, "oifname \"inet0\""));
	free(t);
	/* no IPv4 address: no IPv4 translation (the guard drops untranslated IPv4) */
	shard(&s, false);
	ck_assert_int_eq(gde_render(&s, v, 2, &t, err, sizeof(err)), 0);
	ck_assert_ptr_null(strstr(t, "snat ip to"));
	ck_assert_ptr_nonnull(strstr(t, "meta nfproto ipv4 counter name \"untranslated\" drop"));
	ck_assert_ptr_nonnull(strstr(t, "ip6 saddr != 2001:db8:5::1 counter name \"untranslated\" drop"));
	free(t);
	/* no VPCs: empty maps, still a valid table */
	ck_assert_int_eq(gde_render(&s, v, 0, &t, err, sizeof(err)), 0);
	ck_assert_ptr_null(strstr(t, "elements"));
	free(t);
	v[1].arg = 1;
	ck_assert_int_eq(gde_render(&s, v, 2, &t, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_null(t);
	v[1].arg = 0;
	ck_assert_int_eq(gde_render(&s, v, 2, &t, err, sizeof(err)), -EINVAL);
	inet_pton(AF_INET6, "::", &s.sid);
	ck_assert_int_eq(gde_render(&s, v, 1, &t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("egress_render");
	TCase *tc = tcase_create("render");

	tcase_add_test(tc, t_vpc_sid);
	tcase_add_test(tc, t_validate);
	tcase_add_test(tc, t_render);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
