/* The egress binder's pure decisions (translator/egress.c). */
#include "tests/lib/gtest.h"
#include "common/json.h"
#include "translator/egress.h"

#include <string.h>

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j, "bad test JSON: %s", e.text);
	return j;
}

#define ATT(node)                                                                                  \
	"{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","             \
	"\"metadata\":{\"name\":\"a1\",\"namespace\":\"t\",\"uid\":\"u-a1\",\"generation\":3},"     \
	"\"spec\":{\"vpc\":{\"name\":\"v1\"}},\"status\":{" node "}}"
#define NC(inet)                                                                                   \
	"{\"metadata\":{\"name\":\"v1\",\"namespace\":\"t\"},\"spec\":{\"egress\":{\"internet\":" inet "}}}"

START_TEST(test_want)
{
	struct egress_want w;
	json_t *a = J(ATT("\"node\":\"n1\"")), *a0 = J(ATT("")), *nc;

	egress_want(a, NULL, &w);
	ck_assert_int_eq(w.decl, ED_NONE);
	nc = J("{\"spec\":{}}");
	egress_want(a, nc, &w);
	ck_assert_int_eq(w.decl, ED_NONE);
	json_decref(nc);
	nc = J(NC("{\"mode\":\"Disabled\",\"reach\":[\"IPv6\"]}"));
	egress_want(a, nc, &w);
	ck_assert_int_eq(w.decl, ED_NONE);
	json_decref(nc);
	nc = J(NC("{\"mode\":\"Enabled\",\"reach\":[\"IPv6\"]}"));
	egress_want(a, nc, &w);
	ck_assert_int_eq(w.decl, ED_OK);
	ck_assert_str_eq(w.node, "n1");
	ck_assert_str_eq(w.vpc, "v1");
	ck_assert_int_eq(w.nfam, 1);
	ck_assert_str_eq(w.families[0], "IPv6");
	egress_want(a0, nc, &w);
	ck_assert_int_eq(w.decl, ED_NO_NODE);
	json_decref(nc);
	/* Refused, never dropped: no reach, an unknown family, a duplicate. */
	static const char *const bad[] = { NC("{\"mode\":\"Enabled\"}"), NC("{\"mode\":\"Enabled\",\"reach\":[]}"),
					   NC("{\"mode\":\"Enabled\",\"reach\":[\"IPv6\",\"IPX\"]}"),
					   NC("{\"mode\":\"Enabled\",\"reach\":[\"IPv6\",\"IPv6\"]}"),
					   NC("{\"mode\":\"Enabled\",\"reach\":[7]}") };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nc = J(bad[i]);
		egress_want(a, nc, &w);
		ck_assert_msg(w.decl == ED_BAD, "case %zu not refused", i);
		ck_assert_int_eq(w.nfam, 0);
		ck_assert(!strstr(w.why, "n1"));
		json_decref(nc);
	}
	/* IPv4 (which upstream's CEL refuses today) is carried to the claim, where a shard may refuse it. */
	nc = J(NC("{\"mode\":\"Enabled\",\"reach\":[\"IPv6\",\"IPv4\"]}"));
	egress_want(a, nc, &w);
	ck_assert_int_eq(w.decl, ED_OK);
	ck_assert_int_eq(w.nfam, 2);
	json_decref(nc);
	json_decref(a);
	json_decref(a0);
}
END_TEST

START_TEST(test_claim_new_and_matches)
{
	struct egress_want w;
	json_t *a = J(ATT("\"node\":\"n1\"")), *nc = J(NC("{\"mode\":\"Enabled\",\"reach\":[\"IPv6\"]}"));
	json_t *c;
	char why[200];

	egress_want(a, nc, &w);
	c = egress_claim_new(a, &w);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(gj_str(c, "metadata.name"), "a1");
	ck_assert_str_eq(gj_str(c, "metadata.namespace"), "t");
	ck_assert_str_eq(json_string_value(json_object_get(gj_get(c, "metadata.labels"), EGRESS_NODE_LABEL)), "n1");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(c, "metadata.ownerReferences"), 0), "uid"), "u-a1");
	ck_assert(json_is_true(gj_get(json_array_get(gj_get(c, "metadata.ownerReferences"), 0), "controller")));
	ck_assert_str_eq(gj_str(c, "spec.attachment.name"), "a1");
	ck_assert_str_eq(gj_str(c, "spec.vpc.name"), "v1");
	ck_assert_str_eq(gj_str(c, "spec.nodeName"), "n1");
	ck_assert(egress_claim_matches(c, a, &w, why, sizeof(why)));
	/* Moved node. */
	snprintf(w.node, sizeof(w.node), "n2");
	ck_assert(!egress_claim_matches(c, a, &w, why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "n2"));
	snprintf(w.node, sizeof(w.node), "n1");
	/* Another incarnation's claim (owner uid). */
	json_object_set_new(json_array_get(gj_get(c, "metadata.ownerReferences"), 0), "uid", json_string("old"));
	ck_assert(!egress_claim_matches(c, a, &w, why, sizeof(why)));
	json_decref(c);
	/* No uid: no claim. */
	json_object_del(gj_get(a, "metadata"), "uid");
	ck_assert_ptr_null(egress_claim_new(a, &w));
	json_decref(nc);
	json_decref(a);
}
END_TEST

