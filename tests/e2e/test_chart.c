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
 *   - each ServiceAccount can do exactly what its component needs: a
 *     `kubectl auth can-i` matrix of allowed and refused requests, and its
 *     whole rule list (`can-i --list`) equal to the expected one.
 *   - the chart itself, with the real helm: `helm lint --strict` (every
 *     values file in charts/galactic/ci), `helm template` of each validated
 *     by the API server (server-side dry-run), values the schema refuses,
 *     the ServiceMonitor only where its API exists, and what the installed
 *     DaemonSet and Deployment say (probes, capabilities, init step,
 *     leader election, PodDisruptionBudget, anti-affinity, Services).
 * Requests retry while a freshly established CRD's storage answers 429/503.
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static struct cp cp;

/*
 * Every request retries while a new CRD's storage answers 429/503
 * (initializing): the CRDs are established moments before the tests run.
 */
static long req_retry(const char *method, const char *path, const char *ctype, const char *body,
		      const char *token, json_t **out)
{
	long code = 0;

	for (int i = 0; i < 100; i++) {
		if (out)
			*out = NULL;
		code = kreq(&cp, method, path, ctype, body, token, out);
		if (code != 429 && code != 503)
			break;
		if (out) {
			json_decref(*out);
			*out = NULL;
		}
		usleep(100 * 1000);
	}
	return code;
}
#define req(...) req_retry(__VA_ARGS__)

#define NS "galactic-system"
static char agent_a[4096];  /* token bound to a pod on node-a */
static char agent_unbound[4096];
static char translator[4096];

static const char *NET = "/apis/network.datumapis.com/v1alpha1";

static char kube_version[64]; /* the API server's gitVersion, for helm --kube-version */
#define CHART "charts/galactic"

/* Runs one of the control plane's CLIs (kubectl, helm) as the admin. */
static void cli(const char *tool, const char *args)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "%s/%s --kubeconfig %s %s >/dev/null", cp.bin, tool, cp.kubeconfig, args);
	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* Runs `TOOL ARGS` (stderr too) as the admin; its output in out, its exit status returned. */
