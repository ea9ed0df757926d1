/*
 * Internet egress through each node's shard, end to end: a real
 * kube-apiserver + etcd with the faithful upstream EgressShard stand-in,
 * galactic-agent (release build) on three network-namespace nodes, pods
 * attached with the real galactic-cni binary and upstream's declaration
 * (`egress: {internet: {mode: Enabled}}`), an "internet" host on the fabric
 * (documentation addresses only: 2001:db8:f::ff, 203.0.113.254).
 *
 *   n<i>: a<i> (VpcA fd00:a::<i> 10.1.0.<i>), b<i> (VpcB, the same addresses)
 *         shard-n<i>: SID fcbb:bb00:1:<i>:f000::, 2001:db8:f::50:<i>, 203.0.113.<50+i>
 *
 *   - every agent learns its own node's shard from the API and writes its
 *     status (Programmed/AddressesProgrammed, Ready, the identity it runs);
 *     managedFields of the status: exactly galactic-agent/<node>;
 *   - every pod pings and opens TCP to the internet host; the host sees only
 *     the pod's node's shard address; each pod gets exactly its own replies
 *     (an nftables counter in each pod counts the echo replies of its own
 *     VPC's ping size and of the other VPC's: that one stays 0);
 *   - time from CNI ADD to the first egress ping answered;
 *   - with galactic-translator running (the binder) and the VPC operator's
 *     stand-in writing the attachments' ids: time from CNI ADD to the
 *     attachment's InternetEgressReady=True over 100 attachments; the claim's
 *     spec and status and the attachment's InternetEgressReady have exactly
 *     the translator's manager, the shard's status exactly its node's agent.
 * Both backends: TCase "kernel" and TCase "bpf" (agents with --backend bpf;
 * the bpf trie's egress default hands each pod packet to the shard marked
 * with its VPC: the nftables `decap` counter of the kernel path stays 0 and
 * the bpf per-VPC counters count the packets).
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/topo.h"

#include <curl/curl.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"

#define NS "galactic-system"
#define SHARDS "/apis/network.datumapis.com/v1alpha1/namespaces/" NS "/egressshards"
#define NODES 3
#define PODNS "default"
#define ATT_PATH "/apis/cloud.datumapis.com/v1alpha1/namespaces/" PODNS "/vpcattachments"
#define NC_PATH "/apis/networking.datumapis.com/v1alpha/namespaces/" PODNS "/networkcontexts"
#define ESC_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" PODNS "/egressshardclaims"
#define TR_MGR "galactic-translator"
#define NLAT 100

static struct cp cp;
static struct topo T;
static char skip_why[256];
static bool cp_is_up, bpf_mode;
static pid_t tr_pid;
static int tr_port;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The VPC operator's Status().Update (PUT of /status): the attachment's ids and its Ready. */
static void vpcop(const char *name, const char *vid, const char *aid)
{
	char p[300], q[340];

	snprintf(p, sizeof(p), ATT_PATH "/%s", name);
	snprintf(q, sizeof(q), "%s/status?fieldManager=vpc-operator", p);
	for (int i = 0; i < 50; i++) {
		json_t *o = kget(&cp, p, NULL);
		char *body;
		long code;

		ck_assert_ptr_nonnull(o);
		json_object_set_new(o, "status",
				    json_pack("{s:s, s:s, s:i, s:[{s:s, s:s, s:s, s:s, s:s}]}", "vpc", vid,
					      "vpcAttachment", aid, "observedGeneration", 1, "conditions", "type",
					      "Ready", "status", "True", "reason", "Ready", "message", "",
					      "lastTransitionTime", "2026-01-01T00:00:00Z"));
		body = json_dumps(o, JSON_COMPACT);
		code = kreq(&cp, "PUT", q, "application/json", body, NULL, NULL);
		free(body);
		json_decref(o);
		if (code == 200)
			return;
		ck_assert_int_eq(code, 409);
	}
	ck_abort_msg("PUT %s never landed", q);
}

/* The VPCAttachment of a pod (ids vid/aid), Ready from the VPC operator's stand-in. */
static void attachment(const char *name, const char *nc, const char *vid, const char *aid, bool lat)
{
	char body[900];

	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"%s\"%s},\"spec\":{\"vpc\":{\"name\":\"%s\"},"
		 "\"interface\":{\"name\":\"eth0\",\"mode\":\"Netns\"},\"interfaceRef\":{\"name\":\"%s\"}}}",
		 name, lat ? ",\"labels\":{\"lat\":\"yes\"}" : "", nc, name);
	ck_assert_int_eq(kreq(&cp, "POST", ATT_PATH, "application/json", body, NULL, NULL), 201);
	vpcop(name, vid, aid);
}