START_TEST(test_pick_and_refusals)
{
	json_t *shards = J("[{\"metadata\":{\"name\":\"s-b\"},\"spec\":{\"targetRef\":{\"name\":\"n1\"}}},"
			   "{\"metadata\":{\"name\":\"s-a\"},\"spec\":{\"targetRef\":{\"name\":\"n1\"}},"
			   "\"status\":{\"shardSID\":\"fc00::e\"}},"
			   "{\"metadata\":{\"name\":\"s-0\"},\"spec\":{\"targetRef\":{\"name\":\"n2\"}}}]");
	static const char *const v6[] = { "IPv6" }, *const v46[] = { "IPv6", "IPv4" };
	const json_t *p = egress_pick_shard(shards, "n1");
	json_t *s;
	char msg[400];

	ck_assert_str_eq(gj_str(p, "metadata.name"), "s-a"); /* lowest name wins */
	ck_assert_ptr_null(egress_pick_shard(shards, "n3"));
	ck_assert_str_eq(egress_refusal(NULL, "n3", v6, 1, msg, sizeof(msg)), ER_NO_SHARD);
	ck_assert_ptr_nonnull(strstr(msg, "n3"));
	ck_assert_ptr_null(egress_refusal(p, "n1", v6, 1, msg, sizeof(msg)));
	/* FamilyUnsupported: IPv4 asked, no IPv4 address reported (unreachable through upstream's CEL). */
	ck_assert_str_eq(egress_refusal(p, "n1", v46, 2, msg, sizeof(msg)), ER_FAMILY);
	ck_assert_str_eq(egress_refusal(json_array_get(shards, 0), "n1", v6, 1, msg, sizeof(msg)), ER_NOT_READY);
	s = J("{\"metadata\":{\"name\":\"s\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},"
	      "\"status\":{\"shardSID\":\"fc00::e\"}}");
	ck_assert_str_eq(egress_refusal(s, "n1", v6, 1, msg, sizeof(msg)), ER_TERMINATING);
	json_decref(s);
	s = J("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"shardSID\":\"fc00::1\"},\"status\":{\"shardSID\":\"fc00::2\"}}");
	ck_assert_str_eq(egress_refusal(s, "n1", v6, 1, msg, sizeof(msg)), ER_MISMATCH);
	json_decref(s);
	s = J("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"shardAddressIPv6\":\"2001:db8::1\"},"
	      "\"status\":{\"shardSID\":\"fc00::2\",\"shardAddressIPv6\":\"2001:db8::2\"}}");
	ck_assert_str_eq(egress_refusal(s, "n1", v6, 1, msg, sizeof(msg)), ER_MISMATCH);
	json_decref(s);
	s = J("{\"metadata\":{\"name\":\"s\"},\"status\":{\"shardSID\":\"fc00::2\",\"shardAddressIPv4\":\"192.0.2.1\"}}");
	ck_assert_ptr_null(egress_refusal(s, "n1", v46, 2, msg, sizeof(msg)));
	json_decref(s);
	json_decref(shards);
}
END_TEST

#define CLAIM(st)                                                                                   \
	"{\"metadata\":{\"name\":\"a1\",\"namespace\":\"t\",\"uid\":\"u-c\",\"generation\":1,"       \
	"\"ownerReferences\":[{\"uid\":\"u-a1\",\"controller\":true}]},"                            \
	"\"spec\":{\"attachment\":{\"name\":\"a1\"},\"vpc\":{\"name\":\"v1\"},\"nodeName\":\"n1\","  \
	"\"families\":[\"IPv6\"]},\"status\":" st "}"

