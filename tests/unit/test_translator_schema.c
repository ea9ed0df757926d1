/*
 * translator/schema, ownership, kinds: what a target CRD's schema can hold
 * (the upstream VPCAttachment's 46-character containerID, undeclared fields,
 * condition members), the staged-takeover rows, typed queue keys.
 */
#include "common/json.h"
#include "tests/lib/gtest.h"
#include "translator/kinds.h"
#include "translator/ownership.h"
#include "translator/schema.h"
#include "translator/ssa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, JSON_DECODE_ANY, &e);
	ck_assert_msg(j, "bad test JSON: %s: %s", e.text, s);
	return j;
}

/* A CRD shaped as upstream's VPCAttachment status (UPSTREAM.md [VA]). */
static const char *CRD =
	"{\"spec\":{\"versions\":[{\"name\":\"v0\",\"schema\":{\"openAPIV3Schema\":{}}},"
	"{\"name\":\"v1alpha1\",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
	"\"status\":{\"type\":\"object\",\"properties\":{"
	"\"node\":{\"type\":\"string\",\"minLength\":1},"
	"\"containerID\":{\"type\":\"string\",\"minLength\":46,\"maxLength\":46},"
	"\"podSubnet\":{\"type\":\"string\",\"minLength\":1,\"x-kubernetes-validations\":[{\"rule\":\"isCIDR(self)\"}]},"
	"\"vpc\":{\"type\":\"string\",\"pattern\":\"^[0-9A-Za-z]+$\",\"maxLength\":16},"
	"\"mode\":{\"type\":\"string\",\"enum\":[\"Netns\",\"Hypervisor\"]},"
	"\"ref\":{\"type\":\"object\",\"required\":[\"name\"],\"properties\":{\"name\":{\"type\":\"string\"}}},"
	"\"conditions\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"type\"],"
	"\"items\":{\"type\":\"object\",\"required\":[\"type\",\"status\",\"reason\",\"message\",\"lastTransitionTime\"],"
	"\"properties\":{\"type\":{\"type\":\"string\",\"maxLength\":316,"
	"\"pattern\":\"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$\"},"
	"\"status\":{\"type\":\"string\",\"enum\":[\"True\",\"False\",\"Unknown\"]},"
	"\"reason\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024,\"pattern\":\"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$\"},"
	"\"message\":{\"type\":\"string\",\"maxLength\":32768},"
	"\"lastTransitionTime\":{\"type\":\"string\",\"format\":\"date-time\"}}}}}}}}}}]}}";

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(test_check_constraints)
{
	json_t *crd = J(CRD), *v;
	const json_t *root = schema_of_crd(crd, "v1alpha1");
	char why[512];

	ck_assert_ptr_nonnull(root);
	ck_assert_ptr_null(schema_of_crd(crd, "v2"));
	ck_assert_ptr_nonnull(schema_at(root, "status.containerID"));
	ck_assert_ptr_null(schema_at(root, "status.egress"));
	/* 64-hex runtime id vs exactly 46. */
	v = json_string(HEX64);
	ck_assert_int_eq(schema_check(schema_at(root, "status.containerID"), v, "status.containerID",
				      why, sizeof(why)), -1);
	ck_assert_str_eq(why, "status.containerID: maxLength 46 (value has 64 characters)");
	json_decref(v);
	v = json_string("0123456789012345678901234567890123456789012345");
	ck_assert_int_eq(schema_check(schema_at(root, "status.containerID"), v, "x", why, sizeof(why)), 0);
	json_decref(v);
	/* Pattern, enum, type, minLength, undeclared, required members. */
	v = json_string("not-base62");
	ck_assert_int_eq(schema_check(schema_at(root, "status.vpc"), v, "status.vpc", why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "pattern"), "%s", why);
	json_decref(v);
	v = json_string("Tap");
	ck_assert_int_eq(schema_check(schema_at(root, "status.mode"), v, "status.mode", why, sizeof(why)), -1);
	ck_assert_msg(strstr(why, "enum"), "%s", why);
	json_decref(v);
	v = json_integer(3);
	ck_assert_int_eq(schema_check(schema_at(root, "status.node"), v, "status.node", why, sizeof(why)), -1);
	ck_assert_str_eq(why, "status.node: type string");
	json_decref(v);
	v = json_string("");
	ck_assert_int_eq(schema_check(schema_at(root, "status.node"), v, "status.node", why, sizeof(why)), -1);
	json_decref(v);
	v = J("{\"name\":\"a\",\"extra\":1}");
	ck_assert_int_eq(schema_check(schema_at(root, "status.ref"), v, "status.ref", why, sizeof(why)), -1);
	ck_assert_str_eq(why, "status.ref.extra: not declared in the schema");
	json_decref(v);
	v = J("{}");
	ck_assert_int_eq(schema_check(schema_at(root, "status.ref"), v, "status.ref", why, sizeof(why)), -1);
	ck_assert_str_eq(why, "status.ref.name: required");
	json_decref(v);
	/* CEL is not evaluated: an IPv4 "CIDR" that is not one passes here. */
	v = json_string("not-a-cidr");
	ck_assert_int_eq(schema_check(schema_at(root, "status.podSubnet"), v, "x", why, sizeof(why)), 0);
	json_decref(v);
	ck_assert(schema_list_is_map_by(schema_at(root, "status.conditions"), "type"));
	ck_assert(!schema_list_is_map_by(schema_at(root, "status.ref"), "type"));
	json_decref(crd);
}
END_TEST

