/* The Event builder (common/kube_core_event.h): the wire format both translator writers post. */
#include "common/kube_core_event.h"
#include "tests/lib/gtest.h"

#include <string.h>

static const struct kube_core_event EV = { "network.datumapis.com/v1alpha1", "VPCAttachment", "Warning",
				      "FieldWithheld", "status.x withheld", "galactic-translator",
				      "host/42" };

START_TEST(wire_format)
{
	json_t *obj = json_pack("{s:{s:s, s:s, s:s}}", "metadata", "name", "att1", "namespace", "ns1",
				"uid", "u-1");
	json_t *want = json_loads(
		"{\"apiVersion\":\"v1\",\"kind\":\"Event\","
		"\"metadata\":{\"generateName\":\"att1.\",\"namespace\":\"ns1\"},"
		"\"involvedObject\":{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		"\"name\":\"att1\",\"namespace\":\"ns1\",\"uid\":\"u-1\"},"
		"\"reason\":\"FieldWithheld\",\"message\":\"status.x withheld\",\"type\":\"Warning\","
		"\"source\":{\"component\":\"galactic-translator\"},"
		"\"firstTimestamp\":\"2026-12-01T12:00:00Z\",\"lastTimestamp\":\"2026-12-01T12:00:00Z\","
		"\"count\":1,\"reportingComponent\":\"galactic-translator\",\"reportingInstance\":\"host/42\"}",
		0, NULL);
	json_t *got = kube_core_event_new(obj, &EV, "2026-12-01T12:00:00Z");
	char *g, *w;

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	g = json_dumps(got, JSON_SORT_KEYS);
	w = json_dumps(want, JSON_SORT_KEYS);
	ck_assert_str_eq(g, w);
	free(g);
	free(w);
	json_decref(got);
	json_decref(want);
	json_decref(obj);
}
END_TEST

START_TEST(uid_missing_and_long_name)
{
	char name[254];
	json_t *obj, *got;
	const char *gen;

	memset(name, 'a', 253);
	name[253] = 0;
	obj = json_pack("{s:{s:s, s:s}}", "metadata", "name", name, "namespace", "ns1");
	got = kube_core_event_new(obj, &EV, "2026-12-01T12:00:00Z");
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "involvedObject"), "uid")), "");
	gen = json_string_value(json_object_get(json_object_get(got, "metadata"), "generateName"));
	ck_assert_uint_eq(strlen(gen), 201); /* 200 characters of the name and the dot */
	ck_assert_int_eq(gen[200], '.');
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(got, "involvedObject"), "name")), name);
	json_decref(got);
	json_decref(obj);
}
END_TEST

START_TEST(nothing_to_post)
{
	json_t *cluster = json_pack("{s:{s:s}}", "metadata", "name", "n1");
	json_t *noname = json_pack("{s:{s:s}}", "metadata", "namespace", "ns1");
	struct kube_core_event bad = EV;
	json_t *ok = json_pack("{s:{s:s, s:s}}", "metadata", "name", "a", "namespace", "ns1");
	struct kube_error err;

	ck_assert_ptr_null(kube_core_event_new(cluster, &EV, "2026-12-01T12:00:00Z"));
	ck_assert_ptr_null(kube_core_event_new(noname, &EV, "2026-12-01T12:00:00Z"));
	ck_assert_ptr_null(kube_core_event_new(NULL, &EV, "2026-12-01T12:00:00Z"));
	bad.message = NULL;
	ck_assert_ptr_null(kube_core_event_new(ok, &bad, "2026-12-01T12:00:00Z"));
	/* nothing is sent (no client is needed) when there is no Event to post */
	ck_assert_int_eq(kube_core_event_post(NULL, cluster, &EV, &err), 1);
	ck_assert_int_eq(kube_core_event_post(NULL, ok, &bad, &err), 1);
	json_decref(cluster);
	json_decref(noname);
	json_decref(ok);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_core_event");
	TCase *tc = tcase_create("event");

	tcase_add_test(tc, wire_format);
	tcase_add_test(tc, uid_missing_and_long_name);
	tcase_add_test(tc, nothing_to_post);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
