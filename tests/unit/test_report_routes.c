/* Routes read from other nodes' reports (agent/report/build.c), good and bad input. */
#include "agent/report/report.h"
#include "tests/lib/gtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct gdp_state local, out;
static char why[300];

static void setup(void)
{
	struct gdp_vpc v = { .id = "Red7", .arg = 1, .table = 16385 };

	gdp_state_init(&local);
	gdp_state_init(&out);
	local.node.block[0] = 0xfc; local.node.block[1] = 0xbb; local.node.block[2] = 0xbb;
	local.node.block[5] = 0x01;
	local.node.node_id = 1;
	gdp_state_add_vpc(&local, &v);
	why[0] = 0;
}

static void teardown(void)
{
	gdp_state_free(&local);
	gdp_state_free(&out);
}

/* A report of node n2 for Red7/R2 (name n2-649241-68c), Programmed=True at generation 1. */
static json_t *report(void)
{
	json_error_t e;
	json_t *o = json_loads(
		"{\"metadata\":{\"name\":\"n2-649241-68c\",\"generation\":1,\"resourceVersion\":\"7\"},"
		" \"spec\":{\"node\":\"n2\",\"vpc\":\"Red7\",\"vpcAttachment\":\"R2\","
		"  \"routes\":[{\"prefix\":\"fd00:a::12/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"},"
		"             {\"prefix\":\"10.1.0.12/32\",\"sid\":\"fcbb:bb00:1:2:d003::\"}]},"
		" \"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\","
		"  \"observedGeneration\":1,\"reason\":\"Programmed\"}]}}", 0, &e);

	ck_assert_msg(o != NULL, "%s", e.text);
	return o;
}

static int routes(json_t *o)
{
	int rc = rpt_routes_from_report(o, "n1", &local, &out, why, sizeof(why));

	json_decref(o);
	return rc;
}

static json_t *with(const char *path_json_merge)
{
	json_t *o = report(), *p = json_loads(path_json_merge, 0, NULL), *spec;

	ck_assert_ptr_nonnull(p);
	spec = json_object_get(p, "spec");
	if (spec)
		json_object_update(json_object_get(o, "spec"), spec);
	if (json_object_get(p, "status"))
		json_object_set(o, "status", json_object_get(p, "status"));
	json_decref(p);
	return o;
}

START_TEST(good_report_gives_its_routes)
{
	char s[INET6_ADDRSTRLEN], pb[64];

	ck_assert_int_eq(routes(report()), 0);
	ck_assert_uint_eq(out.n_remotes, 2);
	ck_assert_str_eq(out.remotes[0].vpc, "Red7");
	ck_assert_str_eq(gdp_prefix_str(&out.remotes[0].prefix, pb, sizeof(pb)), "fd00:a::12/128");
	ck_assert_str_eq(inet_ntop(AF_INET6, &out.remotes[0].sid, s, sizeof(s)), "fcbb:bb00:1:2:e001::");
	ck_assert_str_eq(gdp_prefix_str(&out.remotes[1].prefix, pb, sizeof(pb)), "10.1.0.12/32");
	ck_assert_str_eq(inet_ntop(AF_INET6, &out.remotes[1].sid, s, sizeof(s)), "fcbb:bb00:1:2:d003::");
}
END_TEST

/* A pod's delegated IPv6 block, as build.c reports it: learned whole. */
START_TEST(delegated_block_is_learned_whole)
{
	char pb[64];

	ck_assert_int_eq(routes(with("{\"spec\":{\"routes\":[{\"prefix\":\"2001:db8:a001::/96\","
				     "\"sid\":\"fcbb:bb00:1:2:e001::\"}]}}")), 0);
	ck_assert_uint_eq(out.n_remotes, 1);
	ck_assert_str_eq(gdp_prefix_str(&out.remotes[0].prefix, pb, sizeof(pb)), "2001:db8:a001::/96");
	/* ... but never with host bits set */
	gdp_state_free(&out);
	gdp_state_init(&out);
	ck_assert_int_eq(routes(with("{\"spec\":{\"routes\":[{\"prefix\":\"2001:db8:a001::5/96\","
				     "\"sid\":\"fcbb:bb00:1:2:e001::\"}]}}")), -EINVAL);
}
END_TEST

