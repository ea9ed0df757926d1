/*
 * The Helm chart's permissions on a real kube-apiserver (DESIGN §5,
 * "Security"): the chart is installed with the real helm binary, then every
 * request is made with the service-account tokens the components would run
 * with.
 *   - galactic-agent: refused (403) on every networking/cloud resource; may
 *     write report objects only of the node its token is bound to (the
 *     ValidatingAdmissionPolicy reads the node name the API server puts into
 *     a pod-bound token); an unbound token writes nothing.
 *   - galactic-agent and node IDs: may create and delete only NodeID holds
 *     of its own node, controlled by its own NodeDataplane; reads them all.
 *   - galactic-agent and EgressShards: reads them, writes the status of its
 *     own node's shard only (spec.targetRef.name), never a spec or a claim.
 *   - galactic-translator: may patch only the status subresources it owns,
 *     never a spec, never a report.
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static struct cp cp;
#define req(...) kreq(&cp, __VA_ARGS__)

#define NS "galactic-system"
static char agent_a[4096];  /* token bound to a pod on node-a */
static char agent_unbound[4096];
static char translator[4096];

static const char *NET = "/apis/network.datumapis.com/v1alpha1";

/* Runs one of the control plane's CLIs (kubectl, helm) as the admin. */
static void cli(const char *tool, const char *args)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "%s/%s --kubeconfig %s %s >/dev/null", cp.bin, tool, cp.kubeconfig, args);
	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

static void token(const char *sa, const char *pod_name, const char *pod_uid, char *out, size_t n)
{
	char path[256], body[512];
	json_t *r = NULL;
	const char *t;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts/%s/token", NS, sa);
	if (pod_name)
		snprintf(body, sizeof(body),
			 "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
			 "\"spec\":{\"expirationSeconds\":3600,\"boundObjectRef\":{\"apiVersion\":\"v1\","
			 "\"kind\":\"Pod\",\"name\":\"%s\",\"uid\":\"%s\"}}}", pod_name, pod_uid);
	else
		snprintf(body, sizeof(body),
			 "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
			 "\"spec\":{\"expirationSeconds\":3600}}");
	ck_assert_int_eq(req("POST", path, "application/json", body, NULL, &r), 201);
	t = json_string_value(json_object_get(json_object_get(r, "status"), "token"));
	ck_assert_ptr_nonnull(t);
	snprintf(out, n, "%s", t);
	json_decref(r);
}

/* A request retried while a new CRD's storage answers 429/503 (initializing). */
static long req_ready(const char *method, const char *path, const char *ctype, const char *body,
		      const char *token)
{
	long code = 0;
	for (int i = 0; i < 100; i++) {
		code = req(method, path, ctype, body, token, NULL);
		if (code != 429 && code != 503)
			break;
		usleep(100 * 1000);
	}
	return code;
}

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

