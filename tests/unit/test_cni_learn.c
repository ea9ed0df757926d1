/*
 * The addresses of a guest that addresses itself (agent/cni/learn.h): what
 * is learned, ignored and refused (the VPC's prefixes, other attachments of
 * the VPC here and on other nodes, the per-attachment limit), that learned
 * addresses are kept in record.json and reach the snapshot the pipeline
 * applies and reports, and that DEL forgets them.
 */
#include "tests/lib/gtest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cni/learn.h"
#include "agent/record.h"
#include "agent/record_legacy.h"
#include "common/fileio.h"

static char dir[64];

static struct record *open_declared(void)
{
	char p[200], err[512];
	struct record *r;
	/* vpcA with its ranges declared; vpcB without (no ranges known) */
	const char *state = "{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":3,\"uplink\":\"up0\"},"
			    "\"vpcs\":[{\"id\":\"vpcA\",\"arg\":1,\"table\":16385,"
			    "\"prefixes\":[\"fd00:a::/64\",\"10.1.0.0/16\"]}],\"attachments\":[]}";

	snprintf(dir, sizeof(dir), "/tmp/glearn.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/%s", dir, LEGACY_STATE);
	ck_assert_int_eq(gfile_write_atomic(p, state, strlen(state), NULL, 0), 0);
	ck_assert_int_eq(record_open(&r, &(struct record_opts){ .dir = dir }, err, sizeof(err)), 0);
	return r;
}

static void rm_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* An active CNI attachment; addr NULL: the guest addresses itself. */
static struct rec_att *attach(struct record *r, const char *vpc, const char *id, const char *addr)
{
	struct rec_att t = { .src = REC_SRC_CNI }, *a;
	char err[256];

	snprintf(t.m.vpc, sizeof(t.m.vpc), "%s", vpc);
	snprintf(t.m.id, sizeof(t.m.id), "%s", id);
	snprintf(t.m.host_ifname, sizeof(t.m.host_ifname), "gc%s", id);
	snprintf(t.m.container_id, sizeof(t.m.container_id), "c-%s", id);
	snprintf(t.network, sizeof(t.network), "net-%s", id);
	snprintf(t.ifname, sizeof(t.ifname), "eth0");
	t.m.pod_mac[0] = 0x02, t.m.pod_mac[5] = (uint8_t)id[strlen(id) - 1];
	if (addr) {
		ck_assert_int_eq(gdp_prefix_parse(addr, &t.m.addrs[0]), 0);
		t.m.n_addrs = 1;
	}
	t.m.guest_addressed = !addr;
	t.config = json_pack("{s:s, s:s}", "vpc", vpc, "vpcattachment", id);
	record_lock(r);
	a = record_reserve(r, &t, err, sizeof(err));
	ck_assert_msg(a != NULL, "%s", err);
	record_activate(r, a);
	record_unlock(r);
	return a;
}

static enum glearn_verdict offer(struct record *r, struct rec_att *a, const char *addr, char *why, size_t n)
{
	struct gdp_prefix p;
	unsigned long gen = 0, before;
	enum glearn_verdict v;

	ck_assert_int_eq(gdp_prefix_parse(addr, &p), 0);
	record_lock(r);
	before = record_gen_locked(r);
	why[0] = 0;
	v = glearn_offer_locked(r, a, &p, &gen, why, n);
	/* only a new address changes the record */
	ck_assert_uint_eq(record_gen_locked(r), v == GLEARN_NEW ? before + 1 : before);
	ck_assert_uint_eq(gen, v == GLEARN_NEW ? before + 1 : 0);
	record_unlock(r);
	return v;
}

#define LEARNS(r, a, s)  ck_assert_int_eq(offer(r, a, s, why, sizeof(why)), GLEARN_NEW)
#define IGNORES(r, a, s) ck_assert_int_eq(offer(r, a, s, why, sizeof(why)), GLEARN_NOTHING)
#define REFUSES(r, a, s, text)                                                   \
	do {                                                                     \
		ck_assert_int_eq(offer(r, a, s, why, sizeof(why)), GLEARN_REFUSED); \
		ck_assert_msg(strstr(why, text), "why: %s", why);                \
	} while (0)