static int run(const char *tool, const char *args, char *out, size_t n)
{
	char cmd[4096];
	size_t len = 0, r;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/%s --kubeconfig %s %s 2>&1", cp.bin, tool, cp.kubeconfig, args);
	f = popen(cmd, "r");
	ck_assert_msg(f, "popen %s", cmd);
	out[0] = 0;
	while (len + 1 < n && (r = fread(out + len, 1, n - 1 - len, f)) > 0)
		len += r;
	out[len] = 0;
	{
		char sink[4096];
		while (fread(sink, 1, sizeof(sink), f) > 0)
			;
	}
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* How many times needle occurs in hay. */
static int count(const char *hay, const char *needle)
{
	int c = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		c++;
	return c;
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

/*
 * helm template of each values file, validated by the API server before the
 * install (server-side dry-run: every object admitted as created, nothing
 * stored). setup() runs it; test_template_validated_by_the_api_server judges it.
 */
static const struct dry_want {
	const char *file;
	int objects, services, pdbs;
} dry_want[] = {
	/* SAs 2, Roles 3, RoleBindings 3, ClusterRoles 2, ClusterRoleBindings 2,
	 * policy + binding 2, DaemonSet, Deployment, PDB, Services 2 = 19 */
	{ "default-values", 19, 2, 1 },
	{ "bpf-values", 19, 2, 1 },
	{ "staged-values", 17, 0, 1 },
};
#define N_DRY (sizeof(dry_want) / sizeof(dry_want[0]))
static struct {
	int template_rc, apply_rc;
	char out[65536];
} dry[N_DRY];

static void dry_run_all(void)
{
	char args[1024], file[512];

	for (size_t i = 0; i < N_DRY; i++) {
		snprintf(file, sizeof(file), "%s/%s.yaml", cp.dir, dry_want[i].file);
		snprintf(args, sizeof(args), "template galactic " CHART " --namespace " NS " --kube-version %s -f " CHART "/ci/%s.yaml > %s",
			 kube_version, dry_want[i].file, file);
		dry[i].template_rc = run("helm", args, dry[i].out, sizeof(dry[i].out));
		if (dry[i].template_rc)
			continue;
		snprintf(args, sizeof(args), "apply --dry-run=server -f %s", file);
		dry[i].apply_rc = run("kubectl", args, dry[i].out, sizeof(dry[i].out));
	}
}

static void setup(void)
{
	char path[256], uid[64], body[1024];
	json_t *pod = NULL, *ni = NULL;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	ck_assert_msg(crds_install(&cp, NULL) == 0, "CRDs not established");
	{
		json_t *v = kget(&cp, "/version", NULL);

		ck_assert_ptr_nonnull(v);
		snprintf(kube_version, sizeof(kube_version), "%s", kstr(v, "gitVersion", NULL));
		json_decref(v);
	}
	cli("kubectl", "create namespace " NS);
	dry_run_all();
	cli("helm", "install galactic " CHART " --namespace " NS);

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
	ck_assert_int_eq(req("GET", "/apis/networking.datumapis.com/v1alpha/networkcontexts", NULL, NULL, translator, NULL), 200);
	ck_assert_int_eq(req("PATCH", "/apis/networking.datumapis.com/v1alpha/namespaces/default/networkcontexts/x",
			     "application/merge-patch+json", "{\"spec\":{}}", translator, NULL), 403);
	snprintf(path, sizeof(path), "%s/egressshardclaims", NET);
	ck_assert_int_eq(req("GET", path, NULL, NULL, translator, NULL), 200);
	snprintf(path, sizeof(path), "%s/namespaces/default/egressshardclaims?dryRun=All", NET);
	ck_assert_int_eq(req("POST", path, "application/json",
			     "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShardClaim\","
			     "\"metadata\":{\"name\":\"c1\"},\"spec\":{\"attachment\":{\"name\":\"c1\"},"
			     "\"vpc\":{\"name\":\"v\"},\"nodeName\":\"node-a\",\"families\":[\"IPv6\"]}}",
			     translator, NULL), 201);
	snprintf(path, sizeof(path), "%s/namespaces/%s/egressshards", NET, NS);
	ck_assert_int_eq(req("GET", path, NULL, NULL, translator, NULL), 200);
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

/* ---- the chart with the real helm ---- */

static const char *const values_files[] = { "default-values", "bpf-values", "staged-values", "monitoring-values" };

START_TEST(test_helm_lint_strict)
{
	static char out[65536];
	char args[1024];
	int rc;

	for (size_t i = 0; i < sizeof(values_files) / sizeof(values_files[0]); i++) {
		snprintf(args, sizeof(args), "lint --strict " CHART " --namespace " NS " --kube-version %s -f " CHART "/ci/%s.yaml",
			 kube_version, values_files[i]);
		rc = run("helm", args, out, sizeof(out));
		ck_assert_msg(rc == 0 && strstr(out, "1 chart(s) linted, 0 chart(s) failed"), "helm %s: %d\n%.1500s", args, rc, out);
		ck_assert_msg(!strstr(out, "[WARNING]") && !strstr(out, "[ERROR]"), "helm %s:\n%.1500s", args, out);
	}
}
END_TEST

START_TEST(test_template_validated_by_the_api_server)
{
	static char out[262144];
	char args[1024];

	for (size_t i = 0; i < N_DRY; i++) {
		const char *o = dry[i].out;

		ck_assert_msg(dry[i].template_rc == 0, "helm template -f %s: %d\n%.1500s", dry_want[i].file, dry[i].template_rc, o);
		ck_assert_msg(dry[i].apply_rc == 0, "kubectl apply --dry-run=server (%s): %d\n%.1500s", dry_want[i].file,
			      dry[i].apply_rc, o);
		ck_assert_msg(count(o, "created (server dry run)") == dry_want[i].objects, "%s: %d objects admitted, want %d\n%.1500s",
			      dry_want[i].file, count(o, "created (server dry run)"), dry_want[i].objects, o);
		ck_assert_int_eq(count(o, "service/"), dry_want[i].services);
		ck_assert_int_eq(count(o, "poddisruptionbudget.policy/"), dry_want[i].pdbs);
	}
	/* what the values changed, in the validated objects */
	snprintf(args, sizeof(args), "template galactic " CHART " --namespace " NS " --kube-version %s -f " CHART "/ci/bpf-values.yaml",
		 kube_version);
	ck_assert_int_eq(run("helm", args, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "image: registry.invalid/platform/galactic-agent:0.1.0"), "%.1500s", out);
	ck_assert_msg(strstr(out, "image: registry.invalid/platform/galactic-translator:0.1.0"), "translator image");
	ck_assert_msg(strstr(out, "--backend=bpf") && !strstr(out, "--fallback"), "bpf, no fallback");
	ck_assert_msg(!strstr(out, "--learn-unlabelled-reports"), "unlabelled reports learned only when asked");
	ck_assert_msg(strstr(out, "type: OnDelete"), "update strategy");
	ck_assert_msg(strstr(out, "network.example/srv6: \"true\""), "node selector");
	ck_assert_msg(strstr(out, "name: platform-pull"), "pull secret");
	snprintf(args, sizeof(args), "template galactic " CHART " --namespace " NS " --kube-version %s -f " CHART "/ci/staged-values.yaml",
		 kube_version);
	ck_assert_int_eq(run("helm", args, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "--no-egress") && !strstr(out, "--egress-shard-namespace"), "egress off");
	ck_assert_msg(strstr(out, "--leave-to-incumbent=vpcattachment.status.hostInterface,vpcattachment.conditions.Programmed"),
		      "leave to incumbent");
	ck_assert_msg(strstr(out, "requiredDuringSchedulingIgnoredDuringExecution"), "required anti-affinity");
	ck_assert_msg(strstr(out, "resourceNames: [galactic-translator-staged]") &&
		      strstr(out, "--lease-name=galactic-translator-staged"), "the Role names the lease the translator uses");
	ck_assert_msg(strstr(out, "--name=galactic-cni") && !strstr(out, "--name=galactic-veth"), "only galactic-cni installed");
	/* the upgrade from agents before the VPC label (docs/dataplane-reports.md, "Upgrade") */
	snprintf(args, sizeof(args), "template galactic " CHART " --namespace " NS " --kube-version %s --set "
		 "agent.learnUnlabelledReports=true", kube_version);
	ck_assert_int_eq(run("helm", args, out, sizeof(out)), 0);
	ck_assert_int_eq(count(out, "- --learn-unlabelled-reports"), 1);
}
END_TEST

/* The schema refuses what the templates could not use, before anything reaches the cluster. */
START_TEST(test_schema_refuses_bad_values)
{
	static char out[65536];
	static const struct {
		const char *set, *msg;
	} bad[] = {
		{ "agent.backend=ebpf", "/agent/backend" },
		{ "translator.replicas=0", "/translator/replicas" },
		{ "translator.workers=17", "/translator/workers" },
		{ "agent.capabilities={NET_ADMIN,SYS_MODULE}", "/agent/capabilities" },
		{ "agent.cniNames={galactic/veth}", "/agent/cniNames" },
		{ "agent.cniBinDir=opt/cni/bin", "/agent/cniBinDir" },
		{ "translator.antiAffinity=sometimes", "/translator/antiAffinity" },
		{ "agent.metricsPort=70000", "/agent/metricsPort" },
		{ "agent.unknownKey=1", "unknownKey" },
		{ "metrics.serviceMonitor.interval=often", "/metrics/serviceMonitor/interval" },
	};
	char args[1024];
	int rc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), "template galactic " CHART " --namespace " NS " --kube-version %s --set '%s'",
			 kube_version, bad[i].set);
		rc = run("helm", args, out, sizeof(out));
		ck_assert_msg(rc != 0 && strstr(out, "schema") && strstr(out, bad[i].msg), "--set %s: exit %d\n%.1500s",
			      bad[i].set, rc, out);
	}
	/* and kubeVersion: older clusters are refused by name */
	rc = run("helm", "template galactic " CHART " --namespace " NS " --kube-version 1.29.0", out, sizeof(out));
	ck_assert_msg(rc != 0 && strstr(out, "kubeVersion: >=1.30.0-0"), "%.1500s", out);
}
END_TEST