static void setup(void)
{
	char path[256], uid[64], body[1024];
	json_t *pod = NULL, *ni = NULL;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	ck_assert_msg(crds_install(&cp, NULL) == 0, "CRDs not established");
	cli("helm", "install galactic charts/galactic --namespace " NS " --create-namespace");

	/* Nodes and a pod on node-a: no kubelet here, so the objects stand for
	 * what the scheduler would have done. A pod-bound token carries its node. */
	ck_assert_int_eq(create("/api/v1/nodes", "{\"metadata\":{\"name\":\"node-a\"}}"), 201);
	ck_assert_int_eq(create("/api/v1/nodes", "{\"metadata\":{\"name\":\"node-b\"}}"), 201);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", NS);
	ck_assert_int_eq(req("POST", path, "application/json",
			     "{\"metadata\":{\"name\":\"galactic-agent-a\"},\"spec\":{\"nodeName\":\"node-a\","
			     "\"serviceAccountName\":\"galactic-agent\",\"containers\":[{\"name\":\"agent\","
			     "\"image\":\"galactic:dev\"}]}}", NULL, &pod), 201);
	snprintf(uid, sizeof(uid), "%s",
		 json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid")));
	json_decref(pod);
	token("galactic-agent", "galactic-agent-a", uid, agent_a, sizeof(agent_a));
	token("galactic-agent", NULL, NULL, agent_unbound, sizeof(agent_unbound));
	token("galactic-translator", NULL, NULL, translator, sizeof(translator));

	/*
	 * Admission policies take effect a moment after they are created (the
	 * API server loads them through an informer): wait until a dry-run write
	 * with the unbound token is refused by it.
	 */
	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments/probe?fieldManager=probe&dryRun=All", NET, NS);
	for (int i = 0; i < 300; i++) {
		if (req("PATCH", path, "application/apply-patch+yaml",
			"{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
			"\"metadata\":{\"name\":\"probe\"},\"spec\":{\"node\":\"node-a\",\"vpc\":\"P\","
			"\"vpcAttachment\":\"P\"}}", agent_unbound, NULL) == 403)
			break;
		usleep(100 * 1000);
	}

	/* Objects of both nodes, written by the admin (the operator). */
	snprintf(path, sizeof(path), "%s/nodedataplanes", NET);
	ck_assert_int_eq(create(path, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
				      "\"metadata\":{\"name\":\"node-a\"},\"spec\":{\"sidBlock\":\"fcbb:bb00:1::/48\"}}"), 201);
	ck_assert_int_eq(create(path, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
				      "\"metadata\":{\"name\":\"node-b\"},\"spec\":{\"sidBlock\":\"fcbb:bb00:1::/48\"}}"), 201);
	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments", NET, NS);
	ck_assert_int_eq(create(path, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
				      "\"metadata\":{\"name\":\"node-b-2-2\"},\"spec\":{\"node\":\"node-b\","
				      "\"vpc\":\"B2\",\"vpcAttachment\":\"B2\"}}"), 201);
	/* Upstream objects as upstream links them: the attachment has the
	 * interface's name, a controller ownerReference to it and interfaceRef.name. */
	ck_assert_int_eq(req("POST", "/apis/networking.datumapis.com/v1alpha/namespaces/default/networkinterfaces",
			     "application/json",
			     "{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterface\","
			     "\"metadata\":{\"name\":\"nic1\"},\"spec\":{\"network\":{\"name\":\"net1\"},"
			     "\"interfaceName\":\"eth0\"}}", NULL, &ni), 201);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"nic1\",\"ownerReferences\":[{\"apiVersion\":\"networking.datumapis.com/v1alpha\","
		 "\"kind\":\"NetworkInterface\",\"name\":\"nic1\",\"uid\":\"%s\",\"controller\":true,"
		 "\"blockOwnerDeletion\":true}]},\"spec\":{\"vpc\":{\"name\":\"v\"},\"interfaceRef\":{\"name\":\"nic1\"},"
		 "\"interface\":{\"name\":\"eth0\"}}}",
		 kstr(ni, "metadata", "uid"));
	json_decref(ni);
	ck_assert_int_eq(create("/apis/cloud.datumapis.com/v1alpha1/namespaces/default/vpcattachments", body), 201);
}

/* A NodeID hold of node `node` owned by NodeDataplane `owner` (uid looked up). */
static void nodeid_body(char *buf, size_t n, const char *name, const char *node, const char *owner, int id)
{
	char path[256];
	json_t *o;

	snprintf(path, sizeof(path), "%s/nodedataplanes/%s", NET, owner);
	o = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(o);
	snprintf(buf, n, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeID\","
		 "\"metadata\":{\"name\":\"%s\",\"ownerReferences\":[{\"apiVersion\":\"network.datumapis.com/v1alpha1\","
		 "\"kind\":\"NodeDataplane\",\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true}]},"
		 "\"spec\":{\"node\":\"%s\",\"block\":\"fcbb:bb00:1::/48\",\"nodeID\":%d}}",
		 name, owner, kstr(o, "metadata", "uid"), node, id);
	json_decref(o);
}

static void teardown(void)
{
	cp_down(&cp);
	curl_global_cleanup();
}

static const char *msg(json_t *st)
{
	const char *m = json_string_value(json_object_get(st, "message"));

	return m ? m : "";
}

