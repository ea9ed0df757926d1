/*
 * Our CRDs (crds/) and the upstream stand-ins (tests/crds/) on a real
 * kube-apiserver: all become Established, and the server itself enforces
 * what the ownership contract relies on (immutable and write-once fields,
 * SID block shape, id formats), so a bad write by anyone is refused with 422
 * and changes nothing.
 */
#include "tests/lib/cp.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"

#include <curl/curl.h>
#include <string.h>
#include <unistd.h>

static struct cp cp;
#define req(...) kreq(&cp, __VA_ARGS__)

static const char *NET = "/apis/network.datumapis.com/v1alpha1";

static void setup(void)
{
	char cmd[1024];

	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	snprintf(cmd, sizeof(cmd),
		 "%s/kubectl --kubeconfig %s apply -f crds/ -f tests/crds/ >/dev/null && "
		 "%s/kubectl --kubeconfig %s wait --for condition=Established crd --all --timeout 60s",
		 cp.bin, cp.kubeconfig, cp.bin, cp.kubeconfig);
	ck_assert_msg(system(cmd) == 0, "CRDs not established");
}

static void teardown(void)
{
	cp_down(&cp);
	curl_global_cleanup();
}

/* POST, retrying while the freshly established resource is not yet served. */
static long create(const char *path, const char *body)
{
	long code = 0;

	for (int i = 0; i < 100; i++) {
		code = req("POST", path, "application/json", body, NULL, NULL);
		if (code != 404 && code != 429 && code != 503)
			break;
		usleep(100 * 1000);
	}
	return code;
}

static long merge(const char *path, const char *body, json_t **out)
{
	return req("PATCH", path, "application/merge-patch+json", body, NULL, out);
}

static int message_has(json_t *status, const char *needle)
{
	const char *m = json_string_value(json_object_get(status, "message"));

	return m && strstr(m, needle);
}

START_TEST(test_all_crds_served)
{
	static const char *lists[] = {
		"/apis/network.datumapis.com/v1alpha1/nodedataplanes",
		"/apis/network.datumapis.com/v1alpha1/namespaces/default/nodeattachments",
		"/apis/network.datumapis.com/v1alpha1/namespaces/default/egressshards",
		"/apis/network.datumapis.com/v1alpha1/namespaces/default/egressshardclaims",
		"/apis/networking.datumapis.com/v1alpha/namespaces/default/networkinterfaces",
		"/apis/networking.datumapis.com/v1alpha/namespaces/default/networkinterfaceclaims",
		"/apis/cloud.datumapis.com/v1alpha1/namespaces/default/vpcattachments",
	};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		long code = 0;
		for (int t = 0; t < 100 && (code = req("GET", lists[i], NULL, NULL, NULL, NULL)) != 200; t++)
			usleep(100 * 1000);
		ck_assert_msg(code == 200, "%s -> %ld", lists[i], code);
	}
}
END_TEST

START_TEST(test_egressshardclaim_spec_immutable)
{
	char path[256];
	json_t *st = NULL;

	snprintf(path, sizeof(path), "%s/namespaces/default/egressshardclaims", NET);
	ck_assert_int_eq(create(path,
		"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShardClaim\","
		"\"metadata\":{\"name\":\"c1\"},\"spec\":{\"attachment\":{\"name\":\"a1\"},"
		"\"vpc\":{\"name\":\"v1\"},\"nodeName\":\"node-a\",\"families\":[\"IPv6\"]}}"), 201);
	snprintf(path, sizeof(path), "%s/namespaces/default/egressshardclaims/c1", NET);
	ck_assert_int_eq(merge(path, "{\"spec\":{\"nodeName\":\"node-b\"}}", &st), 422);
	ck_assert(message_has(st, "spec is immutable"));
	json_decref(st);
	/* An unknown family is refused at creation. */
	snprintf(path, sizeof(path), "%s/namespaces/default/egressshardclaims", NET);
	ck_assert_int_eq(create(path,
		"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShardClaim\","
		"\"metadata\":{\"name\":\"c2\"},\"spec\":{\"attachment\":{\"name\":\"a1\"},"
		"\"vpc\":{\"name\":\"v1\"},\"nodeName\":\"node-a\",\"families\":[\"IPX\"]}}"), 422);
}
END_TEST

