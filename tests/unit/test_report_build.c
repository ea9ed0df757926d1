/* Report objects built from a desired state + reconcile results (agent/report/build.c). */
#include "agent/report/report.h"
#include "tests/lib/gtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "common/json.h"

static struct gdp_state st;

static void mkstate(void)
{
	struct gdp_vpc v = { .id = "Red7", .arg = 1, .table = 16385 };
	struct gdp_attachment a = { .vpc = "Red7", .id = "R1", .container_id = "ctr-1",
				    .host_ifname = "gc0123456789abc", .arg = 5 };

	gdp_state_init(&st);
	st.node.block[0] = 0xfc; st.node.block[1] = 0xbb; st.node.block[2] = 0xbb;
	st.node.block[3] = 0x00; st.node.block[4] = 0x00; st.node.block[5] = 0x01;
	st.node.node_id = 2;
	ck_assert_int_eq(gdp_state_add_vpc(&st, &v), 0);
	ck_assert_int_eq(gdp_prefix_parse("fd00:a::11", &a.addrs[0]), 0);
	ck_assert_int_eq(gdp_prefix_parse("10.1.0.11", &a.addrs[1]), 0);
	a.n_addrs = 2;
	a.nh4 = gdp_default_nh4(a.arg);
	ck_assert_int_eq(gdp_state_add_attachment(&st, &a), 0);
}

START_TEST(name_is_node_and_hex_ids)
{
	char b[300], why[200];

	/* base62 "Red7" = 0x649241, "R1" = 0x68b */
	ck_assert_int_eq(rpt_name("node-a", "Red7", "R1", b, sizeof(b), why, sizeof(why)), 0);
	ck_assert_str_eq(b, "node-a-649241-68b");
	ck_assert_int_eq(rpt_name("n1", "z", "10", b, sizeof(b), why, sizeof(why)), 0);
	ck_assert_str_eq(b, "n1-3d-3e");
	/* Not DNS-safe nodes and bad ids are refused with the reason. */
	ck_assert_int_eq(rpt_name("Node_A", "Red7", "R1", b, sizeof(b), why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "Node_A"));
	ck_assert_int_eq(rpt_name("n1", "Re-d", "R1", b, sizeof(b), why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "vpc id 'Re-d'"));
	ck_assert_int_eq(rpt_name("n1", "Red7", "", b, sizeof(b), why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(rpt_name("n1", "zzzzzzzzzzzz", "R1", b, sizeof(b), why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(rpt_name("n1", "Red7", "R1", b, 8, why, sizeof(why)), -EINVAL);
}
END_TEST

START_TEST(spec_carries_ids_devices_subnets_sids_routes)
{
	struct rpt_pod pod = { .ns = "default", .name = "red-1", .guest_ifname = "eth0" };
	json_t *s;

	mkstate();
	s = rpt_spec("n2", &st, &st.atts[0], &pod);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(gj_str(s, "node"), "n2");
	ck_assert_str_eq(gj_str(s, "vpc"), "Red7");
	ck_assert_str_eq(gj_str(s, "vpcAttachment"), "R1");
	ck_assert_str_eq(gj_str(s, "containerID"), "ctr-1");
	ck_assert_str_eq(gj_str(s, "pod.namespace"), "default");
	ck_assert_str_eq(gj_str(s, "pod.name"), "red-1");
	ck_assert_str_eq(gj_str(s, "hostInterface"), "gc0123456789abc");
	ck_assert_str_eq(gj_str(s, "guestInterface"), "eth0");
	ck_assert_int_eq(gj_int(s, "table", 0), 16385);
	ck_assert_str_eq(json_string_value(json_array_get(gj_get(s, "podSubnets"), 0)), "fd00:a::11/128");
	ck_assert_str_eq(json_string_value(json_array_get(gj_get(s, "podSubnets"), 1)), "10.1.0.11/32");
	ck_assert_str_eq(gj_str(s, "localSID"), "fcbb:bb00:1:2:e001::");
	ck_assert_int_eq(json_array_size(gj_get(s, "routes")), 2);
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s, "routes"), 0), "prefix"), "fd00:a::11/128");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s, "routes"), 0), "sid"), "fcbb:bb00:1:2:e001::");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s, "routes"), 1), "prefix"), "10.1.0.11/32");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s, "routes"), 1), "sid"), "fcbb:bb00:1:2:d005::");
	json_decref(s);

	/* No pod record: no pod/guest fields; no nh4: no IPv4 route (no End.DX4 SID). */
	st.atts[0].nh4.s_addr = 0;
	s = rpt_spec("n2", &st, &st.atts[0], NULL);
	ck_assert_ptr_null(gj_get(s, "pod"));
	ck_assert_ptr_null(gj_get(s, "guestInterface"));
	ck_assert_int_eq(json_array_size(gj_get(s, "routes")), 1);
	json_decref(s);

	/* Unknown VPC: nothing to report. */
	snprintf(st.atts[0].vpc, sizeof(st.atts[0].vpc), "Nope");
	ck_assert_ptr_null(rpt_spec("n2", &st, &st.atts[0], NULL));
	gdp_state_free(&st);
}
END_TEST

