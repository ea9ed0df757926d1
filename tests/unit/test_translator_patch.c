/*
 * translator/nic: the guarded JSON Patch that writes the translator's
 * conditions into an atomic status.conditions list (exact ops, tests
 * included, for each shape of list; nothing when the list already shows
 * them; refusal of lists of the wrong type), and the interface/claim intent
 * it writes (derivation from the attachment, lastTransitionTime, links),
 * and the memory of attachments our writes returned (att_fresh: the newer
 * of it and the cache, dropped once the cache catches up or on another uid).
 */
#include "common/json.h"
#include "tests/lib/gtest.h"
#include "translator/intent.h"
#include "translator/nic.h"
#include "translator/project.h"
#include "translator/reconcile.h"
#include "translator/ssa.h"

#include <string.h>

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, JSON_DECODE_ANY, &e);
	ck_assert_msg(j, "bad test JSON: %s: %s", e.text, s);
	return j;
}

#define P_OLD "{\"type\":\"Prepared\",\"status\":\"False\",\"reason\":\"AttachmentNotReady\"}"
#define P_NEW "{\"type\":\"Prepared\",\"status\":\"True\",\"reason\":\"AttachmentReady\"}"
#define G_NEW "{\"type\":\"Programmed\",\"status\":\"True\",\"reason\":\"AttachmentProgrammed\"}"
#define BOUND "{\"type\":\"Bound\",\"status\":\"True\",\"reason\":\"Bound\"}"
#define ALLOC "{\"type\":\"Allocated\",\"status\":\"True\",\"reason\":\"Allocated\"}"
#define WANT "[" P_NEW "," G_NEW "]"

/* Builds the patch for object `obj` and wanted list `want`, compares with `expect`. */
static void check_ops(const char *obj, const char *want, const char *expect)
{
	json_t *o = J(obj), *w = J(want), *e = J(expect), *ops;
	char err[256] = "";
	char *got;

	ops = cond_patch_build(o, w, err, sizeof(err));
	ck_assert_msg(ops, "no patch: %s", err);
	got = gj_dumps(ops);
	ck_assert_msg(json_equal(ops, e), "ops differ:\n got  %s\n want %s", got, expect);
	free(got);
	json_decref(ops);
	json_decref(o);
	json_decref(w);
	json_decref(e);
}

START_TEST(test_no_status)
{
	check_ops("{\"metadata\":{\"name\":\"c\"}}", WANT,
		  "[{\"op\":\"test\",\"path\":\"/status\",\"value\":null},"
		  "{\"op\":\"add\",\"path\":\"/status\",\"value\":{\"conditions\":" WANT "}}]");
}
END_TEST

START_TEST(test_no_list)
{
	check_ops("{\"status\":{\"phase\":\"Bound\"}}", WANT,
		  "[{\"op\":\"test\",\"path\":\"/status/conditions\",\"value\":null},"
		  "{\"op\":\"add\",\"path\":\"/status/conditions\",\"value\":" WANT "}]");
}
END_TEST

START_TEST(test_empty_list)
{
	check_ops("{\"status\":{\"conditions\":[]}}", WANT,
		  "[{\"op\":\"test\",\"path\":\"/status/conditions\",\"value\":[]},"
		  "{\"op\":\"add\",\"path\":\"/status/conditions/-\",\"value\":" P_NEW "},"
		  "{\"op\":\"add\",\"path\":\"/status/conditions/-\",\"value\":" G_NEW "}]");
}
END_TEST

/* NSO's entries only: appended after them, guarded by their index/type and the length. */
START_TEST(test_append_after_others)
{
	check_ops("{\"status\":{\"conditions\":[" BOUND "," ALLOC "]}}", WANT,
		  "[{\"op\":\"test\",\"path\":\"/status/conditions/0/type\",\"value\":\"Bound\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/1/type\",\"value\":\"Allocated\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/-2/type\",\"value\":\"Bound\"},"
		  "{\"op\":\"add\",\"path\":\"/status/conditions/-\",\"value\":" P_NEW "},"
		  "{\"op\":\"add\",\"path\":\"/status/conditions/-\",\"value\":" G_NEW "}]");
}
END_TEST

/* Only the entry that differs is replaced, in place; NSO's entries and the order stay. */
START_TEST(test_replace_own_by_index)
{
	check_ops("{\"status\":{\"conditions\":[" BOUND "," P_OLD "," ALLOC "," G_NEW "]}}", WANT,
		  "[{\"op\":\"test\",\"path\":\"/status/conditions/0/type\",\"value\":\"Bound\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/1/type\",\"value\":\"Prepared\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/2/type\",\"value\":\"Allocated\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/3/type\",\"value\":\"Programmed\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/-4/type\",\"value\":\"Bound\"},"
		  "{\"op\":\"replace\",\"path\":\"/status/conditions/1\",\"value\":" P_NEW "}]");
}
END_TEST