START_TEST(not_for_us_is_skipped_without_error)
{
	json_t *o;

	/* Our own report. */
	o = report();
	json_object_set_new(json_object_get(o, "spec"), "node", json_string("n1"));
	json_object_set_new(json_object_get(o, "metadata"), "name", json_string("n1-649241-68c"));
	ck_assert_int_eq(routes(o), 1);
	/* A VPC this node does not host. */
	o = report();
	json_object_set_new(json_object_get(o, "spec"), "vpc", json_string("Blu9"));
	json_object_set_new(json_object_get(o, "metadata"), "name", json_string("n2-2acffd-68c"));
	ck_assert_int_eq(routes(o), 1);
	/* Not programmed, no status at all, status of an older generation. */
	ck_assert_int_eq(routes(with("{\"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"False\",\"observedGeneration\":1}]}}")), 1);
	ck_assert_int_eq(routes(with("{\"status\":{}}")), 1);
	ck_assert_int_eq(routes(with("{\"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\",\"observedGeneration\":0}]}}")), 1);
	ck_assert_uint_eq(out.n_remotes, 0);
}
END_TEST

START_TEST(bad_reports_are_refused_whole_with_the_reason)
{
	static const struct { const char *merge, *want; } cases[] = {
		{ "{\"spec\":{\"routes\":[{\"prefix\":\"fd00:a::12/128\",\"sid\":\"not-a-sid\"}]}}", "invalid SID 'not-a-sid'" },
		{ "{\"spec\":{\"routes\":[{\"prefix\":\"fd00:a::12/128\",\"sid\":\"fcbb:bb00:1:0:e001::\"}]}}", "invalid SID" },
		{ "{\"spec\":{\"routes\":[{\"prefix\":\"fd00:a::12/128\",\"sid\":\"fcbb:bb00:1:2:e001::1\"}]}}", "invalid SID" },
		{ "{\"spec\":{\"routes\":[{\"prefix\":\"fd00:a::12/129\",\"sid\":\"fcbb:bb00:1:2:e001::\"}]}}", "invalid prefix 'fd00:a::12/129'" },
		{ "{\"spec\":{\"routes\":[{\"prefix\":\"10.1.0.12/24\",\"sid\":\"fcbb:bb00:1:2:d003::\"}]}}", "invalid prefix '10.1.0.12/24'" },
		{ "{\"spec\":{\"routes\":[{\"prefix\":7,\"sid\":\"fcbb:bb00:1:2:e001::\"}]}}", "invalid prefix '(none)'" },
		{ "{\"spec\":{\"routes\":[{\"prefix\":\"10.1.0.12/32\",\"sid\":\"fcbb:bb00:1:2:e001::\"}]}}", "function 0xE, wrong for 10.1.0.12/32" },
		{ "{\"spec\":{\"routes\":[{\"prefix\":\"fd00:a::12/128\",\"sid\":\"fcbb:bb00:1:1:e001::\"}]}}", "belongs to this node" },
		{ "{\"spec\":{\"routes\":\"everything\"}}", "not an array" },
		{ "{\"spec\":{\"routes\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}}", "17 entries" },
		{ "{\"spec\":{\"routes\":[\"x\"]}}", "invalid prefix" },
		{ "{\"spec\":{\"node\":\"n3\"}}", "name does not match spec (want n3-649241-68c)" },
		{ "{\"spec\":{\"node\":\"N2!\"}}", "not a lowercase DNS name" },
		{ "{\"spec\":{\"vpc\":\"Re d\"}}", "vpc id 'Re d'" },
		{ "{\"spec\":{\"vpcAttachment\":5}}", "must be strings" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why[0] = 0;
		ck_assert_msg(routes(with(cases[i].merge)) == -EINVAL, "case %zu accepted", i);
		ck_assert_msg(strstr(why, cases[i].want), "case %zu: '%s' lacks '%s'", i, why, cases[i].want);
		ck_assert_msg(out.n_remotes == 0, "case %zu left %zu routes", i, out.n_remotes);
	}
	/* A bad route after a good one takes the good one back out. */
	ck_assert_int_eq(routes(with("{\"spec\":{\"routes\":[{\"prefix\":\"fd00:a::12/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"},{\"prefix\":\"x\",\"sid\":\"y\"}]}}")), -EINVAL);
	ck_assert_uint_eq(out.n_remotes, 0);
}
END_TEST

static json_t *labelled(json_t *o, json_t *vpc_label)
{
	json_object_set_new(json_object_get(o, "metadata"), "labels",
			    json_pack("{s:s, s:o}", RPT_NODE_LABEL, "n2", RPT_VPC_LABEL, vpc_label));
	return o;
}

START_TEST(vpc_label_must_name_the_reports_vpc)
{
	/* The publisher's label: learned as without it. */
	ck_assert_int_eq(routes(labelled(report(), json_string("Red7"))), 0);
	ck_assert_uint_eq(out.n_remotes, 2);
	/* Another VPC's label would show the report to that VPC's learners: refused whole. */
	ck_assert_int_eq(routes(labelled(report(), json_string("Blu9"))), -EINVAL);
	ck_assert_str_eq(why, "label " RPT_VPC_LABEL " 'Blu9' does not match spec.vpc 'Red7'");
	ck_assert_int_eq(routes(labelled(report(), json_integer(7))), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "(not a string)"));
	ck_assert_uint_eq(out.n_remotes, 2);
}
END_TEST