/* A ServiceMonitor only where its API is served; its selectors match the metrics Services. */
START_TEST(test_servicemonitor_needs_its_api)
{
	static char out[262144];
	char args[1024];
	int rc;

	snprintf(args, sizeof(args), "template galactic " CHART " --namespace " NS " --kube-version %s -f " CHART "/ci/monitoring-values.yaml",
		 kube_version);
	rc = run("helm", args, out, sizeof(out));
	ck_assert_msg(rc != 0 && strstr(out, "needs the ServiceMonitor API"), "%.1500s", out);
	/* the test control plane has no Prometheus Operator: an install would be refused the same way */
	rc = run("helm", "upgrade galactic " CHART " --namespace " NS " --dry-run=server -f " CHART "/ci/monitoring-values.yaml",
		 out, sizeof(out));
	ck_assert_msg(rc != 0 && strstr(out, "needs the ServiceMonitor API"), "%.1500s", out);
	snprintf(args, sizeof(args), "template galactic " CHART " --namespace " NS " --kube-version %s -f " CHART
		 "/ci/monitoring-values.yaml --api-versions monitoring.coreos.com/v1/ServiceMonitor", kube_version);
	ck_assert_int_eq(run("helm", args, out, sizeof(out)), 0);
	ck_assert_int_eq(count(out, "kind: ServiceMonitor"), 2);
	ck_assert_int_eq(count(out, "release: prometheus"), 2);
	ck_assert_int_eq(count(out, "interval: 15s"), 2);
	ck_assert_int_eq(count(out, "matchLabels: {app.kubernetes.io/name: galactic-agent, app.kubernetes.io/component: agent}"), 1);
	ck_assert_int_eq(count(out, "matchLabels: {app.kubernetes.io/name: galactic-translator, app.kubernetes.io/component: translator}"), 1);
}
END_TEST

static bool has_str(const json_t *arr, const char *want)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), want))
			return true;
	return false;
}

#define J(o, k) json_object_get((o), (k))