START_TEST(test_equal_is_noop)
{
	check_ops("{\"status\":{\"conditions\":[" BOUND "," P_NEW "," ALLOC "," G_NEW "]}}", WANT, "[]");
	/* Order of our entries does not matter, only their content. */
	check_ops("{\"status\":{\"conditions\":[" G_NEW "," BOUND "," P_NEW "]}}", WANT, "[]");
	/* Nothing wanted, nothing there: nothing to do. */
	check_ops("{}", "[]", "[]");
}
END_TEST

/* An entry differing only in a key we do not write (extra key) is still rewritten. */
START_TEST(test_extra_key_rewritten)
{
	check_ops("{\"status\":{\"conditions\":["
		  "{\"type\":\"Prepared\",\"status\":\"True\",\"reason\":\"AttachmentReady\",\"x\":1},"
		  G_NEW "]}}",
		  WANT,
		  "[{\"op\":\"test\",\"path\":\"/status/conditions/0/type\",\"value\":\"Prepared\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/1/type\",\"value\":\"Programmed\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/-2/type\",\"value\":\"Prepared\"},"
		  "{\"op\":\"replace\",\"path\":\"/status/conditions/0\",\"value\":" P_NEW "}]");
}
END_TEST

/* A duplicate of our type (appended by someone) is removed; a missing one is added. */
START_TEST(test_duplicates_removed)
{
	check_ops("{\"status\":{\"conditions\":[" P_NEW "," BOUND "," P_OLD "," P_OLD "]}}", WANT,
		  "[{\"op\":\"test\",\"path\":\"/status/conditions/0/type\",\"value\":\"Prepared\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/1/type\",\"value\":\"Bound\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/2/type\",\"value\":\"Prepared\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/3/type\",\"value\":\"Prepared\"},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/-4/type\",\"value\":\"Prepared\"},"
		  "{\"op\":\"remove\",\"path\":\"/status/conditions/3\"},"
		  "{\"op\":\"remove\",\"path\":\"/status/conditions/2\"},"
		  "{\"op\":\"add\",\"path\":\"/status/conditions/-\",\"value\":" G_NEW "}]");
}
END_TEST

/* Entries without a string type are guarded by their whole value. */
START_TEST(test_untyped_entries_guarded_whole)
{
	check_ops("{\"status\":{\"conditions\":[{\"status\":\"True\"},7]}}", "[" P_NEW "]",
		  "[{\"op\":\"test\",\"path\":\"/status/conditions/0\",\"value\":{\"status\":\"True\"}},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/1\",\"value\":7},"
		  "{\"op\":\"test\",\"path\":\"/status/conditions/-2\",\"value\":{\"status\":\"True\"}},"
		  "{\"op\":\"add\",\"path\":\"/status/conditions/-\",\"value\":" P_NEW "}]");
}
END_TEST

START_TEST(test_wrong_types_refused)
{
	static const char *bad[] = { "{\"status\":{\"conditions\":\"Ready\"}}",
				     "{\"status\":{\"conditions\":{\"type\":\"Ready\"}}}",
				     "{\"status\":[1]}" };
	char err[256];

	for (size_t i = 0; i < 3; i++) {
		json_t *o = J(bad[i]), *w = J(WANT);
		err[0] = 0;
		ck_assert_ptr_null(cond_patch_build(o, w, err, sizeof(err)));
		ck_assert_msg(strstr(err, "not a"), "%s: err %s", bad[i], err);
		json_decref(o);
		json_decref(w);
	}
	json_t *o = J("{}"), *w = J("[{\"status\":\"True\"}]");
	ck_assert_ptr_null(cond_patch_build(o, w, err, sizeof(err)));
	ck_assert_msg(strstr(err, "no type"), "%s", err);
	json_decref(o);
	json_decref(w);
}
END_TEST

/* ---- intent ---- */

static const char *IFACE =
	"{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterface\","
	"\"metadata\":{\"name\":\"nic1\",\"namespace\":\"t\",\"uid\":\"u-nic1\",\"generation\":4},"
	"\"spec\":{\"claimRef\":{\"name\":\"claim1\"}},"
	"\"status\":{\"phase\":\"Bound\",\"conditions\":[" ALLOC ","
	"{\"type\":\"Prepared\",\"status\":\"True\",\"reason\":\"AttachmentReady\","
	"\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}";