START_TEST(spec_carries_a_delegated_block_and_no_address_attachments)
{
	json_t *s;

	/* A /96 delegated to the pod: podSubnets and routes carry the whole
	 * block, so other nodes route all of it to this node's decap SID. */
	mkstate();
	ck_assert_int_eq(gdp_prefix_parse("2001:db8:a001::/96", &st.atts[0].addrs[0]), 0);
	st.atts[0].n_addrs = 1;
	s = rpt_spec("n2", &st, &st.atts[0], NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(json_array_size(gj_get(s, "podSubnets")), 1);
	ck_assert_str_eq(json_string_value(json_array_get(gj_get(s, "podSubnets"), 0)), "2001:db8:a001::/96");
	ck_assert_int_eq(json_array_size(gj_get(s, "routes")), 1);
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s, "routes"), 0), "prefix"), "2001:db8:a001::/96");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s, "routes"), 0), "sid"), "fcbb:bb00:1:2:e001::");
	json_decref(s);
	/* A self-addressing guest: reported, with nothing to route. */
	st.atts[0].n_addrs = 0;
	s = rpt_spec("n2", &st, &st.atts[0], NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(json_array_size(gj_get(s, "podSubnets")), 0);
	ck_assert_int_eq(json_array_size(gj_get(s, "routes")), 0);
	json_decref(s);
	gdp_state_free(&st);
}
END_TEST

static void result(struct gdp_results *r, enum gdp_obj_kind k, const char *vpc, const char *key,
		   bool prog, int err, const char *msg)
{
	struct gdp_result *x = gdp_results_get(r, k, vpc, key);

	ck_assert_ptr_nonnull(x);
	x->programmed = prog;
	if (err)
		gdp_result_fail(x, err, "%s", msg);
}

START_TEST(programmed_only_when_verified)
{
	struct gdp_results res, cp;
	struct rpt_cond c;

	mkstate();
	gdp_results_init(&res);
	rpt_programmed(&res, &st.atts[0], &c);
	ck_assert(!c.programmed);
	ck_assert_str_eq(c.reason, "NotReconciled");

	result(&res, GDP_OBJ_NODE, "", "", true, 0, NULL);
	result(&res, GDP_OBJ_VPC, "Red7", "", true, 0, NULL);
	result(&res, GDP_OBJ_ATTACHMENT, "Red7", "R1", true, 0, NULL);
	rpt_programmed(&res, &st.atts[0], &c);
	ck_assert(c.programmed);
	ck_assert_str_eq(c.reason, "Programmed");
	ck_assert_ptr_nonnull(strstr(c.message, "Red7/R1"));

	/* The copy the publisher keeps says the same, without remote results. */
	result(&res, GDP_OBJ_REMOTE, "Red7", "fd00:a::12/128", true, 0, NULL);
	res.added = 7;
	ck_assert_int_eq(rpt_results_copy(&cp, &res), 0);
	ck_assert_uint_eq(cp.n, res.n - 1);
	ck_assert_uint_eq(cp.added, 7);
	for (size_t i = 0; i < cp.n; i++)
		ck_assert_int_ne(cp.v[i].kind, GDP_OBJ_REMOTE);
	rpt_programmed(&cp, &st.atts[0], &c);
	ck_assert(c.programmed);
	gdp_results_free(&cp);

	/* Returned 0 but not found on read-back: not programmed. */
	gdp_results_get(&res, GDP_OBJ_ATTACHMENT, "Red7", "R1")->programmed = false;
	rpt_programmed(&res, &st.atts[0], &c);
	ck_assert(!c.programmed);
	ck_assert_str_eq(c.reason, "NotVerified");

	result(&res, GDP_OBJ_ATTACHMENT, "Red7", "R1", false, -EEXIST,
	       "add route fd00:a::11/128 table 16385: File exists");
	rpt_programmed(&res, &st.atts[0], &c);
	ck_assert(!c.programmed);
	ck_assert_str_eq(c.reason, "ProgrammingFailed");
	ck_assert_str_eq(c.message, "add route fd00:a::11/128 table 16385: File exists");

	result(&res, GDP_OBJ_VPC, "Red7", "", false, -EBUSY, "vpc Red7: table 16385 already used by something else");
	rpt_programmed(&res, &st.atts[0], &c);
	ck_assert_str_eq(c.reason, "VPCNotProgrammed");
	ck_assert_ptr_nonnull(strstr(c.message, "table 16385"));
	gdp_results_free(&res);
	gdp_state_free(&st);
}
END_TEST

