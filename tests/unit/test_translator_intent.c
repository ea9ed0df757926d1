/*
 * translator/intent: what the translator wants a VPCAttachment's status to
 * show for each situation (no ids, no report, invalid/outdated/good report),
 * lastTransitionTime rules, choosing among several reports, and the
 * "already shows exactly that intent" check that makes writes skippable.
 */
#include "common/json.h"
#include "tests/lib/gtest.h"
#include "translator/intent.h"

#include <string.h>

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j, "bad test JSON: %s: %s", e.text, s);
	return j;
}

static const char *ATT =
	"{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
	"\"metadata\":{\"name\":\"att1\",\"namespace\":\"tenant-a\",\"uid\":\"u-1\",\"generation\":3},"
	"\"status\":{\"vpc\":\"5gHk2\",\"vpcAttachment\":\"9ZzA\","
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Allocated\"}]}}";

static const char *REPORT =
	"{\"metadata\":{\"name\":\"node-a-1f-2e\",\"namespace\":\"gs\",\"generation\":1,"
	"\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
	"\"spec\":{\"node\":\"node-a\",\"vpc\":\"5gHk2\",\"vpcAttachment\":\"9ZzA\",\"containerID\":\"c0ffee\","
	"\"pod\":{\"name\":\"pod-1\"},\"hostInterface\":\"gv1f2e\",\"guestInterface\":\"eth0\","
	"\"podSubnets\":[\"10.0.0.0/24\"]},"
	"\"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\","
	"\"reason\":\"KernelVerified\",\"message\":\"routes verified\",\"observedGeneration\":1}]}}";

static void cand_from(struct report_candidate *c, const char *report_json)
{
	struct report_mapping m;
	json_t *r = J(report_json);

	mapping_default(&m);
	memset(c, 0, sizeof(*c));
	c->valid = report_extract(&m, r, &c->v, c->err, sizeof(c->err)) == 0;
	json_decref(r);
}

static const json_t *cond(const json_t *intent)
{
	return json_array_get(gj_get(intent, "status.conditions"), 0);
}

static void assert_cond(const json_t *intent, const char *status, const char *reason)
{
	const json_t *c = cond(intent);
	ck_assert_uint_eq(json_array_size(gj_get(intent, "status.conditions")), 1);
	ck_assert_str_eq(gj_str(c, "type"), "Programmed");
	ck_assert_str_eq(gj_str(c, "status"), status);
	ck_assert_str_eq(gj_str(c, "reason"), reason);
	ck_assert_int_eq(gj_int(c, "observedGeneration", -1), 3);
}

static void assert_no_fields(const json_t *intent)
{
	for (int i = 0; i < 7; i++)
		ck_assert_msg(!gj_get(json_object_get(intent, "status"), VPCATT_TRANSLATOR_FIELDS[i]),
			      "%s set without a usable report", VPCATT_TRANSLATOR_FIELDS[i]);
}

START_TEST(test_ids_pending)
{
	json_t *att = J(ATT), *in;
	char err[256];

	json_object_del(json_object_get(att, "status"), "vpcAttachment");
	in = vpcatt_intent(att, NULL, "2026-02-02T00:00:00Z", err, sizeof(err));
	ck_assert_ptr_nonnull(in);
	assert_cond(in, "Unknown", R_IDS_PENDING);
	assert_no_fields(in);
	/* The apply object carries identity and the uid precondition, and only our status. */
	ck_assert_str_eq(gj_str(in, "metadata.uid"), "u-1");
	ck_assert_str_eq(gj_str(in, "metadata.name"), "att1");
	ck_assert_str_eq(gj_str(in, "metadata.namespace"), "tenant-a");
	ck_assert_str_eq(gj_str(in, "kind"), "VPCAttachment");
	ck_assert_ptr_null(gj_get(in, "status.vpc"));
	ck_assert_ptr_null(gj_get(in, "spec"));
	json_decref(in);
	json_decref(att);
}
END_TEST