/* An attachment as upstream makes it: controller-owned by the interface (owner uid), interfaceRef.name. */
static json_t *att_json_full(const char *name, const char *ifref, const char *owner_kind,
			     const char *owner_uid, bool controller, const char *conds)
{
	char b[1400];
	snprintf(b, sizeof(b),
		 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"t\",\"ownerReferences\":[{"
		 "\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"%s\",\"name\":\"nic1\","
		 "\"uid\":\"%s\",\"controller\":%s,\"blockOwnerDeletion\":true}]},"
		 "\"spec\":{\"vpc\":{\"name\":\"vpc-1\"},\"interfaceRef\":{\"name\":\"%s\"}},"
		 "\"status\":{\"vpc\":\"5gHk2Vq\",\"conditions\":%s}}",
		 name, owner_kind, owner_uid, controller ? "true" : "false", ifref, conds);
	return J(b);
}

static json_t *att_json(const char *name, const char *uid, const char *conds)
{
	return att_json_full(name, "nic1", "NetworkInterface", uid, true, conds);
}

START_TEST(test_attachment_links_as_upstream)
{
	json_t *i = J(IFACE), *a;

	a = att_json("nic1", "u-nic1", "[]");
	ck_assert(nic_attachment_links(i, a));
	json_decref(a);
	/* Made for an earlier incarnation of the same name: does not count. */
	a = att_json("nic1", "u-old", "[]");
	ck_assert(!nic_attachment_links(i, a));
	json_decref(a);
	/* Another name (upstream names the attachment after its interface). */
	a = att_json("att1", "u-nic1", "[]");
	ck_assert(!nic_attachment_links(i, a));
	json_decref(a);
	/* An owner that is not the controller, or not an interface. */
	a = att_json_full("nic1", "nic1", "NetworkInterface", "u-nic1", false, "[]");
	ck_assert(!nic_attachment_links(i, a));
	json_decref(a);
	a = att_json_full("nic1", "nic1", "Pod", "u-nic1", true, "[]");
	ck_assert(!nic_attachment_links(i, a));
	json_decref(a);
	/* interfaceRef.name names another interface. */
	a = att_json_full("nic1", "nic2", "NetworkInterface", "u-nic1", true, "[]");
	ck_assert(!nic_attachment_links(i, a));
	json_decref(a);
	ck_assert(!nic_attachment_links(i, NULL));
	json_decref(i);
}
END_TEST

static const json_t *find(const json_t *conds, const char *type)
{
	const json_t *c;
	size_t i;
	json_array_foreach(conds, i, c)
		if (!strcmp(gj_str(c, "type"), type))
			return c;
	return NULL;
}

START_TEST(test_conditions_follow_attachment)
{
	json_t *i = J(IFACE);
	json_t *a = att_json("att1", "u-nic1",
			     "[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Allocated\"},"
			     "{\"type\":\"Programmed\",\"status\":\"False\",\"reason\":\"RouteMissing\"}]");
	json_t *c = nic_conditions(i, a, NULL, "2026-02-02T00:00:00Z");
	const json_t *p = find(c, "Prepared"), *g = find(c, "Programmed");

	ck_assert_uint_eq(json_array_size(c), 2);
	ck_assert_str_eq(gj_str(p, "status"), "True");
	ck_assert_str_eq(gj_str(p, "reason"), R_ATT_READY);
	ck_assert_str_eq(gj_str(p, "message"), "VPCAttachment att1: Ready=True (Allocated)");
	/* Unchanged status keeps its transition time; a new one starts now. */
	ck_assert_str_eq(gj_str(p, "lastTransitionTime"), "2026-01-01T00:00:00Z");
	ck_assert_str_eq(gj_str(g, "status"), "False");
	ck_assert_str_eq(gj_str(g, "reason"), R_ATT_NOT_PROGRAMMED);
	ck_assert_str_eq(gj_str(g, "message"), "VPCAttachment att1: Programmed=False (RouteMissing)");
	ck_assert_str_eq(gj_str(g, "lastTransitionTime"), "2026-02-02T00:00:00Z");
	ck_assert_int_eq(gj_int(g, "observedGeneration", -1), 4);
	json_decref(c);
	json_decref(a);

	/* Attachment without conditions yet: Unknown, said as such. A bad reason is not copied. */
	a = att_json("att1", "u-nic1",
		     "[{\"type\":\"Programmed\",\"status\":\"True\",\"reason\":\"not a reason!\"}]");
	c = nic_conditions(i, a, NULL, "2026-02-02T00:00:00Z");
	p = find(c, "Prepared");
	g = find(c, "Programmed");
	ck_assert_str_eq(gj_str(p, "status"), "Unknown");
	ck_assert_str_eq(gj_str(p, "reason"), R_ATT_READY_UNKNOWN);
	ck_assert_str_eq(gj_str(p, "message"), "VPCAttachment att1 has no Ready condition yet");
	ck_assert_str_eq(gj_str(p, "lastTransitionTime"), "2026-02-02T00:00:00Z");
	ck_assert_str_eq(gj_str(g, "status"), "True");
	ck_assert_str_eq(gj_str(g, "message"), "VPCAttachment att1: Programmed=True");
	json_decref(c);
	json_decref(a);

	/* No attachment: both False, AttachmentMissing; or what the caller says (claims). */
	c = nic_conditions(i, NULL, NULL, "2026-02-02T00:00:00Z");
	ck_assert_str_eq(gj_str(find(c, "Prepared"), "reason"), R_ATT_MISSING);
	ck_assert_str_eq(gj_str(find(c, "Programmed"), "status"), "False");
	json_decref(c);
	c = nic_conditions(i, NULL, &(struct nic_missing){ "Unknown", R_IF_PENDING, "pending" },
			   "2026-02-02T00:00:00Z");
	ck_assert_str_eq(gj_str(find(c, "Prepared"), "status"), "Unknown");
	ck_assert_str_eq(gj_str(find(c, "Programmed"), "reason"), R_IF_PENDING);
	json_decref(c);
	json_decref(i);
}
END_TEST