START_TEST(scope_selector_names_the_hosted_vpcs)
{
	struct gdp_state st;
	struct gdp_vpc v = { .arg = 1, .table = 100 };
	char *sel;

	gdp_state_init(&st);
	sel = rpt_scope_selector(&st);
	ck_assert_str_eq(sel, ""); /* nothing hosted: nothing to watch */
	free(sel);
	snprintf(v.id, sizeof(v.id), "Red7");
	gdp_state_add_vpc(&st, &v);
	snprintf(v.id, sizeof(v.id), "Blu9");
	v.arg = 2;
	gdp_state_add_vpc(&st, &v);
	sel = rpt_scope_selector(&st);
	ck_assert_str_eq(sel, RPT_VPC_LABEL " in (Blu9,Red7)"); /* sorted: one selector per set */
	free(sel);
	/* Past the limit: every labelled report. */
	for (int i = 0; i < RPT_SCOPE_MAX_VPCS; i++) {
		snprintf(v.id, sizeof(v.id), "Z%d", i);
		v.arg = (uint16_t)(3 + i);
		gdp_state_add_vpc(&st, &v);
	}
	sel = rpt_scope_selector(&st);
	ck_assert_str_eq(sel, RPT_VPC_LABEL);
	free(sel);
	gdp_state_free(&st);

	ck_assert(rpt_label_value_ok("Red7"));
	ck_assert(rpt_label_value_ok("a-b.c_d"));
	ck_assert(!rpt_label_value_ok(""));
	ck_assert(!rpt_label_value_ok("-a"));
	ck_assert(!rpt_label_value_ok("a_"));
	ck_assert(!rpt_label_value_ok("a/b"));
	ck_assert(!rpt_label_value_ok("a b"));
	ck_assert(rpt_label_value_ok("a123456789012345678901234567890123456789012345678901234567890bc")); /* 63 */
	ck_assert(!rpt_label_value_ok("a123456789012345678901234567890123456789012345678901234567890bcd"));
}
END_TEST