START_TEST(t_what_is_learned)
{
	struct record *r = open_declared();
	struct rec_att *g, *a2, *b;
	struct gdp_remote rm[2] = { { .vpc_ix = gdp_vpc_ix("vpcA") }, { .vpc_ix = gdp_vpc_ix("vpcB") } };
	char why[256];

	g = attach(r, "vpcA", "g1", NULL);
	a2 = attach(r, "vpcA", "a2", "10.1.0.2");
	b = attach(r, "vpcB", "b1", NULL);
	/* an IPv4 address it may use is decapsulated to it (End.DX4 next hop) */
	ck_assert_uint_eq(g->m.nh4.s_addr, gdp_default_nh4(g->m.arg).s_addr);
	ck_assert_uint_eq(a2->m.nh4.s_addr, gdp_default_nh4(a2->m.arg).s_addr);
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::77/128", &rm[0].prefix), 0);
	ck_assert_int_eq(gdp_prefix_parse("10.1.0.50/32", &rm[1].prefix), 0);
	ck_assert_int_eq(record_set_remotes(r, rm, 2), 0);

	/* every guest has these, or they are no host's */
	IGNORES(r, g, "fe80::5");
	IGNORES(r, g, "169.254.1.9");
	IGNORES(r, g, "ff02::1:ff00:9");
	IGNORES(r, g, "::ffff:10.1.0.9");
	IGNORES(r, g, "224.0.0.251");
	IGNORES(r, g, "127.0.0.1");
	/* learned once */
	LEARNS(r, g, "10.1.0.9");
	IGNORES(r, g, "10.1.0.9");
	LEARNS(r, g, "fd00:a::9");
	ck_assert_uint_eq(g->m.n_addrs, 2);
	/* outside the VPC's ranges */
	REFUSES(r, g, "10.9.0.1", "outside the address ranges of vpc vpcA");
	REFUSES(r, g, "2001:db8::1", "outside the address ranges of vpc vpcA");
	/* another attachment's of the VPC: here, or on another node */
	REFUSES(r, g, "10.1.0.2", "already used by attachment a2 of vpc vpcA");
	REFUSES(r, g, "fd00:a::77", "on another node");
	/* another VPC's pod may use the same address */
	LEARNS(r, g, "10.1.0.50");
	/* an attachment that was given its addresses learns nothing */
	IGNORES(r, a2, "10.1.0.3");
	ck_assert_uint_eq(a2->m.n_addrs, 1);
	/* a VPC whose ranges the node does not know: any unicast address,
	 * still not another pod's of that VPC */
	LEARNS(r, b, "192.0.2.7");
	REFUSES(r, b, "10.1.0.50", "on another node");
	/* at most GDP_ADDRS_MAX */
	for (int i = 0; g->m.n_addrs < GDP_ADDRS_MAX; i++) {
		char s[32];

		snprintf(s, sizeof(s), "10.1.1.%d", i + 1);
		LEARNS(r, g, s);
	}
	REFUSES(r, g, "10.1.2.1", "already has 8 addresses");
	/* known already: nothing to do, even at the limit */
	IGNORES(r, g, "10.1.1.1");
	record_close(r);
	rm_dir();
}
END_TEST

START_TEST(t_kept_applied_and_forgotten)
{
	struct record *r = open_declared();
	struct rec_att *g;
	struct rec_snap s;
	char why[256], err[512];
	size_t k;

	g = attach(r, "vpcA", "g1", NULL);
	LEARNS(r, g, "fd00:a::9");
	/* the snapshot the pipeline applies and reports carries it */
	ck_assert_int_eq(record_snapshot(r, &s), 0);
	for (k = 0; k < s.st.n_atts && strcmp(s.st.atts[k].id, "g1"); k++)
		;
	ck_assert_uint_lt(k, s.st.n_atts);
	ck_assert(s.st.atts[k].guest_addressed);
	ck_assert_uint_eq(s.st.atts[k].n_addrs, 1);
	ck_assert_uint_eq(s.st.atts[k].addrs[0].len, 128);
	ck_assert_msg(record_commit(r, &s, err, sizeof(err)) == 0, "%s", err);
	record_snap_free(&s);
	record_close(r);
	/* kept across a restart */
	ck_assert_int_eq(record_open(&r, &(struct record_opts){ .dir = dir }, err, sizeof(err)), 0);
	record_lock(r);
	g = record_find_att(r, "vpcA", "g1");
	ck_assert_ptr_nonnull(g);
	ck_assert(g->m.guest_addressed);
	ck_assert_uint_eq(g->m.n_addrs, 1);
	/* DEL forgets them: a new guest of the VPC may take the address */
	record_remove(r, g);
	record_unlock(r);
	g = attach(r, "vpcA", "g2", NULL);
	LEARNS(r, g, "fd00:a::9");
	record_close(r);
	rm_dir();
}
END_TEST

START_TEST(t_parser_checks_the_flag)
{
	struct rec_data d;
	char err[256];
	const char *bad = "{\"version\":1,\"vpcs\":[{\"id\":\"v\",\"arg\":1,\"table\":16385,\"prefixes\":[]}],"
			  "\"attachments\":[{\"vpc\":\"v\",\"id\":\"a\",\"source\":\"declared\",\"hostIfname\":\"h\","
			  "\"arg\":1,\"addrs\":[],\"guestAddressed\":\"yes\"}]}";

	ck_assert_int_eq(record_parse(bad, strlen(bad), &d, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "guestAddressed"), "%s", err);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cni_learn");
	TCase *tc = tcase_create("learn");

	tcase_add_test(tc, t_what_is_learned);
	tcase_add_test(tc, t_kept_applied_and_forgotten);
	tcase_add_test(tc, t_parser_checks_the_flag);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
