/*
 * galactic-agent itself on the bpf backend (`--backend bpf`): two nodes, two
 * VPCs whose pods use the same addresses, the agent binary on each node with
 * its own bpffs pin directory.
 *
 *   n1: a1 (vpcA fd00:a::1 10.1.0.1)
 *   n2: a2 (vpcA fd00:a::2 10.1.0.2)   b2 (vpcB fd00:a::2 10.1.0.2)
 *
 * Traffic crosses the fabric through the TC programs (no seg6 encap route
 * exists), the other VPC's pod never sees it, restarts of both agents lose
 * no packet of a running ping, and moving a node back to the kernel backend
 * removes every filter and pin.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/dp/bpf/bpf_dp.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

static struct topo T;
static char skip_why[256];

/* --backend bpf with a pin directory of this run's own. */
static const char *bpf_args(int node, char *buf, size_t n)
{
	snprintf(buf, n, "--backend bpf --bpffs /sys/fs/bpf/%s-n%d", T.prefix, node);
	return buf;
}

static void start_agent(int node, const char *extra)
{
	char d[512], p[600], args[300];

	snprintf(p, sizeof(p), "%s/status.json", topo_state_dir(&T, node, d, sizeof(d)));
	unlink(p);
	ck_assert_int_gt(topo_agent_start(&T, node, extra ? extra : bpf_args(node, args, sizeof(args))), 0);
	ck_assert_msg(topo_wait_reconciled(&T, node, 1, 20) == 0, "agent on n%d did not reconcile (see %s/agent.log)", node, d);
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
	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces and BPF");
		return;
	}
	if (topo_sh("build/rel/bin/galactic-bpf preflight --bpffs /sys/fs/bpf/galactic-preflight-%d "
		    ">/dev/null 2>&1", (int)getpid())) {
		snprintf(skip_why, sizeof(skip_why), "bpf preflight refused on this kernel");
		return;
	}
	/* A preflight checks the filesystem; it must not leave its pin root behind. */
	ck_assert_msg(topo_sh("test -e /sys/fs/bpf/galactic-preflight-%d", (int)getpid()),
		      "galactic-bpf preflight left /sys/fs/bpf/galactic-preflight-%d", (int)getpid());
	ck_assert_int_eq(topo_up(&T, 2), 0);
	ck_assert_int_ge(topo_add_pod(&T, 1, "a1", TOPO_VPC_A, "fd00:a::1", "10.1.0.1"), 0);
	ck_assert_int_ge(topo_add_pod(&T, 2, "a2", TOPO_VPC_A, "fd00:a::2", "10.1.0.2"), 0);
	ck_assert_int_ge(topo_add_pod(&T, 2, "b2", TOPO_VPC_B, "fd00:a::2", "10.1.0.2"), 0);
	for (int i = 1; i <= 2; i++) {
		ck_assert_int_eq(topo_write_state(&T, i, 0), 0);
		start_agent(i, NULL);
	}
}

static void teardown(void)
{
	char prefix[sizeof(T.prefix)];

	snprintf(prefix, sizeof(prefix), "%s", T.prefix); /* topo_down clears T */
	if (T.nodes)
		topo_down(&T);
	topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2", prefix, prefix);
}

/* "added/replaced A, removed R, unchanged U" of n's k-th "reconcile #k:" log line; 0 when found. */
static int pass_counts(int node, int k, long *a, long *r, long *u)
{
	char d[512], out[128];

	topo_state_dir(&T, node, d, sizeof(d));
	topo_out(out, sizeof(out), "sed -n 's/.*reconcile #%d: .*added\\/replaced \\([0-9]*\\), removed \\([0-9]*\\), "
		 "unchanged \\([0-9]*\\),.*/\\1 \\2 \\3/p' %s/agent.log | head -1", k, d);
	return sscanf(out, "%ld %ld %ld", a, r, u) == 3 ? 0 : -1;
}

/*
 * The logs count what was really written. n1's agent started on empty pins:
 * its first pass wrote every object (the bpf backend puts maps and filters
 * in place before the kernel apply, in a step of its own, and counts it);
 * a full pass over the same state (SIGHUP) writes nothing and finds it all
 * unchanged: the first pass's added is at least the second's unchanged
 * plus what no read-back counts as unchanged (n1's 2 filters, up0 and
 * hva1, and hva1's ifaces entry). Before, the first pass logged only the
 * kernel backend's pod plumbing (18 here, below the 22 objects in place).
 */
