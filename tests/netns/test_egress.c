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
 *     the pod's node's shard address; each pod gets exactly its own replies;
 *   - time from CNI ADD to the first egress ping answered.
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/topo.h"

#include <curl/curl.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
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

static void setup(void)
{
	char cmd[1024], body[1024];

	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces");
		return;
	}
	if (access("/proc/sys/net/netfilter/nf_hooks_lwtunnel", F_OK)) {
		snprintf(skip_why, sizeof(skip_why),
			 "kernel has no net.netfilter.nf_hooks_lwtunnel: decapsulated packets never reach netfilter");
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
	ck_assert_int_eq(topo_up(&T, NODES), 0);
	ck_assert_int_eq(topo_add_internet(&T), 0);
	for (int i = 1; i <= NODES; i++) {
		char args[1024];

		ck_assert_int_eq(topo_sh("printf '{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":%d,"
					 "\"uplink\":\"up0\"},\"vpcs\":[],\"attachments\":[]}' >%s/n%d/state.json",
					 i, T.dir, i), 0);
		snprintf(args, sizeof(args), "--cni-socket %s/n%d/cni.sock --kubeconfig %s --node n%d "
			 "--report-namespace " NS " --egress-namespace " NS, T.dir, i, cp.kubeconfig, i);
		ck_assert_int_gt(topo_agent_start(&T, i, args), 0);
	}
	for (int i = 1; i <= NODES; i++)
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
	    topo_sh("(ip netns list | grep -qw %s-%s || { ip netns add %s-%s && ip -n %s-%s link set lo up; }) && "
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

static long snmp6(const char *pod, const char *k)
{
	char out[64];

	topo_out(out, sizeof(out), "ip netns exec %s-%s awk '$1==\"%s\"{print $2}' /proc/net/snmp6", T.prefix, pod, k);
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

/* TCP echo server on the internet host: answers "<payload> <peer address>\n", one line per connection. */
static pid_t server_start(int conns, int port)
{
	char path[128];
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
		int fd, one = 1, zero = 0;

		close(p[0]);
		alarm(20);
		snprintf(path, sizeof(path), "/run/netns/%s-inet", T.prefix);
		fd = open(path, O_RDONLY);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(2);
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16))
			_exit(3);
		if (write(p[1], "r", 1) != 1)
			_exit(4);
		for (int i = 0; i < conns; i++) {
			struct sockaddr_in6 peer;
			socklen_t pl = sizeof(peer);
			char buf[32] = "", host[INET6_ADDRSTRLEN], line[128];
			int c = accept(fd, (struct sockaddr *)&peer, &pl);
			ssize_t k;

			if (c < 0)
				_exit(5);
			k = read(c, buf, sizeof(buf) - 1);
			buf[k > 0 ? k : 0] = 0;
			inet_ntop(AF_INET6, &peer.sin6_addr, host, sizeof(host));
			snprintf(line, sizeof(line), "%s %s %u\n", buf, host, ntohs(peer.sin6_port));
			if (write(c, line, strlen(line)) < 0)
				_exit(6);
			close(c);
		}
		_exit(0);
	}
	close(p[1]);
	{
		char c;

		if (read(p[0], &c, 1) != 1) {
			close(p[0]);
			return -1;
		}
	}
	close(p[0]);
	return pid;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

START_TEST(t_shards_report_what_they_run)
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
END_TEST

START_TEST(t_pods_egress_through_their_node)
{
	double ms[2 * NODES * 8];
	int nms = 0;
	char a6[32], a4[32], pod[16], att[16], out[256];

	NEED();
	for (int i = 1; i <= NODES; i++)
		json_decref(wait_shard(i, 20000));
	/* 8 rounds of ADD (and DEL) of every pod: CNI ADD -> first answered egress ping */
	for (int round = 0; round < 8; round++)
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

	/* every pod at once: its own replies only, the internet sees its node's shard */
	{
		long before[2 * NODES], after;

		for (int k = 0; k < 2 * NODES; k++) {
			snprintf(pod, sizeof(pod), "%c%d", k % 2 ? 'b' : 'a', k / 2 + 1);
			before[k] = snmp6(pod, "Icmp6InEchoReplies");
		}
		ck_assert_int_eq(topo_sh("for p in a1 b1 a2 b2 a3 b3; do ip netns exec %s-$p ping -q -c 4 -i 0.2 -W 1 "
					 "2001:db8:f::ff >/dev/null & done; wait", T.prefix), 0);
		for (int k = 0; k < 2 * NODES; k++) {
			snprintf(pod, sizeof(pod), "%c%d", k % 2 ? 'b' : 'a', k / 2 + 1);
			after = snmp6(pod, "Icmp6InEchoReplies");
			ck_assert_msg(after - before[k] == 4, "%s: %ld echo replies for 4 requests", pod, after - before[k]);
		}
	}
	/* IPv4 too (each shard has an IPv4 address) */
	for (int k = 0; k < 2 * NODES; k++) {
		snprintf(pod, sizeof(pod), "%c%d", k % 2 ? 'b' : 'a', k / 2 + 1);
		ck_assert_msg(ping1(pod, "203.0.113.254") || ping1(pod, "203.0.113.254"), "%s: no IPv4 egress", pod);
	}
	/* TCP: the internet host answers each connection with the peer address it saw */
	{
		pid_t srv = server_start(2 * NODES, 8080);
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
}
END_TEST

int main(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("egress");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, t_shards_report_what_they_run);
	tcase_add_test(tc, t_pods_egress_through_their_node);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