START_TEST(test_conditions)
{
	struct egress_want w;
	json_t *a = J(ATT("\"node\":\"n1\"")), *nc = J(NC("{\"mode\":\"Enabled\",\"reach\":[\"IPv6\"]}"));
	json_t *bound = J(CLAIM("{\"observedGeneration\":1,\"shardRef\":{\"namespace\":\"gs\",\"name\":\"s-a\"},"
				"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Bound\"}]}"));
	json_t *refused = J(CLAIM("{\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
				  "\"reason\":\"NoShardOnNode\"}]}"));
	json_t *fam = J(CLAIM("{\"observedGeneration\":1,\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
			      "\"reason\":\"FamilyUnsupported\"}]}"));
	json_t *fresh = J(CLAIM("{}"));
	json_t *sh = J("{\"metadata\":{\"name\":\"s-a\"},\"status\":{\"shardSID\":\"fc00::e\",\"shardAddressIPv6\":\"2001:db8::7\"}}");
	json_t *sh0 = J("{\"metadata\":{\"name\":\"s-a\"},\"status\":{\"shardSID\":\"fc00::e\"}}");
	json_t *c, *st;

	egress_want(a, nc, &w);
	ck_assert_str_eq(egress_claim_shard(bound, "gs"), "s-a");
	ck_assert_ptr_null(egress_claim_shard(bound, "other"));
	c = egress_att_condition(a, &w, bound, sh, "2026-01-02T00:00:00Z");
	ck_assert_str_eq(gj_str(c, "status"), "True");
	ck_assert_str_eq(gj_str(c, "reason"), EA_READY);
	ck_assert_ptr_nonnull(strstr(gj_str(c, "message"), "2001:db8::7"));
	ck_assert(!strstr(gj_str(c, "message"), "s-a") && !strstr(gj_str(c, "message"), "n1"));
	ck_assert_int_eq(gj_int(c, "observedGeneration", 0), 3);
	json_decref(c);
	c = egress_att_condition(a, &w, bound, sh0, "2026-01-02T00:00:00Z");
	ck_assert_str_eq(gj_str(c, "reason"), EA_NO_ADDRESS);
	json_decref(c);
	c = egress_att_condition(a, &w, bound, NULL, "2026-01-02T00:00:00Z");
	ck_assert_str_eq(gj_str(c, "reason"), EA_UNAVAILABLE);
	json_decref(c);
	c = egress_att_condition(a, &w, refused, NULL, "2026-01-02T00:00:00Z");
	ck_assert_str_eq(gj_str(c, "status"), "False");
	ck_assert_str_eq(gj_str(c, "reason"), EA_UNAVAILABLE);
	ck_assert(!strstr(gj_str(c, "message"), "n1"));
	json_decref(c);
	c = egress_att_condition(a, &w, fam, NULL, "2026-01-02T00:00:00Z");
	ck_assert_ptr_nonnull(strstr(gj_str(c, "message"), "address family"));
	json_decref(c);
	/* Undecided: nothing shown yet -> nothing; shown -> kept as is. */
	ck_assert_ptr_null(egress_att_condition(a, &w, fresh, NULL, "2026-01-02T00:00:00Z"));
	ck_assert_ptr_null(egress_att_condition(a, &w, NULL, NULL, "2026-01-02T00:00:00Z"));
	json_object_set_new(json_object_get(a, "status"), "conditions",
			    J("[{\"type\":\"InternetEgressReady\",\"status\":\"True\",\"reason\":\"Ready\","
			      "\"message\":\"m\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\",\"observedGeneration\":2}]"));
	c = egress_att_condition(a, &w, fresh, NULL, "2026-01-02T00:00:00Z");
	ck_assert_str_eq(gj_str(c, "message"), "m");
	ck_assert_int_eq(gj_int(c, "observedGeneration", 0), 2);
	json_decref(c);
	/* lastTransitionTime kept on the same status. */
	c = egress_att_condition(a, &w, bound, sh, "2026-01-02T00:00:00Z");
	ck_assert_str_eq(gj_str(c, "lastTransitionTime"), "2026-01-01T00:00:00Z");
	json_decref(c);
	c = egress_att_condition(a, &w, refused, NULL, "2026-01-02T00:00:00Z");
	ck_assert_str_eq(gj_str(c, "lastTransitionTime"), "2026-01-02T00:00:00Z");
	json_decref(c);
	/* No declaration: none intended (the translator withdraws its own). */
	w.decl = ED_NONE;
	ck_assert_ptr_null(egress_att_condition(a, &w, bound, sh, "2026-01-02T00:00:00Z"));
	/* The claim's status body. */
	st = egress_claim_status(fresh, "gs", "s-a", "True", ER_BOUND, "bound to gs/s-a on n1", "2026-01-02T00:00:00Z");
	ck_assert_str_eq(gj_str(st, "status.shardRef.name"), "s-a");
	ck_assert_str_eq(gj_str(st, "status.shardRef.namespace"), "gs");
	ck_assert_int_eq(gj_int(st, "status.observedGeneration", 0), 1);
	ck_assert_str_eq(gj_str(json_array_get(gj_get(st, "status.conditions"), 0), "reason"), ER_BOUND);
	ck_assert_str_eq(gj_str(st, "metadata.uid"), "u-c");
	json_decref(st);
	st = egress_claim_status(fresh, "gs", NULL, "False", ER_NO_SHARD, "x", "2026-01-02T00:00:00Z");
	ck_assert_ptr_null(gj_get(st, "status.shardRef"));
	json_decref(st);
	for (json_t **p = (json_t *[]){ a, nc, bound, refused, fam, fresh, sh, sh0, NULL }; *p; p++)
		json_decref(*p);
}
END_TEST

START_TEST(test_held)
{
	json_t *s = J("{\"metadata\":{\"finalizers\":[\"x/y\",\"" EGRESS_FINALIZER "\"]}}");
	json_t *s0 = J("{\"metadata\":{\"finalizers\":[\"x/y\"]}}");
	ck_assert(egress_shard_held(s));
	ck_assert(!egress_shard_held(s0));
	ck_assert(!egress_shard_held(NULL));
	json_decref(s);
	json_decref(s0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("translator_egress_unit");
	TCase *tc = tcase_create("egress");

	tcase_add_test(tc, test_want);
	tcase_add_test(tc, test_claim_new_and_matches);
	tcase_add_test(tc, test_pick_and_refusals);
	tcase_add_test(tc, test_conditions);
	tcase_add_test(tc, test_held);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