START_TEST(test_agent_token_is_bound_to_its_node)
{
	json_t *r = NULL, *extra;

	ck_assert_int_eq(req("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json",
			     "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}",
			     agent_a, &r), 201);
	extra = json_object_get(json_object_get(json_object_get(r, "status"), "userInfo"), "extra");
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(extra, "authentication.kubernetes.io/node-name"), 0)), "node-a");
	json_decref(r);
}
END_TEST

START_TEST(test_agent_refused_on_networking_and_cloud)
{
	static const char *paths[] = {
		"/apis/networking.datumapis.com/v1alpha/networkinterfaces",
		"/apis/networking.datumapis.com/v1alpha/networkinterfaceclaims",
		"/apis/cloud.datumapis.com/v1alpha1/vpcattachments",
		"/apis/networking.datumapis.com/v1alpha/namespaces/default/networkinterfaces/nic1",
		"/apis/cloud.datumapis.com/v1alpha1/namespaces/default/vpcattachments/nic1",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		ck_assert_msg(req("GET", paths[i], NULL, NULL, agent_a, NULL) == 403, "GET %s", paths[i]);
	ck_assert_int_eq(req("PATCH", "/apis/cloud.datumapis.com/v1alpha1/namespaces/default/vpcattachments/nic1/status"
			     "?fieldManager=galactic-agent", "application/merge-patch+json",
			     "{\"status\":{\"node\":\"node-a\"}}", agent_a, NULL), 403);
	ck_assert_int_eq(req("PATCH", "/apis/networking.datumapis.com/v1alpha/namespaces/default/networkinterfaces/nic1/status"
			     "?fieldManager=galactic-agent", "application/merge-patch+json",
			     "{\"status\":{\"vpc\":\"x\"}}", agent_a, NULL), 403);
}
END_TEST

START_TEST(test_agent_writes_only_its_own_node_reports)
{
	char path[256];
	json_t *st = NULL;

	/* Own node: create by apply, then status. */
	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments/node-a-1-1?fieldManager=galactic-agent", NET, NS);
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
			     "\"metadata\":{\"name\":\"node-a-1-1\"},\"spec\":{\"node\":\"node-a\",\"vpc\":\"A1\","
			     "\"vpcAttachment\":\"A1\"}}", agent_a, NULL), 201);
	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments/node-a-1-1/status?fieldManager=galactic-agent", NET, NS);
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
			     "\"metadata\":{\"name\":\"node-a-1-1\"},\"status\":{\"conditions\":[{\"type\":\"Programmed\","
			     "\"status\":\"True\",\"reason\":\"Verified\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
			     agent_a, NULL), 200);

	/* Another node's report: neither created, nor updated, nor deleted. */
	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments/node-b-1-1?fieldManager=galactic-agent", NET, NS);
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
			     "\"metadata\":{\"name\":\"node-b-1-1\"},\"spec\":{\"node\":\"node-b\",\"vpc\":\"A1\","
			     "\"vpcAttachment\":\"A2\"}}", agent_a, &st), 403);
	ck_assert_msg(strstr(msg(st), "may not write objects of node node-b"), "%s", msg(st));
	json_decref(st);
	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments/node-b-2-2/status?fieldManager=galactic-agent", NET, NS);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json",
			     "{\"status\":{\"observedGeneration\":1}}", agent_a, NULL), 403);
	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments/node-b-2-2", NET, NS);
	ck_assert_int_eq(req("DELETE", path, NULL, NULL, agent_a, NULL), 403);
	ck_assert_int_eq(req("GET", path, NULL, NULL, NULL, NULL), 200);

	/* Per-node object: own status yes, another node's status no, spec never. */
	snprintf(path, sizeof(path), "%s/nodedataplanes/node-a/status?fieldManager=galactic-agent/node-a", NET);
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
			     "\"metadata\":{\"name\":\"node-a\"},\"status\":{\"nodeID\":1,\"datapath\":\"kernel\"}}",
			     agent_a, NULL), 200);
	snprintf(path, sizeof(path), "%s/nodedataplanes/node-b/status?fieldManager=galactic-agent", NET);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json",
			     "{\"status\":{\"nodeID\":2}}", agent_a, NULL), 403);
	snprintf(path, sizeof(path), "%s/nodedataplanes/node-a?fieldManager=galactic-agent", NET);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json",
			     "{\"spec\":{\"nodeID\":7}}", agent_a, NULL), 403);
}
END_TEST

