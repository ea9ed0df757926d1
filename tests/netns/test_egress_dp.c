/*
 * The egress shard in the kernel backend, with real traffic (docs/dataplane-egress.md).
 *
 *   n1: a1 (vpcA fd00:a::5 10.1.0.5, egress IPv6+IPv4)
 *       b1 (vpcB fd00:a::5 10.1.0.5, egress IPv6+IPv4)   shard 2001:db8:f::50:1 203.0.113.51
 *   n2: a2 (vpcA fd00:a::6 10.1.0.6, egress IPv6 only)  shard 2001:db8:f::50:2 203.0.113.52
 *   inet: the "internet" host 2001:db8:f::ff 203.0.113.254 on the fabric
 *
 * The backend is driven directly with a desired state (the agent's record
 * holds the same fields); the internet host runs a TCP echo server that
 * answers each connection with the peer address it saw, so "the internet
 * sees only the shard's address" and "each reply reaches its own pod" are
 * read from the traffic itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/dp/backend.h"
#include "agent/dp/egress.h"
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

static struct topo T;
static int setup_ok;
static struct gdp_backend *B[3];
static struct gdp_state S[3];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void add_att(struct gdp_state *s, const struct topo_pod *p, unsigned egress)
{
	struct gdp_attachment a;
	unsigned m[6];

	memset(&a, 0, sizeof(a));
	snprintf(a.vpc, sizeof(a.vpc), "%s", p->vpc);
	snprintf(a.id, sizeof(a.id), "%s", p->name);
	snprintf(a.host_ifname, sizeof(a.host_ifname), "%s", p->hostif);
	snprintf(a.container_id, sizeof(a.container_id), "c-%s", p->name);
	a.arg = p->arg;
	gdp_prefix_parse(p->a6, &a.addrs[0]);
	gdp_prefix_parse(p->a4, &a.addrs[1]);
	a.n_addrs = 2;
	a.nh4 = gdp_default_nh4(a.arg);
	sscanf(p->mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]);
	for (int i = 0; i < 6; i++)
		a.pod_mac[i] = (uint8_t)m[i];
	a.egress = egress;
	gdp_state_add_attachment(s, &a);
}

static void node_state(int n)
{
	struct gdp_state *s = &S[n];
	struct gdp_vpc v;
	char a[64];

	gdp_state_free(s);
	gdp_state_init(s);
	s->node = (struct gdp_node){ .block = { 0xfc, 0xbb, 0xbb, 0x00, 0x00, 0x01 }, .node_id = (uint16_t)n, .uplink = "up0" };
	for (int i = 0; i < 2; i++) {
		memset(&v, 0, sizeof(v));
		snprintf(v.id, sizeof(v.id), "%s", i ? TOPO_VPC_B : TOPO_VPC_A);
		v.arg = (uint16_t)(i + 1);
		v.table = i ? TOPO_TABLE_B : TOPO_TABLE_A;
		gdp_prefix_parse("fd00:a::/64", &v.prefixes[0]);
		gdp_prefix_parse("10.1.0.0/16", &v.prefixes[1]);
		v.n_prefixes = 2;
		gdp_state_add_vpc(s, &v);
	}
	for (int i = 0; i < T.npods; i++)
		if (T.pods[i].node == n)
			add_att(s, &T.pods[i], !strcmp(T.pods[i].name, "a2") ? GDP_FAM_V6 : GDP_FAM_V4 | GDP_FAM_V6);
	s->egress.have = true;
	snprintf(a, sizeof(a), "fcbb:bb00:1:%x:f000::", n);
	inet_pton(AF_INET6, a, &s->egress.sid);
	snprintf(a, sizeof(a), "2001:db8:f::50:%d", n);
	inet_pton(AF_INET6, a, &s->egress.addr6);
	s->egress.have_v4 = true;
	snprintf(a, sizeof(a), "203.0.113.%d", 50 + n);
	inet_pton(AF_INET, a, &s->egress.addr4);
}

static int apply(int n, struct gdp_results *res)
{
	return B[n]->ops->apply(B[n], &S[n], res);
}

/* What the agent needs in a node's netns (preflight probe, as tests/expected-skips names it). */
static bool lwtunnel_hooks;