/* What the install created: the workloads as values.yaml documents them. */
START_TEST(test_installed_workloads)
{
	char path[256];
	json_t *ds, *spec, *c, *init, *caps, *vols, *v, *dep, *dspec, *pdb, *svc;
	size_t i;
	bool bpffs = false, cnibin = false;

	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/daemonsets/galactic-agent", NS);
	ds = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(ds);
	ck_assert_str_eq(kstr(J(J(ds, "spec"), "updateStrategy"), "type", NULL), "RollingUpdate");
	spec = J(J(J(ds, "spec"), "template"), "spec");
	ck_assert(json_is_true(J(spec, "hostNetwork")));
	ck_assert_str_eq(kstr(J(spec, "nodeSelector"), "kubernetes.io/os", NULL), "linux");
	ck_assert_str_eq(kstr(json_array_get(J(spec, "tolerations"), 0), "operator", NULL), "Exists");
	ck_assert_str_eq(kstr(spec, "serviceAccountName", NULL), "galactic-agent");
	c = json_array_get(J(spec, "containers"), 0);
	ck_assert_str_eq(kstr(c, "image", NULL), "galactic-agent:0.1.0");
	caps = J(J(c, "securityContext"), "capabilities");
	ck_assert_uint_eq(json_array_size(J(caps, "add")), 4);
	ck_assert(has_str(J(caps, "add"), "NET_ADMIN") && has_str(J(caps, "add"), "SYS_ADMIN") &&
		  has_str(J(caps, "add"), "BPF") && has_str(J(caps, "add"), "PERFMON"));
	ck_assert(has_str(J(caps, "drop"), "ALL"));
	ck_assert(json_is_false(J(J(c, "securityContext"), "privileged")));
	ck_assert(json_is_true(J(J(c, "securityContext"), "readOnlyRootFilesystem")));
	/* the init step: the atomic installer, every upstream name, no capability */
	init = json_array_get(J(spec, "initContainers"), 0);
	ck_assert_str_eq(kstr(init, "image", NULL), "galactic-agent:0.1.0");
	ck_assert(has_str(J(init, "command"), "/usr/local/bin/galactic-cni-install"));
	ck_assert(has_str(J(init, "command"), "--to=/host/opt/cni/bin"));
	ck_assert(has_str(J(init, "command"), "--from=/usr/local/bin/galactic-cni"));
	for (i = 0; i < 4; i++) {
		static const char *const names[] = { "galactic-cni", "galactic-veth", "galactic-bgp", "galactic-tap" };
		char arg[64];

		snprintf(arg, sizeof(arg), "--name=%s", names[i]);
		ck_assert_msg(has_str(J(init, "command"), arg), "init step lacks %s", arg);
	}
	ck_assert(has_str(J(J(J(init, "securityContext"), "capabilities"), "drop"), "ALL"));
	ck_assert_ptr_null(J(J(J(init, "securityContext"), "capabilities"), "add"));
	/* host paths: bpffs and the CNI bin directory; no host netns directory, no conf directory */
	vols = J(spec, "volumes");
	json_array_foreach(vols, i, v) {
		const char *hp = kstr(J(v, "hostPath"), "path", NULL);

		ck_assert_ptr_nonnull(hp);
		bpffs |= !strcmp(hp, "/sys/fs/bpf");
		cnibin |= !strcmp(hp, "/opt/cni/bin");
		ck_assert_msg(strcmp(hp, "/var/run/netns") && strcmp(hp, "/etc/cni/net.d") && strcmp(hp, "/proc"),
			      "the agent mounts %s", hp);
	}
	ck_assert(bpffs && cnibin);
	json_decref(ds);

	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/deployments/galactic-translator", NS);
	dep = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(dep);
	ck_assert_int_eq(json_integer_value(J(J(dep, "spec"), "replicas")), 2);
	dspec = J(J(J(dep, "spec"), "template"), "spec");
	ck_assert(json_is_true(J(J(dspec, "securityContext"), "runAsNonRoot")));
	ck_assert_int_eq(json_integer_value(J(J(dspec, "securityContext"), "runAsUser")), 65532);
	ck_assert_ptr_nonnull(J(J(J(dspec, "affinity"), "podAntiAffinity"), "preferredDuringSchedulingIgnoredDuringExecution"));
	c = json_array_get(J(dspec, "containers"), 0);
	ck_assert_str_eq(kstr(c, "image", NULL), "galactic-translator:0.1.0");
	ck_assert(has_str(J(c, "command"), "--lease-name=galactic-translator"));
	ck_assert(has_str(J(c, "command"), "--lease-namespace=" NS));
	ck_assert(has_str(J(c, "command"), "--egress-shard-namespace=" NS));
	ck_assert_str_eq(kstr(J(J(c, "readinessProbe"), "httpGet"), "path", NULL), "/readyz");
	ck_assert_str_eq(kstr(J(J(c, "livenessProbe"), "httpGet"), "path", NULL), "/healthz");
	ck_assert_ptr_nonnull(J(J(c, "resources"), "requests"));
	ck_assert(has_str(J(J(J(c, "securityContext"), "capabilities"), "drop"), "ALL"));
	json_decref(dep);

	snprintf(path, sizeof(path), "/apis/policy/v1/namespaces/%s/poddisruptionbudgets/galactic-translator", NS);
	pdb = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(pdb);
	ck_assert_int_eq(json_integer_value(J(J(pdb, "spec"), "minAvailable")), 1);
	ck_assert_str_eq(kstr(J(J(J(pdb, "spec"), "selector"), "matchLabels"), "app.kubernetes.io/name", NULL),
			 "galactic-translator");
	json_decref(pdb);

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services/galactic-agent-metrics", NS);
	svc = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(svc);
	ck_assert_str_eq(kstr(J(svc, "spec"), "clusterIP", NULL), "None");
	ck_assert_int_eq(json_integer_value(J(json_array_get(J(J(svc, "spec"), "ports"), 0), "port")), 9471);
	json_decref(svc);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services/galactic-translator-metrics", NS);
	svc = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(svc);
	ck_assert_int_eq(json_integer_value(J(json_array_get(J(J(svc, "spec"), "ports"), 0), "port")), 8080);
	json_decref(svc);
}
END_TEST