/* Patterns are compiled once and kept (64 of them); more still work, compiled per check. */
START_TEST(test_patterns_beyond_the_cache)
{
	char why[512], node[160], ok[32], bad[32];

	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 80; i++) {
			json_t *n, *v;

			snprintf(node, sizeof(node), "{\"type\":\"string\",\"pattern\":\"^p%d-[a-z]+$\"}", i);
			n = J(node);
			snprintf(ok, sizeof(ok), "p%d-abc", i);
			snprintf(bad, sizeof(bad), "p%d-ABC", i);
			v = json_string(ok);
			ck_assert_int_eq(schema_check(n, v, "x", why, sizeof(why)), 0);
			json_decref(v);
			v = json_string(bad);
			ck_assert_int_eq(schema_check(n, v, "x", why, sizeof(why)), -1);
			ck_assert_msg(strstr(why, "pattern"), "%s", why);
			json_decref(v);
			/* another pattern's value does not match this one */
			snprintf(bad, sizeof(bad), "p%d-abc", i + 1);
			v = json_string(bad);
			ck_assert_int_eq(schema_check(n, v, "x", why, sizeof(why)), -1);
			json_decref(v);
			json_decref(n);
		}
}
END_TEST

START_TEST(test_withhold_keeps_the_rest)
{
	json_t *crd = J(CRD);
	const json_t *root = schema_of_crd(crd, "v1alpha1");
	struct withheld wh[8];
	json_t *in = J("{\"status\":{\"node\":\"node-a\",\"containerID\":\"" HEX64 "\","
		       "\"guestInterface\":\"eth0\",\"conditions\":["
		       "{\"type\":\"Programmed\",\"status\":\"True\",\"reason\":\"Programmed\",\"message\":\"m\","
		       "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\",\"observedGeneration\":1},"
		       "{\"type\":\"Bad Type\",\"status\":\"True\",\"reason\":\"R\",\"message\":\"\","
		       "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"},"
		       "{\"type\":\"NoMessage\",\"status\":\"True\",\"reason\":\"R\",\"lastTransitionTime\":\"x\"}]}}");
	size_t n = schema_withhold(root, in, wh, 8);
	char *d = gj_dumps(in);

	ck_assert_uint_eq(n, 5);
	/* Fields: the 64-hex id and the undeclared guestInterface go; node stays. */
	ck_assert_str_eq(gj_str(in, "status.node"), "node-a");
	ck_assert_ptr_null(gj_get(in, "status.containerID"));
	ck_assert_ptr_null(gj_get(in, "status.guestInterface"));
	/* Programmed stays, without the member the schema lacks; the bad-type and
	 * message-less entries go whole. */
	ck_assert_uint_eq(json_array_size(gj_get(in, "status.conditions")), 1);
	ck_assert_str_eq(gj_str(json_array_get(gj_get(in, "status.conditions"), 0), "type"), "Programmed");
	ck_assert_ptr_null(json_object_get(json_array_get(gj_get(in, "status.conditions"), 0),
					   "observedGeneration"));
	bool seen_cid = false, seen_og = false, seen_msg = false;
	for (size_t i = 0; i < n; i++) {
		seen_cid |= !strcmp(wh[i].field, "status.containerID") && strstr(wh[i].why, "maxLength 46");
		seen_og |= !strcmp(wh[i].field, "status.conditions[Programmed].observedGeneration");
		seen_msg |= !strcmp(wh[i].field, "status.conditions[NoMessage]") &&
			    strstr(wh[i].why, "message: required");
	}
	ck_assert_msg(seen_cid && seen_og && seen_msg, "%s", d);
	free(d);
	/* Unknown schema: nothing checked. */
	ck_assert_uint_eq(schema_withhold(NULL, in, wh, 8), 0);
	json_decref(in);
	json_decref(crd);
}
END_TEST

