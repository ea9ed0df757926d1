/* The node's EgressShard (agent/egress/shard.h): reading as others write it, picking, the status intent. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "agent/egress/shard.h"
#include "common/json.h"
#include "tests/lib/gtest.h"

static json_t *shard(const char *name, const char *node, const char *sid, const char *a6, const char *a4)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:i}, s:{s:{s:s, s:s}}}", "apiVersion", GES_API_VERSION,
			      "kind", "EgressShard", "metadata", "name", name, "namespace", "galactic-system",
			      "generation", 3, "spec", "targetRef", "kind", "Node", "name", node);

	if (sid)
		gj_set(o, "spec.shardSID", json_string(sid));
	if (a6)
		gj_set(o, "spec.shardAddressIPv6", json_string(a6));
	if (a4)
		gj_set(o, "spec.shardAddressIPv4", json_string(a4));
	return o;
}

START_TEST(t_parse)
{
	struct ges_spec s;
	struct gdp_egress e;
	char err[256];
	json_t *o = shard("s1", "node-a", "fcbb:bb00:1:1:f000::", "2001:db8:5::1", "");

	ck_assert_int_eq(ges_parse(o, "node-a", &s, err, sizeof(err)), 1);
	ck_assert_str_eq(s.name, "s1");
	ck_assert_str_eq(s.ns, "galactic-system");
	ck_assert_int_eq(s.generation, 3);
	ck_assert(s.has_sid && s.has_v6 && !s.has_v4); /* '' = not assigned */
	ges_spec_egress(&s, "inet0", &e);
	ck_assert(e.have && !e.have_v4);
	ck_assert_str_eq(e.oif, "inet0");
	ck_assert_int_eq(ges_parse(o, "node-b", &s, err, sizeof(err)), 0);
	json_decref(o);
	/* unassigned SID: nothing to run */
	o = shard("s1", "node-a", "", "2001:db8:5::1", NULL);
	ck_assert_int_eq(ges_parse(o, "node-a", &s, err, sizeof(err)), 1);
	ges_spec_egress(&s, NULL, &e);
	ck_assert(!e.have);
	json_decref(o);
	/* malformed: named, never half-used */
	o = shard("s1", "node-a", "fcbb::1", "2001:db8:5::1", "2001:db8::9");
	ck_assert_int_eq(ges_parse(o, "node-a", &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "spec.shardAddressIPv4"));
	ck_assert(!s.has_sid && !s.has_v6);
	ck_assert_str_eq(s.name, "s1");
	json_decref(o);
	o = json_pack("{s:{s:s}, s:{s:{s:s}, s:i}}", "metadata", "name", "x", "spec", "targetRef", "name", "node-a",
		      "shardSID", 5);
	ck_assert_int_eq(ges_parse(o, "node-a", &s, err, sizeof(err)), -EINVAL);
	json_decref(o);
	ck_assert_int_eq(ges_parse(json_null(), "node-a", &s, err, sizeof(err)), 0);
}
END_TEST

START_TEST(t_pick_lowest_name)
{
	json_t *l = json_array();
	struct ges_spec s;
	char err[256];
	int bad;

	json_array_append_new(l, shard("zeta", "node-a", "fcbb:bb00:1:1:f000::", "2001:db8:5::1", NULL));
	json_array_append_new(l, shard("alpha", "node-a", "fcbb:bb00:1:1:f100::", "2001:db8:5::2", NULL));
	json_array_append_new(l, shard("aaa", "node-b", "fcbb:bb00:1:2:f000::", "2001:db8:5::3", NULL));
	ck_assert_int_eq(ges_pick(l, "node-a", &s, &bad, err, sizeof(err)), 1);
	ck_assert_str_eq(s.name, "alpha");
	ck_assert_int_eq(bad, 0);
	ck_assert_int_eq(ges_pick(l, "node-c", &s, &bad, err, sizeof(err)), 0);
	json_decref(l);
}
END_TEST

static const json_t *cond(const json_t *st, const char *type)
{
	json_t *c;
	size_t i;

	json_array_foreach(gj_get(st, "status.conditions"), i, c)
		if (!strcmp(gj_str(c, "type"), type))
			return c;
	return NULL;
}