/* NOTES.txt, as helm shows it after the install: what to check next, with the release's names. */
START_TEST(test_notes_tell_what_to_check)
{
	static char out[65536];
	static const char *const want[] = {
		"kubectl apply -f crds/",
		"kubectl -n " NS " rollout status daemonset/galactic-agent",
		"kubectl get nodedataplanes",
		"galactic-cni, galactic-veth, galactic-bgp, galactic-tap",
		"/opt/cni/bin",
		"logs POD -c install-cni",
		"kubectl -n " NS " rollout status deployment/galactic-translator",
		"get lease galactic-translator",
		"kubectl get egressshardclaims -A",
		"galactic-agent-metrics (headless, port 9471",
		"galactic-translator-metrics (port 8080)",
	};
	int rc = run("helm", "get notes galactic --namespace " NS, out, sizeof(out));

	ck_assert_msg(rc == 0, "helm get notes: %d\n%.1500s", rc, out);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(out, want[i]), "NOTES lack '%s':\n%.1500s", want[i], out);
	/* the staged values change what it says (an upgrade's server dry run renders the notes, stores nothing) */
	rc = run("helm", "upgrade galactic " CHART " --namespace " NS " --dry-run=server -f " CHART "/ci/staged-values.yaml",
		 out, sizeof(out));
	ck_assert_msg(rc == 0, "notes of the staged values: %d\n%.1500s", rc, out);
	ck_assert_msg(strstr(out, "Egress binding is off") && strstr(out, "no metrics Services") &&
		      strstr(out, "Left to their incumbent writers: vpcattachment.status.hostInterface") &&
		      strstr(out, "get lease galactic-translator-staged"), "staged NOTES:\n%.1500s", out);
}
END_TEST

/* ---- least privilege: kubectl auth can-i, as each ServiceAccount ---- */

#define AGENT_SA "system:serviceaccount:" NS ":galactic-agent"
#define XLATE_SA "system:serviceaccount:" NS ":galactic-translator"
#define NETR ".network.datumapis.com"