START_TEST(test_report_missing)
{
	json_t *att = J(ATT), *in;
	char err[256];

	in = vpcatt_intent(att, NULL, "2026-02-02T00:00:00Z", err, sizeof(err));
	assert_cond(in, "False", R_REPORT_MISSING);
	/* The message speaks only of this attachment's own ids. */
	ck_assert_str_eq(gj_str(cond(in), "message"), "no data-plane report for vpc 5gHk2 attachment 9ZzA");
	ck_assert_str_eq(gj_str(cond(in), "lastTransitionTime"), "2026-02-02T00:00:00Z");
	assert_no_fields(in);
	json_decref(in);
	json_decref(att);
}
END_TEST

START_TEST(test_programmed_report)
{
	struct report_candidate c;
	json_t *att = J(ATT), *in;
	char err[256];

	cand_from(&c, REPORT);
	ck_assert(c.valid);
	in = vpcatt_intent(att, &c, "2026-02-02T00:00:00Z", err, sizeof(err));
	assert_cond(in, "True", "KernelVerified");
	ck_assert_str_eq(gj_str(cond(in), "message"), "node node-a: routes verified");
	ck_assert_str_eq(gj_str(in, "status.node"), "node-a");
	ck_assert_str_eq(gj_str(in, "status.containerID"), "c0ffee");
	ck_assert_str_eq(gj_str(in, "status.podName"), "pod-1");
	ck_assert_str_eq(gj_str(in, "status.hostInterface"), "gv1f2e");
	ck_assert_str_eq(gj_str(in, "status.guestInterface"), "eth0");
	ck_assert_str_eq(gj_str(in, "status.podSubnet"), "10.0.0.0/24");
	ck_assert_ptr_null(gj_get(in, "status.vrfInterface")); /* the report has none */
	json_decref(in);
	report_view_clear(&c.v);
	json_decref(att);
}
END_TEST

START_TEST(test_transition_time_only_on_status_change)
{
	struct report_candidate c;
	json_t *att = J(ATT), *in;
	char err[256];

	cand_from(&c, REPORT);
	json_array_append_new(gj_get(att, "status.conditions"),
			      J("{\"type\":\"Programmed\",\"status\":\"True\",\"reason\":\"Old\","
				"\"lastTransitionTime\":\"2026-01-05T00:00:00Z\"}"));
	in = vpcatt_intent(att, &c, "2026-02-02T00:00:00Z", err, sizeof(err));
	/* Same status, new reason: time stays. */
	ck_assert_str_eq(gj_str(cond(in), "lastTransitionTime"), "2026-01-05T00:00:00Z");
	json_decref(in);
	/* Report flips to False: time moves. */
	c.v.programmed = PS_FALSE;
	in = vpcatt_intent(att, &c, "2026-02-02T00:00:00Z", err, sizeof(err));
	assert_cond(in, "False", "KernelVerified");
	ck_assert_str_eq(gj_str(cond(in), "lastTransitionTime"), "2026-02-02T00:00:00Z");
	json_decref(in);
	report_view_clear(&c.v);
	json_decref(att);
}
END_TEST

