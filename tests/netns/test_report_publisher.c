/*
 * The report module alone (rpt_start/rpt_update, no kernel) against a real
 * kube-apiserver: what the publisher writes for a given desired state and
 * results, that it puts back a report someone deleted, deletes the report of
 * an attachment that went, does not retry a write the server refuses as
 * invalid, and that the learner hands another node's Programmed report to
 * its route sink (rpt_opts.set_remotes: the agent's record; here a file the
 * test reads) and drops the route when the report stops being Programmed. Needs no root; in the netns suite because it starts daemons'
 * threads against the control plane like the other report suite.
 */
#include "agent/record_legacy.h"
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/report/report.h"
#include "common/json.h"
#include "common/log.h"

#define RNS "galactic-system"
#define NATT_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" RNS "/nodeattachments"

static struct cp cp;
static bool cp_is_up;
static char dir[64];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
	char cmd[1024];

	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	cp_is_up = true;
	ck_assert_msg(crds_install(&cp, NULL) == 0, "CRDs not established");
	snprintf(cmd, sizeof(cmd), "%s/kubectl --kubeconfig %s create namespace " RNS " >/dev/null",
		 cp.bin, cp.kubeconfig);
	ck_assert_msg(system(cmd) == 0, "namespace " RNS " not created");
	snprintf(dir, sizeof(dir), "/tmp/galactic-rptpub.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	if (cp_is_up)
		cp_down(&cp);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (dir[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static json_t *get(const char *name)
{
	/* A list (always 200) rather than a GET that logs every 404 while waiting. */
	return klist_find(&cp, NATT_PATH, name);
}

static const json_t *cond(const json_t *o)
{
	return kcond(o, "Programmed");
}

/* Waits until the report exists with Programmed == want ("True"/"False") or is gone (want NULL). */
static json_t *wait_for(const char *name, const char *want, double limit_s)
{
	double t0 = now_s();

	while (now_s() - t0 < limit_s) {
		json_t *o = get(name);

		if (!want && !o)
			return NULL;
		if (want && o && cond(o) && !strcmp(gj_str(cond(o), "status"), want))
			return o;
		json_decref(o);
		usleep(50 * 1000);
	}
	ck_abort_msg("report %s did not become %s within %.0f s", name, want ? want : "absent", limit_s);
	return NULL;
}

static unsigned sink_calls;

/* The learner's route sink: written as a remotes.json for the jq checks. */
static int sink(void *ctx, const struct gdp_remote *v, size_t n)
{
	struct gdp_state st;
	char err[256];
	int rc = 0;

	gdp_state_init(&st);
	for (size_t i = 0; i < n && !rc; i++)
		rc = gdp_state_add_remote(&st, &v[i]);
	if (!rc)
		rc = legacy_save_remotes(ctx, &st, err, sizeof(err));
	gdp_state_free(&st);
	__atomic_add_fetch(&sink_calls, 1, __ATOMIC_RELAXED);
	return rc;
}

static void mkstate(struct gdp_state *st)
{
	struct gdp_vpc v = { .id = "Red7", .arg = 1, .table = 16385 };
	struct gdp_attachment a = { .vpc = "Red7", .id = "R1", .container_id = "ctr-1",
				    .host_ifname = "gcaaaaaaaaaaaaa", .arg = 3 };

	gdp_state_init(st);
	st->node.block[0] = 0xfc; st->node.block[1] = 0xbb; st->node.block[2] = 0xbb;
	st->node.block[5] = 0x01;
	st->node.node_id = 1;
	ck_assert_int_eq(gdp_state_add_vpc(st, &v), 0);
	gdp_prefix_parse("fd00:a::11", &a.addrs[0]);
	gdp_prefix_parse("10.1.0.11", &a.addrs[1]);
	a.n_addrs = 2;
	a.nh4 = gdp_default_nh4(a.arg);
	ck_assert_int_eq(gdp_state_add_attachment(st, &a), 0);
}

/* Another node's report with Programmed=True, with or without the VPC label; returns its name. */
static void post_report(const char *node, const char *vpc, const char *att, const char *prefix,
			const char *sid, bool vpc_label, char *name, size_t n)
{
	char body[1024], path[512], why[128];

	ck_assert_int_eq(rpt_name(node, vpc, att, name, n, why, sizeof(why)), 0);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"labels\":{\"" RPT_NODE_LABEL "\":\"%s\"%s%s%s}},"
		 "\"spec\":{\"node\":\"%s\",\"vpc\":\"%s\",\"vpcAttachment\":\"%s\","
		 "\"routes\":[{\"prefix\":\"%s\",\"sid\":\"%s\"}]}}",
		 name, node, vpc_label ? ",\"" RPT_VPC_LABEL "\":\"" : "", vpc_label ? vpc : "",
		 vpc_label ? "\"" : "", node, vpc, att, prefix, sid);
	ck_assert_int_eq(kreq(&cp, "POST", NATT_PATH, "application/json", body, NULL, NULL), 201);
	snprintf(path, sizeof(path), NATT_PATH "/%s/status", name);
	ck_assert_int_eq(kreq(&cp, "PATCH", path, "application/merge-patch+json",
			      "{\"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\",\"observedGeneration\":1,"
			      "\"reason\":\"Programmed\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}", NULL, NULL), 200);
}

/* Waits until the sink's file holds exactly the remotes of jq expression want (an array). */
static bool remotes_become(const char *want)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "for _ in $(seq 100); do jq -e '[.remotes[] | \"\\(.vpc) \\(.prefix) \\(.sid)\"] | sort == (%s | sort)' "
		 "%s/remotes.json >/dev/null 2>&1 && exit 0; sleep 0.1; done; jq -c .remotes %s/remotes.json >&2; exit 1",
		 want, dir, dir);
	return system(cmd) == 0;
}

