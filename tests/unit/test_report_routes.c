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
	ck_assert_str_eq(gdp_remote_vpc(&out.remotes[0]), "Red7");
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
			ck_assert_str_eq(gdp_remote_vpc(&out.remotes[j]), "Red7");
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

/* ---- overlapping prefixes of one VPC across reports (rpt_remotes_resolve) ---- */

static struct gdp_remote rt(const char *vpc, const char *prefix, const char *sid)
{
	struct gdp_remote r;

	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(gdp_remote_set_vpc(&r, vpc), 0);
	ck_assert_int_eq(gdp_prefix_parse(prefix, &r.prefix), 0);
	ck_assert_int_eq(inet_pton(AF_INET6, sid, &r.sid), 1);
	return r;
}

static const char *rt_str(const struct gdp_remote *r, char *buf, size_t n)
{
	char pb[64], sb[INET6_ADDRSTRLEN];

	snprintf(buf, n, "%s %s %s", gdp_remote_vpc(r), gdp_prefix_str(&r->prefix, pb, sizeof(pb)),
		 inet_ntop(AF_INET6, &r->sid, sb, sizeof(sb)));
	return buf;
}

struct ov_log {
	int dups, nested;
	char last[300];
};

static void ov_cb(const struct gdp_remote *kept, const struct gdp_remote *other, bool nested, void *ud)
{
	struct ov_log *l = ud;
	char a[120], b[120];

	if (nested)
		l->nested++;
	else
		l->dups++;
	snprintf(l->last, sizeof(l->last), "%s | %s", rt_str(kept, a, sizeof(a)), rt_str(other, b, sizeof(b)));
}

/* Two reports (nodes n2 and n3) claim the same address: the lowest SID is
 * kept whatever the order, the VPC's other routes are untouched. */
START_TEST(same_prefix_from_two_reports_keeps_the_lowest_sid)
{
	struct gdp_remote in[2][4] = {
		{ rt("Red7", "fd00:a::12/128", "fcbb:bb00:1:3:e001::"), rt("Red7", "fd00:a::12/128", "fcbb:bb00:1:2:e001::"),
		  rt("Red7", "fd00:a::99/128", "fcbb:bb00:1:3:e001::"), rt("Blu9", "fd00:a::12/128", "fcbb:bb00:1:3:e002::") },
		{ rt("Blu9", "fd00:a::12/128", "fcbb:bb00:1:3:e002::"), rt("Red7", "fd00:a::99/128", "fcbb:bb00:1:3:e001::"),
		  rt("Red7", "fd00:a::12/128", "fcbb:bb00:1:2:e001::"), rt("Red7", "fd00:a::12/128", "fcbb:bb00:1:3:e001::") },
	};
	char b[120];

	for (int k = 0; k < 2; k++) {
		struct rpt_overlaps ov;
		struct ov_log l = { 0 };
		size_t n = rpt_remotes_resolve(in[k], 4, &ov, ov_cb, &l);

		ck_assert_uint_eq(n, 3);
		ck_assert_uint_eq(ov.duplicates, 1);
		ck_assert_uint_eq(ov.nested, 0);
		ck_assert_int_eq(l.dups, 1);
		ck_assert_str_eq(l.last, "Red7 fd00:a::12/128 fcbb:bb00:1:2:e001:: | Red7 fd00:a::12/128 fcbb:bb00:1:3:e001::");
		/* Another VPC's same address is no overlap: VPCs have their own tables. */
		ck_assert_str_eq(rt_str(&in[k][0], b, sizeof(b)), "Blu9 fd00:a::12/128 fcbb:bb00:1:3:e002::");
		ck_assert_str_eq(rt_str(&in[k][1], b, sizeof(b)), "Red7 fd00:a::12/128 fcbb:bb00:1:2:e001::");
		ck_assert_str_eq(rt_str(&in[k][2], b, sizeof(b)), "Red7 fd00:a::99/128 fcbb:bb00:1:3:e001::");
	}
}
END_TEST

/* An address inside another pod's delegated block (and a v4 /32 in a /24):
 * both stay (longest match), counted against the nearest outer prefix. */
