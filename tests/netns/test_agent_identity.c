/*
 * galactic-agent's identity from the API and its health endpoints, on a real
 * kube-apiserver, with the agent binary on network-namespace nodes:
 *
 *   n1, n2: pods a1 (vpcA fd00:a::1) and a2 (vpcA fd00:a::2)
 *
 *   - n3 starts from an empty state directory with no NodeDataplane: it
 *     programs nothing, says why, /readyz is 503 (identity); once the
 *     operator creates its NodeDataplane it gets an ID from the API and
 *     becomes ready, and its NodeDataplane status says so;
 *   - n1 and n2 start with records whose node IDs are wrong (101, 102) and
 *     NodeDataplanes pinning 1 and 2 (the IDs the other node's routes use):
 *     traffic flows only once the API's identity is in the record and applied;
 *   - n1 restarted while the API server is down keeps its identity (from its
 *     record), is ready and carries traffic;
 *   - on the bpf backend, /readyz is 503 while the uplink program is
 *     detached, and 200 again once the agent has put it back.
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "tests/lib/cp.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/topo.h"

static struct topo T;
static struct cp cp;
static char skip_why[256];
static bool bpf;
static int port[4];
static char nodename[4][64];
static const char *NET = "/apis/network.datumapis.com/v1alpha1";

static void agent_args(int node, char *buf, size_t n)
{
	char b[200] = "--backend kernel";

	if (bpf)
		snprintf(b, sizeof(b), "--backend bpf --bpffs /sys/fs/bpf/%s-n%d", T.prefix, node);
	snprintf(buf, n, "%s --kubeconfig %s --node %s --report-namespace galactic-system "
		 "--metrics-addr 127.0.0.1:%d --verify-interval 0.3 --interval 30", b, cp.kubeconfig, nodename[node], port[node]);
}

static void start(int node)
{
	char args[1200];

	agent_args(node, args, sizeof(args));
	ck_assert_int_gt(topo_agent_start(&T, node, args), 0);
}

/* Polls /readyz of node until it answers want (up to secs); returns the last code. */
static long wait_ready(int node, long want, double secs)
{
	double t0 = gt_now();
	long code = 0;

	while (gt_now() - t0 < secs) {
		code = gt_http_get(port[node], "/readyz", NULL);
		if (code == want)
			break;
		usleep(50 * 1000);
	}
	return code;
}

static void make_ndp(int node, int pin)
{
	char path[256], body[512];
	long code = 0;

	snprintf(path, sizeof(path), "%s/nodedataplanes", NET);
	if (pin)
		snprintf(body, sizeof(body), "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
			 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"sidBlock\":\"fcbb:bb00:1::/48\",\"nodeID\":%d,"
			 "\"uplinks\":[\"up0\"]}}", nodename[node], pin);
	else
		snprintf(body, sizeof(body), "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
			 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"sidBlock\":\"fcbb:bb00:1::/48\",\"uplinks\":[\"up0\"]}}",
			 nodename[node]);
	for (int i = 0; i < 100; i++) {
		code = kreq(&cp, "POST", path, "application/json", body, NULL, NULL);
		if (code != 404 && code != 429 && code != 503)
			break;
		usleep(100 * 1000);
	}
	ck_assert_int_eq(code, 201);
}

static json_t *wait_cond(int node, const char *type, const char *status, double secs)
{
	char path[256];
	double t0 = gt_now();

	snprintf(path, sizeof(path), "%s/nodedataplanes/%s", NET, nodename[node]);
	while (gt_now() - t0 < secs) {
		json_t *o = kget(&cp, path, NULL);
		const char *st = kstr(kcond(o, type), "status", NULL);

		if (st && !strcmp(st, status))
			return o;
		json_decref(o);
		usleep(100 * 1000);
	}
	ck_abort_msg("NodeDataplane %s: %s never became %s", nodename[node], type, status);
	return NULL;
}

static long ping(const char *pod, const char *dst, int count)
{
	char out[64];

	topo_out(out, sizeof(out),
		 "ip netns exec %s-%s ping -q -c %d -i 0.05 -W 1 %s | sed -n 's/.* \\([0-9]*\\) received.*/\\1/p'",
		 T.prefix, pod, count, dst);
	return out[0] ? atol(out) : -1;
}