static const struct can {
	const char *sa, *ns, *verb, *res;
	bool yes;
} matrix[] = {
	/* the agent: its reports, its node's objects (admission narrows them to its node) */
	{ AGENT_SA, NS, "get,list,watch,create,patch,delete", "nodeattachments" NETR, true },
	{ AGENT_SA, NS, "patch", "nodeattachments" NETR "/status", true },
	{ AGENT_SA, NS, "update", "nodeattachments" NETR, false },
	{ AGENT_SA, NS, "update", "nodeattachments" NETR "/status", false },
	{ AGENT_SA, "default", "get,list,create", "nodeattachments" NETR, false },
	{ AGENT_SA, NULL, "get,list,watch", "nodedataplanes" NETR, true },
	{ AGENT_SA, NULL, "patch", "nodedataplanes" NETR "/status", true },
	{ AGENT_SA, NULL, "create,update,patch,delete", "nodedataplanes" NETR, false },
	{ AGENT_SA, NULL, "get,list,watch,create,delete", "nodeids" NETR, true },
	{ AGENT_SA, NULL, "update,patch", "nodeids" NETR, false },
	{ AGENT_SA, NS, "get,list,watch", "egressshards" NETR, true },
	{ AGENT_SA, NS, "patch", "egressshards" NETR "/status", true },
	{ AGENT_SA, NS, "create,update,patch,delete", "egressshards" NETR, false },
	{ AGENT_SA, "default", "get,list", "egressshards" NETR, false },
	{ AGENT_SA, NS, "get,list,create,patch", "egressshardclaims" NETR, false },
	{ AGENT_SA, NULL, "get,list,patch", "vpcattachments.cloud.datumapis.com", false },
	{ AGENT_SA, NULL, "patch", "vpcattachments.cloud.datumapis.com/status", false },
	{ AGENT_SA, NULL, "get,list", "networkinterfaces.networking.datumapis.com", false },
	{ AGENT_SA, NULL, "get,list", "networkcontexts.networking.datumapis.com", false },
	{ AGENT_SA, NS, "get,list,create", "leases.coordination.k8s.io", false },
	{ AGENT_SA, NS, "get,list,create", "secrets", false },
	{ AGENT_SA, NS, "get,list,create,delete", "pods", false },
	{ AGENT_SA, NULL, "get", "nodes", true }, /* its Node: the reports' owner */
	{ AGENT_SA, NULL, "list,watch,create,update,patch,delete", "nodes", false },
	{ AGENT_SA, NULL, "patch", "nodes/status", false },
	{ AGENT_SA, NS, "create", "events", false },
	{ AGENT_SA, NULL, "get,create", "customresourcedefinitions.apiextensions.k8s.io", false },
	{ AGENT_SA, NULL, "create,delete", "validatingadmissionpolicies.admissionregistration.k8s.io", false },
	/* the translator: reads reports and upstream objects, writes only the status it owns */
	{ XLATE_SA, NULL, "get,list,watch", "nodeattachments" NETR, true },
	{ XLATE_SA, NULL, "create,patch,delete", "nodeattachments" NETR, false },
	{ XLATE_SA, NULL, "patch", "nodeattachments" NETR "/status", false },
	{ XLATE_SA, NULL, "get,list,watch", "nodedataplanes" NETR, true },
	{ XLATE_SA, NULL, "patch", "nodedataplanes" NETR "/status", false },
	{ XLATE_SA, NULL, "get,create,delete", "nodeids" NETR, false },
	{ XLATE_SA, NULL, "get,list,watch,patch", "egressshards" NETR, true },
	{ XLATE_SA, NULL, "create,update,delete", "egressshards" NETR, false },
	{ XLATE_SA, NULL, "patch", "egressshards" NETR "/status", false },
	{ XLATE_SA, NULL, "get,list,watch,create,patch,delete", "egressshardclaims" NETR, true },
	{ XLATE_SA, NULL, "patch", "egressshardclaims" NETR "/status", true },
	{ XLATE_SA, NULL, "get,list,watch", "vpcattachments.cloud.datumapis.com", true },
	{ XLATE_SA, NULL, "create,update,patch,delete", "vpcattachments.cloud.datumapis.com", false },
	{ XLATE_SA, NULL, "patch", "vpcattachments.cloud.datumapis.com/status", true },
	{ XLATE_SA, NULL, "update", "vpcattachments.cloud.datumapis.com/status", false },
	{ XLATE_SA, NULL, "get,list,watch", "networkinterfaces.networking.datumapis.com", true },
	{ XLATE_SA, NULL, "get,list,watch", "networkinterfaceclaims.networking.datumapis.com", true },
	{ XLATE_SA, NULL, "get,list,watch", "networkcontexts.networking.datumapis.com", true },
	{ XLATE_SA, NULL, "create,patch,delete", "networkinterfaces.networking.datumapis.com", false },
	{ XLATE_SA, NULL, "patch,delete", "networkcontexts.networking.datumapis.com", false },
	{ XLATE_SA, NULL, "patch", "networkinterfaces.networking.datumapis.com/status", true },
	{ XLATE_SA, NULL, "patch", "networkinterfaceclaims.networking.datumapis.com/status", true },
	{ XLATE_SA, NULL, "patch", "networkcontexts.networking.datumapis.com/status", false },
	{ XLATE_SA, NULL, "get,list,watch", "customresourcedefinitions.apiextensions.k8s.io", true },
	{ XLATE_SA, NULL, "create,update,patch,delete", "customresourcedefinitions.apiextensions.k8s.io", false },
	{ XLATE_SA, "default", "create", "events", true },
	{ XLATE_SA, "default", "update,patch,delete", "events", false },
	{ XLATE_SA, NS, "create", "leases.coordination.k8s.io", true },
	{ XLATE_SA, NS, "get,update", "leases.coordination.k8s.io/galactic-translator", true },
	{ XLATE_SA, NS, "delete,patch", "leases.coordination.k8s.io/galactic-translator", false },
	{ XLATE_SA, NS, "get,update", "leases.coordination.k8s.io/another-lease", false },
	{ XLATE_SA, NS, "list,watch", "leases.coordination.k8s.io", false },
	{ XLATE_SA, "default", "create", "leases.coordination.k8s.io", false },
	{ XLATE_SA, NS, "get,list,create", "secrets", false },
	{ XLATE_SA, NS, "get,list,create", "pods", false },
	{ XLATE_SA, NULL, "get,list", "nodes", false },
	{ XLATE_SA, NS, "get,list", "configmaps", false },
};

/* One SubjectAccessReview as the ServiceAccount (its user and groups, as
 * kubectl's --as impersonation presents it): 1 allowed, 0 denied, -1 error. */