static void all_ok(struct gdp_results *res, const struct gdp_state *st)
{
	size_t i;

	gdp_results_reset(res);
	gdp_results_get(res, GDP_OBJ_NODE, "", "")->programmed = true;
	for (i = 0; i < st->n_vpcs; i++)
		gdp_results_get(res, GDP_OBJ_VPC, st->vpcs[i].id, "")->programmed = true;
	for (i = 0; i < st->n_atts; i++)
		gdp_results_get(res, GDP_OBJ_ATTACHMENT, st->atts[i].vpc, st->atts[i].id)->programmed = true;
}

START_TEST(test_publisher_and_learner)
{
	struct rpt_opts o = { .kubeconfig = cp.kubeconfig, .node = "pn1", .ns = RNS, .set_remotes = sink,
			      .ctx = dir, .datapath = "kernel", .max_backoff_s = 1 };
	struct gdp_state st;
	struct gdp_results res;
	struct rpt *r = NULL;
	char err[512], log[128], uid[64], body[1024];
	json_t *rep, *o2;
	FILE *lf;

	snprintf(log, sizeof(log), "%s/log", dir);
	lf = fopen(log, "w");
	ck_assert_ptr_nonnull(lf);
	setvbuf(lf, NULL, _IOLBF, 0);
	glog_set_output(lf);
	mkstate(&st);
	gdp_results_init(&res);
	all_ok(&res, &st);
	ck_assert_int_eq(rpt_start(&r, &o, err, sizeof(err)), 0);
	rpt_update(r, &st, NULL, &res);

	/* 1. The report: spec from the state, Programmed=True from the results, only our manager. */
	rep = wait_for("pn1-649241-68b", "True", 15);
	ck_assert_str_eq(gj_str(rep, "spec.localSID"), "fcbb:bb00:1:1:e001::");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(rep, "spec.routes"), 1), "sid"), "fcbb:bb00:1:1:d003::");
	ck_assert_str_eq(gj_str(rep, "status.reporter.node"), "pn1");
	ck_assert_str_eq(json_string_value(json_object_get(gj_get(rep, "metadata.labels"), RPT_NODE_LABEL)), "pn1");
	/* The VPC label the learners select on. */
	ck_assert_str_eq(json_string_value(json_object_get(gj_get(rep, "metadata.labels"), RPT_VPC_LABEL)), "Red7");
	ck_assert_int_eq(json_array_size(gj_get(rep, "metadata.managedFields")), 2); /* spec + status */
	ck_assert_str_eq(gj_str(json_array_get(gj_get(rep, "metadata.managedFields"), 0), "manager"), RPT_FIELD_MANAGER_PREFIX "pn1");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(rep, "metadata.managedFields"), 1), "manager"), RPT_FIELD_MANAGER_PREFIX "pn1");
	snprintf(uid, sizeof(uid), "%s", gj_str(rep, "metadata.uid"));
	json_decref(rep);

	/* 2. Failed results: False with the backend's message. */
	gdp_result_fail(gdp_results_get(&res, GDP_OBJ_ATTACHMENT, "Red7", "R1"), -EEXIST,
			"add route fd00:a::11/128 table 16385: File exists");
	rpt_update(r, &st, NULL, &res);
	rep = wait_for("pn1-649241-68b", "False", 10);
	ck_assert_str_eq(gj_str(cond(rep), "reason"), "ProgrammingFailed");
	ck_assert_str_eq(gj_str(cond(rep), "message"), "add route fd00:a::11/128 table 16385: File exists");
	json_decref(rep);
	all_ok(&res, &st);
	rpt_update(r, &st, NULL, &res);
	json_decref(wait_for("pn1-649241-68b", "True", 10));

	/* 2b. A pass that changed nothing builds no report; one changed attachment builds one. */
	{
		struct rpt_stats s0, s1;
		double until;

		for (until = now_s() + 10, rpt_get_stats(r, &s0); now_s() < until; rpt_get_stats(r, &s0)) {
			usleep(50000);
			rpt_get_stats(r, &s1);
			if (s1.pub_syncs == s0.pub_syncs)
				break; /* the last update's sync is done */
		}
		rpt_update(r, &st, NULL, &res);
		for (until = now_s() + 10; rpt_get_stats(r, &s1), s1.pub_syncs == s0.pub_syncs && now_s() < until;)
			usleep(10000);
		ck_assert_uint_gt(s1.pub_syncs, s0.pub_syncs);
		ck_assert_uint_eq(s1.pub_built, s0.pub_built);
		gdp_results_get(&res, GDP_OBJ_ATTACHMENT, "Red7", "R1")->programmed = false;
		rpt_update(r, &st, NULL, &res);
		json_decref(wait_for("pn1-649241-68b", "False", 10));
		rpt_get_stats(r, &s1);
		ck_assert_uint_eq(s1.pub_built, s0.pub_built + 1);
		all_ok(&res, &st);
		rpt_update(r, &st, NULL, &res);
		json_decref(wait_for("pn1-649241-68b", "True", 10));
	}

	/* 3. Deleted by someone else: put back (a new incarnation). */
	ck_assert_int_eq(kreq(&cp, "DELETE", NATT_PATH "/pn1-649241-68b", NULL, NULL, NULL, NULL), 200);
	rep = wait_for("pn1-649241-68b", "True", 10);
	ck_assert_str_ne(gj_str(rep, "metadata.uid"), uid);
	json_decref(rep);

	/* 4. An intent the server refuses (table 0 < CRD minimum): logged once, not retried. */
	{
		struct gdp_vpc v = { .id = "Bad1", .arg = 2, .table = 0 };
		struct gdp_attachment a = st.atts[0];

		snprintf(a.vpc, sizeof(a.vpc), "Bad1");
		snprintf(a.id, sizeof(a.id), "X1");
		snprintf(a.host_ifname, sizeof(a.host_ifname), "gcbbbbbbbbbbbbb");
		a.arg = 4;
		a.nh4 = gdp_default_nh4(a.arg);
		ck_assert_int_eq(gdp_state_add_vpc(&st, &v), 0);
		ck_assert_int_eq(gdp_state_add_attachment(&st, &a), 0);
		all_ok(&res, &st);
		rpt_update(r, &st, NULL, &res);
		sleep(4); /* several backoff periods of 1 s */
		ck_assert_ptr_null(get("pn1-2a26ab-7ff"));
		snprintf(body, sizeof(body), "test $(grep -c 'nodeattachment " RNS "/pn1-2a26ab-7ff refused, not retried' %s) -eq 1", log);
		ck_assert_msg(system(body) == 0, "the refused write was not logged exactly once");
		/* The good report is untouched. */
		rep = get("pn1-649241-68b");
		ck_assert_str_eq(gj_str(cond(rep), "status"), "True");
		json_decref(rep);
		st.n_atts--;
		st.n_vpcs--;
	}

	/* 5. Learning: another node's Programmed report of a VPC we host -> the sink.
	 * Without the VPC label (an agent before it) it is not learned: only
	 * rpt_opts.learn_unlabelled watches those (test_unlabelled_when_asked);
	 * once labelled, the learner's scoped watch brings it. */
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"pn2-649241-68c\"},\"spec\":{\"node\":\"pn2\",\"vpc\":\"Red7\","
		 "\"vpcAttachment\":\"R2\",\"routes\":[{\"prefix\":\"fd00:a::12/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"}]}}");
	ck_assert_int_eq(kreq(&cp, "POST", NATT_PATH, "application/json", body, NULL, NULL), 201);
	ck_assert_int_eq(kreq(&cp, "PATCH", NATT_PATH "/pn2-649241-68c/status", "application/merge-patch+json",
			      "{\"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\",\"observedGeneration\":1,"
			      "\"reason\":\"Programmed\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}", NULL, NULL), 200);
	{
		unsigned calls = __atomic_load_n(&sink_calls, __ATOMIC_RELAXED);

		sleep(2); /* what the learner would take to see it (20 ms here) many times over */
		snprintf(body, sizeof(body), "jq -e '.remotes == []' %s/remotes.json >/dev/null", dir);
		ck_assert_msg(system(body) == 0, "an unlabelled report was learned without learn_unlabelled");
		ck_assert_uint_eq(__atomic_load_n(&sink_calls, __ATOMIC_RELAXED), calls); /* not even looked at */
	}
	ck_assert_int_eq(kreq(&cp, "PATCH", NATT_PATH "/pn2-649241-68c", "application/merge-patch+json",
			      "{\"metadata\":{\"labels\":{\"" RPT_VPC_LABEL "\":\"Red7\"}}}", NULL, NULL), 200);
	snprintf(body, sizeof(body), "for _ in $(seq 100); do jq -e '.remotes == [{\"vpc\":\"Red7\",\"prefix\":\"fd00:a::12/128\","
		 "\"sid\":\"fcbb:bb00:1:2:e001::\"}]' %s/remotes.json >/dev/null 2>&1 && exit 0; sleep 0.1; done; exit 1", dir);
	ck_assert_msg(system(body) == 0, "route of pn2 not learned once labelled");
	/* Not Programmed any more: the route goes. */
	ck_assert_int_eq(kreq(&cp, "PATCH", NATT_PATH "/pn2-649241-68c/status", "application/merge-patch+json",
			      "{\"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"False\",\"observedGeneration\":1,"
			      "\"reason\":\"ProgrammingFailed\",\"lastTransitionTime\":\"2026-01-01T00:00:01Z\"}]}}", NULL, NULL), 200);
	snprintf(body, sizeof(body), "for _ in $(seq 100); do jq -e '.remotes == []' %s/remotes.json >/dev/null 2>&1 && exit 0; "
		 "sleep 0.1; done; exit 1", dir);
	ck_assert_msg(system(body) == 0, "route of a not-Programmed report kept");

	/* 5b. Labelled reports: the hosted VPC's is learned, another VPC's is not
	 * (it is not even selected); hosting that VPC too changes the learner's
	 * selector and brings its route; leaving it takes it away. */
	{
		struct gdp_vpc bv = { .id = "Blu9", .arg = 2, .table = 16386 };
		struct gdp_attachment ba = st.atts[0];
		char n3[128], n4[128];

		post_report("pn3", "Red7", "R3", "fd00:a::13/128", "fcbb:bb00:1:3:e001::", true, n3, sizeof(n3));
		post_report("pn4", "Blu9", "B4", "fd00:a::14/128", "fcbb:bb00:1:4:e002::", true, n4, sizeof(n4));
		ck_assert_msg(remotes_become("[\"Red7 fd00:a::13/128 fcbb:bb00:1:3:e001::\"]"),
			      "labelled report of a hosted VPC not learned alone");
		ck_assert_int_eq(gdp_state_add_vpc(&st, &bv), 0);
		snprintf(ba.vpc, sizeof(ba.vpc), "Blu9");
		snprintf(ba.id, sizeof(ba.id), "B1");
		snprintf(ba.host_ifname, sizeof(ba.host_ifname), "gcbbbbbbbbbbbbb");
		ba.arg = 5;
		ba.nh4 = gdp_default_nh4(ba.arg);
		ck_assert_int_eq(gdp_state_add_attachment(&st, &ba), 0);
		all_ok(&res, &st);
		rpt_update(r, &st, NULL, &res);
		ck_assert_msg(remotes_become("[\"Red7 fd00:a::13/128 fcbb:bb00:1:3:e001::\", "
					     "\"Blu9 fd00:a::14/128 fcbb:bb00:1:4:e002::\"]"),
			      "a newly hosted VPC's route not learned");
		snprintf(body, sizeof(body), "test $(grep -c 'learning from the reports with " RPT_VPC_LABEL
			 " in (Blu9,Red7)' %s) -eq 1", log);
		ck_assert_msg(system(body) == 0, "the learner's selector did not follow the hosted VPCs");
		st.n_atts--;
		st.n_vpcs--;
		all_ok(&res, &st);
		rpt_update(r, &st, NULL, &res);
		ck_assert_msg(remotes_become("[\"Red7 fd00:a::13/128 fcbb:bb00:1:3:e001::\"]"),
			      "the route of a VPC no longer hosted kept");
		json_decref(wait_for("pn1-2acffd-2ab", NULL, 10)); /* Blu9/B1's own report went */
		/* One more report: its own versions are parsed (the create and the
		 * status write: 1 or 2 passes), the 3 others of Red7 come from the
		 * learner's memo (a pass over all would parse 4 each time). */
		{
			struct rpt_stats s0, s1;
			char n5[128];

			rpt_get_stats(r, &s0);
			post_report("pn5", "Red7", "R5", "fd00:a::15/128", "fcbb:bb00:1:5:e001::", true, n5, sizeof(n5));
			ck_assert_msg(remotes_become("[\"Red7 fd00:a::13/128 fcbb:bb00:1:3:e001::\", "
						     "\"Red7 fd00:a::15/128 fcbb:bb00:1:5:e001::\"]"),
				      "a new report of a hosted VPC not learned");
			rpt_get_stats(r, &s1);
			printf("learner: %lu reports parsed for one new report among 4\n",
			       s1.learn_parsed - s0.learn_parsed);
			ck_assert_uint_ge(s1.learn_parsed - s0.learn_parsed, 1);
			ck_assert_uint_le(s1.learn_parsed - s0.learn_parsed, 2);
		}
	}

	/* 5c. Our report as an agent before the label wrote it: labelled again. */
	ck_assert_int_eq(kreq(&cp, "PATCH", NATT_PATH "/pn1-649241-68b", "application/merge-patch+json",
			      "{\"metadata\":{\"labels\":{\"" RPT_VPC_LABEL "\":null}}}", NULL, NULL), 200);
	{
		double t0 = now_s();
		const char *v = NULL;

		while (now_s() - t0 < 10) {
			rep = get("pn1-649241-68b");
			v = json_string_value(json_object_get(gj_get(rep, "metadata.labels"), RPT_VPC_LABEL));
			if (v && !strcmp(v, "Red7"))
				break;
			json_decref(rep);
			rep = NULL;
			usleep(50 * 1000);
		}
		ck_assert_msg(rep, "our report's VPC label was not put back");
		json_decref(rep);
	}

	/* 6. The attachment goes: its report is deleted. */
	st.n_atts = 0;
	all_ok(&res, &st);
	rpt_update(r, &st, NULL, &res);
	wait_for("pn1-649241-68b", NULL, 10);
	/* The other node's report is not ours to delete. */
	o2 = get("pn2-649241-68c");
	ck_assert_ptr_nonnull(o2);
	json_decref(o2);

	rpt_stop(r);
	glog_set_output(NULL);
	fclose(lf);
	gdp_results_free(&res);
	gdp_state_free(&st);
}
END_TEST