START_TEST(test_unbound_agent_token_writes_nothing)
{
	char path[256];
	json_t *st = NULL;

	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments/node-a-3-3?fieldManager=galactic-agent", NET, NS);
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
			     "\"metadata\":{\"name\":\"node-a-3-3\"},\"spec\":{\"node\":\"node-a\",\"vpc\":\"A3\","
			     "\"vpcAttachment\":\"A3\"}}", agent_unbound, &st), 403);
	ck_assert_msg(strstr(msg(st), "not bound to a node"), "%s", msg(st));
	json_decref(st);
}
END_TEST

START_TEST(test_translator_writes_only_owned_status)
{
	char path[256];

	ck_assert_int_eq(req("GET", "/apis/cloud.datumapis.com/v1alpha1/vpcattachments", NULL, NULL, translator, NULL), 200);
	ck_assert_int_eq(req("GET", "/apis/network.datumapis.com/v1alpha1/nodeattachments", NULL, NULL, translator, NULL), 200);
	ck_assert_int_eq(req("PATCH", "/apis/cloud.datumapis.com/v1alpha1/namespaces/default/vpcattachments/nic1/status"
			     "?fieldManager=galactic-translator", "application/apply-patch+yaml",
			     "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
			     "\"metadata\":{\"name\":\"nic1\"},\"status\":{\"node\":\"node-a\"}}", translator, NULL), 200);
	ck_assert_int_eq(req("PATCH", "/apis/networking.datumapis.com/v1alpha/namespaces/default/networkinterfaces/nic1/status"
			     "?fieldManager=galactic-translator", "application/json-patch+json",
			     "[{\"op\":\"add\",\"path\":\"/status\",\"value\":{\"vpc\":\"v\"}}]", translator, NULL), 200);
	/* Specs and deletes of upstream objects: refused. */
	ck_assert_int_eq(req("PATCH", "/apis/cloud.datumapis.com/v1alpha1/namespaces/default/vpcattachments/nic1"
			     "?fieldManager=galactic-translator", "application/merge-patch+json",
			     "{\"spec\":{\"vpc\":{\"name\":\"other\"}}}", translator, NULL), 403);
	ck_assert_int_eq(req("DELETE", "/apis/networking.datumapis.com/v1alpha/namespaces/default/networkinterfaces/nic1",
			     NULL, NULL, translator, NULL), 403);
	/* It reads the target CRDs' schemas and records Events; it never changes a CRD. */
	ck_assert_int_eq(req("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NULL, NULL, translator, NULL), 200);
	ck_assert_int_eq(req("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/vpcattachments.cloud.datumapis.com",
			     NULL, NULL, translator, NULL), 403);
	ck_assert_int_eq(req("POST", "/api/v1/namespaces/default/events", "application/json",
			     "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"generateName\":\"att1.\"},"
			     "\"involvedObject\":{\"kind\":\"VPCAttachment\",\"name\":\"att1\",\"namespace\":\"default\"},"
			     "\"reason\":\"FieldWithheld\",\"message\":\"m\",\"type\":\"Warning\"}", translator, NULL), 201);
	/* Egress binding: read NetworkContexts (never write them), manage claims, hold shards
	 * (patch of the shard itself for the finalizer), never the shard's status. */
	ck_assert_int_eq(req_ready("GET", "/apis/networking.datumapis.com/v1alpha/networkcontexts", NULL, NULL, translator), 200);
	ck_assert_int_eq(req("PATCH", "/apis/networking.datumapis.com/v1alpha/namespaces/default/networkcontexts/x",
			     "application/merge-patch+json", "{\"spec\":{}}", translator, NULL), 403);
	snprintf(path, sizeof(path), "%s/egressshardclaims", NET);
	ck_assert_int_eq(req_ready("GET", path, NULL, NULL, translator), 200);
	snprintf(path, sizeof(path), "%s/namespaces/default/egressshardclaims?dryRun=All", NET);
	ck_assert_int_eq(req_ready("POST", path, "application/json",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShardClaim\","
			     "\"metadata\":{\"name\":\"c1\"},\"spec\":{\"attachment\":{\"name\":\"c1\"},"
			     "\"vpc\":{\"name\":\"v\"},\"nodeName\":\"node-a\",\"families\":[\"IPv6\"]}}",
			     translator), 201);
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards", NET, NS);
	ck_assert_int_eq(req_ready("GET", path, NULL, NULL, translator), 200);
	ck_assert_int_eq(req("POST", path, "application/json",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShard\","
			     "\"metadata\":{\"name\":\"s1\"},\"spec\":{\"targetRef\":{\"kind\":\"Node\",\"name\":\"node-a\"}}}",
			     translator, NULL), 403);
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards/s1/status?fieldManager=galactic-translator", NET, NS);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json",
			     "{\"status\":{\"shardSID\":\"\"}}", translator, NULL), 403);
	/* Reports belong to the agents. */
	snprintf(path, sizeof(path), "%s/namespaces/%s/nodeattachments/node-b-2-2/status?fieldManager=galactic-translator", NET, NS);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json",
			     "{\"status\":{\"observedGeneration\":1}}", translator, NULL), 403);
}
END_TEST