START_TEST(test_fields_intent_and_satisfied)
{
	json_t *i = J(IFACE), *a = att_json("att1", "u-nic1", "[]"), *f, *have;
	char err[256], why[256];

	f = nic_fields_intent(i, a, err, sizeof(err));
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(gj_str(f, "metadata.uid"), "u-nic1");
	ck_assert_str_eq(gj_str(f, "status.attachmentRef.apiGroup"), "cloud.datumapis.com");
	ck_assert_str_eq(gj_str(f, "status.attachmentRef.kind"), "VPCAttachment");
	ck_assert_str_eq(gj_str(f, "status.attachmentRef.name"), "att1");
	/* The base62 id from the attachment's status, not the VPC's name in its spec. */
	ck_assert_str_eq(gj_str(f, "status.vpc"), "5gHk2Vq");
	ck_assert_ptr_null(gj_get(f, "status.conditions"));
	/* Not shown yet. */
	ck_assert(!nic_fields_satisfied(i, f, TRANSLATOR_MANAGER, why, sizeof(why)));
	/* Shown and owned through our Apply entry. */
	have = J("{\"metadata\":{\"managedFields\":[{\"manager\":\"galactic-translator\",\"operation\":\"Apply\","
		 "\"subresource\":\"status\",\"fieldsV1\":{\"f:status\":{\"f:attachmentRef\":{},\"f:vpc\":{}}}}]},"
		 "\"status\":{\"vpc\":\"5gHk2Vq\",\"attachmentRef\":{\"apiGroup\":\"cloud.datumapis.com\","
		 "\"kind\":\"VPCAttachment\",\"name\":\"att1\"}}}");
	ck_assert_msg(nic_fields_satisfied(have, f, TRANSLATOR_MANAGER, why, sizeof(why)), "%s", why);
	/* Owned by someone else (an Update entry of the same manager is not ours to keep): not satisfied. */
	json_object_set_new(json_array_get(gj_get(have, "metadata.managedFields"), 0), "operation",
			    json_string("Update"));
	ck_assert(!nic_fields_satisfied(have, f, TRANSLATOR_MANAGER, why, sizeof(why)));
	json_decref(f);
	/* No attachment: an empty status intent; our old ownership must be withdrawn. */
	f = nic_fields_intent(i, NULL, err, sizeof(err));
	ck_assert_int_eq(json_object_size(json_object_get(f, "status")), 0);
	json_object_set_new(json_array_get(gj_get(have, "metadata.managedFields"), 0), "operation",
			    json_string("Apply"));
	ck_assert(!nic_fields_satisfied(have, f, TRANSLATOR_MANAGER, why, sizeof(why)));
	ck_assert_msg(strstr(why, "f:attachmentRef") || strstr(why, "f:vpc"), "%s", why);
	ck_assert(nic_fields_satisfied(i, f, TRANSLATOR_MANAGER, why, sizeof(why)));
	json_decref(f);
	/* Bad objects: no uid, no intent. */
	json_object_del(json_object_get(i, "metadata"), "uid");
	ck_assert_ptr_null(nic_fields_intent(i, a, err, sizeof(err)));
	ck_assert_msg(strstr(err, "uid"), "%s", err);
	json_decref(have);
	json_decref(a);
	json_decref(i);
}
END_TEST

