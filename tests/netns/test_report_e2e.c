/*
 * Reports and route learning end to end: a real control plane (etcd +
 * kube-apiserver, our CRDs), three netns nodes each running galactic-agent
 * with --kubeconfig, pods attached with the real galactic-cni binary, and NO
 * hand-written remotes.json: every cross-node route comes from another
 * node's NodeAttachment. Then the API server goes away: running traffic,
 * CNI ADD/DEL and an agent restart must not care; when it returns the
 * reports catch up within a bound.
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/topo.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/report/report.h"
#include "common/json.h"

#define RNS "galactic-system"
#define NATT_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" RNS "/nodeattachments"

static struct cp cp;
static struct topo T;
static char skip_why[256];
static bool cp_is_up;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Node 2 runs the sanitized agent (ASan+UBSan: the report threads against a
 * real API server), the others the release build, as shipped.
 */
static void start_agent(int node)
{
	char args[1024], cmd[2048], pp[400];
	pid_t pid;
	FILE *f;

	snprintf(args, sizeof(args), "--cni-socket %s/n%d/cni.sock --kubeconfig %s --node n%d "
		 "--report-namespace " RNS, T.dir, node, cp.kubeconfig, node);
	if (node != 2) {
		ck_assert_int_gt(topo_agent_start(&T, node, args), 0);
		return;
	}
	snprintf(cmd, sizeof(cmd), "ASAN_OPTIONS=detect_leaks=1 exec build/san/bin/galactic-agent "
		 "--state-dir %s/n2 --netns %s-n2 --interval 1 %s >>%s/n2/agent.log 2>&1",
		 T.dir, T.prefix, args, T.dir);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setsid(); /* outlives the forked test, like topo_agent_start's */
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	T.agent[2] = pid;
	snprintf(pp, sizeof(pp), "%s/n2/agent.pid", T.dir); /* topo_agent_stop/topo_down read it */
	f = fopen(pp, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%d\n", (int)pid);
	fclose(f);
}

static void setup(void)
{
	char cmd[1024];

	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces");
		return;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	cp_is_up = true;
	ck_assert_msg(crds_install(&cp, NULL) == 0, "CRDs not established");
	snprintf(cmd, sizeof(cmd), "%s/kubectl --kubeconfig %s create namespace " RNS " >/dev/null",
		 cp.bin, cp.kubeconfig);
	ck_assert_msg(system(cmd) == 0, "namespace " RNS " not created");
	ck_assert_int_eq(topo_up(&T, 3), 0);
	for (int i = 1; i <= 3; i++) {
		/* Only the node: VPCs and attachments come through CNI, routes through the API. */
		ck_assert_int_eq(topo_sh("printf '{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":%d,"
					 "\"uplink\":\"up0\"},\"vpcs\":[],\"attachments\":[]}' >%s/n%d/state.json",
					 i, T.dir, i), 0);
		start_agent(i);
	}
	for (int i = 1; i <= 3; i++)
		ck_assert_msg(topo_sh("for _ in $(seq 100); do [ -S %s/n%d/cni.sock ] && exit 0; sleep 0.1; done; "
				      "cat %s/n%d/agent.log >&2; exit 1", T.dir, i, T.dir, i) == 0,
			      "agent n%d did not open its CNI socket", i);
}

static void teardown(void)
{
	if (getenv("GT_KEEP"))
		return;
	if (T.nodes)
		topo_down(&T);
	if (cp_is_up)
		cp_down(&cp);
}

/* galactic-cni as a runtime runs it; returns its exit status. */
static int cni(const char *verb, const char *pod, int node, const char *vpc, const char *att,
	       const char *a6, const char *a4)
{
	char f[400];

	snprintf(f, sizeof(f), "%s/%s", T.dir, pod);
	if (!strcmp(verb, "ADD") &&
	    topo_sh("ip netns add %s-%s && ip -n %s-%s link set lo up && "
		    "printf '%%s' '{\"cniVersion\":\"1.1.0\",\"name\":\"vpc-%s\",\"type\":\"galactic-cni\","
		    "\"vpc\":\"%s\",\"vpcattachment\":\"%s\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],"
		    "\"addresses\":[{\"address\":\"%s/128\",\"gateway\":\"fe80::1\"},"
		    "{\"address\":\"%s/32\",\"gateway\":\"169.254.1.1\"}],\"mtu\":1400,"
		    "\"agentSocket\":\"%s/n%d/cni.sock\"}' >%s.conf",
		    T.prefix, pod, T.prefix, pod, vpc, vpc, att, a6, a4, T.dir, node, f))
		return -1;
	if (strcmp(verb, "ADD") &&
	    topo_sh("jq --slurpfile p %s.ADD.out '. + {prevResult: $p[0]}' %s.conf >%s.%s.conf", f, f, f, verb))
		return -1;
	return topo_sh("CNI_COMMAND=%s CNI_CONTAINERID=ctr-%s CNI_NETNS=/var/run/netns/%s-%s CNI_IFNAME=eth0 "
		       "CNI_PATH=build/rel/bin CNI_ARGS='K8S_POD_NAMESPACE=default;K8S_POD_NAME=%s' "
		       "build/rel/bin/galactic-cni <%s%s%s%s >%s.%s.out 2>&1 || { cat %s.%s.out >&2; exit 1; }",
		       verb, pod, T.prefix, pod, pod, f, strcmp(verb, "ADD") ? "." : "",
		       strcmp(verb, "ADD") ? verb : "", ".conf", f, verb, f, verb);
}

/* The report of (node, vpc, att) from a list of the namespace, or NULL. */
static json_t *get_report(int node, const char *vpc, const char *att)
{
	char name[300], why[200], nd[8];

	snprintf(nd, sizeof(nd), "n%d", node);
	ck_assert_int_eq(rpt_name(nd, vpc, att, name, sizeof(name), why, sizeof(why)), 0);
	return klist_find(&cp, NATT_PATH, name);
}

static const char *programmed(const json_t *o)
{
	return kstr(kcond(o, "Programmed"), "status", NULL);
}

/* Waits for the report to be Programmed=True; returns ms waited or -1. */
static double wait_programmed(int node, const char *vpc, const char *att, double t0, double limit_ms)
{
	while (now_ms() - t0 < limit_ms) {
		json_t *o = get_report(node, vpc, att);
		const char *p = o ? programmed(o) : NULL;
		bool ok = p && !strcmp(p, "True");

		json_decref(o);
		if (ok)
			return now_ms() - t0;
		usleep(20 * 1000);
	}
	return -1;
}

static bool wait_gone(int node, const char *vpc, const char *att, double limit_ms)
{
	double t0 = now_ms();

	while (now_ms() - t0 < limit_ms) {
		json_t *o = get_report(node, vpc, att);

		if (!o)
			return true;
		json_decref(o);
		usleep(50 * 1000);
	}
	return false;
}

static bool ping_ok(const char *pod, const char *dst, int tries)
{
	for (int i = 0; i < tries; i++) {
		if (topo_sh("ip netns exec %s-%s ping -c 1 -W 1 %s >/dev/null 2>&1", T.prefix, pod, dst) == 0)
			return topo_sh("ip netns exec %s-%s ping -c 3 -i 0.2 -W 1 %s >/dev/null", T.prefix, pod, dst) == 0;
		usleep(200 * 1000);
	}
	return false;
}

static long rx(const char *pod)
{
	char out[64];

	if (topo_out(out, sizeof(out), "ip netns exec %s-%s cat /sys/class/net/eth0/statistics/rx_packets",
		     T.prefix, pod))
		return -1;
	return atol(out);
}

/* The record of node (record-remotes.json) has (vpc, prefix) -> a SID starting with sid_prefix. */
static bool learned(int node, const char *vpc, const char *prefix, const char *sid_prefix)
{
	return topo_sh("jq -e '[.remotes[] | select(.vpc==\"%s\" and .prefix==\"%s\" and (.sid|startswith(\"%s\")))] "
		       "| length == 1' %s/n%d/record-remotes.json >/dev/null 2>&1",
		       vpc, prefix, sid_prefix, T.dir, node) == 0;
}

static bool wait_learned(int node, const char *vpc, const char *prefix, const char *sid_prefix, double ms)
{
	double t0 = now_ms();

	while (now_ms() - t0 < ms) {
		if (learned(node, vpc, prefix, sid_prefix))
			return true;
		usleep(50 * 1000);
	}
	return false;
}

/* Every report's managedFields name its own node's agent (galactic-agent/<node>)
 * and nobody else; returns how many reports. */
static int only_agent_manages(void)
{
	json_t *list = NULL, *it, *mf;
	size_t i, j;
	int n = 0;

	ck_assert_int_eq(kreq(&cp, "GET", NATT_PATH, NULL, NULL, NULL, &list), 200);
	json_array_foreach(json_object_get(list, "items"), i, it) {
		ck_assert_msg(json_array_size(gj_get(it, "metadata.managedFields")) > 0, "%s: no managedFields",
			      gj_str(it, "metadata.name"));
		char want[300];

		snprintf(want, sizeof(want), RPT_FIELD_MANAGER_PREFIX "%s", gj_str(it, "spec.node"));
		json_array_foreach(gj_get(it, "metadata.managedFields"), j, mf)
			ck_assert_msg(!strcmp(gj_str(mf, "manager"), want),
				      "%s: field manager %s, want %s", gj_str(it, "metadata.name"),
				      gj_str(mf, "manager"), want);
		n++;
	}
	json_decref(list);
	return n;
}

/* The report's routes: IPv6 to the VPC decap SID, IPv4 to the End.DX4 SID, both live in the node's kernel. */
static void check_routes(int node, const char *vpc, const char *att, const char *a6, const char *a4)
{
	json_t *o = get_report(node, vpc, att), *routes;
	char p6[80], p4[80], sidpfx[40];
	const char *s6, *s4;

	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(gj_str(o, "spec.node"), (node == 1 ? "n1" : node == 2 ? "n2" : "n3"));
	ck_assert_str_eq(gj_str(o, "spec.vpc"), vpc);
	ck_assert_str_eq(gj_str(o, "spec.vpcAttachment"), att);
	ck_assert_str_eq(gj_str(o, "spec.guestInterface"), "eth0");
	ck_assert_str_eq(gj_str(o, "spec.pod.namespace"), "default");
	ck_assert_ptr_nonnull(strstr(gj_str(o, "spec.containerID"), "ctr-"));
	ck_assert_int_eq(gj_int(o, "spec.table", 0) >= 0x4000, 1);
	ck_assert_str_eq(gj_str(o, "status.reporter.node"), gj_str(o, "spec.node"));
	ck_assert_str_eq(gj_str(o, "status.reporter.datapath"), "kernel");
	ck_assert_int_eq(gj_int(o, "status.observedGeneration", -1), gj_int(o, "metadata.generation", -2));
	routes = gj_get(o, "spec.routes");
	ck_assert_int_eq(json_array_size(routes), 2);
	snprintf(p6, sizeof(p6), "%s/128", a6);
	snprintf(p4, sizeof(p4), "%s/32", a4);
	ck_assert_str_eq(gj_str(json_array_get(routes, 0), "prefix"), p6);
	ck_assert_str_eq(gj_str(json_array_get(routes, 1), "prefix"), p4);
	s6 = gj_str(json_array_get(routes, 0), "sid");
	s4 = gj_str(json_array_get(routes, 1), "sid");
	snprintf(sidpfx, sizeof(sidpfx), "fcbb:bb00:1:%x:e", node);
	ck_assert_msg(!strncmp(s6, sidpfx, strlen(sidpfx)), "IPv6 SID %s is not node %d's decap", s6, node);
	ck_assert_str_eq(s6, gj_str(o, "spec.localSID"));
	snprintf(sidpfx, sizeof(sidpfx), "fcbb:bb00:1:%x:d", node);
	ck_assert_msg(!strncmp(s4, sidpfx, strlen(sidpfx)), "IPv4 SID %s is not an End.DX4 of node %d", s4, node);
	/* The SIDs named are the ones the node's kernel actually serves. */
	ck_assert_int_eq(topo_sh("ip -n %s-n%d -6 route show proto 154 | grep -q '^%s .*End.DT6'", T.prefix, node, s6), 0);
	ck_assert_int_eq(topo_sh("ip -n %s-n%d -6 route show proto 154 | grep -q '^%s .*End.DX4'", T.prefix, node, s4), 0);
	json_decref(o);
}

/* A report of another node with garbage is logged by name and ignored; the agent keeps going. */
static void bad_foreign_report_is_ignored(void)
{
	long code;
	json_t *o = NULL;

	ck_assert_int_eq(cni("ADD", "red-9", 1, "Red7", "R9", "fd00:a::19", "10.1.0.19"), 0);
	ck_assert(wait_programmed(1, "Red7", "R9", now_ms(), 15000) >= 0);
	/* Valid for the CRD, wrong for us: a SID of node 1 itself, offered by "n7"
	 * (labelled with its VPC, as agents write them: the learners see it). */
	code = kreq(&cp, "POST", NATT_PATH, "application/json",
		    "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		    "\"metadata\":{\"name\":\"n7-649241-1\",\"labels\":{\"" RPT_VPC_LABEL "\":\"Red7\"}},"
		    "\"spec\":{\"node\":\"n7\",\"vpc\":\"Red7\","
		    "\"vpcAttachment\":\"1\",\"routes\":[{\"prefix\":\"fd00:a::77/128\",\"sid\":\"fcbb:bb00:1:1:e001::\"}]}}",
		    NULL, &o);
	ck_assert_int_eq(code, 201);
	json_decref(o);
	o = NULL;
	code = kreq(&cp, "PATCH", NATT_PATH "/n7-649241-1/status", "application/merge-patch+json",
		    "{\"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\",\"observedGeneration\":1,"
		    "\"reason\":\"Programmed\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}", NULL, &o);
	ck_assert_int_eq(code, 200);
	json_decref(o);
	ck_assert_int_eq(topo_sh("for _ in $(seq 100); do grep -q 'ignoring nodeattachment " RNS "/n7-649241-1: .*belongs to this node' "
				 "%s/n1/agent.log && exit 0; sleep 0.1; done; exit 1", T.dir), 0);
	ck_assert(!learned(1, "Red7", "fd00:a::77/128", "fcbb"));
	/* Still alive and still publishing. */
	ck_assert_int_eq(topo_agent_pid(&T, 1) > 0 && kill(topo_agent_pid(&T, 1), 0) == 0, 1);

	/* Programmed follows the kernel: red-9's host interface vanishes -> False with the error. */
	{
		json_t *r = get_report(1, "Red7", "R9");
		char hif[32], why[600] = "";
		double t0 = now_ms();
		bool flipped = false;

		ck_assert(wait_learned(2, "Red7", "fd00:a::19/128", "fcbb:bb00:1:1:e", 10000));
		ck_assert_ptr_nonnull(r);
		snprintf(hif, sizeof(hif), "%s", gj_str(r, "spec.hostInterface"));
		json_decref(r);
		ck_assert_int_eq(topo_sh("ip -n %s-n1 link del %s", T.prefix, hif), 0);
		while (!flipped && now_ms() - t0 < 10000) {
			json_t *c;
			size_t i;

			r = get_report(1, "Red7", "R9");
			json_array_foreach(gj_get(r, "status.conditions"), i, c)
				if (!strcmp(gj_str(c, "type"), "Programmed") && !strcmp(gj_str(c, "status"), "False")) {
					flipped = true;
					snprintf(why, sizeof(why), "%s: %s", gj_str(c, "reason"), gj_str(c, "message"));
				}
			json_decref(r);
			if (!flipped)
				usleep(50 * 1000);
		}
		ck_assert_msg(flipped, "report of red-9 still Programmed=True without its host interface");
		printf("report e2e: host interface deleted -> Programmed=False in %.0f ms (%s)\n", now_ms() - t0, why);
		ck_assert_msg(strstr(why, "ProgrammingFailed: ") && strstr(why, hif), "reason/message: %s", why);
		/* Other nodes stop sending to an attachment that is not Programmed. */
		ck_assert(topo_sh("for _ in $(seq 100); do jq -e '[.remotes[] | select(.prefix==\"fd00:a::19/128\")] "
				  "| length == 0' %s/n2/record-remotes.json >/dev/null && exit 0; sleep 0.1; done; exit 1", T.dir) == 0);
	}
	ck_assert_int_eq(cni("DEL", "red-9", 1, "Red7", "R9", "fd00:a::19", "10.1.0.19"), 0);
	ck_assert(wait_gone(1, "Red7", "R9", 15000));
	ck_assert_int_eq(kreq(&cp, "DELETE", NATT_PATH "/n7-649241-1", NULL, NULL, NULL, NULL), 200);
}

/*
 * A pod with a delegated IPv6 block, attached with the stanza the VPC
 * operator renders (galactic-veth, ipam with a /96): its report carries the
 * whole block in podSubnets and routes, the other node learns it from the
 * report alone and reaches an address inside it.
 */
static void delegated_block_reported_and_routed(void)
{
	char f[400];
	json_t *r;

	snprintf(f, sizeof(f), "%s/red-8", T.dir);
	ck_assert_int_eq(topo_sh("ip netns add %s-red-8 && ip -n %s-red-8 link set lo up && "
				 "printf '%%s' '{\"cniVersion\":\"1.0.0\",\"name\":\"att-r8\",\"type\":\"galactic-veth\","
				 "\"vpc\":\"Red7\",\"vpcattachment\":\"R8\",\"namespace\":\"galactic-system\","
				 "\"ipam\":{\"type\":\"galactic-ipam\",\"addresses\":[{\"address\":\"fd00:a::8:0:0/96\","
				 "\"gateway\":\"fe80::1\"}]},\"agentSocket\":\"%s/n1/cni.sock\"}' >%s.conf && "
				 "CNI_COMMAND=ADD CNI_CONTAINERID=ctr-red-8 CNI_NETNS=/var/run/netns/%s-red-8 CNI_IFNAME=eth0 "
				 "CNI_PATH=build/rel/bin build/rel/bin/galactic-veth <%s.conf >%s.out 2>&1 || { cat %s.out >&2; exit 1; }",
				 T.prefix, T.prefix, T.dir, f, T.prefix, f, f, f), 0);
	ck_assert_int_eq(topo_sh("ip -n %s-red-8 addr add fd00:a::8:0:5/128 dev eth0 nodad", T.prefix), 0);
	ck_assert(wait_programmed(1, "Red7", "R8", now_ms(), 15000) >= 0);
	r = get_report(1, "Red7", "R8");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(json_string_value(json_array_get(gj_get(r, "spec.podSubnets"), 0)), "fd00:a::8:0:0/96");
	ck_assert_str_eq(gj_str(json_array_get(gj_get(r, "spec.routes"), 0), "prefix"), "fd00:a::8:0:0/96");
	json_decref(r);
	ck_assert(wait_learned(2, "Red7", "fd00:a::8:0:0/96", "fcbb:bb00:1:1:e", 10000));
	ck_assert_msg(ping_ok("red-2", "fd00:a::8:0:5", 25), "red-2 -> an address of red-8's /96 block");
	ck_assert_int_eq(topo_sh("CNI_COMMAND=DEL CNI_CONTAINERID=ctr-red-8 CNI_NETNS=/var/run/netns/%s-red-8 CNI_IFNAME=eth0 "
				 "CNI_PATH=build/rel/bin build/rel/bin/galactic-veth <%s.conf >%s.out 2>&1 || { cat %s.out >&2; exit 1; }",
				 T.prefix, f, f, f), 0);
	ck_assert(wait_gone(1, "Red7", "R8", 15000));
	topo_sh("ip netns del %s-red-8", T.prefix);
}

/*
 * Overlapping prefixes in one VPC across reports (docs/dataplane-reports.md,
 * "Overlapping prefixes"): a foreign report ("n9") claims red-2's address
 * (a higher SID than node 2's: node 2 stays the winner) and a /127 around
 * it (nested: both programmed, the longest match wins). Node 1's record and
 * kernel keep red-2's route, traffic to red-2 flows, node 2's report stays
 * Programmed, both overlaps are logged; the foreign report's removal takes
 * the /127 away again.
 */
static void overlapping_foreign_report(void)
{
	char name[300], why[200], body[1200], path[400];
	json_t *o = NULL;

	ck_assert_int_eq(rpt_name("n9", "Red7", "9", name, sizeof(name), why, sizeof(why)), 0);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"labels\":{\"" RPT_VPC_LABEL "\":\"Red7\"}},"
		 "\"spec\":{\"node\":\"n9\",\"vpc\":\"Red7\",\"vpcAttachment\":\"9\",\"routes\":["
		 "{\"prefix\":\"fd00:a::12/128\",\"sid\":\"fcbb:bb00:1:9:e001::\"},"
		 "{\"prefix\":\"fd00:a::12/127\",\"sid\":\"fcbb:bb00:1:9:e001::\"}]}}", name);
	ck_assert_int_eq(kreq(&cp, "POST", NATT_PATH, "application/json", body, NULL, &o), 201);
	json_decref(o);
	o = NULL;
	snprintf(path, sizeof(path), NATT_PATH "/%s/status", name);
	ck_assert_int_eq(kreq(&cp, "PATCH", path, "application/merge-patch+json",
			      "{\"status\":{\"conditions\":[{\"type\":\"Programmed\",\"status\":\"True\",\"observedGeneration\":1,"
			      "\"reason\":\"Programmed\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}", NULL, &o), 200);
	json_decref(o);
	/* The nested /127 is learned beside red-2's /128, which keeps node 2's SID. */
	ck_assert(wait_learned(1, "Red7", "fd00:a::12/127", "fcbb:bb00:1:9:e", 10000));
	ck_assert(learned(1, "Red7", "fd00:a::12/128", "fcbb:bb00:1:2:e"));
	ck_assert_int_eq(topo_sh("for _ in $(seq 100); do grep -q 'vpc Red7: prefix fd00:a::12/128 offered by more than one report; "
				 "keeping the lowest SID fcbb:bb00:1:2:e[0-9a-f]*::, dropping fcbb:bb00:1:9:e001::' %s/n1/agent.log && "
				 "grep -q 'vpc Red7: prefix fd00:a::12/128 via fcbb:bb00:1:2:e[0-9a-f]*:: lies inside fd00:a::12/127 via fcbb:bb00:1:9:e001::' "
				 "%s/n1/agent.log && exit 0; sleep 0.1; done; exit 1", T.dir, T.dir), 0);
	/* The kernel: both routes in node 1's VPC table, the /128 toward node 2. */
	ck_assert_int_eq(topo_sh("for _ in $(seq 100); do ip -n %s-n1 -6 route show table all proto 154 | grep -q '^fd00:a::12/127 .*encap seg6.*fcbb:bb00:1:9:e001::' && "
				 "exit 0; sleep 0.1; done; exit 1", T.prefix), 0);
	ck_assert_int_eq(topo_sh("ip -n %s-n1 -6 route show table all proto 154 | grep '^fd00:a::12 ' | grep -q 'encap seg6.*fcbb:bb00:1:2:e'", T.prefix), 0);
	/* No /128 toward the claimant (the Blu9 table has its own fd00:a::12, toward node 3). */
	ck_assert_int_ne(topo_sh("ip -n %s-n1 -6 route show table all proto 154 | grep '^fd00:a::12 ' | grep -q 'fcbb:bb00:1:9:'", T.prefix), 0);
	ck_assert_msg(ping_ok("red-1", "fd00:a::12", 25), "red-1 -> red-2 with a foreign report claiming its address");
	ck_assert_msg(ping_ok("red-1", "10.1.0.12", 25), "red-1 -> red-2 IPv4, untouched");
	/* Node 2 holds ::12 itself: it learns the claimant's /127 around it, the
	 * claim on its own address is refused as local, ::12 stays on the pod's
	 * veth, and red-2's report stays Programmed through several passes. */
	ck_assert(wait_learned(2, "Red7", "fd00:a::12/127", "fcbb:bb00:1:9:e", 10000));
	ck_assert_int_eq(topo_sh("for _ in $(seq 100); do ip -n %s-n2 -6 route show table all proto 154 | grep -q '^fd00:a::12/127 .*encap seg6' && "
				 "exit 0; sleep 0.1; done; exit 1", T.prefix), 0);
	ck_assert_int_ne(topo_sh("ip -n %s-n2 -6 route show table all proto 154 | grep '^fd00:a::12 ' | grep -q encap", T.prefix), 0);
	sleep(2); /* passes every second (--interval 1) */
	ck_assert(wait_programmed(2, "Red7", "R2", now_ms(), 2000) >= 0);
	ck_assert_msg(ping_ok("red-1", "fd00:a::12", 5), "red-1 -> red-2 after node 2 learned the claim");
	/* Logged when it appeared, not on every look at the reports since. */
	ck_assert_int_eq(topo_sh("test \"$(grep -c 'vpc Red7: prefix fd00:a::12/128 offered by more than one report' %s/n1/agent.log)\" = 1",
				 T.dir), 0);
	/* Gone: the /127 goes from node 1's record and kernel, red-2's route stays. */
	snprintf(path, sizeof(path), NATT_PATH "/%s", name);
	ck_assert_int_eq(kreq(&cp, "DELETE", path, NULL, NULL, NULL, NULL), 200);
	ck_assert(topo_sh("for _ in $(seq 100); do jq -e '[.remotes[] | select(.prefix==\"fd00:a::12/127\")] "
			  "| length == 0' %s/n1/record-remotes.json >/dev/null && exit 0; sleep 0.1; done; exit 1", T.dir) == 0);
	ck_assert_int_eq(topo_sh("for _ in $(seq 100); do ip -n %s-n1 -6 route show table all proto 154 | grep -q '^fd00:a::12/127 ' || "
				 "exit 0; sleep 0.1; done; exit 1", T.prefix), 0);
	ck_assert(learned(1, "Red7", "fd00:a::12/128", "fcbb:bb00:1:2:e"));
}