static void setup(void)
{
	char cmd[1024];

	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces");
		return;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	bpf = topo_sh("build/rel/bin/galactic-bpf preflight --bpffs /sys/fs/bpf/galactic-preflight-%d "
		      ">/dev/null 2>&1", (int)getpid()) == 0;
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	snprintf(cmd, sizeof(cmd),
		 "%s/kubectl --kubeconfig %s apply -f crds/ >/dev/null && "
		 "%s/kubectl --kubeconfig %s wait --for condition=Established crd --all --timeout 60s >/dev/null && "
		 "%s/kubectl --kubeconfig %s create namespace galactic-system >/dev/null",
		 cp.bin, cp.kubeconfig, cp.bin, cp.kubeconfig, cp.bin, cp.kubeconfig);
	ck_assert_msg(system(cmd) == 0, "CRDs not established");
	ck_assert_int_eq(topo_up(&T, 3), 0);
	for (int i = 1; i <= 3; i++) {
		snprintf(nodename[i], sizeof(nodename[i]), "%s-n%d", T.prefix, i);
		port[i] = gt_free_port();
	}
	ck_assert_int_ge(topo_add_pod(&T, 1, "a1", TOPO_VPC_A, "fd00:a::1", "10.1.0.1"), 0);
	ck_assert_int_ge(topo_add_pod(&T, 2, "a2", TOPO_VPC_A, "fd00:a::2", "10.1.0.2"), 0);
	printf("backend: %s\n", bpf ? "bpf" : "kernel (bpf preflight refused)");
}

static void teardown(void)
{
	char prefix[sizeof(T.prefix)];

	snprintf(prefix, sizeof(prefix), "%s", T.prefix);
	if (T.nodes)
		topo_down(&T);
	if (prefix[0])
		topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2 /sys/fs/bpf/%s-n3 /sys/fs/bpf/galactic-preflight-%d",
			prefix, prefix, prefix, (int)getpid());
	cp_down(&cp);
	curl_global_cleanup();
}

START_TEST(t_empty_node_waits_then_gets_identity_from_the_api)
{
	char d[512], body_path[600], *body = NULL;
	json_t *o;
	long code;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	start(3);
	/* no record, no NodeDataplane: up (alive), not ready, nothing applied, and it says why */
	ck_assert_int_eq(wait_ready(3, 503, 20), 503);
	ck_assert_int_eq(gt_http_get(port[3], "/healthz", NULL), 200);
	for (int i = 0; i < 100 && gt_metric(port[3], "galactic_agent_passes_total{kind=\"apply\",result=\"failed\"}") < 1; i++)
		usleep(100 * 1000);
	ck_assert_double_ge(gt_metric(port[3], "galactic_agent_passes_total{kind=\"apply\",result=\"failed\"}"), 1);
	code = gt_http_get(port[3], "/readyz", &body);
	ck_assert_int_eq(code, 503);
	ck_assert_msg(body && strstr(body, "identity"), "%s", body ? body : "");
	free(body);
	ck_assert_double_eq(gt_metric(port[3], "galactic_agent_node_id"), 0);
	snprintf(body_path, sizeof(body_path), "%s/agent.log", topo_state_dir(&T, 3, d, sizeof(d)));
	ck_assert_msg(topo_sh("grep -q 'no node identity' %s", body_path) == 0, "the agent did not say why (%s)", body_path);
	/* the operator creates the NodeDataplane: an ID from the API, then ready */
	make_ndp(3, 0);
	ck_assert_int_eq(wait_ready(3, 200, 30), 200);
	ck_assert_double_gt(gt_metric(port[3], "galactic_agent_node_id"), 0);
	o = wait_cond(3, "Ready", "True", 20);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "status"), "nodeID")),
			 (json_int_t)gt_metric(port[3], "galactic_agent_node_id"));
	ck_assert_str_eq(kstr(kcond(o, "IdentityAssigned"), "reason", NULL), "Allocated");
	ck_assert_str_eq(kstr(json_object_get(o, "status"), "datapath", NULL), bpf ? "bpf" : "kernel");
	ck_assert_msg(json_array_size(json_object_get(json_object_get(o, "status"), "capabilities")) > 0,
		      "no capabilities in the NodeDataplane status");
	printf("empty node: %s, NodeDataplane Ready, node ID %.0f\n", kstr(kcond(o, "IdentityAssigned"), "message", NULL),
	       gt_metric(port[3], "galactic_agent_node_id"));
	/* a healthy node writes nothing more: read-backs every 0.3 s, same status */
	{
		char path[256], rv[64];
		json_t *o2;
		double ticks = gt_metric(port[3], "galactic_agent_passes_total{kind=\"verify\",result=\"verified\"}");

		snprintf(rv, sizeof(rv), "%s", kstr(json_object_get(o, "metadata"), "resourceVersion", NULL));
		sleep(3);
		snprintf(path, sizeof(path), "%s/nodedataplanes/%s", NET, nodename[3]);
		o2 = kget(&cp, path, NULL);
		ck_assert_double_ge(gt_metric(port[3], "galactic_agent_passes_total{kind=\"verify\",result=\"verified\"}") - ticks, 5);
		ck_assert_str_eq(kstr(json_object_get(o2, "metadata"), "resourceVersion", NULL), rv);
		json_decref(o2);
	}
	json_decref(o);
}
END_TEST