/* The intent written by the patch, then rebuilt against the result: a no-op. */
START_TEST(test_round_trip_noop)
{
	json_t *i = J(IFACE), *a = att_json("att1", "u-nic1", "[{\"type\":\"Ready\",\"status\":\"True\"}]");
	json_t *c = nic_conditions(i, a, NULL, "2026-02-02T00:00:00Z"), *ops, *after;
	char err[128];

	ops = cond_patch_build(i, c, err, sizeof(err));
	ck_assert_ptr_nonnull(ops);
	ck_assert_uint_gt(json_array_size(ops), 0);
	/* Apply by hand: entry 1 is Prepared (replace if changed), Programmed appended. */
	after = json_deep_copy(i);
	json_t *list = gj_get(after, "status.conditions");
	json_array_set(list, 1, json_array_get(c, 0));
	json_array_append(list, json_array_get(c, 1));
	json_decref(ops);
	ops = cond_patch_build(after, c, err, sizeof(err));
	ck_assert_uint_eq(json_array_size(ops), 0);
	/* NSO's Allocated is still first. */
	ck_assert_str_eq(gj_str(json_array_get(list, 0), "type"), "Allocated");
	/* Recomputing later with the same facts gives the same conditions (times kept). */
	json_t *c2 = nic_conditions(after, a, NULL, "2026-03-03T00:00:00Z");
	ck_assert(json_equal(c, c2));
	json_decref(c2);
	json_decref(ops);
	json_decref(after);
	json_decref(c);
	json_decref(a);
	json_decref(i);
}
END_TEST

/* Objects written by others with every type wrong: no crash, nothing invented. */
/* The cache's projection keeps exactly what the skip check, the takeover note
 * and the withdrawal read: every ssa_* answer is the same on the pruned object. */