START_TEST(test_agent_node_ids_only_its_own)
{
	char path[256], body[1024];
	json_t *st = NULL;

	snprintf(path, sizeof(path), "%s/nodeids", NET);
	/* reads every hold (it must see which IDs are taken); retried while the
	 * freshly established resource is not served yet */
	for (int i = 0; i < 100 && req("GET", path, NULL, NULL, agent_a, NULL) != 200; i++)
		usleep(100 * 1000);
	ck_assert_int_eq(req("GET", path, NULL, NULL, agent_a, NULL), 200);
	/* its own node's hold, owned by its own NodeDataplane: yes */
	nodeid_body(body, sizeof(body), "fcbbbb000001-0001", "node-a", "node-a", 1);
	ck_assert_int_eq(req("POST", path, "application/json", body, agent_a, NULL), 201);
	/* a hold for another node: no */
	nodeid_body(body, sizeof(body), "fcbbbb000001-0002", "node-b", "node-b", 2);
	ck_assert_int_eq(req("POST", path, "application/json", body, agent_a, &st), 403);
	ck_assert_msg(strstr(msg(st), "may not write objects of node node-b"), "%s", msg(st));
	json_decref(st);
	/* its own node, but controlled by another node's NodeDataplane (released with that one): no */
	nodeid_body(body, sizeof(body), "fcbbbb000001-0003", "node-a", "node-b", 3);
	ck_assert_int_eq(req("POST", path, "application/json", body, agent_a, &st), 403);
	ck_assert_msg(strstr(msg(st), "owned only by its own NodeDataplane"), "%s", msg(st));
	json_decref(st);
	/* without an owner (never released): no */
	snprintf(body, sizeof(body), "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeID\","
		 "\"metadata\":{\"name\":\"fcbbbb000001-0004\"},\"spec\":{\"node\":\"node-a\","
		 "\"block\":\"fcbb:bb00:1::/48\",\"nodeID\":4}}");
	ck_assert_int_eq(req("POST", path, "application/json", body, agent_a, NULL), 403);
	/* the unbound token and the translator create none */
	nodeid_body(body, sizeof(body), "fcbbbb000001-0005", "node-a", "node-a", 5);
	ck_assert_int_eq(req("POST", path, "application/json", body, agent_unbound, NULL), 403);
	ck_assert_int_eq(req("POST", path, "application/json", body, translator, NULL), 403);
	/* another node's hold (made by the admin) is not the agent's to delete; its own is */
	nodeid_body(body, sizeof(body), "fcbbbb000001-0006", "node-b", "node-b", 6);
	ck_assert_int_eq(create(path, body), 201);
	snprintf(path, sizeof(path), "%s/nodeids/fcbbbb000001-0006", NET);
	ck_assert_int_eq(req("DELETE", path, NULL, NULL, agent_a, NULL), 403);
	ck_assert_int_eq(req("GET", path, NULL, NULL, NULL, NULL), 200);
	snprintf(path, sizeof(path), "%s/nodeids/fcbbbb000001-0001", NET);
	ck_assert_int_eq(req("DELETE", path, NULL, NULL, agent_a, NULL), 200);
	/* no change to a hold, even its own (nothing grants update or patch) */
	snprintf(path, sizeof(path), "%s/nodeids/fcbbbb000001-0006", NET);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}",
			     agent_a, NULL), 403);
}
END_TEST