START_TEST(garbage_objects_never_crash)
{
	const char *junk[] = { "[]", "\"s\"", "{}", "{\"metadata\":5}", "{\"metadata\":{\"name\":\"x\"}}",
			       "{\"metadata\":{\"name\":\"x\"},\"spec\":[]}",
			       "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"node\":null}}" };

	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		json_t *o = json_loads(junk[i], JSON_DECODE_ANY, NULL);

		ck_assert_ptr_nonnull(o);
		ck_assert_int_eq(routes(o), -EINVAL);
		ck_assert(why[0]);
	}
	ck_assert_int_eq(rpt_routes_from_report(NULL, "n1", &local, &out, why, sizeof(why)), -EINVAL);
	/* No routes field is a report with nothing to offer, not an error. */
	{
		json_t *o = report();

		json_object_del(json_object_get(o, "spec"), "routes");
		ck_assert_int_eq(routes(o), 0);
	}
	ck_assert_uint_eq(out.n_remotes, 0);
}
END_TEST

/*
 * Random damage to a good report (values swapped for other types, strings
 * cut or bytes flipped) under ASan/UBSan: never a crash, only 0/1/-EINVAL,
 * and whatever is accepted is a valid remote of the right family/function.
 */
static json_t *damage(json_t *v, unsigned *seed)
{
	static const char *const junk[] = { "", "::", "fcbb:bb00:1:2:e001::/64", "10.0.0.0/8", "fe80::1", "True" };
	size_t i;
	const char *k;
	json_t *x;

	switch (rand_r(seed) % 8) {
	case 0: return json_integer(rand_r(seed));
	case 1: return json_null();
	case 2: return json_string(junk[rand_r(seed) % 6]);
	case 3: return json_array();
	default: break;
	}
	if (json_is_string(v)) {
		char b[128];

		snprintf(b, sizeof(b), "%s", json_string_value(v));
		if (b[0]) {
			size_t n = strlen(b);

			if (rand_r(seed) % 2)
				b[rand_r(seed) % n] = (char)(rand_r(seed) % 96 + 32);
			else
				b[rand_r(seed) % n] = 0;
		}
		return json_string(b);
	}
	if (json_is_object(v)) {
		json_t *o = json_deep_copy(v);

		json_object_foreach(o, k, x)
			if (rand_r(seed) % 3 == 0)
				json_object_set_new(o, k, damage(x, seed));
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_deep_copy(v);

		json_array_foreach(a, i, x)
			if (rand_r(seed) % 2 == 0)
				json_array_set_new(a, i, damage(x, seed));
		return a;
	}
	return json_deep_copy(v);
}

START_TEST(random_damage_is_handled)
{
	unsigned seed = 12345;
	json_t *good = report();
	int seen[3] = { 0 };

	for (int i = 0; i < 20000; i++) {
		json_t *o = damage(good, &seed);
		int rc = rpt_routes_from_report(o, "n1", &local, &out, why, sizeof(why));

		ck_assert_msg(rc == 0 || rc == 1 || rc == -EINVAL, "iteration %d: rc %d", i, rc);
		seen[rc == 0 ? 0 : rc == 1 ? 1 : 2]++;
		for (size_t j = 0; j < out.n_remotes; j++) {
			uint16_t nid;
			unsigned fn;

			ck_assert_int_eq(gdp_sid_parse(&out.remotes[j].sid, NULL, &nid, &fn, NULL), 0);
			ck_assert_int_eq(fn, out.remotes[j].prefix.family == AF_INET6 ? GDP_FN_DECAP : GDP_FN_DX4);
			ck_assert_str_eq(out.remotes[j].vpc, "Red7");
		}
		out.n_remotes = 0;
		json_decref(o);
	}
	json_decref(good);
	/* The damage reaches every outcome, so the loop is not testing one path. */
	ck_assert_int_gt(seen[0], 0);
	ck_assert_int_gt(seen[1], 0);
	ck_assert_int_gt(seen[2], 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report_routes");
	TCase *tc = tcase_create("routes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, good_report_gives_its_routes);
	tcase_add_test(tc, delegated_block_is_learned_whole);
	tcase_add_test(tc, not_for_us_is_skipped_without_error);
	tcase_add_test(tc, bad_reports_are_refused_whole_with_the_reason);
	tcase_add_test(tc, vpc_label_must_name_the_reports_vpc);
	tcase_add_test(tc, scope_selector_names_the_hosted_vpcs);
	tcase_add_test(tc, garbage_objects_never_crash);
	tcase_add_test(tc, random_damage_is_handled);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
