/*
 * translator/mapping: the built-in NodeAttachment entry, config files that
 * add/replace/remove entries (and bad ones that change nothing), and reading
 * reports written by others, including malformed ones.
 */
#include "tests/lib/gtest.h"
#include "translator/mapping.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j, "bad test JSON: %s: %s", e.text, s);
	return j;
}

static const char *GOOD_REPORT =
	"{\"metadata\":{\"name\":\"node-a-1f-2e\",\"namespace\":\"galactic-system\",\"generation\":2,"
	"\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
	"\"spec\":{\"node\":\"node-a\",\"vpc\":\"5gHk2\",\"vpcAttachment\":\"9ZzA\",\"containerID\":\"c0ffee\","
	"\"pod\":{\"namespace\":\"t\",\"name\":\"pod-1\"},\"hostInterface\":\"gv1f2e\",\"guestInterface\":\"eth0\","
	"\"podSubnets\":[\"10.0.0.0/24\",\"fd00::/64\"]},"
	"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
	"{\"type\":\"Programmed\",\"status\":\"True\",\"reason\":\"KernelVerified\",\"message\":\"ok\","
	"\"observedGeneration\":2}]}}";

START_TEST(test_default_entry_reads_nodeattachment)
{
	struct report_mapping m;
	struct report_view v;
	char err[512] = "";
	json_t *r = J(GOOD_REPORT);

	mapping_default(&m);
	ck_assert_str_eq(m.resource, "nodeattachments");
	ck_assert_int_eq(report_extract(&m, r, &v, err, sizeof(err)), 0);
	ck_assert_str_eq(v.v[MF_NODE], "node-a");
	ck_assert_str_eq(v.v[MF_VPC], "5gHk2");
	ck_assert_str_eq(v.v[MF_ATTACHMENT], "9ZzA");
	ck_assert_str_eq(v.v[MF_CONTAINER_ID], "c0ffee");
	ck_assert_str_eq(v.v[MF_POD_NAME], "pod-1");
	ck_assert_str_eq(v.v[MF_HOST_IF], "gv1f2e");
	ck_assert_str_eq(v.v[MF_GUEST_IF], "eth0");
	ck_assert_ptr_null(v.v[MF_VRF_IF]); /* not set by this node: no VRF */
	ck_assert_str_eq(v.v[MF_POD_SUBNET], "10.0.0.0/24"); /* first = primary */
	ck_assert_int_eq(v.programmed, PS_TRUE);
	ck_assert_str_eq(v.reason, "KernelVerified");
	ck_assert(!v.outdated);
	ck_assert_str_eq(v.key, "galactic-system/node-a-1f-2e");
	report_view_clear(&v);
	json_decref(r);
}
END_TEST

START_TEST(test_outdated_condition_flagged)
{
	struct report_mapping m;
	struct report_view v;
	char err[512];
	json_t *r = J(GOOD_REPORT);

	mapping_default(&m);
	json_object_set_new(json_object_get(r, "metadata"), "generation", json_integer(3));
	ck_assert_int_eq(report_extract(&m, r, &v, err, sizeof(err)), 0);
	ck_assert(v.outdated);
	report_view_clear(&v);
	json_decref(r);
}
END_TEST

/* Reports come from other writers: each bad shape is an error naming report and path. */
START_TEST(test_bad_reports_named_errors)
{
	static const struct {
		const char *spec_patch; /* merged into spec */
		const char *want;       /* substring of the error */
		bool ids_kept;
	} cases[] = {
		{ "{\"node\":42}", "spec.node (node) is an integer, want a string", true },
		{ "{\"node\":null}", "spec.node (node) is missing", true },
		{ "{\"vpc\":\"\"}", "spec.vpc (vpc) is empty", false },
		{ "{\"vpc\":[\"x\"]}", "spec.vpc (vpc) is an array", false },
		{ "{\"vpcAttachment\":\"a/b\"}", "no '/'", false },
		{ "{\"hostInterface\":\"0123456789abcdef\"}", "spec.hostInterface (hostInterface) is not a valid value", true },
		{ "{\"hostInterface\":\"bad name\"}", "hostInterface", true },
		{ "{\"pod\":\"pod-1\"}", "spec.pod is a string, want an object holding spec.pod.name (podName)", true },
		{ "{\"podSubnets\":[7]}", "spec.podSubnets (podSubnet) is an integer", true },
	};
	struct report_mapping m;

	mapping_default(&m);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct report_view v;
		char err[512] = "";
		json_t *r = J(GOOD_REPORT), *p = J(cases[i].spec_patch);
		int rc;

		json_object_update(json_object_get(r, "spec"), p);
		rc = report_extract(&m, r, &v, err, sizeof(err));
		ck_assert_msg(rc == -1, "case %zu accepted", i);
		ck_assert_msg(strstr(err, cases[i].want) && strstr(err, "galactic-system/node-a-1f-2e"),
			      "case %zu: error '%s' lacks '%s'", i, err, cases[i].want);
		ck_assert_int_eq(v.v[MF_VPC] && v.v[MF_ATTACHMENT], cases[i].ids_kept);
		report_view_clear(&v);
		json_decref(p);
		json_decref(r);
	}
}
END_TEST

