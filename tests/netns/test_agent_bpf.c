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
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
	topo_sh("rm -rf /sys/fs/bpf/%s-n1 /sys/fs/bpf/%s-n2 /sys/fs/bpf/galactic-preflight-%d",
		prefix, prefix, (int)getpid());
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
	tcase_add_test(tc, t_agent_restarts_lose_no_packet);
	tcase_add_test(tc, t_back_to_kernel_removes_filters_and_pins);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