START_TEST(test_invalid_outdated_unreported_badreason)
{
	struct report_candidate c;
	json_t *att = J(ATT), *in, *r;
	char err[256], *s;

	/* Invalid: Unknown with the reader's message, no fields from an untrusted report. */
	r = J(REPORT);
	json_object_set_new(json_object_get(r, "spec"), "hostInterface", json_integer(7));
	s = json_dumps(r, 0);
	cand_from(&c, s);
	free(s);
	json_decref(r);
	ck_assert(!c.valid);
	in = vpcatt_intent(att, &c, "t", err, sizeof(err));
	assert_cond(in, "Unknown", R_REPORT_INVALID);
	ck_assert_ptr_nonnull(strstr(gj_str(cond(in), "message"), "spec.hostInterface"));
	assert_no_fields(in);
	json_decref(in);
	report_view_clear(&c.v);

	/* Condition for an older generation of the report. */
	r = J(REPORT);
	json_object_set_new(json_object_get(r, "metadata"), "generation", json_integer(2));
	s = json_dumps(r, 0);
	cand_from(&c, s);
	free(s);
	json_decref(r);
	in = vpcatt_intent(att, &c, "t", err, sizeof(err));
	assert_cond(in, "Unknown", R_REPORT_OUTDATED);
	ck_assert_str_eq(gj_str(in, "status.node"), "node-a");
	json_decref(in);
	report_view_clear(&c.v);

	/* No Programmed condition yet. */
	cand_from(&c, REPORT);
	c.v.programmed = PS_ABSENT;
	in = vpcatt_intent(att, &c, "t", err, sizeof(err));
	assert_cond(in, "Unknown", R_NOT_REPORTED);
	json_decref(in);

	/* A reason that is not a valid condition reason is replaced by a neutral one. */
	c.v.programmed = PS_FALSE;
	free(c.v.reason);
	c.v.reason = strdup("bad reason!");
	in = vpcatt_intent(att, &c, "t", err, sizeof(err));
	assert_cond(in, "False", "NotProgrammed");
	json_decref(in);
	report_view_clear(&c.v);

	/* An attachment without uid cannot be applied safely. */
	json_object_del(json_object_get(att, "metadata"), "uid");
	ck_assert_ptr_null(vpcatt_intent(att, NULL, "t", err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "tenant-a/att1"));
	json_decref(att);
}
END_TEST

START_TEST(test_pick)
{
	struct report_candidate c[3];

	ck_assert_ptr_null(report_pick(NULL, 0));
	cand_from(&c[0], REPORT);
	cand_from(&c[1], REPORT);
	cand_from(&c[2], REPORT);
	/* 0: old node, not programmed; 1: new node, programmed; 2: invalid */
	c[0].v.programmed = PS_FALSE;
	c[2].valid = false;
	ck_assert_ptr_eq(report_pick(c, 3), &c[1]);
	/* Same rank: the newest wins. */
	c[1].v.programmed = PS_FALSE;
	free(c[1].v.created);
	c[1].v.created = strdup("2026-03-01T00:00:00Z");
	ck_assert_ptr_eq(report_pick(c, 3), &c[1]);
	/* Valid beats invalid even when older. */
	ck_assert_ptr_eq(report_pick(&c[1], 2), &c[1]);
	ck_assert_ptr_eq(report_pick(&c[2], 1), &c[2]);
	for (int i = 0; i < 3; i++)
		report_view_clear(&c[i].v);
}
END_TEST

/* The object as the server would show it after our apply, plus another manager. */
static json_t *applied(const json_t *intent)
{
	json_t *att = J(ATT);
	json_t *st = json_object_get(att, "status");
	json_t *own = json_object(), *conds;
	const char *k;
	json_t *v;

	json_object_foreach(json_object_get(intent, "status"), k, v) {
		if (!strcmp(k, "conditions"))
			continue;
		json_object_set(st, k, v);
		char fk[64];
		snprintf(fk, sizeof(fk), "f:%s", k);
		json_object_set_new(own, fk, json_object());
	}
	json_array_append_new(json_object_get(st, "conditions"), json_deep_copy(cond(intent)));
	conds = J("{\"k:{\\\"type\\\":\\\"Programmed\\\"}\":{\".\":{},\"f:status\":{}}}");
	json_object_set_new(own, "f:conditions", conds);
	json_object_set_new(json_object_get(att, "metadata"), "managedFields",
			    json_pack("[{s:s,s:s,s:s,s:{s:o}},{s:s,s:s,s:s,s:{s:{s:{},s:{},s:{s:{}}}}}]",
				      "manager", TRANSLATOR_MANAGER, "operation", "Apply", "subresource",
				      "status", "fieldsV1", "f:status", own,
				      "manager", "vpc-operator", "operation", "Apply", "subresource",
				      "status", "fieldsV1", "f:status", "f:vpc", "f:vpcAttachment",
				      "f:conditions", "k:{\"type\":\"Ready\"}"));
	return att;
}