static void translator_start(void)
{
	char p[32], log[400], *argv[] = { "build/rel/bin/galactic-translator", "--kubeconfig", cp.kubeconfig,
					  "--namespace", NS, "--id", "tr-egress", "--lease-namespace", NS,
					  "--metrics-addr", p, "--log-level", "info", NULL };
	int port = gt_free_port();
	double t0;

	tr_port = port;
	snprintf(p, sizeof(p), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/translator.log", T.dir);
	tr_pid = gt_spawn(log, argv);
	ck_assert_int_gt(tr_pid, 0);
	for (t0 = gt_now(); gt_now() - t0 < 30 && gt_metric(port, "galactic_translator_leader") != 1;)
		usleep(50 * 1000);
	ck_assert_msg(gt_metric(port, "galactic_translator_leader") == 1, "translator did not lead (%s)", log);
}

static void setup_for(bool bpf)
{
	char cmd[1024], body[1024];

	bpf_mode = bpf;
	skip_why[0] = 0;
	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces");
		return;
	}
	if (bpf && topo_sh("build/rel/bin/galactic-bpf preflight --bpffs /sys/fs/bpf/galactic-egpf-%d >/dev/null 2>&1; "
			   "r=$?; rm -rf /sys/fs/bpf/galactic-egpf-%d; exit $r", (int)getpid(), (int)getpid())) {
		snprintf(skip_why, sizeof(skip_why), "bpf preflight refused on this kernel (galactic-bpf preflight; "
			 "probe 'bpf prog sched_cls (tc)')");
		return;
	}
	if (topo_sh("build/rel/bin/galactic-preflight --has 'sysctl net.netfilter.nf_hooks_lwtunnel' >/dev/null")) {
		snprintf(skip_why, sizeof(skip_why),
			 "kernel has no net.netfilter.nf_hooks_lwtunnel (preflight probe 'sysctl net.netfilter.nf_hooks_lwtunnel'): "
			 "decapsulated packets never reach netfilter");
		return;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	cp_is_up = true;
	ck_assert_msg(crds_install(&cp, NULL) == 0, "CRDs not established");
	snprintf(cmd, sizeof(cmd), "%s/kubectl --kubeconfig %s create namespace " NS " >/dev/null", cp.bin, cp.kubeconfig);
	ck_assert_msg(system(cmd) == 0, "namespace " NS " not created");
	/* the operator's shards, one per node */
	for (int i = 1; i <= NODES; i++) {
		snprintf(body, sizeof(body),
			 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"EgressShard\","
			 "\"metadata\":{\"name\":\"shard-n%d\"},\"spec\":{\"targetRef\":{\"kind\":\"Node\",\"name\":\"n%d\"},"
			 "\"shardSID\":\"fcbb:bb00:1:%x:f000::\",\"shardAddressIPv6\":\"2001:db8:f::50:%d\","
			 "\"shardAddressIPv4\":\"203.0.113.%d\",\"nat64Prefix\":\"64:ff9b::/96\"}}",
			 i, i, i, i, 50 + i);
		ck_assert_int_eq(kreq(&cp, "POST", SHARDS, "application/json", body, NULL, NULL), 201);
	}
	/* the networks (upstream's NetworkContext: internet egress Enabled, IPv6) and the pods' attachments */
	for (int v = 0; v < 2; v++) {
		snprintf(body, sizeof(body),
			 "{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkContext\","
			 "\"metadata\":{\"name\":\"vpc-%c\"},\"spec\":{\"location\":{\"name\":\"loc\"},"
			 "\"network\":{\"name\":\"net\"},\"egress\":{\"internet\":{\"mode\":\"Enabled\",\"reach\":[\"IPv6\"]}}}}",
			 v ? 'b' : 'a');
		ck_assert_int_eq(kreq(&cp, "POST", NC_PATH, "application/json", body, NULL, NULL), 201);
	}
	for (int i = 1; i <= NODES; i++)
		for (int v = 0; v < 2; v++) {
			char name[16], aid[16];

			snprintf(name, sizeof(name), "%c%d", v ? 'b' : 'a', i);
			snprintf(aid, sizeof(aid), "%c%d", v ? 'B' : 'A', i);
			attachment(name, v ? "vpc-b" : "vpc-a", v ? "VpcB" : "VpcA", aid, false);
		}
	ck_assert_int_eq(topo_up(&T, NODES), 0);
	ck_assert_int_eq(topo_add_internet(&T), 0);
	for (int i = 1; i <= NODES; i++) {
		char args[1024];

		ck_assert_int_eq(topo_sh("printf '{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":%d,"
					 "\"uplink\":\"up0\"},\"vpcs\":[],\"attachments\":[]}' >%s/n%d/state.json",
					 i, T.dir, i), 0);
		char bargs[128] = "";

		if (bpf)
			snprintf(bargs, sizeof(bargs), " --backend bpf --bpffs /sys/fs/bpf/%s-n%d", T.prefix, i);
		snprintf(args, sizeof(args), "--cni-socket %s/n%d/cni.sock --kubeconfig %s --node n%d "
			 "--report-namespace " NS " --egress-namespace " NS "%s", T.dir, i, cp.kubeconfig, i, bargs);
		ck_assert_int_gt(topo_agent_start(&T, i, args), 0);
	}
	for (int i = 1; i <= NODES; i++)
		ck_assert_msg(topo_sh("for _ in $(seq 100); do [ -S %s/n%d/cni.sock ] && exit 0; sleep 0.1; done; "
				      "cat %s/n%d/agent.log >&2; exit 1", T.dir, i, T.dir, i) == 0,
			      "agent n%d did not open its CNI socket", i);
	translator_start();
}

static void setup_kernel(void)
{
	setup_for(false);
}

static void setup_bpf(void)
{
	setup_for(true);
}

static void teardown(void)
{
	char prefix[sizeof(T.prefix)];

	if (getenv("GT_KEEP"))
		return;
	if (tr_pid > 0) {
		kill(tr_pid, SIGKILL);
		waitpid(tr_pid, NULL, 0);
		tr_pid = 0;
	}
	snprintf(prefix, sizeof(prefix), "%s", T.prefix);
	if (T.nodes)
		topo_down(&T);
	if (bpf_mode && prefix[0])
		topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2 /sys/fs/bpf/%s-n3", prefix, prefix, prefix);
	memset(&T, 0, sizeof(T));
	if (cp_is_up)
		cp_down(&cp);
	cp_is_up = false;
}

#define NEED()                                   \
	do {                                     \
		if (skip_why[0])                 \
			GT_SKIP("%s", skip_why); \
	} while (0)

/* galactic-cni ADD (or DEL) of pod on node with upstream's egress declaration. */
static int cni(const char *verb, const char *pod, int node, const char *vpc, const char *att, const char *a6,
	       const char *a4)
{
	char f[400];

	snprintf(f, sizeof(f), "%s/%s", T.dir, pod);
	if (!strcmp(verb, "ADD") &&
	    topo_sh("([ -e /run/netns/%s-%s ] || { ip netns add %s-%s && ip -n %s-%s link set lo up; }) && "
		    "printf '%%s' '{\"cniVersion\":\"1.1.0\",\"name\":\"vpc-%s\",\"type\":\"galactic-cni\","
		    "\"vpc\":\"%s\",\"vpcattachment\":\"%s\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],"
		    "\"addresses\":[{\"address\":\"%s/128\",\"gateway\":\"fe80::1\"},"
		    "{\"address\":\"%s/32\",\"gateway\":\"169.254.1.1\"}],\"mtu\":1400,"
		    "\"egress\":{\"internet\":{\"mode\":\"Enabled\"}},"
		    "\"agentSocket\":\"%s/n%d/cni.sock\"}' >%s.conf",
		    T.prefix, pod, T.prefix, pod, T.prefix, pod, vpc, vpc, att, a6, a4, T.dir, node, f))
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

static long ping1(const char *pod, const char *dst)
{
	return topo_sh("ip netns exec %s-%s ping -q -c 1 -W 1 %s >/dev/null 2>&1", T.prefix, pod, dst) == 0;
}

/* Packets of counter name of the pod's own nftables table "cnt". */
static long pod_counter(const char *pod, const char *name)
{
	char out[64];

	topo_out(out, sizeof(out), "ip netns exec %s-%s nft list counter inet cnt %s | "
		 "sed -n 's/.*packets \\([0-9]*\\).*/\\1/p'", T.prefix, pod, name);
	return out[0] ? atol(out) : -1;
}

/* Packets of the node's egress translator counter name (dp/egress.h). */
static long node_nft(int node, const char *name)
{
	char out[64];

	topo_out(out, sizeof(out), "ip netns exec %s-n%d nft list counter inet galactic_egress %s | "
		 "sed -n 's/.*packets \\([0-9]*\\).*/\\1/p'", T.prefix, node, name);
	return out[0] ? atol(out) : -1;
}

/* encap_packets of VPC id on node's bpf maps (galactic-bpf stats). */
static long bpf_vpc_packets(int node, const char *vpc)
{
	char out[64];

	topo_out(out, sizeof(out), "build/rel/bin/galactic-bpf stats --bpffs /sys/fs/bpf/%s-n%d --state-dir %s/n%d | "
		 "sed -n 's/.* id=%s .*encap_packets=\\([0-9]*\\).*/\\1/p'", T.prefix, node, T.dir, node, vpc);
	return out[0] ? atol(out) : -1;
}

static const json_t *cond(const json_t *o, const char *type)
{
	return kcond(o, type);
}

/* Waits until shard-n<i>'s status says Programmed=True; returns the object or NULL. */
static json_t *wait_shard(int i, double limit_ms)
{
	char path[256];
	double t0 = now_ms();

	snprintf(path, sizeof(path), SHARDS "/shard-n%d", i);
	while (now_ms() - t0 < limit_ms) {
		json_t *o = kget(&cp, path, NULL);
		const char *st = o ? kstr(cond(o, "Programmed"), "status", NULL) : NULL;

		if (st && !strcmp(st, "True"))
			return o;
		json_decref(o);
		usleep(100 * 1000);
	}
	return NULL;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void t_shards_report_what_they_run_body(void)
{
	NEED();
	for (int i = 1; i <= NODES; i++) {
		char want[64], mgr[64];
		json_t *o = wait_shard(i, 20000), *m;
		size_t k, n = 0;

		ck_assert_msg(o, "shard-n%d never Programmed (see %s/n%d/agent.log)", i, T.dir, i);
		snprintf(want, sizeof(want), "fcbb:bb00:1:%x:f000::", i);
		ck_assert_str_eq(kstr(json_object_get(o, "status"), "shardSID", NULL), want);
		snprintf(want, sizeof(want), "2001:db8:f::50:%d", i);
		ck_assert_str_eq(kstr(json_object_get(o, "status"), "shardAddressIPv6", NULL), want);
		snprintf(want, sizeof(want), "203.0.113.%d", 50 + i);
		ck_assert_str_eq(kstr(json_object_get(o, "status"), "shardAddressIPv4", NULL), want);
		ck_assert_str_eq(kstr(cond(o, "Programmed"), "reason", NULL), "AddressesProgrammed");
		ck_assert_str_eq(kstr(cond(o, "Ready"), "status", NULL), "True");
		ck_assert_int_eq(gj_int(o, "status.observedGeneration", -1), gj_int(o, "metadata.generation", -2));
		snprintf(mgr, sizeof(mgr), "galactic-agent/n%d", i);
		json_array_foreach(gj_get(o, "metadata.managedFields"), k, m) {
			const char *sub = kstr(m, "subresource", NULL);

			if (sub && !strcmp(sub, "status")) {
				ck_assert_str_eq(kstr(m, "manager", NULL), mgr);
				n++;
			}
		}
		ck_assert_uint_eq(n, 1);
		fprintf(stderr, "shard-n%d: %s %s %s, Programmed=%s/%s, status manager %s\n", i,
			gj_str(o, "status.shardSID"), gj_str(o, "status.shardAddressIPv6"),
			gj_str(o, "status.shardAddressIPv4"), kstr(cond(o, "Programmed"), "status", NULL),
			kstr(cond(o, "Programmed"), "reason", NULL), mgr);
		json_decref(o);
	}
}

static void t_pods_egress_through_their_node_body(void)
{
	double ms[2 * NODES * 8];
	int nms = 0;
	char a6[32], a4[32], pod[16], att[16], out[256];

	NEED();
	for (int i = 1; i <= NODES; i++)
		json_decref(wait_shard(i, 20000));
	/* rounds of ADD (and DEL) of every pod, CNI ADD -> first answered egress ping: 8 on the
	 * kernel backend (48 ADDs), 3 on bpf (18: the suite's time) */
	for (int round = 0; round < (bpf_mode ? 3 : 8); round++)
		for (int i = 1; i <= NODES; i++)
			for (int v = 0; v < 2; v++) {
				double t0;

				snprintf(pod, sizeof(pod), "%c%d", v ? 'b' : 'a', i);
				snprintf(att, sizeof(att), "%c%d", v ? 'B' : 'A', i);
				snprintf(a6, sizeof(a6), "fd00:a::%d", i);
				snprintf(a4, sizeof(a4), "10.1.0.%d", i);
				if (round)
					ck_assert_int_eq(cni("DEL", pod, i, v ? "VpcB" : "VpcA", att, a6, a4), 0);
				t0 = now_ms();
				ck_assert_int_eq(cni("ADD", pod, i, v ? "VpcB" : "VpcA", att, a6, a4), 0);
				while (!ping1(pod, "2001:db8:f::ff") && now_ms() - t0 < 10000)
					;
				ms[nms++] = now_ms() - t0;
				ck_assert_msg(ms[nms - 1] < 10000, "%s: no egress 10 s after ADD", pod);
			}
	qsort(ms, (size_t)nms, sizeof(ms[0]), cmp_d);
	fprintf(stderr, "CNI ADD -> first egress ping answered: p50 %.0f ms, p99 %.0f ms, max %.0f ms (n=%d)\n",
		ms[nms / 2], ms[(nms * 99) / 100], ms[nms - 1], nms);

	/*
	 * Every pod at once: its own replies only. VpcA pings with 56-byte
	 * payloads, VpcB with 120: an nftables counter in each pod counts echo
	 * replies of its own VPC's size ("own") and of the other's ("other").
	 */
	for (int k = 0; k < 2 * NODES; k++) {
		int own = k % 2 ? 120 : 56, other = k % 2 ? 56 : 120;

		snprintf(pod, sizeof(pod), "%c%d", k % 2 ? 'b' : 'a', k / 2 + 1);
		ck_assert_int_eq(topo_sh("printf '%%s\\n' 'table inet cnt {' 'counter own {}' 'counter other {}' "
					 "'chain in { type filter hook input priority 0; policy accept;' "
					 "'icmpv6 type echo-reply ip6 length %d counter name \"own\"' "
					 "'icmpv6 type echo-reply ip6 length %d counter name \"other\"' "
					 "'icmp type echo-reply ip length %d counter name \"own\"' "
					 "'icmp type echo-reply ip length %d counter name \"other\"' '}' '}' | "
					 "ip netns exec %s-%s nft -f -",
					 own + 8, other + 8, own + 28, other + 28, T.prefix, pod), 0);
	}
	ck_assert_int_eq(topo_sh("for p in a1 a2 a3; do ip netns exec %s-$p ping -q -c 4 -i 0.2 -W 1 -s 56 "
				 "2001:db8:f::ff >/dev/null & done; for p in b1 b2 b3; do ip netns exec %s-$p "
				 "ping -q -c 4 -i 0.2 -W 1 -s 120 2001:db8:f::ff >/dev/null & done; wait", T.prefix,
				 T.prefix), 0);
	for (int k = 0; k < 2 * NODES; k++) {
		snprintf(pod, sizeof(pod), "%c%d", k % 2 ? 'b' : 'a', k / 2 + 1);
		ck_assert_msg(pod_counter(pod, "own") == 4, "%s: %ld own echo replies for 4 requests", pod,
			      pod_counter(pod, "own"));
		ck_assert_msg(pod_counter(pod, "other") == 0, "%s: %ld echo replies of the other VPC", pod,
			      pod_counter(pod, "other"));
	}
	/* IPv4 too (each shard has an IPv4 address), VPC sizes again */
	for (int k = 0; k < 2 * NODES; k++) {
		char cmd[64];

		snprintf(pod, sizeof(pod), "%c%d", k % 2 ? 'b' : 'a', k / 2 + 1);
		snprintf(cmd, sizeof(cmd), "-s %d 203.0.113.254", k % 2 ? 120 : 56);
		if (!ping1(pod, cmd) && !ping1(pod, cmd)) {
			int node = k / 2 + 1;

			topo_sh("{ ip -n %s-n%d -4 rule; ip -n %s-n%d -4 route show table all | grep -v '^local\\|^broadcast'; "
				"ip -n %s-n%d -4 addr; ip netns exec %s-n%d nft list ruleset; "
				"ip netns exec %s-n%d conntrack -L 2>/dev/null; ip netns exec %s-n%d sysctl net.ipv4.conf.all.rp_filter "
				"net.ipv4.ip_forward; build/rel/bin/galactic-bpf stats --bpffs /sys/fs/bpf/%s-n%d; "
				"ip netns exec %s-n%d nstat -az | grep '^Ip\\|^TcpExt.*Martian'; "
				"for l in $(ip -n %s-n%d -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -v 'lo\\|up0'); do "
				"ip netns exec %s-n%d sysctl net.ipv4.conf.$l.rp_filter net.ipv4.conf.$l.forwarding; "
				"ip -n %s-n%d route get 203.0.113.254 from 10.1.0.%d iif $l mark 0x100001; done; "
				"ip -n %s-%s -s link show eth0; } >&2",
				T.prefix, node, T.prefix, node, T.prefix, node, T.prefix, node, T.prefix, node, T.prefix, node,
				T.prefix, node, T.prefix, node, T.prefix, node, T.prefix, node, T.prefix, node, node,
				T.prefix, pod);
			ck_abort_msg("%s: no IPv4 egress", pod);
		}
	}
	for (int k = 0; k < 2 * NODES; k++) {
		snprintf(pod, sizeof(pod), "%c%d", k % 2 ? 'b' : 'a', k / 2 + 1);
		ck_assert_msg(pod_counter(pod, "own") >= 5, "%s: no own IPv4 echo reply", pod);
		ck_assert_msg(pod_counter(pod, "other") == 0, "%s: %ld echo replies of the other VPC", pod,
			      pod_counter(pod, "other"));
	}
	fprintf(stderr, "cross-VPC echo replies: 0 in each of the 6 pods (%s backend)\n", bpf_mode ? "bpf" : "kernel");
	/* TCP: the internet host answers each connection with the peer address it saw */
	{
		pid_t srv = topo_echo_server(&T, 2 * NODES, 8080);
		int st;

		ck_assert_int_gt(srv, 0);
		for (int k = 0; k < 2 * NODES; k++) {
			char want[64];
			int node = k / 2 + 1;

			snprintf(pod, sizeof(pod), "%c%d", k % 2 ? 'b' : 'a', node);
			topo_out(out, sizeof(out), "ip netns exec %s-%s sh -c 'printf %s | nc -N -w 3 -p 40000 2001:db8:f::ff 8080'",
				 T.prefix, pod, pod);
			fprintf(stderr, "tcp %s: %s\n", pod, out);
			/* its own payload back (its own reply), from its own node's shard address */
			snprintf(want, sizeof(want), "%s 2001:db8:f::50:%d ", pod, node);
			ck_assert_msg(!strncmp(out, want, strlen(want)), "%s got '%s', want '%s...'", pod, out, want);
		}
		ck_assert_int_eq(waitpid(srv, &st, 0), srv);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server status %d", st);
	}
	/* which path carried it: each node translated flows; on bpf no packet took the kernel's seg6 path */
	for (int i = 1; i <= NODES; i++) {
		long decap = node_nft(i, "decap"), snat6 = node_nft(i, "snat6"), un = node_nft(i, "untranslated");

		fprintf(stderr, "n%d: nft decap %ld snat6 %ld snat4 %ld replies %ld untranslated %ld", i, decap, snat6,
			node_nft(i, "snat4"), node_nft(i, "replies"), un);
		ck_assert_int_gt(snat6, 0);
		ck_assert_int_eq(un, 0);
		if (bpf_mode) {
			long pa = bpf_vpc_packets(i, "VpcA"), pb = bpf_vpc_packets(i, "VpcB");

			fprintf(stderr, "; bpf toward the shard: VpcA %ld VpcB %ld packets\n", pa, pb);
			ck_assert_int_eq(decap, 0);
			ck_assert_int_gt(pa, 0);
			ck_assert_int_gt(pb, 0);
			/* the VPC tables keep their unreachable default: the trie routes egress */
			ck_assert_int_ne(topo_sh("ip -n %s-n%d -6 route show table all | grep -q 'encap seg6 mode encap.red segs 1 \\[ fcbb:bb00:1:%x:c'",
						 T.prefix, i, i), 0);
		} else {
			fprintf(stderr, "\n");
			ck_assert_int_gt(decap, 0);
		}
	}
}

/*
 * Watches the lat=yes attachments (kubectl get -w, one line per event:
 * name, status.node, InternetEgressReady's status): the first time each has
 * status.node and InternetEgressReady=True. A watch, not a poll: listing
 * 100 objects every few ms would load the API server it measures.
 */
struct lat {
	double t_node[NLAT], t_ready[NLAT];
	pid_t pid;
	int fd;
};

static void *watcher(void *arg)
{
	struct lat *l = arg;
	FILE *f = fdopen(l->fd, "r");
	char line[512];

	while (f && fgets(line, sizeof(line), f)) {
		double now = now_ms();
		char name[64] = "", node[64] = "", ier[16] = "";
		int n;

		if (sscanf(line, "%63s %63s %15s", name, node, ier) < 2 || sscanf(name, "l%d", &n) != 1 || n < 0 ||
		    n >= NLAT)
			continue;
		if (!l->t_node[n] && strcmp(node, "-"))
			l->t_node[n] = now;
		if (!l->t_ready[n] && !strcmp(ier, "True"))
			l->t_ready[n] = now;
	}
	if (f)
		fclose(f);
	return NULL;
}

static int watch_start(struct lat *l)
{
	int p[2];

	if (pipe(p))
		return -1;
	l->pid = fork();
	if (l->pid == 0) {
		char kc[300];

		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		snprintf(kc, sizeof(kc), "%s/kubectl", cp.bin);
		execl(kc, "kubectl", "--kubeconfig", cp.kubeconfig, "-n", PODNS, "get", "vpcattachments", "-l",
		      "lat=yes", "-w", "-o",
		      "jsonpath={.metadata.name} {.status.node}{\"-\"} "
		      "{.status.conditions[?(@.type==\"InternetEgressReady\")].status}{\"\\n\"}",
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	l->fd = p[0];
	return l->pid > 0 ? 0 : -1;
}

/* The sum of every sample of metric name (all label sets) on the translator's /metrics. */
static double tr_metric_sum(const char *name)
{
	char *body = NULL, *line, *save = NULL;
	double sum = 0;
	size_t n = strlen(name);

	if (gt_http_get(tr_port, "/metrics", &body) != 200 || !body) {
		free(body);
		return -1;
	}
	for (line = strtok_r(body, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, name, n) && (line[n] == ' ' || line[n] == '{')) {
			const char *v = strrchr(line, ' ');

			sum += v ? atof(v + 1) : 0;
		}
	free(body);
	return sum;
}

/* Time from CNI ADD to the attachment's InternetEgressReady=True (agent reports, translator binds). */
static void t_add_to_internet_egress_ready_100_body(void)
{
	static struct lat l;
	double t0[NLAT], d[NLAT], dn[NLAT], dr[NLAT], start;
	char name[16], aid[16], a6[40], a4[32];
	pthread_t th;
	int done = 0;

	NEED();
	memset(&l, 0, sizeof(l));
	for (int i = 1; i <= NODES; i++)
		json_decref(wait_shard(i, 20000));
	for (int k = 0; k < NLAT; k++) {
		snprintf(name, sizeof(name), "l%d", k);
		snprintf(aid, sizeof(aid), "L%d", k);
		attachment(name, k % 2 ? "vpc-b" : "vpc-a", k % 2 ? "VpcB" : "VpcA", aid, true);
	}
	double m0[4];
	static const char *const mn[4] = { "galactic_translator_reconciles_total", "galactic_translator_status_writes_total",
					   "galactic_translator_conflicts_total",
					   "galactic_translator_new_report_deferrals_total" };

	for (int i = 0; i < 4; i++)
		m0[i] = tr_metric_sum(mn[i]);
	ck_assert_int_eq(watch_start(&l), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, watcher, &l), 0);
	usleep(500 * 1000); /* the watch's initial list is in */
	start = now_ms();
	for (int k = 0; k < NLAT; k++) {
		snprintf(name, sizeof(name), "l%d", k);
		snprintf(aid, sizeof(aid), "L%d", k);
		snprintf(a6, sizeof(a6), "fd00:b::%x", 0x100 + k);
		snprintf(a4, sizeof(a4), "10.2.%d.%d", k / 200, k % 200 + 1);
		t0[k] = now_ms();
		ck_assert_int_eq(cni("ADD", name, k % NODES + 1, k % 2 ? "VpcB" : "VpcA", aid, a6, a4), 0);
	}
	fprintf(stderr, "%d CNI ADDs in %.1f s\n", NLAT, (now_ms() - start) / 1e3);
	while (now_ms() - start < 120000) {
		done = 0;
		for (int k = 0; k < NLAT; k++)
			done += l.t_ready[k] > 0;
		if (done == NLAT)
			break;
		usleep(50 * 1000);
	}
	kill(l.pid, SIGTERM);
	waitpid(l.pid, NULL, 0);
	pthread_join(th, NULL);
	ck_assert_msg(done == NLAT, "only %d of %d attachments reached InternetEgressReady=True", done, NLAT);
	double load[3] = { 0 };
	{
		FILE *la = fopen("/proc/loadavg", "r");

		if (la) {
			if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
				load[0] = -1;
			fclose(la);
		}
		fprintf(stderr, "  translator during the %d (first ADD to last Ready, %.1f s): %.0f reconciles, %.0f status "
			"writes, %.0f conflicts, %.0f new-report deferrals; load average %.1f\n", NLAT,
			(now_ms() - start) / 1e3, tr_metric_sum(mn[0]) - m0[0], tr_metric_sum(mn[1]) - m0[1],
			tr_metric_sum(mn[2]) - m0[2], tr_metric_sum(mn[3]) - m0[3], load[0]);
	}
	for (int k = 0; k < NLAT; k++) {
		ck_assert_msg(l.t_node[k] > 0, "l%d: status.node never seen", k);
		d[k] = l.t_ready[k] - t0[k];
		dn[k] = l.t_node[k] - t0[k];      /* agent report + translator: status.node */
		dr[k] = l.t_ready[k] - l.t_node[k]; /* the binder: claim, bind, condition */
	}
	qsort(d, NLAT, sizeof(d[0]), cmp_d);
	qsort(dn, NLAT, sizeof(dn[0]), cmp_d);
	qsort(dr, NLAT, sizeof(dr[0]), cmp_d);
	fprintf(stderr, "  of which CNI ADD -> status.node: p50 %.0f ms, p99 %.0f ms; status.node -> "
		"InternetEgressReady=True: p50 %.0f ms, p99 %.0f ms\n", dn[NLAT / 2], dn[NLAT * 99 / 100 - 1],
		dr[NLAT / 2], dr[NLAT * 99 / 100 - 1]);
	fprintf(stderr, "MEASURE: CNI ADD -> InternetEgressReady=True (%s backend, 3 nodes, translator) over %d "
		"attachments: p50 %.0f ms, p99 %.0f ms, max %.0f ms (kubectl watch)\n",
		bpf_mode ? "bpf" : "kernel", NLAT, d[NLAT / 2], d[NLAT * 99 / 100 - 1], d[NLAT - 1]);
	{
		FILE *f = fopen("build/egress-ready.json", bpf_mode ? "a" : "w");

		if (f) {
			fprintf(f, "{\"name\":\"cni_add_to_internet_egress_ready\",\"backend\":\"%s\",\"n\":%d,"
				"\"p50_ms\":%.0f,\"p99_ms\":%.0f,\"max_ms\":%.0f,\"add_to_node_p50_ms\":%.0f,"
				"\"add_to_node_p99_ms\":%.0f,\"node_to_ready_p50_ms\":%.0f,\"node_to_ready_p99_ms\":%.0f,"
				"\"loadavg_1m\":%.1f}\n",
				bpf_mode ? "bpf" : "kernel", NLAT, d[NLAT / 2], d[NLAT * 99 / 100 - 1], d[NLAT - 1],
				dn[NLAT / 2], dn[NLAT * 99 / 100 - 1], dr[NLAT / 2], dr[NLAT * 99 / 100 - 1], load[0]);
			fclose(f);
		}
	}
}

/* The managers in o's managedFields whose fieldsV1 has top (and sub under it). */
static int managers_of(const json_t *o, const char *top, const char *sub, const char *subresource, char m[4][64])
{
	const json_t *e;
	size_t i;
	int n = 0;

	json_array_foreach(gj_get(o, "metadata.managedFields"), i, e) {
		const json_t *t = json_object_get(json_object_get(e, "fieldsV1"), top);
		const char *sr = kstr(e, "subresource", NULL);

		if (subresource && (!sr || strcmp(sr, subresource)))
			continue;
		if (t && (!sub || json_object_get(t, sub)) && n < 4)
			snprintf(m[n++], 64, "%s", kstr(e, "manager", NULL) ?: "?");
	}
	return n;
}

/* Ownership on the real objects the real agents and translator wrote. */
static void t_managed_fields_body(void)
{
	char m[4][64], path[256], mgr[64];

	NEED();
	for (int k = 0; k < 2 * NODES; k++) {
		int node = k / 2 + 1;
		char name[16];
		json_t *a = NULL, *c;
		double t0 = now_ms();

		snprintf(name, sizeof(name), "%c%d", k % 2 ? 'b' : 'a', node);
		snprintf(path, sizeof(path), ATT_PATH "/%s", name);
		while (now_ms() - t0 < 20000) {
			const json_t *ier;

			json_decref(a);
			a = kget(&cp, path, NULL);
			ier = a ? kcond(a, "InternetEgressReady") : NULL;
			if (ier && !strcmp(kstr(ier, "status", NULL) ?: "", "True"))
				break;
			usleep(100 * 1000);
		}
		ck_assert_msg(a && !strcmp(kstr(kcond(a, "InternetEgressReady"), "status", NULL) ?: "", "True"),
			      "%s: InternetEgressReady never True (translator log: %s/translator.log)", name, T.dir);
		ck_assert_int_eq(managers_of(a, "f:status", "f:conditions", NULL, m) >= 1, 1);
		{
			/* the condition item k:{"type":"InternetEgressReady"}: the translator alone */
			const json_t *e;
			size_t i;
			int n = 0;

			json_array_foreach(gj_get(a, "metadata.managedFields"), i, e) {
				const json_t *cs = json_object_get(
					json_object_get(json_object_get(e, "fieldsV1"), "f:status"), "f:conditions");

				if (json_object_get(cs, "k:{\"type\":\"InternetEgressReady\"}")) {
					ck_assert_str_eq(kstr(e, "manager", NULL), TR_MGR);
					n++;
				}
			}
			ck_assert_int_eq(n, 1);
		}
		ck_assert_ptr_nonnull(strstr(kstr(kcond(a, "InternetEgressReady"), "message", NULL) ?: "", "2001:db8:f::50:"));
		snprintf(path, sizeof(path), ESC_PATH "/%s", name);
		c = kget(&cp, path, NULL);
		ck_assert_msg(c, "%s: no EgressShardClaim", name);
		ck_assert_int_eq(managers_of(c, "f:spec", NULL, NULL, m), 1);
		ck_assert_str_eq(m[0], TR_MGR);
		ck_assert_int_eq(managers_of(c, "f:status", NULL, NULL, m), 1);
		ck_assert_str_eq(m[0], TR_MGR);
		ck_assert_str_eq(gj_str(c, "spec.nodeName"), kstr(json_object_get(a, "status"), "node", NULL));
		snprintf(mgr, sizeof(mgr), "shard-n%d", node);
		ck_assert_str_eq(kstr(gj_get(c, "status.shardRef"), "name", NULL), mgr);
		json_decref(c);
		json_decref(a);
	}
	for (int i = 1; i <= NODES; i++) {
		json_t *o;

		snprintf(path, sizeof(path), SHARDS "/shard-n%d", i);
		o = kget(&cp, path, NULL);
		snprintf(mgr, sizeof(mgr), "galactic-agent/n%d", i);
		ck_assert_int_eq(managers_of(o, "f:status", NULL, NULL, m), 1);
		ck_assert_str_eq(m[0], mgr);
		json_decref(o);
	}
	fprintf(stderr, "managedFields: 6 claims spec+status %s only, 6 InternetEgressReady %s only, "
		"3 shard statuses galactic-agent/<node> only (%s backend)\n", TR_MGR, TR_MGR, bpf_mode ? "bpf" : "kernel");
}


/* One test per backend (tests/expected-skips names each with its own probe). */
START_TEST(t_shards_report_what_they_run)
{
	t_shards_report_what_they_run_body();
}
END_TEST

START_TEST(t_bpf_shards_report_what_they_run)
{
	t_shards_report_what_they_run_body();
}
END_TEST

START_TEST(t_pods_egress_through_their_node)
{
	t_pods_egress_through_their_node_body();
}
END_TEST

START_TEST(t_bpf_pods_egress_through_their_node)
{
	t_pods_egress_through_their_node_body();
}
END_TEST

START_TEST(t_managed_fields)
{
	t_managed_fields_body();
}
END_TEST

START_TEST(t_bpf_managed_fields)
{
	t_managed_fields_body();
}
END_TEST

START_TEST(t_add_to_internet_egress_ready_100)
{
	t_add_to_internet_egress_ready_100_body();
}
END_TEST

START_TEST(t_bpf_add_to_internet_egress_ready_100)
{
	t_add_to_internet_egress_ready_100_body();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("egress");

	for (int b = 0; b < 2; b++) {
		TCase *tc = tcase_create(b ? "bpf" : "kernel");

		tcase_add_unchecked_fixture(tc, b ? setup_bpf : setup_kernel, teardown);
		tcase_set_timeout(tc, 300);
		if (b) {
			tcase_add_test(tc, t_bpf_shards_report_what_they_run);
			tcase_add_test(tc, t_bpf_pods_egress_through_their_node);
			tcase_add_test(tc, t_bpf_managed_fields);
			tcase_add_test(tc, t_bpf_add_to_internet_egress_ready_100);
		} else {
			tcase_add_test(tc, t_shards_report_what_they_run);
			tcase_add_test(tc, t_pods_egress_through_their_node);
			tcase_add_test(tc, t_managed_fields);
			tcase_add_test(tc, t_add_to_internet_egress_ready_100);
		}
		suite_add_tcase(s, tc);
	}
	return gt_run(s);
}