START_TEST(test_projection_keeps_what_ssa_reads)
{
	static const struct project_opts owners = { .keep_status_owners = true }, none = { 0 };
	const char *full =
		"{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		"\"metadata\":{\"name\":\"a\",\"namespace\":\"t\",\"uid\":\"u1\",\"resourceVersion\":\"9\","
		"\"generation\":2,\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{\"x\":\"y\"},"
		"\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{...}\"},"
		"\"ownerReferences\":[{\"uid\":\"o1\",\"controller\":true,\"kind\":\"NetworkInterface\",\"name\":\"a\"}],"
		"\"managedFields\":["
		"{\"manager\":\"kubectl\",\"operation\":\"Update\",\"time\":\"2026-01-01T00:00:00Z\","
		"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:vpc\":{\"f:name\":{}}}}},"
		"{\"manager\":\"vpc-operator\",\"operation\":\"Apply\",\"subresource\":\"status\","
		"\"fieldsV1\":{\"f:status\":{\"f:vpc\":{},\"f:conditions\":{\"k:{\\\"type\\\":\\\"Ready\\\"}\":"
		"{\".\":{},\"f:status\":{}}}}}},"
		"{\"manager\":\"galactic-translator\",\"operation\":\"Apply\",\"subresource\":\"status\","
		"\"fieldsV1\":{\"f:status\":{\"f:node\":{},\"f:conditions\":{\"k:{\\\"type\\\":\\\"Programmed\\\"}\":"
		"{\".\":{},\"f:status\":{},\"f:reason\":{}}}}}}]},"
		"\"spec\":{\"vpc\":{\"name\":\"blue\"}},"
		"\"status\":{\"vpc\":\"V1\",\"node\":\"n1\",\"conditions\":["
		"{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"R\",\"message\":\"\",\"lastTransitionTime\":\"t\"},"
		"{\"type\":\"Programmed\",\"status\":\"True\",\"reason\":\"P\",\"message\":\"m\",\"lastTransitionTime\":\"t\"}]}}";
	json_t *o = J(full), *p = J(full), *q = J(full), *intents[3], *w1, *w2;
	char why1[256], why2[256];

	project_object(p, (void *)&owners);
	project_object(q, (void *)&none);
	/* kept: ids, version, generation, owners; gone: annotations, labels, spec-only entries, times */
	ck_assert_str_eq(gj_str(p, "metadata.uid"), "u1");
	ck_assert_str_eq(gj_str(p, "metadata.resourceVersion"), "9");
	ck_assert_int_eq(json_integer_value(gj_get(p, "metadata.generation")), 2);
	ck_assert_str_eq(gj_str(json_array_get(gj_get(p, "metadata.ownerReferences"), 0), "uid"), "o1");
	ck_assert_ptr_null(gj_get(p, "metadata.annotations"));
	ck_assert_ptr_null(gj_get(p, "metadata.labels"));
	ck_assert_uint_eq(json_array_size(gj_get(p, "metadata.managedFields")), 2);
	ck_assert_ptr_null(json_object_get(json_array_get(gj_get(p, "metadata.managedFields"), 0), "time"));
	ck_assert(json_equal(json_object_get(o, "status"), json_object_get(p, "status")));
	ck_assert(json_equal(json_object_get(o, "spec"), json_object_get(p, "spec")));
	ck_assert_ptr_null(gj_get(q, "metadata.managedFields"));
	ck_assert_str_eq(gj_str(q, "metadata.name"), "a");

	intents[0] = J("{\"status\":{\"node\":\"n1\",\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\","
		       "\"reason\":\"P\",\"message\":\"m\",\"lastTransitionTime\":\"t\"}]}}");
	intents[1] = J("{\"status\":{\"node\":\"n2\"}}");
	intents[2] = J("{\"status\":{\"vpc\":\"V1\",\"node\":\"n1\"}}");
	for (int i = 0; i < 3; i++) {
		bool a = ssa_status_satisfied(o, intents[i], "galactic-translator", why1, sizeof(why1));
		bool b = ssa_status_satisfied(p, intents[i], "galactic-translator", why2, sizeof(why2));
		ck_assert_int_eq(a, b);
		ck_assert_msg(b == (i == 0), "intent %d: %s", i, why2); /* shown; other value; not ours */
		if (!a)
			ck_assert_str_eq(why1, why2);
		json_decref(intents[i]);
	}
	ck_assert_int_eq(ssa_withdraw_empties_status(o, "galactic-translator"),
			 ssa_withdraw_empties_status(p, "galactic-translator"));
	w1 = ssa_withdraw_ops(o, "galactic-translator");
	w2 = ssa_withdraw_ops(p, "galactic-translator");
	ck_assert(json_equal(w1, w2));
	ck_assert_ptr_nonnull(w1);
	json_decref(w1);
	json_decref(w2);
	json_decref(o);
	json_decref(p);
	json_decref(q);
}
END_TEST

/* The whole list one apply carries on an atomic list: ours replaced in place
 * or appended, duplicates of ours dropped, everyone else's untouched. */
START_TEST(test_list_merged)
{
	json_t *o = J("{\"status\":{\"conditions\":[{\"type\":\"Bound\",\"status\":\"True\"},"
		      "{\"type\":\"Prepared\",\"status\":\"False\"},{\"type\":\"Allocated\",\"status\":\"True\"},"
		      "{\"type\":\"Prepared\",\"status\":\"Unknown\"}]}}");
	json_t *want = J("[{\"type\":\"Prepared\",\"status\":\"True\"},{\"type\":\"Programmed\",\"status\":\"True\"}]");
	json_t *m, *e;
	char err[128];

	m = cond_list_merged(o, want, err, sizeof(err));
	e = J("[{\"type\":\"Bound\",\"status\":\"True\"},{\"type\":\"Prepared\",\"status\":\"True\"},"
	      "{\"type\":\"Allocated\",\"status\":\"True\"},{\"type\":\"Programmed\",\"status\":\"True\"}]");
	ck_assert_msg(json_equal(m, e), "%s", gj_dumps(m));
	json_decref(m);
	json_decref(e);
	/* no status yet: the wanted entries */
	json_decref(o);
	o = J("{\"metadata\":{\"name\":\"x\"}}");
	m = cond_list_merged(o, want, err, sizeof(err));
	ck_assert(json_equal(m, want));
	json_decref(m);
	/* wrong types: refused */
	json_decref(o);
	o = J("{\"status\":{\"conditions\":{\"type\":\"Bound\"}}}");
	ck_assert_ptr_null(cond_list_merged(o, want, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "wrong type"));
	json_decref(o);
	json_decref(want);
}
END_TEST