START_TEST(t_status)
{
	json_t *o = shard("s1", "node-a", "fcbb:bb00:1:1:f000::", "2001:db8:5::1", "203.0.113.50"), *in, *in2;
	struct ges_observed ob = { 0 };
	struct ges_spec s;
	char err[256];

	ck_assert_int_eq(ges_parse(o, "node-a", &s, err, sizeof(err)), 1);
	/* no pass yet: Unknown, nothing claimed */
	in = ges_status_intent(&s, NULL, &ob, o, "2026-01-01T00:00:00Z");
	ck_assert_str_eq(gj_str(cond(in, "Programmed"), "status"), "Unknown");
	ck_assert_ptr_null(gj_get(in, "status.shardSID"));
	ck_assert_str_eq(gj_str(in, "metadata.namespace"), "galactic-system");
	json_decref(in);
	/* programmed: the identity it runs with, upstream condition items */
	ob.passed = ob.programmed = true;
	ges_spec_egress(&s, "up0", &ob.running);
	in = ges_status_intent(&s, NULL, &ob, o, "2026-01-01T00:00:00Z");
	ck_assert_str_eq(gj_str(in, "status.shardSID"), "fcbb:bb00:1:1:f000::");
	ck_assert_str_eq(gj_str(in, "status.shardAddressIPv6"), "2001:db8:5::1");
	ck_assert_str_eq(gj_str(in, "status.shardAddressIPv4"), "203.0.113.50");
	ck_assert_int_eq(gj_int(in, "status.observedGeneration", 0), 3);
	ck_assert_str_eq(gj_str(cond(in, "Programmed"), "reason"), "AddressesProgrammed");
	ck_assert_str_eq(gj_str(cond(in, "Ready"), "status"), "True");
	ck_assert_int_eq(gj_int(cond(in, "Ready"), "observedGeneration", 0), 3);
	ck_assert_ptr_nonnull(gj_str(cond(in, "Ready"), "message"));
	ck_assert(!ges_status_equal(o, in));
	/* applied: equal; a later intent keeps the transition time */
	gj_set(o, "status", json_deep_copy(json_object_get(in, "status")));
	ck_assert(ges_status_equal(o, in));
	in2 = ges_status_intent(&s, NULL, &ob, o, "2026-06-01T00:00:00Z");
	ck_assert_str_eq(gj_str(cond(in2, "Ready"), "lastTransitionTime"), "2026-01-01T00:00:00Z");
	ck_assert(ges_status_equal(o, in2));
	json_decref(in2);
	/* the pass failed: the addresses are withdrawn from the status */
	ob.programmed = false;
	strcpy(ob.message, "egress shard: internet interface inet0 not found");
	in2 = ges_status_intent(&s, NULL, &ob, o, "2026-06-01T00:00:00Z");
	ck_assert_str_eq(gj_str(cond(in2, "Programmed"), "reason"), "ProgrammingFailed");
	ck_assert_ptr_nonnull(strstr(gj_str(cond(in2, "Programmed"), "message"), "inet0"));
	ck_assert_str_eq(gj_str(cond(in2, "Ready"), "lastTransitionTime"), "2026-06-01T00:00:00Z");
	ck_assert_ptr_null(gj_get(in2, "status.shardSID"));
	ck_assert(!ges_status_equal(o, in2)); /* cur still claims the SID */
	json_decref(in2);
	json_decref(in);
	json_decref(o);
	/* unassigned spec */
	o = shard("s1", "node-a", "", "", NULL);
	ck_assert_int_eq(ges_parse(o, "node-a", &s, err, sizeof(err)), 1);
	in = ges_status_intent(&s, NULL, &ob, NULL, "2026-01-01T00:00:00Z");
	ck_assert_str_eq(gj_str(cond(in, "Programmed"), "reason"), "AddressUnassigned");
	ck_assert_str_eq(gj_str(cond(in, "Ready"), "status"), "False");
	json_decref(in);
	/* a malformed spec */
	in = ges_status_intent(&s, "spec.shardSID x is not an IPv6 address", &ob, NULL, "2026-01-01T00:00:00Z");
	ck_assert_str_eq(gj_str(cond(in, "Programmed"), "reason"), "ProgrammingFailed");
	json_decref(in);
	json_decref(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("egress_shard");
	TCase *tc = tcase_create("shard");

	tcase_add_test(tc, t_parse);
	tcase_add_test(tc, t_pick_lowest_name);
	tcase_add_test(tc, t_status);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