START_TEST(t_api_identity_programs_traffic_and_survives_api_down_restart)
{
	long got;
	double id1;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	/* records with the wrong IDs; the API pins the right ones */
	for (int i = 1; i <= 2; i++) {
		ck_assert_int_eq(topo_write_state(&T, i, 0), 0);
		ck_assert_int_eq(topo_sh("sed -i 's/\"node_id\":%d/\"node_id\":%d/' %s/n%d/state.json", i, 100 + i, T.dir, i), 0);
		make_ndp(i, i);
		start(i);
	}
	for (int i = 1; i <= 2; i++) {
		ck_assert_int_eq(wait_ready(i, 200, 30), 200);
		for (int k = 0; k < 100 && gt_metric(port[i], "galactic_agent_node_id") != i; k++)
			usleep(100 * 1000);
		ck_assert_double_eq(gt_metric(port[i], "galactic_agent_node_id"), i);
		json_decref(wait_cond(i, "Ready", "True", 20));
	}
	got = ping("a1", "fd00:a::2", 20);
	printf("API identity: IPv6 a1 -> a2 %ld/20\n", got);
	ck_assert_int_eq(got, 20);
	id1 = gt_metric(port[1], "galactic_agent_node_id");

	/* n1 restarts while the API server is down: its record keeps the identity */
	ck_assert_int_eq(topo_agent_stop(&T, 1, SIGTERM) & 0x7f, 0);
	ck_assert_int_eq(cp_ctl(&cp, "stop-apiserver"), 0);
	start(1);
	ck_assert_int_eq(wait_ready(1, 200, 30), 200);
	ck_assert_double_eq(gt_metric(port[1], "galactic_agent_node_id"), id1);
	got = ping("a1", "fd00:a::2", 20);
	printf("restart with the API down: ready, node ID %.0f kept, IPv6 %ld/20\n", id1, got);
	ck_assert_int_eq(got, 20);
	ck_assert_int_eq(cp_ctl(&cp, "start-apiserver"), 0);
	/* back: the status names the new process, same ID */
	{
		char path[256];
		json_t *o = NULL;

		snprintf(path, sizeof(path), "%s/nodedataplanes/%s", NET, nodename[1]);
		for (int i = 0; i < 300; i++) {
			const char *inst;

			json_decref(o);
			o = kget(&cp, path, NULL);
			inst = kstr(json_object_get(json_object_get(o, "status"), "reporter"), "agentInstance", NULL);
			if (inst && strstr(inst, "/") && atoi(strrchr(inst, '/') + 1) == (int)topo_agent_pid(&T, 1))
				break;
			usleep(100 * 1000);
		}
		ck_assert_ptr_nonnull(o);
		ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "status"), "nodeID")), (json_int_t)id1);
		json_decref(o);
	}
}
END_TEST

START_TEST(t_not_ready_while_uplink_program_detached)
{
	char ns[64];
	double t0, t_false, t_true;
	long before;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	if (!bpf)
		GT_SKIP("bpf preflight refused on this kernel: no TC programs to detach");
	topo_node_ns(&T, 2, ns, sizeof(ns));
	ck_assert_int_eq(wait_ready(2, 200, 30), 200);
	ck_assert_int_eq(topo_sh("tc -n %s filter show dev up0 ingress | grep -q galactic_decap", ns), 0);
	before = (long)gt_metric(port[2], "galactic_agent_passes_total{kind=\"verify\",result=\"failed\"}");
	t0 = gt_now();
	ck_assert_int_eq(topo_sh("tc -n %s filter del dev up0 ingress", ns), 0);
	if (wait_ready(2, 503, 5) != 503) {
		topo_sh("tail -n 30 %s/n2/agent.log", T.dir);
		ck_abort_msg("/readyz stayed 200 with the uplink program detached");
	}
	t_false = gt_now() - t0;
	ck_assert_int_eq(wait_ready(2, 200, 10), 200);
	t_true = gt_now() - t0;
	ck_assert_int_eq(topo_sh("tc -n %s filter show dev up0 ingress | grep -q galactic_decap", ns), 0);
	ck_assert_double_gt(gt_metric(port[2], "galactic_agent_passes_total{kind=\"verify\",result=\"failed\"}"), before);
	printf("uplink program detached: /readyz 503 after %.2f s, program back and 200 after %.2f s\n", t_false, t_true);
	ck_assert_int_eq(ping("a1", "fd00:a::2", 10), 10);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent-identity");
	TCase *tc = tcase_create("agent");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, t_empty_node_waits_then_gets_identity_from_the_api);
	tcase_add_test(tc, t_api_identity_programs_traffic_and_survives_api_down_restart);
	tcase_add_test(tc, t_not_ready_while_uplink_program_detached);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