/*
 * While a cluster upgrades from agents before the VPC label
 * (rpt_opts.learn_unlabelled, --learn-unlabelled-reports): their reports
 * are learned through the second informer, and forgotten when they stop
 * being Programmed or go.
 */
START_TEST(test_unlabelled_when_asked)
{
	struct rpt_opts o = { .kubeconfig = cp.kubeconfig, .node = "pn9", .ns = RNS, .set_remotes = sink,
			      .ctx = dir, .datapath = "kernel", .max_backoff_s = 1, .learn_unlabelled = true };
	struct gdp_state st;
	struct gdp_results res;
	struct rpt *r = NULL;
	char err[512], n8[128], n7[128], path[512];

	mkstate(&st);
	st.node.node_id = 9;
	/* a VPC of its own: the first test's reports (Red7, Blu9) are still there */
	snprintf(st.vpcs[0].id, sizeof(st.vpcs[0].id), "Grn3");
	snprintf(st.atts[0].vpc, sizeof(st.atts[0].vpc), "Grn3");
	gdp_results_init(&res);
	all_ok(&res, &st);
	ck_assert_int_eq(rpt_start(&r, &o, err, sizeof(err)), 0);
	rpt_update(r, &st, NULL, &res);
	/* an older agent's report (no VPC label) and an upgraded one's, both of Grn3 */
	post_report("pn8", "Grn3", "U8", "fd00:a::18/128", "fcbb:bb00:1:8:e001::", false, n8, sizeof(n8));
	post_report("pn7", "Grn3", "U7", "fd00:a::17/128", "fcbb:bb00:1:7:e001::", true, n7, sizeof(n7));
	ck_assert_msg(remotes_become("[\"Grn3 fd00:a::17/128 fcbb:bb00:1:7:e001::\", "
				     "\"Grn3 fd00:a::18/128 fcbb:bb00:1:8:e001::\"]"),
		      "an unlabelled report not learned with learn_unlabelled");
	snprintf(path, sizeof(path), NATT_PATH "/%s", n8);
	ck_assert_int_eq(kreq(&cp, "DELETE", path, NULL, NULL, NULL, NULL), 200);
	ck_assert_msg(remotes_become("[\"Grn3 fd00:a::17/128 fcbb:bb00:1:7:e001::\"]"),
		      "the route of a deleted unlabelled report kept");
	rpt_stop(r);
	gdp_results_free(&res);
	gdp_state_free(&st);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report_publisher");
	TCase *tc = tcase_create("publisher");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_publisher_and_learner);
	tcase_add_test(tc, test_unlabelled_when_asked);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