START_TEST(test_bad_condition_and_not_an_object)
{
	struct report_mapping m;
	struct report_view v;
	char err[512] = "";
	json_t *r = J(GOOD_REPORT);

	mapping_default(&m);
	json_object_set_new(json_object_get(r, "status"), "conditions", json_string("yes"));
	ck_assert_int_eq(report_extract(&m, r, &v, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "status.conditions is a string"));
	report_view_clear(&v);
	json_decref(r);

	/* A status value outside True/False/Unknown. */
	r = J(GOOD_REPORT);
	json_object_set_new(json_array_get(json_object_get(json_object_get(r, "status"), "conditions"), 1),
			    "status", json_string("Yes"));
	ck_assert_int_eq(report_extract(&m, r, &v, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "status.conditions[type=Programmed].status"));
	report_view_clear(&v);
	json_decref(r);

	/* No Programmed condition at all: absent, not an error. */
	r = J(GOOD_REPORT);
	json_object_del(json_object_get(r, "status"), "conditions");
	ck_assert_int_eq(report_extract(&m, r, &v, err, sizeof(err)), 0);
	ck_assert_int_eq(v.programmed, PS_ABSENT);
	report_view_clear(&v);
	json_decref(r);

	ck_assert_int_eq(report_extract(&m, json_null(), &v, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "metadata.name"));
	report_view_clear(&v);
}
END_TEST

static const char *SECOND_DP =
	"{\"reportKinds\":[{\"name\":\"minimal\",\"group\":\"dp.example.com\",\"version\":\"v1\","
	"\"resource\":\"ports\",\"namespaced\":false,"
	"\"fields\":{\"node\":\".status.host\",\"vpc\":\"spec.net\",\"vpcAttachment\":\"spec.port\","
	"\"hostInterface\":\"status.dev\"},"
	"\"programmed\":{\"path\":\"status.up\"}}]}";