START_TEST(status_transition_time_moves_only_on_change)
{
	struct rpt_reporter rep = { "n2", RPT_VERSION, "kernel" };
	struct rpt_cond c = { .programmed = true, .reason = "Programmed", .message = "ok" };
	json_t *s1, *cur, *s2, *s3;

	s1 = rpt_status(&c, 3, NULL, &rep, "2026-01-01T00:00:00Z");
	ck_assert_int_eq(gj_int(s1, "observedGeneration", 0), 3);
	ck_assert_str_eq(gj_str(s1, "reporter.node"), "n2");
	/* No per-process identity: a restart must not rewrite every report. */
	ck_assert_ptr_null(gj_get(s1, "reporter.agentInstance"));
	ck_assert_str_eq(gj_str(s1, "reporter.datapath"), "kernel");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s1, "conditions"), 0), "status"), "True");
	cur = json_pack("{s:O}", "status", s1);
	ck_assert(rpt_status_equal(cur, s1));

	/* Same status later: the old transition time stays and nothing differs. */
	s2 = rpt_status(&c, 3, cur, &rep, "2026-01-01T00:05:00Z");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s2, "conditions"), 0), "lastTransitionTime"),
			 "2026-01-01T00:00:00Z");
	ck_assert(rpt_status_equal(cur, s2));

	/* Status flips: new time, and the write is needed. */
	c.programmed = false;
	snprintf(c.reason, sizeof(c.reason), "ProgrammingFailed");
	s3 = rpt_status(&c, 3, cur, &rep, "2026-01-01T00:06:00Z");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s3, "conditions"), 0), "lastTransitionTime"),
			 "2026-01-01T00:06:00Z");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(s3, "conditions"), 0), "status"), "False");
	ck_assert(!rpt_status_equal(cur, s3));
	/* A new generation is a difference too. */
	json_decref(s2);
	c.programmed = true;
	snprintf(c.reason, sizeof(c.reason), "Programmed");
	s2 = rpt_status(&c, 4, cur, &rep, "2026-01-01T00:07:00Z");
	ck_assert(!rpt_status_equal(cur, s2));
	ck_assert(!rpt_status_equal(NULL, s2));
	json_decref(s1);
	json_decref(s2);
	json_decref(s3);
	json_decref(cur);
}
END_TEST