START_TEST(t_logs_count_what_was_written)
{
	long a1, r1, u1, a2, r2, u2;
	double t0 = gt_now();

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	ck_assert_int_eq(pass_counts(1, 1, &a1, &r1, &u1), 0);
	ck_assert_int_eq(topo_sh("kill -HUP %d", (int)topo_agent_pid(&T, 1)), 0);
	while (pass_counts(1, 2, &a2, &r2, &u2) && gt_now() - t0 < 10)
		usleep(50 * 1000);
	ck_assert_int_eq(pass_counts(1, 2, &a2, &r2, &u2), 0);
	printf("agent bpf backend logs: first pass added/replaced %ld, removed %ld, unchanged %ld; "
	       "full pass again (SIGHUP): added/replaced %ld, removed %ld, unchanged %ld\n", a1, r1, u1, a2, r2, u2);
	ck_assert_int_eq(a2, 0);
	ck_assert_int_eq(r2, 0);
	ck_assert_int_gt(u2, 0);
	/* every object the full pass found in place, the first pass wrote (fresh pins, fresh netns) */
	ck_assert_int_ge(a1, u2 + 3);
	ck_assert_int_eq(u1, 0);
}
END_TEST

START_TEST(t_traffic_through_tc_programs_isolated)
{
	char ns[64], out[256];
	long b2_before, got6, got4;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	topo_node_ns(&T, 1, ns, sizeof(ns));
	/* The agent chose bpf: decap on the uplink, encap on the pod's host veth,
	 * and no seg6 encap route in any table. */
	ck_assert_int_eq(topo_sh("tc -n %s filter show dev up0 ingress | grep -q galactic_decap", ns), 0);
	ck_assert_int_eq(topo_sh("tc -n %s filter show dev %s ingress | grep -q galactic_encap", ns,
				 topo_pod(&T, "a1")->hostif), 0);
	ck_assert_int_ne(topo_sh("ip -n %s -6 route show table all | grep -q 'encap seg6 mode'", ns), 0);

	b2_before = topo_snmp(&T, "b2", "Icmp6InEchos");
	got6 = ping("a1", "fd00:a::2", 20);
	got4 = ping("a1", "10.1.0.2", 20);
	printf("agent bpf backend: IPv6 %ld/20, IPv4 %ld/20, echo requests at b2 (other VPC) +%ld\n",
	       got6, got4, topo_snmp(&T, "b2", "Icmp6InEchos") - b2_before);
	ck_assert_int_eq(got6, 20);
	ck_assert_int_eq(got4, 20);
	ck_assert_int_eq(topo_snmp(&T, "b2", "Icmp6InEchos") - b2_before, 0);

	/* The programs counted it: encap on n1 for vpcA (argument 1). */
	topo_out(out, sizeof(out),
		 "build/rel/bin/galactic-bpf stats --bpffs /sys/fs/bpf/%s-n1 | "
		 "sed -n 's/^vpc arg=1 .* encap_packets=\\([0-9]*\\).*/\\1/p'", T.prefix);
	ck_assert_msg(atol(out) >= 40, "vpcA encap counter on n1: '%s'", out);
}
END_TEST

/*
 * n1's routes toward fd00:a::2/128: how many, how many carry precomputed L2
 * and how many of those point at mac (the next hop's address).
 */
static void l2_of_routes(const uint8_t mac[6], int *n, int *l2, int *right)
{
	struct gbpf_route_key cur, next, *prev = NULL;
	struct gbpf_route r;
	char map[400];
	uint8_t a[16];
	int fd;

	*n = *l2 = *right = 0;
	snprintf(map, sizeof(map), "/sys/fs/bpf/%s-n1/v%d/%s", T.prefix, GBPF_BPF_LAYOUT, gbpf_map_name(GBPF_MAP_ROUTES));
	fd = bpf_obj_get(map);
	ck_assert_msg(fd >= 0, "open %s", map);
	inet_pton(AF_INET6, "fd00:a::2", a);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		cur = next;
		prev = &cur;
		if (cur.family != GBPF_AF_INET6 || cur.prefixlen != GBPF_ROUTE_KEY_BITS + 128 || memcmp(cur.addr, a, 16) ||
		    bpf_map_lookup_elem(fd, &cur, &r))
			continue;
		(*n)++;
		if (r.flags & GBPF_RT_L2) {
			(*l2)++;
			*right += !memcmp(r.dmac, mac, 6);
		}
	}
	close(fd);
}