START_TEST(test_satisfied)
{
	struct report_candidate c;
	json_t *att0 = J(ATT), *in, *att;
	char err[256], why[256];

	cand_from(&c, REPORT);
	in = vpcatt_intent(att0, &c, "2026-02-02T00:00:00Z", err, sizeof(err));
	att = applied(in);
	ck_assert_msg(vpcatt_intent_satisfied(att, in, TRANSLATOR_MANAGER, why, sizeof(why)), "%s", why);
	/* Recomputing from the applied object keeps the time: still satisfied (steady state). */
	json_t *again = vpcatt_intent(att, &c, "2026-03-03T00:00:00Z", err, sizeof(err));
	ck_assert(vpcatt_intent_satisfied(att, again, TRANSLATOR_MANAGER, why, sizeof(why)));
	json_decref(again);

	/* A value changed by someone. */
	json_object_set_new(json_object_get(att, "status"), "node", json_string("node-z"));
	ck_assert(!vpcatt_intent_satisfied(att, in, TRANSLATOR_MANAGER, why, sizeof(why)));
	ck_assert_str_eq(why, "status.node: want node-a, have node-z");
	json_decref(att);

	/* Right value but not ours. */
	att = applied(in);
	json_object_del(gj_get(json_array_get(gj_get(att, "metadata.managedFields"), 0), "fieldsV1.f:status"),
			"f:podName");
	ck_assert(!vpcatt_intent_satisfied(att, in, TRANSLATOR_MANAGER, why, sizeof(why)));
	ck_assert_str_eq(why, "status.podName: not owned by galactic-translator");
	json_decref(att);

	/* Ours but no longer intended (the report lost a field): apply to drop it. */
	att = applied(in);
	json_object_del(json_object_get(in, "status"), "guestInterface");
	ck_assert(!vpcatt_intent_satisfied(att, in, TRANSLATOR_MANAGER, why, sizeof(why)));
	ck_assert_str_eq(why, "status f:guestInterface: owned by galactic-translator but not intended");
	json_decref(att);
	json_decref(in);

	/* Condition message differs. */
	in = vpcatt_intent(att0, &c, "2026-02-02T00:00:00Z", err, sizeof(err));
	att = applied(in);
	json_object_set_new(json_array_get(gj_get(att, "status.conditions"), 1), "message",
			    json_string("x"));
	ck_assert(!vpcatt_intent_satisfied(att, in, TRANSLATOR_MANAGER, why, sizeof(why)));
	ck_assert_str_eq(why, "condition Programmed: message differs");
	json_decref(att);

	/* No managedFields entry of ours at all (never applied). */
	att = applied(in);
	json_object_del(json_object_get(att, "metadata"), "managedFields");
	ck_assert(!vpcatt_intent_satisfied(att, in, TRANSLATOR_MANAGER, why, sizeof(why)));
	json_decref(att);

	/* We own an extra condition (left from an older version): drop it. */
	att = applied(in);
	json_object_set_new(gj_get(json_array_get(gj_get(att, "metadata.managedFields"), 0),
				   "fieldsV1.f:status.f:conditions"),
			    "k:{\"type\":\"Prepared\"}", json_object());
	ck_assert(!vpcatt_intent_satisfied(att, in, TRANSLATOR_MANAGER, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "Prepared"));
	json_decref(att);

	/* Another manager's fields never make us write. */
	att = applied(in);
	json_object_set_new(json_object_get(att, "status"), "networkAttachmentDefinition",
			    json_string("nad"));
	ck_assert(vpcatt_intent_satisfied(att, in, TRANSLATOR_MANAGER, why, sizeof(why)));
	json_decref(att);

	json_decref(in);
	report_view_clear(&c.v);
	json_decref(att0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("translator_intent");
	TCase *tc = tcase_create("intent");

	tcase_add_test(tc, test_ids_pending);
	tcase_add_test(tc, test_report_missing);
	tcase_add_test(tc, test_programmed_report);
	tcase_add_test(tc, test_transition_time_only_on_status_change);
	tcase_add_test(tc, test_invalid_outdated_unreported_badreason);
	tcase_add_test(tc, test_pick);
	tcase_add_test(tc, test_satisfied);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