static void setup(void)
{
	char err[256], ns[64];

	setup_ok = 0;
	if (geteuid() != 0)
		return;
	lwtunnel_hooks = !topo_sh("build/rel/bin/galactic-preflight --has 'sysctl net.netfilter.nf_hooks_lwtunnel' >/dev/null");
	if (topo_up(&T, 2) ||
	    topo_add_pod(&T, 1, "a1", TOPO_VPC_A, "fd00:a::5", "10.1.0.5") < 0 ||
	    topo_add_pod(&T, 1, "b1", TOPO_VPC_B, "fd00:a::5", "10.1.0.5") < 0 ||
	    topo_add_pod(&T, 2, "a2", TOPO_VPC_A, "fd00:a::6", "10.1.0.6") < 0 || topo_add_internet(&T))
		return;
	for (int n = 1; n <= 2; n++) {
		struct gdp_backend_opts o = { .netns = topo_node_ns(&T, n, ns, sizeof(ns)) };

		if (gdp_kernel_backend.open(&B[n], &o, err, sizeof(err))) {
			fprintf(stderr, "open backend n%d: %s\n", n, err);
			return;
		}
		node_state(n);
	}
	setup_ok = 1;
}

static void teardown(void)
{
	for (int n = 1; n <= 2; n++) {
		if (B[n])
			B[n]->ops->close(B[n]);
		B[n] = NULL;
		gdp_state_free(&S[n]);
	}
	topo_down(&T);
}

#define NEED_TOPO()                                                                \
	do {                                                                       \
		if (geteuid() != 0)                                                \
			GT_SKIP("needs root for network namespaces");             \
		if (!lwtunnel_hooks)                                               \
			GT_SKIP("kernel has no net.netfilter.nf_hooks_lwtunnel (probe 'sysctl net.netfilter.nf_hooks_lwtunnel')"); \
		ck_assert_msg(setup_ok, "topology failed to come up (see %s)", T.dir); \
	} while (0)

static long ping(const char *pod, const char *dst, int count)
{
	char out[256];

	topo_out(out, sizeof(out),
		 "ip netns exec %s-%s ping -q -c %d -i 0.2 -W 1 %s | sed -n 's/.* \\([0-9]*\\) received.*/\\1/p'",
		 T.prefix, pod, count, dst);
	return out[0] ? atol(out) : -1;
}

static void assert_programmed(int n)
{
	struct gdp_results res;
	struct gdp_result *e;
	int rc;

	gdp_results_init(&res);
	rc = apply(n, &res);
	for (size_t i = 0; rc && i < res.n; i++)
		if (res.v[i].err)
			fprintf(stderr, "n%d %s %s/%s: %s\n", n, gdp_obj_kind_str(res.v[i].kind), res.v[i].vpc,
				res.v[i].key, res.v[i].msg);
	ck_assert_int_eq(rc, 0);
	e = gdp_results_find(&res, GDP_OBJ_EGRESS, "", "");
	ck_assert_ptr_nonnull(e);
	ck_assert(e->programmed);
	/* read back: routes, rules, addresses and the nftables table all in place */
	ck_assert_int_eq(B[n]->ops->observe(B[n], &S[n], &res), 0);
	gdp_results_free(&res);
}

/* A counter of node n's galactic_egress table (libnftables inside the node's netns), or -1. */
static long nft_counter(int n, const char *name)
{
	char path[128];
	long v = -1;
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		char err[256];
		int fd;

		close(p[0]);
		snprintf(path, sizeof(path), "/run/netns/%s-n%d", T.prefix, n);
		fd = open(path, O_RDONLY);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(2);
		v = gde_nft_counter(name, err, sizeof(err));
		if (v < 0)
			fprintf(stderr, "counter %s: %s\n", name, err);
		_exit(write(p[1], &v, sizeof(v)) == sizeof(v) ? 0 : 3);
	}
	close(p[1]);
	if (read(p[0], &v, sizeof(v)) != sizeof(v))
		v = -1;
	close(p[0]);
	waitpid(pid, NULL, 0);
	return v;
}