START_TEST(test_agent_applies_its_nodedataplane_status)
{
	char path[256];
	json_t *o;

	/* the agent's status intent, by server-side apply under its node's field manager */
	snprintf(path, sizeof(path), "%s/nodedataplanes/node-a/status?fieldManager=galactic-agent/node-a", NET);
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
			     "\"metadata\":{\"name\":\"node-a\"},\"status\":{\"nodeID\":9,\"nodeIDRef\":{\"name\":\"fcbbbb000001-0009\"},"
			     "\"locator\":\"fcbb:bb00:1:9::/64\",\"datapath\":\"bpf\",\"capabilities\":[\"seg6\"],"
			     "\"reporter\":{\"node\":\"node-a\",\"agentInstance\":\"h/1\",\"version\":\"0.1.0\"},"
			     "\"conditions\":[{\"type\":\"IdentityAssigned\",\"status\":\"True\",\"reason\":\"Allocated\","
			     "\"message\":\"node ID 9\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\",\"observedGeneration\":1}]}}",
			     agent_a, NULL), 200);
	snprintf(path, sizeof(path), "%s/nodedataplanes/node-a", NET);
	o = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(kstr(kcond(o, "IdentityAssigned"), "reason", NULL), "Allocated");
	json_decref(o);
	/* the same to node-b: refused */
	snprintf(path, sizeof(path), "%s/nodedataplanes/node-b/status?fieldManager=galactic-agent/node-a", NET);
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
			     "\"metadata\":{\"name\":\"node-b\"},\"status\":{\"nodeID\":9}}", agent_a, NULL), 403);
}
END_TEST

START_TEST(test_agent_probes_use_its_health_endpoints)
{
	char path[256], want[64];
	json_t *ds, *c, *args;
	const char *port;
	bool has_addr = false;
	size_t i;

	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/daemonsets/galactic-agent", NS);
	ds = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(ds);
	c = json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(ds, "spec"), "template"),
							   "spec"), "containers"), 0);
	ck_assert_str_eq(kstr(json_object_get(json_object_get(c, "readinessProbe"), "httpGet"), "path", NULL), "/readyz");
	ck_assert_str_eq(kstr(json_object_get(json_object_get(c, "livenessProbe"), "httpGet"), "path", NULL), "/healthz");
	port = kstr(json_object_get(json_object_get(c, "readinessProbe"), "httpGet"), "port", NULL);
	ck_assert_str_eq(port, "metrics");
	snprintf(want, sizeof(want), "--metrics-addr=0.0.0.0:%lld",
		 (long long)json_integer_value(json_object_get(json_array_get(json_object_get(c, "ports"), 0), "containerPort")));
	args = json_object_get(c, "command");
	for (i = 0; i < json_array_size(args); i++)
		has_addr |= !strcmp(json_string_value(json_array_get(args, i)), want);
	ck_assert_msg(has_addr, "the agent does not serve %s", want);
	json_decref(ds);
}
END_TEST