START_TEST(test_ownership_rows)
{
	struct ownership o;
	char err[256], buf[512];
	json_t *in;

	ownership_init(&o);
	ck_assert(ownership_field_ours(&o, TK_VPCATT, "hostInterface"));
	ck_assert_int_eq(ownership_leave_list(&o, "vpcattachment.status.hostInterface,"
					      "vpcattachment.conditions.Programmed", err, sizeof(err)), 0);
	ck_assert(!ownership_field_ours(&o, TK_VPCATT, "hostInterface"));
	ck_assert(ownership_field_ours(&o, TK_VPCATT, "node"));
	ck_assert(!ownership_condition_ours(&o, TK_VPCATT, "Programmed"));
	ck_assert(ownership_condition_ours(&o, TK_NI, "Programmed"));
	in = J("{\"status\":{\"node\":\"n\",\"hostInterface\":\"h\",\"conditions\":[{\"type\":\"Programmed\"}]}}");
	ck_assert_uint_eq(ownership_strip(&o, TK_VPCATT, in), 2);
	ck_assert_str_eq(gj_str(in, "status.node"), "n");
	ck_assert_ptr_null(gj_get(in, "status.hostInterface"));
	ck_assert_uint_eq(json_array_size(gj_get(in, "status.conditions")), 0);
	json_decref(in);
	ownership_describe(&o, buf, sizeof(buf));
	ck_assert_str_eq(buf, "vpcattachment.status.hostInterface,vpcattachment.conditions.Programmed");
	/* Unknown rows are refused, naming them. */
	ck_assert_int_eq(ownership_leave(&o, "vpcattachment.status.spec", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "vpcattachment.status.spec"), "%s", err);
	/* The file form. */
	char path[] = "/tmp/gt-own-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	fputs("{\"leaveToIncumbent\":[\"networkinterface.status.vpc\"]}", f);
	fclose(f);
	ownership_init(&o);
	ck_assert_int_eq(ownership_load_file(&o, path, err, sizeof(err)), 0);
	ck_assert(!ownership_field_ours(&o, TK_NI, "vpc"));
	f = fopen(path, "w");
	fputs("{\"leaveToIncumbent\":[\"nope\"],\"x\":1}", f);
	fclose(f);
	ck_assert_int_eq(ownership_load_file(&o, path, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "unknown key x"), "%s", err);
	unlink(path);
}
END_TEST

START_TEST(test_queue_keys)
{
	struct qkey k;
	char b[600];

	ck_assert_int_eq(qkey_format(TK_NIC, "tenant-a", "claim1", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "NetworkInterfaceClaim/tenant-a/claim1");
	ck_assert_int_eq(qkey_parse(b, &k), 0);
	ck_assert_int_eq(k.kind, TK_NIC);
	ck_assert_str_eq(k.ns, "tenant-a");
	ck_assert_str_eq(k.name, "claim1");
	qkey_nskey(&k, b, sizeof(b));
	ck_assert_str_eq(b, "tenant-a/claim1");
	ck_assert_int_eq(qkey_format(TK_NI, "ns", "a/b", b, sizeof(b)), -1);
	ck_assert_int_eq(qkey_format(TK_NI, "", "a", b, sizeof(b)), -1);
	ck_assert_int_eq(qkey_parse("Pod/ns/x", &k), -1);
	ck_assert_int_eq(qkey_parse("VPCAttachment/ns", &k), -1);
	ck_assert_int_eq(qkey_parse("VPCAttachment/ns/a/b", &k), -1);
	ck_assert_int_eq(qkey_parse("VPCAttachment//a", &k), -1);
}
END_TEST

/* Withdrawing everything we own from a status only we wrote: a guarded patch, not a null status. */
START_TEST(test_withdraw_ops)
{
	json_t *o = J("{\"metadata\":{\"managedFields\":["
		      "{\"manager\":\"galactic-translator\",\"operation\":\"Apply\",\"subresource\":\"status\","
		      "\"fieldsV1\":{\"f:status\":{\"f:node\":{},\"f:conditions\":{\"k:{\\\"type\\\":\\\"Programmed\\\"}\":{}}}}}]},"
		      "\"status\":{\"node\":\"n\",\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\"}]}}");
	json_t *ops;
	char *d;

	ck_assert(ssa_withdraw_empties_status(o, "galactic-translator"));
	ops = ssa_withdraw_ops(o, "galactic-translator");
	d = gj_dumps(ops);
	ck_assert_str_eq(d, "[{\"op\":\"test\",\"path\":\"/status/node\",\"value\":\"n\"},"
			 "{\"op\":\"remove\",\"path\":\"/status/node\"},"
			 "{\"op\":\"test\",\"path\":\"/status/conditions/0/type\",\"value\":\"Programmed\"},"
			 "{\"op\":\"remove\",\"path\":\"/status/conditions/0\"}]");
	free(d);
	json_decref(ops);
	/* Someone else's field in the status: an apply leaves it an object, no patch needed. */
	json_object_set_new(json_object_get(o, "status"), "vpc", json_string("V1"));
	ck_assert(!ssa_withdraw_empties_status(o, "galactic-translator"));
	json_decref(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("translator_schema");
	TCase *tc = tcase_create("schema");

	tcase_add_test(tc, test_check_constraints);
	tcase_add_test(tc, test_patterns_beyond_the_cache);
	tcase_add_test(tc, test_withhold_keeps_the_rest);
	tcase_add_test(tc, test_ownership_rows);
	tcase_add_test(tc, test_queue_keys);
	tcase_add_test(tc, test_withdraw_ops);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
