/* Pod steering's nftables table (agent/dp/steer.h): rendering, reading back, notifications. */
#include <errno.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/egress.h"
#include "agent/dp/steer.h"
#include "tests/lib/gtest.h"

START_TEST(t_render)
{
	struct gds_pod p[2] = { { "gc0123456789abc", GDE_MARK_POD | 1 }, { "ha1", GDE_MARK_POD | 0xfff } };
	char err[256], *t;

	ck_assert_int_eq(gds_render(p, 2, &t, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(t, "add table inet galactic_steer\ndelete table inet galactic_steer\n"));
	ck_assert_ptr_nonnull(strstr(t, "elements = { \"gc0123456789abc\" : 0x300001, \"ha1\" : 0x300fff }"));
	ck_assert_ptr_nonnull(strstr(t, "type filter hook prerouting priority -200; policy accept;"));
	ck_assert_ptr_nonnull(strstr(t, "meta mark & 0x300000 == 0 meta mark set iifname map @pods"));
	free(t);
	ck_assert_int_eq(gds_render(p, 0, &t, err, sizeof(err)), 0);
	ck_assert_ptr_null(strstr(t, "elements"));
	free(t);
	/* a name nftables would read as something else is refused, never rendered */
	strcpy(p[1].ifname, "h\"; flush");
	ck_assert_int_eq(gds_render(p, 2, &t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(err, "not a device name"));
	ck_assert(!gds_ifname_ok(""));
	ck_assert(!gds_ifname_ok("0123456789abcdef"));
	ck_assert(gds_ifname_ok("0123456789abcde"));
}
END_TEST

START_TEST(t_render_elems)
{
	struct gds_pod add[2] = { { "h1", 0x300001 }, { "h2", 0x300002 } };
	char del[2][GDS_IFNAME_MAX + 1] = { "h1", "h9" }, err[256], *t;

	ck_assert_int_eq(gds_render_elems(add, 2, (const char(*)[GDS_IFNAME_MAX + 1])del, 2, &t, err, sizeof(err)), 0);
	ck_assert_str_eq(t, "delete element inet galactic_steer pods { \"h1\", \"h9\" }\n"
			    "add element inet galactic_steer pods { \"h1\" : 0x300001, \"h2\" : 0x300002 }\n");
	free(t);
	ck_assert_int_eq(gds_render_elems(add, 1, NULL, 0, &t, err, sizeof(err)), 0);
	ck_assert_str_eq(t, "add element inet galactic_steer pods { \"h1\" : 0x300001 }\n");
	free(t);
	ck_assert_int_eq(gds_render_elems(NULL, 0, NULL, 0, &t, err, sizeof(err)), 0);
	ck_assert_ptr_null(t);
	strcpy(del[1], "a b");
	ck_assert_int_eq(gds_render_elems(add, 2, (const char(*)[GDS_IFNAME_MAX + 1])del, 2, &t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(t);
}
END_TEST

/* What `nft -j list table inet galactic_steer` printed (nftables 1.0.6) for gds_render's table. */
#define HEAD "{\"nftables\": [{\"metainfo\": {\"version\": \"1.0.6\", \"json_schema_version\": 1}}, " \
	     "{\"table\": {\"family\": \"inet\", \"name\": \"galactic_steer\", \"handle\": 1}}, "
#define MAP(elem) "{\"map\": {\"family\": \"inet\", \"name\": \"pods\", \"table\": \"galactic_steer\", \"type\": \"ifname\", " \
		  "\"handle\": 2, \"map\": \"mark\"" elem "}}, "
#define CHAIN(prio) "{\"chain\": {\"family\": \"inet\", \"table\": \"galactic_steer\", \"name\": \"steer\", \"handle\": 1, " \
		    "\"type\": \"filter\", \"hook\": \"prerouting\", \"prio\": " prio ", \"policy\": \"accept\"}}, "
#define RULE(mask) "{\"rule\": {\"family\": \"inet\", \"table\": \"galactic_steer\", \"chain\": \"steer\", \"handle\": 3, " \
		   "\"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"&\": [{\"meta\": {\"key\": \"mark\"}}, " mask "]}, " \
		   "\"right\": 0}}, {\"mangle\": {\"key\": {\"meta\": {\"key\": \"mark\"}}, \"value\": {\"map\": " \
		   "{\"key\": {\"meta\": {\"key\": \"iifname\"}}, \"data\": \"@pods\"}}}}]}}"
#define TAIL "]}"

START_TEST(t_parse)
{
	struct gds_pod *got;
	size_t n;
	char err[256];

	ck_assert_int_eq(gds_parse(HEAD MAP(", \"elem\": [[\"h1\", 3145729], [\"gc0123456789abc\", 3149823]]") CHAIN("-200")
					   RULE("3145728") TAIL, &got, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(got[0].ifname, "h1");
	ck_assert_uint_eq(got[0].mark, 0x300001);
	ck_assert_str_eq(got[1].ifname, "gc0123456789abc");
	ck_assert_uint_eq(got[1].mark, 0x300fff);
	free(got);
	/* an empty map lists no elements */
	ck_assert_int_eq(gds_parse(HEAD MAP("") CHAIN("-200") RULE("3145728") TAIL, &got, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 0);
	free(got);
	/* anything else is not our table: written again */
	ck_assert_int_eq(gds_parse(HEAD MAP("") CHAIN("-150") RULE("3145728") TAIL, &got, &n, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_null(got);
	ck_assert_int_eq(gds_parse(HEAD MAP("") CHAIN("-200") RULE("1") TAIL, &got, &n, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "not the steering rule"));
	ck_assert_int_eq(gds_parse(HEAD MAP("") CHAIN("-200") "{\"metainfo\": {}}" TAIL, &got, &n, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "missing"));
	ck_assert_int_eq(gds_parse(HEAD MAP("") CHAIN("-200") RULE("3145728") ", " RULE("3145728") TAIL, &got, &n, err,
				   sizeof(err)), -EPROTO);
	ck_assert_int_eq(gds_parse(HEAD MAP(", \"elem\": [[\"h1\", -1]]") CHAIN("-200") RULE("3145728") TAIL, &got, &n, err,
				   sizeof(err)), -EPROTO);
	ck_assert_int_eq(gds_parse(HEAD MAP(", \"elem\": [[\"a b\", 1]]") CHAIN("-200") RULE("3145728") TAIL, &got, &n, err,
				   sizeof(err)), -EPROTO);
	ck_assert_int_eq(gds_parse(HEAD MAP("") MAP("") CHAIN("-200") RULE("3145728") TAIL, &got, &n, err, sizeof(err)),
			 -EPROTO);
	ck_assert_int_eq(gds_parse("{\"nftables\": 1}", &got, &n, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(gds_parse("not json", &got, &n, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(gds_parse(NULL, &got, &n, err, sizeof(err)), -EINVAL);
}
END_TEST

/* An nfnetlink message: header, nfgenmsg, one string attribute of type at. */
static size_t nfmsg(uint8_t *buf, int type, uint8_t family, unsigned at, const char *s)
{
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	struct nfgenmsg *g = NLMSG_DATA(h);
	struct nlattr *a = (struct nlattr *)((uint8_t *)g + NLMSG_ALIGN(sizeof(*g)));
	size_t l = strlen(s) + 1;

	memset(buf, 0, 256);
	g->nfgen_family = family;
	a->nla_type = (uint16_t)at;
	a->nla_len = (uint16_t)(NLA_HDRLEN + l);
	memcpy((uint8_t *)a + NLA_HDRLEN, s, l);
	h->nlmsg_type = (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | type);
	h->nlmsg_len = (uint32_t)(NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*g))) + NLA_ALIGN(a->nla_len));
	return h->nlmsg_len;
}

START_TEST(t_notification)
{
	uint8_t buf[256];
	char proc[16];

	nfmsg(buf, NFT_MSG_DELSETELEM, 1 /* inet */, NFTA_SET_ELEM_LIST_TABLE, GDS_TABLE);
	ck_assert_int_eq(gds_notification((struct nlmsghdr *)buf, proc, sizeof(proc)), GDS_EV_OURS);
	nfmsg(buf, NFT_MSG_DELTABLE, 1, NFTA_TABLE_NAME, GDS_TABLE);
	ck_assert_int_eq(gds_notification((struct nlmsghdr *)buf, proc, sizeof(proc)), GDS_EV_OURS);
	nfmsg(buf, NFT_MSG_NEWRULE, 1, NFTA_RULE_TABLE, "galactic_egress");
	ck_assert_int_eq(gds_notification((struct nlmsghdr *)buf, proc, sizeof(proc)), GDS_EV_OTHER);
	nfmsg(buf, NFT_MSG_NEWRULE, 1, NFTA_RULE_TABLE, "galactic_steer_x");
	ck_assert_int_eq(gds_notification((struct nlmsghdr *)buf, proc, sizeof(proc)), GDS_EV_OTHER);
	nfmsg(buf, NFT_MSG_DELTABLE, 2 /* ip */, NFTA_TABLE_NAME, GDS_TABLE);
	ck_assert_int_eq(gds_notification((struct nlmsghdr *)buf, proc, sizeof(proc)), GDS_EV_OTHER);
	nfmsg(buf, NFT_MSG_NEWGEN, 0, NFTA_GEN_PROC_NAME, "nft");
	ck_assert_int_eq(gds_notification((struct nlmsghdr *)buf, proc, sizeof(proc)), GDS_EV_GEN);
	ck_assert_str_eq(proc, "nft");
	/* too short for its header: nothing */
	((struct nlmsghdr *)buf)->nlmsg_len = NLMSG_LENGTH(1);
	ck_assert_int_eq(gds_notification((struct nlmsghdr *)buf, proc, sizeof(proc)), GDS_EV_OTHER);
	/* another subsystem */
	nfmsg(buf, NFT_MSG_DELTABLE, 1, NFTA_TABLE_NAME, GDS_TABLE);
	((struct nlmsghdr *)buf)->nlmsg_type = (uint16_t)(1 << 8 | NFT_MSG_DELTABLE);
	ck_assert_int_eq(gds_notification((struct nlmsghdr *)buf, proc, sizeof(proc)), GDS_EV_OTHER);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("steer");
	TCase *tc = tcase_create("steer");

	tcase_add_test(tc, t_render);
	tcase_add_test(tc, t_render_elems);
	tcase_add_test(tc, t_parse);
	tcase_add_test(tc, t_notification);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