/* Two VPCs, same pod addresses, same source port, through the same shard at the same time. */
START_TEST(t_two_vpcs_one_shard)
{
	char oa[256], ob[256], oc[256], shard[64];
	long ra0, rb0, ra, rb, snat6 = -1, reply = -1;
	int st;
	pid_t srv;

	NEED_TOPO();
	assert_programmed(1);
	assert_programmed(2);
	/* warm-up: neighbours on the fabric resolved (not counted) */
	ping("a1", "2001:db8:f::ff", 1);
	ping("b1", "2001:db8:f::ff", 1);
	ra0 = topo_snmp(&T, "a1", "Icmp6InEchoReplies");
	rb0 = topo_snmp(&T, "b1", "Icmp6InEchoReplies");
	/* pings from both VPCs at once: each pod gets exactly its own replies */
	ck_assert_int_eq(topo_sh("(ip netns exec %s-a1 ping -q -c 3 -i 0.2 -W 1 2001:db8:f::ff & "
				 "ip netns exec %s-b1 ping -q -c 5 -i 0.2 -W 1 2001:db8:f::ff & wait) >/dev/null",
				 T.prefix, T.prefix), 0);
	ra = topo_snmp(&T, "a1", "Icmp6InEchoReplies") - ra0;
	rb = topo_snmp(&T, "b1", "Icmp6InEchoReplies") - rb0;
	ck_assert_msg(ra == 3 && rb == 5, "echo replies: a1 %ld (sent 3), b1 %ld (sent 5)", ra, rb);
	ck_assert_int_eq(ping("a1", "203.0.113.254", 2), 2);
	ck_assert_int_eq(ping("b1", "203.0.113.254", 2), 2);

	/* TCP: identical 5-tuples inside the two VPCs, one shard */
	srv = topo_echo_server(&T, 3, 8080);
	ck_assert_int_gt(srv, 0);
	ck_assert_int_eq(topo_sh("cd %s && (ip netns exec %s-a1 sh -c 'printf A | nc -N -w 3 -p 40000 2001:db8:f::ff 8080' > tcp_a & "
				 "ip netns exec %s-b1 sh -c 'printf B | nc -N -w 3 -p 40000 2001:db8:f::ff 8080' > tcp_b & wait)",
				 T.dir, T.prefix, T.prefix), 0);
	ck_assert_int_eq(topo_sh("ip netns exec %s-a1 sh -c 'printf C | nc -N -w 3 -p 40001 203.0.113.254 8080' > %s/tcp_c",
				 T.prefix, T.dir), 0);
	ck_assert_int_eq(waitpid(srv, &st, 0), srv);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server status %d", st);
	topo_out(oa, sizeof(oa), "cat %s/tcp_a", T.dir);
	topo_out(ob, sizeof(ob), "cat %s/tcp_b", T.dir);
	topo_out(oc, sizeof(oc), "cat %s/tcp_c", T.dir);
	fprintf(stderr, "tcp: a1 '%s' b1 '%s' a1/v4 '%s'\n", oa, ob, oc);
	/* each reply reached the pod that sent it, and the internet saw only the shard */
	snprintf(shard, sizeof(shard), "A 2001:db8:f::50:1 ");
	ck_assert_msg(!strncmp(oa, shard, strlen(shard)), "a1 got '%s'", oa);
	snprintf(shard, sizeof(shard), "B 2001:db8:f::50:1 ");
	ck_assert_msg(!strncmp(ob, shard, strlen(shard)), "b1 got '%s'", ob);
	/* the same inner port from both VPCs: the shard gave them different outer ports */
	ck_assert_str_ne(oa + 2, ob + 2);
	ck_assert_msg(!strncmp(oc, "C ::ffff:203.0.113.51 ", 22), "a1 (IPv4) got '%s'", oc);

	/* the translator's own counters (inside n1): NAT rules see the first packet of each flow
	 * (v6: 2 warm-up + 2 pings + 2 TCP; v4: 2 pings + 1 TCP); every reply packet is marked back to its VPC */
	snat6 = nft_counter(1, "snat6");
	reply = nft_counter(1, "replies");
	ck_assert_int_eq(snat6, 6); /* + the two warm-up pings */
	ck_assert_int_eq(nft_counter(1, "snat4"), 3);
	ck_assert_int_ge(reply, 2 + 8 + 4 + 2);
	ck_assert_int_ge(nft_counter(1, "decap"), 8 + 4 + 2);
	ck_assert_int_eq(nft_counter(1, "untranslated"), 0);
	fprintf(stderr, "n1 counters: snat6 %ld, reply %ld\n", snat6, reply);
}
END_TEST