START_TEST(prefix_inside_another_is_kept_and_counted)
{
	struct gdp_remote v[] = {
		rt("Red7", "2001:db8:a001::5/128", "fcbb:bb00:1:3:e001::"),
		rt("Red7", "2001:db8:a001::/96", "fcbb:bb00:1:2:e001::"),
		rt("Red7", "2001:db8:a001::/112", "fcbb:bb00:1:4:e001::"),
		rt("Red7", "2001:db8:b001::5/128", "fcbb:bb00:1:3:e001::"), /* outside the block */
		rt("Red7", "10.1.0.12/32", "fcbb:bb00:1:3:d003::"),
		rt("Red7", "10.1.0.0/24", "fcbb:bb00:1:2:d001::"),
		rt("Red7", "10.1.1.12/32", "fcbb:bb00:1:3:d004::"),
		rt("Blu9", "2001:db8:a001::6/128", "fcbb:bb00:1:3:e002::"), /* another VPC */
	};
	struct rpt_overlaps ov;
	struct ov_log l = { 0 };
	size_t n = rpt_remotes_resolve(v, 8, &ov, ov_cb, &l);
	char b[120];

	ck_assert_uint_eq(n, 8);
	ck_assert_uint_eq(ov.duplicates, 0);
	/* ::5/128 inside the /112 (the nearest), the /112 inside the /96, 10.1.0.12 inside the /24 */
	ck_assert_uint_eq(ov.nested, 3);
	ck_assert_int_eq(l.nested, 3);
	/* Sorted: VPC, family, length, address. */
	ck_assert_str_eq(rt_str(&v[0], b, sizeof(b)), "Blu9 2001:db8:a001::6/128 fcbb:bb00:1:3:e002::");
	ck_assert_str_eq(rt_str(&v[1], b, sizeof(b)), "Red7 10.1.0.0/24 fcbb:bb00:1:2:d001::");
	ck_assert_str_eq(rt_str(&v[4], b, sizeof(b)), "Red7 2001:db8:a001::/96 fcbb:bb00:1:2:e001::");
	ck_assert_str_eq(l.last, "Red7 2001:db8:a001::/112 fcbb:bb00:1:4:e001:: | Red7 2001:db8:a001::5/128 fcbb:bb00:1:3:e001::");
}
END_TEST

/* The outcome is a function of the set alone: any order of the same routes,
 * and any unrelated routes added, give the same winners (no flapping). */
START_TEST(overlap_outcome_does_not_depend_on_order_or_other_routes)
{
	enum { N = 200 };
	static struct gdp_remote base[N], v[N + 50];
	static char want[N][120];
	struct rpt_overlaps ov;
	unsigned seed = 7;
	size_t n0, n;
	char p[64], sid[64], b[120];

	for (int i = 0; i < N; i++) {
		/* 40 addresses, each offered by 5 nodes. */
		snprintf(p, sizeof(p), "fd00:a::%x/128", i % 40);
		snprintf(sid, sizeof(sid), "fcbb:bb00:1:%x:e001::", 2 + (i / 40 + i) % 5);
		base[i] = rt("Red7", p, sid);
	}
	memcpy(v, base, sizeof(base));
	n0 = rpt_remotes_resolve(v, N, &ov, NULL, NULL);
	ck_assert_uint_eq(n0, 40);
	ck_assert_uint_eq(ov.duplicates, N - 40);
	for (size_t i = 0; i < n0; i++) {
		rt_str(&v[i], want[i], sizeof(want[i]));
		ck_assert_ptr_nonnull(strstr(want[i], " fcbb:bb00:1:2:e001::")); /* the lowest SID */
	}
	for (int round = 0; round < 50; round++) {
		size_t extra = (size_t)(rand_r(&seed) % 50);

		memcpy(v, base, sizeof(base));
		for (size_t i = 0; i < extra; i++) {
			snprintf(p, sizeof(p), "fd00:b::%zx/128", i);
			v[N + i] = rt("Red7", p, "fcbb:bb00:1:9:e001::");
		}
		for (size_t i = N + extra - 1; i > 0; i--) {
			size_t j = (size_t)rand_r(&seed) % (i + 1);
			struct gdp_remote t = v[i];

			v[i] = v[j];
			v[j] = t;
		}
		n = rpt_remotes_resolve(v, N + extra, &ov, NULL, NULL);
		ck_assert_uint_eq(n, n0 + extra);
		ck_assert_uint_eq(ov.duplicates, N - 40);
		for (size_t i = 0; i < n0; i++)
			ck_assert_str_eq(rt_str(&v[i], b, sizeof(b)), want[i]);
	}
}
END_TEST