/* The reports' owner is the Node: one entry, compared by kind, name and uid. */
START_TEST(owner_is_the_node)
{
	json_t *refs = rpt_owner_refs("n1", "u-1"), *o, *e;

	ck_assert_int_eq(json_array_size(refs), 1);
	e = json_array_get(refs, 0);
	ck_assert_str_eq(gj_str(e, "apiVersion"), "v1");
	ck_assert_str_eq(gj_str(e, "kind"), "Node");
	ck_assert_str_eq(gj_str(e, "name"), "n1");
	ck_assert_str_eq(gj_str(e, "uid"), "u-1");
	/* neither controller nor blockOwnerDeletion: no extra permission, no foreground wait */
	ck_assert_ptr_null(json_object_get(e, "controller"));
	ck_assert_ptr_null(json_object_get(e, "blockOwnerDeletion"));

	o = json_pack("{s:{s:s}}", "metadata", "name", "r");
	ck_assert(!rpt_owner_is(o, "n1", "u-1")); /* no owner yet: write it */
	ck_assert(rpt_owner_is(o, "n1", NULL));   /* no Node known, none on the object */
	ck_assert(rpt_owner_is(o, "n1", ""));
	json_object_set(json_object_get(o, "metadata"), "ownerReferences", refs);
	ck_assert(rpt_owner_is(o, "n1", "u-1"));
	ck_assert(!rpt_owner_is(o, "n1", "u-2")); /* the Node came back with a new uid */
	ck_assert(!rpt_owner_is(o, "n2", "u-1")); /* another node's */
	ck_assert(!rpt_owner_is(o, "n1", NULL));  /* an owner the agent did not ask for */
	/* someone else's owner beside ours is not ours to judge; two Node owners are */
	json_array_append_new(refs, json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "apps/v1", "kind", "Deployment",
					      "name", "x", "uid", "u-9"));
	ck_assert(rpt_owner_is(o, "n1", "u-1"));
	json_array_append_new(refs, json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", "Node", "name", "n1",
					      "uid", "u-0"));
	ck_assert(!rpt_owner_is(o, "n1", "u-1"));
	/* garbage never matches */
	json_object_set_new(json_object_get(o, "metadata"), "ownerReferences", json_string("x"));
	ck_assert(!rpt_owner_is(o, "n1", "u-1"));
	json_object_set_new(json_object_get(o, "metadata"), "ownerReferences",
			    json_pack("[i, {s:i, s:s}]", 7, "kind", 3, "apiVersion", "v1"));
	ck_assert(!rpt_owner_is(o, "n1", "u-1"));
	ck_assert(rpt_owner_is(o, "n1", NULL));
	json_decref(refs);
	json_decref(o);
}
END_TEST

/* ---- the publisher's desired reports, built only where inputs changed ---- */

#define BIG_ATTS 1000
#define BIG_VPCS 4

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A node of BIG_ATTS attachments over BIG_VPCS VPCs, every one programmed. */
static void mkbig(struct gdp_state *s, struct gdp_results *res, struct rpt_pod *pods)
{
	char why[64];

	gdp_state_init(s);
	gdp_results_init(res);
	s->node.block[0] = 0xfc;
	s->node.node_id = 2;
	result(res, GDP_OBJ_NODE, "", "", true, 0, NULL);
	for (int v = 0; v < BIG_VPCS; v++) {
		struct gdp_vpc vp = { .arg = (uint16_t)(v + 1), .table = 16385u + (uint32_t)v };

		snprintf(vp.id, sizeof(vp.id), "Vpc%d", v);
		ck_assert_int_eq(gdp_state_add_vpc(s, &vp), 0);
		result(res, GDP_OBJ_VPC, vp.id, "", true, 0, NULL);
	}
	for (int i = 0; i < BIG_ATTS; i++) {
		struct gdp_attachment a = { .arg = (uint16_t)(i + 1) };

		snprintf(a.vpc, sizeof(a.vpc), "Vpc%d", i % BIG_VPCS);
		snprintf(a.id, sizeof(a.id), "att%d", i);
		snprintf(a.container_id, sizeof(a.container_id), "ctr-%d", i);
		snprintf(a.host_ifname, sizeof(a.host_ifname), "gc%d", i);
		snprintf(why, sizeof(why), "fd00:%x::%x", i % BIG_VPCS, i + 2);
		ck_assert_int_eq(gdp_prefix_parse(why, &a.addrs[0]), 0);
		a.n_addrs = 1;
		ck_assert_int_eq(gdp_state_add_attachment(s, &a), 0);
		result(res, GDP_OBJ_ATTACHMENT, a.vpc, a.id, true, 0, NULL);
		snprintf(pods[i].ns, sizeof(pods[i].ns), "ns%d", i % 7);
		snprintf(pods[i].name, sizeof(pods[i].name), "pod-%d", i);
		snprintf(pods[i].guest_ifname, sizeof(pods[i].guest_ifname), "eth0");
	}
}

/* The memo's answer is what a build from nothing says, and reuses what it can. */
static size_t check_build(struct rpt_desired *d, const struct gdp_state *s, const struct rpt_pod *pods,
			  struct gdp_results *res, json_t **prev, double *ms)
{
	struct rpt_desired *fresh = rpt_desired_new();
	size_t built, fbuilt, reused = 0;
	double t0 = now_ms();
	json_t *j = rpt_desired_build(d, "node-a", s, pods, res, &built), *f, *v;
	const char *name;