/* A family the attachment does not declare stays unreachable; the other node's shard is its own. */
START_TEST(t_families_and_own_shard)
{
	char out[256];
	pid_t srv;
	int st;

	NEED_TOPO();
	assert_programmed(1);
	assert_programmed(2);
	ck_assert_int_eq(ping("a2", "2001:db8:f::ff", 2), 2);
	ck_assert_int_eq(ping("a2", "203.0.113.254", 1), 0);
	srv = topo_echo_server(&T, 1, 8081);
	ck_assert_int_gt(srv, 0);
	topo_sh("ip netns exec %s-a2 sh -c 'printf D | nc -N -w 3 2001:db8:f::ff 8081' > %s/tcp_d", T.prefix, T.dir);
	ck_assert_int_eq(waitpid(srv, &st, 0), srv);
	topo_out(out, sizeof(out), "cat %s/tcp_d", T.dir);
	ck_assert_msg(!strncmp(out, "D 2001:db8:f::50:2 ", 19), "a2 got '%s'", out);
}
END_TEST

/* Withdrawing the shard removes the table and the routes; putting it back restores egress.
 * Also measures apply -> first successful egress ping. */
START_TEST(t_withdraw_and_time)
{
	struct gdp_results res;
	double v[10];
	int n = 0;

	NEED_TOPO();
	assert_programmed(1);
	ck_assert_int_eq(ping("a1", "2001:db8:f::ff", 1), 1);
	gdp_results_init(&res);
	S[1].egress.have = false;
	ck_assert_int_eq(apply(1, &res), 0);
	ck_assert_ptr_null(gdp_results_find(&res, GDP_OBJ_EGRESS, "", ""));
	ck_assert_int_eq(B[1]->ops->observe(B[1], &S[1], &res), 0);
	ck_assert_int_eq(ping("a1", "2001:db8:f::ff", 1), 0);
	ck_assert_int_ne(topo_sh("ip netns exec %s-n1 ip -6 addr show dev up0 | grep -q 2001:db8:f::50:1", T.prefix), 0);
	for (int i = 0; i < 10; i++) {
		double t0;

		S[1].egress.have = true;
		t0 = now_s();
		ck_assert_int_eq(apply(1, &res), 0);
		while (ping("a1", "2001:db8:f::ff", 1) != 1 && now_s() - t0 < 5)
			;
		v[n++] = now_s() - t0;
		S[1].egress.have = false;
		ck_assert_int_eq(apply(1, &res), 0);
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (v[j] < v[i]) {
				double x = v[i];

				v[i] = v[j];
				v[j] = x;
			}
	fprintf(stderr, "apply -> first egress ping: p50 %.1f ms, max %.1f ms (n=%d)\n", v[n / 2] * 1e3,
		v[n - 1] * 1e3, n);
	ck_assert_double_lt(v[n - 1], 5.0);
	S[1].egress.have = true;
	gdp_results_free(&res);
}
END_TEST

/* Drift in the translator's rules (not only the table's existence) is read back as not programmed and repaired. */
START_TEST(t_nft_drift_repaired)
{
	static const char *const drift[] = {
		"flush chain inet galactic_egress translate",                      /* rules gone */
		"add rule inet galactic_egress mark_reply meta mark set 0x0",      /* a rule added */
		"delete element inet galactic_egress vpc_zone { 0x100001 }",       /* a map element gone */
	};

	NEED_TOPO();
	for (size_t i = 0; i < sizeof(drift) / sizeof(drift[0]); i++) {
		struct gdp_results res;
		struct gdp_result *e;
		int n;

		assert_programmed(1);
		ck_assert_int_eq(ping("a1", "2001:db8:f::ff", 1), 1);
		ck_assert_int_eq(topo_sh("ip netns exec %s-n1 nft '%s'", T.prefix, drift[i]), 0);
		gdp_results_init(&res);
		n = B[1]->ops->observe(B[1], &S[1], &res);
		e = gdp_results_find(&res, GDP_OBJ_EGRESS, "", "");
		ck_assert_msg(n > 0, "drift '%s' not observed", drift[i]);
		ck_assert_ptr_nonnull(e);
		ck_assert(!e->programmed);
		ck_assert_ptr_nonnull(strstr(e->msg, "drift"));
		fprintf(stderr, "drift '%s': observe says: %s\n", drift[i], e->msg);
		gdp_results_free(&res);
		/* the next apply repairs it: read back clean, egress answers again */
		assert_programmed(1);
		ck_assert_int_eq(ping("a1", "2001:db8:f::ff", 2), 2);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("egress_dp");
	TCase *tc = tcase_create("egress");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t_two_vpcs_one_shard);
	tcase_add_test(tc, t_families_and_own_shard);
	tcase_add_test(tc, t_withdraw_and_time);
	tcase_add_test(tc, t_nft_drift_repaired);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