START_TEST(test_config_adds_entry_and_reads_it)
{
	struct mapping_set s;
	struct report_view v;
	char err[512] = "";
	json_t *doc = J(SECOND_DP), *r;

	ck_assert_int_eq(mapping_set_init(&s), 0);
	ck_assert_int_eq(mapping_set_load_json(&s, doc, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.e[0].name, "galactic");
	ck_assert_str_eq(s.e[1].name, "minimal");
	ck_assert(!s.e[1].namespaced);
	ck_assert_str_eq(s.e[1].path[MF_NODE], "status.host"); /* leading '.' dropped */
	r = J("{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"net\":\"n1\",\"port\":\"p1\"},"
	      "\"status\":{\"host\":\"node-b\",\"dev\":\"tap0\",\"up\":false}}");
	ck_assert_int_eq(report_extract(&s.e[1], r, &v, err, sizeof(err)), 0);
	ck_assert_str_eq(v.key, "p1");
	ck_assert_str_eq(v.v[MF_NODE], "node-b");
	ck_assert_str_eq(v.v[MF_HOST_IF], "tap0");
	ck_assert_ptr_null(v.v[MF_GUEST_IF]);
	ck_assert_int_eq(v.programmed, PS_FALSE);
	report_view_clear(&v);
	/* Wrong type for the boolean. */
	json_object_set_new(json_object_get(r, "status"), "up", json_string("true"));
	ck_assert_int_eq(report_extract(&s.e[1], r, &v, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "status.up (programmed) is a string, want a boolean"));
	report_view_clear(&v);
	json_decref(r);
	json_decref(doc);
	mapping_set_free(&s);
}
END_TEST

START_TEST(test_config_replace_and_remove)
{
	struct mapping_set s;
	char err[512] = "";
	json_t *doc;

	ck_assert_int_eq(mapping_set_init(&s), 0);
	/* Same name replaces the default (here: another version). */
	doc = J("{\"reportKinds\":[{\"name\":\"galactic\",\"group\":\"network.datumapis.com\","
		"\"version\":\"v1beta1\",\"resource\":\"nodeattachments\","
		"\"fields\":{\"node\":\"spec.node\",\"vpc\":\"spec.vpc\",\"vpcAttachment\":\"spec.vpcAttachment\"},"
		"\"programmed\":{\"conditions\":\"status.conditions\"}}]}");
	ck_assert_int_eq(mapping_set_load_json(&s, doc, err, sizeof(err)), 0);
	json_decref(doc);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_str_eq(s.e[0].version, "v1beta1");
	ck_assert_str_eq(s.e[0].cond_type, "Programmed"); /* default type */
	ck_assert_str_eq(s.e[0].path[MF_HOST_IF], "");   /* not mapped any more */
	/* replaceDefaults + a new entry, then removing the last one is refused. */
	doc = J(SECOND_DP);
	json_object_set_new(doc, "replaceDefaults", json_true());
	ck_assert_int_eq(mapping_set_load_json(&s, doc, err, sizeof(err)), 0);
	json_decref(doc);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_str_eq(s.e[0].name, "minimal");
	doc = J("{\"reportKinds\":[{\"name\":\"minimal\",\"enabled\":false}]}");
	ck_assert_int_eq(mapping_set_load_json(&s, doc, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no report kinds left"));
	ck_assert_uint_eq(s.n, 1); /* unchanged */
	json_decref(doc);
	mapping_set_free(&s);
}
END_TEST

/* Each bad document is refused with the path of the problem, and changes nothing. */
START_TEST(test_config_errors)
{
	static const struct {
		const char *doc, *want;
	} cases[] = {
		{ "[]", "want a JSON object" },
		{ "{}", "reportKinds: want an array" },
		{ "{\"reportKinds\":[{}]}", "reportKinds[0].name" },
		{ "{\"reportKinds\":[{\"name\":\"x\",\"group\":\"G!\",\"version\":\"v1\",\"resource\":\"r\"}]}",
		  "lowercase DNS names" },
		{ "{\"reportKinds\":[{\"name\":\"x\",\"group\":\"g.io\",\"version\":\"v1\",\"resource\":\"r\","
		  "\"fields\":{\"node\":\"spec.node\",\"vpc\":\"spec.vpc\"},\"programmed\":{\"path\":\"a\"}}]}",
		  "reportKinds[0].fields.vpcAttachment: required" },
		{ "{\"reportKinds\":[{\"name\":\"x\",\"group\":\"g.io\",\"version\":\"v1\",\"resource\":\"r\","
		  "\"fields\":{\"node\":\"spec..node\"}}]}",
		  "reportKinds[0].fields.node: want a dotted path" },
		{ "{\"reportKinds\":[{\"name\":\"x\",\"group\":\"g.io\",\"version\":\"v1\",\"resource\":\"r\","
		  "\"fields\":{\"nodeName\":\"spec.node\"}}]}",
		  "reportKinds[0].fields.nodeName: unknown field" },
		{ "{\"reportKinds\":[{\"name\":\"x\",\"group\":\"g.io\",\"version\":\"v1\",\"resource\":\"r\","
		  "\"fields\":{\"node\":\"a\",\"vpc\":\"b\",\"vpcAttachment\":\"c\"}}]}",
		  "reportKinds[0].programmed" },
		{ "{\"reportKinds\":[{\"name\":\"x\",\"group\":\"network.datumapis.com\",\"version\":\"v1\","
		  "\"resource\":\"nodeattachments\",\"fields\":{\"node\":\"a\",\"vpc\":\"b\",\"vpcAttachment\":\"c\"},"
		  "\"programmed\":{\"path\":\"p\"}}]}",
		  "already mapped by entry galactic" },
	};
	struct mapping_set s;

	ck_assert_int_eq(mapping_set_init(&s), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[512] = "";
		json_t *doc = J(cases[i].doc);
		ck_assert_int_eq(mapping_set_load_json(&s, doc, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, cases[i].want), "case %zu: '%s' lacks '%s'", i, err, cases[i].want);
		ck_assert_uint_eq(s.n, 1);
		ck_assert_str_eq(s.e[0].name, "galactic");
		json_decref(doc);
	}
	mapping_set_free(&s);
}
END_TEST

START_TEST(test_config_file)
{
	struct mapping_set s;
	char path[] = "/tmp/galactic-mapping-XXXXXX", err[512] = "";
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(SECOND_DP, f);
	fclose(f);
	ck_assert_int_eq(mapping_set_init(&s), 0);
	ck_assert_int_eq(mapping_set_load_file(&s, path, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 2);
	f = fopen(path, "w");
	fputs("{\"reportKinds\": [", f);
	fclose(f);
	ck_assert_int_eq(mapping_set_load_file(&s, path, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_uint_eq(s.n, 2);
	unlink(path);
	mapping_set_free(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("translator_mapping");
	TCase *tc = tcase_create("mapping");

	tcase_add_test(tc, test_default_entry_reads_nodeattachment);
	tcase_add_test(tc, test_outdated_condition_flagged);
	tcase_add_test(tc, test_bad_reports_named_errors);
	tcase_add_test(tc, test_bad_condition_and_not_an_object);
	tcase_add_test(tc, test_config_adds_entry_and_reads_it);
	tcase_add_test(tc, test_config_replace_and_remove);
	tcase_add_test(tc, test_config_errors);
	tcase_add_test(tc, test_config_file);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