/* The agent writes the status of its own node's EgressShard only (admission: spec.targetRef.name), reads shards, never specs or claims. */
START_TEST(test_agent_writes_only_its_shards_status)
{
#define SHARD_FMT "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShard\"," \
				       "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"targetRef\":{\"kind\":\"Node\",\"name\":\"%s\"}," \
				       "\"shardSID\":\"fcbb:bb00:1:%x:f000::\",\"shardAddressIPv6\":\"2001:db8:5::%x\"}}"
#define STATUS_FMT "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShard\"," \
					 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" NS "\"},\"status\":{\"observedGeneration\":1," \
					 "\"shardSID\":\"fcbb:bb00:1:1:f000::\",\"shardAddressIPv6\":\"2001:db8:5::1\"," \
					 "\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\",\"reason\":\"AddressesProgrammed\"," \
					 "\"message\":\"\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\",\"observedGeneration\":1}," \
					 "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"DatapathAttached\",\"message\":\"\"," \
					 "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\",\"observedGeneration\":1}]}}"
	char path[256], body[1024];
	json_t *o, *mf, *m;
	size_t i, n = 0;

	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards", NET, NS);
	snprintf(body, sizeof(body), SHARD_FMT, "shard-a", "node-a", 1, 1);
	ck_assert_int_eq(create(path, body), 201);
	snprintf(body, sizeof(body), SHARD_FMT, "shard-b", "node-b", 2, 2);
	ck_assert_int_eq(create(path, body), 201);
	/* reads: yes */
	ck_assert_int_eq(req("GET", path, NULL, NULL, agent_a, NULL), 200);
	/* its own shard's status, by server-side apply under its node's manager */
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards/shard-a/status?fieldManager=galactic-agent/node-a", NET, NS);
	snprintf(body, sizeof(body), STATUS_FMT, "shard-a");
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml", body, agent_a, NULL), 200);
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards/shard-a", NET, NS);
	o = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(kstr(kcond(o, "Programmed"), "reason", NULL), "AddressesProgrammed");
	mf = json_object_get(json_object_get(o, "metadata"), "managedFields");
	json_array_foreach(mf, i, m)
		if (!strcmp(kstr(m, "subresource", NULL) ? kstr(m, "subresource", NULL) : "", "status")) {
			ck_assert_str_eq(kstr(m, "manager", NULL), "galactic-agent/node-a");
			n++;
		}
	ck_assert_uint_eq(n, 1);
	json_decref(o);
	/* another node's shard: refused by the admission policy */
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards/shard-b/status?fieldManager=galactic-agent/node-a", NET, NS);
	snprintf(body, sizeof(body), STATUS_FMT, "shard-b");
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml", body, agent_a, NULL), 403);
	/* an unbound token: nothing */
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards/shard-a/status?fieldManager=galactic-agent/x", NET, NS);
	snprintf(body, sizeof(body), STATUS_FMT, "shard-a");
	ck_assert_int_eq(req("PATCH", path, "application/apply-patch+yaml", body, agent_unbound, NULL), 403);
	/* never a spec, never a claim */
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards/shard-a?fieldManager=galactic-agent/node-a", NET, NS);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json", "{\"spec\":{\"drain\":true}}", agent_a, NULL), 403);
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshardclaims", NET, NS);
	ck_assert_int_eq(req("GET", path, NULL, NULL, agent_a, NULL), 403);
	/* the agent watches the shards where its Role is (the translator's shard namespace) */
	{
		json_t *ds, *args;
		bool has = false;

		snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/daemonsets/galactic-agent", NS);
		ds = kget(&cp, path, NULL);
		ck_assert_ptr_nonnull(ds);
		args = json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(
			ds, "spec"), "template"), "spec"), "containers"), 0), "command");
		for (i = 0; i < json_array_size(args); i++)
			has |= !strcmp(json_string_value(json_array_get(args, i)), "--egress-namespace=" NS);
		ck_assert_msg(has, "the agent does not watch the EgressShards of " NS);
		json_decref(ds);
	}
}
END_TEST
#undef SHARD_FMT
#undef STATUS_FMT

int main(void)
{
	Suite *s = suite_create("chart");
	TCase *tc = tcase_create("rbac");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_agent_token_is_bound_to_its_node);
	tcase_add_test(tc, test_agent_refused_on_networking_and_cloud);
	tcase_add_test(tc, test_agent_writes_only_its_own_node_reports);
	tcase_add_test(tc, test_unbound_agent_token_writes_nothing);
	tcase_add_test(tc, test_translator_writes_only_owned_status);
	tcase_add_test(tc, test_agent_node_ids_only_its_own);
	tcase_add_test(tc, test_agent_applies_its_nodedataplane_status);
	tcase_add_test(tc, test_agent_probes_use_its_health_endpoints);
	tcase_add_test(tc, test_agent_writes_only_its_shards_status);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