START_TEST(test_bad_objects)
{
	static const char *const ifaces[] = {
		"{\"metadata\":{\"name\":\"nic1\",\"namespace\":\"t\",\"uid\":\"u-nic1\",\"generation\":\"4\"},"
		"\"status\":{\"conditions\":[{\"type\":\"Prepared\",\"status\":true,\"lastTransitionTime\":5},"
		"null,\"x\",{\"type\":7}]}}",
		"{\"metadata\":{\"name\":1,\"namespace\":[],\"uid\":null},\"status\":\"x\"}",
		"{\"metadata\":\"x\",\"status\":{\"conditions\":null}}",
		"{}",
	};
	static const char *const atts[] = {
		"{\"metadata\":{\"name\":\"nic1\",\"namespace\":\"t\",\"ownerReferences\":\"x\"},"
		"\"spec\":{\"interfaceRef\":\"nic1\"}}",
		"{\"metadata\":{\"name\":5,\"namespace\":\"t\",\"ownerReferences\":[null,7,{\"controller\":\"yes\"}]},"
		"\"spec\":{\"interfaceRef\":{\"name\":\"nic1\"}}}",
		"{\"metadata\":{\"name\":\"nic1\",\"namespace\":\"t\",\"ownerReferences\":[{\"kind\":\"NetworkInterface\","
		"\"name\":\"nic1\",\"uid\":\"u-nic1\",\"controller\":true}]},\"spec\":{\"vpc\":{\"name\":\"v\"},"
		"\"interfaceRef\":{\"name\":\"nic1\"}},\"status\":{\"vpc\":\"v\\u0001\",\"conditions\":{\"type\":\"Ready\"}}}",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(ifaces) / sizeof(ifaces[0]); i++) {
		json_t *o = J(ifaces[i]), *cands = json_array();
		const json_t *a = NULL;
		for (size_t k = 0; k < sizeof(atts) / sizeof(atts[0]); k++) {
			json_array_append_new(cands, J(atts[k]));
			if (!a && nic_attachment_links(o, json_array_get(cands, k)))
				a = json_array_get(cands, k);
		}
		/* Only the third attachment links to nic1 with its uid, and only the first object has that uid. */
		if (i == 0)
			ck_assert_str_eq(gj_str(a, "metadata.name"), "nic1");
		else
			ck_assert_ptr_null(a);
		json_t *c = nic_conditions(o, a, NULL, "2026-02-02T00:00:00Z");
		ck_assert_uint_eq(json_array_size(c), 2);
		/* A bad lastTransitionTime or status is never copied; a string generation is not one. */
		ck_assert_str_eq(gj_str(json_array_get(c, 0), "lastTransitionTime"), "2026-02-02T00:00:00Z");
		ck_assert_ptr_null(json_object_get(json_array_get(c, 0), "observedGeneration"));
		if (a) {
			/* Its conditions are not a list: Unknown, said as such. */
			ck_assert_str_eq(gj_str(json_array_get(c, 0), "status"), "Unknown");
			json_t *f = nic_fields_intent(o, a, err, sizeof(err));
			ck_assert_ptr_nonnull(f);
			ck_assert_str_eq(gj_str(f, "status.attachmentRef.name"), "nic1");
			ck_assert_ptr_null(gj_get(f, "status.vpc")); /* control character: not copied */
			json_decref(f);
		} else {
			json_t *f = nic_fields_intent(o, NULL, err, sizeof(err));
			ck_assert_ptr_null(f); /* objects 1-3 lack name/namespace/uid */
		}
		json_t *ops = cond_patch_build(o, c, err, sizeof(err));
		if (i == 1)
			ck_assert_ptr_null(ops); /* status is a string */
		else
			ck_assert_msg(ops && json_array_size(ops) > 0, "%zu: %s", i, err);
		if (i == 0) {
			/* null, "x" and {"type":7} are guarded by value; the bad Prepared is replaced. */
			char *d = gj_dumps(ops);
			ck_assert_msg(strstr(d, "{\"op\":\"test\",\"path\":\"/status/conditions/1\",\"value\":null}") &&
					      strstr(d, "{\"op\":\"test\",\"path\":\"/status/conditions/3\",\"value\":{\"type\":7}}") &&
					      strstr(d, "{\"op\":\"replace\",\"path\":\"/status/conditions/0\""),
				      "%s", d);
			free(d);
		}
		json_decref(ops);
		json_decref(c);
		json_decref(cands);
		json_decref(o);
	}
}
END_TEST

static json_t *att_v(const char *uid, const char *rv, const char *prog)
{
	return json_pack("{s:{s:s, s:s, s:s, s:s}, s:{s:[{s:s, s:s}]}}", "metadata", "name", "a1", "namespace", "t",
			 "uid", uid, "resourceVersion", rv, "status", "conditions", "type", "Programmed", "status", prog);
}