START_TEST(test_reports_routes_and_api_outage)
{
	double t0, ms, worst = 0, catchup;
	long before;
	int n;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);

	/* 1. Pods in two VPCs that reuse the same addresses; each report goes Programmed=True. */
	struct { const char *pod; int node; const char *vpc, *att, *a6, *a4; } pods[] = {
		{ "red-1", 1, "Red7", "R1", "fd00:a::11", "10.1.0.11" },
		{ "red-2", 2, "Red7", "R2", "fd00:a::12", "10.1.0.12" },
		{ "blue-1", 1, "Blu9", "B1", "fd00:a::11", "10.1.0.11" },
		{ "blue-2", 3, "Blu9", "B2", "fd00:a::12", "10.1.0.12" },
	};
	for (size_t i = 0; i < 4; i++) {
		t0 = now_ms();
		ck_assert_int_eq(cni("ADD", pods[i].pod, pods[i].node, pods[i].vpc, pods[i].att, pods[i].a6,
				     pods[i].a4), 0);
		ms = wait_programmed(pods[i].node, pods[i].vpc, pods[i].att, t0, 15000);
		ck_assert_msg(ms >= 0, "report of %s never Programmed=True", pods[i].pod);
		printf("report e2e: %s: CNI ADD -> NodeAttachment Programmed=True in %.0f ms\n", pods[i].pod, ms);
		worst = ms > worst ? ms : worst;
	}
	printf("report e2e: worst CNI ADD -> Programmed=True %.0f ms (4 pods)\n", worst);
	for (size_t i = 0; i < 4; i++)
		check_routes(pods[i].node, pods[i].vpc, pods[i].att, pods[i].a6, pods[i].a4);
	ck_assert_int_eq(only_agent_manages(), 4);
	/* Steady state writes nothing: reconciles every second, same resourceVersions. */
	{
		char rv1[512], rv2[512];

		ck_assert_int_eq(topo_out(rv1, sizeof(rv1), "%s/kubectl --kubeconfig %s get nodeattachments -n " RNS
					  " -o jsonpath='{.items[*].metadata.resourceVersion}'", cp.bin, cp.kubeconfig), 0);
		sleep(3);
		ck_assert_int_eq(topo_out(rv2, sizeof(rv2), "%s/kubectl --kubeconfig %s get nodeattachments -n " RNS
					  " -o jsonpath='{.items[*].metadata.resourceVersion}'", cp.bin, cp.kubeconfig), 0);
		ck_assert_str_eq(rv1, rv2);
		/* A restart of a healthy node writes no report (no per-process identity on them). */
		{
			pid_t old = topo_agent_pid(&T, 1);

			topo_agent_stop(&T, 1, SIGTERM);
			start_agent(1);
			ck_assert_int_ne(topo_agent_pid(&T, 1), old);
			sleep(4); /* the restarted agent's first passes (--interval 1) and its publisher */
			ck_assert_int_eq(topo_out(rv2, sizeof(rv2), "%s/kubectl --kubeconfig %s get nodeattachments -n " RNS
						  " -o jsonpath='{.items[*].metadata.resourceVersion}'", cp.bin,
						  cp.kubeconfig), 0);
			printf("report e2e: n1's agent restarted on a healthy node: report resourceVersions %s\n",
			       strcmp(rv1, rv2) ? "changed" : "unchanged (0 writes)");
			ck_assert_str_eq(rv1, rv2);
		}
	}

	/* 2. Routes come from the API only; each node learns only VPCs it hosts. */
	ck_assert(wait_learned(1, "Red7", "fd00:a::12/128", "fcbb:bb00:1:2:e", 10000));
	ck_assert(wait_learned(1, "Red7", "10.1.0.12/32", "fcbb:bb00:1:2:d", 10000));
	ck_assert(wait_learned(1, "Blu9", "fd00:a::12/128", "fcbb:bb00:1:3:e", 10000));
	ck_assert(wait_learned(2, "Red7", "fd00:a::11/128", "fcbb:bb00:1:1:e", 10000));
	ck_assert(wait_learned(3, "Blu9", "10.1.0.11/32", "fcbb:bb00:1:1:d", 10000));
	ck_assert_int_eq(topo_sh("jq -e '[.remotes[] | select(.vpc==\"Blu9\")] | length == 0' %s/n2/record-remotes.json >/dev/null", T.dir), 0);
	ck_assert_int_eq(topo_sh("jq -e '[.remotes[] | select(.vpc==\"Red7\")] | length == 0' %s/n3/record-remotes.json >/dev/null", T.dir), 0);
	ck_assert_msg(ping_ok("red-1", "fd00:a::12", 25), "red-1 -> red-2 IPv6 over SRv6");
	ck_assert_msg(ping_ok("red-1", "10.1.0.12", 25), "red-1 -> red-2 IPv4 (End.DX4)");
	ck_assert_msg(ping_ok("blue-1", "fd00:a::12", 25), "blue-1 -> blue-2 IPv6");
	ck_assert_msg(ping_ok("red-2", "10.1.0.11", 25), "red-2 -> red-1 IPv4");
	/* Isolation: the same address in the other VPC sees none of it. */
	before = rx("blue-2");
	ck_assert_int_eq(topo_sh("ip netns exec %s-red-1 ping -c 10 -i 0.1 -W 1 fd00:a::12 >/dev/null", T.prefix), 0);
	ck_assert_int_eq(rx("blue-2"), before);
	bad_foreign_report_is_ignored();
	delegated_block_reported_and_routed();
	overlapping_foreign_report();

	/* 3. The API server goes away. */
	ck_assert_int_eq(cp_ctl(&cp, "stop-apiserver"), 0);
	t0 = now_ms();
	ck_assert_int_eq(cni("ADD", "red-3", 3, "Red7", "R3", "fd00:a::13", "10.1.0.13"), 0);
	printf("report e2e: CNI ADD with the API server down: %.0f ms\n", now_ms() - t0);
	ck_assert_int_eq(cni("DEL", "blue-1", 1, "Blu9", "B1", "fd00:a::11", "10.1.0.11"), 0);
	ck_assert_msg(ping_ok("red-1", "fd00:a::12", 5), "running traffic stopped with the API down");
	ck_assert_msg(ping_ok("red-2", "10.1.0.11", 5), "running IPv4 traffic stopped with the API down");
	/* n3 now hosts Red7, but its learner watched only the reports of the VPCs
	 * it hosted (Blu9): Red7's routes come once the API is back (below). */
	sleep(2);
	ck_assert_msg(!learned(3, "Red7", "fd00:a::12/128", "fcbb:bb00:1:2:e"),
		      "n3 learned Red7 with the API down: its learner cached a VPC it did not host");

	/* Restart of n1's agent while the API is down: learned routes stay (durable file). */
	{
		pid_t old = topo_agent_pid(&T, 1);

		ck_assert_int_gt(old, 0);
		topo_agent_stop(&T, 1, SIGTERM);
		ck_assert_msg(kill(old, 0) != 0 || topo_sh("grep -q '^State:.*Z' /proc/%d/status", (int)old) == 0,
			      "agent n1 (pid %d) did not stop", (int)old);
		start_agent(1);
		ck_assert_int_ne(topo_agent_pid(&T, 1), old);
	}
	sleep(3); /* several reconciles (--interval 1) of the restarted agent */
	ck_assert(learned(1, "Red7", "fd00:a::12/128", "fcbb:bb00:1:2:e"));
	ck_assert_int_eq(topo_sh("ip -n %s-n1 -6 route show table all proto 154 | grep -q '^fd00:a::12 .*encap seg6'", T.prefix), 0);
	ck_assert_msg(ping_ok("red-1", "fd00:a::12", 5), "traffic after restart with the API down");

	/* 4. The API returns: the new report appears, the deleted one goes. */
	ck_assert_int_eq(cp_ctl(&cp, "start-apiserver"), 0);
	t0 = now_ms();
	ms = wait_programmed(3, "Red7", "R3", t0, 30000);
	ck_assert_msg(ms >= 0, "report of red-3 did not catch up within 30 s");
	ck_assert_msg(wait_gone(1, "Blu9", "B1", 30000 - (now_ms() - t0)), "report of blue-1 not deleted within 30 s");
	catchup = now_ms() - t0;
	printf("report e2e: after the API server returned: red-3 Programmed=True in %.0f ms, both caught up in %.0f ms\n",
	       ms, catchup);
	check_routes(3, "Red7", "R3", "fd00:a::13", "10.1.0.13");
	/* n3's learner now selects Red7 too. */
	ck_assert(wait_learned(3, "Red7", "fd00:a::12/128", "fcbb:bb00:1:2:e", 15000));
	/* And the others learn red-3 through it: traffic both ways. */
	ck_assert(wait_learned(1, "Red7", "fd00:a::13/128", "fcbb:bb00:1:3:e", 15000));
	ck_assert_msg(ping_ok("red-1", "fd00:a::13", 25), "red-1 -> red-3 after catch-up");
	ck_assert_msg(ping_ok("red-3", "10.1.0.12", 25), "red-3 -> red-2 IPv4 after catch-up");
	/* blue-1 is gone: n3 stops routing Blu9 toward it. */
	ck_assert(topo_sh("for _ in $(seq 100); do jq -e '[.remotes[] | select(.vpc==\"Blu9\" and .prefix==\"fd00:a::11/128\")] "
			  "| length == 0' %s/n3/record-remotes.json >/dev/null && exit 0; sleep 0.1; done; exit 1", T.dir) == 0);
	n = only_agent_manages();
	ck_assert_int_eq(n, 4); /* red-1, red-2, blue-2, red-3 */

	/* The sanitized agent (n2) exits cleanly and its sanitizers found nothing. */
	topo_agent_stop(&T, 2, SIGTERM);
	ck_assert_int_eq(topo_sh("grep -q 'exiting; kernel state left in place' %s/n2/agent.log", T.dir), 0);
	ck_assert_msg(topo_sh("grep -E 'AddressSanitizer|LeakSanitizer|runtime error' %s/n2/agent.log >&2", T.dir) != 0,
		      "sanitizer report in the n2 agent log");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report_e2e");
	TCase *tc = tcase_create("reports");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_reports_routes_and_api_outage);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