/* Waits up to secs for every route toward fd00:a::2 to carry L2 to mac; seconds taken or -1. */
static double wait_l2(const uint8_t mac[6], double secs)
{
	double t0 = gt_now();
	int n, l2, right;

	do {
		l2_of_routes(mac, &n, &l2, &right);
		if (n > 0 && right == n)
			return gt_now() - t0;
		usleep(20 * 1000);
	} while (gt_now() - t0 < secs);
	return -1;
}

/* Waits up to secs for n1's neighbour 2001:db8:f::2 to be managed with an address; seconds or -1. */
static double wait_managed(double secs)
{
	double t0 = gt_now();

	do {
		if (!topo_sh("ip -n %s-n1 neigh show 2001:db8:f::2 dev up0 | grep -q 'lladdr .*managed'", T.prefix))
			return gt_now() - t0;
		usleep(20 * 1000);
	} while (gt_now() - t0 < secs);
	return -1;
}

/*
 * Encap next hops stay valid when the underlay neighbour is learned (ND),
 * not permanent. The routes' precomputed L2 bypasses the neighbour table,
 * so nothing confirms the learned entry: it goes stale (here in 200 ms:
 * base_reachable_time_ms) and, on a node past gc_thresh1, is collected;
 * a later full pass then found no neighbour and took the L2 off every
 * route. The agent makes each next hop a managed neighbour (the kernel
 * keeps it resolved, never collects it) and follows its notifications:
 * deleted (as the collector would), it is managed again at once and the
 * routes keep their L2; a full pass that finds it unresolved is followed
 * by a refresh as soon as it resolves. A 100 pps ping loses nothing.
 */
START_TEST(t_learned_next_hop_stays_valid)
{
	char ns[64], out[64], log[600];
	uint8_t mac[6];
	double t_managed, t_back, t_l2;
	int n, l2, right, st;
	pid_t pp;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	topo_node_ns(&T, 1, ns, sizeof(ns));
	ck_assert_int_eq(topo_out(out, sizeof(out), "ip -n %s-n2 -j link show up0 | sed -n 's/.*\"address\":\"\\([0-9a-f:]*\\)\".*/\\1/p'",
				  T.prefix), 0);
	ck_assert_int_eq(sscanf(out, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]), 6);
	/* learned, not permanent, and short-lived when nothing confirms it */
	ck_assert_int_ne(topo_sh("ip -n %s neigh show 2001:db8:f::2 dev up0 | grep -q PERMANENT", ns), 0);
	ck_assert_int_eq(topo_sh("ip netns exec %s sysctl -qw net.ipv6.neigh.up0.base_reachable_time_ms=200 "
				 "net.ipv6.neigh.up0.gc_stale_time=1 net.ipv6.neigh.up0.delay_first_probe_time=1", ns), 0);
	ck_assert_int_eq(ping("a1", "fd00:a::2", 3), 3);
	t_managed = wait_managed(3);
	ck_assert_msg(t_managed >= 0, "n1's next hop 2001:db8:f::2 did not become a managed neighbour");
	ck_assert_msg(wait_l2(mac, 3) >= 0, "routes toward fd00:a::2 without L2 to n2's up0");

	snprintf(log, sizeof(log), "%s/ping-nexthop.txt", T.dir);
	pp = fork();
	ck_assert_int_ge(pp, 0);
	if (pp == 0) {
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "exec ip netns exec %s-a1 ping -q -c 600 -i 0.01 -W 1 fd00:a::2 > %s 2>&1",
			 T.prefix, log);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	usleep(1000 * 1000); /* 5 reachable times: a learned entry would be stale by now */
	ck_assert_int_ne(topo_sh("ip -n %s neigh show 2001:db8:f::2 dev up0 | grep -qE 'FAILED|INCOMPLETE'", ns), 0);
	/* as the garbage collector would: the entry goes; it is back, managed, and the routes keep L2 */
	ck_assert_int_eq(topo_sh("ip -n %s neigh del 2001:db8:f::2 dev up0", ns), 0);
	t_back = wait_managed(2);
	ck_assert_msg(t_back >= 0, "next hop neighbour not back within 2 s after its deletion");
	l2_of_routes(mac, &n, &l2, &right);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(right, n);
	/* deleted and a full pass at once (it may find no neighbour): L2 back within 2 s */
	ck_assert_int_eq(topo_sh("ip -n %s neigh del 2001:db8:f::2 dev up0 && kill -HUP %d", ns, (int)topo_agent_pid(&T, 1)), 0);
	usleep(300 * 1000);
	t_l2 = wait_l2(mac, 2);
	ck_assert_msg(t_l2 >= 0, "routes' L2 not back within 2 s of a full pass without the neighbour");
	ck_assert_int_eq(waitpid(pp, &st, 0), pp);
	topo_out(out, sizeof(out), "sed -n 's/.*transmitted, \\([0-9]*\\) received.*/\\1/p' %s", log);
	printf("learned next hop: managed %.2f s after the first pass, back %.2f s after its deletion with L2 kept; "
	       "after deletion + full pass, L2 to n2's up0 on all %d routes %.2f s later; ping 100 pps: %s/600\n",
	       t_managed, t_back, n, t_l2 + 0.3, out);
	ck_assert_int_eq(atol(out), 600);
}
END_TEST