START_TEST(test_egressshard_sid_write_once)
{
	char path[256];
	json_t *st = NULL, *o = NULL;

	snprintf(path, sizeof(path), "%s/namespaces/default/egressshards", NET);
	ck_assert_int_eq(create(path,
		"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShard\","
		"\"metadata\":{\"name\":\"s1\"},\"spec\":{\"targetRef\":{\"name\":\"node-a\"}}}"), 201);
	snprintf(path, sizeof(path), "%s/namespaces/default/egressshards/s1", NET);
	/* First write of the SID is allowed... */
	ck_assert_int_eq(merge(path, "{\"spec\":{\"shardSID\":\"fc00:0:1:1::\"}}", NULL), 200);
	/* ...a second, different one is not, and the first survives. */
	ck_assert_int_eq(merge(path, "{\"spec\":{\"shardSID\":\"fc00:0:1:2::\"}}", &st), 422);
	ck_assert(message_has(st, "shardSID is write-once"));
	json_decref(st);
	ck_assert_int_eq(merge(path, "{\"spec\":{\"shardAddressIPv4\":\"fd00::1\"}}", NULL), 422);
	ck_assert_int_eq(req("GET", path, NULL, NULL, NULL, &o), 200);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "spec"), "shardSID")),
			 "fc00:0:1:1::");
	json_decref(o);
}
END_TEST

START_TEST(test_nodedataplane_block_and_node_id)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/nodedataplanes", NET);
	ck_assert_int_eq(create(path,
		"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
		"\"metadata\":{\"name\":\"node-a\"},\"spec\":{\"sidBlock\":\"fc00:0:1::/48\"}}"), 201);
	ck_assert_int_eq(create(path,
		"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
		"\"metadata\":{\"name\":\"node-b\"},\"spec\":{\"sidBlock\":\"fc00:0:1::/64\"}}"), 422);
	/* Node IDs stop at 0xDFFF: the rest of the 16-bit space is reserved. */
	ck_assert_int_eq(create(path,
		"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
		"\"metadata\":{\"name\":\"node-c\"},\"spec\":{\"sidBlock\":\"fc00:0:1::/48\",\"nodeID\":57344}}"), 422);
}
END_TEST

START_TEST(test_nodeattachment_ids_and_node_immutable)
{
	char path[256];
	json_t *st = NULL;

	snprintf(path, sizeof(path), "%s/namespaces/default/nodeattachments", NET);
	ck_assert_int_eq(create(path,
		"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		"\"metadata\":{\"name\":\"node-a-1f-2e\"},\"spec\":{\"node\":\"node-a\","
		"\"vpc\":\"5gHk2\",\"vpcAttachment\":\"9ZzA\",\"hostInterface\":\"gv1f2e\"}}"), 201);
	/* ids are base62: anything else is refused. */
	ck_assert_int_eq(create(path,
		"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		"\"metadata\":{\"name\":\"bad\"},\"spec\":{\"node\":\"node-a\","
		"\"vpc\":\"not-base62!\",\"vpcAttachment\":\"9ZzA\"}}"), 422);
	snprintf(path, sizeof(path), "%s/namespaces/default/nodeattachments/node-a-1f-2e", NET);
	ck_assert_int_eq(merge(path, "{\"spec\":{\"node\":\"node-b\"}}", &st), 422);
	ck_assert(message_has(st, "node is immutable"));
	json_decref(st);
	/* Interface names longer than IFNAMSIZ-1 cannot exist in the kernel. */
	ck_assert_int_eq(merge(path, "{\"spec\":{\"hostInterface\":\"a-very-long-ifname\"}}", NULL), 422);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("crds");
	TCase *tc = tcase_create("validation");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_all_crds_served);
	tcase_add_test(tc, test_egressshardclaim_spec_immutable);
	tcase_add_test(tc, test_egressshard_sid_write_once);
	tcase_add_test(tc, test_nodedataplane_block_and_node_id);
	tcase_add_test(tc, test_nodeattachment_ids_and_node_immutable);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