static int sar(const struct can *c, const char *verb)
{
	char res[256], body[2048], user_ns[128];
	const char *group = "", *sub = "", *name = "";
	char *slash, *dot;
	json_t *r = NULL;
	long code;
	int ok;

	snprintf(res, sizeof(res), "%s", c->res);
	slash = strchr(res, '/');
	if (slash) {
		*slash = 0;
		if (!strcmp(slash + 1, "status"))
			sub = "status";
		else
			name = slash + 1;
	}
	dot = strchr(res, '.');
	if (dot) {
		*dot = 0;
		group = dot + 1;
	}
	/* "system:serviceaccount:NS:NAME" -> its namespace group */
	snprintf(user_ns, sizeof(user_ns), "%s", c->sa + strlen("system:serviceaccount:"));
	*strchr(user_ns, ':') = 0;
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\",\"spec\":{\"user\":\"%s\","
		 "\"groups\":[\"system:serviceaccounts\",\"system:serviceaccounts:%s\",\"system:authenticated\"],"
		 "\"resourceAttributes\":{\"namespace\":\"%s\",\"verb\":\"%s\",\"group\":\"%s\",\"resource\":\"%s\","
		 "\"subresource\":\"%s\",\"name\":\"%s\"}}}",
		 c->sa, user_ns, c->ns ? c->ns : "", verb, group, res, sub, name);
	code = req("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json", body, NULL, &r);
	ok = code == 201 ? json_is_true(json_object_get(json_object_get(r, "status"), "allowed")) : -1;
	json_decref(r);
	return ok;
}

/* The same question through `kubectl auth can-i --as`: 1 yes, 0 no, -1 error. */
static int kubectl_can_i(const struct can *c, const char *verb)
{
	static char out[4096];
	char args[1024], res[256], *slash;
	bool sub;
	int rc;

	/* TYPE/status is the subresource; TYPE/NAME a resource name (kubectl's form) */
	snprintf(res, sizeof(res), "%s", c->res);
	slash = strrchr(res, '/');
	sub = slash && !strcmp(slash, "/status");
	if (sub)
		*slash = 0;
	snprintf(args, sizeof(args), "auth can-i %s %s%s --as=%s %s%s", verb, res, sub ? " --subresource=status" : "",
		 c->sa, c->ns ? "-n " : "", c->ns ? c->ns : "");
	rc = run("kubectl", args, out, sizeof(out));
	if (rc != 0 && rc != 1)
		fprintf(stderr, "kubectl %s: exit %d\n%s", args, rc, out);
	return rc == 0 ? 1 : rc == 1 ? 0 : -1;
}

/*
 * Every (ServiceAccount, namespace, verb, resource) of the matrix asked as a
 * SubjectAccessReview (the question `kubectl auth can-i` asks; milliseconds
 * each), and one verb of every third row through `kubectl auth can-i`
 * itself, which must answer the same (all 153 through kubectl took 76 s
 * once on this machine's two shared cores under load; 21 take 3-10 s).
 */
