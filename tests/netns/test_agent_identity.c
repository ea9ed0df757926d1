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
 *     detached, and 200 again once the agent has put it back;
 *   - 50 runs of two galactic-agent processes started together on nodes
 *     whose names hash to the same first candidate: never the same ID.
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <curl/curl.h>
#include <stdarg.h>

#include "agent/dp/bpf/bpf_dp.h"
#include "agent/identity/ident.h"
#include "tests/lib/cp.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/topo.h"

static struct topo T;
static struct cp cp;
static char skip_why[256];
static bool bpf;
static char bpf_why[256];        /* the bpf preflight's refusal */
static int port[4];
static char nodename[4][64];
static const char *NET = "/apis/network.datumapis.com/v1alpha1";
static const char *verify_s = "0.3"; /* --verify-interval of the agents started next (NULL: the default) */

static void agent_args(int node, char *buf, size_t n)
{
	char b[200] = "--backend kernel", v[64] = "";

	if (bpf)
		snprintf(b, sizeof(b), "--backend bpf --bpffs /sys/fs/bpf/%s-n%d", T.prefix, node);
	if (verify_s)
		snprintf(v, sizeof(v), " --verify-interval %s", verify_s);
	snprintf(buf, n, "%s --kubeconfig %s --node %s --report-namespace galactic-system "
		 "--metrics-addr 127.0.0.1:%d%s --interval 30", b, cp.kubeconfig, nodename[node], port[node], v);
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

/* Polls until a shell condition holds, up to secs; returns the seconds it took or -1. */
static double wait_sh(double secs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static double wait_sh(double secs, const char *fmt, ...)
{
	double t0 = gt_now();
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	while (gt_now() - t0 < secs) {
		if (topo_sh("%s", cmd) == 0)
			return gt_now() - t0;
		usleep(20 * 1000);
	}
	return -1;
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
	/* the reason goes into the skips: the runner accepts them only on a kernel without TC programs */
	bpf = topo_sh("build/rel/bin/galactic-bpf preflight --bpffs /sys/fs/bpf/galactic-preflight-%d "
		      ">/dev/null 2>&1", (int)getpid()) == 0;
	if (!bpf)
		topo_out(bpf_why, sizeof(bpf_why), "build/rel/bin/galactic-bpf preflight --bpffs "
			 "/sys/fs/bpf/galactic-preflight-%d 2>&1 | tail -1", (int)getpid());
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
	/* ready says the node's own pass verified; the route toward a2 under n2's new
	 * ID comes from n2's report, learned a moment later: wait for the first echo */
	for (int k = 0; k < 50 && ping("a1", "fd00:a::2", 1) != 1; k++)
		usleep(100 * 1000);
	got = ping("a1", "fd00:a::2", 20);
	printf("API identity: IPv6 a1 -> a2 %ld/20\n", got);
	ck_assert_int_eq(got, 20);
	id1 = gt_metric(port[1], "galactic_agent_node_id");

	/* n1 restarts while the API server is down: its record keeps the identity */
	ck_assert_int_eq(topo_agent_stop(&T, 1, SIGTERM) & 0x7f, 0);
	ck_assert_int_eq(cp_ctl(&cp, "stop-apiserver"), 0);
	start(1);
	if (wait_ready(1, 200, 30) != 200)
		topo_sh("tail -n 30 %s/n1/agent.log", T.dir);
	ck_assert_int_eq(wait_ready(1, 200, 1), 200);
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

/*
 * The agent puts a detached filter back within milliseconds (TC
 * notifications), so the test keeps it detached: with n2's agent stopped
 * (SIGSTOP) our filter goes and a foreign one (u32) takes its
 * priority, where ours cannot be attached (the kernel refuses another
 * kind at a taken priority). /readyz answers 503 for as long as that
 * lasts, and 200 once the foreign filter goes and the agent has put its
 * program back (repaired drift, counted).
 */
START_TEST(t_not_ready_while_uplink_program_detached)
{
	char ns[64], *body = NULL;
	double t0, t_false, t_true, before, drift_before;
	pid_t pid;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	if (!bpf)
		GT_SKIP("bpf preflight refused on this kernel (%s): no TC programs to detach", bpf_why);
	topo_node_ns(&T, 2, ns, sizeof(ns));
	ck_assert_int_eq(wait_ready(2, 200, 30), 200);
	ck_assert_int_eq(topo_sh("tc -n %s filter show dev up0 ingress | grep -q galactic_decap", ns), 0);
	before = gt_metric(port[2], "galactic_agent_passes_total{kind=\"verify\",result=\"failed\"}");
	drift_before = gt_metric(port[2], "galactic_agent_drift_repaired_total{kind=\"filter\"}");
	pid = topo_agent_pid(&T, 2);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	ck_assert_int_eq(topo_sh("tc -n %s filter del dev up0 ingress && "
				 "tc -n %s filter add dev up0 ingress prio %d protocol all u32 match u32 0 0 classid 1:1",
				 ns, ns, GBPF_TC_PRIO), 0);
	t0 = gt_now();
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	if (wait_ready(2, 503, 5) != 503) {
		topo_sh("tail -n 30 %s/n2/agent.log", T.dir);
		ck_abort_msg("/readyz stayed 200 with the uplink program detached");
	}
	t_false = gt_now() - t0;
	/* not ready for as long as it stays detached, and it says why */
	usleep(1500 * 1000);
	ck_assert_int_eq(gt_http_get(port[2], "/readyz", &body), 503);
	ck_assert_msg(body && strstr(body, "datapath"), "%s", body ? body : "");
	free(body);
	ck_assert_int_ne(topo_sh("tc -n %s filter show dev up0 ingress | grep -q galactic_decap", ns), 0);
	ck_assert_int_eq(topo_sh("tc -n %s filter del dev up0 ingress prio %d", ns, GBPF_TC_PRIO), 0);
	t0 = gt_now();
	ck_assert_int_eq(wait_ready(2, 200, 10), 200);
	t_true = gt_now() - t0;
	ck_assert_int_eq(topo_sh("tc -n %s filter show dev up0 ingress | grep -q galactic_decap", ns), 0);
	ck_assert_double_gt(gt_metric(port[2], "galactic_agent_passes_total{kind=\"verify\",result=\"failed\"}"), before);
	for (int i = 0; i < 100 && gt_metric(port[2], "galactic_agent_drift_repaired_total{kind=\"filter\"}") <= drift_before; i++)
		usleep(20 * 1000);
	ck_assert_double_eq(gt_metric(port[2], "galactic_agent_drift_repaired_total{kind=\"filter\"}"), drift_before + 1);
	printf("uplink program detached: /readyz 503 after %.2f s and for as long as it stays detached; "
	       "program back and 200 %.2f s after the foreign filter went; drift counted (filter +1)\n", t_false, t_true);
	{
		long got;

		/* while n2 could not program its uplink its reports said Programmed=False and
		 * n1's learner withdrew the route toward a2 (it learns only from True ones):
		 * n1 relearns it a moment after n2 is ready again; the first echo waits for that */
		for (int k = 0; k < 50 && ping("a1", "fd00:a::2", 1) != 1; k++)
			usleep(100 * 1000);
		got = ping("a1", "fd00:a::2", 10);

		if (got != 10) /* what the datapath looked like, for the one who reads the failure */
			topo_sh("tc -n %s filter show dev up0 ingress; ip -n %s neigh show dev up0; tail -n 15 %s/n2/agent.log",
				ns, ns, T.dir);
		ck_assert_int_eq(got, 10);
	}
}
END_TEST


/* status.driftRepaired[kind].count of node's NodeDataplane (0: none). */
static long drift_status(int node, const char *kind)
{
	char path[256];
	json_t *o, *v;
	size_t i;
	long n = 0;

	snprintf(path, sizeof(path), "%s/nodedataplanes/%s", NET, nodename[node]);
	o = kget(&cp, path, NULL);
	json_array_foreach(json_object_get(json_object_get(o, "status"), "driftRepaired"), i, v)
		if (json_is_string(json_object_get(v, "kind")) && !strcmp(json_string_value(json_object_get(v, "kind")), kind))
			n = (long)json_integer_value(json_object_get(v, "count"));
	json_decref(o);
	return n;
}

static double drift_metric(int node, const char *kind)
{
	char q[128];

	snprintf(q, sizeof(q), "galactic_agent_drift_repaired_total{kind=\"%s\"}", kind);
	return gt_metric(port[node], q);
}

/* Waits up to secs for the metric to pass before; returns the seconds it took or -1. */
static double wait_metric_above(int node, const char *kind, double before, double secs)
{
	double t0 = gt_now();

	while (gt_now() - t0 < secs) {
		if (drift_metric(node, kind) > before)
			return gt_now() - t0;
		usleep(20 * 1000);
	}
	return -1;
}

static long wait_drift_status(int node, const char *kind, long want, double secs)
{
	double t0 = gt_now();
	long n = 0;

	while (gt_now() - t0 < secs && (n = drift_status(node, kind)) < want)
		usleep(100 * 1000);
	return n;
}

/*
 * bpf backend drift, repaired and counted within 2 s. Filters: n2's agent
 * runs without verify ticks (--verify-interval 0), so the decap filter on
 * the uplink and the encap filter on a2's host veth come back from the TC
 * netlink notifications alone. A map entry (no notification: a1's route in
 * n2's routes map) comes back with the agent's default intervals: the
 * routes map's size, checked every 200 ms, asks for the read-back (the
 * verify tick is 5 s), then its second read. Each repair is counted (galactic_agent_drift_repaired_total{kind},
 * NodeDataplane status.driftRepaired) and traffic flows again.
 */
START_TEST(t_bpf_drift_repaired_and_counted_within_2s)
{
	char ns[64], d[512], map[512];
	const char *hv;
	double t_up, t_hv, t_map, before, m_up, m_hv, m_map;
	struct gbpf_route_key k;
	struct gbpf_route r;
	uint8_t a[16];
	int fd;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	if (!bpf)
		GT_SKIP("bpf preflight refused on this kernel (%s): no TC programs or maps to drift", bpf_why);
	topo_node_ns(&T, 2, ns, sizeof(ns));
	hv = topo_pod(&T, "a2")->hostif;
	/* n2 without verify ticks: only notifications can notice a filter gone */
	if (topo_agent_pid(&T, 2) > 0)
		kill(topo_agent_pid(&T, 2), SIGCONT); /* a failed test before may have left it stopped */
	topo_agent_stop(&T, 2, SIGTERM);
	verify_s = "0";
	start(2);
	verify_s = "0.3";
	ck_assert_int_eq(wait_ready(2, 200, 30), 200);
	ck_assert_int_eq(ping("a1", "fd00:a::2", 5), 5);

	before = drift_metric(2, "filter");
	ck_assert_int_eq(topo_sh("tc -n %s filter del dev up0 ingress", ns), 0);
	m_up = wait_metric_above(2, "filter", before, 2);
	t_up = wait_sh(2, "tc -n %s filter show dev up0 ingress | grep -q galactic_decap", ns);
	ck_assert_msg(t_up >= 0 && m_up >= 0, "uplink filter not repaired and counted within 2 s (see %s/agent.log)",
		      topo_state_dir(&T, 2, d, sizeof(d)));
	before = drift_metric(2, "filter");
	ck_assert_int_eq(topo_sh("tc -n %s filter del dev %s ingress", ns, hv), 0);
	m_hv = wait_metric_above(2, "filter", before, 2);
	t_hv = wait_sh(2, "tc -n %s filter show dev %s ingress | grep -q galactic_encap", ns, hv);
	ck_assert_msg(t_hv >= 0 && m_hv >= 0, "host veth filter not repaired and counted within 2 s");
	ck_assert_double_ge(drift_metric(2, "filter"), 2);
	ck_assert_int_ge(wait_drift_status(2, "filter", 2, 10), 2);
	ck_assert_int_eq(ping("a1", "fd00:a::2", 10), 10);

	/* a map entry: the agent's defaults (a verify tick every 5 s; the routes map's size every 200 ms) */
	topo_agent_stop(&T, 2, SIGTERM);
	verify_s = NULL;
	start(2);
	verify_s = "0.3";
	ck_assert_int_eq(wait_ready(2, 200, 30), 200);
	snprintf(map, sizeof(map), "/sys/fs/bpf/%s-n2/v%d/%s", T.prefix, GBPF_BPF_LAYOUT, gbpf_map_name(GBPF_MAP_ROUTES));
	fd = bpf_obj_get(map);
	ck_assert_msg(fd >= 0, "open %s", map);
	inet_pton(AF_INET6, "fd00:a::1", a);
	/* a1's route in vpcA: find its argument by walking the trie */
	{
		struct gbpf_route_key cur, next, *prev = NULL;
		bool found = false;

		while (!found && !bpf_map_get_next_key(fd, prev, &next)) {
			cur = next;
			prev = &cur;
			found = cur.family == GBPF_AF_INET6 && cur.prefixlen == GBPF_ROUTE_KEY_BITS + 128 &&
				!memcmp(cur.addr, a, 16);
		}
		ck_assert_msg(found, "no route for fd00:a::1 in %s", map);
		k = cur;
	}
	before = drift_metric(2, "map_entry");
	t_map = gt_now();
	ck_assert_int_eq(bpf_map_delete_elem(fd, &k), 0);
	ck_assert_int_ne(bpf_map_lookup_elem(fd, &k, &r), 0);
	m_map = wait_metric_above(2, "map_entry", before, 2);
	while (bpf_map_lookup_elem(fd, &k, &r) && gt_now() - t_map < 2)
		usleep(20 * 1000);
	t_map = bpf_map_lookup_elem(fd, &k, &r) ? -1 : gt_now() - t_map;
	close(fd);
	ck_assert_msg(t_map >= 0 && m_map >= 0, "routes map entry not repaired and counted within 2 s (%.2f, %.2f)",
		      t_map, m_map);
	ck_assert_int_ge(wait_drift_status(2, "map_entry", 1, 10), 1);
	ck_assert_int_eq(ping("a1", "fd00:a::2", 10), 10);
	printf("bpf drift: uplink filter back in %.2f s (counted %.2f s), host veth filter back in %.2f s "
	       "(counted %.2f s), from TC notifications (no verify ticks); routes map entry back in %.2f s "
	       "(counted %.2f s, default intervals); NodeDataplane driftRepaired filter=%ld map_entry=%ld\n",
	       t_up, m_up, t_hv, m_hv, t_map, m_map, drift_status(2, "filter"), drift_status(2, "map_entry"));
}
END_TEST

/* Two node names whose hash gives the same first candidate. */
static void colliding_names(int run, char *a, char *b, size_t n)
{
	static uint16_t seen[4096];
	char nm[64];

	for (int k = 0; k < 4096; k++) {
		snprintf(nm, sizeof(nm), "%s-r%d-%d", T.prefix, run, k);
		seen[k] = gid_hash_start(nm);
		for (int j = 0; j < k; j++)
			if (seen[j] == seen[k]) {
				snprintf(a, n, "%s-r%d-%d", T.prefix, run, j);
				snprintf(b, n, "%s", nm);
				return;
			}
	}
	ck_abort_msg("no colliding names");
}

static pid_t race_agent(const char *node, const char *netns, const char *dir, int p)
{
	char cmd[2048];
	pid_t pid;

	snprintf(cmd, sizeof(cmd), "exec build/rel/bin/galactic-agent --state-dir %s --netns %s --interval 30 "
		 "--kubeconfig %s --node %s --report-namespace galactic-system --metrics-addr 127.0.0.1:%d "
		 ">>%s/agent.log 2>&1", dir, netns, cp.kubeconfig, node, p, dir);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

START_TEST(t_two_agents_race_50_runs)
{
	unsigned runs = getenv("GT_RACE_RUNS") ? (unsigned)atoi(getenv("GT_RACE_RUNS")) : 50, collisions = 0;
	char ns[2][64], dir[2][512], nm[2][64], block[64], path[256], body[512];
	double t0 = gt_now(), worst = 0, t_id = 0, t_stop = 0;
	int p[2];

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	for (int k = 0; k < 2; k++) {
		snprintf(ns[k], sizeof(ns[k]), "%s-race%d", T.prefix, k);
		ck_assert_int_eq(topo_sh("ip netns add %s && ip -n %s link set lo up", ns[k], ns[k]), 0);
	}
	snprintf(path, sizeof(path), "%s/nodedataplanes", NET);
	for (unsigned run = 0; run < runs; run++) {
		pid_t pid[2];
		double id[2] = { 0, 0 }, ts = gt_now();

		colliding_names((int)run, nm[0], nm[1], sizeof(nm[0]));
		snprintf(block, sizeof(block), "fcbb:%x::/48", 0x200 + run);
		for (int k = 0; k < 2; k++) {
			snprintf(body, sizeof(body), "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
				 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"sidBlock\":\"%s\"}}", nm[k], block);
			ck_assert_int_eq(kreq(&cp, "POST", path, "application/json", body, NULL, NULL), 201);
			snprintf(dir[k], sizeof(dir[k]), "%s/race-%u-%d", T.dir, run, k);
			ck_assert_int_eq(topo_sh("mkdir -p %s", dir[k]), 0);
			p[k] = gt_free_port();
		}
		/* both processes at once */
		pid[0] = race_agent(nm[0], ns[0], dir[0], p[0]);
		pid[1] = race_agent(nm[1], ns[1], dir[1], p[1]);
		for (int i = 0; i < 300 && (id[0] <= 0 || id[1] <= 0); i++) {
			for (int k = 0; k < 2; k++)
				if (id[k] <= 0)
					id[k] = gt_metric(p[k], "galactic_agent_node_id");
			usleep(50 * 1000);
		}
		t_id += gt_now() - ts;
		{
			double tk = gt_now();

			for (int k = 0; k < 2; k++)
				kill(pid[k], SIGTERM);
			for (int k = 0; k < 2; k++) {
				int st;

				waitpid(pid[k], &st, 0);
			}
			t_stop += gt_now() - tk;
		}
		ck_assert_msg(id[0] > 0 && id[1] > 0, "run %u: no identity (%.0f, %.0f), see %s/agent.log", run, id[0], id[1],
			      dir[0]);
		if (id[0] == id[1])
			collisions++;
		if (gt_now() - ts > worst)
			worst = gt_now() - ts;
		/* the server agrees: two holds in the block */
		{
			char sel[160], *esc;
			json_t *l = NULL;

			snprintf(sel, sizeof(sel), "spec.block=%s", block);
			esc = curl_easy_escape(NULL, sel, 0);
			snprintf(body, sizeof(body), "%s/nodeids?fieldSelector=%s", NET, esc);
			curl_free(esc);
			ck_assert_int_eq(kreq(&cp, "GET", body, NULL, NULL, NULL, &l), 200);
			ck_assert_uint_eq(json_array_size(json_object_get(l, "items")), 2);
			json_decref(l);
		}
	}
	for (int k = 0; k < 2; k++)
		topo_sh("ip netns del %s", ns[k]);
	printf("agents race: %u runs of two galactic-agent processes (same first candidate): %u collisions, "
	       "slowest run %.1f s, mean %.2f s to both identities, %.2f s to stop, %.0f s in all\n", runs, collisions,
	       worst, t_id / runs, t_stop / runs, gt_now() - t0);
	ck_assert_uint_eq(collisions, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent-identity");
	TCase *tc = tcase_create("agent");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, t_empty_node_waits_then_gets_identity_from_the_api);
	tcase_add_test(tc, t_api_identity_programs_traffic_and_survives_api_down_restart);
	tcase_add_test(tc, t_not_ready_while_uplink_program_detached);
	tcase_add_test(tc, t_bpf_drift_repaired_and_counted_within_2s);
	tcase_add_test(tc, t_two_agents_race_50_runs);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