/* From two real report objects through the parser, as the learner reads them. */
START_TEST(two_reports_claiming_one_address)
{
	json_t *o = report();
	char name[128];
	struct rpt_overlaps ov;
	char b[120];

	ck_assert_int_eq(routes(report()), 0); /* n2: fd00:a::12 via node 2, 10.1.0.12 */
	ck_assert_int_eq(rpt_name("n3", "Red7", "R3", name, sizeof(name), why, sizeof(why)), 0);
	json_object_set_new(json_object_get(o, "metadata"), "name", json_string(name));
	json_object_set_new(json_object_get(o, "spec"), "node", json_string("n3"));
	json_object_set_new(json_object_get(o, "spec"), "vpcAttachment", json_string("R3"));
	json_object_set_new(json_object_get(o, "spec"), "routes",
			    json_pack("[{s:s, s:s}]", "prefix", "fd00:a::12/128", "sid", "fcbb:bb00:1:3:e001::"));
	ck_assert_int_eq(routes(o), 0);
	ck_assert_uint_eq(out.n_remotes, 3);
	out.n_remotes = rpt_remotes_resolve(out.remotes, out.n_remotes, &ov, NULL, NULL);
	ck_assert_uint_eq(out.n_remotes, 2);
	ck_assert_uint_eq(ov.duplicates, 1);
	ck_assert_str_eq(rt_str(&out.remotes[0], b, sizeof(b)), "Red7 10.1.0.12/32 fcbb:bb00:1:2:d003::");
	ck_assert_str_eq(rt_str(&out.remotes[1], b, sizeof(b)), "Red7 fd00:a::12/128 fcbb:bb00:1:2:e001::");
	/* Nothing at all: nothing to count. */
	ck_assert_uint_eq(rpt_remotes_resolve(NULL, 0, &ov, NULL, NULL), 0);
	ck_assert_uint_eq(ov.duplicates + ov.nested, 0);
}
END_TEST

/* Random claims (2 VPCs, both families, short and long prefixes over a
 * small address space so that they overlap a lot) checked against a brute
 * force: no prefix twice, each kept one has the lowest SID of its claims,
 * and the nested count is the number of kept prefixes inside a shorter one. */
START_TEST(overlap_resolution_matches_brute_force)
{
	enum { N = 300 };
	static struct gdp_remote in[N], v[N];
	unsigned seed = 12345;

	for (int round = 0; round < 10; round++) {
		struct rpt_overlaps ov;
		size_t n, nested = 0;

		for (int i = 0; i < N; i++) {
			struct gdp_remote *r = &in[i];
			bool v4 = rand_r(&seed) % 3 == 0;
			unsigned len;

			memset(r, 0, sizeof(*r));
			r->vpc_ix = gdp_vpc_ix(rand_r(&seed) % 2 ? "Red7" : "Blu9");
			r->prefix.family = v4 ? AF_INET : AF_INET6;
			len = v4 ? 24 + rand_r(&seed) % 9 : 120 + rand_r(&seed) % 9;
			r->prefix.len = (uint8_t)len;
			if (v4) {
				r->prefix.addr.raw[0] = 10;
				r->prefix.addr.raw[3] = (uint8_t)(rand_r(&seed) % 32);
			} else {
				r->prefix.addr.raw[0] = 0xfd;
				r->prefix.addr.raw[15] = (uint8_t)(rand_r(&seed) % 64);
			}
			/* canonical: host bits cleared */
			for (unsigned b = len; b < (v4 ? 32u : 128u); b++)
				r->prefix.addr.raw[b / 8] &= (uint8_t)~(0x80u >> (b % 8));
			r->sid.s6_addr[0] = 0xfc;
			r->sid.s6_addr[7] = (uint8_t)(1 + rand_r(&seed) % 6);
		}
		memcpy(v, in, sizeof(in));
		n = rpt_remotes_resolve(v, N, &ov, NULL, NULL);
		ck_assert_uint_eq(n + ov.duplicates, N);
		for (size_t i = 0; i < n; i++) {
			bool inside = false;

			for (size_t j = 0; j < n; j++) {
				if (i == j || strcmp(gdp_remote_vpc(&v[i]), gdp_remote_vpc(&v[j])))
					continue;
				ck_assert_msg(!gdp_prefix_equal(&v[i].prefix, &v[j].prefix), "round %d: prefix kept twice", round);
				inside |= v[j].prefix.len < v[i].prefix.len && gdp_prefix_contains(&v[j].prefix, &v[i].prefix);
			}
			nested += inside;
			/* the lowest SID of every claim on this prefix */
			for (int k = 0; k < N; k++)
				if (!strcmp(gdp_remote_vpc(&in[k]), gdp_remote_vpc(&v[i])) && gdp_prefix_equal(&in[k].prefix, &v[i].prefix))
					ck_assert_int_le(memcmp(&v[i].sid, &in[k].sid, sizeof(v[i].sid)), 0);
		}
		ck_assert_uint_eq(ov.nested, nested);
		ck_assert_uint_gt(ov.duplicates, 0);
		ck_assert_uint_gt(ov.nested, 0);
	}
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
	tcase_add_test(tc, same_prefix_from_two_reports_keeps_the_lowest_sid);
	tcase_add_test(tc, prefix_inside_another_is_kept_and_counted);
	tcase_add_test(tc, overlap_outcome_does_not_depend_on_order_or_other_routes);
	tcase_add_test(tc, two_reports_claiming_one_address);
	tcase_add_test(tc, overlap_resolution_matches_brute_force);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