static const char *prog_of(const json_t *a)
{
	return gj_str(json_array_get(gj_get(a, "status.conditions"), 0), "status");
}

START_TEST(test_fresh_attachment_memory)
{
	struct att_fresh *f = att_fresh_new();
	json_t *a;

	ck_assert_ptr_nonnull(f);
	/* nothing remembered: the cache's copy */
	a = att_fresh_pick(f, "t/a1", att_v("u1", "10", "False"));
	ck_assert_str_eq(prog_of(a), "False");
	json_decref(a);
	/* our write returned rv 12: newer than the cache's 10 */
	att_fresh_put(f, att_v("u1", "12", "True"));
	a = att_fresh_pick(f, "t/a1", att_v("u1", "10", "False"));
	ck_assert_str_eq(prog_of(a), "True");
	ck_assert_str_eq(gj_str(a, "metadata.resourceVersion"), "12");
	json_decref(a);
	/* another key, or nothing cached (the object went): not ours to give */
	a = att_fresh_pick(f, "t/a2", att_v("u1", "10", "False"));
	ck_assert_str_eq(prog_of(a), "False");
	json_decref(a);
	ck_assert_ptr_null(att_fresh_pick(f, "t/a1", NULL));
	/* the cache saw an older version: still remembered */
	a = att_v("u1", "11", "False");
	att_fresh_seen(f, "t/a1", a);
	json_decref(a);
	a = att_fresh_pick(f, "t/a1", att_v("u1", "11", "False"));
	ck_assert_str_eq(prog_of(a), "True");
	json_decref(a);
	/* the cache caught up (rv 12, or a later one by someone else): the cache's copy, memory dropped */
	a = att_v("u1", "13", "False");
	att_fresh_seen(f, "t/a1", a);
	json_decref(a);
	a = att_fresh_pick(f, "t/a1", att_v("u1", "11", "False"));
	ck_assert_str_eq(prog_of(a), "False");
	json_decref(a);
	/* another incarnation in the cache: never the old one's response */
	att_fresh_put(f, att_v("u1", "20", "True"));
	a = att_fresh_pick(f, "t/a1", att_v("u2", "15", "False"));
	ck_assert_str_eq(gj_str(a, "metadata.uid"), "u2");
	json_decref(a);
	a = att_fresh_pick(f, "t/a1", att_v("u1", "15", "False")); /* dropped by the pick above */
	ck_assert_str_eq(prog_of(a), "False");
	json_decref(a);
	/* a deletion drops it; unparsable resourceVersions are never compared */
	att_fresh_put(f, att_v("u1", "30", "True"));
	att_fresh_seen(f, "t/a1", NULL);
	a = att_fresh_pick(f, "t/a1", att_v("u1", "25", "False"));
	ck_assert_str_eq(prog_of(a), "False");
	json_decref(a);
	att_fresh_put(f, att_v("u1", "x9", "True"));
	a = att_fresh_pick(f, "t/a1", att_v("u1", "25", "False"));
	ck_assert_str_eq(prog_of(a), "False");
	json_decref(a);
	att_fresh_put(f, att_v("u1", "40", "True"));
	a = att_fresh_pick(f, "t/a1", att_v("u1", "7a", "False"));
	ck_assert_str_eq(prog_of(a), "False");
	json_decref(a);
	att_fresh_put(f, att_v("u1", "50", "True")); /* freed with the memory */
	att_fresh_free(f);
	att_fresh_free(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("translator_patch");
	TCase *tc = tcase_create("patch");

	tcase_add_test(tc, test_no_status);
	tcase_add_test(tc, test_list_merged);
	tcase_add_test(tc, test_projection_keeps_what_ssa_reads);
	tcase_add_test(tc, test_no_list);
	tcase_add_test(tc, test_empty_list);
	tcase_add_test(tc, test_append_after_others);
	tcase_add_test(tc, test_replace_own_by_index);
	tcase_add_test(tc, test_equal_is_noop);
	tcase_add_test(tc, test_extra_key_rewritten);
	tcase_add_test(tc, test_duplicates_removed);
	tcase_add_test(tc, test_untyped_entries_guarded_whole);
	tcase_add_test(tc, test_wrong_types_refused);
	tcase_add_test(tc, test_attachment_links_as_upstream);
	tcase_add_test(tc, test_conditions_follow_attachment);
	tcase_add_test(tc, test_fields_intent_and_satisfied);
	tcase_add_test(tc, test_round_trip_noop);
	tcase_add_test(tc, test_bad_objects);
	tcase_add_test(tc, test_fresh_attachment_memory);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