START_TEST(test_can_i_matrix)
{
	char verbs[128], *save, *verb;
	int n = 0, nk = 0, wrong = 0;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < sizeof(matrix) / sizeof(matrix[0]); i++) {
		bool first = true;

		snprintf(verbs, sizeof(verbs), "%s", matrix[i].verb);
		for (verb = strtok_r(verbs, ",", &save); verb; verb = strtok_r(NULL, ",", &save), first = false) {
			int got = sar(&matrix[i], verb);

			n++;
			if (got != (int)matrix[i].yes) {
				fprintf(stderr, "can-i: %s %s %s -n %s: %d, want %s\n", matrix[i].sa, verb, matrix[i].res,
					matrix[i].ns ? matrix[i].ns : "(all)", got, matrix[i].yes ? "yes" : "no");
				wrong++;
			}
			if (first && i % 3 == 0) {
				int k = kubectl_can_i(&matrix[i], verb);

				nk++;
				if (k != got) {
					fprintf(stderr, "can-i: kubectl auth can-i %s %s as %s: %d, the review said %d\n", verb,
						matrix[i].res, matrix[i].sa, k, got);
					wrong++;
				}
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "can-i: %d questions (%d also through kubectl auth can-i), %d answered otherwise than expected (%.1f s)\n",
		n, nk, wrong, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	ck_assert_int_eq(wrong, 0);
	ck_assert_int_gt(n, 150);
}
END_TEST

/*
 * Nothing more: each ServiceAccount's whole rule list (kubectl auth can-i
 * --list, in the release's namespace and in another) is exactly the expected
 * one, once the rules every authenticated user gets (self reviews,
 * discovery URLs) are set aside.
 */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void rules_of(const char *sa, const char *ns, char *got, size_t n)
{
	static char out[65536];
	static char rows[128][512];
	char *sorted[128];
	char args[512], *save, *line;
	size_t len = 0, nr = 0;
	int rc;

	snprintf(args, sizeof(args), "auth can-i --list --as=%s -n %s --no-headers", sa, ns);
	rc = run("kubectl", args, out, sizeof(out));
	ck_assert_msg(rc == 0, "kubectl %s: %d\n%.1500s", args, rc, out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char res[256] = "";
		char *p = line, *c1, *o2, *c2, *o3, *c3;

		/* columns: Resources, Non-Resource URLs, Resource Names, Verbs (aligned by spaces) */
		if (sscanf(p, "%255s", res) != 1 || res[0] == '/' || res[0] == '[')
			continue; /* a non-resource URL row */
		if (strstr(res, "selfsubject"))
			continue; /* every authenticated user's */
		p = strchr(p, '[');
		c1 = p ? strchr(p, ']') : NULL;
		o2 = c1 ? strchr(c1, '[') : NULL;
		c2 = o2 ? strchr(o2, ']') : NULL;
		o3 = c2 ? strchr(c2, '[') : NULL;
		c3 = o3 ? strchr(o3, ']') : NULL;
		ck_assert_msg(c3 && nr < 128, "row: %s", line);
		/* [] (no URLs), then [names] and [verbs] */
		snprintf(rows[nr], sizeof(rows[nr]), "%s %.*s %.*s\n", res, (int)(c2 - o2 + 1), o2, (int)(c3 - o3 + 1), o3);
		sorted[nr] = rows[nr];
		nr++;
	}
	qsort(sorted, nr, sizeof(sorted[0]), cmp_str);
	got[0] = 0;
	for (size_t i = 0; i < nr; i++) {
		len += (size_t)snprintf(got + len, n - len, "%s", sorted[i]);
		ck_assert_uint_lt(len, n);
	}
}

START_TEST(test_rules_are_exactly_these)
{
	static char got[16384];
	static const struct {
		const char *sa, *ns, *want;
	} cases[] = {
		{ AGENT_SA, NS,
		  "egressshards.network.datumapis.com [] [get list watch]\n"
		  "egressshards.network.datumapis.com/status [] [patch]\n"
		  "nodeattachments.network.datumapis.com [] [get list watch create patch delete]\n"
		  "nodeattachments.network.datumapis.com/status [] [patch]\n"
		  "nodedataplanes.network.datumapis.com [] [get list watch]\n"
		  "nodedataplanes.network.datumapis.com/status [] [patch]\n"
		  "nodeids.network.datumapis.com [] [get list watch create delete]\n"
		  "nodes [] [get]\n" },
		{ AGENT_SA, "default",
		  "nodedataplanes.network.datumapis.com [] [get list watch]\n"
		  "nodedataplanes.network.datumapis.com/status [] [patch]\n"
		  "nodeids.network.datumapis.com [] [get list watch create delete]\n"
		  "nodes [] [get]\n" },
		{ XLATE_SA, NS,
		  "customresourcedefinitions.apiextensions.k8s.io [] [get list watch]\n"
		  "egressshardclaims.network.datumapis.com [] [get list watch create patch delete]\n"
		  "egressshardclaims.network.datumapis.com/status [] [patch]\n"
		  "egressshards.network.datumapis.com [] [get list watch patch]\n"
		  "events [] [create]\n"
		  "leases.coordination.k8s.io [] [create]\n"
		  "leases.coordination.k8s.io [galactic-translator] [get update]\n"
		  "networkcontexts.networking.datumapis.com [] [get list watch]\n"
		  "networkinterfaceclaims.networking.datumapis.com [] [get list watch]\n"
		  "networkinterfaceclaims.networking.datumapis.com/status [] [patch]\n"
		  "networkinterfaces.networking.datumapis.com [] [get list watch]\n"
		  "networkinterfaces.networking.datumapis.com/status [] [patch]\n"
		  "nodeattachments.network.datumapis.com [] [get list watch]\n"
		  "nodedataplanes.network.datumapis.com [] [get list watch]\n"
		  "vpcattachments.cloud.datumapis.com [] [get list watch]\n"
		  "vpcattachments.cloud.datumapis.com/status [] [patch]\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rules_of(cases[i].sa, cases[i].ns, got, sizeof(got));
		ck_assert_msg(!strcmp(got, cases[i].want), "%s in %s: rules\n%s\nwant\n%.1500s", cases[i].sa, cases[i].ns, got,
			      cases[i].want);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("chart");
	TCase *tc = tcase_create("rbac");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_agent_token_is_bound_to_its_node);
	tcase_add_test(tc, test_agent_refused_on_networking_and_cloud);
	tcase_add_test(tc, test_agent_writes_only_its_own_node_reports);
	tcase_add_test(tc, test_unbound_agent_token_writes_nothing);
	tcase_add_test(tc, test_translator_writes_only_owned_status);
	tcase_add_test(tc, test_agent_node_ids_only_its_own);
	tcase_add_test(tc, test_agent_applies_its_nodedataplane_status);
	tcase_add_test(tc, test_agent_probes_use_its_health_endpoints);
	tcase_add_test(tc, test_agent_writes_only_its_shards_status);
	tcase_add_test(tc, test_helm_lint_strict);
	tcase_add_test(tc, test_template_validated_by_the_api_server);
	tcase_add_test(tc, test_schema_refuses_bad_values);
	tcase_add_test(tc, test_servicemonitor_needs_its_api);
	tcase_add_test(tc, test_installed_workloads);
	tcase_add_test(tc, test_notes_tell_what_to_check);
	tcase_add_test(tc, test_can_i_matrix);
	tcase_add_test(tc, test_rules_are_exactly_these);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