START_TEST(t_agent_restarts_lose_no_packet)
{
	char out[64], log[600], args[300];
	pid_t pp;
	int st;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	snprintf(log, sizeof(log), "%s/ping-bpf-restart.txt", T.dir);
	pp = fork();
	ck_assert_int_ge(pp, 0);
	if (pp == 0) {
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "exec ip netns exec %s-a1 ping -q -c 600 -i 0.01 -W 1 fd00:a::2 > %s 2>&1",
			 T.prefix, log);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	usleep(800 * 1000);
	/* Both ends, clean stop and crash: the maps and filters stay pinned and
	 * attached, the new agent adopts them. */
	topo_agent_stop(&T, 1, SIGTERM);
	start_agent(1, bpf_args(1, args, sizeof(args)));
	topo_agent_stop(&T, 2, SIGKILL);
	start_agent(2, bpf_args(2, args, sizeof(args)));
	topo_agent_stop(&T, 1, SIGKILL);
	start_agent(1, bpf_args(1, args, sizeof(args)));
	ck_assert_int_eq(waitpid(pp, &st, 0), pp);
	topo_out(out, sizeof(out), "sed -n 's/.*transmitted, \\([0-9]*\\) received.*/\\1/p' %s", log);
	printf("agent bpf backend: ping during 3 agent restarts: %s/600 received\n", out);
	ck_assert_int_eq(atol(out), 600);
}
END_TEST

START_TEST(t_back_to_kernel_removes_filters_and_pins)
{
	char ns[64], args[300];

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	topo_node_ns(&T, 1, ns, sizeof(ns));
	topo_agent_stop(&T, 1, SIGTERM);
	snprintf(args, sizeof(args), "--backend kernel --bpffs /sys/fs/bpf/%s-n1", T.prefix);
	start_agent(1, args);
	/* Kernel routes first, then the filters and pins go. */
	ck_assert_int_eq(topo_sh("ip -n %s -6 route show table all | grep -q 'encap seg6 mode'", ns), 0);
	ck_assert_int_ne(topo_sh("tc -n %s filter show dev up0 ingress | grep -q galactic_", ns), 0);
	ck_assert_int_ne(topo_sh("tc -n %s filter show dev %s ingress | grep -q galactic_", ns,
				 topo_pod(&T, "a1")->hostif), 0);
	ck_assert_int_ne(topo_sh("test -e /sys/fs/bpf/%s-n1", T.prefix), 0);
	ck_assert_int_eq(ping("a1", "fd00:a::2", 10), 10);
	ck_assert_int_eq(ping("a1", "10.1.0.2", 10), 10);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("agent_bpf");
	TCase *tc = tcase_create("agent");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t_logs_count_what_was_written);
	tcase_add_test(tc, t_traffic_through_tc_programs_isolated);
	tcase_add_test(tc, t_learned_next_hop_stays_valid);
	tcase_add_test(tc, t_agent_restarts_lose_no_packet);
	tcase_add_test(tc, t_back_to_kernel_removes_filters_and_pins);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