	*ms = now_ms() - t0;
	ck_assert_ptr_nonnull(j);
	ck_assert_ptr_nonnull(fresh);
	f = rpt_desired_build(fresh, "node-a", s, pods, res, &fbuilt);
	ck_assert_ptr_nonnull(f);
	ck_assert(json_equal(j, f));
	ck_assert_uint_eq(fbuilt, s->n_atts);
	json_object_foreach(j, name, v)
		reused += *prev && json_object_get(*prev, name) == v;
	/* every entry not built this time is the object of the last build */
	ck_assert_uint_le(json_object_size(j) - reused, built);
	json_decref(f);
	rpt_desired_free(fresh);
	json_decref(*prev);
	*prev = j;
	return built;
}

START_TEST(desired_builds_only_what_changed)
{
	static struct rpt_pod pods[BIG_ATTS];
	struct gdp_state s;
	struct gdp_results res;
	struct rpt_desired *d = rpt_desired_new();
	json_t *j = NULL;
	double full_ms, same_ms, one_ms;
	char name[300], why[64];
	const json_t *e;

	ck_assert_ptr_nonnull(d);
	mkbig(&s, &res, pods);
	/* The first pass builds every report (what every pass cost before the memo). */
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &full_ms), BIG_ATTS);
	ck_assert_uint_eq(json_object_size(j), BIG_ATTS);
	/* The same pass again: nothing. */
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &same_ms), 0);
	/* One attachment's result changes among 1,000: one report. */
	result(&res, GDP_OBJ_ATTACHMENT, "Vpc1", "att5", false, -EEXIST, "add route: File exists");
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &one_ms), 1);
	ck_assert_int_eq(rpt_name("node-a", "Vpc1", "att5", name, sizeof(name), why, sizeof(why)), 0);
	e = json_object_get(j, name);
	ck_assert_str_eq(gj_str(e, "cond.reason"), "ProgrammingFailed");
	fprintf(stderr, "desired reports of %d attachments: all built %.3f ms, none %.3f ms, one %.3f ms\n",
		BIG_ATTS, full_ms, same_ms, one_ms);
	/* One pod, one attachment's field: one report each. */
	snprintf(pods[7].name, sizeof(pods[7].name), "pod-7-renamed");
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &one_ms), 1);
	s.atts[9].n_addrs = 0;
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &one_ms), 1);
	/* A VPC's result: the reports of that VPC; the node's SIDs: every one. */
	result(&res, GDP_OBJ_VPC, "Vpc2", "", false, -EBUSY, "table in use");
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &one_ms), BIG_ATTS / BIG_VPCS);
	s.node.node_id = 3;
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &full_ms), BIG_ATTS);
	/* An attachment gone (the last): its report is no longer desired, nothing built. */
	s.n_atts--;
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &one_ms), 0);
	ck_assert_uint_eq(json_object_size(j), BIG_ATTS - 1);
	/* and back: built again */
	s.n_atts++;
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &one_ms), 1);
	/* A VPC gone: its reports go; no pods at all: each report built again without one. */
	s.n_vpcs--;
	ck_assert_uint_eq(check_build(d, &s, pods, &res, &j, &one_ms), BIG_ATTS / BIG_VPCS);
	ck_assert_uint_eq(json_object_size(j), BIG_ATTS - BIG_ATTS / BIG_VPCS);
	ck_assert_uint_eq(check_build(d, &s, NULL, &res, &j, &one_ms), BIG_ATTS);
	ck_assert_ptr_null(json_object_get(json_object_get(json_object_get(j, name), "spec"), "pod"));
	s.n_vpcs++;
	json_decref(j);
	j = NULL;
	rpt_desired_free(d);
	gdp_results_free(&res);
	gdp_state_free(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report_build");
	TCase *tc = tcase_create("build");

	tcase_add_test(tc, name_is_node_and_hex_ids);
	tcase_add_test(tc, spec_carries_ids_devices_subnets_sids_routes);
	tcase_add_test(tc, spec_carries_a_delegated_block_and_no_address_attachments);
	tcase_add_test(tc, programmed_only_when_verified);
	tcase_add_test(tc, status_transition_time_moves_only_on_change);
	tcase_add_test(tc, owner_is_the_node);
	tcase_add_test(tc, desired_builds_only_what_changed);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
